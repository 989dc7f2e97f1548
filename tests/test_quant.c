/* Quantized weights (src/ops/quant.c, kernel QMATMUL) on the CPU and WebGPU
 * backends, against references computed here from the documented layout:
 *  - wgt_quantize_weight: each code decoded by hand (int8 bytes / nibbles - 8)
 *    times its group scale is within scale / 2 of the weight, and the scale is
 *    max |w| / 127 (8 bits) or / 7 (4 bits);
 *  - wgt_qlinear: x [M, K] against x W_deq^T in double (rel L2 <= 1e-5) for
 *    decode (M = 1: WebGPU's quant_gemv, N not a multiple of its 16 columns)
 *    and prefill shapes (M = 5, 33), strided and offset x; prefill through
 *    WebGPU's tiled dequantizing GEMM (M >= 8: odd M, N past a tile edge,
 *    K of 1 and 3 groups, both tiles forced by WGT_QUANT_TILE, and the old
 *    kernel by WGT_QUANT_TILED=0);
 *  - f16 weights times a vector (decode's matvec; f32 and f16 out, bias,
 *    aligned and unaligned) against a double reference;
 *  - f32 activations times f16 weights (wgt_matmul_ex of mixed dtypes, f32 and
 *    f16 out): decode GEMVs (16-byte loads with an f32 vector, the vec4 and
 *    element kernels), prefill GEMMs (either operand f16, the f16 emulation)
 *    against a double reference of the unrounded f32 x: the error must be far
 *    below what rounding x to f16 would cost (the cast the mix replaces);
 *  - wgt_linear_ex: f32 or f16 x against f16 weights plus an f32 or f16 bias
 *    (decode's residual stream), decode and prefill shapes, split-K, the f16
 *    emulation; an f32 result equal bit for bit to matmul_ex followed by add;
 *  - wgt_linear_swiglu_ex (gate/up rows interleaved, SwiGLU in the decode
 *    GEMV's epilogue): bit for bit the linear_ex + fused SwiGLU it replaces,
 *    fused and unfused shapes, f16 and f32 out, against a double reference;
 *  - wgt_rms_norm_linear_ex (RMSNorm in the decode GEMV's prologue, with or
 *    without the SwiGLU epilogue): wgt_rms_norm + the product, bit for bit
 *    up to the order of the norm's sum of squares;
 *  - wgt_fused_assign (LLM decode: the rotation kernel storing k and v into
 *    the KV cache): bit for bit wgt_assign of wgt_fused into a strided view
 *    of a larger buffer, whose other elements stay untouched, f16 and f32
 *    destinations, against a double reference; its refusals;
 *  - refusals: bits, shapes, dtypes, x requiring grad; the context stays usable. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static float code_of(const int32_t *q, int bits, int64_t K, int64_t n, int64_t k)
{
    const uint32_t *row = (const uint32_t *)q + n * (K * bits / 32);
    if (bits == 8) return (float)(int8_t)(uint8_t)(row[k / 4] >> (8 * (k % 4)));
    return (float)((int)((row[k / 8] >> (4 * (k % 8))) & 15u) - 8);
}

static void check_bits(wgt_context *ctx, const char *backend, int bits, int64_t M, int64_t N, int64_t K)
{
    uint32_t seed = (uint32_t)(bits * 1000 + M * 7 + N);
    float *w = malloc((size_t)(N * K) * sizeof(float)), *x = malloc((size_t)(M * K + 4) * sizeof(float));
    float *got = malloc((size_t)(M * N) * sizeof(float)), *sc = malloc((size_t)(N * K / 32) * sizeof(float));
    int32_t *q = malloc((size_t)(N * K * bits / 32) * sizeof(int32_t));
    for (int64_t i = 0; i < N * K; i++) w[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 10000.0f;
    for (int64_t i = 0; i < M * K + 4; i++) x[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 5000.0f;
    wgt_scope_push(ctx);
    wgt_tensor *wt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w);
    /* x starts 1 element into its storage: the op copies it to an aligned row */
    wgt_tensor *xbig = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){M * K + 4}, x);
    wgt_tensor *xt = wgt_reshape(wgt_slice(xbig, 0, 1, 1 + M * K, 1), 2, (int64_t[]){M, K});
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_status st = wgt_quantize_weight(wt, bits, &qw, &qs);
    CHECK(st == WGT_OK && qw && qs, "%s quantize %d bits: %s", backend, bits, wgt_context_error_message(ctx));
    wgt_tensor *y = st == WGT_OK ? wgt_qlinear(xt, qw, qs, bits) : NULL;
    bool read = y && wgt_tensor_read(qw, q, (size_t)(N * K * bits / 32) * 4) == WGT_OK &&
                wgt_tensor_read(qs, sc, (size_t)(N * K / 32) * 4) == WGT_OK &&
                wgt_tensor_read(y, got, (size_t)(M * N) * 4) == WGT_OK;
    CHECK(read, "%s qlinear %d bits M=%lld: %s", backend, bits, (long long)M, wgt_context_error_message(ctx));
    if (read) {
        int bad_code = 0, bad_scale = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < K / 32; g++) {
                float amax = 0;
                for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(w[n * K + g * 32 + j]));
                const float s = sc[n * (K / 32) + g];
                bad_scale += fabsf(s - amax / (bits == 8 ? 127.0f : 7.0f)) > 1e-7f * amax;
                for (int j = 0; j < 32; j++) {
                    const int64_t k = g * 32 + j;
                    /* 4 bits: -8 is reachable only by rounding below -7.5 scale, so |error| <= scale / 2 */
                    bad_code += fabsf(code_of(q, bits, K, n, k) * s - w[n * K + k]) > 0.5f * s * 1.0001f + 1e-12f;
                }
            }
        CHECK(bad_code == 0 && bad_scale == 0, "%s %d bits: %d codes off by more than scale / 2, %d scales off",
              backend, bits, bad_code, bad_scale);
        double num = 0, den = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double ref = 0;
                for (int64_t k = 0; k < K; k++)
                    ref += (double)x[1 + m * K + k] * code_of(q, bits, K, n, k) * sc[n * (K / 32) + k / 32];
                num += (got[m * N + n] - ref) * (got[m * N + n] - ref);
                den += ref * ref;
            }
        const double err = sqrt(num / den);
        CHECK(err <= 1e-5, "%s %d bits M=%lld N=%lld K=%lld: rel L2 %.3g against the dequantized product", backend,
              bits, (long long)M, (long long)N, (long long)K, err);
    }
    wgt_scope_pop(ctx);
    free(w), free(x), free(got), free(sc), free(q);
}

/* wgt_qlinear_ex against a float64 reference built here from the codes and
 * scales read back: x (f32, or f16 when x_f16) RMS-normalized with a weight
 * (norm), times the dequantized W^T, plus a bias (bias), SwiGLU of rows 2i
 * and 2i + 1 (swiglu). M = 1 takes the fused kernel on WebGPU, M > 1 the
 * composition; both must give the reference's values (rel L2 <= 1e-5). */
