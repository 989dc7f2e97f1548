/* wgt bench: times op families at sizes that matter and prints a table and JSON.
 *
 *   wgt bench [--quick] [--cpu] [--json FILE] [--only NAME] [--reps N] [--precision highest|medium]
 *
 * Each case runs warm-up iterations, then `reps` timed iterations between two
 * wgt_synchronize calls (so the time is the device's, plus one submit); the
 * reported time is the median of 5 such batches. --quick divides the sizes so
 * the harness itself can be tested on lavapipe in CI. --cpu runs the CPU backend
 * at sizes for a small machine (cpu_div) against bench/numpy_ref.py.
 * bench/torch_ref.py runs the same case names in PyTorch and bench/compare.py
 * prints the ratios. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cnn.h"
#include "bench_models.h"
#include "wgt_commands.h"
#include "wgtensor.h"

typedef struct bench_state {
    wgt_context *ctx;
    wgt_tensor *a, *b, *c;
    wgt_tensor *d;         /* a fourth operand (the NN cases' upstream gradient or targets) */
    int64_t n, m, k;
} bench_state;

typedef struct bench_case {
    const char *name;
    const char *shape;     /* printed */
    int64_t n, m, k;       /* full-size parameters */
    int64_t quick_div;     /* --quick divides n (and m, k where used) */
    int64_t cpu_div;       /* --cpu divides likewise; 0: not run on the CPU */
    double (*bytes)(const bench_state *s);   /* bytes moved, or NULL */
    double (*flops)(const bench_state *s);   /* flops, or NULL */
    bool (*setup)(bench_state *s);
    wgt_tensor *(*step)(bench_state *s);     /* one iteration; returns a result to release */
    int reps;
} bench_case;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static wgt_tensor *randn(bench_state *s, int ndim, const int64_t *shape, uint64_t seed)
{
    return wgt_randn(s->ctx, WGT_F32, ndim, shape, seed);
}

/* ---- setups */
static bool setup_vec2(bench_state *s)
{
    s->a = randn(s, 1, &s->n, 1);
    s->b = randn(s, 1, &s->n, 2);
    s->c = randn(s, 1, &s->n, 3);
    return s->a && s->b && s->c;
}
static bool setup_matrix(bench_state *s)
{
    int64_t shape[2] = {s->n, s->m};
    s->a = randn(s, 2, shape, 4);
    return s->a != NULL;
}
static bool setup_gemm(bench_state *s)
{
    int64_t sa[2] = {s->n, s->k}, sb[2] = {s->k, s->m};
    s->a = randn(s, 2, sa, 5);
    s->b = randn(s, 2, sb, 6);
    return s->a && s->b;
}
static bool setup_gemm_f16(bench_state *s)
{
    if (!setup_gemm(s)) return false;
    wgt_tensor *a = wgt_cast(s->a, WGT_F16), *b = wgt_cast(s->b, WGT_F16);
    wgt_tensor_release(s->a);
    wgt_tensor_release(s->b);
    s->a = a;
    s->b = b;
    return a && b;
}
static bool setup_gemv(bench_state *s)
{
    int64_t sa[2] = {s->n, s->k};
    s->a = randn(s, 2, sa, 7);
    s->b = randn(s, 1, &s->k, 8);
    return s->a && s->b;
}
/* Decode matvecs of an LLM: x [1, k] f32 times W [n, k]^T stored f16 (s->a)
 * or group-wise 8 / 4 bits (s->a codes, s->c scales; quantized from a random
 * f16 matrix); with m > 0, x has m rows (a prompt's prefill) */
static bool setup_decode_gemv(bench_state *s, int bits)
{
    int64_t sa[2] = {s->n, s->k}, sx[2] = {s->m > 0 ? s->m : 1, s->k};
    wgt_tensor *w32 = randn(s, 2, sa, 7);
    wgt_tensor *w = w32 ? wgt_cast(w32, WGT_F16) : NULL;
    wgt_tensor_release(w32);
    s->b = randn(s, 2, sx, 8);
    if (!w || !s->b) {
        wgt_tensor_release(w);
        return false;
    }
    if (!bits) {
        s->a = w;
        return true;
    }
    wgt_status st = wgt_quantize_weight(w, bits, &s->a, &s->c);
    wgt_tensor_release(w);
    return st == WGT_OK;
}
static bool setup_gemv_f16(bench_state *s) { return setup_decode_gemv(s, 0); }
static bool setup_gemv_q8(bench_state *s) { return setup_decode_gemv(s, 8); }
static bool setup_gemv_q4(bench_state *s) { return setup_decode_gemv(s, 4); }
static wgt_tensor *step_gemv_half(bench_state *s) { return wgt_linear_ex(s->b, s->a, NULL, WGT_F32); }
static wgt_tensor *step_qgemv(bench_state *s)
{
    return wgt_qlinear(s->b, s->a, s->c, (int)(wgt_tensor_dim(s->a, 1) * 32 / s->k)); /* codes [n, k bits / 32] */
}
static bool setup_small(bench_state *s)
{
    int64_t n = 1024;
    s->a = wgt_zeros(s->ctx, WGT_F32, 1, &n);
    s->b = wgt_ones(s->ctx, WGT_F32, 1, &n);
    return s->a && s->b;
}

/* ---- steps */
static wgt_tensor *step_add(bench_state *s) { return wgt_add(s->a, s->b); }
static wgt_tensor *step_copy(bench_state *s) { return wgt_copy(s->a); }
static wgt_tensor *step_exp(bench_state *s) { return wgt_exp(s->a); }
static wgt_tensor *step_fused(bench_state *s)
{
    wgt_tensor *in[3] = {s->a, s->b, s->c};
    return wgt_fused(s->ctx, "sqrt(abs(a*b + c))", in, 3);
}
static wgt_tensor *step_sum_all(bench_state *s) { return wgt_sum(s->a, NULL, 0, false); }
static wgt_tensor *step_row_sum(bench_state *s)
{
    int axis = 1;
    return wgt_sum(s->a, &axis, 1, false);
}
static wgt_tensor *step_softmax(bench_state *s) { return wgt_softmax(s->a, -1); }
static wgt_tensor *step_transpose(bench_state *s)
{
    wgt_tensor *t = wgt_transpose(s->a, 0, 1);
    wgt_tensor *c = wgt_copy(t);
    wgt_tensor_release(t);
    return c;
}
static wgt_tensor *step_matmul(bench_state *s) { return wgt_matmul(s->a, s->b); }
/* 10,000 dependent small adds, end to end through the public API (one "iteration"). */
static wgt_tensor *step_small_ops(bench_state *s)
{
    wgt_tensor *x = wgt_tensor_retain(s->a);
    for (int i = 0; i < 10000; i++) {
        wgt_tensor *y = wgt_add(x, s->b);
        wgt_tensor_release(x);
        x = y;
    }
    return x;
}

