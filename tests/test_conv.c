/*
 * The convolution family on both backends: conv2d, conv_transpose2d,
 * max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm, group_norm, forward
 * and backward (through the tape: loss = sum(out * r) for a fixed random r, so
 * d loss / d out = r).
 *
 * References are computed here in double by loops written independently of
 * the library: convolutions scatter every (output, tap) product (the library
 * gathers), pooling windows are enumerated from PyTorch's definitions, batch
 * norm's backward is checked against its formula and, on the CPU, against
 * central finite differences of the forward.
 *
 * Shapes are the awkward ones: odd sizes, batch 1, channels not a multiple of
 * 4, non-square kernels, per-side padding, stride and dilation, groups and
 * depthwise, output_padding, more output channels than one 64-row tile and
 * more columns than one 64-column tile, the 1x1 GEMM path, ceil mode, ties
 * and NaN in max pooling. Run with WGT_CONV_TILE=64 and =128 to cover both
 * implicit-GEMM tile shapes (by default small problems take the 64 x 64 one).
 *
 * Tolerances: f32 |got - ref| <= 2e-4 (1 + |ref|) (f32 sums of up to ~1000
 * terms against double); f16 inputs and outputs 1e-2 (1 + |ref|).
 */
#define _POSIX_C_SOURCE 200809L /* setenv: the WebGPU convolution's kernel variants */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static uint32_t rng_state = 2024u;

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(test_xorshift(&rng_state) >> 8) / 16777216.0;
}

static int64_t numel(int ndim, const int64_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= s[i];
    return n;
}

/* n random values in [lo, hi), rounded to what dtype holds. */
static double *random_values(int64_t n, double lo, double hi, wgt_dtype dtype)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        float f = (float)uniform(lo, hi);
        v[i] = dtype == WGT_F16 ? test_f16_to_f32(test_f32_to_f16(f)) : f;
    }
    return v;
}

static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const double *v)
{
    int64_t n = numel(ndim, shape);
    void *buf = malloc((size_t)(n ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == WGT_F16) ((uint16_t *)buf)[i] = test_f32_to_f16((float)v[i]);
        else ((float *)buf)[i] = (float)v[i];
    }
    wgt_tensor *t = wgt_tensor_from_host(ctx, dtype, ndim, shape, buf);
    free(buf);
    return t;
}

static double *download(wgt_tensor *t)
{
    if (!t) return NULL;
    int64_t n = wgt_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    void *buf = malloc((size_t)(n ? n : 1) * 4);
    wgt_dtype dt = wgt_tensor_dtype(t);
    wgt_status s = wgt_tensor_read(t, buf, (size_t)n * wgt_dtype_size(dt));
    CHECK(s == WGT_OK, "read: %s", wgt_context_error_message(wgt_tensor_context(t)));
    for (int64_t i = 0; i < n; i++)
        out[i] = dt == WGT_F16 ? test_f16_to_f32(((uint16_t *)buf)[i]) : ((float *)buf)[i];
    free(buf);
    return out;
}

/* Compares t with ref[n]; returns whether every element is within tolerance. */
static bool compare(const char *what, const char *backend, wgt_tensor *t, const double *ref, int64_t n, double tol)
{
    CHECK(t != NULL, "%s %s: no tensor", backend, what);
    if (!t) return false;
    CHECK(wgt_tensor_numel(t) == n, "%s %s: %lld elements, expected %lld", backend, what,
          (long long)wgt_tensor_numel(t), (long long)n);
    if (wgt_tensor_numel(t) != n) return false;
    double *got = download(t);
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        bool both_nan = isnan(got[i]) && isnan(ref[i]);
        double e = both_nan ? 0 : fabs(got[i] - ref[i]) / (1 + fabs(ref[i]));
        if (!(e <= worst)) worst = e, at = i;
    }
    bool ok = worst <= tol;
    CHECK(ok, "%s %s: worst error %.3g at %lld (got %.9g, expected %.9g), tolerance %.3g", backend, what, worst,
          (long long)at, at >= 0 ? got[at] : 0.0, at >= 0 ? ref[at] : 0.0, tol);
    free(got);
    return ok;
}

/* loss = sum(out * r) -> backward; r is uploaded in out's dtype. */
static bool backward_with(wgt_tensor *out, const double *r)
{
    wgt_context *ctx = wgt_tensor_context(out);
    wgt_tensor *rt = upload(ctx, wgt_tensor_dtype(out), wgt_tensor_ndim(out), wgt_tensor_shape(out), r);
    wgt_tensor *prod = wgt_mul(out, rt);
    wgt_tensor *loss = prod ? wgt_sum(prod, NULL, 0, false) : NULL;
    wgt_status s = loss ? wgt_backward(loss) : wgt_context_status(ctx);
    CHECK(s == WGT_OK, "backward: %s", wgt_context_error_message(ctx));
    wgt_tensor_release(rt), wgt_tensor_release(prod), wgt_tensor_release(loss);
    return s == WGT_OK;
}

/* ------------------------------------------------------------ convolution */

typedef struct conv_case {
    const char *name;
    int64_t n, c, h, w, k, kh, kw;
    int64_t stride[2], padding[4], dilation[2], groups, out_pad[2];
    bool bias, transposed;
    wgt_dtype dtype;
} conv_case;

