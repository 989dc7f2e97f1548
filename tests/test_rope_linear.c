/* wgt_rms_norm_linear_rope_into and wgt_qlinear_rope_into: an LLM decode
 * step's q/k/v projection with its rotary embedding, written into a
 * destination (a KV cache's rows).
 *
 * Three references for every case:
 *  - bit for bit, the same backend's wgt_rms_norm_linear_ex into y, then the
 *    rotation worked out here on the host from y's stored values (float
 *    products and sum, each rounded to float, the result rounded to dst's
 *    dtype to nearest even): the operation's definition. Bit for bit on the
 *    CPU backend and a software adapter; a GPU's compiler may contract the
 *    product's multiply-adds differently in the fused kernel and in the plain
 *    product (SPIR-V allows it), so y's stored values may differ there by an
 *    ulp (an H200 did in 103-229 of a case's values,
 *    bench/results/h200-2026-11-28g/p8): within 2 ulps of the rotation's
 *    terms in dst's dtype;
 *  - within the roundings, a double-precision RMSNorm, product and rotation;
 *  - on WebGPU, the decode shapes (f16 weights) take one dispatch (the fused
 *    GEMV epilogue), and the CPU backend's result agrees within the roundings.
 * Bad arguments are refused with a status and the context stays usable.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct rcase {
    const char *name;
    int64_t heads, D, K;        /* weight [heads D, K] */
    int64_t pass_begin, pass_end;
    bool w_f16, table_f16;
    wgt_dtype out;
    int64_t dst_offset;         /* dst: elements [dst_offset, dst_offset + N) of a larger buffer */
} rcase;

static float rnd(uint32_t *s, float scale) { return ((float)(test_xorshift(s) % 2000001) - 1000000.0f) / 1e6f * scale; }

/* a * c + b * d as the elementwise kernels round it: each product and the sum to float */
static float rot(float a, float c, float b, float d)
{
    volatile float p = a * c, q = b * d;
    volatile float v = p + q;
    return v;
}

static float stored(float v, wgt_dtype dt) { return dt == WGT_F16 ? test_f16_to_f32(test_f32_to_f16(v)) : v; }

/* one ulp of dtype at magnitude m (the subnormal step below the normal range) */
static double ulp_at(double m, wgt_dtype dt)
{
    const int mantissa = dt == WGT_F16 ? 10 : 23, min_exp = dt == WGT_F16 ? -14 : -126;
    int e;
    frexp(m, &e); /* m in [2^(e-1), 2^e) */
    return ldexp(1.0, (e - 1 > min_exp ? e - 1 : min_exp) - mantissa);
}

/* Runs one case on ctx; *got receives dst's N values (as floats) for a
 * cross-backend comparison. */
