/* wgt_qlinear at WGT_MATMUL_PRECISION_MEDIUM (backend.h's int8_x): x is
 * quantized per row and group of 32 like the weights, and the product sums
 * integer code products per group. Both backends, against a reference worked
 * out here from wgtensor.h's definition (x's codes and scales computed on the
 * host, the weights' codes and scales read back), and against the f32 product
 * of HIGHEST precision:
 *  - rel L2 <= 1e-5 against the definition, for 8- and 4-bit weights, M from
 *    2 to 131, N past the tiles' edges, K of 1 to 3 groups, every tile of
 *    WebGPU's quant_matmul_dp4a forced (WGT_QUANT_DP4A_TILE) with 1, 2 and 4
 *    groups a slice (WGT_QUANT_DP4A_GPS; K of 3 groups ends a slice short);
 *  - round-to-even codes: a group whose max is 127 has s = 1 exactly, so x =
 *    2.5, 3.5, -2.5, -3.5, 0.5 must count as 2, 4, -2, -4, 0 (exact sums);
 *  - a group of zeros (s = 0) adds nothing; huge values stay finite; a group
 *    holding an infinity or a NaN makes its row's sums NaN, and only its row's;
 *  - the path runs only when asked: HIGHEST gives the f32 product, MEDIUM
 *    differs from it by the int8 rounding of x (between 1e-4 and 2e-2 rel
 *    L2);
 *  - one row (LLM decode) too, plain and fused (norm, f16 x, bias, SwiGLU,
 *    the rope call), x normalized before it is quantized: rel L2 <= 1e-5
 *    against the definition (WebGPU: quant_gemv_rows' INT8_X, and the
 *    two-pass kernels past its workgroup memory or with WGT_QUANT_GEMV=0);
 *  - a tile name not in the table is refused with a message.
 */
#define _POSIX_C_SOURCE 200809L
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

/* The definition: out[m, n] = sum over groups of isum * (s_x * s_w), isum the
 * exact integer sum of the group's code products (double sums here). */
static void reference(const float *x, const int32_t *q, const float *sw, int bits, int64_t M, int64_t N, int64_t K,
                      double *ref)
{
    const int64_t G = K / 32;
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) ref[m * N + n] = 0;
        for (int64_t g = 0; g < G; g++) {
            const float *xg = x + m * K + g * 32;
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xg[j]));
            const float s = amax * (1.0f / 127.0f); /* 1/127 rounded to f32, as defined */
            int cx[32];
            for (int j = 0; j < 32; j++) {
                volatile float v = amax > 0 ? xg[j] / s : 0.0f; /* one f32 division, as defined */
                double c = nearbyint((double)v);                /* the default mode: ties to even */
                cx[j] = (int)(c > 127 ? 127 : c < -127 ? -127 : c);
            }
            for (int64_t n = 0; n < N; n++) {
                long isum = 0;
                for (int j = 0; j < 32; j++) isum += cx[j] * (long)code_of(q, bits, K, n, g * 32 + j);
                ref[m * N + n] += (double)isum * (double)(s * sw[n * G + g]);
            }
        }
    }
}

static double rel_l2(const float *got, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Random x's values whose x / s lies within 1e-4 of a rounding boundary
 * (k + 1/2), moved 1e-3 s away from it: the definition lets a GPU's division
 * (WGSL: within 2.5 ulp) round those to either code, which the exact check
 * below cannot allow; ties themselves are checked exactly in check_exact. An
 * H200 flipped one such code of 131 x 64 (rel L2 1.65e-4). The group's max
 * (x / s = +-127) is never near a boundary, so s does not change. */
static void move_off_ties(float *x, int64_t n)
{
    for (int64_t g = 0; g < n / 32; g++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[g * 32 + j]));
        const float s = amax * (1.0f / 127.0f);
        for (int j = 0; amax > 0 && j < 32; j++) {
            const double q = (double)x[g * 32 + j] / s, frac = fabs(q) - floor(fabs(q));
            if (fabs(frac - 0.5) < 1e-4) x[g * 32 + j] += (float)((frac < 0.5 ? -1e-3 : 1e-3) * (q < 0 ? -s : s));
        }
    }
}

/* The product at both precisions; x from `fill` (NULL: random). Checks MEDIUM
 * against the definition and (random x) its distance to HIGHEST. */
