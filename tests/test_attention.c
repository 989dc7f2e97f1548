/*
 * scaled_dot_product_attention, rope, linear and matmul_ex on both backends,
 * against references written here in double precision (not the library's):
 *
 *   attention  forward (out and the row logsumexp) vs a naive softmax(QK^T)V,
 *              causal and not, Tq != Tk (bottom-right causal alignment, rows
 *              that see no key give zeros), grouped-query heads, D in {8, 32,
 *              64, 80, 128}, T in {1, 7, 65, ...}, strided (permuted) inputs;
 *              backward vs the reference's analytic gradients and vs central
 *              finite differences of the public forward; dropout: the drop
 *              fraction, the kept values' scale, reproducibility by seed and
 *              equal masks on both backends.
 *   rope       both layouts vs the rotation written out, inverse round trip.
 *   linear     with and without bias, batched and strided x, 1-D x, f16;
 *              its backward rule vs the reference.
 *   matmul_ex  f16 x f16 -> f32 vs exact sums of the f16 values (sums past
 *              the f16 range must stay finite).
 * Tolerances: f32 results within 2e-5 of the reference relative to its
 * largest magnitude (1e-4 for gradients, 5e-3 for f16); finite differences
 * (eps 1e-2, f32) within 2e-2 absolute + 2e-2 relative.
 */
#define _POSIX_C_SOURCE 200809L /* setenv: the WebGPU kernel variants */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/rules.h"
#include "core/internal.h"
#include "core/philox.h"
#include "ops/attention_internal.h"
#include "test_util.h"

static uint32_t rng = 12345u;
static float urand(void) { return (float)(test_xorshift(&rng) >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }
static void fill_random(float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++) x[i] = urand() * scale;
}

static wgt_tensor *upload(wgt_context *ctx, int ndim, const int64_t *shape, const float *data)
{
    return wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, data);
}

static float *download(wgt_tensor *t, int64_t n)
{
    float *out = calloc((size_t)(n ? n : 1), sizeof(float));
    if (t && wgt_tensor_read(t, out, (size_t)n * sizeof(float)) != WGT_OK) {
        free(out);
        return NULL;
    }
    return t ? out : (free(out), NULL);
}

/* max |got - want| / max(max |want|, floor) */
static double rel_error(const float *got, const double *want, int64_t n, double floor)
{
    double scale = floor, err = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (isnan(got[i]) || isnan(e)) return INFINITY;
        err = fmax(err, e);
    }
    return err / scale;
}

/* ---------------------------------------------------------- the reference */

typedef struct config {
    int64_t B, H, Hkv, Tq, Tk, D;
    bool causal;
} config;

/* Element (b, h, t, d) of a contiguous [B, heads, T, D] array. */
#define AT(x, heads, T, D, b, h, t, d) (x)[(((b) * (heads) + (h)) * (T) + (t)) * (D) + (d)]

static bool sees(const config *c, int64_t i, int64_t j) { return !c->causal || j <= i + c->Tk - c->Tq; }

/* Naive attention in double with an optional dropout mask z (1/(1-p) or 0 per
 * weight, row-major [B*H*Tq, Tk]; NULL: none): out, lse, and (when dout is
 * given) dq, dk, dv. */
static void reference(const config *c, const float *q, const float *k, const float *v, const double *z,
                      const float *dout, double *out, double *lse, double *dq, double *dk, double *dv)
{
    int64_t B = c->B, H = c->H, Hkv = c->Hkv, Tq = c->Tq, Tk = c->Tk, D = c->D, group = H / Hkv;
    double scale = 1.0 / sqrt((double)D);
    double *p = malloc((size_t)Tk * sizeof(double));
    if (dk) memset(dk, 0, (size_t)(B * Hkv * Tk * D) * sizeof(double));
    if (dv) memset(dv, 0, (size_t)(B * Hkv * Tk * D) * sizeof(double));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Tq; i++) {
                int64_t g = h / group, row = (b * H + h) * Tq + i;
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < Tk; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < D; d++) s += (double)AT(q, H, Tq, D, b, h, i, d) * AT(k, Hkv, Tk, D, b, g, j, d);
                    p[j] = sees(c, i, j) ? s * scale : -INFINITY;
                    m = fmax(m, p[j]);
                }
                for (int64_t j = 0; j < Tk; j++) l += m == -INFINITY ? 0 : exp(p[j] - m);
                lse[row] = l > 0 ? m + log(l) : -INFINITY;
                for (int64_t j = 0; j < Tk; j++) p[j] = l > 0 ? exp(p[j] - m) / l : 0;
                for (int64_t d = 0; d < D; d++) {
                    double o = 0;
                    for (int64_t j = 0; j < Tk; j++) o += p[j] * (z ? z[row * Tk + j] : 1.0) * AT(v, Hkv, Tk, D, b, g, j, d);
                    AT(out, H, Tq, D, b, h, i, d) = o;
                }
                if (!dout) continue;
                /* out_i = sum_j p_j z_j v_j: dv_j += p_j z_j dout_i; dp_j = z_j dout_i.v_j;
                 * ds_j = p_j (dp_j - sum_k p_k dp_k); dq_i = scale sum ds_j k_j; dk_j += scale ds_j q_i */
                double sum_pdp = 0;
                double *dp = malloc((size_t)Tk * sizeof(double));
                for (int64_t j = 0; j < Tk; j++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += (double)AT(dout, H, Tq, D, b, h, i, d) * AT(v, Hkv, Tk, D, b, g, j, d);
                    dp[j] = (z ? z[row * Tk + j] : 1.0) * dot;
                    sum_pdp += p[j] * dp[j];
                }
                for (int64_t d = 0; d < D; d++) AT(dq, H, Tq, D, b, h, i, d) = 0;
                for (int64_t j = 0; j < Tk; j++) {
                    double ds = p[j] * (dp[j] - sum_pdp) * scale, pz = p[j] * (z ? z[row * Tk + j] : 1.0);
                    for (int64_t d = 0; d < D; d++) {
                        AT(dq, H, Tq, D, b, h, i, d) += ds * AT(k, Hkv, Tk, D, b, g, j, d);
                        AT(dk, Hkv, Tk, D, b, g, j, d) += ds * AT(q, H, Tq, D, b, h, i, d);
                        AT(dv, Hkv, Tk, D, b, g, j, d) += pz * AT(dout, H, Tq, D, b, h, i, d);
                    }
                }
                free(dp);
            }
    free(p);
}

/* ------------------------------------------------------- attention tests */

typedef struct attention_data {
    config c;
    int64_t qn, kn;
    float *q, *k, *v, *dout;
} attention_data;

static void data_make(attention_data *a, config c)
{
    a->c = c;
    a->qn = c.B * c.H * c.Tq * c.D;
    a->kn = c.B * c.Hkv * c.Tk * c.D;
    a->q = malloc((size_t)(a->qn + 1) * 4);
    a->k = malloc((size_t)(a->kn + 1) * 4);
    a->v = malloc((size_t)(a->kn + 1) * 4);
    a->dout = malloc((size_t)(a->qn + 1) * 4);
    fill_random(a->q, a->qn, 1.5f);
    fill_random(a->k, a->kn, 1.5f);
    fill_random(a->v, a->kn, 1.0f);
    fill_random(a->dout, a->qn, 1.0f);
}

static void data_free(attention_data *a)
{
    free(a->q);
    free(a->k);
    free(a->v);
    free(a->dout);
}

/* The dropout mask of the kernels' contract (src/core/philox.h) as z values. */
static double *dropout_mask(const config *c, double p, uint64_t seed)
{
    int64_t rows = c->B * c->H * c->Tq;
    double *z = malloc((size_t)(rows * c->Tk + 1) * sizeof(double));
    uint32_t threshold = wgt_attention_dropout_threshold(p);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < c->Tk; j++)
            z[r * c->Tk + j] = wgt_attention_dropout_keep(seed, threshold, (uint32_t)r, (uint32_t)j) ? 1.0 / (1.0 - p) : 0.0;
    return z;
}