static const conv_case conv_cases[] = {
    {"per-side padding, stride, dilation, 3x2 kernel", 2, 3, 7, 9, 5, 3, 2, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1, {0, 0}, true, false, WGT_F32},
    {"depthwise 3x3 pad 1, channel multiplier 2", 2, 5, 6, 5, 10, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 5, {0, 0}, false, false, WGT_F32},
    {"groups 2, 1x1", 1, 6, 5, 7, 4, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2, {0, 0}, true, false, WGT_F32},
    {"1x1 GEMM path", 3, 5, 5, 6, 7, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"batch 1, 5x5 stride 2, 70 output channels", 1, 3, 13, 11, 70, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"3x3 pad 1, 16 -> 9 channels, 2 x 20 x 19 columns", 2, 16, 20, 19, 9, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"3x3, 150 output channels (two 128-row tiles)", 2, 8, 12, 12, 150, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"1x1 stride 2 (downsample)", 2, 8, 9, 9, 6, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, {0, 0}, false, false, WGT_F32},
    {"f16 3x3 stride 2", 2, 3, 9, 8, 5, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F16},
    {"transposed stride 2, output_padding 1, 3x3", 2, 4, 5, 4, 3, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1}, true, true, WGT_F32},
    {"transposed groups 2, 2x3 kernel, stride (1, 3), dilation 2", 1, 4, 4, 5, 6, 2, 3, {1, 3}, {0, 1, 1, 0}, {2, 2}, 2, {0, 2}, false, true, WGT_F32},
    /* long weight-gradient reductions (N OH OW of 500 to 1000 terms: the
     * WebGPU backend splits them by itself, split-K) and stride phases of the
     * input gradient (a stride-2 dilation-2 kernel lands on one phase only,
     * the other phases' dx are all zero) */
    {"split-K 3x3 pad 1, 3 -> 5 channels, 2 x 23 x 21 terms", 2, 3, 23, 21, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"split-K 3x3 stride 2 dilation 2", 3, 4, 30, 29, 6, 3, 3, {2, 2}, {2, 2, 2, 2}, {2, 2}, 1, {0, 0}, false, false, WGT_F32},
    {"split-K depthwise 3x3 stride 2", 2, 6, 33, 31, 6, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6, {0, 0}, true, false, WGT_F32},
    {"split-K groups 2, 5x3 kernel, stride (2, 3), dilation (1, 2)", 2, 4, 26, 31, 6, 5, 3, {2, 3}, {2, 1, 1, 3}, {1, 2}, 2, {0, 0}, false, false, WGT_F32},
    {"stem-like 3 -> 8, 7x7 stride 2 pad 3", 2, 3, 30, 28, 8, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"one input row, stride 2 (phase rows past the input)", 1, 2, 1, 5, 3, 1, 3, {2, 2}, {0, 0, 1, 1}, {1, 1}, 1, {0, 0}, false, false, WGT_F32},
    {"f16 stem-like 3 -> 4, 7x7 stride 2 pad 3", 1, 3, 17, 19, 4, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, {0, 0}, false, false, WGT_F16},
    /* 3x3 stride 1 with >= 32 channels: the WebGPU backend's Winograd path
     * by default (webgpu_conv_winograd.c); sizes not multiples of its 4 x 4
     * tiles, per-side padding 0 to 2, and the transposed form (its input
     * gradient kernel) */
    {"winograd 3x3 pad 1, 32 -> 40 channels, 13 x 10", 2, 32, 13, 10, 40, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F32},
    {"winograd 3x3 per-side padding (2, 0, 0, 1), 33 -> 36", 1, 33, 9, 11, 36, 3, 3, {1, 1}, {2, 0, 0, 1}, {1, 1}, 1, {0, 0}, false, false, WGT_F32},
    {"winograd f16 3x3 pad 1, 32 -> 32, 7 x 7", 3, 32, 7, 7, 32, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, true, false, WGT_F16},
    {"winograd weight gradient in 2 parts (270 tiles, 2 zero tiles of padding)", 1, 32, 58, 70, 33, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0}, false, false, WGT_F32},
    {"winograd transposed 3x3 stride 1 pad (2, 2, 0, 1), 34 -> 32", 2, 34, 6, 7, 32, 3, 3, {1, 1}, {2, 2, 0, 1}, {1, 1}, 1, {0, 0}, true, true, WGT_F32},
};

/* The (transposed) convolution's output size. */
static void conv_out_size(const conv_case *cc, int64_t *oh, int64_t *ow)
{
    if (!cc->transposed) {
        *oh = (cc->h + cc->padding[0] + cc->padding[1] - cc->dilation[0] * (cc->kh - 1) - 1) / cc->stride[0] + 1;
        *ow = (cc->w + cc->padding[2] + cc->padding[3] - cc->dilation[1] * (cc->kw - 1) - 1) / cc->stride[1] + 1;
    } else {
        *oh = (cc->h - 1) * cc->stride[0] - cc->padding[0] - cc->padding[1] + cc->dilation[0] * (cc->kh - 1) + cc->out_pad[0] + 1;
        *ow = (cc->w - 1) * cc->stride[1] - cc->padding[2] - cc->padding[3] + cc->dilation[1] * (cc->kw - 1) + cc->out_pad[1] + 1;
    }
}

/* Reference by scattering every product. For conv2d, in = x [n, c, h, w],
 * out = y [n, k, oh, ow], w [k, c/g, kh, kw]; tap (a, b) of output (i, j)
 * reads input (i s - pt + a d, ...). The transposed convolution is the same
 * relation with the roles of its input (the relation's "out") and output
 * swapped: x [n, c, h, w] plays the relation's output side. */
typedef struct conv_ref {
    double *y, *dx, *dw, *db;
} conv_ref;

static conv_ref conv_reference(const conv_case *cc, const double *x, const double *w, const double *bias,
                               const double *r, int64_t oh, int64_t ow)
{
    int64_t n = cc->n, g = cc->groups;
    /* the relation: "big" [n, cb, hb, wb] is the convolution's input, "small" [n, cs, hs, ws] its output */
    int64_t cb, hb, wb, cs, hs, ws;
    if (!cc->transposed) cb = cc->c, hb = cc->h, wb = cc->w, cs = cc->k, hs = oh, ws = ow;
    else cb = cc->k, hb = oh, wb = ow, cs = cc->c, hs = cc->h, ws = cc->w;
    int64_t cbg = cb / g, csg = cs / g;
    int64_t ysize = cc->transposed ? n * cc->k * oh * ow : n * cc->k * oh * ow;
    int64_t xsize = n * cc->c * cc->h * cc->w, wsize = cs * cbg * cc->kh * cc->kw;
    conv_ref R;
    R.y = calloc((size_t)ysize, sizeof(double));
    R.dx = calloc((size_t)xsize, sizeof(double));
    R.dw = calloc((size_t)wsize, sizeof(double));
    R.db = calloc((size_t)cc->k, sizeof(double));
    for (int64_t b = 0; b < n; b++)
        for (int64_t so = 0; so < cs; so++)
            for (int64_t i = 0; i < hs; i++)
                for (int64_t j = 0; j < ws; j++)
                    for (int64_t ci = 0; ci < cbg; ci++)
                        for (int64_t a = 0; a < cc->kh; a++)
                            for (int64_t e = 0; e < cc->kw; e++) {
                                int64_t ih = i * cc->stride[0] - cc->padding[0] + a * cc->dilation[0];
                                int64_t iw = j * cc->stride[1] - cc->padding[2] + e * cc->dilation[1];
                                if (ih < 0 || ih >= hb || iw < 0 || iw >= wb) continue;
                                int64_t big = ((b * cb + (so / csg) * cbg + ci) * hb + ih) * wb + iw;
                                int64_t small = ((b * cs + so) * hs + i) * ws + j;
                                int64_t wi = ((so * cbg + ci) * cc->kh + a) * cc->kw + e;
                                if (!cc->transposed) {
                                    R.y[small] += w[wi] * x[big];
                                    R.dx[big] += w[wi] * r[small];
                                    R.dw[wi] += r[small] * x[big];
                                } else {
                                    R.y[big] += w[wi] * x[small];
                                    R.dx[small] += w[wi] * r[big];
                                    R.dw[wi] += x[small] * r[big];
                                }
                            }
    for (int64_t b = 0; b < n; b++)
        for (int64_t co = 0; co < cc->k; co++)
            for (int64_t p = 0; p < oh * ow; p++) {
                int64_t o = (b * cc->k + co) * oh * ow + p;
                if (bias) R.y[o] += bias[co];
                R.db[co] += r[o];
            }
    return R;
}

