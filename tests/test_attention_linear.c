/*
 * wgt_attention_linear_ex / wgt_attention_qlinear_ex (a decode step's
 * attention and its output projection as one op) and their 8-bit KV cache
 * forms wgt_attention_q8_linear_ex / wgt_attention_q8_qlinear_ex against the
 * calls they stand for, made here one by one: wgt_scaled_dot_product_attention
 * (or wgt_attention_q8 over codes wgt_quantize_rows_into wrote), the heads
 * merged (permute + reshape), then wgt_linear_ex or wgt_qlinear_ex with the
 * bias. Those calls are checked on their own elsewhere (test_attention,
 * test_quant, the parity table, test_golden's PyTorch fixtures, numpy_diff),
 * so they are an independent reference here.
 *
 * On WebGPU one query row takes the fused call (the decode attention's first
 * pass, then the GEMV merging its partials as it stages its vector): checked
 * to be two dispatches where the calls take three, and to give the calls'
 * values within f32 rounding (the merge is the combine kernel's arithmetic,
 * rounded to the attention's dtype as the combine stores it; with f16 q a
 * rounding to f16 may flip, so 1e-3 there, 1e-6 with f32 q).
 * Cases: f16 and f32 q, float and 8-bit keys and values, f16 / 8-bit / 4-bit
 * weights, a bias and none, 1 to
 * 5 chunks of 64 keys (a partial last chunk) and 800 keys (past the fold's
 * bound with f16 weights, within it quantized), grouped-query heads; shapes
 * the fused call does not take (two query rows, two batches) are the
 * composition; bad arguments return an error and leave the context usable.
 * On the CPU backend every call is the composition.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef enum { W_F16, W_Q8, W_Q4 } weights;
static const char *const weight_names[3] = {"f16", "q8", "q4"};

static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, uint32_t seed, float scale)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *host = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) host[i] = ((float)(test_xorshift(&seed) % 4001) / 1000.0f - 2.0f) * scale;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, host);
    free(host);
    return t && dtype != WGT_F32 ? wgt_cast(t, dtype) : t;
}

static float *read_all(wgt_tensor *t, int64_t *n)
{
    *n = t ? wgt_tensor_numel(t) : 0;
    float *host = malloc(sizeof(float) * (size_t)(*n ? *n : 1));
    if (t && host && wgt_tensor_read(t, host, sizeof(float) * (size_t)*n) != WGT_OK) {
        free(host);
        return NULL;
    }
    return host;
}

typedef struct shape_case {
    int64_t B, H, Hkv, Tq, Tk, D, N;
    wgt_dtype qdtype;
    weights w;
    bool bias;
    bool kv8; /* k, v as 8-bit codes and scales (wgt_quantize_rows_into) */
} shape_case;

/* x [B, Hkv, Tk, D] as 8-bit rows: codes [.., D/4] i32, scales [.., D/32] f32 */
static void quantize_kv(wgt_context *ctx, wgt_tensor *x, wgt_tensor **codes, wgt_tensor **scales)
{
    int64_t shape[4];
    for (int d = 0; d < 4; d++) shape[d] = wgt_tensor_dim(x, d);
    shape[3] /= 4;
    *codes = wgt_zeros(ctx, WGT_I32, 4, shape);
    shape[3] /= 8;
    *scales = wgt_zeros(ctx, WGT_F32, 4, shape);
    wgt_quantize_rows_into(*codes, *scales, x);
}