static void check_qlinear_ex(wgt_context *ctx, const char *backend, int bits, int64_t M, int64_t N, int64_t K,
                             bool norm, bool bias, bool swiglu, bool x_f16)
{
    uint32_t seed = (uint32_t)(bits * 31 + M * 7 + N * 3 + K + norm * 100 + bias * 200 + swiglu * 400 + x_f16 * 800);
    const int64_t NO = swiglu ? N / 2 : N;
    float *w = malloc((size_t)(N * K) * sizeof(float)), *x = malloc((size_t)(M * K) * sizeof(float));
    float *g = malloc((size_t)K * sizeof(float)), *b = malloc((size_t)N * sizeof(float));
    float *got = malloc((size_t)(M * NO) * sizeof(float)), *sc = malloc((size_t)(N * K / 32) * sizeof(float));
    uint16_t *xh = malloc((size_t)(M * K) * 2);
    int32_t *q = malloc((size_t)(N * K * bits / 32) * sizeof(int32_t));
    for (int64_t i = 0; i < N * K; i++) w[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 10000.0f;
    for (int64_t i = 0; i < M * K; i++) {
        x[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 5000.0f;
        xh[i] = test_f32_to_f16(x[i]);
        if (x_f16) x[i] = test_f16_to_f32(xh[i]);
    }
    for (int64_t i = 0; i < K; i++) g[i] = 0.5f + (float)(test_xorshift(&seed) % 1001) / 1000.0f;
    for (int64_t i = 0; i < N; i++) b[i] = ((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 100.0f;
    wgt_scope_push(ctx);
    wgt_tensor *wt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w);
    wgt_tensor *xt = x_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){M, K}, xh)
                           : wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, x);
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_status st = wgt_quantize_weight(wt, bits, &qw, &qs);
    const double eps = 1e-5;
    wgt_qlinear_fusion f = {.norm_weight = norm ? wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g) : NULL,
                            .norm_eps = eps,
                            .bias = bias ? wgt_tensor_from_host(ctx, WGT_F32, 1, &N, b) : NULL,
                            .swiglu = swiglu};
    wgt_execution_stats before = {0}, after = {0};
    const bool gpu = wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU;
    if (gpu) wgt_execution_stats_get(ctx, &before);
    wgt_tensor *y = st == WGT_OK ? wgt_qlinear_ex(xt, qw, qs, bits, &f) : NULL;
    if (gpu) wgt_execution_stats_get(ctx, &after);
    /* one row on WebGPU: the whole call is one dispatch (norm and bias together: the composition) */
    if (gpu && M == 1 && !(norm && bias))
        CHECK(after.dispatches - before.dispatches == 1, "%s qlinear_ex norm %d bias %d swiglu %d f16 %d: %llu dispatches",
              backend, norm, bias, swiglu, x_f16, (unsigned long long)(after.dispatches - before.dispatches));
    bool read = y && wgt_tensor_dim(y, 1) == NO && wgt_tensor_read(qw, q, (size_t)(N * K * bits / 32) * 4) == WGT_OK &&
                wgt_tensor_read(qs, sc, (size_t)(N * K / 32) * 4) == WGT_OK &&
                wgt_tensor_read(y, got, (size_t)(M * NO) * 4) == WGT_OK;
    CHECK(read, "%s qlinear_ex %d bits M=%lld norm %d bias %d swiglu %d f16 %d: %s", backend, bits, (long long)M, norm,
          bias, swiglu, x_f16, wgt_context_error_message(ctx));
    double num = 0, den = 0;
    double *sums = malloc((size_t)N * sizeof(double)), *h = malloc((size_t)K * sizeof(double));
    for (int64_t m = 0; read && m < M; m++) {
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += (double)x[m * K + k] * x[m * K + k];
        const double rstd = norm ? 1.0 / sqrt(ss / (double)K + eps) : 1.0;
        for (int64_t k = 0; k < K; k++) h[k] = x[m * K + k] * rstd * (norm ? g[k] : 1.0);
        for (int64_t n = 0; n < N; n++) {
            double acc = bias ? b[n] : 0.0;
            for (int64_t k = 0; k < K; k++) acc += h[k] * code_of(q, bits, K, n, k) * sc[n * (K / 32) + k / 32];
            sums[n] = acc;
        }
        for (int64_t o = 0; o < NO; o++) {
            const double ref = swiglu ? sums[2 * o] / (1.0 + exp(-sums[2 * o])) * sums[2 * o + 1] : sums[o];
            num += (got[m * NO + o] - ref) * (got[m * NO + o] - ref);
            den += ref * ref;
        }
    }
    const double err = den > 0 ? sqrt(num / den) : 1.0;
    CHECK(!read || err <= 1e-5, "%s qlinear_ex %d bits M=%lld N=%lld K=%lld norm %d bias %d swiglu %d f16 %d: rel L2 %.3g",
          backend, bits, (long long)M, (long long)N, (long long)K, norm, bias, swiglu, x_f16, err);
    wgt_scope_pop(ctx);
    free(w), free(x), free(g), free(b), free(got), free(sc), free(xh), free(q), free(sums), free(h);
}

static void check_qlinear_ex_all(wgt_context *ctx, const char *backend)
{
    for (int bits = 8; bits >= 4; bits -= 4) {
        for (int64_t M = 1; M <= 3; M += 2) {
            check_qlinear_ex(ctx, backend, bits, M, 70, 256, true, false, false, false);  /* norm + projection */
            check_qlinear_ex(ctx, backend, bits, M, 66, 512, true, false, true, false);   /* norm + SwiGLU */
            check_qlinear_ex(ctx, backend, bits, M, 37, 1024, false, true, false, true);  /* f16 x + residual */
            check_qlinear_ex(ctx, backend, bits, M, 40, 224, false, true, true, false);   /* bias + SwiGLU */
            check_qlinear_ex(ctx, backend, bits, M, 33, 96, false, false, false, true);   /* f16 x alone */
            check_qlinear_ex(ctx, backend, bits, M, 34, 160, true, true, false, false);   /* both: the composition */
        }
    }
    /* bad arguments: a norm weight of the wrong length, an odd N with SwiGLU, f16 scales */
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 64}), *w = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){5, 64});
    wgt_tensor *qw = NULL, *qs = NULL;
    CHECK(wgt_quantize_weight(w, 4, &qw, &qs) == WGT_OK, "%s quantize for refusals", backend);
    wgt_qlinear_fusion f = {.norm_weight = wgt_ones(ctx, WGT_F32, 1, (int64_t[]){63}), .norm_eps = 1e-5};
    CHECK(wgt_qlinear_ex(x, qw, qs, 4, &f) == NULL && strstr(wgt_context_error_message(ctx), "wgt_qlinear_ex") &&
              strstr(wgt_context_error_message(ctx), "[63]"),
          "%s qlinear_ex norm [63] for K 64 refused: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "qlinear_ex norm length");
    f = (wgt_qlinear_fusion){.swiglu = true};
    CHECK(wgt_qlinear_ex(x, qw, qs, 4, &f) == NULL, "%s qlinear_ex SwiGLU of 5 rows refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "qlinear_ex odd SwiGLU");
    CHECK(wgt_qlinear_ex(x, qw, wgt_cast(qs, WGT_F16), 4, NULL) == NULL, "%s qlinear_ex f16 scales refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "qlinear_ex f16 scales");
    wgt_scope_pop(ctx);
}

static void check_refusals(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    wgt_tensor *w = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 64}), *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){2, 64});
    wgt_tensor *qw = NULL, *qs = NULL;
    CHECK(wgt_quantize_weight(w, 5, &qw, &qs) == WGT_ERR_INVALID_ARGUMENT && !qw, "%s: 5 bits refused", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "bits 5");
    wgt_tensor *w33 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 33});
    CHECK(wgt_quantize_weight(w33, 8, &qw, &qs) == WGT_ERR_SHAPE_MISMATCH, "%s: K = 33 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "K 33");
    CHECK(wgt_quantize_weight(w, 4, &qw, &qs) == WGT_OK, "%s: quantize", backend);
    CHECK(wgt_qlinear(x, qw, qs, 8) == NULL, "%s: 4-bit weights used as 8-bit refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "bits mismatch");
    wgt_tensor *x32 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){2, 32});
    CHECK(wgt_qlinear(x32, qw, qs, 4) == NULL, "%s: K mismatch refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "K mismatch");
    CHECK(wgt_qlinear(wgt_cast(x, WGT_F16), qw, qs, 4) == NULL, "%s: f16 x refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "f16 x");
    wgt_tensor_set_requires_grad(x, true);
    CHECK(wgt_qlinear(x, qw, qs, 4) == NULL, "%s: x requiring grad refused", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "requires grad");
    wgt_no_grad_push(ctx);
    CHECK(wgt_qlinear(x, qw, qs, 4) != NULL, "%s: under no-grad it runs", backend);
    wgt_no_grad_pop(ctx);
    wgt_tensor_release(qw), wgt_tensor_release(qs);
    wgt_scope_pop(ctx);
}

/* f16 weights in decode: y [1, N] = x [1, K] W^T (wgt_matmul_ex, f32 out, as
 * llama's project), W @ x as [N, K] x [K, 1], and f16 linear with a bias,
 * against a double reference of the f16 values. On WebGPU these take
 * matmul_gemv_half (16-byte loads) when K and the offsets are multiples of 8,
 * else matmul_gemv_rows (K = 100, x at an odd offset): both are checked.
 * Values are multiples of 1/64 in [-1, 1]: products and sums stay exact in
 * f32 until the sums grow past 2^18 / 64, so only the summation order differs. */
static void check_f16_matvec(wgt_context *ctx, const char *backend, int64_t N, int64_t K, int64_t x_offset)
{
    uint32_t seed = (uint32_t)(N * 31 + K + x_offset);
    uint16_t *w = malloc((size_t)(N * K) * 2), *x = malloc((size_t)(K + x_offset) * 2), *bias = malloc((size_t)N * 2);
    double *ref = malloc((size_t)N * sizeof(double));
    float *got = malloc((size_t)N * sizeof(float)), *got2 = malloc((size_t)N * sizeof(float));
    float *got3 = malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < N * K; i++) w[i] = test_f32_to_f16((float)((int)(test_xorshift(&seed) % 129) - 64) / 64.0f);
    for (int64_t i = 0; i < K + x_offset; i++) x[i] = test_f32_to_f16((float)((int)(test_xorshift(&seed) % 129) - 64) / 64.0f);
    for (int64_t i = 0; i < N; i++) bias[i] = test_f32_to_f16((float)((int)(test_xorshift(&seed) % 17) - 8) / 8.0f);
    for (int64_t n = 0; n < N; n++) {
        ref[n] = 0;
        for (int64_t k = 0; k < K; k++) ref[n] += (double)test_f16_to_f32(w[n * K + k]) * test_f16_to_f32(x[x_offset + k]);
    }
    wgt_scope_push(ctx);
    wgt_tensor *wt = wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, w);
    wgt_tensor *xall = wgt_tensor_from_host(ctx, WGT_F16, 1, (int64_t[]){K + x_offset}, x);
    wgt_tensor *xs = wgt_slice(xall, 0, x_offset, x_offset + K, 1);
    wgt_tensor *bt = wgt_tensor_from_host(ctx, WGT_F16, 1, (int64_t[]){N}, bias);
    wgt_tensor *y = wgt_matmul_ex(wgt_reshape(xs, 2, (int64_t[]){1, K}), wgt_transpose(wt, 0, 1), WGT_F32);
    wgt_tensor *y2 = wgt_matmul_ex(wt, wgt_reshape(xs, 2, (int64_t[]){K, 1}), WGT_F32);
    wgt_tensor *y3 = wgt_linear(wgt_reshape(xs, 2, (int64_t[]){1, K}), wt, bt);
    y3 = y3 ? wgt_cast(y3, WGT_F32) : NULL;
    bool read = y && y2 && y3 && wgt_tensor_read(y, got, (size_t)N * 4) == WGT_OK &&
                wgt_tensor_read(y2, got2, (size_t)N * 4) == WGT_OK && wgt_tensor_read(y3, got3, (size_t)N * 4) == WGT_OK;
    CHECK(read, "%s f16 matvec N=%lld K=%lld: %s", backend, (long long)N, (long long)K, wgt_context_error_message(ctx));
    if (read) {
        double e1 = 0, e2 = 0, e3 = 0;
        for (int64_t n = 0; n < N; n++) {
            e1 = fmax(e1, fabs(got[n] - ref[n]));
            e2 = fmax(e2, fabs(got2[n] - ref[n]));
            /* f16 out: half an ulp of |ref + bias| <= 2^-11 relative */
            const double r3 = ref[n] + test_f16_to_f32(bias[n]);
            e3 = fmax(e3, fabs(got3[n] - r3) / fmax(fabs(r3), 1.0));
        }
        CHECK(e1 <= 1e-4 && e2 <= 1e-4 && e3 <= 1e-3,
              "%s f16 matvec N=%lld K=%lld x offset %lld: errors x W^T %.3g, W x %.3g, linear f16 %.3g", backend,
              (long long)N, (long long)K, (long long)x_offset, e1, e2, e3);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(w), free(x), free(bias), free(ref), free(got), free(got2), free(got3);
}

