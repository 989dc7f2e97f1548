/* Decode attention on WebGPU (src/webgpu/webgpu_attention_decode.c: split-key
 * kernels for Tq <= 4 over a long K/V) against a double reference computed
 * here and against the CPU backend:
 *  - Tq = 1 with Tk not a multiple of the 64-key chunk, grouped-query heads
 *    (4 query heads per kv head, as Llama-3.2-1B), causal;
 *  - Tq = 2..4 with the causal offset (query i sees keys <= i + Tk - Tq), head
 *    groups that do not fill a workgroup's 4 rows (group 3, Tq 3);
 *  - f16 q, k, v and out (the llama f16 cache), with k and v slices of a longer
 *    cache [1, Hkv, context, D] and q a permuted view, as llama_forward passes;
 *  - f16 takes the path at any Tk, f32 from 128 keys; rows that see no key
 *    (Tq > Tk, forced with WGT_DECODE_ATTN=1): out 0, lse -inf;
 *  - past 32 chunks of keys (2100 to 4200 keys; D 64, 80, 128) the combine
 *    that takes a workgroup a row;
 *  - the path is taken (2 dispatches for f16 in and out) and WGT_DECODE_ATTN=0
 *    gives the general kernels back with the same results, reading f16 q, k,
 *    v in place (2 dispatches: the forward, out's conversion) or, with
 *    WGT_ATTENTION_F16_COPIES=1, through f32 copies (5). */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup: WGT_DECODE_ATTN */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attention_internal.h"
#include "test_util.h"

typedef struct dcase {
    const char *name;
    int64_t B, H, Hkv, Tq, Tk, D;
    bool causal, f16, cache_view;
    int64_t context; /* cache_view: k, v are the first Tk rows of [B, Hkv, context, D] */
} dcase;

static uint32_t rng = 777u;
static float urand(void) { return (float)(test_xorshift(&rng) >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }

/* out [B, H, Tq, D], lse [B, H, Tq] in double from q, k, v as stored (rounded to f16 when c->f16). */
static void reference(const dcase *c, const float *q, const float *k, const float *v, double *out, double *lse)
{
    const double scale = 1.0 / sqrt((double)c->D);
    double *s = malloc((size_t)c->Tk * sizeof(double));
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->H; h++)
            for (int64_t i = 0; i < c->Tq; i++) {
                const int64_t g = h / (c->H / c->Hkv), row = (b * c->H + h) * c->Tq + i;
                const float *qr = q + row * c->D;
                double mx = -INFINITY;
                for (int64_t j = 0; j < c->Tk; j++) {
                    s[j] = -INFINITY;
                    if (c->causal && j > i + c->Tk - c->Tq) continue;
                    const float *kr = k + ((b * c->Hkv + g) * c->Tk + j) * c->D;
                    double d = 0;
                    for (int64_t e = 0; e < c->D; e++) d += (double)qr[e] * kr[e];
                    s[j] = d * scale;
                    mx = fmax(mx, s[j]);
                }
                double sum = 0;
                for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] = 0;
                if (mx == -INFINITY) {
                    lse[row] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < c->Tk; j++) {
                    if (s[j] == -INFINITY) continue;
                    const double p = exp(s[j] - mx);
                    sum += p;
                    const float *vr = v + ((b * c->Hkv + g) * c->Tk + j) * c->D;
                    for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] += p * vr[e];
                }
                for (int64_t e = 0; e < c->D; e++) out[row * c->D + e] /= sum;
                lse[row] = mx + log(sum);
            }
    free(s);
}

/* A tensor of `shape` holding data (f32, or f16 when f16). */
static wgt_tensor *upload(wgt_context *ctx, bool f16, int ndim, const int64_t *shape, const float *data, int64_t n)
{
    if (!f16) return wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, data);
    uint16_t *h = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) h[i] = test_f32_to_f16(data[i]);
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F16, ndim, shape, h);
    free(h);
    return t;
}

/* Runs the case on ctx: out (as f32) and lse into got_out, got_lse; the
 * number of dispatches the attention op recorded into *dispatches. */