static void test_conv_case(wgt_context *ctx, const char *backend, const conv_case *cc)
{
    int64_t oh, ow;
    conv_out_size(cc, &oh, &ow);
    int64_t xs[4] = {cc->n, cc->c, cc->h, cc->w};
    int64_t ws[4] = {cc->transposed ? cc->c : cc->k, cc->transposed ? cc->k / cc->groups : cc->c / cc->groups, cc->kh, cc->kw};
    int64_t ysize = cc->n * cc->k * oh * ow;
    double *x = random_values(numel(4, xs), -1, 1, cc->dtype), *w = random_values(numel(4, ws), -1, 1, cc->dtype);
    double *bias = cc->bias ? random_values(cc->k, -1, 1, cc->dtype) : NULL;
    double *r = random_values(ysize, -1, 1, cc->dtype);
    conv_ref R = conv_reference(cc, x, w, bias, r, oh, ow);
    wgt_tensor *xt = upload(ctx, cc->dtype, 4, xs, x), *wt = upload(ctx, cc->dtype, 4, ws, w);
    wgt_tensor *bt = bias ? upload(ctx, cc->dtype, 1, &cc->k, bias) : NULL;
    wgt_tensor_set_requires_grad(xt, true);
    wgt_tensor_set_requires_grad(wt, true);
    if (bt) wgt_tensor_set_requires_grad(bt, true);
    wgt_conv2d_options o;
    wgt_conv2d_options_init(&o);
    memcpy(o.stride, cc->stride, sizeof(o.stride));
    memcpy(o.padding, cc->padding, sizeof(o.padding));
    memcpy(o.dilation, cc->dilation, sizeof(o.dilation));
    o.groups = cc->groups;
    memcpy(o.output_padding, cc->out_pad, sizeof(o.output_padding));
    wgt_tensor *y = cc->transposed ? wgt_conv_transpose2d(xt, wt, bt, &o) : wgt_conv2d(xt, wt, bt, &o);
    CHECK(y != NULL, "%s %s: %s", backend, cc->name, wgt_context_error_message(ctx));
    /* The WebGPU backend may take Winograd F(4x4, 3x3) for a 3x3 stride-1
     * undilated ungrouped convolution (webgpu_conv_winograd.c; by default
     * with >= 32 channels, WGT_CONV_WINOGRAD=all for any): its transforms
     * scale by up to 8 and 1/24, so its f32 rounding is 10-30x the direct
     * sum's (worst element errors 2e-5 to 3e-4 here, against 1e-6 to 2e-5
     * for the implicit GEMM on the same cases) */
    bool winograd = strcmp(backend, "cpu") != 0 && cc->kh == 3 && cc->kw == 3 && cc->stride[0] == 1 &&
                    cc->stride[1] == 1 && cc->dilation[0] == 1 && cc->dilation[1] == 1 && cc->groups == 1;
    double tol = cc->dtype == WGT_F16 ? 1e-2 : winograd ? 1e-3 : 2e-4;
    char what[160];
    if (y) {
        const int64_t *s = wgt_tensor_shape(y);
        CHECK(wgt_tensor_ndim(y) == 4 && s[0] == cc->n && s[1] == cc->k && s[2] == oh && s[3] == ow,
              "%s %s: output shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld, %lld]", backend, cc->name,
              (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3], (long long)cc->n, (long long)cc->k,
              (long long)oh, (long long)ow);
        snprintf(what, sizeof(what), "%s forward", cc->name);
        compare(what, backend, y, R.y, ysize, tol);
        if (backward_with(y, r)) {
            snprintf(what, sizeof(what), "%s d input", cc->name);
            compare(what, backend, wgt_tensor_grad(xt), R.dx, numel(4, xs), tol);
            snprintf(what, sizeof(what), "%s d weight", cc->name);
            compare(what, backend, wgt_tensor_grad(wt), R.dw, numel(4, ws), tol);
            if (bt) {
                snprintf(what, sizeof(what), "%s d bias", cc->name);
                compare(what, backend, wgt_tensor_grad(bt), R.db, cc->k, tol);
            }
        }
    }
    wgt_context_clear_error(ctx);
    wgt_tensor_release(y), wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(bt);
    free(x), free(w), free(bias), free(r), free(R.y), free(R.dx), free(R.dw), free(R.db);
}

/* ---------------------------------------------------------------- pooling */

typedef struct pool_case {
    const char *name;
    int kind; /* 0 max, 1 avg, 2 adaptive */
    int64_t n, c, h, w;
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    bool ceil_mode, count_include_pad;
    int64_t out[2];  /* adaptive */
    int values;      /* 0 random, 1 small integers (ties), 2 with NaN */
} pool_case;

static const pool_case pool_cases[] = {
    {"max 3x3 stride 2 pad 1 ceil", 0, 2, 3, 9, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, {0, 0}, 0},
    {"max 2x3 dilation (2, 1) stride (1, 2)", 0, 1, 5, 7, 9, {2, 3}, {1, 2}, {0, 1}, {2, 1}, false, true, {0, 0}, 0},
    {"max ties go to the first", 0, 2, 2, 6, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false, true, {0, 0}, 1},
    {"max with NaN", 0, 1, 3, 5, 5, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, {0, 0}, 2},
    /* the GPU's max backward takes 2 x 4 input elements per invocation where W % 4 == 0: odd H, ties */
    {"max 3x3 stride 2 pad 1, odd height", 0, 2, 3, 13, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, {0, 0}, 0},
    {"max 3x3 stride 2 pad 1, ties", 0, 1, 2, 11, 12, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, {0, 0}, 1},
    {"max 3x3 stride 2 pad 1, width 14", 0, 2, 3, 13, 14, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, {0, 0}, 0},
    {"max 2x2 stride 1, width 3", 0, 2, 2, 5, 3, {2, 2}, {1, 1}, {0, 0}, {1, 1}, false, true, {0, 0}, 1},
    /* ... and its forward 4 outputs of a row per invocation where OW % 4 == 0: padding, ties, NaN, ceil */
    {"max 3x3 stride 2 pad 1, 8 outputs a row", 0, 2, 3, 10, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, {0, 0}, 1},
    {"max 2x3 stride (1, 2), NaN", 0, 1, 3, 6, 15, {2, 3}, {1, 2}, {1, 1}, {1, 1}, true, true, {0, 0}, 2},
    {"max 3x3 stride 1 pad 1, ties", 0, 1, 2, 5, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false, true, {0, 0}, 1},
    {"avg 3x3 stride 2 pad 1 include pad, ceil", 1, 2, 3, 7, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, {0, 0}, 0},
    {"avg 3x2 pad (1, 1) exclude pad", 1, 1, 5, 6, 5, {3, 2}, {2, 1}, {1, 1}, {1, 1}, false, false, {0, 0}, 0},
    {"adaptive 7x5 -> 3x2", 2, 2, 3, 7, 5, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, {3, 2}, 0},
    {"adaptive global", 2, 3, 5, 4, 6, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, {1, 1}, 0},
    {"adaptive 5x6 -> 7x4 (upsampling rows)", 2, 1, 2, 5, 6, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, {7, 4}, 0},
};