/* ---- NN ops, forward + backward through autograd (x, weight, bias as in a
 * model: all three require grad; d is the upstream gradient of y) */
static bool setup_norm(bench_state *s)
{
    int64_t shape[2] = {s->n, s->m};
    s->a = randn(s, 2, shape, 9);
    s->b = wgt_ones(s->ctx, WGT_F32, 1, &s->m);
    s->c = wgt_zeros(s->ctx, WGT_F32, 1, &s->m);
    s->d = randn(s, 2, shape, 10);
    return s->a && s->b && s->c && s->d && wgt_tensor_set_requires_grad(s->a, true) == WGT_OK &&
           wgt_tensor_set_requires_grad(s->b, true) == WGT_OK && wgt_tensor_set_requires_grad(s->c, true) == WGT_OK;
}
static wgt_tensor *norm_fb(bench_state *s, bool rms)
{
    wgt_tensor *params[3] = {s->a, s->b, s->c};
    wgt_zero_grad(params, 3);
    wgt_tensor *y = rms ? wgt_rms_norm(s->a, s->b, 1e-5) : wgt_layer_norm(s->a, s->b, s->c, 1e-5);
    if (y && wgt_backward_ex(y, s->d, false) != WGT_OK) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}
static wgt_tensor *step_layer_norm_fb(bench_state *s) { return norm_fb(s, false); }
static wgt_tensor *step_rms_norm_fb(bench_state *s) { return norm_fb(s, true); }
/* logits [n, m] requiring grad, targets i32 [n] uniform in [0, m) */
static bool setup_cross_entropy(bench_state *s)
{
    int64_t shape[2] = {s->n, s->m};
    s->a = randn(s, 2, shape, 11);
    wgt_tensor *u = wgt_rand(s->ctx, WGT_F32, 1, &s->n, 12);
    wgt_tensor *scaled = u ? wgt_binary_scalar(WGT_OP_MUL, u, (double)s->m) : NULL;
    s->d = scaled ? wgt_cast(scaled, WGT_I32) : NULL;
    wgt_tensor_release(u);
    wgt_tensor_release(scaled);
    return s->a && s->d && wgt_tensor_set_requires_grad(s->a, true) == WGT_OK;
}
static wgt_tensor *step_cross_entropy_fb(bench_state *s)
{
    wgt_zero_grad(&s->a, 1);
    wgt_tensor *loss = wgt_cross_entropy(s->a, s->d, WGT_REDUCTION_MEAN, -100);
    if (loss && wgt_backward(loss) != WGT_OK) {
        wgt_tensor_release(loss);
        return NULL;
    }
    return loss;
}

/* ---- attention and linear (issue 10): q, k, v [m, 12, n, k] requiring grad,
 * causal, forward + backward through autograd with upstream gradient d */
#define ATTN_HEADS 12
/* GPT training's attention (the `wgt train` model: 6 heads of 64, T 256,
 * batch 64): causal with dropout 0.2 on the weights, fwd+bwd; q, k, v
 * [m, 6, n, k] */
#define ATTN_GPT_HEADS 6
static bool setup_attention_heads(bench_state *s, int64_t heads)
{
    int64_t shape[4] = {s->m, heads, s->n, s->k};
    s->a = randn(s, 4, shape, 13);
    s->b = randn(s, 4, shape, 14);
    s->c = randn(s, 4, shape, 15);
    s->d = randn(s, 4, shape, 16);
    return s->a && s->b && s->c && s->d && wgt_tensor_set_requires_grad(s->a, true) == WGT_OK &&
           wgt_tensor_set_requires_grad(s->b, true) == WGT_OK && wgt_tensor_set_requires_grad(s->c, true) == WGT_OK;
}
static bool setup_attention(bench_state *s) { return setup_attention_heads(s, ATTN_HEADS); }
static bool setup_attention_gpt(bench_state *s) { return setup_attention_heads(s, ATTN_GPT_HEADS); }
/* LLM decode attention (Llama-3.2-1B: 32 query heads over 8 kv heads, D 64):
 * q f16 [1, 32, 1, 64] against the first n rows of an f16 cache
 * [n + 2, 2, 8, 64] (k and v interleaved by position, as llama.c keeps it) */
static bool setup_attention_decode(bench_state *s)
{
    int64_t sc[4] = {s->n + 2, 2, 8, 64}, sq[4] = {1, 32, 1, 64};
    wgt_tensor *c32 = randn(s, 4, sc, 7), *q32 = randn(s, 4, sq, 8);
    wgt_tensor *cache = c32 ? wgt_cast(c32, WGT_F16) : NULL;
    s->a = q32 ? wgt_cast(q32, WGT_F16) : NULL;
    wgt_tensor_release(c32);
    wgt_tensor_release(q32);
    if (!cache || !s->a) return false;
    wgt_tensor *rows = wgt_slice(cache, 0, 0, s->n, 1);
    wgt_tensor *k = rows ? wgt_slice(rows, 1, 0, 1, 1) : NULL, *v = rows ? wgt_slice(rows, 1, 1, 2, 1) : NULL;
    s->b = k ? wgt_permute(k, (int[]){1, 2, 0, 3}) : NULL;
    s->c = v ? wgt_permute(v, (int[]){1, 2, 0, 3}) : NULL;
    wgt_tensor_release(k), wgt_tensor_release(v), wgt_tensor_release(rows); /* the permuted views hold the buffer */
    s->d = cache;
    return s->b && s->c;
}
static wgt_tensor *step_attention_causal(bench_state *s)
{
    if (wgt_no_grad_push(s->ctx) != WGT_OK) return NULL;
    wgt_tensor *y = wgt_scaled_dot_product_attention(s->a, s->b, s->c, true, 0.0, 0);
    wgt_no_grad_pop(s->ctx);
    return y;
}
static double bytes_attention_decode(const bench_state *s) { return 2.0 * 2 * 8 * 64 * (double)s->n; }
/* An LLM prefill's attention (Llama-3.2-1B: 32 query heads, 8 kv heads, D 64):
 * q the heads of a [n, 2048] f16 projection ([1, 32, n, 64], strided), k and v
 * the first n positions of [1, 8, 2n, 64] f16 caches, causal */
