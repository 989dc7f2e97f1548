/* Token sampling from logits: temperature, top-k, top-p (nucleus), seeded.
 * Host-side and independent of the model, so any language model (the GPT of
 * gpt.h, an LLM) can use it: read the last position's logits [V] to the host
 * and call sampler_pick. Deterministic: the same seed and logits give the
 * same tokens on every machine. */
#ifndef WGT_MODELS_SAMPLER_H
#define WGT_MODELS_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sampler_config {
    double temperature; /* 0: greedy (argmax); else logits / temperature */
    int top_k;          /* keep the k most likely tokens; 0: all */
    double top_p;       /* keep the smallest set whose probability >= top_p; 1: all */
    uint64_t seed;
} sampler_config;

/* temperature 1, top_k 0, top_p 1, seed 0. */
void sampler_config_init(sampler_config *config);
/* false with the reason in msg for a negative temperature, top_k < 0, top_p
 * outside (0, 1], a non-finite value. */
bool sampler_config_check(const sampler_config *config, char *msg, size_t msg_size);

typedef struct sampler sampler;
/* vocab_size: length of the logits rows. NULL on a bad config or no memory. */
sampler *sampler_create(const sampler_config *config, int vocab_size);
void sampler_destroy(sampler *s);
/* Next token from logits[vocab_size]; -1 if every logit is NaN or -inf. */
int sampler_pick(sampler *s, const float *logits);
/* The generator's state (a checkpoint of a generation) and its restore. */
uint64_t sampler_state(const sampler *s);
void sampler_set_state(sampler *s, uint64_t state);

#endif