/* Forward and backward of one config vs the reference. permuted: q, k, v are
 * passed as permuted views of [B, T, H, D] storage. */
static void check_attention(wgt_context *ctx, const char *name, config c, bool permuted, double dropout_p)
{
    attention_data a;
    data_make(&a, c);
    uint64_t seed = 77;
    double *z = dropout_p > 0 ? dropout_mask(&c, dropout_p, seed) : NULL;
    double *out = malloc((size_t)a.qn * 8 + 8), *lse = malloc((size_t)(c.B * c.H * c.Tq) * 8 + 8);
    double *dq = malloc((size_t)a.qn * 8 + 8), *dk = malloc((size_t)a.kn * 8 + 8), *dv = malloc((size_t)a.kn * 8 + 8);
    reference(&c, a.q, a.k, a.v, z, a.dout, out, lse, dq, dk, dv);

    wgt_scope_push(ctx);
    wgt_tensor *q, *k, *v;
    if (permuted) { /* the same values stored as [B, T, H, D] */
        int64_t qs[4] = {c.B, c.Tq, c.H, c.D}, ks[4] = {c.B, c.Tk, c.Hkv, c.D};
        float *qt = malloc((size_t)a.qn * 4 + 4), *kt = malloc((size_t)a.kn * 4 + 4), *vt = malloc((size_t)a.kn * 4 + 4);
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t h = 0; h < c.H; h++)
                for (int64_t t = 0; t < c.Tq; t++)
                    for (int64_t d = 0; d < c.D; d++) AT(qt, c.Tq, c.H, c.D, b, t, h, d) = AT(a.q, c.H, c.Tq, c.D, b, h, t, d);
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t h = 0; h < c.Hkv; h++)
                for (int64_t t = 0; t < c.Tk; t++)
                    for (int64_t d = 0; d < c.D; d++) {
                        AT(kt, c.Tk, c.Hkv, c.D, b, t, h, d) = AT(a.k, c.Hkv, c.Tk, c.D, b, h, t, d);
                        AT(vt, c.Tk, c.Hkv, c.D, b, t, h, d) = AT(a.v, c.Hkv, c.Tk, c.D, b, h, t, d);
                    }
        int perm[4] = {0, 2, 1, 3};
        q = wgt_permute(upload(ctx, 4, qs, qt), perm);
        k = wgt_permute(upload(ctx, 4, ks, kt), perm);
        v = wgt_permute(upload(ctx, 4, ks, vt), perm);
        free(qt);
        free(kt);
        free(vt);
    } else {
        int64_t qs[4] = {c.B, c.H, c.Tq, c.D}, ks[4] = {c.B, c.Hkv, c.Tk, c.D};
        q = upload(ctx, 4, qs, a.q);
        k = upload(ctx, 4, ks, a.k);
        v = upload(ctx, 4, ks, a.v);
    }
    int64_t qs[4] = {c.B, c.H, c.Tq, c.D};
    wgt_tensor *dout = upload(ctx, 4, qs, a.dout);
    wgt_tensor *lse_t = NULL;
    wgt_tensor *o = wgt_attention_forward(q, k, v, c.causal, dropout_p, seed, &lse_t);
    /* On the tape the output is a [B, Tq, H, D] buffer seen as [B, H, Tq, D]:
     * the same values, written through strides; merging the heads
     * (transpose(1, 2) + reshape) is a view of it. The backward below reads
     * it as its saved out when the inputs are permuted. */
    wgt_tensor *q_leaf = wgt_detach(q);
    wgt_tensor_set_requires_grad(q_leaf, true);
    wgt_tensor *taped = wgt_scaled_dot_product_attention(q_leaf, k, v, c.causal, dropout_p, seed);
    wgt_tensor *merged = taped ? wgt_reshape(wgt_transpose(taped, 1, 2), 3, (int64_t[]){c.B, c.Tq, c.H * c.D}) : NULL;
    CHECK(merged && merged->view.storage == taped->view.storage, "%s: merging the heads of the taped output copied",
          name);
    CHECK(!taped || wgt_tensor_is_contiguous(taped) == (c.H == 1 || c.Tq == 1),
          "%s: the taped output is not laid out heads-innermost", name);
    wgt_tensor *gq = NULL, *gk = NULL, *gv = NULL;
    if (o && taped)
        wgt_attention_backward(q, k, v, permuted ? taped : o, lse_t, dout, c.causal, dropout_p, seed, &gq, &gk, &gv);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", name, wgt_context_error_message(ctx));
    float *gt = download(taped, a.qn);
    if (gt) {
        double e = rel_error(gt, out, a.qn, 1e-3);
        CHECK(e < 2e-5, "%s: out error %.3g on the tape", name, e);
    }
    free(gt);
    float *go = download(o, a.qn), *gl = download(lse_t, c.B * c.H * c.Tq);
    float *gdq = download(gq, a.qn), *gdk = download(gk, a.kn), *gdv = download(gv, a.kn);
    if (go && gl && gdq && gdk && gdv) {
        double e = rel_error(go, out, a.qn, 1e-3);
        CHECK(e < 2e-5, "%s: out error %.3g", name, e);
        int64_t rows = c.B * c.H * c.Tq;
        bool lse_ok = true;
        for (int64_t r = 0; r < rows; r++) {
            if (isinf(lse[r])) lse_ok &= isinf(gl[r]) && gl[r] < 0;
            else lse_ok &= fabs(gl[r] - lse[r]) <= 2e-5 * fmax(1.0, fabs(lse[r]));
        }
        CHECK(lse_ok, "%s: logsumexp differs", name);
        e = rel_error(gdq, dq, a.qn, 1e-3);
        CHECK(e < 1e-4, "%s: dq error %.3g", name, e);
        e = rel_error(gdk, dk, a.kn, 1e-3);
        CHECK(e < 1e-4, "%s: dk error %.3g", name, e);
        e = rel_error(gdv, dv, a.kn, 1e-3);
        CHECK(e < 1e-4, "%s: dv error %.3g", name, e);
    } else {
        CHECK(false, "%s: no result (%s)", name, wgt_context_error_message(ctx));
    }
    free(go), free(gl), free(gdq), free(gdk), free(gdv);
    wgt_tensor_release(lse_t), wgt_tensor_release(gq), wgt_tensor_release(gk), wgt_tensor_release(gv);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    free(out), free(lse), free(dq), free(dk), free(dv), free(z);
    data_free(&a);
}

/* A long causal sequence (T = 4096): forward rows sampled across the whole
 * length (early rows see few keys, late ones all) vs the reference row. */
static void check_long_sequence(wgt_context *ctx, const char *name)
{
    const int64_t T = 4096, D = 32;
    config c = {1, 1, 1, T, T, D, true};
    int64_t shape[4] = {1, 1, T, D}, n = T * D;
    float *q = malloc((size_t)n * 4), *k = malloc((size_t)n * 4), *v = malloc((size_t)n * 4);
    fill_random(q, n, 1.5f), fill_random(k, n, 1.5f), fill_random(v, n, 1.0f);
    wgt_scope_push(ctx);
    float *got = download(wgt_scaled_dot_product_attention(upload(ctx, 4, shape, q), upload(ctx, 4, shape, k),
                                                           upload(ctx, 4, shape, v), true, 0.0, 0), n);
    wgt_scope_pop(ctx);
    static const int64_t rows[] = {0, 1, 63, 64, 1000, 2047, 4000, 4095};
    double worst = 0, *p = malloc((size_t)T * sizeof(double));
    for (size_t r = 0; got && r < sizeof(rows) / sizeof(rows[0]); r++) {
        int64_t i = rows[r];
        double m = -INFINITY, l = 0;
        for (int64_t j = 0; j <= i; j++) {
            double s = 0;
            for (int64_t d = 0; d < D; d++) s += (double)q[i * D + d] * k[j * D + d];
            p[j] = s / sqrt((double)D);
            m = fmax(m, p[j]);
        }
        for (int64_t j = 0; j <= i; j++) l += exp(p[j] - m);
        for (int64_t d = 0; d < D; d++) {
            double o = 0;
            for (int64_t j = 0; j <= i; j++) o += exp(p[j] - m) / l * v[j * D + d];
            worst = fmax(worst, fabs(o - got[i * D + d]));
        }
    }
    (void)c;
    CHECK(got && worst < 2e-5, "%s: T = 4096 causal: max error %.3g (%s)", name, worst, wgt_context_error_message(ctx));
    free(p), free(got), free(q), free(k), free(v);
    wgt_context_clear_error(ctx);
}