static int64_t pool_out(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = num / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

static void test_pool_case(wgt_context *ctx, const char *backend, const pool_case *pc)
{
    int64_t xs[4] = {pc->n, pc->c, pc->h, pc->w}, nx = numel(4, xs);
    int64_t oh, ow;
    if (pc->kind == 2) oh = pc->out[0], ow = pc->out[1];
    else {
        int64_t d0 = pc->kind == 0 ? pc->dilation[0] : 1, d1 = pc->kind == 0 ? pc->dilation[1] : 1;
        oh = pool_out(pc->h, pc->kernel[0], pc->padding[0], pc->stride[0], d0, pc->ceil_mode);
        ow = pool_out(pc->w, pc->kernel[1], pc->padding[1], pc->stride[1], d1, pc->ceil_mode);
    }
    int64_t ny = pc->n * pc->c * oh * ow, planes = pc->n * pc->c;
    double *x = random_values(nx, -1, 1, WGT_F32), *r = random_values(ny, -1, 1, WGT_F32);
    if (pc->values == 1)
        for (int64_t i = 0; i < nx; i++) x[i] = (double)(test_xorshift(&rng_state) % 3);
    if (pc->values == 2)
        for (int64_t i = 0; i < nx; i += 7) x[i] = NAN;
    double *y = calloc((size_t)ny, sizeof(double)), *dx = calloc((size_t)nx, sizeof(double));
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                int64_t o = (p * oh + i) * ow + j;
                const double *xp = x + p * pc->h * pc->w;
                double *dxp = dx + p * pc->h * pc->w;
                if (pc->kind == 0) { /* every tap inside the input, row-major; first max wins; NaN wins */
                    double best = -INFINITY;
                    int64_t where = -1;
                    for (int64_t a = 0; a < pc->kernel[0]; a++)
                        for (int64_t b = 0; b < pc->kernel[1]; b++) {
                            int64_t ih = i * pc->stride[0] - pc->padding[0] + a * pc->dilation[0];
                            int64_t iw = j * pc->stride[1] - pc->padding[1] + b * pc->dilation[1];
                            if (ih < 0 || ih >= pc->h || iw < 0 || iw >= pc->w) continue;
                            double v = xp[ih * pc->w + iw];
                            if (where < 0 || v > best || (isnan(v) && !isnan(best))) best = v, where = ih * pc->w + iw;
                            else if (isnan(v)) where = ih * pc->w + iw, best = v; /* PyTorch: a later NaN takes over */
                        }
                    y[o] = best;
                    dxp[where] += r[o];
                } else {
                    int64_t h0, h1, w0, w1, div;
                    if (pc->kind == 2) {
                        h0 = (i * pc->h) / oh, h1 = ((i + 1) * pc->h + oh - 1) / oh;
                        w0 = (j * pc->w) / ow, w1 = ((j + 1) * pc->w + ow - 1) / ow;
                        div = (h1 - h0) * (w1 - w0);
                    } else {
                        h0 = i * pc->stride[0] - pc->padding[0], w0 = j * pc->stride[1] - pc->padding[1];
                        h1 = h0 + pc->kernel[0], w1 = w0 + pc->kernel[1];
                        if (h1 > pc->h + pc->padding[0]) h1 = pc->h + pc->padding[0];
                        if (w1 > pc->w + pc->padding[1]) w1 = pc->w + pc->padding[1];
                        int64_t with_pad = (h1 - h0) * (w1 - w0);
                        if (h0 < 0) h0 = 0;
                        if (w0 < 0) w0 = 0;
                        if (h1 > pc->h) h1 = pc->h;
                        if (w1 > pc->w) w1 = pc->w;
                        div = pc->count_include_pad ? with_pad : (h1 - h0) * (w1 - w0);
                    }
                    double s = 0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * pc->w + iw], dxp[ih * pc->w + iw] += r[o] / div;
                    y[o] = s / div;
                }
            }
    wgt_tensor *xt = upload(ctx, WGT_F32, 4, xs, x);
    wgt_tensor_set_requires_grad(xt, true);
    wgt_pool2d_options o;
    wgt_pool2d_options_init(&o, pc->kernel[0], pc->kernel[1]);
    memcpy(o.stride, pc->stride, sizeof(o.stride));
    memcpy(o.padding, pc->padding, sizeof(o.padding));
    memcpy(o.dilation, pc->dilation, sizeof(o.dilation));
    o.ceil_mode = pc->ceil_mode;
    o.count_include_pad = pc->count_include_pad;
    wgt_tensor *yt = pc->kind == 0 ? wgt_max_pool2d(xt, &o)
                     : pc->kind == 1 ? wgt_avg_pool2d(xt, &o)
                                     : wgt_adaptive_avg_pool2d(xt, pc->out[0], pc->out[1]);
    CHECK(yt != NULL, "%s %s: %s", backend, pc->name, wgt_context_error_message(ctx));
    char what[160];
    if (yt) {
        const int64_t *s = wgt_tensor_shape(yt);
        CHECK(s[2] == oh && s[3] == ow, "%s %s: output %lld x %lld, expected %lld x %lld", backend, pc->name,
              (long long)s[2], (long long)s[3], (long long)oh, (long long)ow);
        snprintf(what, sizeof(what), "%s forward", pc->name);
        compare(what, backend, yt, y, ny, 1e-5);
        if (pc->values != 2 && backward_with(yt, r)) {
            snprintf(what, sizeof(what), "%s d input", pc->name);
            compare(what, backend, wgt_tensor_grad(xt), dx, nx, 1e-5);
        }
    }
    wgt_context_clear_error(ctx);
    wgt_tensor_release(yt), wgt_tensor_release(xt);
    free(x), free(r), free(y), free(dx);
}

/* ------------------------------------------------------------- batch norm */

typedef struct bn_case {
    const char *name;
    int ndim;
    int64_t shape[4];
    bool affine, training;
    double offset; /* added to x (then rounded to f32): a mean far from 0 tests for cancellation */
} bn_case;