static bool setup_attention_prefill(bench_state *s)
{
    int64_t sq[4] = {1, s->n, 32, 64}, sc[4] = {2, 8, 2 * s->n, 64};
    wgt_tensor *q32 = randn(s, 4, sq, 8), *c32 = randn(s, 4, sc, 7);
    wgt_tensor *q16 = q32 ? wgt_cast(q32, WGT_F16) : NULL, *cache = c32 ? wgt_cast(c32, WGT_F16) : NULL;
    wgt_tensor_release(q32), wgt_tensor_release(c32);
    s->a = q16 ? wgt_permute(q16, (int[]){0, 2, 1, 3}) : NULL;
    wgt_tensor *k = cache ? wgt_slice(cache, 0, 0, 1, 1) : NULL, *v = cache ? wgt_slice(cache, 0, 1, 2, 1) : NULL;
    s->b = k ? wgt_slice(k, 2, 0, s->n, 1) : NULL;
    s->c = v ? wgt_slice(v, 2, 0, s->n, 1) : NULL;
    wgt_tensor_release(q16), wgt_tensor_release(k), wgt_tensor_release(v), wgt_tensor_release(cache);
    return s->a && s->b && s->c;
}
static double flops_attention_prefill(const bench_state *s) { return 2.0 * 32 * (double)s->n * (double)s->n * 64; }

/* The same decode shape over an 8-bit cache (wgt_attention_q8): codes [2, 8, n, 16]
 * and scales [2, 8, n, 2] (k | v) in b and c, quantized from the f32 keys and values */
static bool setup_attention_decode_q8(bench_state *s)
{
    int64_t sc[4] = {2, 8, s->n, 64}, sq[4] = {1, 32, 1, 64};
    wgt_tensor *kv = randn(s, 4, sc, 7), *q32 = randn(s, 4, sq, 8);
    s->a = q32 ? wgt_cast(q32, WGT_F16) : NULL;
    s->b = wgt_zeros(s->ctx, WGT_I32, 4, (int64_t[]){2, 8, s->n, 16});
    s->c = wgt_zeros(s->ctx, WGT_F32, 4, (int64_t[]){2, 8, s->n, 2});
    bool ok = kv && s->a && s->b && s->c && wgt_quantize_rows_into(s->b, s->c, kv) == WGT_OK;
    wgt_tensor_release(kv);
    wgt_tensor_release(q32);
    return ok;
}
static wgt_tensor *step_attention_decode_q8(bench_state *s)
{
    if (wgt_no_grad_push(s->ctx) != WGT_OK) return NULL;
    wgt_scope_push(s->ctx);
    wgt_tensor *y = wgt_attention_q8(s->a, wgt_slice(s->b, 0, 0, 1, 1), wgt_slice(s->c, 0, 0, 1, 1),
                                     wgt_slice(s->b, 0, 1, 2, 1), wgt_slice(s->c, 0, 1, 2, 1), true);
    y = wgt_scope_keep(y);
    wgt_scope_pop(s->ctx);
    wgt_no_grad_pop(s->ctx);
    return y;
}
/* codes (1 byte a value) and scales (4 bytes a 32 values) of k and v */
static double bytes_attention_decode_q8(const bench_state *s) { return 2.0 * 8 * (64 + 8) * (double)s->n; }
static wgt_tensor *attention_fb(bench_state *s, double dropout, uint64_t seed)
{
    wgt_tensor *params[3] = {s->a, s->b, s->c};
    wgt_zero_grad(params, 3);
    wgt_tensor *y = wgt_scaled_dot_product_attention(s->a, s->b, s->c, true, dropout, seed);
    if (y && wgt_backward_ex(y, s->d, false) != WGT_OK) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}
static wgt_tensor *step_attention_fb(bench_state *s) { return attention_fb(s, 0.0, 0); }
static wgt_tensor *step_attention_gpt_fb(bench_state *s) { return attention_fb(s, 0.2, 1234); }
static wgt_tensor *step_attention_gpt_fb_nodrop(bench_state *s) { return attention_fb(s, 0.0, 0); }
/* the forward alone (no tape: what evaluation and sampling run) */
static wgt_tensor *attention_forward_only(bench_state *s, double dropout)
{
    if (wgt_no_grad_push(s->ctx) != WGT_OK) return NULL;
    wgt_tensor *y = wgt_scaled_dot_product_attention(s->a, s->b, s->c, true, dropout, 1234);
    wgt_no_grad_pop(s->ctx);
    return y;
}
static wgt_tensor *step_attention_gpt_f(bench_state *s) { return attention_forward_only(s, 0.2); }
static wgt_tensor *step_attention_gpt_f_nodrop(bench_state *s) { return attention_forward_only(s, 0.0); }
/* attention's heads as GPT training lays them out: a contiguous [m, 6, n, k]
 * tensor (s->a) copied into the [B, H, T, D] view (s->b) of a [m, n, 3 * 6 k]
 * qkv buffer (s->c): the k part, columns 6k .. 12k - 1 of the last dim, seen
 * as [m, n, 6, k] and permuted (strides n * 18k, k, 18k, 1) */
static bool setup_heads(bench_state *s)
{
    int64_t c = ATTN_GPT_HEADS * s->k, heads[4] = {s->m, ATTN_GPT_HEADS, s->n, s->k}, qkv[3] = {s->m, s->n, 3 * c};
    int64_t split[4] = {s->m, s->n, ATTN_GPT_HEADS, s->k};
    int perm[4] = {0, 2, 1, 3};
    s->a = randn(s, 4, heads, 22);
    s->c = wgt_zeros(s->ctx, WGT_F32, 3, qkv);
    wgt_tensor *part = s->c ? wgt_slice(s->c, 2, c, 2 * c, 1) : NULL;
    wgt_tensor *view = part ? wgt_view(part, 4, split) : NULL;
    s->b = view ? wgt_permute(view, perm) : NULL;
    wgt_tensor_release(part);
    wgt_tensor_release(view);
    return s->a && s->b && s->c;
}
static wgt_tensor *step_assign_heads(bench_state *s)
{
    return wgt_assign(s->b, s->a) == WGT_OK ? wgt_tensor_retain(s->b) : NULL;
}
/* linear's three GEMMs at n x k x m: forward x W^T + bias (A B^T), dx = dy W
 * (A B: gemm_f32_*), dW = dy^T x (A^T B); transposed operands read in place */