/* Mixed f32 x f16 products: a [M, K] @ b [K, N] with one operand f16 (a_f16:
 * a is the f16 one), b given as the transpose of a stored [N, K] (a weight
 * W^T view), and a at element offset a_offset. f32 values of the f32 operand
 * carry a full mantissa, so rounding them to f16 (what the kernels must not
 * do) moves each output by ~1e-3, against f32 summation noise of ~1e-6. */
static void check_mixed(wgt_context *ctx, const char *backend, int64_t M, int64_t N, int64_t K, bool a_f16,
                        int64_t a_offset, wgt_dtype out_dtype)
{
    uint32_t seed = (uint32_t)(M * 131 + N * 7 + K + a_offset + (a_f16 ? 5000 : 0) + out_dtype);
    const int64_t na = M * K + a_offset, nb = N * K;
    float *af = malloc((size_t)na * sizeof(float)), *bf = malloc((size_t)nb * sizeof(float));
    uint16_t *ah = malloc((size_t)na * 2), *bh = malloc((size_t)nb * 2);
    float *got = malloc((size_t)(M * N) * sizeof(float));
    for (int64_t i = 0; i < na; i++) {
        af[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 500000.0f;
        ah[i] = test_f32_to_f16(af[i]);
        if (a_f16) af[i] = test_f16_to_f32(ah[i]); /* the f16 operand's exact values */
    }
    for (int64_t i = 0; i < nb; i++) {
        bf[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 1000000.0f;
        bh[i] = test_f32_to_f16(bf[i]);
        if (!a_f16) bf[i] = test_f16_to_f32(bh[i]);
    }
    wgt_scope_push(ctx);
    wgt_tensor *ta = a_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 1, (int64_t[]){na}, ah)
                           : wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){na}, af);
    wgt_tensor *tb = a_f16 ? wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, bf)
                           : wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, bh);
    wgt_tensor *a = wgt_reshape(wgt_slice(ta, 0, a_offset, na, 1), 2, (int64_t[]){M, K});
    wgt_tensor *y = wgt_matmul_ex(a, wgt_transpose(tb, 0, 1), out_dtype);
    if (y && out_dtype != WGT_F32) y = wgt_cast(y, WGT_F32);
    bool read = y && wgt_tensor_read(y, got, (size_t)(M * N) * 4) == WGT_OK;
    CHECK(read, "%s mixed %s x %s -> %s [%lld, %lld] x [%lld, %lld]: %s", backend, a_f16 ? "f16" : "f32",
          a_f16 ? "f32" : "f16", wgt_dtype_name(out_dtype), (long long)M, (long long)K, (long long)K, (long long)N,
          wgt_context_error_message(ctx));
    if (read) {
        double err = 0, rounding = 0; /* max |got - ref|, max |ref with the f32 operand rounded to f16 - ref| */
        int bad_f16 = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double ref = 0, ref_rounded = 0;
                for (int64_t k = 0; k < K; k++) {
                    const int64_t ia = a_offset + m * K + k, ib = n * K + k;
                    ref += (double)af[ia] * bf[ib];
                    ref_rounded += (double)test_f16_to_f32(ah[ia]) * test_f16_to_f32(bh[ib]);
                }
                rounding = fmax(rounding, fabs(ref_rounded - ref));
                if (out_dtype == WGT_F32) err = fmax(err, fabs(got[m * N + n] - ref));
                else bad_f16 += fabs(got[m * N + n] - ref) > fabs(ref) * (1.0 / 2048) + 1e-4; /* half an ulp + sums */
            }
        if (out_dtype == WGT_F32)
            CHECK(err <= 1e-5 * sqrt((double)K) && err < 0.05 * rounding, /* f32 sums: ~eps sqrt(K) */
                  "%s mixed %s x %s [%lld, %lld] x [%lld, %lld] (a offset %lld): max error %.3g (rounding the f32 "
                  "operand to f16 would give %.3g)", backend, a_f16 ? "f16" : "f32", a_f16 ? "f32" : "f16",
                  (long long)M, (long long)K, (long long)K, (long long)N, (long long)a_offset, err, rounding);
        else
            CHECK(bad_f16 == 0, "%s mixed -> f16 [%lld, %lld] x [%lld, %lld]: %d outputs off by more than half an ulp",
                  backend, (long long)M, (long long)K, (long long)K, (long long)N, bad_f16);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(af), free(bf), free(ah), free(bh), free(got);
}

/* The knobs (WGT_SPLITK, WGT_QUANT_TILE, ...) are read when a context is
 * created: for a WebGPU ctx, a new one created with env (name, value pairs,
 * NULL-terminated: test_context_env), else (the CPU has no such knobs) ctx
 * itself. Give it back with knobs_done. */
static wgt_context *with_knobs(wgt_context *ctx, const char *const *env)
{
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU) return ctx;
    wgt_context *k = test_context_env(NULL, env);
    return k ? k : ctx; /* test_context_env counted the failure */
}

static void knobs_done(wgt_context *k, wgt_context *ctx)
{
    if (k != ctx) wgt_context_destroy(k);
}

/* wgt_linear_ex: x [M, K] (f32 with a full mantissa, or f16) times an f16
 * weight [N, K]^T plus a bias [N] of bias_dtype (llama's decode passes the
 * f32 residual stream as it), out_dtype. Against a double reference; an f32
 * result must equal wgt_add(bias, wgt_matmul_ex(x, W^T, f32)) bit for bit
 * (the same f32 sums; one rounding of sum + bias either way), which is what
 * lets llama fold its residual adds into the projections. */