static void check_case(wgt_context *ctx, const char *backend, const rcase *c, float *got)
{
    uint32_t seed = (uint32_t)(c->heads * 131 + c->D * 17 + c->K + c->pass_begin * 7 + c->w_f16 * 3 + c->out);
    const int64_t N = c->heads * c->D, K = c->K, half = c->D / 2;
    const double eps = 1e-5;
    float *x = malloc((size_t)K * 4), *g = malloc((size_t)K * 4), *w = malloc((size_t)(N * K) * 4);
    float *t = malloc((size_t)(4 * half) * 4), *y = malloc((size_t)N * 4);
    uint16_t *wh = malloc((size_t)(N * K) * 2), *th = malloc((size_t)(4 * half) * 2);
    for (int64_t i = 0; i < K; i++) x[i] = rnd(&seed, 3.0f), g[i] = 0.5f + fabsf(rnd(&seed, 1.0f));
    for (int64_t i = 0; i < N * K; i++) {
        w[i] = rnd(&seed, 2.0f / sqrtf((float)K));
        wh[i] = test_f32_to_f16(w[i]);
        if (c->w_f16) w[i] = test_f16_to_f32(wh[i]);
    }
    for (int64_t i = 0; i < half; i++) { /* a rotation's rows: cos, sin, -sin, cos */
        const float angle = (float)(i + 1) * 0.37f, cv = cosf(angle), sv = sinf(angle);
        const float rows[4] = {cv, sv, -sv, cv};
        for (int r = 0; r < 4; r++) {
            th[r * half + i] = test_f32_to_f16(rows[r]);
            t[r * half + i] = c->table_f16 ? test_f16_to_f32(th[r * half + i]) : rows[r];
        }
    }
    wgt_scope_push(ctx);
    wgt_tensor *xt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, x);
    wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){K}, g);
    wgt_tensor *wt = c->w_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, wh)
                              : wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w);
    /* the table as a view: rows 1..4 of a [6, half] tensor */
    float *t6 = calloc((size_t)(6 * half), 4);
    uint16_t *t6h = calloc((size_t)(6 * half), 2);
    memcpy(t6 + half, t, (size_t)(4 * half) * 4);
    memcpy(t6h + half, th, (size_t)(4 * half) * 2);
    wgt_tensor *tall = c->table_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){6, half}, t6h)
                                    : wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){6, half}, t6);
    wgt_tensor *table = wgt_slice(tall, 0, 1, 5, 1);
    wgt_tensor *dall = wgt_full(ctx, c->out, 1, (int64_t[]){N + c->dst_offset + 8}, -7.0);
    wgt_tensor *dst = wgt_slice(dall, 0, c->dst_offset, c->dst_offset + N, 1);
    wgt_status s = wgt_rms_norm_linear_rope_into(dst, xt, gt, eps, wt, table, c->pass_begin, c->pass_end);
    wgt_tensor *yt = wgt_rms_norm_linear_ex(xt, gt, eps, wt, c->out, false);
    wgt_tensor *d32 = wgt_cast(dall, WGT_F32), *y32 = yt ? wgt_cast(yt, WGT_F32) : NULL;
    float *all = malloc((size_t)(N + c->dst_offset + 8) * 4);
    bool read = s == WGT_OK && d32 && y32 && wgt_tensor_read(d32, all, (size_t)(N + c->dst_offset + 8) * 4) == WGT_OK &&
                wgt_tensor_read(y32, y, (size_t)N * 4) == WGT_OK;
    CHECK(read, "%s %s: ran: %s", backend, c->name, wgt_context_error_message(ctx));
    if (read) {
        memcpy(got, all + c->dst_offset, (size_t)N * 4);
        int unequal = 0, off = 0, outside = 0;
        const bool exact = test_exact_kernels(ctx);
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += (double)x[k] * x[k];
        const double r = 1.0 / sqrt(ss / (double)K + eps);
        const double tol = c->out == WGT_F16 ? 4.0 / 1024 : 1e-4;
        for (int64_t h = 0; h < c->heads; h++) {
            const bool pass = h >= c->pass_begin && h < c->pass_end;
            for (int64_t i = 0; i < half; i++) {
                const int64_t ia = h * c->D + i, ib = ia + half;
                double da = 0, db = 0;
                for (int64_t k = 0; k < K; k++) {
                    const double xn = x[k] * r * g[k];
                    da += xn * w[ia * K + k];
                    db += xn * w[ib * K + k];
                }
                for (int s2 = 0; s2 < 2; s2++) {
                    const int64_t at = s2 ? ib : ia;
                    const float want = pass ? y[at] : stored(rot(y[ia], t[s2 * half + i], y[ib], t[(2 + s2) * half + i]), c->out);
                    const double dref = pass ? (s2 ? db : da) : da * t[s2 * half + i] + db * t[(2 + s2) * half + i];
                    /* the rotation's terms: |y_a t| + |y_b t'| (a pass-through value: itself) */
                    const double terms = pass ? fabs(y[at])
                                              : fabs(y[ia] * t[s2 * half + i]) + fabs(y[ib] * t[(2 + s2) * half + i]);
                    unequal += exact ? memcmp(&got[at], &want, 4) != 0
                                     : fabs((double)got[at] - want) > 2 * ulp_at(terms, c->out);
                    off += fabs(got[at] - dref) > tol * (fabs(da) + fabs(db) + 0.05);
                }
            }
        }
        for (int64_t i = 0; i < c->dst_offset; i++) outside += all[i] != -7.0f;
        for (int64_t i = 0; i < 8; i++) outside += all[c->dst_offset + N + i] != -7.0f;
        CHECK(unequal == 0 && off == 0 && outside == 0,
              "%s %s: %d values differ from the product + rotation, %d from the double reference, %d written outside dst",
              backend, c->name, unequal, off, outside);
    }
    free(all), free(t6), free(t6h);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(x), free(g), free(w), free(t), free(y), free(wh), free(th);
}

/* wgt_qlinear_rope_into: heads of D over K, bits 8 or 4. Bit for bit against
 * wgt_qlinear_ex (with the norm) on the same backend rotated here; within
 * the roundings against a double reference over the dequantized weights.
 * *got: dst's values for the cross-backend comparison. */
