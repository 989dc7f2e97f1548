/* The KV cache and the forward pass of llama.h. Each call records the work of
 * all T tokens without reading anything back; only the caller's read of the
 * logits (or llama_argmax's one int) waits for the device. A decode step
 * (T = 1) uploads nothing: its token's embedding row is a view. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"
#include "llama_internal.h"

llama_cache *llama_cache_create(llama_model *m, int64_t context, char *msg, size_t msg_size)
{
    return llama_cache_create_kv(m, context, LLAMA_KV_DEFAULT, msg, msg_size);
}

/* The 8-bit cache of layer l: codes [2, Hkv, context, D/4] and scales [2, Hkv,
 * context, D/32], k | v along the first dim, and their [1, Hkv, context, ..] views. */
static void cache_q8_layer(llama_cache *c, int l)
{
    const llama_model *m = c->model;
    const int64_t Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim;
    wgt_tensor *codes = wgt_zeros(m->ctx, WGT_I32, 4, (int64_t[]){2, Hkv, c->context, D / 4});
    wgt_tensor *scales = wgt_zeros(m->ctx, WGT_F32, 4, (int64_t[]){2, Hkv, c->context, D / 32});
    c->kv[l] = wgt_tensor_retain(codes);
    c->kv_scales[l] = wgt_tensor_retain(scales);
    c->k[l] = wgt_tensor_retain(codes ? wgt_slice(codes, 0, 0, 1, 1) : NULL);
    c->v[l] = wgt_tensor_retain(codes ? wgt_slice(codes, 0, 1, 2, 1) : NULL);
    c->k_scales[l] = wgt_tensor_retain(scales ? wgt_slice(scales, 0, 0, 1, 1) : NULL);
    c->v_scales[l] = wgt_tensor_retain(scales ? wgt_slice(scales, 0, 1, 2, 1) : NULL);
}

llama_cache *llama_cache_create_kv(llama_model *m, int64_t context, llama_kv_type kv_type, char *msg, size_t msg_size)
{
    if (!m || context < 1 || context > m->cfg.max_position || (m->rope_lo && context > LLAMA_ROPE_TABLE_ROWS)) {
        snprintf(msg, msg_size, "llama_cache_create: context %lld outside [1, max_position_embeddings %d] (llama3 rope: at most 32768)",
                 (long long)context, m ? m->cfg.max_position : 0);
        return NULL;
    }
    if (kv_type != LLAMA_KV_DEFAULT && (kv_type != LLAMA_KV_Q8 || m->cfg.head_dim % 32 != 0)) {
        snprintf(msg, msg_size, "llama_cache_create: an 8-bit cache needs a head dim that is a multiple of 32 (%d)",
                 m->cfg.head_dim);
        return NULL;
    }
    const int L = m->cfg.n_layers;
    llama_cache *c = calloc(1, sizeof(*c));
    if (c) {
        c->kv = calloc((size_t)L, sizeof(wgt_tensor *));
        c->k = calloc((size_t)L, sizeof(wgt_tensor *));
        c->v = calloc((size_t)L, sizeof(wgt_tensor *));
        c->kv_scales = calloc((size_t)L, sizeof(wgt_tensor *));
        c->k_scales = calloc((size_t)L, sizeof(wgt_tensor *));
        c->v_scales = calloc((size_t)L, sizeof(wgt_tensor *));
    }
    if (!c || !c->kv || !c->k || !c->v || !c->kv_scales || !c->k_scales || !c->v_scales) {
        if (c) free(c->kv), free(c->k), free(c->v), free(c->kv_scales), free(c->k_scales), free(c->v_scales);
        free(c);
        snprintf(msg, msg_size, "llama_cache_create: out of memory");
        return NULL;
    }
    c->model = m;
    c->context = context;
    c->q8 = kv_type == LLAMA_KV_Q8;
    /* f16 weights keep an f16 cache: half the bytes each decode step reads.
     * kv_first: [context + S, 2, Hkv, D] by position with S scratch rows for
     * a decode step's q (llama_internal.h), k and v views [1, Hkv, rows, D]
     * of stride 2 Hkv D along the positions (the attention kernels take
     * strided k and v); otherwise [2, Hkv, context, D]. */
    const int64_t Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim, G = m->cfg.n_heads / Hkv;
    const int64_t shape[4] = {2, Hkv, context, D}, shape_pos[4] = {context + (G + 1) / 2, 2, Hkv, D};
    wgt_scope_push(m->ctx);
    for (int l = 0; l < L; l++) {
        if (c->q8) {
            cache_q8_layer(c, l);
            continue;
        }
        wgt_tensor *kv = wgt_zeros(m->ctx, m->wdtype, 4, m->kv_first ? shape_pos : shape);
        c->kv[l] = wgt_tensor_retain(kv);
        if (m->kv_first) { /* [rows, 1, Hkv, D] -> [1, Hkv, rows, D] */
            c->k[l] = wgt_tensor_retain(kv ? wgt_permute(wgt_slice(kv, 1, 0, 1, 1), (int[]){1, 2, 0, 3}) : NULL);
            c->v[l] = wgt_tensor_retain(kv ? wgt_permute(wgt_slice(kv, 1, 1, 2, 1), (int[]){1, 2, 0, 3}) : NULL);
        } else {
            c->k[l] = wgt_tensor_retain(kv ? wgt_slice(kv, 0, 0, 1, 1) : NULL);
            c->v[l] = wgt_tensor_retain(kv ? wgt_slice(kv, 0, 1, 2, 1) : NULL);
        }
    }
    wgt_scope_pop(m->ctx);
    if (wgt_context_status(m->ctx) != WGT_OK) {
        snprintf(msg, msg_size, "llama_cache_create: %s", wgt_context_error_message(m->ctx));
        llama_cache_destroy(c);
        return NULL;
    }
    for (int l = 0; l < L; l++)
        c->bytes += (uint64_t)wgt_tensor_numel(c->kv[l]) * wgt_dtype_size(wgt_tensor_dtype(c->kv[l])) +
                    (c->kv_scales[l] ? (uint64_t)wgt_tensor_numel(c->kv_scales[l]) * 4 : 0);
    return c;
}