static void check(wgt_context *ctx, const char *backend, int bits, int64_t M, int64_t N, int64_t K, const float *fill)
{
    uint32_t seed = (uint32_t)(bits * 977 + M * 13 + N * 3 + K);
    float *w = malloc((size_t)(N * K) * 4), *x = malloc((size_t)(M * K) * 4), *got = malloc((size_t)(M * N) * 4);
    float *hi = malloc((size_t)(M * N) * 4), *sw = malloc((size_t)(N * K / 32) * 4);
    int32_t *q = malloc((size_t)(N * K * bits / 32) * 4);
    double *ref = malloc((size_t)(M * N) * sizeof(double));
    for (int64_t i = 0; i < N * K; i++) w[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 10000.0f;
    for (int64_t i = 0; i < M * K; i++)
        x[i] = fill ? fill[i] : ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 3000.0f;
    if (!fill) move_off_ties(x, M * K);
    wgt_scope_push(ctx);
    wgt_tensor *wt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w);
    wgt_tensor *xt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, x);
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_status st = wgt_quantize_weight(wt, bits, &qw, &qs);
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
    wgt_tensor *yh = st == WGT_OK ? wgt_qlinear(xt, qw, qs, bits) : NULL;
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_MEDIUM);
    wgt_tensor *ym = st == WGT_OK ? wgt_qlinear(xt, qw, qs, bits) : NULL;
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
    bool read = ym && yh && wgt_tensor_read(qw, q, (size_t)(N * K * bits / 32) * 4) == WGT_OK &&
                wgt_tensor_read(qs, sw, (size_t)(N * K / 32) * 4) == WGT_OK &&
                wgt_tensor_read(ym, got, (size_t)(M * N) * 4) == WGT_OK &&
                wgt_tensor_read(yh, hi, (size_t)(M * N) * 4) == WGT_OK;
    CHECK(read, "%s %d bits [%lld, %lld] x [%lld, %lld]^T: %s", backend, bits, (long long)M, (long long)K,
          (long long)N, (long long)K, wgt_context_error_message(ctx));
    if (read) {
        reference(x, q, sw, bits, M, N, K, ref);
        int finite = 0;
        for (int64_t i = 0; i < M * N; i++) finite += isfinite(got[i]) != 0;
        const double err = rel_l2(got, ref, M * N);
        CHECK(finite == M * N && err <= 1e-5, "%s %d bits M=%lld N=%lld K=%lld: rel L2 %.3g against the definition "
              "(%lld of %lld finite)", backend, bits, (long long)M, (long long)N, (long long)K, err, (long long)finite,
              (long long)(M * N));
        if (!fill) {
            double num = 0, den = 0;
            for (int64_t i = 0; i < M * N; i++) num += ((double)got[i] - hi[i]) * ((double)got[i] - hi[i]), den += (double)hi[i] * hi[i];
            const double d = sqrt(num / den);
            CHECK(d > 1e-4 && d < 2e-2, "%s %d bits M=%lld: MEDIUM is %.3g (rel L2) from HIGHEST: int8 x should "
                  "show, and stay small", backend, bits, (long long)M, d);
        }
    }
    wgt_scope_pop(ctx);
    free(w), free(x), free(got), free(hi), free(sw), free(q), free(ref);
}

