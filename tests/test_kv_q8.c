/* 8-bit rows and attention over them (an LLM's 8-bit KV cache: src/ops/quant_rows.c,
 * QROWS and ATTENTION with 5 inputs), on the CPU backend and on WebGPU, against
 * a quantizer and a double-precision attention written here:
 *  - wgt_quantize_rows_into: codes and scales of f32 and f16 rows written
 *    into strided views (the rows [pos0, pos0 + T) of a cache [2, Hkv,
 *    context, D/4]); groups of zeros (s = 0), a NaN (s = NaN, codes 0), exact
 *    ties of x / s (round to even) and values at +-amax (codes +-127);
 *  - wgt_dequantize_rows: code * s exactly in f32, f16 rounded once;
 *  - wgt_attention_q8: decode shapes (Tq 1-4, grouped-query heads, D 64 and
 *    128, f16 and f32 q, keys not a multiple of the 64-key chunk) take one
 *    decode pass on WebGPU (2 dispatches; also with k and v halves of shared
 *    caches [2, Hkv, context, ..] as llama's), a prefill shape (Tq 9) the
 *    dequantized copies and the float kernels; every backend within f32
 *    rounding of the reference (f16 out: half an ulp);
 *  - bad input (dtypes, shapes, shared storage, a tensor that requires grad)
 *    comes back as a status naming the call, and the context stays usable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static uint32_t rng = 4242u;
static float urand(void) { return (float)(test_xorshift(&rng) >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }

/* The 8-bit form of one row of D values, written independently of the library:
 * per group of 32, s = max|x| * (1/127) (1/127 rounded to f32) and code = x / s
 * rounded half to even. */
static void quantize_row(const float *x, int64_t D, int8_t *codes, float *scales)
{
    for (int64_t g = 0; g < D / 32; g++) {
        float amax = 0.0f;
        bool finite = true;
        for (int j = 0; j < 32; j++) {
            finite = finite && isfinite(x[g * 32 + j]);
            amax = fmaxf(amax, fabsf(x[g * 32 + j]));
        }
        scales[g] = finite ? amax * (1.0f / 127.0f) : NAN;
        for (int j = 0; j < 32; j++) {
            float c = finite && amax > 0.0f ? rintf(x[g * 32 + j] / scales[g]) : 0.0f;
            codes[g * 32 + j] = (int8_t)fmaxf(-127.0f, fminf(127.0f, c));
        }
    }
}

static uint32_t pack4(const int8_t *c)
{
    return (uint32_t)(uint8_t)c[0] | (uint32_t)(uint8_t)c[1] << 8 | (uint32_t)(uint8_t)c[2] << 16 |
           (uint32_t)(uint8_t)c[3] << 24;
}

static const char *name_of(wgt_context *ctx) { return wgt_context_backend(ctx) == WGT_BACKEND_CPU ? "cpu" : "webgpu"; }

/* ----------------------------------------------------------------- rows */

/* x [2, Hkv, T, D] (f32 or f16, with special groups) quantized into rows
 * [pos0, pos0 + T) of a cache [2, Hkv, context, D/4] / [.., D/32], then read
 * back whole: the written rows match the reference, the others stay zero; and
 * dequantizing those rows gives code * s. */