static bool run_case(wgt_context *ctx, const dcase *c, const float *q, const float *k, const float *v, float *got_out,
                     float *got_lse, uint64_t *dispatches)
{
    const int64_t qn = c->B * c->H * c->Tq * c->D, kn = c->B * c->Hkv * c->Tk * c->D;
    wgt_scope_push(ctx);
    wgt_tensor *tq, *tk, *tv;
    if (c->cache_view) {
        /* q stored as [B, Tq, H, D] and permuted to [B, H, Tq, D] (llama's heads()) */
        float *qt = malloc((size_t)qn * sizeof(float));
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t i = 0; i < c->Tq; i++)
                    memcpy(qt + ((b * c->Tq + i) * c->H + h) * c->D, q + ((b * c->H + h) * c->Tq + i) * c->D,
                           (size_t)c->D * sizeof(float));
        tq = wgt_permute(upload(ctx, c->f16, 4, (int64_t[]){c->B, c->Tq, c->H, c->D}, qt, qn), (int[]){0, 2, 1, 3});
        free(qt);
        /* k, v: rows [0, Tk) of a zero cache [B, Hkv, context, D] written through a slice */
        const int64_t cs[4] = {c->B, c->Hkv, c->context, c->D};
        wgt_tensor *ck = wgt_zeros(ctx, c->f16 ? WGT_F16 : WGT_F32, 4, cs), *cv = wgt_zeros(ctx, c->f16 ? WGT_F16 : WGT_F32, 4, cs);
        const int64_t ks[4] = {c->B, c->Hkv, c->Tk, c->D};
        wgt_assign(wgt_slice(ck, 2, 0, c->Tk, 1), upload(ctx, c->f16, 4, ks, k, kn));
        wgt_assign(wgt_slice(cv, 2, 0, c->Tk, 1), upload(ctx, c->f16, 4, ks, v, kn));
        tk = wgt_slice(ck, 2, 0, c->Tk, 1);
        tv = wgt_slice(cv, 2, 0, c->Tk, 1);
    } else {
        tq = upload(ctx, c->f16, 4, (int64_t[]){c->B, c->H, c->Tq, c->D}, q, qn);
        tk = upload(ctx, c->f16, 4, (int64_t[]){c->B, c->Hkv, c->Tk, c->D}, k, kn);
        tv = upload(ctx, c->f16, 4, (int64_t[]){c->B, c->Hkv, c->Tk, c->D}, v, kn);
    }
    wgt_tensor *lse = NULL;
    wgt_execution_stats before = {0}, after = {0};
    wgt_execution_stats_get(ctx, &before);
    wgt_tensor *o = wgt_attention_forward(tq, tk, tv, c->causal, 0.0, 0, &lse);
    wgt_execution_stats_get(ctx, &after);
    *dispatches = after.dispatches - before.dispatches;
    if (o && c->f16) o = wgt_cast(o, WGT_F32);
    bool ok = o && lse && wgt_tensor_read(o, got_out, (size_t)qn * sizeof(float)) == WGT_OK &&
              wgt_tensor_read(lse, got_lse, (size_t)(qn / c->D) * sizeof(float)) == WGT_OK;
    CHECK(ok, "%s: attention on %s failed: %s", c->name, wgt_context_backend(ctx) == WGT_BACKEND_CPU ? "cpu" : "webgpu",
          wgt_context_error_message(ctx));
    wgt_tensor_release(lse);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    return ok;
}

/* max |got - want| / max(max |want|, 1e-3); lse entries compared absolutely (inf must match) */
static double out_error(const float *got, const double *want, int64_t n)
{
    double scale = 1e-3, err = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) err = fmax(err, isfinite(got[i]) ? fabs(got[i] - want[i]) : INFINITY);
    return err / scale;
}

static double lse_error(const float *got, const double *want, int64_t n)
{
    double err = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isinf(want[i]) || isinf(got[i])) err = fmax(err, (double)got[i] == want[i] ? 0.0 : INFINITY);
        else err = fmax(err, fabs(got[i] - want[i]));
    }
    return err;
}

/* general: WebGPU contexts created with WGT_DECODE_ATTN=0 (the knob is read
 * when a context is created), where the general kernels run: [0] reading f16
 * q, k, v in place (the forward and out's conversion: 2 dispatches), [1] with
 * WGT_ATTENTION_F16_COPIES=1 too (f32 copies first: 5); NULL: skip. */