static bool setup_linear(bench_state *s)
{
    int64_t x[2] = {s->n, s->k}, w[2] = {s->m, s->k};
    s->a = randn(s, 2, x, 17);
    s->b = randn(s, 2, w, 18);
    s->c = randn(s, 1, &s->m, 19);
    return s->a && s->b && s->c;
}
static wgt_tensor *step_linear(bench_state *s) { return wgt_linear(s->a, s->b, s->c); }
static wgt_tensor *step_gemm_nt(bench_state *s)
{
    wgt_tensor *bt = wgt_transpose(s->b, 0, 1), *r = bt ? wgt_matmul(s->a, bt) : NULL;
    wgt_tensor_release(bt);
    return r;
}
static wgt_tensor *step_gemm_tn(bench_state *s)
{
    wgt_tensor *at = wgt_transpose(s->a, 0, 1), *r = at ? wgt_matmul(at, s->b) : NULL; /* [k, n] x [n, k] */
    wgt_tensor_release(at);
    return r;
}

/* ---- the backward GEMMs of a GPT training step (shakespeare preset: B T =
 * 16384 rows, C = 384, MLP 1536, qkv 1152, vocab 65), as the linear rule issues
 * them: dW [n, m] = dy^T x with dy [k, n] read transposed in place and x [k, m]
 * (few output tiles, long K: the split-K case), dx = dy W as one 2-D product
 * [n, k] x [k, m], and as the batched product autograd runs on dy [64, T, k]
 * with W broadcast. WGT_SPLITK=0 turns split-K off for a comparison. */
static bool setup_bwd_dw(bench_state *s)
{
    int64_t dy[2] = {s->k, s->n}, x[2] = {s->k, s->m};
    s->a = randn(s, 2, dy, 20);
    s->b = randn(s, 2, x, 21);
    return s->a && s->b;
}
static wgt_tensor *step_bwd_dw(bench_state *s)
{
    wgt_tensor *dyt = wgt_transpose(s->a, 0, 1), *r = dyt ? wgt_matmul(dyt, s->b) : NULL; /* [n, k] x [k, m] */
    wgt_tensor_release(dyt);
    return r;
}
static wgt_tensor *step_bwd_dx_batched(bench_state *s)
{
    int64_t shape[3] = {64, s->n / 64 > 0 ? s->n / 64 : 1, s->k};
    wgt_tensor *dy = wgt_reshape(s->a, 3, shape), *r = dy ? wgt_matmul(dy, s->b) : NULL;
    wgt_tensor_release(dy);
    return r;
}

/* ---- scatter_add as embedding's backward (index_select's rule): out [V, C]
 * += src [N, C] at rows index [N], the index broadcast along C (stride 0).
 * n = N, m = C, k = V; the rows are skewed like text (u^2 V for uniform u:
 * row 0 takes about 1 / sqrt(V) of the entries, a character vocabulary's space). */
static bool setup_scatter_embed(bench_state *s)
{
    int64_t src_shape[2] = {s->n, s->m}, dst_shape[2] = {s->k, s->m}, column[2] = {s->n, 1};
    wgt_tensor *u = wgt_rand(s->ctx, WGT_F32, 1, &s->n, 20);
    wgt_tensor *u2 = u ? wgt_mul(u, u) : NULL;
    wgt_tensor *scaled = u2 ? wgt_binary_scalar(WGT_OP_MUL, u2, (double)s->k) : NULL;
    wgt_tensor *index = scaled ? wgt_cast(scaled, WGT_I32) : NULL;
    wgt_tensor *col = index ? wgt_view(index, 2, column) : NULL;
    s->a = col ? wgt_expand(col, 2, src_shape) : NULL;
    s->b = randn(s, 2, src_shape, 21);
    s->c = wgt_zeros(s->ctx, WGT_F32, 2, dst_shape);
    wgt_tensor_release(u);
    wgt_tensor_release(u2);
    wgt_tensor_release(scaled);
    wgt_tensor_release(index);
    wgt_tensor_release(col);
    return s->a && s->b && s->c;
}
static wgt_tensor *step_scatter_embed(bench_state *s) { return wgt_scatter_add(s->c, 0, s->a, s->b); }

/* ---- work counts */
static double bytes_3n(const bench_state *s) { return 3.0 * 4 * (double)s->n; }
static double bytes_2n(const bench_state *s) { return 2.0 * 4 * (double)s->n; }
static double bytes_4n(const bench_state *s) { return 4.0 * 4 * (double)s->n; }
static double bytes_1n(const bench_state *s) { return 4.0 * (double)s->n; }
static double bytes_nm(const bench_state *s) { return 4.0 * (double)s->n * (double)s->m; }
static double bytes_2nm(const bench_state *s) { return 8.0 * (double)s->n * (double)s->m; }
/* the heads copy: read and write [m, 6, n, k] */
static double bytes_heads(const bench_state *s)
{
    return 2.0 * 4 * (double)s->m * ATTN_GPT_HEADS * (double)s->n * (double)s->k;
}
static double bytes_gemv(const bench_state *s) { return 4.0 * ((double)s->n * s->k + s->k + s->n); }
/* norm forward + backward at least: read x, write y; read x, dy, write dx */
static double bytes_5nm(const bench_state *s) { return 5.0 * 4 * (double)s->n * (double)s->m; }
/* cross-entropy forward + backward at least: read logits; read logits, write dlogits */
static double bytes_3nm(const bench_state *s) { return 3.0 * 4 * (double)s->n * (double)s->m; }
/* scatter_add: read src and the index, copy dst into out, read and write out */
static double bytes_scatter(const bench_state *s)
{
    return 4.0 * ((double)s->n * (double)s->m + (double)s->n + 4.0 * (double)s->k * (double)s->m);
}
/* decode matvec: weight bytes (f16: 2 a weight; q8 / q4: 1 / 0.5 plus an f32 scale per 32) */
static double bytes_gemv_f16(const bench_state *s) { return 2.0 * (double)s->n * s->k; }
static double bytes_gemv_q8(const bench_state *s) { return (1.0 + 4.0 / 32) * (double)s->n * s->k; }
static double bytes_gemv_q4(const bench_state *s) { return (0.5 + 4.0 / 32) * (double)s->n * s->k; }
static double flops_gemm(const bench_state *s) { return 2.0 * (double)s->n * (double)s->m * (double)s->k; }
static double flops_gemv(const bench_state *s) { return 2.0 * (double)s->n * (double)s->k; }
/* causal attention, flash-attention's count: forward 4 B H T^2 D / 2, backward 2.5x that */
static double flops_attention_fb(const bench_state *s)
{
    return 3.5 * 2.0 * (double)s->m * ATTN_HEADS * (double)s->n * (double)s->n * (double)s->k;
}
static double flops_attention_gpt_fb(const bench_state *s)
{
    return 3.5 * 2.0 * (double)s->m * ATTN_GPT_HEADS * (double)s->n * (double)s->n * (double)s->k;
}
static double flops_attention_gpt_f(const bench_state *s)
{
    return 2.0 * (double)s->m * ATTN_GPT_HEADS * (double)s->n * (double)s->n * (double)s->k;
}