/* f16 q, k, v: the reference on the f16-rounded values; out within f16
 * rounding, gradients (f16) within 1e-2 of the largest. */
static void check_attention_f16(wgt_context *ctx, const char *name)
{
    config c = {1, 2, 1, 19, 23, 64, true};
    attention_data a;
    data_make(&a, c);
    uint16_t *h[4];
    float *src[4] = {a.q, a.k, a.v, a.dout};
    int64_t sizes[4] = {a.qn, a.kn, a.kn, a.qn};
    for (int t = 0; t < 4; t++) {
        h[t] = malloc((size_t)sizes[t] * 2);
        for (int64_t i = 0; i < sizes[t]; i++) {
            h[t][i] = test_f32_to_f16(src[t][i]);
            src[t][i] = test_f16_to_f32(h[t][i]);
        }
    }
    double *out = malloc((size_t)a.qn * 8), *lse = malloc((size_t)(c.B * c.H * c.Tq) * 8);
    double *dq = malloc((size_t)a.qn * 8), *dk = malloc((size_t)a.kn * 8), *dv = malloc((size_t)a.kn * 8);
    reference(&c, a.q, a.k, a.v, NULL, a.dout, out, lse, dq, dk, dv);
    int64_t qs[4] = {c.B, c.H, c.Tq, c.D}, ks[4] = {c.B, c.Hkv, c.Tk, c.D};
    wgt_scope_push(ctx);
    wgt_tensor *q = wgt_tensor_from_host(ctx, WGT_F16, 4, qs, h[0]), *k = wgt_tensor_from_host(ctx, WGT_F16, 4, ks, h[1]);
    wgt_tensor *v = wgt_tensor_from_host(ctx, WGT_F16, 4, ks, h[2]), *dout = wgt_tensor_from_host(ctx, WGT_F16, 4, qs, h[3]);
    wgt_tensor *lse_t = NULL, *gq = NULL, *gk = NULL, *gv = NULL;
    wgt_tensor *o = wgt_attention_forward(q, k, v, true, 0.0, 0, &lse_t);
    if (o) wgt_attention_backward(q, k, v, o, lse_t, dout, true, 0.0, 0, &gq, &gk, &gv);
    CHECK(o && wgt_tensor_dtype(o) == WGT_F16 && gq && wgt_tensor_dtype(gq) == WGT_F16, "%s: f16 results (%s)", name,
          wgt_context_error_message(ctx));
    float *go = download(o ? wgt_cast(o, WGT_F32) : NULL, a.qn), *gdq = download(gq ? wgt_cast(gq, WGT_F32) : NULL, a.qn);
    float *gdk = download(gk ? wgt_cast(gk, WGT_F32) : NULL, a.kn), *gdv = download(gv ? wgt_cast(gv, WGT_F32) : NULL, a.kn);
    /* on the tape: written heads-innermost through the f32 temporary's conversion, the same values */
    wgt_tensor *q_leaf = wgt_detach(q);
    wgt_tensor_set_requires_grad(q_leaf, true);
    wgt_tensor *taped = wgt_scaled_dot_product_attention(q_leaf, k, v, true, 0.0, 0);
    float *gt = download(taped ? wgt_cast(taped, WGT_F32) : NULL, a.qn);
    CHECK(taped && !wgt_tensor_is_contiguous(taped) && gt && go && memcmp(gt, go, (size_t)a.qn * 4) == 0,
          "%s: f16 attention on the tape differs (%s)", name, wgt_context_error_message(ctx));
    free(gt);
    if (go && gdq && gdk && gdv) {
        CHECK(rel_error(go, out, a.qn, 1e-3) < 2e-3, "%s: f16 out error %.3g", name, rel_error(go, out, a.qn, 1e-3));
        CHECK(rel_error(gdq, dq, a.qn, 1e-3) < 1e-2, "%s: f16 dq error %.3g", name, rel_error(gdq, dq, a.qn, 1e-3));
        CHECK(rel_error(gdk, dk, a.kn, 1e-3) < 1e-2, "%s: f16 dk error %.3g", name, rel_error(gdk, dk, a.kn, 1e-3));
        CHECK(rel_error(gdv, dv, a.kn, 1e-3) < 1e-2, "%s: f16 dv error %.3g", name, rel_error(gdv, dv, a.kn, 1e-3));
    } else {
        CHECK(false, "%s: f16 attention failed: %s", name, wgt_context_error_message(ctx));
    }
    free(go), free(gdq), free(gdk), free(gdv);
    wgt_tensor_release(lse_t), wgt_tensor_release(gq), wgt_tensor_release(gk), wgt_tensor_release(gv);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
    for (int t = 0; t < 4; t++) free(h[t]);
    free(out), free(lse), free(dq), free(dk), free(dv);
    data_free(&a);
}

/* sum(attention(q, k, v) * w) as a double, for finite differences. */
static double attention_loss(wgt_context *ctx, const config *c, const float *q, const float *k, const float *v,
                             const float *w)
{
    int64_t qs[4] = {c->B, c->H, c->Tq, c->D}, ks[4] = {c->B, c->Hkv, c->Tk, c->D}, n = c->B * c->H * c->Tq * c->D;
    wgt_scope_push(ctx);
    wgt_tensor *o = wgt_scaled_dot_product_attention(upload(ctx, 4, qs, q), upload(ctx, 4, ks, k),
                                                     upload(ctx, 4, ks, v), c->causal, 0.0, 0);
    float *got = download(o, n);
    wgt_scope_pop(ctx);
    double loss = 0;
    for (int64_t i = 0; got && i < n; i++) loss += (double)got[i] * w[i];
    free(got);
    return got ? loss : NAN;
}

/* Central differences of the public forward vs the gradient the autograd rule
 * gives, for a few elements of q, k and v (through wgt_backward when the
 * engine is linked: the rule is what it runs). */
static void check_finite_differences(wgt_context *ctx, const char *name, config c)
{
    attention_data a;
    data_make(&a, c);
    int64_t qs[4] = {c.B, c.H, c.Tq, c.D}, ks[4] = {c.B, c.Hkv, c.Tk, c.D};
    wgt_scope_push(ctx);
    wgt_tensor *in[3] = {upload(ctx, 4, qs, a.q), upload(ctx, 4, ks, a.k), upload(ctx, 4, ks, a.v)};
    for (int i = 0; i < 3; i++) wgt_tensor_set_requires_grad(in[i], true);
    wgt_tensor *o = wgt_scaled_dot_product_attention(in[0], in[1], in[2], c.causal, 0.0, 0);
    /* upstream gradient w: the gradient of loss = sum(o * w) */
    wgt_status s = o ? wgt_backward_ex(o, upload(ctx, 4, qs, a.dout), false) : wgt_context_status(ctx);
    CHECK(s == WGT_OK, "%s: backward: %s", name, wgt_context_error_message(ctx));
    float *grads[3] = {NULL, NULL, NULL};
    int64_t sizes[3] = {a.qn, a.kn, a.kn};
    for (int i = 0; i < 3; i++) grads[i] = s == WGT_OK ? download(wgt_tensor_grad(in[i]), sizes[i]) : NULL;
    wgt_scope_pop(ctx);
    float *host[3] = {a.q, a.k, a.v};
    const char *names[3] = {"q", "k", "v"};
    const float eps = 1e-2f;
    for (int i = 0; i < 3; i++) {
        if (!grads[i]) {
            CHECK(false, "%s: no gradient for %s", name, names[i]);
            continue;
        }
        for (int t = 0; t < 5; t++) {
            int64_t e = (int64_t)(test_xorshift(&rng) % (uint32_t)sizes[i]);
            float keep = host[i][e];
            host[i][e] = keep + eps;
            double up = attention_loss(ctx, &c, a.q, a.k, a.v, a.dout);
            host[i][e] = keep - eps;
            double down = attention_loss(ctx, &c, a.q, a.k, a.v, a.dout);
            host[i][e] = keep;
            double fd = (up - down) / (2.0 * eps);
            CHECK(fabs(fd - grads[i][e]) <= 2e-2 + 2e-2 * fabs(fd), "%s: d loss / d %s[%lld]: finite difference %.6g, "
                  "backward %.6g", name, names[i], (long long)e, fd, grads[i][e]);
        }
        free(grads[i]);
    }
    data_free(&a);
    wgt_context_clear_error(ctx);
}