static void check_linear_ex(wgt_context *ctx, const char *backend, int64_t M, int64_t N, int64_t K, bool x_f16,
                            wgt_dtype bias_dtype, wgt_dtype out_dtype)
{
    uint32_t seed = (uint32_t)(M * 17 + N * 5 + K + x_f16 * 9000 + bias_dtype * 300 + out_dtype);
    float *xf = malloc((size_t)(M * K) * sizeof(float)), *bf = malloc((size_t)N * sizeof(float));
    uint16_t *xh = malloc((size_t)(M * K) * 2), *wh = malloc((size_t)(N * K) * 2), *bh = malloc((size_t)N * 2);
    float *got = malloc((size_t)(M * N) * sizeof(float)), *sep = malloc((size_t)(M * N) * sizeof(float));
    for (int64_t i = 0; i < M * K; i++) {
        xf[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 500000.0f;
        xh[i] = test_f32_to_f16(xf[i]);
        if (x_f16) xf[i] = test_f16_to_f32(xh[i]);
    }
    for (int64_t i = 0; i < N * K; i++) wh[i] = test_f32_to_f16(((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 1000.0f);
    for (int64_t i = 0; i < N; i++) {
        bf[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 100000.0f;
        bh[i] = test_f32_to_f16(bf[i]);
        if (bias_dtype == WGT_F16) bf[i] = test_f16_to_f32(bh[i]);
    }
    wgt_scope_push(ctx);
    wgt_tensor *x = x_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){M, K}, xh)
                          : wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, xf);
    wgt_tensor *w = wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, wh);
    wgt_tensor *b = bias_dtype == WGT_F16 ? wgt_tensor_from_host(ctx, WGT_F16, 1, (int64_t[]){N}, bh)
                                          : wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){N}, bf);
    wgt_tensor *y = wgt_linear_ex(x, w, b, out_dtype);
    CHECK(!y || wgt_tensor_dtype(y) == out_dtype, "%s linear_ex: result dtype", backend);
    if (y && out_dtype != WGT_F32) y = wgt_cast(y, WGT_F32);
    wgt_tensor *y2 = wgt_add(b, wgt_matmul_ex(x, wgt_transpose(w, 0, 1), WGT_F32));
    bool read = y && y2 && wgt_tensor_read(y, got, (size_t)(M * N) * 4) == WGT_OK &&
                wgt_tensor_read(y2, sep, (size_t)(M * N) * 4) == WGT_OK;
    CHECK(read, "%s linear_ex %s x f16 + %s bias -> %s [%lld, %lld, %lld]: %s", backend, x_f16 ? "f16" : "f32",
          wgt_dtype_name(bias_dtype), wgt_dtype_name(out_dtype), (long long)M, (long long)N, (long long)K,
          wgt_context_error_message(ctx));
    if (read) {
        double err = 0;
        int bad = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double ref = bf[n];
                for (int64_t k = 0; k < K; k++) ref += (double)xf[m * K + k] * test_f16_to_f32(wh[n * K + k]);
                const double e = fabs(got[m * N + n] - ref);
                if (out_dtype == WGT_F32) err = fmax(err, e);
                else bad += e > fabs(ref) * (1.0 / 2048) + 1e-4;
                if (out_dtype == WGT_F32) bad += memcmp(&got[m * N + n], &sep[m * N + n], 4) != 0;
            }
        CHECK(err <= 2e-5 * sqrt((double)K) && bad == 0,
              "%s linear_ex %s x f16 + %s bias -> %s [%lld, %lld, %lld]: max error %.3g, %d outputs off (f16: more "
              "than half an ulp; f32: unequal to matmul_ex + add)", backend, x_f16 ? "f16" : "f32",
              wgt_dtype_name(bias_dtype), wgt_dtype_name(out_dtype), (long long)M, (long long)N, (long long)K, err, bad);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(xf), free(bf), free(xh), free(wh), free(bh), free(got), free(sep);
}