void llama_cache_destroy(llama_cache *c)
{
    if (!c) return;
    for (int l = 0; l < c->model->cfg.n_layers; l++) {
        wgt_tensor_release(c->k[l]);
        wgt_tensor_release(c->v[l]);
        wgt_tensor_release(c->kv[l]);
        wgt_tensor_release(c->k_scales[l]);
        wgt_tensor_release(c->v_scales[l]);
        wgt_tensor_release(c->kv_scales[l]);
    }
    free(c->kv), free(c->k), free(c->v), free(c->kv_scales), free(c->k_scales), free(c->v_scales), free(c);
}

uint64_t llama_cache_bytes(const llama_cache *c) { return c ? c->bytes : 0; }

int64_t llama_cache_length(const llama_cache *c) { return c ? c->length : 0; }
int64_t llama_cache_context(const llama_cache *c) { return c ? c->context : 0; }
void llama_cache_reset(llama_cache *c)
{
    if (c) c->length = 0;
}

void llama_cache_truncate(llama_cache *c, int64_t length)
{
    if (c && length >= 0 && length < c->length) c->length = length;
}

/* x [T, in] f32 -> [T, out] f32. f16 weights: x f32 (as it comes) or f16 (the
 * attention output of an f16 cache) times the f16 W^T, a view, accumulated and
 * stored in f32 (wgt_matmul_ex; f32 x f16 needs no cast of x to f16).
 * Quantized weights (scales set): dequantized inside wgt_qlinear's kernel. */
static wgt_tensor *project(const llama_model *m, wgt_tensor *x, wgt_tensor *w, wgt_tensor *scales, wgt_tensor *bias)
{
    if (scales) {
        wgt_tensor *y = wgt_qlinear(x, w, scales, m->bits);
        return bias ? wgt_add(y, bias) : y;
    }
    if (m->wdtype == WGT_F32) return wgt_linear(x, w, bias);
    if (x && m->cast_f16 && wgt_tensor_dtype(x) != WGT_F16) x = wgt_cast(x, WGT_F16);
    wgt_tensor *y = wgt_matmul_ex(x, wgt_transpose(w, 0, 1), WGT_F32);
    return bias ? wgt_add(y, bias) : y;
}

/* WGT_LLAMA_DECODE_FUSE (read when the model is built), to time each step on a GPU: 0 records the unfused
 * decode layer (13 dispatches), 1 the epilogue fusions (residual adds in the
 * o and down GEMVs, SwiGLU in the gate/up GEMV) and, with llama3 tables, the
 * rotation storing into the cache (rotate_qkv_into_cache): 9, 2 also the
 * attention RMSNorm in the q/k/v GEMV's prologue (8), 3 (the default) also the
 * rotation in that GEMV's epilogue, storing into the cache (7:
 * project_rotate_into_cache, llama3 tables), 4 the MLP's RMSNorm in
 * the gate/up GEMV's prologue too (6), 5 the attention's combine in the o
 * projection's GEMV too (5: attention_project_add), 6 (the default on a GPU)
 * the final norm in the head's GEMV too, f16 weights (head_logits). Every workgroup of a GEMV recomputes its prologue's
 * norm (reads of 8 bytes an input against 16 a row group's weights), a cost
 * that grows with the rows where the dispatch saved does not: on lavapipe
 * (llama-3.2-1b-slice) the q/k/v norm is free, the gate/up one (16384 rows)
 * made decode 20% slower. */
static int decode_fuse_level(const llama_model *m) { return m->decode_fuse; }

static bool decode_fused(const llama_model *m) { return decode_fuse_level(m) >= 1; }

/* x + h W^T for the residual stream x [T, C] f32: in decode (T = 1, float
 * weights) x is the projection's bias, added to its f32 sums in the GEMV's
 * epilogue (wgt_linear_ex): one dispatch instead of two, the same sum
 * (fl(acc + x) = fl(x + fl(acc)): acc is already f32). */