/* Dropout through the public op: with q = 0 every visible weight is 1/Tk and
 * v = identity rows, so out[.., i, j] = z_ij / Tk: the mask itself. */
static void check_dropout(wgt_context *ctx, wgt_context *other, const char *name)
{
    const int64_t B = 2, H = 2, T = 64, D = 64;
    const double p = 0.25;
    int64_t shape[4] = {B, H, T, D}, n = B * H * T * D;
    float *zeros = calloc((size_t)n, 4), *eye = calloc((size_t)n, 4);
    for (int64_t r = 0; r < B * H; r++)
        for (int64_t j = 0; j < T; j++) eye[(r * T + j) * D + j] = 1.0f;
    wgt_scope_push(ctx);
    wgt_scope_push(other);
    wgt_tensor *q = upload(ctx, 4, shape, zeros), *v = upload(ctx, 4, shape, eye);
    float *a = download(wgt_scaled_dot_product_attention(q, q, v, false, p, 1234), n);
    float *b = download(wgt_scaled_dot_product_attention(q, q, v, false, p, 1234), n);
    float *c = download(wgt_scaled_dot_product_attention(q, q, v, false, p, 999), n);
    wgt_tensor *q2 = upload(other, 4, shape, zeros), *v2 = upload(other, 4, shape, eye);
    float *d = download(wgt_scaled_dot_product_attention(q2, q2, v2, false, p, 1234), n);
    if (a && b && c && d) {
        int64_t dropped = 0, bad = 0, same_ab = 0, same_ac = 0, same_ad = 0;
        float kept = (float)(1.0 / (T * (1.0 - p)));
        for (int64_t i = 0; i < n; i++) {
            if (a[i] == 0) dropped++;
            else if (fabsf(a[i] - kept) > 1e-6f * kept * 10) bad++;
            same_ab += a[i] == b[i];
            same_ac += a[i] == c[i];
            same_ad += (a[i] == 0) == (d[i] == 0);
        }
        double frac = (double)dropped / (double)n; /* n = B*H*T*T weights */
        CHECK(fabs(frac - p) < 0.02, "%s: dropped fraction %.4f for p = %.2f", name, frac, p);
        CHECK(bad == 0, "%s: %lld kept weights not scaled by 1/(1-p)", name, (long long)bad);
        CHECK(same_ab == n, "%s: the same seed gave a different mask", name);
        CHECK(same_ac < n - n / 10, "%s: another seed gave (almost) the same mask", name);
        CHECK(same_ad == n, "%s: the two backends drew different masks (%lld of %lld agree)", name,
              (long long)same_ad, (long long)n);
    } else {
        CHECK(false, "%s: dropout run failed: %s / %s", name, wgt_context_error_message(ctx),
              wgt_context_error_message(other));
    }
    free(a), free(b), free(c), free(d), free(zeros), free(eye);
    wgt_scope_pop(other);
    wgt_scope_pop(ctx);
}

static void check_attention_bad_input(wgt_context *ctx)
{
    int64_t s4[4] = {1, 4, 5, 8}, s3[3] = {4, 5, 8}, kv3[4] = {1, 3, 5, 8}, d7[4] = {1, 4, 5, 7};
    float data[160] = {0};
    wgt_scope_push(ctx);
    wgt_tensor *q = upload(ctx, 4, s4, data), *bad3 = upload(ctx, 3, s3, data), *kv = upload(ctx, 4, kv3, data);
    wgt_tensor *odd = upload(ctx, 4, d7, data);
    CHECK(!wgt_scaled_dot_product_attention(q, bad3, bad3, false, 0, 0), "3-D k accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "attention with 3-D k");
    CHECK(!wgt_scaled_dot_product_attention(q, kv, kv, false, 0, 0), "4 heads over 3 kv heads accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "attention with H % Hkv != 0");
    CHECK(!wgt_scaled_dot_product_attention(q, q, q, false, 1.0, 0), "dropout 1 accepted");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "attention with dropout_p = 1");
    CHECK(!wgt_scaled_dot_product_attention(q, q, q, false, NAN, 0), "dropout NaN accepted");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "attention with dropout_p = NaN");
    CHECK(!wgt_rope(odd, 0, 10000, false), "odd head dim accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rope with D = 7");
    CHECK(!wgt_rope(q, -1, 10000, false), "negative position accepted");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "rope with a negative position offset");
    /* no keys: zeros (and zero gradients), not NaN */
    int64_t nokeys[4] = {1, 2, 0, 8};
    wgt_tensor *empty_kv = wgt_zeros(ctx, WGT_F32, 4, nokeys), *lse = NULL, *gq = NULL;
    float *o = download(wgt_attention_forward(q, empty_kv, empty_kv, false, 0, 0, &lse), 160);
    float *l = download(lse, 20);
    bool zeros = o && l;
    for (int i = 0; zeros && i < 160; i++) zeros = o[i] == 0.0f;
    for (int i = 0; zeros && i < 20; i++) zeros = isinf(l[i]) && l[i] < 0;
    CHECK(zeros, "attention without keys: %s", wgt_context_error_message(ctx));
    wgt_attention_backward(q, empty_kv, empty_kv, q, lse, q, false, 0, 0, &gq, NULL, NULL);
    float *g = download(gq, 160);
    bool gzero = g != NULL;
    for (int i = 0; gzero && i < 160; i++) gzero = g[i] == 0.0f;
    CHECK(gzero, "attention backward without keys: %s", wgt_context_error_message(ctx));
    free(o), free(l), free(g);
    wgt_tensor_release(lse), wgt_tensor_release(gq);
    wgt_context_clear_error(ctx);
    CHECK(!wgt_linear(q, bad3, NULL), "3-D weight accepted");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "linear with a 3-D weight");
    wgt_scope_pop(ctx);
}

/* ------------------------------------------------------------------ rope */