static const bn_case bn_cases[] = {
    {"training affine [3, 5, 7, 6]", 4, {3, 5, 7, 6}, true, true, 0.0},
    {"training plain [2, 3, 1, 9]", 4, {2, 3, 1, 9}, false, true, 0.0},
    {"training [17, 6] (batch norm 1d)", 2, {17, 6, 0, 0}, true, true, 0.0},
    {"eval affine [2, 4, 5, 3]", 4, {2, 4, 5, 3}, true, false, 0.0},
    /* more than 2048 values per channel: the GPU splits each channel in chunks and merges their statistics */
    {"training affine [8, 3, 40, 40] (7 chunks per channel)", 4, {8, 3, 40, 40}, true, true, 0.0},
    {"eval [4, 2, 50, 50] (5 chunks per channel)", 4, {4, 2, 50, 50}, true, false, 0.0},
    /* rows shorter than the workgroup (L = 49): the GPU's walk crosses several rows per step */
    {"training affine [48, 3, 7, 7] (L < 256)", 4, {48, 3, 7, 7}, true, true, 0.0},
    {"training affine [8, 2, 30, 30], values near 100", 4, {8, 2, 30, 30}, true, true, 100.0},
};

static void test_bn_case(wgt_context *ctx, const char *backend, const bn_case *bc)
{
    int64_t nx = numel(bc->ndim, bc->shape), n = bc->shape[0], c = bc->shape[1], l = nx / (n * c);
    const double eps = 1e-5, momentum = 0.1;
    double *x = random_values(nx, -2, 3, WGT_F32), *r = random_values(nx, -1, 1, WGT_F32);
    for (int64_t i = 0; bc->offset != 0 && i < nx; i++) x[i] = (float)(x[i] + bc->offset);
    double *w = random_values(c, 0.5, 1.5, WGT_F32), *b = random_values(c, -1, 1, WGT_F32);
    double *rm = random_values(c, -0.5, 0.5, WGT_F32), *rv = random_values(c, 0.5, 2, WGT_F32);
    double *y = malloc(sizeof(double) * (size_t)nx), *dx = malloc(sizeof(double) * (size_t)nx);
    double *dw = calloc((size_t)c, sizeof(double)), *db = calloc((size_t)c, sizeof(double));
    double *rm_next = malloc(sizeof(double) * (size_t)c), *rv_next = malloc(sizeof(double) * (size_t)c);
    for (int64_t ch = 0; ch < c; ch++) {
        double mean = 0, var = 0, m = (double)(n * l);
        if (bc->training) {
            for (int64_t i = 0; i < n; i++)
                for (int64_t k = 0; k < l; k++) mean += x[(i * c + ch) * l + k];
            mean /= m;
            for (int64_t i = 0; i < n; i++)
                for (int64_t k = 0; k < l; k++) var += pow(x[(i * c + ch) * l + k] - mean, 2);
            var /= m;
            rm_next[ch] = 0.9 * rm[ch] + 0.1 * mean;
            rv_next[ch] = 0.9 * rv[ch] + 0.1 * var * m / (m - 1);
        } else {
            mean = rm[ch], var = rv[ch], rm_next[ch] = rm[ch], rv_next[ch] = rv[ch];
        }
        double rstd = 1 / sqrt(var + eps), gw = bc->affine ? w[ch] : 1, gb = bc->affine ? b[ch] : 0;
        double sum_r = 0, sum_r_xhat = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < l; k++) {
                int64_t e = (i * c + ch) * l + k;
                double xhat = (x[e] - mean) * rstd;
                y[e] = xhat * gw + gb;
                sum_r += r[e], sum_r_xhat += r[e] * xhat;
            }
        dw[ch] = sum_r_xhat, db[ch] = sum_r;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < l; k++) {
                int64_t e = (i * c + ch) * l + k;
                double xhat = (x[e] - mean) * rstd;
                dx[e] = bc->training ? gw * rstd * (r[e] - sum_r / m - xhat * sum_r_xhat / m) : gw * rstd * r[e];
            }
    }
    wgt_tensor *xt = upload(ctx, WGT_F32, bc->ndim, bc->shape, x);
    wgt_tensor *wt = bc->affine ? upload(ctx, WGT_F32, 1, &c, w) : NULL, *bt = bc->affine ? upload(ctx, WGT_F32, 1, &c, b) : NULL;
    wgt_tensor *rmt = upload(ctx, WGT_F32, 1, &c, rm), *rvt = upload(ctx, WGT_F32, 1, &c, rv);
    wgt_tensor_set_requires_grad(xt, true);
    if (wt) wgt_tensor_set_requires_grad(wt, true), wgt_tensor_set_requires_grad(bt, true);
    wgt_tensor *yt = wgt_batch_norm(xt, rmt, rvt, wt, bt, bc->training, momentum, eps);
    CHECK(yt != NULL, "%s %s: %s", backend, bc->name, wgt_context_error_message(ctx));
    char what[160];
    if (yt) {
        snprintf(what, sizeof(what), "%s forward", bc->name);
        compare(what, backend, yt, y, nx, 2e-4);
        snprintf(what, sizeof(what), "%s running_mean", bc->name);
        compare(what, backend, rmt, rm_next, c, 1e-5);
        snprintf(what, sizeof(what), "%s running_var (unbiased)", bc->name);
        compare(what, backend, rvt, rv_next, c, 1e-5);
        if (backward_with(yt, r)) {
            snprintf(what, sizeof(what), "%s d input", bc->name);
            compare(what, backend, wgt_tensor_grad(xt), dx, nx, 2e-4);
            if (wt) {
                snprintf(what, sizeof(what), "%s d weight", bc->name);
                compare(what, backend, wgt_tensor_grad(wt), dw, c, 2e-4);
                snprintf(what, sizeof(what), "%s d bias", bc->name);
                compare(what, backend, wgt_tensor_grad(bt), db, c, 2e-4);
            }
        }
    }
    wgt_context_clear_error(ctx);
    wgt_tensor_release(yt), wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(bt);
    wgt_tensor_release(rmt), wgt_tensor_release(rvt);
    free(x), free(r), free(w), free(b), free(rm), free(rv), free(y), free(dx), free(dw), free(db);
    free(rm_next), free(rv_next);
}

/* Central differences of sum(batch_norm(x) * r) in double on the host formula
 * are what the analytic dx above claims; this checks the claim through the
 * library's own forward (CPU, f32, h = 1e-2). */