/* Exact cases: ties to even, a zero group, huge values. */
static void check_exact(wgt_context *ctx, const char *backend)
{
    const int64_t M = 3, K = 64;
    float x[3 * 64];
    static const float ties[6] = {2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f};
    for (int64_t i = 0; i < M * K; i++) x[i] = 0;
    x[0] = 127.0f; /* row 0, group 0: s = 1 */
    for (int j = 0; j < 6; j++) x[1 + j] = ties[j];
    for (int j = 0; j < 32; j++) x[32 + j] = (float)(j - 16) * 1e30f; /* row 0, group 1: huge */
    /* row 1: group 0 zeros, group 1 ones; row 2 all zeros */
    for (int j = 0; j < 32; j++) x[K + 32 + j] = 1.0f;
    check(ctx, backend, 8, M, 5, K, x);
    check(ctx, backend, 4, M, 5, K, x);
    /* the tie codes exactly: weights all 1 (8 bits: code 127, s = 1 / 127) */
    wgt_scope_push(ctx);
    wgt_tensor *qw = NULL, *qs = NULL;
    float xr[2 * 32];
    for (int i = 0; i < 64; i++) xr[i] = i < 32 ? x[i] : 0.0f;
    xr[32] = 127.0f, xr[33] = 2.5f; /* row 1: 127 (127), 2.5 (2) */
    wgt_quantize_weight(wgt_ones(ctx, WGT_F32, 2, (int64_t[]){1, 32}), 8, &qw, &qs);
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_MEDIUM);
    wgt_tensor *y = qw ? wgt_qlinear(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){2, 32}, xr), qw, qs, 8) : NULL;
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
    float got[2] = {0, 0};
    bool read = y && wgt_tensor_read(y, got, sizeof(got)) == WGT_OK;
    /* row 0: codes 127 + 2 + 4 - 2 - 4 + 0 + 0 = 127 against weight codes 127
     * (s_w = 1 / 127): isum 16129; row 1: 127 + 2, isum 16383; s_x = 1 */
    const float sw = 1.0f / 127.0f, want0 = 16129.0f * (1.0f * sw), want1 = 16383.0f * (1.0f * sw);
    CHECK(read && got[0] == want0 && got[1] == want1, "%s: round-to-even codes: got %.9g, %.9g, want %.9g, %.9g",
          backend, got[0], got[1], want0, want1);
    wgt_scope_pop(ctx);
}

/* A group holding an infinity or a NaN: s = NaN, so its row's sums are NaN;
 * the other rows are untouched (the definition's last clause). */
static void check_nonfinite(wgt_context *ctx, const char *backend)
{
    const int64_t M = 3, K = 64, N = 6;
    float x[3 * 64], got[3 * 6], w[6 * 64];
    for (int i = 0; i < M * K; i++) x[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < N * K; i++) w[i] = (float)(i % 5) - 2.0f;
    x[5] = INFINITY;    /* row 0, group 0 */
    x[K + 40] = NAN;    /* row 1, group 1 */
    wgt_scope_push(ctx);
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_quantize_weight(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w), 8, &qw, &qs);
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_MEDIUM);
    wgt_tensor *y = qw ? wgt_qlinear(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, x), qw, qs, 8) : NULL;
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
    bool read = y && wgt_tensor_read(y, got, sizeof(got)) == WGT_OK;
    int nan_rows = 0, finite_row = 0;
    for (int n = 0; read && n < N; n++) {
        nan_rows += isnan(got[n]) && isnan(got[N + n]);
        finite_row += isfinite(got[2 * N + n]) != 0;
    }
    CHECK(read && nan_rows == N && finite_row == N, "%s: non-finite x: %d of %d columns NaN in rows 0 and 1, %d of %d "
          "finite in row 2 (%s)", backend, nan_rows, (int)N, finite_row, (int)N, wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
}

/* x' = wgt_rms_norm(x, g, eps) on the host as the CPU backend computes it
 * (f64 mean of squares, then (x * rstd) * g in f32). */
static void host_norm(const float *x, const float *g, double eps, int64_t K, float *out)
{
    double ss = 0;
    for (int64_t k = 0; k < K; k++) ss += (double)x[k] * x[k];
    const float rstd = (float)(1.0 / sqrt(ss / (double)K + eps));
    for (int64_t k = 0; k < K; k++) out[k] = (x[k] * rstd) * g[k];
}

/* Moves the normalized row's values off x's code ties by nudging the norm
 * weight g (which scales one element and leaves rstd alone): a GPU's rstd
 * (inverseSqrt, its own order of the sum of squares) may differ from the
 * host's by ulps, which must not move a value across a rounding boundary. */
static void norm_off_ties(const float *x, float *g, double eps, int64_t K)
{
    float *xn = malloc((size_t)K * 4);
    host_norm(x, g, eps, K, xn);
    for (int64_t grp = 0; grp < K / 32; grp++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xn[grp * 32 + j]));
        const float s = amax * (1.0f / 127.0f);
        for (int j = 0; amax > 0 && j < 32; j++) {
            const double q = (double)xn[grp * 32 + j] / s, frac = fabs(q) - floor(fabs(q));
            if (fabs(frac - 0.5) < 2e-3 && fabs(q) < 126.5) /* never the max (|q| = 127) */
                g[grp * 32 + j] *= (float)(1.0 + (frac < 0.5 ? -5e-3 : 5e-3) / fabs(q));
        }
    }
    free(xn);
}