static wgt_tensor *project_add(const llama_model *m, wgt_tensor *x, wgt_tensor *h, wgt_tensor *w, wgt_tensor *scales)
{
    if (!x || !h || wgt_tensor_dim(x, 0) != 1 || !decode_fused(m)) {
        if (h && scales && wgt_tensor_dtype(h) != WGT_F32) h = wgt_cast(h, WGT_F32); /* wgt_qlinear reads f32 */
        return wgt_add(x, project(m, h, w, scales, NULL));
    }
    wgt_tensor *bias = wgt_reshape(x, 1, (int64_t[]){wgt_tensor_dim(x, 1)});
    if (scales) /* quantized: the residual added in the kernel's epilogue; h f16 or f32 as it comes */
        return wgt_qlinear_ex(h, w, scales, m->bits, &(wgt_qlinear_fusion){.bias = bias});
    if (m->wdtype == WGT_F32) return wgt_linear(h, w, bias);
    if (m->cast_f16 && wgt_tensor_dtype(h) != WGT_F16) h = wgt_cast(h, WGT_F16);
    return wgt_linear_ex(h, w, bias, WGT_F32);
}

/* Whether projections feeding only elementwise work (q, k, v; gate, up) store
 * f16 (f16 weights without biases): what follows (rotation, SwiGLU) then
 * writes f16 that the KV cache, attention and the next projection take as it
 * is, where f32 sums needed a cast each (3 dispatches per layer in decode).
 * HF rounds these activations to f16 too. */
static bool f16_activations(const llama_model *m) { return m->wdtype == WGT_F16 && !m->bits; }

/* project with f16 out (f16_activations; no bias): x (the f32 RMSNorm output)
 * is read as f32 by the kernel, no cast dispatch */
static wgt_tensor *project_f16(const llama_model *m, wgt_tensor *x, wgt_tensor *w)
{
    if (x && m->cast_f16 && wgt_tensor_dtype(x) != WGT_F16) x = wgt_cast(x, WGT_F16);
    return wgt_matmul_ex(x, wgt_transpose(w, 0, 1), WGT_F16);
}

/* x [1, heads, T, D] at positions pos0..: HF's half-split rotation. */
static wgt_tensor *rotate(const llama_model *m, wgt_tensor *x, int64_t pos0, int64_t T)
{
    if (!m->rope_lo) return wgt_rope(x, pos0, m->cfg.rope_theta, false);
    const int64_t D = m->cfg.head_dim, heads = wgt_tensor_dim(x, 1);
    /* llama3-scaled frequencies, one fused kernel: the halves x1, x2 as
     * [1, heads, T, 1, D/2] against the tables' rows [T, 2, D/2]:
     *   out[.., s, i] = x1[i] lo[p, s, i] + x2[i] hi[p, s, i]
     * i.e. out[:D/2] = x1 cos - x2 sin, out[D/2:] = x2 cos + x1 sin; the output
     * [1, heads, T, 2, D/2] is contiguous, so [1, heads, T, D] is a view */
    wgt_tensor *in[4] = {wgt_unsqueeze(wgt_slice(x, 3, 0, D / 2, 1), 3), wgt_unsqueeze(wgt_slice(x, 3, D / 2, D, 1), 3),
                         wgt_slice(m->rope_lo, 0, pos0, pos0 + T, 1), wgt_slice(m->rope_hi, 0, pos0, pos0 + T, 1)};
    wgt_tensor *y = wgt_fused(m->ctx, "a * c + b * d", in, 4);
    return wgt_reshape(y, 4, (int64_t[]){1, heads, T, D});
}

/* The rotation of rotate_qkv: out = x1 lo + x2 hi for each half (the
 * segments with rope_pass set take the tables' position-0 rows, (1, 0) and
 * (-0, 1), which reproduce x exactly). */
#define ROTATE_QKV_EXPR "where(e, a * f + b * g, a * c + b * d)"

/* rotate_qkv's inputs: qkv [T, (G + 2) Hkv D] as its k | v | q segments
 * [G + 2, Hkv, T, 1, D/2] (first, second half), the tables' rows at the
 * positions, rope_pass and the position-0 rows */
static void rotate_qkv_inputs(const llama_model *m, wgt_tensor *qkv, int64_t pos0, int64_t T, wgt_tensor **in)
{
    const int64_t Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim, G = m->cfg.n_heads / Hkv;
    wgt_tensor *seg = wgt_permute(wgt_reshape(qkv, 4, (int64_t[]){T, G + 2, Hkv, D}), (int[]){1, 2, 0, 3});
    in[0] = wgt_unsqueeze(wgt_slice(seg, 3, 0, D / 2, 1), 3);
    in[1] = wgt_unsqueeze(wgt_slice(seg, 3, D / 2, D, 1), 3);
    in[2] = wgt_slice(m->rope_lo, 0, pos0, pos0 + T, 1);
    in[3] = wgt_slice(m->rope_hi, 0, pos0, pos0 + T, 1);
    in[4] = m->rope_pass;
    in[5] = wgt_slice(m->rope_lo, 0, 0, 1, 1);
    in[6] = wgt_slice(m->rope_hi, 0, 0, 1, 1);
}

/* Appends the keys and values kv [2, Hkv, T, D] of positions pos0.. to layer
 * l's cache: one assignment (cast to the cache's dtype), or with an 8-bit
 * cache one quantization into its codes and scales. */
