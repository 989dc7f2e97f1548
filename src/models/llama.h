/* Llama-architecture language models (Llama 2/3, Qwen2/3, SmolLM, TinyLlama)
 * for inference, from a Hugging Face folder (config.json + *.safetensors), on
 * wgtensor's public API:
 *
 *   ids [T] -> embed_tokens                                   x [T, C] (f32)
 *   n_layers blocks (pre-norm, RMSNorm):
 *     q, k, v = h W_q^T (+b), h W_k^T (+b), h W_v^T (+b)      h = rms_norm(x)
 *       [T, H, D], [T, Hkv, D]; Qwen3: rms_norm of each head of q and k
 *     RoPE (half-split, theta, llama3 frequency scaling) at positions len..len+T-1
 *     k, v appended to the cache [1, Hkv, context, D]; causal flash attention
 *       of q over the cache prefix (grouped-query: H % Hkv == 0)
 *     x += attn W_o^T
 *     x += (silu(h W_gate^T) * (h W_up^T)) W_down^T           h = rms_norm(x)
 *   logits = rms_norm(x) W_head^T   (W_head = embed_tokens when tied)
 *
 * Weights are f32 or f16 on the device (bf16 / f16 / f32 files; each tensor
 * is converted on its own, so no second copy of the model is ever held). With
 * f16 weights the residual stream and every accumulation stay f32 and the
 * KV cache is f16. Inference never records the autograd tape (no-grad). */
#ifndef WGT_MODELS_LLAMA_H
#define WGT_MODELS_LLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wgtensor.h"

typedef struct llama_config {
    char model_type[32];   /* "llama", "qwen2", "qwen3", "mistral" */
    int vocab_size, hidden_size, intermediate_size;
    int n_layers, n_heads, n_kv_heads, head_dim;
    int max_position;      /* max_position_embeddings */
    double rms_eps, rope_theta;
    /* rope_type "llama3": frequencies scaled by factor below low_freq_factor,
     * kept above high_freq_factor, smoothly mixed between (HF's formula) */
    bool rope_llama3;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max;
    bool tie_embeddings;   /* lm_head is embed_tokens */
    bool attention_bias;   /* q/k/v biases (Qwen2) */
    bool qk_norm;          /* per-head RMSNorm of q and k (Qwen3) */
    int bos_token_id, eos_token_id; /* -1 when absent (eos: the first of a list) */
} llama_config;

/* Reads config.json text; false with the cause in msg: an architecture that is
 * not Llama-like, a missing or out-of-range field, an unsupported option
 * (another activation, another rope scaling, sliding windows, MLP biases). */
bool llama_config_parse(const char *json, size_t size, llama_config *cfg, char *msg, size_t msg_size);

/* F32 / F16: every weight in that dtype. Q8 / Q4: the projection weights
 * (attention, MLP, head) quantized at load, group-wise (wgt_quantize_weight:
 * 32 weights per f32 scale), from the file's exact values; the embedding
 * table stays f16 (a row lookup), and so does the KV cache. */
typedef enum llama_weights { LLAMA_WEIGHTS_F32, LLAMA_WEIGHTS_F16, LLAMA_WEIGHTS_Q8, LLAMA_WEIGHTS_Q4 } llama_weights;

typedef struct llama_model llama_model;

/* Loads dir/config.json and the tensors of every dir/ *.safetensors shard.
 * NULL with the cause in msg: a file, a missing tensor, a shape that does not
 * match the config, a tensor found in two shards, or the context's error. */
llama_model *llama_load(wgt_context *ctx, const char *dir, llama_weights weights, char *msg, size_t msg_size);
/* The same architecture with random weights (normal(0, 0.02), norms 1) made on
 * the device from seed: benchmarks of real shapes without a download. */
llama_model *llama_create_random(wgt_context *ctx, const llama_config *cfg, llama_weights weights, uint64_t seed,
                                 char *msg, size_t msg_size);