static void check_linear_ex_all(wgt_context *ctx, const char *backend)
{
    check_linear_ex(ctx, backend, 1, 70, 256, false, WGT_F32, WGT_F32);  /* decode o-proj / down: 16-byte loads */
    check_linear_ex(ctx, backend, 1, 300, 2048, true, WGT_F32, WGT_F32); /* f16 x (the f16 cache's attention) */
    check_linear_ex(ctx, backend, 1, 33, 100, false, WGT_F32, WGT_F32);  /* K % 8 != 0: the rows kernel */
    check_linear_ex(ctx, backend, 1, 70, 256, false, WGT_F16, WGT_F16);  /* f16 bias and out */
    check_linear_ex(ctx, backend, 37, 70, 96, false, WGT_F32, WGT_F32);  /* prefill: tiled GEMM */
    check_linear_ex(ctx, backend, 37, 70, 96, true, WGT_F32, WGT_F16);
    wgt_context *kc = with_knobs(ctx, (const char *[]){"WGT_SPLITK", "2", NULL}); /* the bias added by the reduction */
    check_linear_ex(kc, backend, 37, 70, 96, false, WGT_F32, WGT_F32);
    knobs_done(kc, ctx);
    /* devices without shader-f16: an f32 bias is bound as it is */
    kc = with_knobs(ctx, (const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL});
    check_linear_ex(kc, backend, 1, 70, 256, false, WGT_F32, WGT_F32);
    check_linear_ex(kc, backend, 37, 70, 96, true, WGT_F16, WGT_F32);
    knobs_done(kc, ctx);
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 8}), *w32 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){3, 8});
    wgt_tensor *wh = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){3, 8}), *bh = wgt_ones(ctx, WGT_F16, 1, (int64_t[]){3});
    wgt_tensor *b32 = wgt_ones(ctx, WGT_F32, 1, (int64_t[]){3});
    CHECK(wgt_linear_ex(x, w32, bh, WGT_F32) == NULL, "%s: linear_ex f32 operands with an f16 bias refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "linear_ex f16 bias");
    CHECK(wgt_linear_ex(x, w32, b32, WGT_F16) == NULL, "%s: linear_ex f32 -> f16 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "linear_ex f32 -> f16");
    CHECK(wgt_linear_ex(x, wh, wgt_ones(ctx, WGT_F32, 1, (int64_t[]){4}), WGT_F32) == NULL,
          "%s: linear_ex bias [4] for 3 outputs refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "linear_ex bias shape");
    wgt_tensor_set_requires_grad(x, true);
    CHECK(wgt_linear_ex(x, wh, b32, WGT_F32) == NULL, "%s: linear_ex f32 x f16 with grad refused", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "linear_ex with grad");
    wgt_tensor *plain = wgt_linear_ex(x, w32, b32, WGT_F32); /* wgt_linear's arguments: its gradient too */
    CHECK(plain && wgt_tensor_requires_grad(plain), "%s: linear_ex of wgt_linear's dtypes records a gradient: %s",
          backend, wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

/* wgt_linear_swiglu_ex: x [M, K] (f32 with a full mantissa, or f16) times
 * weight [2F, K] (f16, or f32: w_f32) whose rows 2i, 2i + 1 are gate and up,
 * -> [M, F] out_dtype. The result must equal, bit for bit, the two calls it
 * stands for (wgt_linear_ex to out_dtype, then wgt_fused of the SwiGLU over
 * the even and odd columns), and a double reference within the roundings. On
 * WebGPU decode shapes (M = 1, f16 rows of 16-byte words, K up to 8192) take
 * the GEMV's SwiGLU epilogue; the rest the product then the elementwise kernel. */
static void check_linear_swiglu(wgt_context *ctx, const char *backend, int64_t M, int64_t F, int64_t K, bool x_f16,
                                bool w_f32, wgt_dtype out_dtype)
{
    uint32_t seed = (uint32_t)(M * 19 + F * 3 + K + x_f16 * 7000 + w_f32 * 500 + out_dtype);
    const int64_t N = 2 * F;
    float *xf = malloc((size_t)(M * K) * sizeof(float)), *wf = malloc((size_t)(N * K) * sizeof(float));
    uint16_t *xh = malloc((size_t)(M * K) * 2), *wh = malloc((size_t)(N * K) * 2);
    float *got = malloc((size_t)(M * F) * sizeof(float)), *two = malloc((size_t)(M * F) * sizeof(float));
    for (int64_t i = 0; i < M * K; i++) {
        xf[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 1000000.0f;
        xh[i] = test_f32_to_f16(xf[i]);
        if (x_f16) xf[i] = test_f16_to_f32(xh[i]);
    }
    const float scale = 3.0f / sqrtf((float)K); /* sums of a few units: the SwiGLU's curved part */
    for (int64_t i = 0; i < N * K; i++) {
        wf[i] = ((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 1000.0f * scale;
        wh[i] = test_f32_to_f16(wf[i]);
        if (!w_f32) wf[i] = test_f16_to_f32(wh[i]);
    }
    wgt_scope_push(ctx);
    wgt_tensor *x = x_f16 ? wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){M, K}, xh)
                          : wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, xf);
    wgt_tensor *w = w_f32 ? wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, wf)
                          : wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, wh);
    wgt_tensor *y = wgt_linear_swiglu_ex(x, w, out_dtype);
    CHECK(!y || (wgt_tensor_dtype(y) == out_dtype && wgt_tensor_dim(y, 1) == F), "%s linear_swiglu: result", backend);
    if (y && out_dtype != WGT_F32) y = wgt_cast(y, WGT_F32);
    wgt_tensor *gu = wgt_linear_ex(x, w, NULL, out_dtype);
    wgt_tensor *in[2] = {gu ? wgt_slice(gu, 1, 0, N, 2) : NULL, gu ? wgt_slice(gu, 1, 1, N, 2) : NULL};
    wgt_tensor *y2 = in[0] && in[1] ? wgt_fused(ctx, "a / (1 + exp(-a)) * b", in, 2) : NULL;
    if (y2 && out_dtype != WGT_F32) y2 = wgt_cast(y2, WGT_F32);
    bool read = y && y2 && wgt_tensor_read(y, got, (size_t)(M * F) * 4) == WGT_OK &&
                wgt_tensor_read(y2, two, (size_t)(M * F) * 4) == WGT_OK;
    CHECK(read, "%s linear_swiglu %s x %s -> %s [%lld, %lld] x [%lld, %lld]: %s", backend, x_f16 ? "f16" : "f32",
          w_f32 ? "f32" : "f16", wgt_dtype_name(out_dtype), (long long)M, (long long)K, (long long)K, (long long)N,
          wgt_context_error_message(ctx));
    if (read) {
        int unequal = 0, off = 0;
        const int ulps = test_ulps(ctx); /* 0 where the kernels are exact */
        const double tol = out_dtype == WGT_F32 ? 1e-5 : 3.0 / 2048; /* f16: g, u and the result rounded */
        for (int64_t m = 0; m < M; m++)
            for (int64_t i = 0; i < F; i++) {
                double g = 0, u = 0;
                for (int64_t k = 0; k < K; k++) {
                    g += (double)xf[m * K + k] * wf[2 * i * K + k];
                    u += (double)xf[m * K + k] * wf[(2 * i + 1) * K + k];
                }
                const double ref = g / (1 + exp(-g)) * u;
                /* bit for bit where test_exact_kernels, else within test_ulps of out's dtype */
                unequal += test_ulp_distance(got[m * F + i], two[m * F + i], out_dtype) > ulps;
                off += fabs(got[m * F + i] - ref) > tol * (fabs(ref) + fabs(g * u)) + 1e-5;
            }
        CHECK(unequal == 0 && off == 0,
              "%s linear_swiglu %s x %s -> %s [%lld, %lld] x [%lld, %lld]: %d outputs differ from linear_ex + "
              "fused SwiGLU, %d from the double reference", backend, x_f16 ? "f16" : "f32", w_f32 ? "f32" : "f16",
              wgt_dtype_name(out_dtype), (long long)M, (long long)K, (long long)K, (long long)N, unequal, off);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(xf), free(wf), free(xh), free(wh), free(got), free(two);
}

/* wgt_fused_assign: a "cache" buf [R, 2, 3, 8] of dtype cache_dtype; the
 * expression "where(e, a * f + b * g, a * c + b * d)" (llama_forward.c's
 * rotation) over a, b [5, 3, 1, 1, 4] (halves of a [5, 3, 8] input of dtype
 * in_dtype), tables c, d [1, 2, 4] and f, g, a pass flag e [5, 1, 1, 1, 1]
 * (1 for segment 1) into the flat run of buf from row 2 on, shaped
 * [5, 3, 1, 2, 4]. Must equal wgt_assign(dst, wgt_fused(...)) on a copy of
 * buf bit for bit (every element of buf), and a double reference. */
static void check_fused_assign(wgt_context *ctx, const char *backend, wgt_dtype in_dtype, wgt_dtype cache_dtype)
{
    uint32_t seed = (uint32_t)(in_dtype * 31 + cache_dtype * 7 + 5);
    const int64_t R = 6, S = 5, J = 3, D = 8, nbuf = R * 2 * J * D, nx = S * J * D;
    float x[5 * 3 * 8], tab[4][8], pass[5] = {0, 1, 0, 0, 0}, bufv[6 * 2 * 3 * 8], got[6 * 2 * 3 * 8],
        two[6 * 2 * 3 * 8];
    uint16_t xh[5 * 3 * 8];
    for (int64_t i = 0; i < nx; i++) {
        x[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 1000.0f;
        xh[i] = test_f32_to_f16(x[i]);
        if (in_dtype == WGT_F16) x[i] = test_f16_to_f32(xh[i]);
    }
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 8; i++) tab[t][i] = test_f16_to_f32(test_f32_to_f16(((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 1000.0f));
    for (int64_t i = 0; i < nbuf; i++) bufv[i] = (float)(i % 13) - 6.0f;
    wgt_scope_push(ctx);
    wgt_tensor *xt = in_dtype == WGT_F16 ? wgt_tensor_from_host(ctx, WGT_F16, 3, (int64_t[]){S, J, D}, xh)
                                          : wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){S, J, D}, x);
    wgt_tensor *tabs[4];
    for (int t = 0; t < 4; t++) tabs[t] = wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){1, 2, 4}, tab[t]);
    wgt_tensor *in[7] = {wgt_unsqueeze(wgt_unsqueeze(wgt_slice(xt, 2, 0, 4, 1), 2), 3),
                         wgt_unsqueeze(wgt_unsqueeze(wgt_slice(xt, 2, 4, 8, 1), 2), 3),
                         tabs[0], tabs[1], wgt_tensor_from_host(ctx, WGT_F32, 5, (int64_t[]){S, 1, 1, 1, 1}, pass),
                         tabs[2], tabs[3]};
    const char *expr = "where(e, a * f + b * g, a * c + b * d)";
    wgt_tensor *bufs[2];
    for (int k = 0; k < 2; k++) {
        wgt_tensor *b = wgt_tensor_from_host(ctx, WGT_F32, 4, (int64_t[]){R, 2, J, D}, bufv);
        bufs[k] = b && cache_dtype != WGT_F32 ? wgt_cast(b, cache_dtype) : b;
    }
    wgt_tensor *dsts[2];
    for (int k = 0; k < 2; k++) { /* elements 2 rows in, 5 3 8 of them */
        wgt_tensor *flat = wgt_reshape(bufs[k], 1, (int64_t[]){nbuf});
        dsts[k] = wgt_reshape(wgt_slice(flat, 0, 2 * 2 * J * D, 2 * 2 * J * D + nx, 1), 5, (int64_t[]){S, J, 1, 2, 4});
    }
    wgt_status s1 = wgt_fused_assign(dsts[0], expr, in, 7);
    wgt_status s2 = wgt_assign(dsts[1], wgt_fused(ctx, expr, in, 7));
    wgt_tensor *r1 = bufs[0] && cache_dtype != WGT_F32 ? wgt_cast(bufs[0], WGT_F32) : bufs[0];
    wgt_tensor *r2 = bufs[1] && cache_dtype != WGT_F32 ? wgt_cast(bufs[1], WGT_F32) : bufs[1];
    const bool read = s1 == WGT_OK && s2 == WGT_OK && r1 && r2 && wgt_tensor_read(r1, got, sizeof(got)) == WGT_OK &&
                      wgt_tensor_read(r2, two, sizeof(two)) == WGT_OK;
    CHECK(read, "%s fused_assign %s -> %s: %s", backend, wgt_dtype_name(in_dtype), wgt_dtype_name(cache_dtype),
          wgt_context_error_message(ctx));
    if (read) {
        int unequal = 0, off = 0, touched = 0;
        for (int64_t i = 0; i < nbuf; i++) {
            unequal += memcmp(&got[i], &two[i], 4) != 0;
            const int64_t e = i - 2 * 2 * J * D; /* element of the output [S, J, 1, 2, 4] */
            if (e < 0 || e >= nx) {
                touched += got[i] != bufv[i];
                continue;
            }
            const int64_t seg = e / (J * D), j = e / D % J, half = e / 4 % 2, c = e % 4;
            const double x1 = x[(seg * J + j) * D + c], x2 = x[(seg * J + j) * D + 4 + c];
            const int lo = pass[seg] != 0 ? 2 : 0;
            const double ref = x1 * tab[lo][half * 4 + c] + x2 * tab[lo + 1][half * 4 + c];
            off += fabs(got[i] - ref) > (cache_dtype == WGT_F16 ? 1.0 / 1024 : 1e-6) * (fabs(x1) + fabs(x2)) + 1e-6;
        }
        CHECK(unequal == 0 && off == 0 && touched == 0,
              "%s fused_assign %s -> %s: %d elements differ from assign(fused), %d from the double reference, %d "
              "outside dst changed", backend, wgt_dtype_name(in_dtype), wgt_dtype_name(cache_dtype), unequal, off,
              touched);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

static void check_fused_assign_all(wgt_context *ctx, const char *backend)
{
    check_fused_assign(ctx, backend, WGT_F16, WGT_F16); /* f16 decode: f16 q/k/v, f16 cache */
    check_fused_assign(ctx, backend, WGT_F32, WGT_F16); /* quantized decode: f32 sums, f16 cache */
    check_fused_assign(ctx, backend, WGT_F32, WGT_F32); /* f32 weights */
    wgt_scope_push(ctx);
    wgt_tensor *buf = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 8});
    wgt_tensor *a = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){2, 8});
    wgt_tensor *dst = wgt_slice(buf, 0, 1, 3, 1);
    CHECK(wgt_fused_assign(dst, "a * 2", &a, 1) == WGT_OK, "%s: fused_assign [2, 8]", backend);
    CHECK(wgt_fused_assign(NULL, "a", &a, 1) == WGT_ERR_INVALID_ARGUMENT, "%s: fused_assign to NULL refused", backend);
    wgt_tensor *big = wgt_ones(ctx, WGT_F32, 3, (int64_t[]){2, 2, 8}), *other = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){3, 8});
    CHECK(wgt_fused_assign(dst, "a", &big, 1) == WGT_ERR_SHAPE_MISMATCH &&
              strstr(wgt_context_error_message(ctx), "broadcast to [2, 2, 8], not dst's [2, 8]"),
          "%s: fused_assign of [2, 2, 8] into [2, 8] refused: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "fused_assign growing shape");
    CHECK(wgt_fused_assign(dst, "a", &other, 1) == WGT_ERR_SHAPE_MISMATCH &&
              strstr(wgt_context_error_message(ctx), "do not broadcast"),
          "%s: fused_assign of [3, 8] into [2, 8] refused: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "fused_assign shape");
    wgt_tensor *own = wgt_slice(buf, 0, 0, 2, 1);
    CHECK(wgt_fused_assign(dst, "a + 1", &own, 1) == WGT_ERR_INVALID_ARGUMENT &&
              strstr(wgt_context_error_message(ctx), "storage"),
          "%s: fused_assign reading its own storage refused: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "fused_assign own storage");
    wgt_tensor *bcast = wgt_expand(wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){1, 8}), 2, (int64_t[]){2, 8});
    CHECK(wgt_fused_assign(bcast, "a", &a, 1) == WGT_ERR_INVALID_ARGUMENT,
          "%s: fused_assign into a broadcast view refused: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "fused_assign broadcast dst");
    CHECK(wgt_fused_assign(dst, "a +", &a, 1) == WGT_ERR_INVALID_ARGUMENT, "%s: fused_assign of a bad expression refused",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "fused_assign expression");
    float got[32];
    CHECK(wgt_tensor_read(buf, got, sizeof(got)) == WGT_OK && got[0] == 0 && got[8] == 2 && got[23] == 2 && got[24] == 0,
          "%s: fused_assign [2, 8] wrote rows 1 and 2 only", backend);
    wgt_scope_pop(ctx);
}

static void check_linear_swiglu_all(wgt_context *ctx, const char *backend)
{
    check_linear_swiglu(ctx, backend, 1, 70, 256, false, false, WGT_F16);   /* decode: the GEMV's epilogue */
    check_linear_swiglu(ctx, backend, 1, 300, 2048, false, false, WGT_F16); /* the unrolled loop, 8 rows a group */
    check_linear_swiglu(ctx, backend, 1, 35, 512, true, false, WGT_F16);    /* f16 x; F odd: a last half group */
    check_linear_swiglu(ctx, backend, 1, 70, 256, false, false, WGT_F32);   /* f32 out */
    check_linear_swiglu(ctx, backend, 1, 10, 16384, false, false, WGT_F16); /* 256 lanes a row: two calls */
    check_linear_swiglu(ctx, backend, 1, 33, 100, false, false, WGT_F16);   /* K % 8 != 0: two calls */
    check_linear_swiglu(ctx, backend, 1, 40, 64, false, true, WGT_F32);     /* f32 weights: two calls */
    check_linear_swiglu(ctx, backend, 5, 70, 96, false, false, WGT_F16);    /* prefill: two calls */
    check_linear_swiglu(ctx, backend, 37, 70, 96, true, false, WGT_F32);
    wgt_context *kc = with_knobs(ctx, (const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL}); /* no shader-f16 */
    check_linear_swiglu(kc, backend, 1, 70, 256, false, false, WGT_F16);
    knobs_done(kc, ctx);
    wgt_execution_stats s0, s1;
    if (wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU && wgt_execution_stats_get(ctx, &s0) == WGT_OK) {
        wgt_scope_push(ctx); /* decode's shape is one dispatch: projection and SwiGLU */
        wgt_tensor *xd = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 256});
        wgt_tensor *wd = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){140, 256});
        wgt_synchronize(ctx);
        wgt_execution_stats_get(ctx, &s0);
        wgt_tensor *yd = wgt_linear_swiglu_ex(xd, wd, WGT_F16);
        wgt_execution_stats_get(ctx, &s1);
        CHECK(yd && s1.dispatches - s0.dispatches == 1, "%s: decode linear_swiglu took %llu dispatches (1 expected)",
              backend, (unsigned long long)(s1.dispatches - s0.dispatches));
        wgt_scope_pop(ctx);
    }
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 8}), *w3 = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){3, 8});
    CHECK(wgt_linear_swiglu_ex(x, w3, WGT_F16) == NULL, "%s: linear_swiglu of 3 rows refused", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "linear_swiglu odd rows");
    wgt_tensor *w4 = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 8});
    wgt_tensor_set_requires_grad(w4, true);
    CHECK(wgt_linear_swiglu_ex(x, w4, WGT_F32) == NULL, "%s: linear_swiglu with grad refused", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "linear_swiglu with grad");
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