/* One row (LLM decode) at MEDIUM, as wgt_qlinear_ex and wgt_qlinear_rope_into
 * run it: x (normalized first with the norm) quantized like the weights,
 * against the definition worked out here, rel L2 <= 1e-5; the plain call
 * also by check(). fusion: 0 norm, 1 norm with f16 x, 2 bias, 3 SwiGLU, 4 the
 * rope call with every head passed through (its sums as they are). On WebGPU
 * quant_gemv_rows' INT8_X (x's codes in workgroup memory) where they fit. */
static void check_decode(wgt_context *ctx, const char *backend, int bits, int fusion, int64_t N, int64_t K)
{
    uint32_t seed = (uint32_t)(bits * 31 + fusion * 7 + N + K);
    const bool norm = fusion == 0 || fusion == 1 || fusion == 4;
    const double eps = 1e-5;
    float *w = malloc((size_t)(N * K) * 4), *x = malloc((size_t)K * 4), *xn = malloc((size_t)K * 4);
    float *g = malloc((size_t)K * 4), *bias = malloc((size_t)N * 4), *got = malloc((size_t)N * 4);
    float *sw = malloc((size_t)(N * K / 32) * 4);
    int32_t *q = malloc((size_t)(N * K * bits / 32) * 4);
    double *ref = malloc((size_t)N * sizeof(double));
    for (int64_t i = 0; i < N * K; i++) w[i] = ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 10000.0f;
    /* f16 x: multiples of 1/64 below 16 in magnitude, exact in f16 */
    for (int64_t i = 0; i < K; i++)
        x[i] = fusion == 1 ? (float)((int)(test_xorshift(&seed) % 2001) - 1000) / 64.0f
                           : ((float)(test_xorshift(&seed) % 20001) - 10000.0f) / 3000.0f;
    for (int64_t i = 0; i < K; i++) g[i] = 0.5f + (float)(test_xorshift(&seed) % 1000) / 1000.0f;
    for (int64_t i = 0; i < N; i++) bias[i] = ((float)(test_xorshift(&seed) % 2001) - 1000.0f) / 100.0f;
    if (norm) norm_off_ties(x, g, eps, K);
    else move_off_ties(x, K);
    if (norm) host_norm(x, g, eps, K, xn);
    else memcpy(xn, x, (size_t)K * 4);
    wgt_scope_push(ctx);
    wgt_tensor *xt = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, x);
    if (fusion == 1) xt = wgt_cast(xt, WGT_F16);
    wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){K}, g);
    wgt_tensor *bt = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){N}, bias);
    wgt_tensor *qw = NULL, *qs = NULL;
    wgt_status st = wgt_quantize_weight(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w), bits, &qw, &qs);
    wgt_qlinear_fusion f = {.norm_weight = norm ? gt : NULL, .norm_eps = eps, .bias = fusion == 2 ? bt : NULL,
                            .swiglu = fusion == 3};
    const int64_t n_out = fusion == 3 ? N / 2 : N;
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_MEDIUM);
    wgt_tensor *y = NULL;
    if (st == WGT_OK && fusion == 4) {
        /* heads of 16: a table [4, 8] of any values, every head passed through */
        wgt_tensor *table = wgt_ones(ctx, WGT_F32, 2, (int64_t[]){4, 8});
        y = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){1, N});
        if (y && wgt_qlinear_rope_into(y, xt, qw, qs, bits, gt, eps, table, 0, N / 16) != WGT_OK) y = NULL;
    } else if (st == WGT_OK) {
        y = wgt_qlinear_ex(xt, qw, qs, bits, &f);
    }
    wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
    bool read = y && wgt_tensor_read(qw, q, (size_t)(N * K * bits / 32) * 4) == WGT_OK &&
                wgt_tensor_read(qs, sw, (size_t)(N * K / 32) * 4) == WGT_OK &&
                wgt_tensor_read(y, got, (size_t)n_out * 4) == WGT_OK;
    static const char *const names[5] = {"norm", "norm, f16 x", "bias", "swiglu", "rope (passed through)"};
    CHECK(read, "%s %d bits, one row, %s, [1, %lld] x [%lld, %lld]^T: %s", backend, bits, names[fusion], (long long)K,
          (long long)N, (long long)K, wgt_context_error_message(ctx));
    if (read) {
        reference(xn, q, sw, bits, 1, N, K, ref);
        if (fusion == 2)
            for (int64_t n = 0; n < N; n++) ref[n] += bias[n];
        if (fusion == 3)
            for (int64_t i = 0; i < N / 2; i++) ref[i] = ref[2 * i] / (1.0 + exp(-ref[2 * i])) * ref[2 * i + 1];
        const double err = rel_l2(got, ref, n_out);
        CHECK(err <= 1e-5, "%s %d bits, one row, %s, N=%lld K=%lld: rel L2 %.3g against the definition", backend,
              bits, names[fusion], (long long)N, (long long)K, err);
    }
    wgt_scope_pop(ctx);
    free(w), free(x), free(xn), free(g), free(bias), free(got), free(sw), free(q), free(ref);
}