static void check_qcase(wgt_context *ctx, const char *backend, int64_t heads, int64_t D, int64_t K, int bits,
                        int64_t pass_begin, int64_t pass_end, wgt_dtype out, float *got)
{
    uint32_t seed = (uint32_t)(heads * 37 + D * 5 + K + bits * 11 + out);
    const int64_t N = heads * D, half = D / 2;
    const double eps = 1e-5;
    float *x = malloc((size_t)K * 4), *g = malloc((size_t)K * 4), *w = malloc((size_t)(N * K) * 4);
    float *t = malloc((size_t)(4 * half) * 4), *y = malloc((size_t)N * 4), *sc = malloc((size_t)(N * K / 32) * 4);
    int32_t *codes = malloc((size_t)(N * K * bits / 32) * 4);
    for (int64_t i = 0; i < K; i++) x[i] = rnd(&seed, 3.0f), g[i] = 0.5f + fabsf(rnd(&seed, 1.0f));
    for (int64_t i = 0; i < N * K; i++) w[i] = rnd(&seed, 2.0f / sqrtf((float)K));
    for (int64_t i = 0; i < half; i++) {
        const float angle = (float)(i + 2) * 0.41f;
        t[i] = cosf(angle), t[half + i] = sinf(angle), t[2 * half + i] = -sinf(angle), t[3 * half + i] = cosf(angle);
    }
    wgt_scope_push(ctx);
    wgt_tensor *xt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, x);
    wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){K}, g);
    wgt_tensor *wt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w);
    wgt_tensor *table = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){4, half}, t);
    wgt_tensor *qw = NULL, *qs = NULL;
    CHECK(wgt_quantize_weight(wt, bits, &qw, &qs) == WGT_OK, "%s: quantize", backend);
    wgt_tensor *dst = wgt_full(ctx, out, 1, (int64_t[]){N}, -7.0);
    const wgt_status s = wgt_qlinear_rope_into(dst, xt, qw, qs, bits, gt, eps, table, pass_begin, pass_end);
    wgt_qlinear_fusion f = {.norm_weight = gt, .norm_eps = eps};
    wgt_tensor *yt = wgt_qlinear_ex(xt, qw, qs, bits, &f);
    wgt_tensor *d32 = wgt_cast(dst, WGT_F32);
    bool read = s == WGT_OK && yt && d32 && wgt_tensor_read(d32, got, (size_t)N * 4) == WGT_OK &&
                wgt_tensor_read(yt, y, (size_t)N * 4) == WGT_OK &&
                wgt_tensor_read(qw, codes, (size_t)(N * K * bits / 32) * 4) == WGT_OK &&
                wgt_tensor_read(qs, sc, (size_t)(N * K / 32) * 4) == WGT_OK;
    CHECK(read, "%s qlinear_rope %lld heads of %lld, K %lld, %d bits: ran: %s", backend, (long long)heads, (long long)D,
          (long long)K, bits, wgt_context_error_message(ctx));
    if (read) {
        for (int64_t n = 0; n < N; n++) /* the weights as the kernels see them */
            for (int64_t k = 0; k < K; k++) {
                const uint32_t word = (uint32_t)codes[(n * K + k) * bits / 32];
                const int code = bits == 8 ? (int)(int8_t)(uint8_t)(word >> (8 * (k % 4)))
                                           : (int)((word >> (4 * (k % 8))) & 15u) - 8;
                w[n * K + k] = (float)code * sc[n * (K / 32) + k / 32];
            }
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += (double)x[k] * x[k];
        const double r = 1.0 / sqrt(ss / (double)K + eps);
        int unequal = 0, off = 0;
        for (int64_t h = 0; h < heads; h++) {
            const bool pass = h >= pass_begin && h < pass_end;
            for (int64_t i = 0; i < half; i++) {
                const int64_t ia = h * D + i, ib = ia + half;
                double da = 0, db = 0;
                for (int64_t k = 0; k < K; k++) {
                    da += x[k] * r * g[k] * w[ia * K + k];
                    db += x[k] * r * g[k] * w[ib * K + k];
                }
                for (int s2 = 0; s2 < 2; s2++) {
                    const int64_t at = s2 ? ib : ia;
                    const float want = stored(pass ? y[at] : rot(y[ia], t[s2 * half + i], y[ib], t[(2 + s2) * half + i]), out);
                    const double dref = pass ? (s2 ? db : da) : da * t[s2 * half + i] + db * t[(2 + s2) * half + i];
                    unequal += memcmp(&got[at], &want, 4) != 0;
                    off += fabs(got[at] - dref) > (out == WGT_F16 ? 4e-3 : 1e-4) * (fabs(da) + fabs(db) + 0.05);
                }
            }
        }
        CHECK(unequal == 0 && off == 0, "%s qlinear_rope %lld heads of %lld, K %lld, %d bits -> %s: %d values differ "
              "from qlinear_ex + rotation, %d from the double reference", backend, (long long)heads, (long long)D,
              (long long)K, bits, wgt_dtype_name(out), unequal, off);
    }
    wgt_tensor_release(qw), wgt_tensor_release(qs);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(x), free(g), free(w), free(t), free(y), free(sc), free(codes);
}