static void check_rope(wgt_context *ctx, const char *name)
{
    const int64_t B = 2, H = 3, T = 7, D = 16, offset = 1000;
    const double theta = 10000.0;
    int64_t shape[4] = {B, H, T, D}, n = B * H * T * D;
    float *x = malloc((size_t)n * 4);
    fill_random(x, n, 1.0f);
    double *want = malloc((size_t)n * 8);
    for (int layout = 0; layout < 2; layout++) {
        bool interleaved = layout == 1;
        for (int64_t r = 0; r < B * H * T; r++) {
            int64_t t = r % T;
            for (int64_t i = 0; i < D / 2; i++) {
                int64_t d0 = interleaved ? 2 * i : i, d1 = interleaved ? 2 * i + 1 : i + D / 2;
                double angle = (double)(offset + t) * pow(theta, -2.0 * (double)i / (double)D);
                double x0 = x[r * D + d0], x1 = x[r * D + d1];
                want[r * D + d0] = x0 * cos(angle) - x1 * sin(angle);
                want[r * D + d1] = x0 * sin(angle) + x1 * cos(angle);
            }
        }
        wgt_scope_push(ctx);
        wgt_tensor *xt = upload(ctx, 4, shape, x);
        wgt_tensor *y = wgt_rope(xt, offset, theta, interleaved);
        float *got = download(y, n);
        float *back = download(wgt_rope_ex(y, offset, theta, interleaved, true), n);
        /* a strided input: x stored as [B, T, H, D], permuted */
        int64_t tshape[4] = {B, T, H, D};
        float *xs = malloc((size_t)n * 4);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t t = 0; t < T; t++)
                    memcpy(&xs[((b * T + t) * H + h) * D], &x[((b * H + h) * T + t) * D], (size_t)D * 4);
        int perm[4] = {0, 2, 1, 3};
        float *strided = download(wgt_rope(wgt_permute(upload(ctx, 4, tshape, xs), perm), offset, theta, interleaved), n);
        free(xs);
        if (got && back && strided) {
            /* the angle is formed in f32 (as PyTorch does): ~1e-4 at position 1000 */
            double e = rel_error(got, want, n, 1.0);
            CHECK(e < 5e-4, "%s rope %s: error %.3g vs the rotation", name, interleaved ? "interleaved" : "half-split", e);
            double *xd = malloc((size_t)n * 8), *gd = malloc((size_t)n * 8);
            for (int64_t i = 0; i < n; i++) xd[i] = x[i], gd[i] = got[i];
            e = rel_error(back, xd, n, 1.0);
            CHECK(e < 1e-5, "%s rope %s: inverse round trip error %.3g", name, interleaved ? "interleaved" : "half-split", e);
            e = rel_error(strided, gd, n, 1.0);
            CHECK(e == 0, "%s rope: a permuted input gives different values (%.3g)", name, e);
            free(xd), free(gd);
        } else {
            CHECK(false, "%s rope: %s", name, wgt_context_error_message(ctx));
        }
        free(got), free(back), free(strided);
        wgt_scope_pop(ctx);
        wgt_context_clear_error(ctx);
    }
    free(x), free(want);
}

/* rope's gradient through the engine: loss = sum(rope(x) * w), so dx = R^T w,
 * the rotation by the negated angles, written out here in double. */
static void check_rope_grad(wgt_context *ctx, const char *name)
{
    const int64_t B = 1, H = 2, T = 5, D = 8, offset = 3;
    const double theta = 500.0;
    int64_t shape[4] = {B, H, T, D}, n = B * H * T * D;
    float x[80], w[80];
    double want[80];
    fill_random(x, n, 1.0f);
    fill_random(w, n, 1.0f);
    for (int layout = 0; layout < 2; layout++) {
        bool interleaved = layout == 1;
        for (int64_t r = 0; r < B * H * T; r++)
            for (int64_t i = 0; i < D / 2; i++) {
                int64_t d0 = interleaved ? 2 * i : i, d1 = interleaved ? 2 * i + 1 : i + D / 2;
                double a = (double)(offset + r % T) * pow(theta, -2.0 * (double)i / (double)D);
                want[r * D + d0] = w[r * D + d0] * cos(a) + w[r * D + d1] * sin(a);
                want[r * D + d1] = -w[r * D + d0] * sin(a) + w[r * D + d1] * cos(a);
            }
        wgt_scope_push(ctx);
        wgt_tensor *xt = upload(ctx, 4, shape, x);
        wgt_tensor_set_requires_grad(xt, true);
        wgt_tensor *y = wgt_rope(xt, offset, theta, interleaved);
        /* upstream gradient w: the gradient of sum(y * w) */
        wgt_status s = y ? wgt_backward_ex(y, upload(ctx, 4, shape, w), false) : wgt_context_status(ctx);
        float *g = s == WGT_OK ? download(wgt_tensor_grad(xt), n) : NULL;
        CHECK(g && rel_error(g, want, n, 1.0) < 1e-5, "%s rope %s gradient: %s", name,
              interleaved ? "interleaved" : "half-split", g ? "values differ" : wgt_context_error_message(ctx));
        free(g);
        wgt_scope_pop(ctx);
        wgt_context_clear_error(ctx);
    }
}

/* ---------------------------------------------------------- linear, matmul */

static void check_linear(wgt_context *ctx, const char *name)
{
    const int64_t B = 3, T = 5, IN = 11, OUT = 7;
    int64_t xs[3] = {B, T, IN}, ws[2] = {OUT, IN}, bs[1] = {OUT}, n = B * T;
    float x[3 * 5 * 11], w[7 * 11], bias[7], dy[3 * 5 * 7];
    fill_random(x, n * IN, 1.0f);
    fill_random(w, OUT * IN, 1.0f);
    fill_random(bias, OUT, 1.0f);
    fill_random(dy, n * OUT, 1.0f);
    double want[3 * 5 * 7], want_nb[3 * 5 * 7], dx[3 * 5 * 11], dw[7 * 11], db[7];
    memset(dx, 0, sizeof(dx)), memset(dw, 0, sizeof(dw)), memset(db, 0, sizeof(db));
    for (int64_t r = 0; r < n; r++)
        for (int64_t o = 0; o < OUT; o++) {
            double s = 0;
            for (int64_t i = 0; i < IN; i++) s += (double)x[r * IN + i] * w[o * IN + i];
            want_nb[r * OUT + o] = s;
            want[r * OUT + o] = s + bias[o];
            db[o] += dy[r * OUT + o];
            for (int64_t i = 0; i < IN; i++) {
                dx[r * IN + i] += (double)dy[r * OUT + o] * w[o * IN + i];
                dw[o * IN + i] += (double)dy[r * OUT + o] * x[r * IN + i];
            }
        }
    wgt_scope_push(ctx);
    wgt_tensor *xt = upload(ctx, 3, xs, x), *wt = upload(ctx, 2, ws, w), *bt = upload(ctx, 1, bs, bias);
    float *y = download(wgt_linear(xt, wt, bt), n * OUT);
    float *y_nb = download(wgt_linear(xt, wt, NULL), n * OUT);
    /* x as a strided view that does not fold into rows: [T, B, IN] transposed */
    float xt_data[3 * 5 * 11];
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) memcpy(&xt_data[(t * B + b) * IN], &x[(b * T + t) * IN], IN * 4);
    int64_t tbs[3] = {T, B, IN};
    float *y_strided = download(wgt_linear(wgt_transpose(upload(ctx, 3, tbs, xt_data), 0, 1), wt, bt), n * OUT);
    /* 1-D x: one row (a vector-matrix product) */
    int64_t in1[1] = {IN};
    float *y_row = download(wgt_linear(upload(ctx, 1, in1, x), wt, bt), OUT);
    /* one output feature (a matrix-vector product): the bias is the same for every row */
    int64_t w1[2] = {1, IN}, b1[1] = {1};
    float *y_col = download(wgt_linear(xt, upload(ctx, 2, w1, w), upload(ctx, 1, b1, bias)), n);
    double want_col[3 * 5];
    for (int64_t r = 0; r < n; r++) want_col[r] = want[r * OUT];
    /* backward: the rule through the engine */
    wgt_tensor *xg = upload(ctx, 3, xs, x), *wg = upload(ctx, 2, ws, w), *bg = upload(ctx, 1, bs, bias);
    wgt_tensor_set_requires_grad(xg, true), wgt_tensor_set_requires_grad(wg, true), wgt_tensor_set_requires_grad(bg, true);
    int64_t ys[3] = {B, T, OUT};
    wgt_tensor *out = wgt_linear(xg, wg, bg);
    wgt_status s = out ? wgt_backward_ex(out, upload(ctx, 3, ys, dy), false) : wgt_context_status(ctx);
    CHECK(s == WGT_OK, "%s linear backward: %s", name, wgt_context_error_message(ctx));
    float *gx = download(wgt_tensor_grad(xg), n * IN), *gw = download(wgt_tensor_grad(wg), OUT * IN);
    float *gb = download(wgt_tensor_grad(bg), OUT);
    if (y && y_nb && y_strided && y_row && gx && gw && gb) {
        CHECK(rel_error(y, want, n * OUT, 1.0) < 2e-6, "%s linear with bias: error %.3g", name, rel_error(y, want, n * OUT, 1.0));
        CHECK(rel_error(y_nb, want_nb, n * OUT, 1.0) < 2e-6, "%s linear without bias", name);
        CHECK(rel_error(y_strided, want, n * OUT, 1.0) < 2e-6, "%s linear of a strided x", name);
        CHECK(rel_error(y_row, want, OUT, 1.0) < 2e-6, "%s linear of a 1-D x", name);
        CHECK(y_col && rel_error(y_col, want_col, n, 1.0) < 2e-6, "%s linear with one output feature", name);
        CHECK(rel_error(gx, dx, n * IN, 1.0) < 1e-5, "%s linear dx", name);
        CHECK(rel_error(gw, dw, OUT * IN, 1.0) < 1e-5, "%s linear dweight", name);
        CHECK(rel_error(gb, db, OUT, 1.0) < 1e-5, "%s linear dbias", name);
    } else {
        CHECK(false, "%s linear: %s", name, wgt_context_error_message(ctx));
    }
    free(y), free(y_nb), free(y_strided), free(y_row), free(y_col), free(gx), free(gw), free(gb);
    wgt_context_clear_error(ctx); /* a failure above must not cascade into the f16 checks */
    /* f16: x, weight and bias rounded to f16; the result within f16 rounding */
    uint16_t xh[3 * 5 * 11], wh[7 * 11], bh[7];
    double want_h[3 * 5 * 7];
    for (int64_t i = 0; i < n * IN; i++) xh[i] = test_f32_to_f16(x[i]);
    for (int64_t i = 0; i < OUT * IN; i++) wh[i] = test_f32_to_f16(w[i]);
    for (int64_t i = 0; i < OUT; i++) bh[i] = test_f32_to_f16(bias[i]);
    for (int64_t r = 0; r < n; r++)
        for (int64_t o = 0; o < OUT; o++) {
            double acc = test_f16_to_f32(bh[o]);
            for (int64_t i = 0; i < IN; i++) acc += (double)test_f16_to_f32(xh[r * IN + i]) * test_f16_to_f32(wh[o * IN + i]);
            want_h[r * OUT + o] = acc;
        }
    wgt_tensor *yh = wgt_linear(wgt_tensor_from_host(ctx, WGT_F16, 3, xs, xh), wgt_tensor_from_host(ctx, WGT_F16, 2, ws, wh),
                                wgt_tensor_from_host(ctx, WGT_F16, 1, bs, bh));
    float *yf = download(yh ? wgt_cast(yh, WGT_F32) : NULL, n * OUT);
    CHECK(yh && wgt_tensor_dtype(yh) == WGT_F16, "%s linear f16: result dtype", name);
    CHECK(yf && rel_error(yf, want_h, n * OUT, 1.0) < 2e-3, "%s linear f16: error %.3g (%s)", name,
          yf ? rel_error(yf, want_h, n * OUT, 1.0) : -1.0, wgt_context_error_message(ctx));
    free(yf);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