/* wgt_rms_norm_linear_ex: x [M, K] f32 (at element offset x_offset), an f32
 * norm weight [K], weight [N, K] f16 (or f32: w_f32), swiglu or not, ->
 * out_dtype. The result must equal, bit for bit, the calls it stands for
 * (wgt_rms_norm, then wgt_linear_ex or wgt_linear_swiglu_ex), except where
 * the norm kernel sums a row's squares in another order than the prologue
 * (WebGPU's subgroup norm on an H200 since 2026-11-28: up to 108 of 300
 * outputs an ulp or a few apart, found 2026-11-29), and a double reference
 * within the roundings. On WebGPU the decode shapes (one row, f16
 * rows of 16-byte words, K * 4 bytes in workgroup memory) normalize in the
 * GEMV's prologue; the rest run the NORM kernel, then the product. */
static void check_rms_norm_linear(wgt_context *ctx, const char *backend, int64_t M, int64_t N, int64_t K,
                                  int64_t x_offset, bool w_f32, bool swiglu, wgt_dtype out_dtype)
{
    uint32_t seed = (uint32_t)(M * 23 + N * 7 + K + x_offset * 3 + w_f32 * 900 + swiglu * 77 + out_dtype);
    const int64_t nx = M * K + x_offset, F = swiglu ? N / 2 : N;
    const double eps = 1e-5;
    float *xf = malloc((size_t)nx * sizeof(float)), *g = malloc((size_t)K * sizeof(float));
    float *wf = malloc((size_t)(N * K) * sizeof(float)), *got = malloc((size_t)(M * F) * sizeof(float));
    float *two = malloc((size_t)(M * F) * sizeof(float));
    uint16_t *wh = malloc((size_t)(N * K) * 2);
    for (int64_t i = 0; i < nx; i++) xf[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 250000.0f;
    for (int64_t i = 0; i < K; i++) g[i] = 0.5f + (float)(test_xorshift(&seed) % 1001) / 1000.0f;
    const float scale = 2.0f / sqrtf((float)K);
    for (int64_t i = 0; i < N * K; i++) {
        wf[i] = ((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 1000.0f * scale;
        wh[i] = test_f32_to_f16(wf[i]);
        if (!w_f32) wf[i] = test_f16_to_f32(wh[i]);
    }
    wgt_scope_push(ctx);
    wgt_tensor *xall = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){nx}, xf);
    wgt_tensor *x = wgt_reshape(wgt_slice(xall, 0, x_offset, nx, 1), 2, (int64_t[]){M, K});
    wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){K}, g);
    wgt_tensor *w = w_f32 ? wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, wf)
                          : wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, wh);
    wgt_tensor *y = wgt_rms_norm_linear_ex(x, gt, eps, w, out_dtype, swiglu);
    CHECK(!y || (wgt_tensor_dtype(y) == out_dtype && wgt_tensor_dim(y, 1) == F), "%s rms_norm_linear: result", backend);
    if (y && out_dtype != WGT_F32) y = wgt_cast(y, WGT_F32);
    wgt_tensor *h = wgt_rms_norm(x, gt, eps);
    wgt_tensor *y2 = swiglu ? wgt_linear_swiglu_ex(h, w, out_dtype) : wgt_linear_ex(h, w, NULL, out_dtype);
    if (y2 && out_dtype != WGT_F32) y2 = wgt_cast(y2, WGT_F32);
    bool read = y && y2 && wgt_tensor_read(y, got, (size_t)(M * F) * 4) == WGT_OK &&
                wgt_tensor_read(y2, two, (size_t)(M * F) * 4) == WGT_OK;
    CHECK(read, "%s rms_norm_linear [%lld, %lld] x %s [%lld, %lld]%s -> %s: %s", backend, (long long)M, (long long)K,
          w_f32 ? "f32" : "f16", (long long)N, (long long)K, swiglu ? " swiglu" : "", wgt_dtype_name(out_dtype),
          wgt_context_error_message(ctx));
    if (read) {
        int unequal = 0, off = 0;
        const int ulps = test_ulps(ctx); /* 0 where the kernels are exact */
        const double tol = out_dtype == WGT_F32 ? 2e-5 : 3.0 / 2048;
        double *hn = malloc((size_t)K * sizeof(double));
        for (int64_t m = 0; m < M; m++) {
            double ss = 0;
            for (int64_t k = 0; k < K; k++) ss += (double)xf[x_offset + m * K + k] * xf[x_offset + m * K + k];
            const double r = 1.0 / sqrt(ss / (double)K + eps);
            for (int64_t k = 0; k < K; k++) hn[k] = xf[x_offset + m * K + k] * r * g[k];
            for (int64_t i = 0; i < F; i++) {
                double s0 = 0, s1 = 0, a0 = 0, a1 = 0; /* the sums and the sums of |terms| */
                const int64_t r0 = swiglu ? 2 * i : i;
                for (int64_t k = 0; k < K; k++) {
                    s0 += hn[k] * wf[r0 * K + k];
                    a0 += fabs(hn[k] * wf[r0 * K + k]);
                    if (swiglu) s1 += hn[k] * wf[(r0 + 1) * K + k], a1 += fabs(hn[k] * wf[(r0 + 1) * K + k]);
                }
                const double ref = swiglu ? s0 / (1 + exp(-s0)) * s1 : s0;
                const double mag = swiglu ? fabs(ref) + fabs(s0 * s1) : fabs(ref) + 1.0;
                /* the two calls' values, except that the norm kernel may sum a row's squares in
                 * another order than the prologue (WebGPU's subgroup norm on NVIDIA: rstd 1 ulp
                 * apart), which moves each product term by an ulp or two: 8 ulps of the sum of
                 * |terms| (with SwiGLU, of gate and up each), plus a rounding of f16 out */
                const double g0 = fabs(got[m * F + i] - two[m * F + i]);
                const double order = 8 * 0x1p-24 * (swiglu ? a0 * (fabs(s1) + a1) + a1 * (fabs(s0) + a0) : a0) +
                                     (out_dtype == WGT_F16 ? fabs(two[m * F + i]) * 0x1p-10 : 0.0);
                unequal += test_ulp_distance(got[m * F + i], two[m * F + i], out_dtype) > ulps && g0 > order;
                off += fabs(got[m * F + i] - ref) > tol * mag + 1e-5;
            }
        }
        free(hn);
        CHECK(unequal == 0 && off == 0,
              "%s rms_norm_linear [%lld, %lld] (x offset %lld) x %s [%lld, %lld]%s -> %s: %d outputs differ from "
              "rms_norm + linear, %d from the double reference", backend, (long long)M, (long long)K,
              (long long)x_offset, w_f32 ? "f32" : "f16", (long long)N, (long long)K, swiglu ? " swiglu" : "",
              wgt_dtype_name(out_dtype), unequal, off);
    }
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(xf), free(g), free(wf), free(got), free(two), free(wh);
}