/* ---- whole models (bench_models.c) */
static bool setup_adamw(bench_state *s) { return bench_adamw_setup(s->ctx, 8 / s->n); }
static wgt_tensor *step_adamw(bench_state *s) { return bench_adamw_step(s->ctx); }
/* AdamW reads param, grad, m, v and writes param, m, v: 7 x 4 bytes each */
static double bytes_adamw(const bench_state *s) { (void)s; return 28.0 * (double)bench_adamw_param_count(); }
static bool setup_gpt2(bench_state *s) { return bench_gpt2_setup(s->ctx, 8, 128 * s->n, 8 / s->n); }
static wgt_tensor *step_gpt2(bench_state *s) { return bench_gpt2_forward(s->ctx); }

/* ---- convolutional networks (bench_cnn.c): n = 16 / (the divisor of the sizes) */
#define CONV_CASE(i)                                                                                  \
    static bool setup_conv_##i(bench_state *s) { return bench_conv_setup(s->ctx, i, 16 / s->n); }
CONV_CASE(0) CONV_CASE(1) CONV_CASE(2) CONV_CASE(3) CONV_CASE(4) CONV_CASE(5) CONV_CASE(6)
static wgt_tensor *step_conv(bench_state *s) { return bench_conv_step(s->ctx); }
static double flops_conv(const bench_state *s) { (void)s; return bench_conv_flops(); }
/* full size: batch 64 at 224 x 224; --quick: batch 4 at 32 x 32, a quarter of the channels */
static bool setup_resnet18(bench_state *s)
{
    int64_t div = 16 / s->n;
    return bench_resnet18_setup(s->ctx, div == 1 ? 64 : 4, div == 1 ? 224 : 32, div == 1 ? 1 : 4);
}
static wgt_tensor *step_resnet18(bench_state *s) { return bench_resnet18_step(s->ctx); }