static void check_rows(wgt_context *ctx, bool f16)
{
    const int64_t Hkv = 3, T = 5, D = 96, context = 11, pos0 = 4, n = 2 * Hkv * T * D;
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = urand() * 3.0f;
    for (int j = 0; j < 32; j++) x[32 + j] = 0.0f;                 /* row 0, group 1: zeros */
    x[D + 5] = NAN;                                                 /* row 1, group 0: a NaN */
    for (int j = 0; j < 31; j++) x[2 * D + j] = (float)(j - 16) + 0.5f; /* row 2, group 0: s = 1, ties (x.5) */
    x[2 * D + 31] = 127.0f;
    x[2 * D + 64] = -5.0f, x[2 * D + 65] = 5.0f;                    /* row 2, group 2: +-amax */
    if (f16)
        for (int64_t i = 0; i < n; i++) x[i] = test_f16_to_f32(test_f32_to_f16(x[i]));
    int8_t *want_c = malloc((size_t)n);
    float *want_s = malloc((size_t)(n / 32) * sizeof(float));
    for (int64_t r = 0; r < n / D; r++) quantize_row(x + r * D, D, want_c + r * D, want_s + r * (D / 32));

    wgt_scope_push(ctx);
    wgt_tensor *xt;
    if (f16) {
        uint16_t *h = malloc((size_t)n * 2);
        for (int64_t i = 0; i < n; i++) h[i] = test_f32_to_f16(x[i]);
        xt = wgt_tensor_from_host(ctx, WGT_F16, 4, (int64_t[]){2, Hkv, T, D}, h);
        free(h);
    } else {
        xt = wgt_tensor_from_host(ctx, WGT_F32, 4, (int64_t[]){2, Hkv, T, D}, x);
    }
    wgt_tensor *codes = wgt_zeros(ctx, WGT_I32, 4, (int64_t[]){2, Hkv, context, D / 4});
    wgt_tensor *scales = wgt_zeros(ctx, WGT_F32, 4, (int64_t[]){2, Hkv, context, D / 32});
    wgt_tensor *cw = wgt_slice(codes, 2, pos0, pos0 + T, 1), *sw = wgt_slice(scales, 2, pos0, pos0 + T, 1);
    wgt_status st = wgt_quantize_rows_into(cw, sw, xt);
    CHECK(st == WGT_OK, "%s f16 %d: wgt_quantize_rows_into: %s", name_of(ctx), f16, wgt_context_error_message(ctx));
    const int64_t cn = 2 * Hkv * context * D / 4, sn = 2 * Hkv * context * D / 32;
    uint32_t *got_c = malloc((size_t)cn * 4);
    float *got_s = malloc((size_t)sn * 4);
    bool read = st == WGT_OK && wgt_tensor_read(codes, got_c, (size_t)cn * 4) == WGT_OK &&
                wgt_tensor_read(scales, got_s, (size_t)sn * 4) == WGT_OK;
    CHECK(read, "%s: reading the cache: %s", name_of(ctx), wgt_context_error_message(ctx));
    int bad_codes = 0, bad_scales = 0, dirty = 0;
    for (int64_t a = 0; read && a < 2 * Hkv; a++)
        for (int64_t t = 0; t < context; t++) {
            const bool written = t >= pos0 && t < pos0 + T;
            const int64_t r = a * T + (t - pos0); /* row of x */
            for (int64_t w = 0; w < D / 4; w++) {
                const uint32_t got = got_c[(a * context + t) * (D / 4) + w];
                if (!written) dirty += got != 0;
                else bad_codes += got != pack4(want_c + r * D + 4 * w);
            }
            for (int64_t g = 0; g < D / 32; g++) {
                const float got = got_s[(a * context + t) * (D / 32) + g];
                if (!written) dirty += got != 0.0f;
                else bad_scales += !(got == want_s[r * (D / 32) + g] || (isnan(got) && isnan(want_s[r * (D / 32) + g])));
            }
        }
    CHECK(bad_codes == 0 && bad_scales == 0 && dirty == 0, "%s f16 %d: %d code words and %d scales differ, %d "
          "values outside the written rows changed", name_of(ctx), f16, bad_codes, bad_scales, dirty);

    /* dequantized back: code * s, in f32 exactly, in f16 rounded once */
    wgt_tensor *back = wgt_dequantize_rows(cw, sw, f16 ? WGT_F16 : WGT_F32);
    if (back && f16) back = wgt_cast(back, WGT_F32);
    float *got_x = malloc((size_t)n * sizeof(float));
    read = back && wgt_tensor_read(back, got_x, (size_t)n * sizeof(float)) == WGT_OK;
    CHECK(read, "%s f16 %d: wgt_dequantize_rows: %s", name_of(ctx), f16, wgt_context_error_message(ctx));
    int bad = 0;
    for (int64_t i = 0; read && i < n; i++) {
        float want = (float)want_c[i] * want_s[i / 32];
        if (f16) want = test_f16_to_f32(test_f32_to_f16(want));
        bad += !(got_x[i] == want || (isnan(got_x[i]) && isnan(want)));
    }
    CHECK(read && bad == 0, "%s f16 %d: %d dequantized values differ from code * s", name_of(ctx), f16, bad);
    wgt_scope_pop(ctx);
    free(x), free(want_c), free(want_s), free(got_c), free(got_s), free(got_x);
}