static void check_refusals(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 64}), *g = wgt_ones(ctx, WGT_F32, 1, (int64_t[]){64});
    wgt_tensor *w = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){96, 64}), *t = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 16});
    wgt_tensor *dst = wgt_zeros(ctx, WGT_F16, 1, (int64_t[]){96});
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, w, t, 1, 2) == WGT_OK, "%s: a valid call runs: %s", backend,
          wgt_context_error_message(ctx));
    wgt_tensor *t3 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){3, 16});
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, w, t3, 0, 0) == WGT_ERR_SHAPE_MISMATCH,
          "%s: a [3, 16] table refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rope table rows");
    wgt_tensor *t20 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 20}); /* D 40: 96 rows are not whole heads */
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, w, t20, 0, 0) == WGT_ERR_SHAPE_MISMATCH,
          "%s: heads of 40 in 96 rows refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rope heads");
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, w, t, 2, 4) == WGT_ERR_INVALID_ARGUMENT,
          "%s: pass range past 3 heads refused", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "rope pass range");
    wgt_tensor *d95 = wgt_zeros(ctx, WGT_F16, 1, (int64_t[]){95});
    CHECK(wgt_rms_norm_linear_rope_into(d95, x, g, 1e-5, w, t, 0, 0) == WGT_ERR_SHAPE_MISMATCH,
          "%s: a dst of 95 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rope dst size");
    wgt_tensor *x2 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){2, 64});
    CHECK(wgt_rms_norm_linear_rope_into(dst, x2, g, 1e-5, w, t, 0, 0) == WGT_ERR_SHAPE_MISMATCH,
          "%s: two rows of x refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rope two rows");
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, -1.0, w, t, 0, 0) == WGT_ERR_INVALID_ARGUMENT,
          "%s: eps -1 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "rope eps");
    wgt_tensor *di = wgt_zeros(ctx, WGT_I32, 1, (int64_t[]){96});
    CHECK(wgt_rms_norm_linear_rope_into(di, x, g, 1e-5, w, t, 0, 0) == WGT_ERR_DTYPE, "%s: an i32 dst refused",
          backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "rope i32 dst");
    wgt_tensor *ws = wgt_reshape(wgt_slice(wgt_reshape(dst, 2, (int64_t[]){96, 1}), 0, 0, 96, 1), 1, (int64_t[]){96});
    CHECK(ws && wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, wgt_reshape(wgt_cast(ws, WGT_F16), 2,
                                                                           (int64_t[]){96, 1}), t, 0, 0) != WGT_OK,
          "%s: a weight of the wrong width refused", backend);
    wgt_context_clear_error(ctx);
    wgt_tensor_set_requires_grad(g, true);
    CHECK(wgt_rms_norm_linear_rope_into(dst, x, g, 1e-5, w, t, 0, 0) == WGT_ERR_UNSUPPORTED,
          "%s: a norm weight that requires grad refused", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "rope with grad");
    CHECK(wgt_rms_norm_linear_rope_into(NULL, x, g, 1e-5, w, t, 0, 0) == WGT_ERR_INVALID_ARGUMENT, "%s: NULL dst",
          backend);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