static void store_kv(llama_cache *c, int l, int64_t pos0, int64_t T, wgt_tensor *kv)
{
    const int64_t end = pos0 + T;
    if (c->q8) {
        wgt_quantize_rows_into(wgt_slice(c->kv[l], 2, pos0, end, 1), wgt_slice(c->kv_scales[l], 2, pos0, end, 1), kv);
    } else if (c->model->kv_first) { /* the cache [rows, 2, Hkv, D] at the positions as [2, Hkv, T, D] */
        wgt_assign(wgt_permute(wgt_slice(c->kv[l], 0, pos0, end, 1), (int[]){1, 2, 0, 3}), kv);
    } else {
        wgt_assign(wgt_slice(c->kv[l], 2, pos0, end, 1), kv);
    }
}

/* k or v [1, Hkv, T, D] of positions pos0.. into layer l's cache (models
 * without kv_first: k and v come from separate views of the projection) */
static void store_one(llama_cache *c, int l, bool is_v, int64_t pos0, int64_t T, wgt_tensor *x)
{
    const int64_t end = pos0 + T;
    wgt_tensor *dst = wgt_slice(is_v ? c->v[l] : c->k[l], 2, pos0, end, 1);
    if (c->q8) wgt_quantize_rows_into(dst, wgt_slice(is_v ? c->v_scales[l] : c->k_scales[l], 2, pos0, end, 1), x);
    else wgt_assign(dst, x);
}

/* qkv [T, (2 Hkv + H) D] (k | v | q: the model's kv_first) -> one fused
 * kernel, rotating q and k and passing v through, whose output
 * [G + 2, Hkv, T, D] (G = H / Hkv) holds k | v as its first two segments and
 * q as the last G (head h = s Hkv + j, the projection's order); then one
 * assignment (or quantization) appends k and v to the cache. *q: [1, H, T, D]
 * (a view). The unfused form of rotate_qkv_into_cache (prefill,
 * WGT_LLAMA_DECODE_FUSE=0, an 8-bit cache). */
static void rotate_qkv(llama_cache *c, int l, wgt_tensor *qkv, int64_t pos0, int64_t T, wgt_tensor **q)
{
    const llama_model *m = c->model;
    const int64_t H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim, G = H / Hkv;
    wgt_tensor *in[7];
    rotate_qkv_inputs(m, qkv, pos0, T, in);
    wgt_tensor *y = wgt_reshape(wgt_fused(m->ctx, ROTATE_QKV_EXPR, in, 7), 4, (int64_t[]){G + 2, Hkv, T, D});
    *q = wgt_reshape(wgt_slice(y, 0, 2, G + 2, 1), 4, (int64_t[]){1, H, T, D});
    store_kv(c, l, pos0, T, wgt_slice(y, 0, 0, 2, 1));
}

/* The cache rows from pos0 as a flat run of (G + 2) Hkv D values (k | v |
 * q of one token); *q: [1, H, 1, D], a view of its q part. */
static wgt_tensor *cache_token_run(llama_cache *c, int l, int64_t pos0, wgt_tensor **q)
{
    const llama_model *m = c->model;
    const int64_t H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim, G = H / Hkv;
    wgt_tensor *rows = wgt_slice(c->kv[l], 0, pos0, pos0 + (G + 3) / 2, 1);
    wgt_tensor *flat = wgt_reshape(rows, 1, (int64_t[]){wgt_tensor_numel(rows)});
    *q = wgt_reshape(wgt_slice(flat, 0, 2 * Hkv * D, (G + 2) * Hkv * D, 1), 4, (int64_t[]){1, H, 1, D});
    return wgt_slice(flat, 0, 0, (G + 2) * Hkv * D, 1);
}

/* rotate_qkv for one token (decode) in one dispatch, the same values: the
 * kernel's output [G + 2, Hkv, 1, D] (k | v | q) is stored straight into the
 * cache [rows, 2, Hkv, D] from row pos0 on (wgt_fused_assign): its k and v
 * are row pos0, its q the G Hkv D values after them, the scratch rows that the
 * next tokens' k and v overwrite (the cache holds S = ceil(G / 2) rows past
 * its context for the last). *q: [1, H, 1, D], a view of those rows. */
static void rotate_qkv_into_cache(llama_cache *c, int l, wgt_tensor *qkv, int64_t pos0, wgt_tensor **q)
{
    const llama_model *m = c->model;
    const int64_t Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim, G = m->cfg.n_heads / Hkv;
    wgt_tensor *in[7];
    rotate_qkv_inputs(m, qkv, pos0, 1, in);
    wgt_tensor *run = cache_token_run(c, l, pos0, q);
    wgt_fused_assign(wgt_reshape(run, 5, (int64_t[]){G + 2, Hkv, 1, 2, D / 2}), ROTATE_QKV_EXPR, in, 7);
}

/* [T, heads * D] -> [1, heads, T, D] (a view) */
static wgt_tensor *heads(wgt_tensor *x, int64_t T, int64_t n, int64_t D)
{
    return wgt_permute(wgt_reshape(x, 4, (int64_t[]){1, T, n, D}), (int[]){0, 2, 1, 3});
}