static const bench_case cases[] = {
    {"add_f32", "2^28", 1 << 28, 0, 0, 256, 16, bytes_3n, NULL, setup_vec2, step_add, 20},
    {"copy_f32", "2^28", 1 << 28, 0, 0, 256, 16, bytes_2n, NULL, setup_vec2, step_copy, 20},
    {"exp_f32", "2^28", 1 << 28, 0, 0, 256, 16, bytes_2n, NULL, setup_vec2, step_exp, 20},
    {"fused3_f32", "2^28 sqrt(abs(a*b+c))", 1 << 28, 0, 0, 256, 16, bytes_4n, NULL, setup_vec2, step_fused, 20},
    {"sum_f32", "2^28 -> scalar", 1 << 28, 0, 0, 256, 16, bytes_1n, NULL, setup_vec2, step_sum_all, 20},
    {"rowsum_f32", "8192x8192 axis 1", 8192, 8192, 0, 16, 2, bytes_nm, NULL, setup_matrix, step_row_sum, 20},
    {"softmax_f32", "4096x32768", 4096, 32768, 0, 16, 4, bytes_2nm, NULL, setup_matrix, step_softmax, 20},
    {"transpose_f32", "8192x8192", 8192, 8192, 0, 16, 2, bytes_2nm, NULL, setup_matrix, step_transpose, 20},
    {"assign_heads_f32", "64x6x256x64 into qkv view", 256, 64, 64, 8, 4, bytes_heads, NULL, setup_heads, step_assign_heads, 20},
    {"gemm_f32_1024", "1024^3", 1024, 1024, 1024, 8, 1, NULL, flops_gemm, setup_gemm, step_matmul, 20},
    {"gemm_f32_2048", "2048^3", 2048, 2048, 2048, 16, 1, NULL, flops_gemm, setup_gemm, step_matmul, 10},
    {"gemm_f32_4096", "4096^3", 4096, 4096, 4096, 32, 0, NULL, flops_gemm, setup_gemm, step_matmul, 5},
    {"gemm_f32_8192", "8192^3", 8192, 8192, 8192, 64, 0, NULL, flops_gemm, setup_gemm, step_matmul, 3},
    {"gemm_f16_4096", "4096^3 f16 in, f32 acc", 4096, 4096, 4096, 32, 0, NULL, flops_gemm, setup_gemm_f16, step_matmul, 5},
    {"gemv_f32", "11008x4096 x 4096", 11008, 0, 4096, 16, 1, bytes_gemv, flops_gemv, setup_gemv, step_matmul, 50},
    /* Llama-3.2-1B decode: the gate/up rows (16384 x 2048) and the vocabulary head (128256 x 2048) */
    {"gemv_f16_16384x2048", "x W^T, W f16", 16384, 0, 2048, 16, 0, bytes_gemv_f16, flops_gemv, setup_gemv_f16, step_gemv_half, 50},
    {"gemv_q8_16384x2048", "x W^T, W 8-bit", 16384, 0, 2048, 16, 0, bytes_gemv_q8, flops_gemv, setup_gemv_q8, step_qgemv, 50},
    {"gemv_q4_16384x2048", "x W^T, W 4-bit", 16384, 0, 2048, 16, 0, bytes_gemv_q4, flops_gemv, setup_gemv_q4, step_qgemv, 50},
    /* ... its q/k/v rows (3072 x 2048) and the down projection (2048 x 8192) */
    {"gemv_f16_3072x2048", "x W^T, W f16", 3072, 0, 2048, 16, 0, bytes_gemv_f16, flops_gemv, setup_gemv_f16, step_gemv_half, 50},
    {"gemv_q4_3072x2048", "x W^T, W 4-bit", 3072, 0, 2048, 16, 0, bytes_gemv_q4, flops_gemv, setup_gemv_q4, step_qgemv, 50},
    {"gemv_f16_2048x8192", "x W^T, W f16", 2048, 0, 8192, 16, 0, bytes_gemv_f16, flops_gemv, setup_gemv_f16, step_gemv_half, 50},
    {"gemv_q4_2048x8192", "x W^T, W 4-bit", 2048, 0, 8192, 16, 0, bytes_gemv_q4, flops_gemv, setup_gemv_q4, step_qgemv, 50},
    {"gemv_f16_128256x2048", "x W^T, W f16", 128256, 0, 2048, 16, 0, bytes_gemv_f16, flops_gemv, setup_gemv_f16, step_gemv_half, 20},
    {"gemv_q4_128256x2048", "x W^T, W 4-bit", 128256, 0, 2048, 16, 0, bytes_gemv_q4, flops_gemv, setup_gemv_q4, step_qgemv, 20},
    /* prefill: a 512-token prompt through the gate/up projection of Llama-3.2-1B (x [512, 2048] f32) */
    {"qmatmul_f16_512x16384x2048", "512 rows x W^T, W f16", 16384, 512, 2048, 16, 0, bytes_gemv_f16, flops_gemm, setup_gemv_f16, step_gemv_half, 20},
    {"qmatmul_q8_512x16384x2048", "512 rows x W^T, W 8-bit", 16384, 512, 2048, 16, 0, bytes_gemv_q8, flops_gemm, setup_gemv_q8, step_qgemv, 20},
    {"qmatmul_q4_512x16384x2048", "512 rows x W^T, W 4-bit", 16384, 512, 2048, 16, 0, bytes_gemv_q4, flops_gemm, setup_gemv_q4, step_qgemv, 20},
    /* the rest of a Llama-3.2-1B layer's prefill products (512 tokens, f32 x f16 W^T) */
    {"qmatmul_f16_512x3072x2048", "512 rows x W^T, W f16", 3072, 512, 2048, 16, 0, bytes_gemv_f16, flops_gemm, setup_gemv_f16, step_gemv_half, 20},
    {"qmatmul_f16_512x2048x2048", "512 rows x W^T, W f16", 2048, 512, 2048, 16, 0, bytes_gemv_f16, flops_gemm, setup_gemv_f16, step_gemv_half, 20},
    {"qmatmul_f16_512x2048x8192", "512 rows x W^T, W f16", 2048, 512, 8192, 16, 0, bytes_gemv_f16, flops_gemm, setup_gemv_f16, step_gemv_half, 20},
    {"qmatmul_q8_512x3072x2048", "512 rows x W^T, W 8-bit", 3072, 512, 2048, 16, 0, bytes_gemv_q8, flops_gemm, setup_gemv_q8, step_qgemv, 20},
    {"qmatmul_q4_512x3072x2048", "512 rows x W^T, W 4-bit", 3072, 512, 2048, 16, 0, bytes_gemv_q4, flops_gemm, setup_gemv_q4, step_qgemv, 20},
    {"qmatmul_q8_512x2048x8192", "512 rows x W^T, W 8-bit", 2048, 512, 8192, 16, 0, bytes_gemv_q8, flops_gemm, setup_gemv_q8, step_qgemv, 20},
    {"qmatmul_q4_512x2048x8192", "512 rows x W^T, W 4-bit", 2048, 512, 8192, 16, 0, bytes_gemv_q4, flops_gemm, setup_gemv_q4, step_qgemv, 20},
    {"layernorm_fb_768", "8192x768 fwd+bwd", 8192, 768, 0, 16, 4, bytes_5nm, NULL, setup_norm, step_layer_norm_fb, 20},
    {"layernorm_fb_4096", "8192x4096 fwd+bwd", 8192, 4096, 0, 16, 4, bytes_5nm, NULL, setup_norm, step_layer_norm_fb, 20},
    {"rmsnorm_fb_768", "8192x768 fwd+bwd", 8192, 768, 0, 16, 4, bytes_5nm, NULL, setup_norm, step_rms_norm_fb, 20},
    {"rmsnorm_fb_4096", "8192x4096 fwd+bwd", 8192, 4096, 0, 16, 4, bytes_5nm, NULL, setup_norm, step_rms_norm_fb, 20},
    {"xent_fb_50304", "8192x50304 fwd+bwd", 8192, 50304, 0, 64, 0, bytes_3nm, NULL, setup_cross_entropy, step_cross_entropy_fb, 10},
    {"attn_fb_1024", "8x12x1024x64 causal fwd+bwd", 1024, 8, 64, 16, 0, NULL, flops_attention_fb, setup_attention, step_attention_fb, 10},
    {"attn_fb_gpt_256", "64x6x256x64 causal drop 0.2 fwd+bwd", 256, 64, 64, 8, 0, NULL, flops_attention_gpt_fb, setup_attention_gpt, step_attention_gpt_fb, 20},
    {"attn_fb_gpt_256_nodrop", "64x6x256x64 causal fwd+bwd", 256, 64, 64, 8, 0, NULL, flops_attention_gpt_fb, setup_attention_gpt, step_attention_gpt_fb_nodrop, 20},
    {"attn_decode_f16_560", "q 32x64 f16, k/v 8x560x64 f16 cache", 560, 0, 0, 1, 0, bytes_attention_decode, NULL, setup_attention_decode, step_attention_causal, 50},
    {"attn_decode_f16_256", "q 32x64 f16, k/v 8x256x64 f16 cache", 256, 0, 0, 1, 0, bytes_attention_decode, NULL, setup_attention_decode, step_attention_causal, 50},
    {"attn_decode_f16_1024", "q 32x64 f16, k/v 8x1024x64 f16 cache", 1024, 0, 0, 2, 0, bytes_attention_decode, NULL, setup_attention_decode, step_attention_causal, 50},
    {"attn_decode_f16_8192", "q 32x64 f16, k/v 8x8192x64 f16 cache", 8192, 0, 0, 16, 0, bytes_attention_decode, NULL, setup_attention_decode, step_attention_causal, 50},
    {"attn_decode_q8_560", "q 32x64 f16, k/v 8x560x64 8-bit cache", 560, 0, 0, 1, 0, bytes_attention_decode_q8, NULL, setup_attention_decode_q8, step_attention_decode_q8, 50},
    {"attn_decode_q8_8192", "q 32x64 f16, k/v 8x8192x64 8-bit cache", 8192, 0, 0, 16, 0, bytes_attention_decode_q8, NULL, setup_attention_decode_q8, step_attention_decode_q8, 50},
    {"attn_prefill_f16_512", "q 1x32x512x64 f16, k/v 1x8x512x64 f16 causal fwd", 512, 0, 0, 4, 0, NULL, flops_attention_prefill, setup_attention_prefill, step_attention_causal, 20},
    {"attn_f_gpt_256", "64x6x256x64 causal drop 0.2 fwd", 256, 64, 64, 8, 0, NULL, flops_attention_gpt_f, setup_attention_gpt, step_attention_gpt_f, 20},
    {"attn_f_gpt_256_nodrop", "64x6x256x64 causal fwd", 256, 64, 64, 8, 0, NULL, flops_attention_gpt_f, setup_attention_gpt, step_attention_gpt_f_nodrop, 20},
    {"linear_f32_4096", "4096^3 x W^T + bias", 4096, 4096, 4096, 32, 0, NULL, flops_gemm, setup_linear, step_linear, 5},
    {"gemm_nt_f32_4096", "4096^3 A B^T", 4096, 4096, 4096, 32, 0, NULL, flops_gemm, setup_linear, step_gemm_nt, 5},
    {"gemm_tn_f32_4096", "4096^3 A^T B", 4096, 4096, 4096, 32, 0, NULL, flops_gemm, setup_linear, step_gemm_tn, 5},
    /* GPT backward GEMMs (shakespeare preset, B T = 16384): dW = dy^T x, dx = dy W */
    {"gemm_bwd_dw_384x384", "dy^T x 384x384 K=16384", 384, 384, 16384, 16, 0, NULL, flops_gemm, setup_bwd_dw, step_bwd_dw, 20},
    {"gemm_bwd_dw_1152x384", "dy^T x 1152x384 K=16384", 1152, 384, 16384, 16, 0, NULL, flops_gemm, setup_bwd_dw, step_bwd_dw, 20},
    {"gemm_bwd_dw_1536x384", "dy^T x 1536x384 K=16384", 1536, 384, 16384, 16, 0, NULL, flops_gemm, setup_bwd_dw, step_bwd_dw, 20},
    {"gemm_bwd_dw_384x1536", "dy^T x 384x1536 K=16384", 384, 1536, 16384, 16, 0, NULL, flops_gemm, setup_bwd_dw, step_bwd_dw, 20},
    {"gemm_bwd_dw_65x384", "dy^T x 65x384 K=16384", 65, 384, 16384, 16, 0, NULL, flops_gemm, setup_bwd_dw, step_bwd_dw, 20},
    {"gemm_bwd_dx_1536to384", "16384x1536 x 1536x384", 16384, 384, 1536, 16, 0, NULL, flops_gemm, setup_gemm, step_matmul, 20},
    {"gemm_bwd_dx_384to1536", "16384x384 x 384x1536", 16384, 1536, 384, 16, 0, NULL, flops_gemm, setup_gemm, step_matmul, 20},
    {"gemm_bwd_dx_1152to384", "16384x1152 x 1152x384", 16384, 384, 1152, 16, 0, NULL, flops_gemm, setup_gemm, step_matmul, 20},
    {"gemm_bwd_dx_384to384", "16384x384 x 384x384", 16384, 384, 384, 16, 0, NULL, flops_gemm, setup_gemm, step_matmul, 20},
    /* the GPT forward linears x W^T + bias at B T = 16384: qkv, attention proj, MLP fc, fc proj, head */
    {"linear_gpt_qkv", "16384x384 -> 1152", 16384, 1152, 384, 16, 0, NULL, flops_gemm, setup_linear, step_linear, 20},
    {"linear_gpt_proj", "16384x384 -> 384", 16384, 384, 384, 16, 0, NULL, flops_gemm, setup_linear, step_linear, 20},
    {"linear_gpt_fc", "16384x384 -> 1536", 16384, 1536, 384, 16, 0, NULL, flops_gemm, setup_linear, step_linear, 20},
    {"linear_gpt_fcproj", "16384x1536 -> 384", 16384, 384, 1536, 16, 0, NULL, flops_gemm, setup_linear, step_linear, 20},
    {"linear_gpt_head", "16384x384 -> 65", 16384, 65, 384, 16, 0, NULL, flops_gemm, setup_linear, step_linear, 20},
    {"gemm_bwd_dx_b64_1536to384", "[64,256,1536] x 1536x384", 16384, 384, 1536, 16, 0, NULL, flops_gemm, setup_gemm, step_bwd_dx_batched, 20},
    /* n = 8 / (the divisor of the model's sizes): 8 is GPT-2 small (124M parameters; B=8, T=1024) */
    {"adamw_124m", "GPT-2 small params, fused", 8, 0, 0, 8, 0, bytes_adamw, NULL, setup_adamw, step_adamw, 10},
    {"gpt2_fwd", "GPT-2 small B=8 T=1024 fwd", 8, 0, 0, 8, 0, NULL, NULL, setup_gpt2, step_gpt2, 3},
    {"small_ops_10000", "10000 x add 1024", 1024, 0, 0, 1, 1, NULL, NULL, setup_small, step_small_ops, 1},
    /* ResNet-50 convolutions (Cin, Cout, k, stride, H) at batch 32: forward + dx + dw */
    {"conv_fb_3_64_k7_s2_224", "N32 3->64 7x7 s2 224^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_0, step_conv, 5},
    {"conv_fb_64_64_k3_s1_56", "N32 64->64 3x3 56^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_1, step_conv, 5},
    {"conv_fb_128_128_k3_s1_28", "N32 128->128 3x3 28^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_2, step_conv, 5},
    {"conv_fb_256_256_k3_s1_14", "N32 256->256 3x3 14^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_3, step_conv, 5},
    {"conv_fb_512_512_k3_s1_7", "N32 512->512 3x3 7^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_4, step_conv, 5},
    {"conv_fb_256_64_k1_s1_56", "N32 256->64 1x1 56^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_5, step_conv, 5},
    {"conv_fb_1024_256_k1_s1_14", "N32 1024->256 1x1 14^2", 16, 0, 0, 16, 0, NULL, flops_conv, setup_conv_6, step_conv, 5},
    /* embedding backward (WGT_SCATTER_SORTED=0: the atomic kernel): a character vocabulary and GPT-2's */
    {"scatter_add_embed65", "16384x384 into 65 rows", 16384, 384, 65, 16, 0, bytes_scatter, NULL, setup_scatter_embed, step_scatter_embed, 20},
    {"scatter_add_embed50k", "8192x768 into 50257 rows", 8192, 768, 50257, 16, 0, bytes_scatter, NULL, setup_scatter_embed, step_scatter_embed, 20},
    /* a whole training step; images/s = 64 / (ms / 1000) */
    {"resnet18_train_f32", "B64 224^2 SGD momentum", 16, 0, 0, 16, 0, NULL, NULL, setup_resnet18, step_resnet18, 3},
};

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int wgt_command_bench(int argc, char **argv)
{
    bool quick = false, cpu = false, medium = false;
    const char *json_path = NULL, *only = NULL;
    int reps_override = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--cpu")) cpu = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps_override = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "medium")) medium = true, i++;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "highest")) i++;
        else {
            fprintf(stderr, "usage: wgt bench [--quick] [--cpu] [--json FILE] [--only NAME] [--reps N] "
                            "[--precision highest|medium]\n");
            return 2;
        }
    }
    wgt_context_options options;
    wgt_context_options_init(&options);
    options.backend = cpu ? WGT_BACKEND_CPU : WGT_BACKEND_AUTO;
    options.wait_timeout_ms = 600000; /* an 8192^3 GEMM batch on a slow adapter */
    wgt_context *ctx = wgt_context_create(&options);
    if (wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "wgt bench: %s\n", wgt_context_error_message(ctx));
        wgt_context_destroy(ctx);
        return 1;
    }
    if (medium) wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_MEDIUM); /* wgtensor.h: int8 x, f16 sums */
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    FILE *json = json_path ? fopen(json_path, "w") : NULL;
    if (json_path && !json) {
        fprintf(stderr, "wgt bench: cannot write %s\n", json_path);
        wgt_context_destroy(ctx);
        return 1;
    }
    printf("adapter: %s (%s, driver %s)%s\n", info.name, info.backend, info.driver, quick ? " [quick sizes]" : "");
    printf("%-18s %-26s %12s %10s %10s\n", "case", "shape", "median ms", "GB/s", "GFLOP/s");
    if (json)
        fprintf(json, "{\"tool\": \"wgtensor\", \"adapter\": \"%s\", \"backend\": \"%s\", \"driver\": \"%s\", \"quick\": %s, \"cases\": [\n",
                info.name, info.backend, info.driver, quick ? "true" : "false");
    int failures = 0, written = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const bench_case *bc = &cases[i];
        if (only && !strstr(bc->name, only)) continue;
        if (cpu && bc->cpu_div == 0) continue;
        bench_state s = {ctx, NULL, NULL, NULL, NULL, bc->n, bc->m, bc->k};
        int64_t div = quick ? bc->quick_div : cpu ? bc->cpu_div : 1;
        if (div > 1) {
            s.n = bc->n / div > 0 ? bc->n / div : 1;
            if (s.m) s.m = bc->m / div > 0 ? bc->m / div : 1;
            if (s.k && bc->flops != flops_gemv) s.k = bc->k / div > 0 ? bc->k / div : 1;
        }
        char shape[64];
        if (div > 1) snprintf(shape, sizeof(shape), "n=%lld m=%lld k=%lld", (long long)s.n, (long long)s.m, (long long)s.k);
        else snprintf(shape, sizeof(shape), "%s", bc->shape);
        int reps = reps_override > 0 ? reps_override : (quick ? 2 : bc->reps);
        double batches[5];
        int n_batches = quick ? 1 : 5;
        bool ok = bc->setup(&s);
        for (int w = 0; ok && w < (quick ? 1 : 3); w++) { /* warm-up: compile, allocate, settle clocks */
            wgt_tensor *r = bc->step(&s);
            ok = r != NULL;
            wgt_tensor_release(r);
        }
        ok = ok && wgt_synchronize(ctx) == WGT_OK;
        for (int bi = 0; ok && bi < n_batches; bi++) {
            double t0 = now_ms();
            for (int r = 0; ok && r < reps; r++) {
                wgt_tensor *out = bc->step(&s);
                ok = out != NULL;
                wgt_tensor_release(out);
            }
            ok = ok && wgt_synchronize(ctx) == WGT_OK;
            batches[bi] = (now_ms() - t0) / reps;
        }
        if (!ok) {
            printf("%-18s %-26s error: %s\n", bc->name, shape, wgt_context_error_message(ctx));
            wgt_context_clear_error(ctx);
            failures++;
        } else {
            qsort(batches, (size_t)n_batches, sizeof(double), compare_double);
            double ms = batches[n_batches / 2];
            double gbps = bc->bytes ? bc->bytes(&s) / (ms * 1e6) : 0;
            double gflops = bc->flops ? bc->flops(&s) / (ms * 1e6) : 0;
            if (!strcmp(bc->name, "small_ops_10000")) printf("%-18s %-26s %12.4f %10s %10s  (%.2f us per op)\n",
                                                              bc->name, shape, ms, "-", "-", ms * 1000.0 / 10000);
            else printf("%-18s %-26s %12.4f %10.1f %10.1f\n", bc->name, shape, ms, gbps, gflops);
            if (json)
                fprintf(json, "%s  {\"case\": \"%s\", \"shape\": \"%s\", \"n\": %lld, \"m\": %lld, \"k\": %lld, \"ms\": %.6f, \"gbps\": %.3f, \"gflops\": %.3f}",
                        written++ ? ",\n" : "", bc->name, shape, (long long)s.n, (long long)s.m, (long long)s.k, ms, gbps,
                        gflops);
        }
        wgt_tensor_release(s.a);
        wgt_tensor_release(s.b);
        wgt_tensor_release(s.c);
        wgt_tensor_release(s.d);
        bench_models_release();
        bench_cnn_release();
        wgt_memory_trim(ctx);
        fflush(stdout);
    }
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    wgt_context_destroy(ctx);
    return failures ? 1 : 0;
}