void llama_destroy(llama_model *m);
const llama_config *llama_model_config(const llama_model *m);
llama_weights llama_model_weights(const llama_model *m);
/* Bytes of the weights on the device. */
uint64_t llama_weight_bytes(const llama_model *m);
/* The matrix-product precision of the model's forward passes
 * (wgt_set_matmul_precision, set around each pass and restored): MEDIUM by
 * default for f16 and quantized weights (x quantized to 8 bits in quantized
 * prefill, f16 sums in f16 GEMMs), HIGHEST for f32 weights or when
 * WGT_LLAMA_PRECISION=highest was set at load; decode steps are the same at
 * either. Returns the old value. */
wgt_matmul_precision llama_set_matmul_precision(llama_model *m, wgt_matmul_precision precision);

/* ---- KV cache and the forward pass ----
 * Keys and values of every layer in [1, Hkv, context, D] tensors allocated
 * once. llama_forward runs T new tokens at positions len .. len+T-1 (T > 1:
 * prefill, T = 1: decode), appends their keys and values and returns logits,
 * f32 [T, V] with all_logits, else [1, V] for the last position only. NULL if
 * len + T > context (message in msg) or on a context error. */
typedef struct llama_cache llama_cache;
llama_cache *llama_cache_create(llama_model *m, int64_t context, char *msg, size_t msg_size);
/* The cache's element type: the model's (f16 with f16 or quantized weights,
 * f32 with f32), or 8-bit rows (LLAMA_KV_Q8: wgt_quantize_rows_into's codes and
 * one f32 scale per 32 values, D + D/8 bytes a key instead of 2 D; the
 * attention reads them through wgt_attention_q8, prefill through dequantized
 * copies). Each token's keys and values are quantized once, when stored. */
typedef enum llama_kv_type { LLAMA_KV_DEFAULT = 0, LLAMA_KV_Q8 } llama_kv_type;
llama_cache *llama_cache_create_kv(llama_model *m, int64_t context, llama_kv_type kv, char *msg, size_t msg_size);
/* bytes the cache holds on the device */
uint64_t llama_cache_bytes(const llama_cache *c);
void llama_cache_destroy(llama_cache *c);
int64_t llama_cache_length(const llama_cache *c);
int64_t llama_cache_context(const llama_cache *c);
void llama_cache_reset(llama_cache *c);
wgt_tensor *llama_forward(llama_cache *c, const int32_t *tokens, int64_t T, bool all_logits, char *msg,
                          size_t msg_size);
/* Greedy pick on the device: argmax over the last row of logits [N, V], one
 * int read back. -1 on error. */
int32_t llama_argmax(wgt_tensor *logits);

/* ---- decoding without a host round trip per token (llama_decode.c) ----
 * llama_argmax_token: the same pick, left on the device as i32 [1] (the
 * caller's; NULL on error). llama_forward_token: one decode step whose token
 * is such a device id, so step n+1 can be recorded before step n's pick has
 * been read. llama_cache_truncate: forget the positions from length on (a
 * step recorded ahead and not wanted). */
wgt_tensor *llama_argmax_token(wgt_tensor *logits);
wgt_tensor *llama_forward_token(llama_cache *c, wgt_tensor *token, char *msg, size_t msg_size);
void llama_cache_truncate(llama_cache *c, int64_t length);

/* Greedy decoding from logits (the prompt's, [N, V]): produces up to
 * max_tokens tokens, calling on_token for each in order until it returns
 * false. With pipelined, step n+1 is recorded and submitted (fed by step n's
 * pick on the device) before step n's token is read, so the host's recording
 * overlaps the device's work; the cache ends as the one-step-at-a-time loop
 * leaves it (the prompt and every produced token but the last). Returns the
 * number of tokens produced, -1 on error (message in msg). */
typedef bool (*llama_token_fn)(int32_t token, void *user);
int64_t llama_generate_greedy(llama_cache *c, wgt_tensor *logits, int64_t max_tokens, bool pipelined,
                              llama_token_fn on_token, void *user, char *msg, size_t msg_size);

/* HF's repetition penalty on a host copy of the logits: for every token in
 * history, a positive logit is divided by penalty, a negative one multiplied. */
void llama_repetition_penalty(float *logits, int vocab_size, const int32_t *history, size_t n, double penalty);

#endif