/* The fused decode's RMSNorm in the next projection's prologue: one row, f16
 * weights (wgt_rms_norm_linear_ex; the old cast path normalizes first). Not
 * the head's: its 128256 rows (Llama-3.2) would renormalize the row in ~16000
 * workgroups to save one dispatch a token (see decode_fuse_level). */
static bool norm_in_projection(const llama_model *m, wgt_tensor *x)
{
    return x && wgt_tensor_dim(x, 0) == 1 && m->wdtype == WGT_F16 && !m->bits && !m->cast_f16 &&
           decode_fuse_level(m) >= 2;
}

/* The logits of the rows x [T, C]: the final RMSNorm, then the head. At
 * fusion level 6, with f16 weights (norm_in_projection), a decode row's norm
 * runs in the head GEMV's prologue: one dispatch fewer a token (H200,
 * bench/results/h200-2026-11-29o/close: 128.3 us profiled against 126.6 + 7.4
 * for the head and the norm kernel; p7: decode +0.3%). Quantized heads keep
 * the norm kernel: their GEMV stages and renormalizes the row in each of its
 * workgroups, which cost more than the dispatch saved (p2: q4 60.1 us against
 * 52.0 + 6.9, q8 97.3 against 91.8 + 6.9; decode unchanged). */
static wgt_tensor *head_logits(const llama_model *m, wgt_tensor *x, double eps)
{
    if (norm_in_projection(m, x) && decode_fuse_level(m) >= 6)
        return wgt_rms_norm_linear_ex(x, m->norm, eps, m->head, WGT_F32, false);
    return project(m, wgt_rms_norm(x, m->norm, eps), m->head, m->head_scales, NULL);
}

/* Quantized weights in fused decode: each projection is one wgt_qlinear_ex
 * (the RMSNorm, residual add and SwiGLU inside; its kernel stages the row in
 * workgroup memory anyway, so the norm costs one pass over 4 KiB there). */
static bool quant_decode(const llama_model *m, wgt_tensor *x)
{
    return x && m->bits && wgt_tensor_dim(x, 0) == 1 && decode_fuse_level(m) >= 2;
}

/* Decode with the norm fused into the q/k/v projection (f16 weights:
 * norm_in_projection; quantized: quant_decode), llama3 tables, no q/k/v
 * bias: RMSNorm, projection and rotation in one call (one dispatch on
 * WebGPU), stored into the cache as rotate_qkv_into_cache stores them, the v
 * heads [Hkv, 2 Hkv) unrotated (rotate_qkv_into_cache's position-0 rows give
 * them unchanged too): fusion level 3 (decode_fuse_level). */
static bool project_rotate_wanted(const llama_model *m, const llama_layer *L, wgt_tensor *x)
{
    return m->kv_first && m->rope_tab && !L->b_qkv && decode_fuse_level(m) >= 3 &&
           (norm_in_projection(m, x) || quant_decode(m, x));
}

static void project_rotate_into(llama_cache *c, int l, wgt_tensor *x, int64_t pos0, wgt_tensor *run)
{
    const llama_model *m = c->model;
    const llama_layer *L = &m->layers[l];
    const int64_t Hkv = m->cfg.n_kv_heads, half = m->cfg.head_dim / 2;
    wgt_tensor *table = wgt_reshape(wgt_slice(m->rope_tab, 0, pos0, pos0 + 1, 1), 2, (int64_t[]){4, half});
    if (m->bits)
        wgt_qlinear_rope_into(run, x, L->w_qkv, L->s_qkv, m->bits, L->attn_norm, m->cfg.rms_eps, table, Hkv, 2 * Hkv);
    else
        wgt_rms_norm_linear_rope_into(run, x, L->attn_norm, m->cfg.rms_eps, L->w_qkv, table, Hkv, 2 * Hkv);
}

static void project_rotate_into_cache(llama_cache *c, int l, wgt_tensor *x, int64_t pos0, wgt_tensor **q)
{
    project_rotate_into(c, l, x, pos0, cache_token_run(c, l, pos0, q));
}

/* The same one call into a scratch run of (G + 2) Hkv D values (k | v | q)
 * for an 8-bit cache, whose k and v are then quantized into the cache: one
 * dispatch a layer more than the float cache's, not two (the rotation's own
 * kernel). *q: [1, H, 1, D], a view of the scratch. */
static void project_rotate_q8(llama_cache *c, int l, wgt_tensor *x, int64_t pos0, wgt_tensor **q)
{
    const llama_model *m = c->model;
    const int64_t H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim;
    wgt_tensor *run = wgt_tensor_empty(m->ctx, m->wdtype, 1, (int64_t[]){(H + 2 * Hkv) * D});
    project_rotate_into(c, l, x, pos0, run);
    *q = wgt_reshape(wgt_slice(run, 0, 2 * Hkv * D, (H + 2 * Hkv) * D, 1), 4, (int64_t[]){1, H, 1, D});
    store_kv(c, l, pos0, 1, wgt_reshape(wgt_slice(run, 0, 0, 2 * Hkv * D, 1), 4, (int64_t[]){2, Hkv, 1, D}));
}