static void test_bn_finite_differences(wgt_context *ctx)
{
    int64_t shape[4] = {2, 2, 3, 2}, nx = 24, c = 2;
    double *x = random_values(nx, -2, 2, WGT_F32), *r = random_values(nx, -1, 1, WGT_F32);
    double w[2] = {0.7, 1.3}, b[2] = {0.1, -0.2};
    wgt_tensor *wt = upload(ctx, WGT_F32, 1, &c, w), *bt = upload(ctx, WGT_F32, 1, &c, b);
    wgt_tensor *rt = upload(ctx, WGT_F32, 4, shape, r);
    wgt_tensor *xt = upload(ctx, WGT_F32, 4, shape, x);
    wgt_tensor_set_requires_grad(xt, true);
    wgt_tensor *y = wgt_batch_norm(xt, NULL, NULL, wt, bt, true, 0.1, 1e-5);
    double *analytic = NULL;
    if (y && backward_with(y, r)) analytic = download(wgt_tensor_grad(xt));
    wgt_tensor_release(y), wgt_tensor_release(xt);
    double worst = 0;
    for (int64_t i = 0; analytic && i < nx; i++) {
        double f[2];
        for (int s = 0; s < 2; s++) {
            double saved = x[i];
            x[i] = saved + (s ? -1e-2 : 1e-2);
            wgt_tensor *xp = upload(ctx, WGT_F32, 4, shape, x);
            wgt_tensor *yp = wgt_batch_norm(xp, NULL, NULL, wt, bt, true, 0.1, 1e-5);
            wgt_tensor *prod = wgt_mul(yp, rt), *loss = wgt_sum(prod, NULL, 0, false);
            double *v = download(loss);
            f[s] = v ? v[0] : NAN;
            free(v);
            wgt_tensor_release(xp), wgt_tensor_release(yp), wgt_tensor_release(prod), wgt_tensor_release(loss);
            x[i] = saved;
        }
        double fd = (f[0] - f[1]) / 2e-2, e = fabs(fd - analytic[i]) / (1 + fabs(analytic[i]));
        if (!(e <= worst)) worst = e;
    }
    CHECK(analytic && worst <= 3e-3, "batch_norm dx vs finite differences: worst %.3g", worst);
    free(analytic), free(x), free(r);
    wgt_tensor_release(wt), wgt_tensor_release(bt), wgt_tensor_release(rt);
}

/* ------------------------------------------------------------- group norm */

/* x [2, 6, 4, 3] in 3 groups (and [3, 4, 5] in 4 groups without weight): forward
 * and every gradient against the formulas in double. */
static void test_group_norm(wgt_context *ctx, const char *backend, int ndim, const int64_t *shape, int64_t groups,
                            bool affine)
{
    int64_t nx = numel(ndim, shape), n = shape[0], c = shape[1], l = nx / (n * c), per = (c / groups) * l;
    double *x = random_values(nx, -2, 3, WGT_F32), *r = random_values(nx, -1, 1, WGT_F32);
    double *w = random_values(c, 0.5, 1.5, WGT_F32), *b = random_values(c, -1, 1, WGT_F32);
    double *y = malloc(sizeof(double) * (size_t)nx), *dx = malloc(sizeof(double) * (size_t)nx);
    double *dw = calloc((size_t)c, sizeof(double)), *db = calloc((size_t)c, sizeof(double));
    for (int64_t i = 0; i < n; i++)
        for (int64_t gi = 0; gi < groups; gi++) {
            int64_t base = (i * groups + gi) * per; /* a group is contiguous in NCHW */
            double mean = 0, var = 0, mg = 0, mgx = 0;
            for (int64_t e = 0; e < per; e++) mean += x[base + e];
            mean /= per;
            for (int64_t e = 0; e < per; e++) var += pow(x[base + e] - mean, 2);
            var /= per;
            double rstd = 1 / sqrt(var + 1e-5);
            for (int64_t e = 0; e < per; e++) {
                int64_t ch = gi * (c / groups) + e / l;
                double xhat = (x[base + e] - mean) * rstd, gw = affine ? w[ch] : 1;
                y[base + e] = xhat * gw + (affine ? b[ch] : 0);
                dw[ch] += r[base + e] * xhat, db[ch] += r[base + e];
                mg += r[base + e] * gw, mgx += r[base + e] * gw * xhat;
            }
            mg /= per, mgx /= per;
            for (int64_t e = 0; e < per; e++) {
                int64_t ch = gi * (c / groups) + e / l;
                double xhat = (x[base + e] - mean) * rstd, gw = affine ? w[ch] : 1;
                dx[base + e] = rstd * (r[base + e] * gw - mg - xhat * mgx);
            }
        }
    wgt_tensor *xt = upload(ctx, WGT_F32, ndim, shape, x);
    wgt_tensor *wt = affine ? upload(ctx, WGT_F32, 1, &c, w) : NULL, *bt = affine ? upload(ctx, WGT_F32, 1, &c, b) : NULL;
    wgt_tensor_set_requires_grad(xt, true);
    if (wt) wgt_tensor_set_requires_grad(wt, true), wgt_tensor_set_requires_grad(bt, true);
    wgt_tensor *yt = wgt_group_norm(xt, groups, wt, bt, 1e-5);
    CHECK(yt != NULL, "%s group_norm: %s", backend, wgt_context_error_message(ctx));
    if (yt) {
        compare("group_norm forward", backend, yt, y, nx, 2e-4);
        if (backward_with(yt, r)) {
            compare("group_norm d input", backend, wgt_tensor_grad(xt), dx, nx, 2e-4);
            if (wt) compare("group_norm d weight", backend, wgt_tensor_grad(wt), dw, c, 2e-4);
            if (bt) compare("group_norm d bias", backend, wgt_tensor_grad(bt), db, c, 2e-4);
        }
    }
    CHECK(wgt_group_norm(xt, 5, NULL, NULL, 1e-5) == NULL, "%s group_norm: channels not divisible by groups", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "group_norm groups");
    wgt_context_clear_error(ctx);
    wgt_tensor_release(yt), wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(bt);
    free(x), free(r), free(w), free(b), free(y), free(dx), free(dw), free(db);
}

/* -------------------------------------------------------------- bad input */

/* A 3x3 stride-1 convolution whose Winograd temporaries do not fit the
 * context's memory budget (WebGPU: webgpu_conv_winograd.c falls back to the
 * implicit GEMM): y and dw must still come out, equal to the CPU backend's,
 * with the context usable. x [2, 32, 32, 32], w [32, 32, 3, 3]: y is 256 KiB;
 * Winograd's temporaries are ~1.3 MiB a pass, the implicit GEMM's split-K
 * partials at most a few outputs, so a budget of what is in use + 4 y fits
 * only the latter. */