/* ------------------------------------------------------------ attention */

typedef struct qcase {
    const char *name;
    int64_t H, Hkv, Tq, Tk, D, context; /* k, v: rows [0, Tk) of caches [1, Hkv, context, ..] */
    bool causal, f16;
    bool decode;                         /* WebGPU takes the decode kernel (2 dispatches) */
    bool shared;                         /* k, v: halves of caches [2, Hkv, context, ..] (llama's) */
} qcase;

/* out [H, Tq, D] in double from q and the dequantized k, v (B = 1). */
static void reference(const qcase *c, const float *q, const float *k, const float *v, double *out)
{
    const double scale = 1.0 / sqrt((double)c->D);
    double *s = malloc((size_t)c->Tk * sizeof(double));
    for (int64_t h = 0; h < c->H; h++)
        for (int64_t i = 0; i < c->Tq; i++) {
            const int64_t g = h / (c->H / c->Hkv), row = h * c->Tq + i;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < c->Tk; j++) {
                s[j] = -INFINITY;
                if (c->causal && j > i + c->Tk - c->Tq) continue;
                double d = 0;
                for (int64_t e = 0; e < c->D; e++) d += (double)q[row * c->D + e] * k[(g * c->Tk + j) * c->D + e];
                s[j] = d * scale;
                mx = fmax(mx, s[j]);
            }
            for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] = 0;
            for (int64_t j = 0; j < c->Tk; j++) {
                if (s[j] == -INFINITY) continue;
                const double p = exp(s[j] - mx);
                sum += p;
                for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] += p * v[(g * c->Tk + j) * c->D + e];
            }
            for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] /= sum;
        }
    free(s);
}

/* codes and scales of rows [Hkv, Tk, D] into the first Tk rows of zero caches
 * [1, Hkv, context, ..] (or of half `half` of caches [2, Hkv, context, ..],
 * *cc and *cs, created when NULL); *kc, *ks: the views of those rows */
static void upload_q8(wgt_context *ctx, const qcase *c, const int8_t *codes, const float *scales, wgt_tensor **kc,
                      wgt_tensor **ks, wgt_tensor **cc, wgt_tensor **cs, int half)
{
    const int64_t rows = c->Hkv * c->Tk, n = cc ? 2 : 1;
    uint32_t *words = malloc((size_t)(rows * c->D / 4) * 4);
    for (int64_t i = 0; i < rows * c->D / 4; i++) words[i] = pack4(codes + 4 * i);
    wgt_tensor *own_c = NULL, *own_s = NULL;
    if (!cc) cc = &own_c, cs = &own_s;
    if (!*cc) *cc = wgt_zeros(ctx, WGT_I32, 4, (int64_t[]){n, c->Hkv, c->context, c->D / 4});
    if (!*cs) *cs = wgt_zeros(ctx, WGT_F32, 4, (int64_t[]){n, c->Hkv, c->context, c->D / 32});
    *kc = wgt_slice(wgt_slice(*cc, 0, half, half + 1, 1), 2, 0, c->Tk, 1);
    *ks = wgt_slice(wgt_slice(*cs, 0, half, half + 1, 1), 2, 0, c->Tk, 1);
    wgt_assign(*kc, wgt_tensor_from_host(ctx, WGT_I32, 4, (int64_t[]){1, c->Hkv, c->Tk, c->D / 4}, words));
    wgt_assign(*ks, wgt_tensor_from_host(ctx, WGT_F32, 4, (int64_t[]){1, c->Hkv, c->Tk, c->D / 32}, scales));
    free(words);
}