int main(void)
{
    static const rcase cases[] = {
        /* name                     heads  D    K    pass     w_f16 tab_f16 out      dst_offset */
        {"llama_qkv_kv_first",      12,   64, 256,  2, 4,   true, true,  WGT_F16, 1024}, /* k k | v v | q x8 */
        {"qkv_v_last",              6,    64, 512,  5, 6,   true, false, WGT_F16, 0},
        {"no_pass_f32_out",         4,    32, 128,  0, 0,   true, false, WGT_F32, 12},
        {"all_pass",                3,    16, 64,   0, 3,   true, true,  WGT_F16, 8},
        {"d128_big_k",              4,   128, 2048, 1, 2,   true, true,  WGT_F16, 0},
        {"f32_weights",             3,    32, 96,   1, 2,   false, false, WGT_F32, 0},  /* two calls on WebGPU */
        {"odd_k",                   2,    16, 100,  0, 1,   true, false, WGT_F16, 0},   /* K % 8: no 16-byte words */
    };
    const int n = (int)(sizeof(cases) / sizeof(cases[0]));
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    CHECK(cpu && gpu, "contexts");
    if (!cpu || !gpu) return test_summary();
    for (int i = 0; i < n; i++) {
        const rcase *c = &cases[i];
        const int64_t N = c->heads * c->D;
        float *a = malloc((size_t)N * 4), *b = malloc((size_t)N * 4);
        check_case(cpu, "cpu", c, a);
        check_case(gpu, "webgpu", c, b);
        int apart = 0;
        for (int64_t j = 0; j < N; j++) apart += fabsf(a[j] - b[j]) > (c->out == WGT_F16 ? 4e-3f : 1e-4f) * (fabsf(a[j]) + 1.0f);
        CHECK(apart == 0, "%s: %d values apart between the CPU and WebGPU backends", c->name, apart);
        free(a), free(b);
    }
    /* quantized: 8 and 4 bits, f16 and f32 out, the pass range inside and at the end */
    static const struct { int64_t heads, D, K; int bits; int64_t pb, pe; wgt_dtype out; } qc[] = {
        {12, 64, 256, 4, 2, 4, WGT_F16}, {6, 32, 512, 8, 5, 6, WGT_F32}, {4, 16, 2048, 4, 0, 0, WGT_F16},
    };
    for (size_t i = 0; i < sizeof(qc) / sizeof(qc[0]); i++) {
        const int64_t N = qc[i].heads * qc[i].D;
        float *a = malloc((size_t)N * 4), *b = malloc((size_t)N * 4);
        check_qcase(cpu, "cpu", qc[i].heads, qc[i].D, qc[i].K, qc[i].bits, qc[i].pb, qc[i].pe, qc[i].out, a);
        check_qcase(gpu, "webgpu", qc[i].heads, qc[i].D, qc[i].K, qc[i].bits, qc[i].pb, qc[i].pe, qc[i].out, b);
        int apart = 0;
        for (int64_t j = 0; j < N; j++) apart += fabsf(a[j] - b[j]) > 4e-3f * (fabsf(a[j]) + 1.0f);
        CHECK(apart == 0, "qlinear_rope case %zu: %d values apart between the CPU and WebGPU backends", i, apart);
        free(a), free(b);
    }
    /* the decode shape on WebGPU is one dispatch: norm, projection and rotation */
    wgt_execution_stats s0, s1;
    wgt_scope_push(gpu);
    wgt_tensor *x = wgt_ones(gpu, WGT_F32, 2, (int64_t[]){1, 256}), *g = wgt_ones(gpu, WGT_F32, 1, (int64_t[]){256});
    wgt_tensor *w = wgt_ones(gpu, WGT_F16, 2, (int64_t[]){384, 256}), *t = wgt_ones(gpu, WGT_F32, 2, (int64_t[]){4, 32});
    wgt_tensor *dst = wgt_zeros(gpu, WGT_F16, 1, (int64_t[]){384});
    wgt_synchronize(gpu);
    bool stats = wgt_execution_stats_get(gpu, &s0) == WGT_OK;
    wgt_status st = wgt_rms_norm_linear_rope_into(dst, x, g, 1e-6, w, t, 2, 4);
    stats = stats && wgt_execution_stats_get(gpu, &s1) == WGT_OK;
    CHECK(st == WGT_OK && stats && s1.dispatches - s0.dispatches == 1, "decode rope projection took %llu dispatches (1)",
          stats ? (unsigned long long)(s1.dispatches - s0.dispatches) : 0ull);
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_quantize_weight(wgt_ones(gpu, WGT_F32, 2, (int64_t[]){384, 256}), 4, &qw, &qs);
    wgt_synchronize(gpu);
    stats = wgt_execution_stats_get(gpu, &s0) == WGT_OK;
    st = wgt_qlinear_rope_into(dst, x, qw, qs, 4, g, 1e-6, t, 2, 4);
    stats = stats && wgt_execution_stats_get(gpu, &s1) == WGT_OK;
    CHECK(st == WGT_OK && stats && s1.dispatches - s0.dispatches == 1, "decode q4 rope projection took %llu dispatches (1)",
          stats ? (unsigned long long)(s1.dispatches - s0.dispatches) : 0ull);
    wgt_tensor_release(qw), wgt_tensor_release(qs);
    wgt_scope_pop(gpu);
    /* without f16 kernels (emulated), the same values through the product and elementwise calls */
    wgt_context *emu = test_context_env(NULL, (const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL});
    if (emu) {
        float *a = malloc(12 * 64 * 4);
        check_case(emu, "webgpu-emulated", &cases[0], a);
        free(a);
        wgt_context_destroy(emu);
    }
    check_refusals(cpu, "cpu");
    check_refusals(gpu, "webgpu");
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