/* Decode (T = 1) at fusion level 5 with f16 or quantized weights: the
 * attention and the o projection (with the residual added) in one call, whose
 * combine runs in the projection's GEMV on WebGPU. */
static bool attention_projected(const llama_cache *c, wgt_tensor *x, int64_t T)
{
    const llama_model *m = c->model;
    return T == 1 && x && wgt_tensor_dim(x, 0) == 1 && decode_fuse_level(m) >= 5 &&
           (m->bits || (m->wdtype == WGT_F16 && !m->cast_f16));
}

/* x + attention(q, kc, vc) W_o^T, as attention_block's last two steps compute
 * it at level 4 (project_add with the residual as the GEMV's bias): f32 sums;
 * a float cache: q in the weights' dtype (f16), the attention's output in it;
 * an 8-bit cache (kc, vc its codes): q and the output in q's dtype, as
 * wgt_attention_q8 there. */
static wgt_tensor *attention_project_add(llama_cache *c, int l, wgt_tensor *x, wgt_tensor *q, wgt_tensor *kc,
                                         wgt_tensor *vc, int64_t end)
{
    const llama_model *m = c->model;
    const llama_layer *L = &m->layers[l];
    wgt_tensor *bias = wgt_reshape(x, 1, (int64_t[]){wgt_tensor_dim(x, 1)});
    if (c->q8) {
        wgt_tensor *ks = wgt_slice(c->k_scales[l], 2, 0, end, 1), *vs = wgt_slice(c->v_scales[l], 2, 0, end, 1);
        if (m->bits) return wgt_attention_q8_qlinear_ex(q, kc, ks, vc, vs, true, L->wo, L->so, m->bits, bias);
        return wgt_attention_q8_linear_ex(q, kc, ks, vc, vs, true, L->wo, bias, WGT_F32);
    }
    if (q && wgt_tensor_dtype(q) != m->wdtype) q = wgt_cast(q, m->wdtype);
    if (m->bits) return wgt_attention_qlinear_ex(q, kc, vc, true, L->wo, L->so, m->bits, bias);
    return wgt_attention_linear_ex(q, kc, vc, true, L->wo, bias, WGT_F32);
}

/* x + attention(RMSNorm(x)) for the residual stream x [T, C] */
static wgt_tensor *attention_block(llama_cache *c, int l, wgt_tensor *x, int64_t T)
{
    const llama_model *m = c->model;
    const llama_layer *L = &m->layers[l];
    const int64_t H = m->cfg.n_heads, Hkv = m->cfg.n_kv_heads, D = m->cfg.head_dim;
    const int64_t pos0 = c->length, end = pos0 + T;
    const double eps = m->cfg.rms_eps;
    /* one projection for q, k, v: columns [0, H D), [H D, (H + Hkv) D), the rest */
    /* f16 q, k, v only with the llama3 tables (f16 too): wgt_rope's kernel
     * reads and writes f16 through f32 copies (two more dispatches) */
    const bool f16 = f16_activations(m) && m->rope_lo && !L->b_qkv && !L->q_norm;
    wgt_tensor *qkv = NULL, *q = NULL, *k = NULL, *v = NULL;
    /* an 8-bit cache stores each token's k and v through wgt_quantize_rows_into,
     * from a scratch run where the decode paths write into the float cache */
    const bool one_call = T == 1 && project_rotate_wanted(m, L, x);
    if (one_call && c->q8) {
        project_rotate_q8(c, l, x, pos0, &q);
    } else if (one_call) {
        project_rotate_into_cache(c, l, x, pos0, &q);
    } else if (quant_decode(m, x) && !L->b_qkv) { /* quantized: the norm in the kernel that stages x */
        qkv = wgt_qlinear_ex(x, L->w_qkv, L->s_qkv, m->bits, &(wgt_qlinear_fusion){.norm_weight = L->attn_norm, .norm_eps = eps});
    } else if (norm_in_projection(m, x) && !L->b_qkv) { /* f16 q, k, v, or f32 sums as project's */
        qkv = wgt_rms_norm_linear_ex(x, L->attn_norm, eps, L->w_qkv, f16 ? WGT_F16 : WGT_F32, false);
    } else {
        wgt_tensor *h = wgt_rms_norm(x, L->attn_norm, eps);
        qkv = f16 ? project_f16(m, h, L->w_qkv) : project(m, h, L->w_qkv, L->s_qkv, L->b_qkv);
    }
    /* append to the cache (cast to its dtype), attend over the prefix; causal is
     * bottom-right aligned, so prompt token i sees cache rows <= pos0 + i */
    if (one_call) {
        /* q, k and v are in the cache already */
    } else if (m->kv_first) { /* k | v | q: one rotation kernel and one cache assignment, or in decode one kernel for both */
        if (T == 1 && decode_fused(m) && !c->q8) rotate_qkv_into_cache(c, l, qkv, pos0, &q);
        else rotate_qkv(c, l, qkv, pos0, T, &q);
    } else if (L->q_norm) { /* Qwen3: RMSNorm over each head (own weights for q and k) before the rotation */
        q = wgt_rms_norm(wgt_reshape(wgt_slice(qkv, 1, 0, H * D, 1), 3, (int64_t[]){T, H, D}), L->q_norm, eps);
        k = wgt_rms_norm(wgt_reshape(wgt_slice(qkv, 1, H * D, (H + Hkv) * D, 1), 3, (int64_t[]){T, Hkv, D}), L->k_norm,
                         eps);
        q = rotate(m, heads(wgt_reshape(q, 2, (int64_t[]){T, H * D}), T, H, D), pos0, T);
        k = rotate(m, heads(wgt_reshape(k, 2, (int64_t[]){T, Hkv * D}), T, Hkv, D), pos0, T);
    } else { /* q and k rotated together as H + Hkv heads: one rope for both */
        wgt_tensor *qk = rotate(m, heads(wgt_slice(qkv, 1, 0, (H + Hkv) * D, 1), T, H + Hkv, D), pos0, T);
        q = wgt_slice(qk, 1, 0, H, 1);
        k = wgt_slice(qk, 1, H, H + Hkv, 1);
    }
    if (!m->kv_first) {
        v = wgt_slice(qkv, 1, (H + Hkv) * D, (H + 2 * Hkv) * D, 1);
        store_one(c, l, false, pos0, T, k);
        store_one(c, l, true, pos0, T, heads(v, T, Hkv, D));
    }
    wgt_tensor *kc = wgt_slice(c->k[l], 2, 0, end, 1), *vc = wgt_slice(c->v[l], 2, 0, end, 1);
    if (attention_projected(c, x, T)) return attention_project_add(c, l, x, q, kc, vc, end);
    wgt_tensor *y; /* [1, H, T, D] */
    if (c->q8) { /* q as it comes (f32 or f16): the result takes its dtype */
        y = wgt_attention_q8(q, kc, wgt_slice(c->k_scales[l], 2, 0, end, 1), vc, wgt_slice(c->v_scales[l], 2, 0, end, 1),
                             true);
    } else {
        if (q && m->wdtype != WGT_F32 && wgt_tensor_dtype(q) != m->wdtype) q = wgt_cast(q, m->wdtype);
        y = wgt_scaled_dot_product_attention(q, kc, vc, true, 0.0, 0);
    }
    y = wgt_reshape(wgt_permute(y, (int[]){0, 2, 1, 3}), 2, (int64_t[]){T, H * D});
    return project_add(m, x, y, L->wo, L->so); /* f16 y as it is (project_add casts where a kernel needs f32) */
}