static void check_attention(wgt_context *ctx, const qcase *c)
{
    const int64_t qn = c->H * c->Tq * c->D, kn = c->Hkv * c->Tk * c->D;
    float *q = malloc((size_t)qn * 4), *k = malloc((size_t)kn * 4), *v = malloc((size_t)kn * 4);
    for (int64_t i = 0; i < qn; i++) q[i] = urand() * 1.5f;
    for (int64_t i = 0; i < kn; i++) k[i] = urand() * 1.5f, v[i] = urand();
    if (c->f16)
        for (int64_t i = 0; i < qn; i++) q[i] = test_f16_to_f32(test_f32_to_f16(q[i]));
    int8_t *kc = malloc((size_t)kn), *vc = malloc((size_t)kn);
    float *ks = malloc((size_t)(kn / 32) * 4), *vs = malloc((size_t)(kn / 32) * 4);
    for (int64_t r = 0; r < kn / c->D; r++) {
        quantize_row(k + r * c->D, c->D, kc + r * c->D, ks + r * (c->D / 32));
        quantize_row(v + r * c->D, c->D, vc + r * c->D, vs + r * (c->D / 32));
    }
    for (int64_t i = 0; i < kn; i++) k[i] = (float)kc[i] * ks[i / 32], v[i] = (float)vc[i] * vs[i / 32];
    double *want = malloc((size_t)qn * 8);
    reference(c, q, k, v, want);

    wgt_scope_push(ctx);
    wgt_tensor *tq;
    if (c->f16) {
        uint16_t *h = malloc((size_t)qn * 2);
        for (int64_t i = 0; i < qn; i++) h[i] = test_f32_to_f16(q[i]);
        tq = wgt_tensor_from_host(ctx, WGT_F16, 4, (int64_t[]){1, c->H, c->Tq, c->D}, h);
        free(h);
    } else {
        tq = wgt_tensor_from_host(ctx, WGT_F32, 4, (int64_t[]){1, c->H, c->Tq, c->D}, q);
    }
    wgt_tensor *tkc, *tks, *tvc, *tvs;
    wgt_tensor *caches[2] = {NULL, NULL};
    upload_q8(ctx, c, kc, ks, &tkc, &tks, c->shared ? &caches[0] : NULL, c->shared ? &caches[1] : NULL, 0);
    upload_q8(ctx, c, vc, vs, &tvc, &tvs, c->shared ? &caches[0] : NULL, c->shared ? &caches[1] : NULL, c->shared);
    wgt_execution_stats before = {0}, after = {0};
    wgt_execution_stats_get(ctx, &before);
    wgt_tensor *o = wgt_attention_q8(tq, tkc, tks, tvc, tvs, c->causal);
    wgt_execution_stats_get(ctx, &after);
    if (o && c->f16) o = wgt_cast(o, WGT_F32);
    float *got = malloc((size_t)qn * 4);
    const bool read = o && wgt_tensor_read(o, got, (size_t)qn * 4) == WGT_OK;
    CHECK(read, "%s on %s: %s", c->name, name_of(ctx), wgt_context_error_message(ctx));
    double scale = 1e-3, err = 0;
    for (int64_t i = 0; i < qn; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; read && i < qn; i++) err = fmax(err, isfinite(got[i]) ? fabs(got[i] - want[i]) : INFINITY);
    /* f16 out rounds each value: half an ulp of values below 1 */
    CHECK(read && err / scale < (c->f16 ? 2e-3 : 2e-5), "%s on %s: max error %.3g", c->name, name_of(ctx),
          err / scale);
    const uint64_t dispatches = after.dispatches - before.dispatches;
    if (wgt_context_backend(ctx) != WGT_BACKEND_CPU)
        CHECK(c->decode ? dispatches == 2 : dispatches > 2, "%s: %llu dispatches (%s expected)", c->name,
              (unsigned long long)dispatches, c->decode ? "the decode kernel's 2" : "dequantize + attention");
    wgt_scope_pop(ctx);
    free(q), free(k), free(v), free(kc), free(vc), free(ks), free(vs), free(want), free(got);
}

/* ------------------------------------------------------------ bad input */