/* f16 x f16 -> f32: sums up to ~1e5 (past f16's 65504) must come out exact to
 * f32 rounding, which an f16 intermediate could not give. */
static void check_matmul_ex(wgt_context *ctx, const char *name)
{
    const int64_t M = 9, K = 70, N = 13;
    uint16_t a[9 * 70], b[70 * 13];
    double want[9 * 13];
    for (int64_t i = 0; i < M * K; i++) a[i] = test_f32_to_f16(40.0f + 8.0f * urand());
    for (int64_t i = 0; i < K * N; i++) b[i] = test_f32_to_f16(30.0f + 8.0f * urand());
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += (double)test_f16_to_f32(a[i * K + k]) * test_f16_to_f32(b[k * N + j]);
            want[i * N + j] = s;
        }
    int64_t as[2] = {M, K}, bs[2] = {K, N};
    wgt_scope_push(ctx);
    wgt_tensor *at = wgt_tensor_from_host(ctx, WGT_F16, 2, as, a), *bt = wgt_tensor_from_host(ctx, WGT_F16, 2, bs, b);
    wgt_tensor *c = wgt_matmul_ex(at, bt, WGT_F32);
    float *got = download(c, M * N);
    CHECK(c && wgt_tensor_dtype(c) == WGT_F32, "%s matmul_ex: result dtype", name);
    bool finite = got != NULL;
    for (int64_t i = 0; got && i < M * N; i++) finite &= isfinite(got[i]);
    CHECK(finite && want[0] > 65504.0, "%s matmul_ex: sums past the f16 range are not finite", name);
    CHECK(got && rel_error(got, want, M * N, 1.0) < 1e-6, "%s matmul_ex: error %.3g", name,
          got ? rel_error(got, want, M * N, 1.0) : -1.0);
    /* a transposed f16 operand with the f32 result */
    wgt_tensor *bt_t = wgt_contiguous(wgt_transpose(bt, 0, 1));
    float *got_t = download(wgt_matmul_ex(at, wgt_transpose(bt_t, 0, 1), WGT_F32), M * N);
    CHECK(got_t && rel_error(got_t, want, M * N, 1.0) < 1e-6, "%s matmul_ex of a transposed operand", name);
    CHECK(!wgt_matmul_ex(at, bt, WGT_I32), "%s matmul_ex f16 -> i32 accepted", name);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "matmul_ex f16 -> i32");
    free(got), free(got_t);
    wgt_scope_pop(ctx);
}

/* The WebGPU backend's other attention kernels (chosen by environment
 * variables read when a context is created: one context per variant) against
 * the same double-precision reference, forward and backward: the default ones
 * run in run_backend. */
static void check_kernel_variants(void)
{
    static const char *const variants[][4] = {
        {"WGT_ATTENTION_FORWARD", "rows", "WGT_ATTENTION_BACKWARD", "rows"},   /* a GPU's kernels (its tiles below) */
        {"WGT_ATTENTION_FORWARD", "tiled", "WGT_ATTENTION_BACKWARD", "kv_tiled"},
        {"WGT_ATTENTION_BACKWARD", "q_tiled", NULL, NULL},
        {"WGT_ATTENTION_FORWARD", "flash", "WGT_ATTENTION_TILES", "16,8,64,16,8"},   /* small tiles: several per block */
        {"WGT_ATTENTION_BACKWARD", "rows", "WGT_ATTENTION_TILES", "16,8,16,8,16"},   /* dk and dv in one pass */
    };
    static const config configs[] = {
        {2, 2, 1, 65, 65, 64, true},   /* causal, GQA, T past one tile */
        {1, 3, 1, 9, 13, 80, true},    /* Tq < Tk, D not a power of two */
        {1, 2, 2, 33, 20, 32, false},  /* Tq > Tk, not causal */
    };
    char label[200];
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        /* a GPU's kernels and tiles on every shape; each other variant on one
         * (lavapipe compiles every pipeline anew: each costs seconds of CPU) */
        const char *env[7] = {variants[v][0], variants[v][1], variants[v][2], variants[v][3], NULL, NULL, NULL};
        if (v == 0) env[4] = "WGT_ATTENTION_TILES", env[5] = "128,16,128,16,8";
        wgt_context *ctx = test_context_env(NULL, env);
        if (!ctx) continue;
        size_t n_configs = v == 0 ? sizeof(configs) / sizeof(configs[0]) : 1;
        for (size_t i = 0; i < n_configs; i++) {
            const config *c = &configs[i];
            snprintf(label, sizeof(label), "webgpu %s=%s %s=%s attention Tq%lld Tk%lld D%lld%s", variants[v][0],
                     variants[v][1], variants[v][2] ? variants[v][2] : "", variants[v][3] ? variants[v][3] : "",
                     (long long)c->Tq, (long long)c->Tk, (long long)c->D, c->causal ? " causal" : "");
            check_attention(ctx, label, *c, false, 0.0);
        }
        /* f16 q, k, v, which the forward kernels read in place
         * (attention_load_f16.wgsl): the GPU's fallback and the tiled kernel */
        if (v < 2) {
            snprintf(label, sizeof(label), "webgpu %s=%s", variants[v][0], variants[v][1]);
            check_attention_f16(ctx, label);
        }
        wgt_context_destroy(ctx);
    }
}