/* The op (fused) or the calls it stands for; *dispatches: those it recorded. */
static float *run(wgt_context *ctx, const shape_case *c, bool fused, int64_t *n, uint64_t *dispatches)
{
    wgt_scope_push(ctx);
    wgt_tensor *q = upload(ctx, c->qdtype, 4, (int64_t[]){c->B, c->H, c->Tq, c->D}, 21, 1.0f);
    wgt_tensor *k = upload(ctx, c->qdtype, 4, (int64_t[]){c->B, c->Hkv, c->Tk, c->D}, 22, 1.0f);
    wgt_tensor *v = upload(ctx, c->qdtype, 4, (int64_t[]){c->B, c->Hkv, c->Tk, c->D}, 23, 1.0f);
    wgt_tensor *w = upload(ctx, WGT_F32, 2, (int64_t[]){c->N, c->H * c->D}, 24, 0.05f);
    wgt_tensor *b = c->bias ? upload(ctx, WGT_F32, 1, (int64_t[]){c->N}, 25, 1.0f) : NULL;
    wgt_tensor *qw = NULL, *qs = NULL;
    if (c->w == W_F16) w = wgt_cast(w, WGT_F16);
    else if (wgt_quantize_weight(w, c->w == W_Q8 ? 8 : 4, &qw, &qs) != WGT_OK) w = NULL;
    const int bits = c->w == W_Q8 ? 8 : 4;
    wgt_tensor *kc = NULL, *ks = NULL, *vc = NULL, *vs = NULL;
    if (c->kv8) quantize_kv(ctx, k, &kc, &ks), quantize_kv(ctx, v, &vc, &vs);
    wgt_execution_stats before = {0}, after = {0};
    wgt_execution_stats_get(ctx, &before);
    wgt_tensor *y = NULL;
    if (fused && c->kv8) {
        y = c->w == W_F16 ? wgt_attention_q8_linear_ex(q, kc, ks, vc, vs, true, w, b, WGT_F32)
                          : wgt_attention_q8_qlinear_ex(q, kc, ks, vc, vs, true, qw, qs, bits, b);
    } else if (fused) {
        y = c->w == W_F16 ? wgt_attention_linear_ex(q, k, v, true, w, b, WGT_F32)
                          : wgt_attention_qlinear_ex(q, k, v, true, qw, qs, bits, b);
    } else {
        wgt_tensor *a = c->kv8 ? wgt_attention_q8(q, kc, ks, vc, vs, true)
                               : wgt_scaled_dot_product_attention(q, k, v, true, 0.0, 0);
        a = wgt_reshape(wgt_permute(a, (int[]){0, 2, 1, 3}), 2, (int64_t[]){c->B * c->Tq, c->H * c->D});
        y = c->w == W_F16 ? wgt_linear_ex(a, w, b, WGT_F32)
                          : wgt_qlinear_ex(a, qw, qs, bits, &(wgt_qlinear_fusion){.bias = b});
    }
    wgt_execution_stats_get(ctx, &after);
    *dispatches = after.dispatches - before.dispatches;
    float *out = y ? read_all(y, n) : NULL;
    wgt_tensor_release(qw);
    wgt_tensor_release(qs);
    wgt_scope_pop(ctx);
    return out;
}