/* x + MLP(RMSNorm(x)) for the residual stream x [T, C] */
static wgt_tensor *mlp_block(const llama_model *m, const llama_layer *L, wgt_tensor *x)
{
    const int64_t F = m->cfg.intermediate_size;
    const double eps = m->cfg.rms_eps;
    wgt_tensor *act, *h = NULL;
    if (quant_decode(m, x)) {
        /* quantized decode: norm, gate/up projection and SwiGLU in one kernel */
        act = wgt_qlinear_ex(x, L->w_gate_up, L->s_gate_up, m->bits,
                             &(wgt_qlinear_fusion){.norm_weight = L->mlp_norm, .norm_eps = eps, .swiglu = true});
    } else if (norm_in_projection(m, x) && decode_fuse_level(m) >= 4) {
        /* decode, WGT_LLAMA_DECODE_FUSE=4: norm, projection and SwiGLU in one
         * call (one GEMV whose workgroups normalize the row, then hold a gate
         * row and its up row: interleaved at load), the values of the calls below */
        act = wgt_rms_norm_linear_ex(x, L->mlp_norm, eps, L->w_gate_up, WGT_F16, true);
    } else if (x && wgt_tensor_dim(x, 0) == 1 && !m->bits && decode_fused(m)) {
        h = wgt_rms_norm(x, L->mlp_norm, eps);
        if (m->wdtype == WGT_F16 && m->cast_f16) h = wgt_cast(h, WGT_F16);
        act = wgt_linear_swiglu_ex(h, L->w_gate_up, f16_activations(m) ? WGT_F16 : WGT_F32);
    } else {
        h = wgt_rms_norm(x, L->mlp_norm, eps);
        /* [T, 2F]: gate and up interleaved; f16 with f16 weights, so is the SwiGLU below */
        wgt_tensor *gu = f16_activations(m) ? project_f16(m, h, L->w_gate_up)
                                            : project(m, h, L->w_gate_up, L->s_gate_up, NULL);
        wgt_tensor *in[2] = {wgt_slice(gu, 1, 0, 2 * F, 2), wgt_slice(gu, 1, 1, 2 * F, 2)};
        /* SwiGLU in one elementwise kernel: silu(gate) * up (the text of wgt_linear_swiglu_ex's epilogue) */
        act = in[0] && in[1] ? wgt_fused(m->ctx, "a / (1 + exp(-a)) * b", in, 2) : NULL;
    }
    return project_add(m, x, act, L->w_down, L->s_down);
}