static void test_winograd_memory_budget(wgt_context *gpu)
{
    wgt_context *cpu = test_cpu_context();
    CHECK(cpu != NULL, "winograd under a memory budget: a CPU context");
    if (!cpu) return;
    const int64_t xs[4] = {2, 32, 32, 32}, ws[4] = {32, 32, 3, 3};
    const int64_t n = numel(4, xs), ysize = n * 4;
    double *x = random_values(n, -1, 1, WGT_F32), *w = random_values(numel(4, ws), -1, 1, WGT_F32);
    double *r = random_values(n, -1, 1, WGT_F32);
    wgt_conv2d_options o;
    wgt_conv2d_options_init(&o);
    for (int i = 0; i < 4; i++) o.padding[i] = 1;
    double *want_y = NULL, *want_dw = NULL, *got_y = NULL, *got_dw = NULL;
    wgt_context *ctxs[2] = {cpu, gpu};
    for (int k = 0; k < 2; k++) {
        wgt_context *ctx = ctxs[k];
        wgt_tensor *xt = upload(ctx, WGT_F32, 4, xs, x), *wt = upload(ctx, WGT_F32, 4, ws, w);
        wgt_tensor *rt = upload(ctx, WGT_F32, 4, xs, r);
        wgt_tensor_set_requires_grad(wt, true);
        wgt_memory_stats ms;
        wgt_memory_stats_get(ctx, &ms);
        if (k == 1) wgt_memory_set_budget(ctx, ms.bytes_in_use + 4 * (uint64_t)ysize);
        wgt_tensor *y = wgt_conv2d(xt, wt, NULL, &o);
        CHECK(y != NULL, "winograd under a memory budget (%s): %s", k ? "webgpu" : "cpu", wgt_context_error_message(ctx));
        bool ok = y && wgt_backward_ex(y, rt, false) == WGT_OK;
        CHECK(ok, "winograd under a memory budget (%s), backward: %s", k ? "webgpu" : "cpu", wgt_context_error_message(ctx));
        if (ok) {
            *(k ? &got_y : &want_y) = download(y);
            *(k ? &got_dw : &want_dw) = download(wgt_tensor_grad(wt));
        }
        CHECK(wgt_context_status(ctx) == WGT_OK, "winograd under a memory budget: context usable: %s",
              wgt_context_error_message(ctx));
        wgt_memory_set_budget(ctx, 0);
        wgt_tensor_release(y), wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(rt);
    }
    if (want_y && got_y) {
        double worst = 0, worst_dw = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got_y[i] - want_y[i]) / (1 + fabs(want_y[i])));
        for (int64_t i = 0; i < numel(4, ws); i++)
            worst_dw = fmax(worst_dw, fabs(got_dw[i] - want_dw[i]) / (1 + fabs(want_dw[i])));
        CHECK(worst <= 2e-4 && worst_dw <= 2e-4, "winograd under a memory budget: webgpu vs cpu worst error y %.3g, "
              "dw %.3g (tolerance 2e-4: the implicit GEMM's, so Winograd did not run)", worst, worst_dw);
    }
    free(x), free(w), free(r), free(want_y), free(want_dw), free(got_y), free(got_dw);
    wgt_context_destroy(cpu);
}

static void test_bad_input(wgt_context *ctx, const char *backend)
{
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 4, 3, 3};
    wgt_tensor *x = wgt_zeros(ctx, WGT_F32, 4, xs), *w = wgt_zeros(ctx, WGT_F32, 4, ws);
    wgt_conv2d_options o;
    char what[96];
    snprintf(what, sizeof(what), "%s conv2d kernel larger than the padded input", backend);
    int64_t big[4] = {6, 4, 7, 3};
    wgt_tensor *wbig = wgt_zeros(ctx, WGT_F32, 4, big);
    CHECK(wgt_conv2d(x, wbig, NULL, NULL) == NULL, "%s", what);
    CHECK(strstr(wgt_context_error_message(ctx), "wgt_conv2d") && strstr(wgt_context_error_message(ctx), "[1, 4, 5, 5]"),
          "message names the call and shapes: %s", wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, what);
    wgt_conv2d_options_init(&o);
    o.stride[1] = 0;
    CHECK(wgt_conv2d(x, w, NULL, &o) == NULL, "%s zero stride", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "zero stride");
    o.stride[1] = -2;
    CHECK(wgt_conv2d(x, w, NULL, &o) == NULL, "%s negative stride", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "negative stride");
    wgt_conv2d_options_init(&o);
    o.groups = 3;
    CHECK(wgt_conv2d(x, w, NULL, &o) == NULL, "%s channels not divisible by groups", backend);
    CHECK(strstr(wgt_context_error_message(ctx), "groups 3") != NULL, "message: %s", wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "groups");
    int64_t wrong[4] = {6, 3, 3, 3};
    wgt_tensor *wbad = wgt_zeros(ctx, WGT_F32, 4, wrong);
    CHECK(wgt_conv2d(x, wbad, NULL, NULL) == NULL, "%s weight shape mismatch", backend);
    CHECK(strstr(wgt_context_error_message(ctx), "[6, 3, 3, 3]") != NULL, "message: %s", wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "weight shape");
    int64_t five = 5;
    wgt_tensor *bbad = wgt_zeros(ctx, WGT_F32, 1, &five);
    CHECK(wgt_conv2d(x, w, bbad, NULL) == NULL, "%s bias shape mismatch", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "bias shape");
    int64_t x3[3] = {4, 5, 5};
    wgt_tensor *xbad = wgt_zeros(ctx, WGT_F32, 3, x3);
    CHECK(wgt_conv2d(xbad, w, NULL, NULL) == NULL, "%s 3-D input", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "3-D input");
    wgt_tensor *xi = wgt_zeros(ctx, WGT_I32, 4, xs);
    CHECK(wgt_conv2d(xi, w, NULL, NULL) == NULL, "%s integer input", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "integer input");
    wgt_conv2d_options_init(&o);
    o.padding[0] = -1;
    CHECK(wgt_conv2d(x, w, NULL, &o) == NULL, "%s negative padding", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "negative padding");
    wgt_conv2d_options_init(&o);
    o.output_padding[0] = 1;
    CHECK(wgt_conv2d(x, w, NULL, &o) == NULL, "%s output_padding on conv2d", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "output_padding");
    int64_t wts[4] = {4, 2, 3, 3};
    wgt_tensor *wt = wgt_zeros(ctx, WGT_F32, 4, wts);
    wgt_conv2d_options_init(&o);
    o.padding[0] = o.padding[1] = 5;
    CHECK(wgt_conv_transpose2d(x, wt, NULL, &o) == NULL, "%s transposed empty output", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "transposed empty output");
    wgt_conv2d_options_init(&o);
    o.stride[0] = 2;
    o.output_padding[0] = 2;
    CHECK(wgt_conv_transpose2d(x, wt, NULL, &o) == NULL, "%s output_padding >= stride", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "output_padding >= stride");

    wgt_pool2d_options p;
    wgt_pool2d_options_init(&p, 7, 2);
    CHECK(wgt_max_pool2d(x, &p) == NULL, "%s pool kernel larger than input", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "pool kernel larger than input");
    wgt_pool2d_options_init(&p, 2, 2);
    p.stride[0] = -1;
    CHECK(wgt_avg_pool2d(x, &p) == NULL, "%s pool negative stride", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "pool negative stride");
    wgt_pool2d_options_init(&p, 2, 2);
    p.padding[1] = 2;
    CHECK(wgt_max_pool2d(x, &p) == NULL, "%s pool padding over half the kernel", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "pool padding");
    CHECK(wgt_max_pool2d(x, NULL) == NULL, "%s pool without options", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "pool without options");
    CHECK(wgt_adaptive_avg_pool2d(x, 0, 3) == NULL, "%s adaptive pool to an empty output", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "adaptive empty");

    int64_t three = 3, one_shape[4] = {1, 4, 1, 1};
    wgt_tensor *v3 = wgt_zeros(ctx, WGT_F32, 1, &three), *x1 = wgt_zeros(ctx, WGT_F32, 4, one_shape);
    CHECK(wgt_batch_norm(x, NULL, NULL, v3, NULL, true, 0.1, 1e-5) == NULL, "%s batch_norm weight shape", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "batch_norm weight shape");
    CHECK(wgt_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5) == NULL, "%s eval without running stats", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "eval without running stats");
    CHECK(wgt_batch_norm(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL, "%s one value per channel", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "one value per channel");
    CHECK(wgt_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, -1) == NULL, "%s negative eps", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "negative eps");

    wgt_tensor *list[] = {x, w, wbig, wbad, bbad, xbad, xi, wt, v3, x1};
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) wgt_tensor_release(list[i]);
}