/* Relative L2 distance of a from b. */
static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* expect_fused: the op must record one dispatch fewer than the calls (WebGPU's fused call). */
static void check_case(wgt_context *ctx, const char *backend, const shape_case *c, bool expect_fused)
{
    char label[200];
    snprintf(label, sizeof(label),
             "%s: q %s [%lld, %lld, %lld, %lld], %s kv heads %lld, %lld keys, %s weight [%lld, %lld]%s",
             backend, wgt_dtype_name(c->qdtype), (long long)c->B, (long long)c->H, (long long)c->Tq, (long long)c->D,
             c->kv8 ? "8-bit" : "float", (long long)c->Hkv, (long long)c->Tk, weight_names[c->w], (long long)c->N,
             (long long)(c->H * c->D), c->bias ? ", bias" : "");
    int64_t nf = 0, nc = 0;
    uint64_t df = 0, dc = 0;
    float *f = run(ctx, c, true, &nf, &df);
    CHECK(f != NULL, "%s: the op: %s", label, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    float *r = run(ctx, c, false, &nc, &dc);
    CHECK(r != NULL, "%s: the calls: %s", label, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    if (f && r) {
        CHECK(nf == nc && nf == c->B * c->Tq * c->N, "%s: %lld values against %lld", label, (long long)nf, (long long)nc);
        const double e = rel_l2(f, r, nf);
        /* the merge is the combine kernel's f32 arithmetic, but two kernels
         * may contract its products into FMAs differently (NVIDIA's compiler
         * did: ~1 ulp of f32); with f16 q that ulp can flip the rounding of
         * an attention output to f16 (2^-11 of it), so f16 q allows that
         * much, f32 q a few f32 ulps */
        const double tol = c->qdtype == WGT_F16 ? 1e-3 : 1e-6;
        CHECK(e <= tol, "%s: %.3g (relative L2) from the calls", label, e);
        if (expect_fused)
            CHECK(df + 1 == dc, "%s: %llu dispatches against the calls' %llu (the combine should be in the GEMV)", label,
                  (unsigned long long)df, (unsigned long long)dc);
        else
            CHECK(df == dc, "%s: %llu dispatches against the calls' %llu (the composition)", label,
                  (unsigned long long)df, (unsigned long long)dc);
    }
    free(f);
    free(r);
}

static void cases(wgt_context *ctx, const char *backend, bool gpu)
{
    /* one query row: WebGPU's fused call */
    const int64_t keys[5] = {1, 64, 65, 200, 300};
    for (int w = W_F16; w <= W_Q4; w++)
        for (int i = 0; i < 5; i++) {
            shape_case c = {1, 8, 2, 1, keys[i], 64, 96, WGT_F16, (weights)w, i % 2 == 0, false};
            check_case(ctx, backend, &c, gpu);
        }
    /* an 8-bit cache: f16 and f32 q (the attention's output in q's dtype) */
    for (int w = W_F16; w <= W_Q4; w++)
        for (int i = 0; i < 5; i += 2) {
            shape_case c = {1, 8, 2, 1, keys[i], 64, 96, w == W_Q8 ? WGT_F32 : WGT_F16, (weights)w, i == 2, true};
            check_case(ctx, backend, &c, gpu);
        }
    shape_case f32q = {1, 4, 4, 1, 130, 32, 64, WGT_F32, W_F16, true, false};  /* f32 q, k, v; no grouping */
    check_case(ctx, backend, &f32q, gpu);
    /* f32 attention (128 keys and more) into 4-bit rows */
    shape_case f32q4 = {1, 4, 1, 1, 150, 32, 48, WGT_F32, W_Q4, false, false};
    check_case(ctx, backend, &f32q4, gpu);
    /* 800 keys: past the fold's bound with f16 weights (768: the composition),
     * within it with quantized ones (2048) */
    shape_case long_f16 = {1, 8, 2, 1, 800, 64, 96, WGT_F16, W_F16, true, false};
    check_case(ctx, backend, &long_f16, false);
    shape_case long_q4 = {1, 8, 2, 1, 800, 64, 96, WGT_F16, W_Q4, true, false};
    check_case(ctx, backend, &long_q4, gpu);
    /* shapes outside the fused call: the composition everywhere */
    shape_case rows2 = {1, 8, 2, 2, 100, 64, 96, WGT_F16, W_F16, true, false};
    check_case(ctx, backend, &rows2, false);
    shape_case batches2 = {2, 4, 2, 1, 100, 64, 40, WGT_F16, W_Q8, true, false};
    check_case(ctx, backend, &batches2, false);
    shape_case rows2_kv8 = {1, 8, 2, 2, 100, 64, 96, WGT_F16, W_Q4, false, true};
    check_case(ctx, backend, &rows2_kv8, false);
}

static void bad_arguments(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    wgt_tensor *q = upload(ctx, WGT_F16, 4, (int64_t[]){1, 8, 1, 64}, 1, 1.0f);
    wgt_tensor *k = upload(ctx, WGT_F16, 4, (int64_t[]){1, 2, 70, 64}, 2, 1.0f);
    wgt_tensor *v = upload(ctx, WGT_F16, 4, (int64_t[]){1, 2, 70, 64}, 3, 1.0f);
    wgt_tensor *w_bad = upload(ctx, WGT_F16, 2, (int64_t[]){96, 500}, 4, 0.05f); /* 500 columns, not 8 x 64 */
    wgt_tensor *w_ok = upload(ctx, WGT_F16, 2, (int64_t[]){96, 512}, 5, 0.05f);
    wgt_tensor *b_bad = upload(ctx, WGT_F32, 1, (int64_t[]){95}, 6, 1.0f);
    wgt_tensor *k_bad = upload(ctx, WGT_F16, 4, (int64_t[]){1, 3, 70, 64}, 7, 1.0f); /* 8 heads over 3 */
    wgt_tensor *out = wgt_attention_linear_ex(q, k, v, true, w_bad, NULL, WGT_F32);
    /* the op's name first (the call the user made), then its inner call's message with the shapes */
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH &&
              strncmp(wgt_context_error_message(ctx), "wgt_attention_linear_ex: wgt_linear_ex: ", 40) == 0 &&
              strstr(wgt_context_error_message(ctx), "500"),
          "%s: a weight of 500 columns for 8 x 64: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_attention_linear_ex(q, k, v, true, w_ok, b_bad, WGT_F32);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH, "%s: a bias of 95 for 96 outputs: %s", backend,
          wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_attention_linear_ex(q, k_bad, k_bad, true, w_ok, NULL, WGT_F32);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH &&
              strstr(wgt_context_error_message(ctx), "heads") && strncmp(wgt_context_error_message(ctx), "wgt_attention_linear_ex: ", 25) == 0,
          "%s: 8 query heads over 3 kv heads: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_attention_qlinear_ex(q, k, v, true, w_ok, w_ok, 4, NULL); /* f16 where codes and scales go */
    CHECK(!out && wgt_context_status(ctx) != WGT_OK &&
              strncmp(wgt_context_error_message(ctx), "wgt_attention_qlinear_ex: ", 26) == 0,
          "%s: an f16 tensor as 4-bit codes: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_tensor *qg = upload(ctx, WGT_F32, 4, (int64_t[]){1, 8, 1, 64}, 8, 1.0f);
    wgt_tensor *kg = upload(ctx, WGT_F32, 4, (int64_t[]){1, 2, 70, 64}, 9, 1.0f);
    wgt_tensor_set_requires_grad(qg, true);
    out = wgt_attention_linear_ex(qg, kg, kg, true, w_ok, NULL, WGT_F32);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_UNSUPPORTED &&
              strstr(wgt_context_error_message(ctx), "wgt_attention_linear_ex"),
          "%s: q that requires grad: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_attention_linear_ex(q, k, v, true, w_ok, NULL, WGT_F32); /* the context is usable */
    CHECK(out != NULL, "%s: a good call after the bad ones: %s", backend, wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    if (cpu) {
        cases(cpu, "cpu", false);
        bad_arguments(cpu, "cpu");
    }
    if (gpu) {
        cases(gpu, "webgpu", true);
        bad_arguments(gpu, "webgpu");
    }
    /* WGT_ATTENTION_FOLD_KEYS lifted: 2100 keys (33 chunks) still compose,
     * since the composed combine splits there (another order of sums than
     * the fold's); 700 keys fold */
    wgt_context *lifted = gpu ? test_context_env(NULL, (const char *[]){"WGT_ATTENTION_FOLD_KEYS", "1000000", NULL})
                              : NULL;
    if (lifted) {
        shape_case split_q4 = {1, 8, 2, 1, 2100, 64, 96, WGT_F16, W_Q4, false, false};
        check_case(lifted, "webgpu, WGT_ATTENTION_FOLD_KEYS=1000000", &split_q4, false);
        shape_case folded_f16 = {1, 8, 2, 1, 700, 64, 96, WGT_F16, W_F16, true, false};
        check_case(lifted, "webgpu, WGT_ATTENTION_FOLD_KEYS=1000000", &folded_f16, true);
        wgt_context_destroy(lifted);
    }
    CHECK(cpu && gpu, "contexts");
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