static void check_bad_input(wgt_context *ctx)
{
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 64});
    wgt_tensor *codes = wgt_zeros(ctx, WGT_I32, 2, (int64_t[]){4, 16}), *scales = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 2});
    wgt_tensor *x48 = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 48});
    CHECK(wgt_quantize_rows_into(codes, scales, x48) != WGT_OK, "D = 48 accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "quantize D 48");
    CHECK(wgt_quantize_rows_into(scales, scales, x) != WGT_OK, "f32 codes accepted");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "quantize f32 codes");
    wgt_tensor *both = wgt_zeros(ctx, WGT_I32, 2, (int64_t[]){4, 18});
    CHECK(wgt_quantize_rows_into(wgt_slice(both, 1, 0, 16, 1), wgt_slice(scales, 0, 0, 4, 1), x) == WGT_OK,
          "a slice as the codes refused: %s", wgt_context_error_message(ctx));
    wgt_tensor *xs = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 66});
    CHECK(wgt_quantize_rows_into(codes, wgt_slice(xs, 1, 64, 66, 1), wgt_slice(xs, 1, 0, 64, 1)) != WGT_OK,
          "scales in x's storage accepted");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "quantize shared storage");
    wgt_tensor *g = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 64});
    wgt_tensor_set_requires_grad(g, true);
    CHECK(wgt_quantize_rows_into(codes, scales, g) != WGT_OK, "a tensor that requires grad accepted");
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "quantize requires grad");
    CHECK(wgt_dequantize_rows(codes, scales, WGT_I32) == NULL, "i32 dequantized");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "dequantize i32");
    wgt_tensor *q = wgt_zeros(ctx, WGT_F32, 4, (int64_t[]){1, 3, 1, 64});
    wgt_tensor *kc = wgt_zeros(ctx, WGT_I32, 4, (int64_t[]){1, 2, 10, 16}), *ks = wgt_zeros(ctx, WGT_F32, 4, (int64_t[]){1, 2, 10, 2});
    CHECK(wgt_attention_q8(q, kc, ks, kc, ks, true) == NULL, "3 query heads over 2 kv heads accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "attention_q8 heads");
    wgt_tensor *q2 = wgt_zeros(ctx, WGT_F32, 4, (int64_t[]){1, 4, 1, 64});
    CHECK(wgt_attention_q8(q2, ks, ks, kc, ks, true) == NULL, "f32 k codes accepted");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "attention_q8 f32 codes");
    CHECK(wgt_attention_q8(q2, kc, kc, kc, ks, true) == NULL, "k scales of the codes' shape accepted");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "attention_q8 i32 scales");
    wgt_scope_pop(ctx);
}

int main(void)
{
    wgt_context *ctxs[2] = {test_cpu_context(), test_webgpu_context()};
    CHECK(ctxs[1] != NULL, "no WebGPU context");
    static const qcase cases[] = {
        /* name                 H  Hkv Tq  Tk   D   context causal f16  decode shared */
        {"tq1_gqa4_tk200",      8, 2, 1, 200, 64, 256, true, false, true, false},
        {"f16_tq1_gqa4_tk77",   8, 2, 1, 77, 64, 96, true, true, true, false},
        {"tq3_d128_tk130",      4, 2, 3, 130, 128, 130, true, false, true, false},
        {"f16_tq4_mha",         2, 2, 4, 65, 64, 80, false, true, true, false},
        {"prefill_tq9",         4, 2, 9, 40, 64, 48, true, false, false, false},
        {"shared_f16_tq1_gqa4", 8, 2, 1, 200, 64, 256, true, true, true, true},
        {"shared_tq2_d128",     4, 1, 2, 150, 128, 160, true, false, true, true},
        {"shared_prefill_tq9",  4, 2, 9, 40, 64, 48, true, false, false, true},
    };
    for (int b = 0; b < 2; b++) {
        if (!ctxs[b]) continue;
        check_rows(ctxs[b], false);
        check_rows(ctxs[b], true);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check_attention(ctxs[b], &cases[i]);
        check_bad_input(ctxs[b]);
        wgt_context_destroy(ctxs[b]);
    }
    return test_summary();
}