static void check_case(wgt_context *gpu, wgt_context *const *general, wgt_context *cpu, const dcase *c,
                       bool expect_decode)
{
    const int64_t qn = c->B * c->H * c->Tq * c->D, kn = c->B * c->Hkv * c->Tk * c->D, rows = qn / c->D;
    float *q = malloc((size_t)qn * 4), *k = malloc((size_t)kn * 4), *v = malloc((size_t)kn * 4);
    /* scores of a few units: softmax neither flat nor one-hot */
    for (int64_t i = 0; i < qn; i++) q[i] = urand() * 1.5f;
    for (int64_t i = 0; i < kn; i++) k[i] = urand() * 1.5f, v[i] = urand();
    if (c->f16) { /* the reference sees the values as stored */
        for (int64_t i = 0; i < qn; i++) q[i] = test_f16_to_f32(test_f32_to_f16(q[i]));
        for (int64_t i = 0; i < kn; i++)
            k[i] = test_f16_to_f32(test_f32_to_f16(k[i])), v[i] = test_f16_to_f32(test_f32_to_f16(v[i]));
    }
    double *want = malloc((size_t)qn * 8), *want_lse = malloc((size_t)rows * 8);
    reference(c, q, k, v, want, want_lse);
    float *got = malloc((size_t)qn * 4), *got_lse = malloc((size_t)rows * 4);
    float *cpu_out = malloc((size_t)qn * 4), *cpu_lse = malloc((size_t)rows * 4);
    float *old = malloc((size_t)qn * 4), *old_lse = malloc((size_t)rows * 4);
    uint64_t n_gpu = 0, n_cpu = 0, n_old = 0;
    /* f16 out rounds each value: half an ulp of values below 1 */
    const double tol = c->f16 ? 2e-3 : 2e-5, lse_tol = c->f16 ? 1e-3 : 2e-5;
    if (run_case(gpu, c, q, k, v, got, got_lse, &n_gpu)) {
        CHECK(out_error(got, want, qn) < tol, "%s: out error %.3g", c->name, out_error(got, want, qn));
        CHECK(lse_error(got_lse, want_lse, rows) < lse_tol, "%s: lse error %.3g", c->name,
              lse_error(got_lse, want_lse, rows));
        /* decode: 2 dispatches (first pass, combine); the general kernels the
         * forward and, for f16, one to convert out (below) */
        if (expect_decode) CHECK(n_gpu == 2, "%s: %llu dispatches, decode path expected (2)", c->name,
                                 (unsigned long long)n_gpu);
    }
    if (cpu && run_case(cpu, c, q, k, v, cpu_out, cpu_lse, &n_cpu)) {
        double e = 0;
        for (int64_t i = 0; i < qn; i++) e = fmax(e, fabs(got[i] - cpu_out[i]));
        CHECK(e < (c->f16 ? 2e-3 : 2e-5), "%s: WebGPU vs CPU max difference %.3g", c->name, e);
        double le = 0;
        for (int64_t i = 0; i < rows; i++)
            le = fmax(le, isinf(cpu_lse[i]) ? (got_lse[i] == cpu_lse[i] ? 0 : INFINITY) : fabs(got_lse[i] - cpu_lse[i]));
        CHECK(le < lse_tol, "%s: WebGPU vs CPU lse difference %.3g", c->name, le);
    }
    for (int g = 0; expect_decode && general && g < 2; g++) { /* the general kernels, switched back on, agree */
        if (general[g] && run_case(general[g], c, q, k, v, old, old_lse, &n_old)) {
            const uint64_t want_n = g ? 5 : 2;
            CHECK(n_old == want_n || !c->f16, "%s: WGT_DECODE_ATTN=0%s took %llu dispatches (%llu expected)", c->name,
                  g ? ", WGT_ATTENTION_F16_COPIES=1" : "", (unsigned long long)n_old, (unsigned long long)want_n);
            CHECK(out_error(old, want, qn) < tol, "%s: general kernels' error %.3g%s", c->name,
                  out_error(old, want, qn), g ? " (f32 copies)" : "");
        }
    }
    free(q), free(k), free(v), free(want), free(want_lse), free(got), free(got_lse);
    free(cpu_out), free(cpu_lse), free(old), free(old_lse);
}