/* attention_forward_quad (rows split over subgroup quads; WGT_ATTENTION_FORWARD
 * =quad, here on lavapipe's subgroups) vs the double-precision reference:
 * causal GQA past one key tile, D4 = 12 (three column quads a lane, padded
 * tiles), Tq > Tk (rows that see no key), dropout on, permuted inputs, and
 * small tiles (16 rows, 8 keys: several blocks and tiles, partial last ones),
 * and the workgroups started most work first (by default, all pairs in one
 * group; WGT_ATTENTION_ORDER: groups of 1 or 3 (b, head) pairs: a short last
 * group; 0: pair-major).
 * D > 64 falls back to attention_forward (covered by the variants above). */
static void check_quad_forward(void)
{
    static const struct {
        config c;
        bool permuted;
        double dropout;
        const char *tiles; /* WGT_ATTENTION_TILES, NULL: the kernel's defaults (64 rows, 16 keys) */
        const char *quad_rows; /* WGT_ATTENTION_QUAD_ROWS: 2 (default) or 4 */
        const char *order; /* WGT_ATTENTION_ORDER, NULL: unset */
    } cases[] = {
        {{2, 2, 1, 65, 65, 64, true}, false, 0.0, NULL, "2", NULL},
        {{2, 2, 1, 65, 65, 64, true}, true, 0.2, NULL, "2", NULL},
        {{1, 3, 1, 9, 14, 48, true}, false, 0.3, NULL, "2", NULL},
        {{1, 2, 2, 13, 6, 8, true}, false, 0.0, NULL, "2", NULL},
        {{1, 4, 2, 11, 19, 32, false}, false, 0.25, "16,8,64,16,8", "2", NULL},
        {{1, 2, 1, 37, 37, 64, true}, false, 0.2, "16,8,64,16,8", "2", NULL},
        {{1, 2, 1, 37, 37, 64, true}, false, 0.2, "16,4,64,16,8", "2", NULL}, /* 4-key tiles: 4 rows a quad */
        {{2, 2, 1, 65, 65, 64, true}, true, 0.2, NULL, "4", NULL},
        {{1, 3, 1, 9, 14, 48, true}, false, 0.3, NULL, "4", NULL},
        {{1, 4, 2, 11, 19, 32, false}, false, 0.25, "16,8,64,16,8", "4", NULL},
        {{2, 2, 1, 37, 37, 64, true}, false, 0.2, "16,8,64,16,8", "2", "3"},
        {{1, 3, 1, 37, 37, 32, true}, true, 0.0, "16,8,64,16,8", "2", "1"},
        {{2, 3, 1, 37, 37, 32, true}, false, 0.1, "16,8,64,16,8", "2", "0"},   /* pair-major */
    };
    char label[200];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[9] = {"WGT_ATTENTION_FORWARD", "quad", "WGT_ATTENTION_QUAD_ROWS", cases[i].quad_rows, NULL};
        int n = 4;
        if (cases[i].tiles) env[n++] = "WGT_ATTENTION_TILES", env[n++] = cases[i].tiles;
        if (cases[i].order) env[n++] = "WGT_ATTENTION_ORDER", env[n++] = cases[i].order;
        env[n] = NULL;
        wgt_context *ctx = test_context_env(NULL, env);
        if (!ctx) continue;
        const config *c = &cases[i].c;
        snprintf(label, sizeof(label), "webgpu quad forward (%s rows a quad)%s%s Tq%lld Tk%lld D%lld%s%s dropout %g%s%s",
                 cases[i].quad_rows, cases[i].tiles ? " tiles " : "", cases[i].tiles ? cases[i].tiles : "",
                 (long long)c->Tq, (long long)c->Tk, (long long)c->D, c->causal ? " causal" : "",
                 cases[i].permuted ? " permuted" : "", cases[i].dropout, cases[i].order ? " order " : "",
                 cases[i].order ? cases[i].order : "");
        check_attention(ctx, label, *c, cases[i].permuted, cases[i].dropout);
        wgt_context_destroy(ctx);
    }
    /* f16 q, k, v read in place by the quad kernel (a GPU's default forward) */
    wgt_context *ctx = test_context_env(NULL, (const char *[]){"WGT_ATTENTION_FORWARD", "quad", NULL});
    if (ctx) check_attention_f16(ctx, "webgpu quad forward");
    wgt_context_destroy(ctx);
}

/* attention_backward_dkdv (dk and dv in one pass, 4 invocations per key; the
 * default on a GPU, here forced by WGT_ATTENTION_BACKWARD=dkdv) vs the
 * double-precision reference:
 * dropout on and off: its own small tiles (8 keys, 4 rows: several key blocks
 * and query tiles, partial last ones) on shapes that cross them, 32-key
 * blocks (with dropout the mask then reaches the dq kernel as bits; with 8
 * keys dq draws it again) and the default tiles. D <= 64 only (beyond, the
 * former kernels run). */
static void check_block_kernels(void)
{
    static const struct {
        config c;
        double dropout;
        const char *tiles; /* WGT_ATTENTION_DKDV_TILES, NULL: the defaults */
    } cases[] = {
        {{2, 2, 1, 21, 21, 64, true}, 0.0, "8,4"},    /* causal, GQA 2:1, T not a multiple of a tile */
        {{2, 2, 1, 21, 21, 64, true}, 0.2, "8,4"},    /* the same with dropout */
        {{1, 3, 1, 9, 14, 48, true}, 0.3, "8,4"},     /* Tq < Tk, D4 = 12 (idle column quads) */
        {{1, 2, 2, 13, 6, 8, true}, 0.0, "8,4"},      /* Tq > Tk: rows that see no key (lse -inf) */
        {{1, 4, 2, 11, 19, 32, false}, 0.25, "8,4"},  /* not causal, GQA, Tq != Tk */
        {{1, 2, 1, 70, 70, 64, true}, 0.2, NULL},     /* default tiles: 64 keys, 16-32 rows, partial */
        /* 32-key blocks: the dropout mask goes to dq as bits (words past Tk, rows past Tq) */
        {{2, 2, 1, 37, 45, 64, true}, 0.2, "32,4"},   /* Tq < Tk, GQA, several blocks and tiles */
        {{1, 2, 2, 40, 33, 16, false}, 0.3, "32,8"},  /* not causal, Tq > Tk */
        {{1, 2, 2, 13, 6, 8, true}, 0.3, "32,4"},     /* rows that see no key */
    };
    char label[200];
    /* the knobs are read when a context is created: one per run of cases with
     * the same tiles (those share their compiled kernels) */
    wgt_context *ctx = NULL;
    const char *ctx_tiles = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const config *c = &cases[i].c;
        const char *tiles = cases[i].tiles;
        if (!ctx || (tiles ? !ctx_tiles || strcmp(tiles, ctx_tiles) != 0 : ctx_tiles != NULL)) {
            wgt_context_destroy(ctx);
            ctx = test_context_env(NULL, (const char *[]){"WGT_ATTENTION_BACKWARD", "dkdv",
                                                          "WGT_ATTENTION_DKDV_TILES", tiles, NULL});
            ctx_tiles = tiles;
            if (!ctx) return;
        }
        snprintf(label, sizeof(label), "webgpu dkdv attention B%lld H%lld Hkv%lld Tq%lld Tk%lld D%lld%s dropout %.2f tiles %s",
                 (long long)c->B, (long long)c->H, (long long)c->Hkv, (long long)c->Tq, (long long)c->Tk,
                 (long long)c->D, c->causal ? " causal" : "", cases[i].dropout,
                 cases[i].tiles ? cases[i].tiles : "default");
        check_attention(ctx, label, *c, false, cases[i].dropout);
    }
    wgt_context_destroy(ctx);
}