static void run(wgt_context *ctx, const char *backend)
{
    if (!ctx) {
        CHECK(false, "no %s context", backend);
        return;
    }
    for (int bits = 8; bits >= 4; bits -= 4) {
        check(ctx, backend, bits, 2, 33, 64, NULL);
        check(ctx, backend, bits, 8, 64, 32, NULL);
        check(ctx, backend, bits, 67, 130, 96, NULL);
        check(ctx, backend, bits, 131, 129, 64, NULL);
    }
    check_exact(ctx, backend);
    check_nonfinite(ctx, backend);
    /* one row: K of 2 groups to past a lane's unrolled words (4-bit: 64 words
     * a row at 2048), and K = 32768, whose codes pass the workgroup memory
     * (WebGPU: the two-pass kernels) */
    for (int bits = 8; bits >= 4; bits -= 4) {
        check(ctx, backend, bits, 1, 40, 64, NULL);
        check(ctx, backend, bits, 1, 72, 2048, NULL);
        check(ctx, backend, bits, 1, 8, 32768, NULL);
        for (int fusion = 0; fusion < 5; fusion++)
            check_decode(ctx, backend, bits, fusion, 64, fusion == 1 ? 96 : 1024);
        /* the norm prologue's slots past 2 a thread of 256 (its first two are loaded up front) */
        check_decode(ctx, backend, bits, 0, 32, 2080);
    }
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU) return;
    /* WGT_QUANT_GEMV=0: one row takes the two-pass kernels, fused calls compose */
    wgt_context *two = test_context_env(NULL, (const char *[]){"WGT_QUANT_GEMV", "0", NULL});
    if (two) {
        check(two, "WGT_QUANT_GEMV=0", 4, 1, 40, 96, NULL);
        check_decode(two, "WGT_QUANT_GEMV=0", 8, 0, 64, 256);
        wgt_context_destroy(two);
    }
    static const char *const tiles[] = {"128x128", "128x64", "64x128", "64x64"};
    for (int t = 0; t < 4; t++) {
        static const char *const gps[4] = {"1", "2", "4", "2"}; /* groups per slice: odd group counts end short */
        wgt_context *k = test_context_env(NULL, (const char *[]){"WGT_QUANT_DP4A_TILE", tiles[t], "WGT_QUANT_DP4A_GPS",
                                                                 gps[t], NULL});
        if (!k) continue;
        check(k, tiles[t], 8, 131, 129, 96, NULL);
        check(k, tiles[t], 4, 67, 130, 64, NULL);
        wgt_context_destroy(k);
    }
    wgt_context *bad = test_context_env(NULL, (const char *[]){"WGT_QUANT_DP4A_TILE", "96x96", NULL});
    if (bad) {
        wgt_scope_push(bad);
        wgt_tensor *qw = NULL, *qs = NULL;
        wgt_quantize_weight(wgt_ones(bad, WGT_F32, 2, (int64_t[]){4, 64}), 8, &qw, &qs);
        wgt_set_matmul_precision(bad, WGT_MATMUL_PRECISION_MEDIUM);
        CHECK(qw && wgt_qlinear(wgt_ones(bad, WGT_F32, 2, (int64_t[]){16, 64}), qw, qs, 8) == NULL &&
                  strstr(wgt_context_error_message(bad), "WGT_QUANT_DP4A_TILE"),
              "WGT_QUANT_DP4A_TILE=96x96 refused: %s", wgt_context_error_message(bad));
        check_error_and_recover(bad, WGT_ERR_INVALID_ARGUMENT, "WGT_QUANT_DP4A_TILE=96x96");
        wgt_scope_pop(bad);
        wgt_context_destroy(bad);
    }
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