int main(void)
{
    wgt_context *gpu = test_webgpu_context(), *cpu = test_cpu_context();
    if (!gpu) {
        CHECK(false, "no WebGPU context");
        return test_summary();
    }
    static const dcase cases[] = {
        /* name                      B  H  Hkv Tq  Tk   D  causal f16  view  context */
        {"tq1_gqa4_tk200",           1, 8, 2, 1, 200, 64, true, false, false, 0},
        {"tq1_mha_tk129_d128",       2, 2, 2, 1, 129, 128, false, false, false, 0},
        {"tq3_group3_offset",        1, 6, 2, 3, 150, 32, true, false, false, 0},
        {"tq4_gqa2_offset",          1, 4, 2, 4, 131, 16, true, false, false, 0},
        {"tq2_d256",                 1, 2, 1, 2, 140, 256, true, false, false, 0},
        {"f16_tq1_gqa4",             1, 8, 2, 1, 300, 64, true, true, false, 0},
        {"f16_cache_view",           1, 8, 2, 1, 197, 64, true, true, true, 256},
        {"f32_cache_view_tq2",       1, 4, 1, 2, 133, 64, true, false, true, 160},
        {"d80_group8",               1, 8, 1, 1, 190, 80, true, false, false, 0},
        {"f16_short_tk20",           1, 4, 2, 1, 20, 64, true, true, false, 0},   /* f16: taken at any Tk */
        {"f16_tq4_tk700",            1, 8, 2, 4, 700, 64, true, true, false, 0},  /* 11 chunks, the last short */
        {"f16_tk1000_view",          1, 4, 1, 1, 1000, 64, true, true, true, 1100},
        /* past 32 chunks: the combine a workgroup a row (attention_decode_combine_split) */
        {"f16_tk2100_split",         1, 8, 2, 1, 2100, 64, true, true, false, 0},
        {"tq2_d128_tk4200_split",    1, 4, 1, 2, 4200, 128, true, false, false, 0},
        {"d80_tk2500_view_split",    1, 8, 1, 1, 2500, 80, true, false, true, 2600},
    };
    /* the knob is read when a context is created: one context per setting */
    wgt_context *general[2] = {
        test_context_env(NULL, (const char *[]){"WGT_DECODE_ATTN", "0", NULL}),
        test_context_env(NULL, (const char *[]){"WGT_DECODE_ATTN", "0", "WGT_ATTENTION_F16_COPIES", "1", NULL})};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check_case(gpu, general, cpu, &cases[i], true);
    wgt_context_destroy(general[0]);
    wgt_context_destroy(general[1]);

    /* forced for short K: rows that see no key (Tq > Tk, causal) and a single chunk */
    wgt_context *forced_gpu = test_context_env(NULL, (const char *[]){"WGT_DECODE_ATTN", "1", NULL});
    static const dcase forced[] = {
        {"forced_tq4_tk2_unseen",    1, 2, 1, 4, 2, 16, true, false, false, 0},
        {"forced_f16_tk5",           1, 4, 4, 1, 5, 8, false, true, false, 0},
    };
    for (size_t i = 0; forced_gpu && i < sizeof(forced) / sizeof(forced[0]); i++)
        check_case(forced_gpu, NULL, cpu, &forced[i], false);
    wgt_context_destroy(forced_gpu);

    /* bad input still comes back as a status: mismatched heads (H % Hkv != 0) */
    wgt_scope_push(gpu);
    wgt_tensor *q = wgt_zeros(gpu, WGT_F32, 4, (int64_t[]){1, 3, 1, 64});
    wgt_tensor *k = wgt_zeros(gpu, WGT_F32, 4, (int64_t[]){1, 2, 300, 64});
    CHECK(wgt_scaled_dot_product_attention(q, k, k, true, 0.0, 0) == NULL, "3 query heads over 2 kv heads accepted");
    check_error_and_recover(gpu, WGT_ERR_SHAPE_MISMATCH, "H % Hkv");
    wgt_scope_pop(gpu);

    wgt_context_destroy(gpu);
    if (cpu) wgt_context_destroy(cpu);
    return test_summary();
}