/* tokens on the host (T of them), or token: one id on the device (i32 [1]) */
static wgt_tensor *forward(llama_cache *c, const int32_t *tokens, wgt_tensor *token, int64_t T, bool all_logits,
                           char *msg, size_t msg_size)
{
    if (!c || (!tokens && !token) || T < 1 || c->length + T > c->context) {
        snprintf(msg, msg_size, "llama_forward: %lld new tokens at position %lld do not fit a context of %lld",
                 (long long)T, (long long)(c ? c->length : 0), (long long)(c ? c->context : 0));
        return NULL;
    }
    llama_model *m = c->model;
    wgt_context *ctx = m->ctx;
    const int64_t V = m->cfg.vocab_size;
    if (token && (wgt_tensor_dtype(token) != WGT_I32 || wgt_tensor_numel(token) != 1 || T != 1)) {
        snprintf(msg, msg_size, "llama_forward_token: the token must be one i32 id on the device");
        return NULL;
    }
    for (int64_t i = 0; tokens && i < T; i++)
        if (tokens[i] < 0 || tokens[i] >= V) {
            snprintf(msg, msg_size, "llama_forward: token %d at %lld is outside the vocabulary [0, %lld)", tokens[i],
                     (long long)i, (long long)V);
            return NULL;
        }
    wgt_no_grad_push(ctx);
    wgt_scope_push(ctx);
    const wgt_matmul_precision precision_before = wgt_set_matmul_precision(ctx, m->precision);
    /* decode: the token's row as a view of the table (no indexing kernel, so
     * no out-of-range flag for the device to report back: the step's only
     * read is the caller's); prefill: one embedding lookup. The ids were
     * range-checked above. A device token (the previous step's pick) is
     * one embedding lookup: the host never waits for it. */
    wgt_tensor *x = token    ? wgt_embedding(m->embed, wgt_reshape(token, 1, (int64_t[]){1}))
                    : T == 1 ? wgt_slice(m->embed, 0, tokens[0], tokens[0] + 1, 1)
                             : wgt_embedding(m->embed, wgt_tensor_from_host(ctx, WGT_I32, 1, (int64_t[]){T}, tokens));
    if (x && wgt_tensor_dtype(x) != WGT_F32) x = wgt_cast(x, WGT_F32);
    const double eps = m->cfg.rms_eps;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        /* a scope per layer: only the residual stream outlives it, so a long
         * prefill holds one layer's activations at a time, not all of them */
        const llama_layer *L = &m->layers[l];
        wgt_scope_push(ctx);
        x = attention_block(c, l, x, T);
        x = wgt_scope_keep(mlp_block(m, L, x));
        wgt_scope_pop(ctx);
    }
    if (!all_logits) x = wgt_slice(x, 0, T - 1, T, 1);
    wgt_tensor *logits = wgt_scope_keep(head_logits(m, x, eps));
    wgt_set_matmul_precision(ctx, precision_before);
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    if (!logits || wgt_context_status(ctx) != WGT_OK) {
        snprintf(msg, msg_size, "llama_forward: %s", wgt_context_error_message(ctx));
        wgt_tensor_release(logits);
        return NULL;
    }
    c->length += T;
    return logits;
}

wgt_tensor *llama_forward(llama_cache *c, const int32_t *tokens, int64_t T, bool all_logits, char *msg,
                          size_t msg_size)
{
    return forward(c, tokens, NULL, T, all_logits, msg, msg_size);
}

wgt_tensor *llama_forward_token(llama_cache *c, wgt_tensor *token, char *msg, size_t msg_size)
{
    return forward(c, NULL, token, 1, false, msg, msg_size);
}

wgt_tensor *llama_argmax_token(wgt_tensor *logits)
{
    if (!logits || wgt_tensor_ndim(logits) != 2) return NULL;
    const int64_t N = wgt_tensor_dim(logits, 0);
    wgt_context *ctx = wgt_tensor_context(logits);
    wgt_scope_push(ctx);
    wgt_tensor *idx = wgt_scope_keep(wgt_argmax(wgt_slice(logits, 0, N - 1, N, 1), 1, false));
    wgt_scope_pop(ctx);
    return idx;
}

int32_t llama_argmax(wgt_tensor *logits)
{
    if (!logits || wgt_tensor_ndim(logits) != 2) return -1;
    const int64_t N = wgt_tensor_dim(logits, 0);
    wgt_context *ctx = wgt_tensor_context(logits);
    wgt_scope_push(ctx);
    wgt_tensor *idx = wgt_argmax(wgt_slice(logits, 0, N - 1, N, 1), 1, false);
    int32_t id = -1;
    if (!idx || wgt_tensor_read(idx, &id, sizeof(id)) != WGT_OK) id = -1;
    wgt_scope_pop(ctx);
    return id;
}

void llama_repetition_penalty(float *logits, int vocab_size, const int32_t *history, size_t n, double penalty)
{
    if (penalty == 1.0) return;
    /* each distinct token once, as HF's gather/scatter does */
    unsigned char *seen = calloc((size_t)vocab_size, 1);
    if (!seen) return;
    for (size_t i = 0; i < n; i++) {
        const int32_t t = history[i];
        if (t < 0 || t >= vocab_size || seen[t]) continue;
        seen[t] = 1;
        logits[t] = logits[t] > 0 ? (float)(logits[t] / penalty) : (float)(logits[t] * penalty);
    }
    free(seen);
}