/* The largest K (a multiple of 8) whose row the decode GEMV's norm prologue
 * could stage beside 1 KiB of partial sums: at two rows an invocation they
 * take 2 KiB, past the device's workgroup memory (the prologue then must
 * not be taken). 2048 on the CPU. */
static int64_t norm_edge_k(wgt_context *ctx)
{
    wgt_adapter_info ai;
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU || wgt_context_adapter_info(ctx, &ai) != WGT_OK) return 2048;
    return ((int64_t)ai.limits.max_compute_workgroup_storage_size - 1024) / 4 / 8 * 8;
}

static void check_rms_norm_linear_all(wgt_context *ctx, const char *backend)
{
    check_rms_norm_linear(ctx, backend, 1, 70, 256, 0, false, false, WGT_F16);    /* decode: the GEMV's prologue */
    check_rms_norm_linear(ctx, backend, 1, 300, 2048, 8, false, false, WGT_F32);  /* 256 norm threads, offset x */
    check_rms_norm_linear(ctx, backend, 1, 140, 64, 0, false, true, WGT_F16);     /* with the SwiGLU epilogue */
    check_rms_norm_linear(ctx, backend, 1, 600, 2048, 0, false, true, WGT_F16);
    check_rms_norm_linear(ctx, backend, 1, 70, 2080, 0, false, false, WGT_F16);   /* > 2 slots a thread of 256 */
    check_rms_norm_linear(ctx, backend, 1, 40, 8192, 0, false, false, WGT_F32);   /* past workgroup memory: 2 calls */
    check_rms_norm_linear(ctx, backend, 1, 33, 100, 0, false, false, WGT_F32);    /* K % 8 != 0: 2 calls */
    check_rms_norm_linear(ctx, backend, 1, 40, 64, 0, true, false, WGT_F32);      /* f32 weights: 2 calls */
    check_rms_norm_linear(ctx, backend, 5, 70, 96, 0, false, true, WGT_F16);      /* prefill: 2 (3) calls */
    wgt_context *kc = with_knobs(ctx, (const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL});
    check_rms_norm_linear(kc, backend, 1, 70, 256, 0, false, true, WGT_F16);
    knobs_done(kc, ctx);
    kc = with_knobs(ctx, (const char *[]){"WGT_GEMV_RPT", "2", NULL}); /* the row at the workgroup memory's edge */
    check_rms_norm_linear(kc, backend, 1, 70, norm_edge_k(kc), 0, false, false, WGT_F32);
    check_rms_norm_linear(kc, backend, 1, 70, norm_edge_k(kc), 0, false, true, WGT_F32);
    knobs_done(kc, ctx);
    wgt_execution_stats s0, s1;
    if (wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU && wgt_execution_stats_get(ctx, &s0) == WGT_OK) {
        wgt_scope_push(ctx); /* decode's shape is one dispatch: norm, projection and SwiGLU */
        wgt_tensor *xd = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 256}), *gd = wgt_ones(ctx, WGT_F32, 1, (int64_t[]){256});
        wgt_tensor *wd = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){140, 256});
        wgt_synchronize(ctx);
        wgt_execution_stats_get(ctx, &s0);
        wgt_tensor *yd = wgt_rms_norm_linear_ex(xd, gd, 1e-6, wd, WGT_F16, true);
        wgt_execution_stats_get(ctx, &s1);
        CHECK(yd && s1.dispatches - s0.dispatches == 1, "%s: decode rms_norm_linear took %llu dispatches (1 expected)",
              backend, (unsigned long long)(s1.dispatches - s0.dispatches));
        wgt_scope_pop(ctx);
    }
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 8}), *g8 = wgt_ones(ctx, WGT_F32, 1, (int64_t[]){8});
    wgt_tensor *w = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){4, 8});
    CHECK(wgt_rms_norm_linear_ex(x, wgt_ones(ctx, WGT_F32, 1, (int64_t[]){7}), 1e-5, w, WGT_F32, false) == NULL,
          "%s: rms_norm_linear with a [7] norm weight refused", backend);
    /* composed off the kernel's case (the weight's rows): the op named first, then wgt_rms_norm's shapes */
    CHECK(strncmp(wgt_context_error_message(ctx), "wgt_rms_norm_linear_ex: wgt_rms_norm: ", 38) == 0 &&
              strstr(wgt_context_error_message(ctx), "[7]"),
          "%s: rms_norm_linear's message: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rms_norm_linear norm weight");
    CHECK(wgt_rms_norm_linear_ex(x, g8, -1.0, w, WGT_F32, false) == NULL, "%s: rms_norm_linear eps -1 refused",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "rms_norm_linear eps");
    wgt_tensor_set_requires_grad(g8, true);
    CHECK(wgt_rms_norm_linear_ex(x, g8, 1e-5, w, WGT_F32, false) == NULL, "%s: rms_norm_linear with grad refused",
          backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "rms_norm_linear with grad");
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

/* The mixed products llama runs (decode and prefill), the f16 emulation, the
 * W x form (matrix first), and the refusals of mixes that are not f32 x f16. */