/* The WebGPU convolution's paths that the default choice may not reach at
 * these sizes, each forced by its knob (webgpu_conv.c): split-K with a fixed
 * split count, every tile shape (16 x 256 and 8 x 512 are for few rows, like
 * the stem's input gradient), both slice depths, single-buffered tiles, the
 * GEMM for input gradients of few channels (else the direct kernel), and the
 * former paths (front-end splits summed by a
 * REDUCE, unphased input gradient, B loads along columns, every load doing
 * its own index divisions), and the parts of WGT_CONV_V2. */
static void test_conv_variants(void)
{
    static const char *variants[][8] = {
        {"WGT_CONV_SPLITK", "5", NULL, NULL, NULL, NULL, NULL, NULL},
        {"WGT_CONV_SPLITK", "2", "WGT_CONV_TILE", "128", NULL, NULL, NULL, NULL},
        {"WGT_CONV_TILE", "16x256", NULL, NULL, NULL, NULL, NULL, NULL},
        {"WGT_CONV_TILE", "8x512", NULL, NULL, NULL, NULL, NULL, NULL},
        {"WGT_CONV_TILE", "64x128", "WGT_CONV_SPLITK", "3", "WGT_CONV_PHASES", "0", "WGT_CONV_STEM", "0"},
        {"WGT_CONV_TILE", "128x64", NULL, NULL, NULL, NULL, NULL, NULL},
        {"WGT_CONV_BK", "16", "WGT_CONV_SPLITK", "45", "WGT_CONV_DBUF", "0", NULL, NULL},
        {"WGT_CONV_SPLITK", "0", "WGT_CONV_PHASES", "0", "WGT_CONV_LOADS", "0", "WGT_CONV_RTAB", "0"},
        /* WGT_CONV_V2: the 8 x 8 tiles of 128 and 64 invocations, with
         * splits summed by conv_splitk_sum (few splits) or conv_splitk_reduce
         * (many), and the stem input gradient (conv_stem_dx) */
        {"WGT_CONV_V2", "all", "WGT_CONV_TILE", "64x128w", "WGT_CONV_SPLITK", "3", NULL, NULL},
        {"WGT_CONV_V2", "all", "WGT_CONV_TILE", "128x64w", "WGT_CONV_SPLITK", "20", NULL, NULL},
        {"WGT_CONV_V2", "all", "WGT_CONV_TILE", "64x64w", "WGT_CONV_BK", "16", "WGT_CONV_PHASES", "0"},
        {"WGT_CONV_V2", "reduce,stem", "WGT_CONV_SPLITK", "2", NULL, NULL, NULL, NULL},
        {"WGT_CONV_V2", "ctab", "WGT_CONV_LOADS", "0", "WGT_CONV_TILE", "64x128", "WGT_CONV_SPLITK", "4"},
        /* Winograd F(4x4, 3x3) never (the implicit GEMM on the cases that
         * take it by default), and for every 3x3 stride-1 case */
        {"WGT_CONV_WINOGRAD", "0", NULL, NULL, NULL, NULL, NULL, NULL},
        {"WGT_CONV_WINOGRAD", "all", NULL, NULL, NULL, NULL, NULL, NULL},
    };
    /* the knobs are read when a context is created: one context per variant */
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        char label[128] = "webgpu";
        size_t used = strlen(label);
        for (int i = 0; i < 8; i += 2)
            if (variants[v][i])
                used += (size_t)snprintf(label + used, sizeof(label) - used, " %s=%s", variants[v][i], variants[v][i + 1]);
        const char *env[9] = {variants[v][0], variants[v][1], variants[v][2], variants[v][3],
                              variants[v][4], variants[v][5], variants[v][6], variants[v][7], NULL};
        wgt_context *ctx = test_context_env(NULL, env);
        if (!ctx) continue;
        for (size_t i = 0; i < sizeof(conv_cases) / sizeof(conv_cases[0]); i++) test_conv_case(ctx, label, &conv_cases[i]);
        CHECK(wgt_context_status(ctx) == WGT_OK, "%s: context usable: %s", label, wgt_context_error_message(ctx));
        wgt_context_destroy(ctx);
    }
}

int main(void)
{
    wgt_context *contexts[2] = {test_cpu_context(), test_webgpu_context()};
    const char *names[2] = {"cpu", "webgpu"};
    for (int k = 0; k < 2; k++) {
        CHECK(contexts[k] != NULL, "%s context", names[k]);
        if (!contexts[k]) continue;
        rng_state = 2024u; /* the same data on both backends */
        for (size_t i = 0; i < sizeof(conv_cases) / sizeof(conv_cases[0]); i++)
            test_conv_case(contexts[k], names[k], &conv_cases[i]);
        for (size_t i = 0; i < sizeof(pool_cases) / sizeof(pool_cases[0]); i++)
            test_pool_case(contexts[k], names[k], &pool_cases[i]);
        for (size_t i = 0; i < sizeof(bn_cases) / sizeof(bn_cases[0]); i++)
            test_bn_case(contexts[k], names[k], &bn_cases[i]);
        if (k == 0) test_bn_finite_differences(contexts[k]);
        test_group_norm(contexts[k], names[k], 4, (const int64_t[]){2, 6, 4, 3}, 3, true);
        test_group_norm(contexts[k], names[k], 3, (const int64_t[]){3, 4, 5}, 4, false);
        test_bad_input(contexts[k], names[k]);
        if (k == 1) test_conv_variants();
        if (k == 1) test_winograd_memory_budget(contexts[1]);
        CHECK(wgt_context_status(contexts[k]) == WGT_OK, "%s context usable: %s", names[k],
              wgt_context_error_message(contexts[k]));
        wgt_execution_stats es;
        if (wgt_execution_stats_get(contexts[k], &es) == WGT_OK)
            printf("%s: %llu kernel dispatches\n", names[k], (unsigned long long)es.dispatches);
        wgt_context_destroy(contexts[k]);
    }
    return test_summary();
}