/* attention_backward_fused (dk, dv and dq partials in one register-blocked
 * pass, dq summed by attention_backward_dq_reduce; WGT_ATTENTION_BACKWARD=fused)
 * vs the double-precision reference: 16-key blocks (WGT_ATTENTION_FUSED_TILE=16:
 * several key blocks and query tiles on small shapes, partial last ones) and
 * the default 32, dropout on and off, causal and not, GQA, Tq != Tk, odd T,
 * D not a multiple of 4 and D4 < 16 (idle column quads), the workgroups
 * started most work first (default: groups of 64 pairs, so one short group
 * here; WGT_ATTENTION_ORDER: groups of 3 pairs over 4 or 8, short last groups,
 * and 0: pair-major). D <= 64 only. */
static void check_fused_kernels(void)
{
    static const struct {
        config c;
        double dropout;
        const char *tile; /* WGT_ATTENTION_FUSED_TILE */
        bool permuted;    /* q, k, v stored [B, T, H, D] (strided; vec4 loads where D % 4 == 0) */
        const char *order; /* WGT_ATTENTION_ORDER, NULL: unset */
    } cases[] = {
        {{2, 2, 1, 37, 37, 64, true}, 0.0, "16", false, NULL},     /* causal, GQA 2:1, odd T past two blocks */
        {{2, 2, 1, 37, 37, 64, true}, 0.2, "16", false, NULL},     /* the same with dropout */
        {{1, 3, 1, 9, 30, 48, true}, 0.3, "16", false, NULL},      /* Tq < Tk, D4 = 12 */
        {{1, 2, 2, 21, 6, 8, true}, 0.0, "16", false, NULL},       /* Tq > Tk: rows that see no key (lse -inf) */
        {{1, 4, 2, 19, 35, 30, false}, 0.25, "16", false, NULL},   /* not causal, GQA, Tq != Tk, D not a multiple of 4 */
        {{1, 2, 1, 70, 70, 64, true}, 0.2, "32", false, NULL},     /* the default tile: several blocks, a partial one */
        {{2, 2, 2, 33, 47, 64, false}, 0.0, "32", false, NULL},    /* not causal, Tq < Tk */
        {{1, 4, 2, 23, 23, 32, true}, 0.2, "16", true, NULL},   /* permuted inputs (vec4 loads through strides) */
        {{1, 2, 1, 17, 17, 30, true}, 0.0, "16", true, NULL},   /* permuted, D % 4 != 0 (scalar loads) */
        {{2, 2, 1, 37, 37, 64, true}, 0.2, "16", false, "3"},   /* 4 pairs in groups of 3, 3 blocks each */
        {{2, 4, 4, 70, 70, 64, true}, 0.0, "32", false, "3"},   /* 8 pairs in groups of 3 */
        {{2, 2, 1, 37, 37, 64, true}, 0.2, "16", false, "0"},   /* pair-major */
    };
    char label[200];
    wgt_context *ctx = NULL;
    const char *ctx_tile = NULL, *ctx_order = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const config *c = &cases[i].c;
        if (!ctx || strcmp(cases[i].tile, ctx_tile) != 0 || cases[i].order != ctx_order) {
            wgt_context_destroy(ctx);
            ctx = test_context_env(NULL, (const char *[]){"WGT_ATTENTION_BACKWARD", "fused", "WGT_ATTENTION_FUSED_TILE",
                                                          cases[i].tile, cases[i].order ? "WGT_ATTENTION_ORDER" : NULL,
                                                          cases[i].order, NULL});
            ctx_tile = cases[i].tile;
            ctx_order = cases[i].order;
            if (!ctx) return;
        }
        snprintf(label, sizeof(label), "webgpu fused attention B%lld H%lld Hkv%lld Tq%lld Tk%lld D%lld%s dropout %.2f tile %s%s%s%s",
                 (long long)c->B, (long long)c->H, (long long)c->Hkv, (long long)c->Tq, (long long)c->Tk,
                 (long long)c->D, c->causal ? " causal" : "", cases[i].dropout, cases[i].tile,
                 cases[i].permuted ? " permuted" : "", cases[i].order ? " order " : "", cases[i].order ? cases[i].order : "");
        check_attention(ctx, label, *c, cases[i].permuted, cases[i].dropout);
    }
    wgt_context_destroy(ctx);
}

/* ------------------------------------------------------------------ main */

static void run_backend(wgt_context *ctx, wgt_context *other, const char *name)
{
    static const config configs[] = {
        {1, 2, 2, 7, 7, 32, false},    /* odd T */
        {2, 2, 1, 65, 65, 64, true},   /* causal, GQA 2:1, T past one tile */
        {1, 3, 1, 1, 9, 80, true},     /* one query row, Tq < Tk; D not a power of two */
        {1, 2, 2, 9, 5, 128, true},    /* Tq > Tk: the first rows see no key */
        {1, 4, 2, 33, 70, 64, false},  /* Tq != Tk, GQA */
        {1, 1, 1, 70, 33, 8, true},    /* small D (general path) */
    };
    char label[160];
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        const config *c = &configs[i];
        snprintf(label, sizeof(label), "%s attention B%lld H%lld Hkv%lld Tq%lld Tk%lld D%lld%s", name, (long long)c->B,
                 (long long)c->H, (long long)c->Hkv, (long long)c->Tq, (long long)c->Tk, (long long)c->D,
                 c->causal ? " causal" : "");
        check_attention(ctx, label, *c, false, 0.0);
    }
    config long_keys = {1, 2, 1, 64, 4096, 32, false}; /* one tile of queries, 4096 keys */
    snprintf(label, sizeof(label), "%s attention Tq 64 Tk 4096", name);
    check_attention(ctx, label, long_keys, false, 0.0);
    snprintf(label, sizeof(label), "%s attention T 4096", name);
    check_long_sequence(ctx, label);
    snprintf(label, sizeof(label), "%s attention", name);
    check_attention_f16(ctx, label);
    config strided = {1, 4, 2, 17, 17, 32, true};
    snprintf(label, sizeof(label), "%s attention permuted inputs", name);
    check_attention(ctx, label, strided, true, 0.0);
    config drop = {1, 2, 1, 19, 23, 32, true};
    snprintf(label, sizeof(label), "%s attention dropout 0.3 vs the reference", name);
    check_attention(ctx, label, drop, false, 0.3);
    config fd = {1, 2, 1, 5, 6, 8, true};
    snprintf(label, sizeof(label), "%s attention finite differences", name);
    check_finite_differences(ctx, label, fd);
    snprintf(label, sizeof(label), "%s attention dropout", name);
    check_dropout(ctx, other, label);
    check_attention_bad_input(ctx);
    if (strcmp(name, "webgpu") == 0) check_kernel_variants();
    if (strcmp(name, "webgpu") == 0) check_block_kernels();
    if (strcmp(name, "webgpu") == 0) check_quad_forward();
    if (strcmp(name, "webgpu") == 0) check_fused_kernels();
    check_rope(ctx, name);
    check_rope_grad(ctx, name);
    check_linear(ctx, name);
    check_matmul_ex(ctx, name);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    if (!cpu || !gpu) return test_summary();
    run_backend(cpu, gpu, "cpu");
    run_backend(gpu, cpu, "webgpu");
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
