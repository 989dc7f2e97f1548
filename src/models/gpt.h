/* A GPT in the style of nanoGPT, written on wgtensor's public API only: it is
 * the reference example of how to build and train a model with the library.
 *
 *   idx [B, T] i32 -> wte[idx] + wpe[0..T)               x [B, T, C]
 *   n_layer blocks (pre-norm):
 *     x = x + dropout(c_proj(attn(c_attn(ln_1(x)))))     causal flash attention
 *     x = x + dropout(mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))))
 *   logits = lm_head(ln_f(x))                            [B, T, V]
 *
 * Parameter names and init follow nanoGPT (model.py), so a checkpoint maps one
 * to one onto nanoGPT's state dict: normal(0, 0.02) for Linear and Embedding
 * weights, normal(0, 0.02 / sqrt(2 * n_layer)) for the residual projections
 * (attn.c_proj, mlp.c_proj), zeros for biases, ones for LayerNorm weights. With
 * a tied head, lm_head.weight is transformer.wte.weight (one tensor).
 */
#ifndef WGT_MODELS_GPT_H
#define WGT_MODELS_GPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wgtensor.h"

typedef struct gpt_config {
    int n_layer;       /* transformer blocks */
    int n_head;        /* attention heads; n_embd % n_head == 0 */
    int n_embd;        /* C, the residual width */
    int block_size;    /* longest context (rows of wpe) */
    int vocab_size;    /* V */
    double dropout;    /* embedding, attention weights, both residual branches */
    bool bias;         /* biases in Linear and LayerNorm (nanoGPT's bias flag) */
    bool tied_head;    /* lm_head.weight shares transformer.wte.weight */
} gpt_config;

/* Writes why cfg is unusable into msg (and returns false), or returns true. */
bool gpt_config_check(const gpt_config *cfg, char *msg, size_t msg_size);

typedef struct gpt_model gpt_model;

/* Parameters initialized as nanoGPT does, from seed (Philox: the same numbers
 * on every backend). NULL on error; the cause is on ctx's status (or, for a bad
 * config, in gpt_config_check's message: check it first). */
gpt_model *gpt_create(wgt_context *ctx, const gpt_config *cfg, uint64_t seed);
void gpt_destroy(gpt_model *model);
const gpt_config *gpt_model_config(const gpt_model *model);

/* Parameter tensors (f32, contiguous, requires grad) in a fixed order, with
 * their nanoGPT names. Borrowed: owned by the model. */
int gpt_param_count(const gpt_model *model);
wgt_tensor *const *gpt_params(const gpt_model *model);
const char *gpt_param_name(const gpt_model *model, int i);
int64_t gpt_weight_count(const gpt_model *model); /* total elements */

/* Training / evaluation forward. idx, targets: i32 [B, T] with T <= block_size.
 * training applies dropout with masks drawn from dropout_seed (each dropout
 * site derives its own seed from it). Returns the mean cross-entropy, f32 []. */
wgt_tensor *gpt_loss(gpt_model *model, wgt_tensor *idx, wgt_tensor *targets, bool training, uint64_t dropout_seed);
/* Logits [B, T, V] without dropout. */
wgt_tensor *gpt_logits(gpt_model *model, wgt_tensor *idx);

/* Bytes of device memory one training step needs (parameters, gradients,
 * AdamW state, activations kept for backward, logits) for batch B at
 * block_size: an estimate, stated in docs/training.md. */
uint64_t gpt_training_bytes(const gpt_config *cfg, int64_t batch);
/* Bytes of the largest single tensor of a training step (the logits and their
 * gradient, or the MLP activations): it must fit in one device buffer. */
uint64_t gpt_largest_tensor_bytes(const gpt_config *cfg, int64_t batch);

/* ---- inference with a KV cache ----
 * Keys and values of every layer live in preallocated [B, H, block_size, D]
 * tensors. gpt_forward_cached(cache, idx [B, T]) runs the T new tokens at
 * positions len .. len+T-1: their k/v are written into the cache by slice
 * assignment and each query attends over the cache prefix [0, len+T), so a new
 * token costs one step of T = 1, not a forward over the whole context. Runs
 * under no-grad. Returns logits of the last new position, [B, V]. */
typedef struct gpt_kv_cache gpt_kv_cache;
gpt_kv_cache *gpt_kv_cache_create(gpt_model *model, int64_t batch);
void gpt_kv_cache_destroy(gpt_kv_cache *cache);
int64_t gpt_kv_cache_length(const gpt_kv_cache *cache); /* positions filled */
void gpt_kv_cache_reset(gpt_kv_cache *cache);            /* length back to 0 */
/* NULL if len + T > block_size (the caller resets or re-encodes a shorter
 * context) or on a context error. */
wgt_tensor *gpt_forward_cached(gpt_kv_cache *cache, wgt_tensor *idx);

#endif