static void check_mixed_all(wgt_context *ctx, const char *backend)
{
    check_mixed(ctx, backend, 1, 70, 256, false, 0, WGT_F32);    /* decode: 16-byte f16 loads, f32 vector */
    check_mixed(ctx, backend, 1, 70, 256, false, 0, WGT_F16);
    check_mixed(ctx, backend, 1, 300, 2048, false, 8, WGT_F32);  /* the unrolled loop */
    check_mixed(ctx, backend, 1, 33, 100, false, 0, WGT_F32);    /* K % 8 != 0: vec4 loads of each type */
    check_mixed(ctx, backend, 1, 40, 512, false, 3, WGT_F32);    /* odd offset: element loads */
    check_mixed(ctx, backend, 37, 70, 96, false, 0, WGT_F32);    /* prefill: tiled GEMM, edges */
    check_mixed(ctx, backend, 37, 70, 96, false, 0, WGT_F16);
    check_mixed(ctx, backend, 20, 33, 64, true, 1, WGT_F32);     /* f16 first, unaligned */
    /* split-K: parts in f32, then the reduction */
    wgt_context *kc = with_knobs(ctx, (const char *[]){"WGT_SPLITK", "2", NULL});
    check_mixed(kc, backend, 37, 70, 96, false, 0, WGT_F16);
    knobs_done(kc, ctx);
    /* x read along k copied transposed first */
    kc = with_knobs(ctx, (const char *[]){"WGT_MATMUL_CONFIG", "tile128x128k8t", NULL});
    check_mixed(kc, backend, 12, 1024, 32, false, 0, WGT_F32);
    knobs_done(kc, ctx);
    kc = with_knobs(ctx, (const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL}); /* no shader-f16 */
    check_mixed(kc, backend, 37, 70, 96, false, 0, WGT_F32);
    check_mixed(kc, backend, 1, 70, 256, false, 0, WGT_F16);
    knobs_done(kc, ctx);
    /* W [N, K] f16 @ x [K, 1] f32: the matrix is a */
    {
        const int64_t N = 45, K = 128;
        uint32_t seed = 77;
        uint16_t *w = malloc((size_t)(N * K) * 2);
        float *x = malloc((size_t)K * sizeof(float)), got[45];
        for (int64_t i = 0; i < N * K; i++) w[i] = test_f32_to_f16(((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 1000.0f);
        for (int64_t i = 0; i < K; i++) x[i] = ((float)(test_xorshift(&seed) % 2000001) - 1000000.0f) / 500000.0f;
        wgt_scope_push(ctx);
        wgt_tensor *y = wgt_matmul(wgt_tensor_from_host(ctx, WGT_F16, 2, (int64_t[]){N, K}, w),
                                   wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){K, 1}, x));
        bool read = y && wgt_tensor_dtype(y) == WGT_F32 && wgt_tensor_read(y, got, sizeof(got)) == WGT_OK;
        CHECK(read, "%s: f16 W @ f32 x gives f32: %s", backend, wgt_context_error_message(ctx));
        double err = 0;
        for (int64_t n = 0; read && n < N; n++) {
            double ref = 0;
            for (int64_t k = 0; k < K; k++) ref += (double)test_f16_to_f32(w[n * K + k]) * x[k];
            err = fmax(err, fabs(got[n] - ref));
        }
        CHECK(err <= 2e-5, "%s: f16 W @ f32 x error %.3g", backend, err);
        wgt_scope_pop(ctx);
        free(w), free(x);
    }
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){2, 8}), *wh = wgt_ones(ctx, WGT_F16, 2, (int64_t[]){8, 3});
    wgt_tensor *wi = wgt_ones(ctx, WGT_I32, 2, (int64_t[]){8, 3});
    CHECK(wgt_matmul_ex(x, wi, WGT_F32) == NULL, "%s: f32 x i32 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "f32 x i32");
    CHECK(wgt_matmul_ex(x, wh, WGT_I32) == NULL, "%s: f32 x f16 -> i32 refused", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "f32 x f16 -> i32");
    wgt_tensor_set_requires_grad(x, true);
    CHECK(wgt_matmul_ex(x, wh, WGT_F32) == NULL, "%s: f32 x f16 with grad refused", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "mixed with grad");
    wgt_no_grad_push(ctx);
    CHECK(wgt_matmul_ex(x, wh, WGT_F16) != NULL, "%s: f32 x f16 under no-grad runs", backend);
    wgt_no_grad_pop(ctx);
    wgt_scope_pop(ctx);
}

/* A K whose staged x (quant_gemv_rows: 16 bytes for each of K / 4 slots and
 * a padding slot per word) takes the device's workgroup memory less 1 KiB at
 * most: the staging once counted 1 KiB for the partial sums, which take 2
 * KiB at two rows an invocation (N = 4096 gets two), so the kernel asked for
 * more than the device allows. 4096 on the CPU (no such limit). */
static int64_t staging_edge_k(wgt_context *ctx, int bits)
{
    wgt_adapter_info ai;
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU || wgt_context_adapter_info(ctx, &ai) != WGT_OK) return 4096;
    const int64_t limit = ai.limits.max_compute_workgroup_storage_size, per_word = 128 / bits / 4;
    int64_t K = 32;
    while ((K + 32) / 4 + (K + 32) / 4 / per_word <= (limit - 1024) / 16) K += 32;
    return K;
}

static void run(wgt_context *ctx, const char *backend)
{
    if (!ctx) {
        CHECK(false, "no %s context", backend);
        return;
    }
    for (int bits = 8; bits >= 4; bits -= 4) {
        check_bits(ctx, backend, bits, 1, 70, 256); /* decode GEMV */
        check_bits(ctx, backend, bits, 1, 37, 4096); /* decode: 2 groups per invocation, a short last row block */
        check_bits(ctx, backend, bits, 1, 4096, staging_edge_k(ctx, bits)); /* x just fits: 2 rows an invocation */
        check_bits(ctx, backend, bits, 5, 33, 96);  /* a partial 4-row block */
        check_bits(ctx, backend, bits, 33, 17, 64);
        /* tiled GEMM on WebGPU (M >= 8): M = 8 exactly, odd M and N past the
         * 64 tile's edges, K of one group and of 3 (the register prefetch) */
        check_bits(ctx, backend, bits, 8, 64, 32);
        check_bits(ctx, backend, bits, 67, 130, 96);
        /* the larger tiles (8 x 4 and 8 x 8 outputs per invocation; 128 x 128
         * needs 36 KiB of workgroup memory, which lavapipe lacks: 64 x 64 then) */
        wgt_context *k = with_knobs(ctx, (const char *[]){"WGT_QUANT_TILE", "128x64", NULL});
        check_bits(k, backend, bits, 131, 129, 64);
        knobs_done(k, ctx);
        k = with_knobs(ctx, (const char *[]){"WGT_QUANT_TILE", "128x128", NULL});
        check_bits(k, backend, bits, 131, 129, 64);
        knobs_done(k, ctx);
        /* decode through the former quant_gemv, and quant_gemv_rows with
         * forced shapes: one word in flight (no unrolled step), and 8 in
         * flight over 8 invocations (K = 4096: 4 bits 128 words, so the
         * unrolled loop and its tail both run) */
        static const char *const decode_knobs[4][2] = {{"WGT_QUANT_GEMV", "1"},
                                                       {"WGT_QUANT_GEMV_ROWS", "32,1"},
                                                       {"WGT_QUANT_GEMV_ROWS", "8,8"},
                                                       {"WGT_QUANT_GEMV_SHARED", "0"}}; /* x read from storage */
        for (int d = 0; d < 4; d++) {
            k = with_knobs(ctx, (const char *[]){decode_knobs[d][0], decode_knobs[d][1], NULL});
            check_bits(k, backend, bits, 1, 37, 4096);
            check_bits(k, backend, bits, 1, 70, 224);
            knobs_done(k, ctx);
        }
        /* the old per-column kernel still answers for prefill */
        k = with_knobs(ctx, (const char *[]){"WGT_QUANT_TILED", "0", NULL});
        check_bits(k, backend, bits, 67, 130, 96);
        knobs_done(k, ctx);
    }
    check_f16_matvec(ctx, backend, 70, 256, 0);    /* decode shape, 16-byte loads */
    check_f16_matvec(ctx, backend, 300, 2048, 8);  /* 8 words per invocation: the unrolled loop */
    check_f16_matvec(ctx, backend, 33, 100, 0);    /* K % 8 != 0: vec4<f16> kernel */
    check_f16_matvec(ctx, backend, 40, 512, 3);    /* x at an odd offset: element loads */
    check_mixed_all(ctx, backend);
    check_linear_ex_all(ctx, backend);
    check_linear_swiglu_all(ctx, backend);
    check_rms_norm_linear_all(ctx, backend);
    check_fused_assign_all(ctx, backend);
    check_qlinear_ex_all(ctx, backend);
    check_refusals(ctx, backend);
    if (wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU) { /* a tile name that is not in the table is an error */
        wgt_context *bad = with_knobs(ctx, (const char *[]){"WGT_QUANT_TILE", "96x96", NULL});
        wgt_context *main_ctx = ctx;
        ctx = bad;
        wgt_scope_push(ctx);
        wgt_tensor *qw = NULL, *qs = NULL;
        wgt_quantize_weight(wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 64}), 8, &qw, &qs);
        CHECK(qw && wgt_qlinear(wgt_ones(ctx, WGT_F32, 2, (int64_t[]){16, 64}), qw, qs, 8) == NULL &&
              strstr(wgt_context_error_message(ctx), "WGT_QUANT_TILE"), "%s: WGT_QUANT_TILE=96x96 refused: %s", backend,
              wgt_context_error_message(ctx));
        check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "WGT_QUANT_TILE=96x96");
        wgt_tensor_release(qw), wgt_tensor_release(qs);
        wgt_scope_pop(ctx);
        ctx = main_ctx;
        knobs_done(bad, ctx);
    }
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s clean: %s", backend, wgt_context_error_message(ctx));
}

int main(void)
{
    wgt_context *cpu = test_cpu_context();
    run(cpu, "cpu");
    wgt_context_destroy(cpu);
    wgt_context *gpu = test_webgpu_context();
    run(gpu, "webgpu");
    wgt_context_destroy(gpu);
    return test_summary();
}
