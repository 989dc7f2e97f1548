/*
 * WebGPU REDUCE, CUMSUM and SOFTMAX against the CPU backend (the oracle),
 * through the public API: every reduction over single, multiple, non-adjacent
 * and all axes, keepdim, scalar inputs, empty axes, size-1 dims, odd sizes,
 * transposed / sliced-with-step / broadcast inputs (read in place), NaN and
 * inf, argmax/argmin ties, f16 / i32 / u8 / bool inputs, long rows (two-pass
 * reductions, chunked scans, long softmax rows), softmax and cumsum along a
 * leading axis, and a grid of more than 65535 workgroups. The WebGPU context
 * runs with debug guards, so every result is also checked for writes outside
 * its elements.
 *
 * Comparison: integer results (i32/u8/bool outputs, arg*) exactly; float
 * results must agree on NaN and on +-inf exactly, and finite values within
 *   |gpu - cpu| <= tol * (|cpu| + mean |cpu|)
 * with tol: 1e-5 for f32 rows of up to ~1000 elements (both sides are exact to
 * a few f32 ulps), 1e-4 for var/std, softmax and longer rows, 5e-4 for rows of
 * 10^5..10^6 elements (the GPU sums in f32 in tree order, the CPU in double),
 * and 2e-3 for f16 results (one f16 rounding of a value that may differ in the
 * last f32 bits: an f16 ulp is ~1e-3 relative).
 *
 * Sizes stay small (<= ~1M elements): CI runs this on lavapipe.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static wgt_context *gpu, *cpu;

/* ------------------------------------------------------------------ data */

static uint32_t rng_state = 2463534242u;

typedef enum fill_kind {
    FILL_UNIFORM,  /* floats in [-1, 1) (f16: multiples of 1/256); i32 [-1000, 1000]; u8 any; bool 0/1 */
    FILL_SPECIAL,  /* uniform with NaN, +inf and -inf sprinkled in (floats) */
    FILL_TIES,     /* integers 0..4: many equal values */
    FILL_WRAP,     /* i32: any 32-bit value, so sums and products wrap */
    FILL_WIDE,     /* floats uniform in [-8, 8) (softmax: exp over a wide range) */
    FILL_NEG_INF,  /* floats: mostly -inf; runs of 16 and elements 4096..8191 (mod 12288) entirely */
} fill_kind;

static void *make_data(wgt_dtype dtype, int64_t n, fill_kind fill)
{
    size_t size = wgt_dtype_size(dtype);
    unsigned char *data = malloc((size_t)(n > 0 ? n : 1) * size);
    for (int64_t i = 0; i < n; i++) {
        double v = (double)(test_xorshift(&rng_state) % 2000000) / 1000000.0 - 1.0;
        uint32_t r = test_xorshift(&rng_state);
        if (fill == FILL_TIES) v = (double)(r % 5);
        if (fill == FILL_WIDE) v *= 8.0;
        if (fill == FILL_SPECIAL && r % 97 == 0) v = NAN;
        if (fill == FILL_SPECIAL && r % 89 == 1) v = INFINITY;
        if (fill == FILL_SPECIAL && r % 83 == 2) v = -INFINITY;
        if (fill == FILL_NEG_INF && (r % 4 != 0 || (i / 16) % 3 == 0 || (i / 4096) % 3 == 1)) v = -INFINITY;
        switch (dtype) {
        case WGT_F32: ((float *)data)[i] = (float)v; break;
        case WGT_F16: ((uint16_t *)data)[i] = test_f32_to_f16(isfinite(v) ? (float)(round(v * 256.0) / 256.0) : (float)v); break;
        case WGT_I32:
            ((int32_t *)data)[i] = fill == FILL_WRAP ? (int32_t)r : fill == FILL_TIES ? (int32_t)v : (int32_t)(r % 2001) - 1000;
            break;
        case WGT_U8: data[i] = fill == FILL_TIES ? (unsigned char)v : (unsigned char)r; break;
        default: data[i] = (unsigned char)(fill == FILL_TIES ? (r % 5 == 0) : (r & 1)); break;
        }
    }
    return data;
}

/* The same input on both backends, plus a name for messages. */
typedef struct pair {
    wgt_tensor *g, *c;
    char name[128];
} pair;

static pair make_pair(const char *name, wgt_dtype dtype, int ndim, const int64_t *shape, fill_kind fill)
{
    pair p;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *data = make_data(dtype, n, fill);
    p.g = wgt_tensor_from_host(gpu, dtype, ndim, shape, data);
    p.c = wgt_tensor_from_host(cpu, dtype, ndim, shape, data);
    free(data);
    snprintf(p.name, sizeof(p.name), "%s %s", name, wgt_dtype_name(dtype));
    CHECK(p.g && p.c, "%s: input creation failed: %s / %s", p.name, wgt_context_error_message(gpu),
          wgt_context_error_message(cpu));
    if (!p.g || !p.c) {
        wgt_context_clear_error(gpu);
        wgt_context_clear_error(cpu);
    }
    return p;
}

static void pair_release(pair *p)
{
    wgt_tensor_release(p->g);
    wgt_tensor_release(p->c);
    p->g = p->c = NULL;
}

/* Replaces p by a view of itself. */
static void pair_transpose(pair *p, int a, int b)
{
    wgt_tensor *g = wgt_transpose(p->g, a, b), *c = wgt_transpose(p->c, a, b);
    pair_release(p);
    p->g = g;
    p->c = c;
    strncat(p->name, " transposed", sizeof(p->name) - strlen(p->name) - 1);
}

static void pair_slice(pair *p, int axis, int64_t start, int64_t stop, int64_t step)
{
    wgt_tensor *g = wgt_slice(p->g, axis, start, stop, step), *c = wgt_slice(p->c, axis, start, stop, step);
    pair_release(p);
    p->g = g;
    p->c = c;
    strncat(p->name, " sliced", sizeof(p->name) - strlen(p->name) - 1);
}

static void pair_expand(pair *p, int ndim, const int64_t *shape)
{
    wgt_tensor *g = wgt_expand(p->g, ndim, shape), *c = wgt_expand(p->c, ndim, shape);
    pair_release(p);
    p->g = g;
    p->c = c;
    strncat(p->name, " broadcast", sizeof(p->name) - strlen(p->name) - 1);
}

/* ------------------------------------------------------------ comparison */

static double element(const void *data, wgt_dtype dtype, int64_t i)
{
    switch (dtype) {
    case WGT_F32: return ((const float *)data)[i];
    case WGT_F16: return (double)test_f16_to_f32(((const uint16_t *)data)[i]);
    case WGT_I32: return ((const int32_t *)data)[i];
    default: return ((const unsigned char *)data)[i];
    }
}

/* Compares results g (gpu) and c (cpu) and releases both. */
static void compare(const char *what, wgt_tensor *g, wgt_tensor *c, double tol)
{
    if (!g || !c) {
        CHECK(false, "%s: failed: gpu: %s; cpu: %s", what, wgt_context_error_message(gpu),
              wgt_context_error_message(cpu));
        wgt_context_clear_error(gpu);
        wgt_context_clear_error(cpu);
        wgt_tensor_release(g);
        wgt_tensor_release(c);
        return;
    }
    bool same_shape = wgt_tensor_ndim(g) == wgt_tensor_ndim(c) && wgt_tensor_dtype(g) == wgt_tensor_dtype(c);
    for (int d = 0; same_shape && d < wgt_tensor_ndim(g); d++) same_shape = wgt_tensor_dim(g, d) == wgt_tensor_dim(c, d);
    CHECK(same_shape, "%s: result shapes or dtypes differ", what);
    wgt_dtype dtype = wgt_tensor_dtype(c);
    int64_t n = wgt_tensor_numel(c);
    size_t bytes = (size_t)(n > 0 ? n : 1) * wgt_dtype_size(dtype);
    void *hg = calloc(1, bytes), *hc = calloc(1, bytes);
    wgt_status sg = same_shape ? wgt_tensor_read(g, hg, bytes) : WGT_ERR_SHAPE_MISMATCH;
    wgt_status sc = wgt_tensor_read(c, hc, bytes);
    CHECK(sg == WGT_OK && sc == WGT_OK, "%s: read failed: %s / %s", what, wgt_context_error_message(gpu),
          wgt_context_error_message(cpu));
    wgt_status guards = wgt_tensor_check_guards(g);
    CHECK(guards == WGT_OK, "%s: write outside the result: %s", what, wgt_context_error_message(gpu));
    if (sg == WGT_OK && sc == WGT_OK && guards == WGT_OK) {
        bool exact = dtype != WGT_F32 && dtype != WGT_F16;
        double mean_abs = 0;
        int64_t finite = 0;
        for (int64_t i = 0; i < n; i++) {
            double y = element(hc, dtype, i);
            if (isfinite(y)) {
                mean_abs += fabs(y);
                finite++;
            }
        }
        mean_abs = finite ? mean_abs / (double)finite : 0;
        int64_t bad = -1;
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = element(hg, dtype, i), y = element(hc, dtype, i);
            bool ok;
            if (exact || !isfinite(y) || !isfinite(x)) {
                ok = (x == y) || (x != x && y != y);
            } else {
                double e = fabs(x - y) / (fabs(y) + mean_abs + 1e-30);
                if (e > worst) worst = e;
                ok = e <= tol;
            }
            if (!ok && bad < 0) bad = i;
        }
        CHECK(bad < 0, "%s: element %lld of %lld: gpu %.9g, cpu %.9g (worst relative error %.3g, tol %.3g)", what,
              (long long)bad, (long long)n, bad >= 0 ? element(hg, dtype, bad) : 0.0,
              bad >= 0 ? element(hc, dtype, bad) : 0.0, worst, tol);
    }
    free(hg);
    free(hc);
    wgt_tensor_release(g);
    wgt_tensor_release(c);
}

/* ------------------------------------------------------------- the ops */

static wgt_tensor *apply_reduce(wgt_op op, wgt_tensor *x, const int *axes, int n_axes, bool keepdim, int correction)
{
    switch (op) {
    case WGT_OP_VAR: return wgt_var(x, axes, n_axes, correction, keepdim);
    case WGT_OP_STD: return wgt_std(x, axes, n_axes, correction, keepdim);
    case WGT_OP_ARGMAX: return wgt_argmax(x, axes[0], keepdim);
    case WGT_OP_ARGMIN: return wgt_argmin(x, axes[0], keepdim);
    default: return wgt_reduce(op, x, axes, n_axes, keepdim);
    }
}

static void check_reduce_c(const pair *p, wgt_op op, const int *axes, int n_axes, bool keepdim, int correction,
                           double tol)
{
    if (!p->g || !p->c) return;
    char what[256], list[64] = "";
    for (int i = 0; i < n_axes; i++) snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? "," : "", axes[i]);
    snprintf(what, sizeof(what), "%s: %s axes [%s]%s%s", p->name, wgt_op_name(op), n_axes ? list : "all",
             keepdim ? " keepdim" : "", correction == 0 && (op == WGT_OP_VAR || op == WGT_OP_STD) ? " correction 0" : "");
    compare(what, apply_reduce(op, p->g, axes, n_axes, keepdim, correction),
            apply_reduce(op, p->c, axes, n_axes, keepdim, correction), tol);
}

static void check_reduce(const pair *p, wgt_op op, const int *axes, int n_axes, bool keepdim, double tol)
{
    check_reduce_c(p, op, axes, n_axes, keepdim, 1, tol);
}

/* sum, mean, max, min, prod, var, std (tol scaled up for var/std), and
 * argmax/argmin over axes[0] when n_axes == 1. */
static void check_all_reductions(const pair *p, const int *axes, int n_axes, bool keepdim, double tol)
{
    static const wgt_op ops[] = {WGT_OP_SUM, WGT_OP_MEAN, WGT_OP_MAX, WGT_OP_MIN, WGT_OP_PROD, WGT_OP_VAR, WGT_OP_STD};
    wgt_dtype dtype = p->g ? wgt_tensor_dtype(p->g) : WGT_F32;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (dtype == WGT_BOOL && (ops[i] == WGT_OP_VAR || ops[i] == WGT_OP_STD)) continue;
        double t = (ops[i] == WGT_OP_VAR || ops[i] == WGT_OP_STD) ? (tol > 1e-4 ? tol : 1e-4) : tol;
        check_reduce(p, ops[i], axes, n_axes, keepdim, t);
    }
    if (n_axes == 1) {
        check_reduce(p, WGT_OP_ARGMAX, axes, 1, keepdim, 0);
        check_reduce(p, WGT_OP_ARGMIN, axes, 1, keepdim, 0);
    }
}

typedef enum axis_op { AXIS_CUMSUM, AXIS_SOFTMAX, AXIS_LOG_SOFTMAX } axis_op;

static void check_axis(const pair *p, axis_op op, int axis, double tol)
{
    if (!p->g || !p->c) return;
    static const char *names[] = {"cumsum", "softmax", "log_softmax"};
    char what[256];
    snprintf(what, sizeof(what), "%s: %s axis %d", p->name, names[op], axis);
    wgt_tensor *g, *c;
    if (op == AXIS_CUMSUM) {
        g = wgt_cumsum(p->g, axis);
        c = wgt_cumsum(p->c, axis);
    } else if (op == AXIS_SOFTMAX) {
        g = wgt_softmax(p->g, axis);
        c = wgt_softmax(p->c, axis);
    } else {
        g = wgt_log_softmax(p->g, axis);
        c = wgt_log_softmax(p->c, axis);
    }
    compare(what, g, c, tol);
}

static void check_softmaxes(const pair *p, int axis, double tol)
{
    check_axis(p, AXIS_SOFTMAX, axis, tol);
    check_axis(p, AXIS_LOG_SOFTMAX, axis, tol);
}

/* ------------------------------------------------------------------ tests */

static void test_basic_axes(void)
{
    int64_t shape[2] = {37, 53};
    pair p = make_pair("[37,53]", WGT_F32, 2, shape, FILL_UNIFORM);
    int a0[1] = {0}, a1[1] = {1}, a01[2] = {0, 1}, neg[1] = {-1};
    check_all_reductions(&p, a1, 1, false, 1e-5);
    check_all_reductions(&p, a0, 1, true, 1e-5);
    check_all_reductions(&p, a01, 2, false, 1e-5);
    check_all_reductions(&p, NULL, 0, true, 1e-5);
    check_all_reductions(&p, neg, 1, false, 1e-5);
    check_reduce_c(&p, WGT_OP_VAR, a1, 1, false, 0, 1e-4);
    check_reduce_c(&p, WGT_OP_STD, a0, 1, true, 0, 1e-4);
    pair_release(&p);
}

static void test_scalar_and_small(void)
{
    int a0[1] = {0};
    pair s = make_pair("scalar", WGT_F32, 0, NULL, FILL_UNIFORM);
    check_all_reductions(&s, NULL, 0, false, 1e-6);
    check_all_reductions(&s, a0, 1, true, 1e-6);
    check_axis(&s, AXIS_CUMSUM, 0, 1e-6);
    check_softmaxes(&s, 0, 1e-6);
    pair_release(&s);
    pair si = make_pair("scalar", WGT_I32, 0, NULL, FILL_UNIFORM);
    check_all_reductions(&si, NULL, 0, false, 1e-6);
    check_axis(&si, AXIS_CUMSUM, 0, 0);
    pair_release(&si);

    /* size-1 dims, reduced and kept */
    int64_t ones[4] = {1, 7, 1, 5};
    pair p = make_pair("[1,7,1,5]", WGT_F32, 4, ones, FILL_UNIFORM);
    int a02[2] = {0, 2}, a13[2] = {1, 3}, a2[1] = {2}, a3[1] = {3};
    check_all_reductions(&p, a02, 2, true, 1e-5);
    check_all_reductions(&p, a13, 2, false, 1e-5);
    check_all_reductions(&p, a2, 1, false, 1e-5);
    check_all_reductions(&p, a3, 1, true, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 2, 1e-6);
    check_softmaxes(&p, 0, 1e-5);
    check_softmaxes(&p, 3, 1e-5);
    pair_release(&p);

    /* a single element along the axis, many rows */
    int64_t col[2] = {300, 1};
    pair q = make_pair("[300,1]", WGT_F32, 2, col, FILL_UNIFORM);
    int a1[1] = {1};
    check_all_reductions(&q, a1, 1, false, 1e-6);
    check_softmaxes(&q, 1, 1e-6);
    check_axis(&q, AXIS_CUMSUM, 1, 1e-6);
    pair_release(&q);
}

static void test_empty(void)
{
    int64_t shape[3] = {4, 0, 3};
    pair p = make_pair("[4,0,3]", WGT_F32, 3, shape, FILL_UNIFORM);
    int a1[1] = {1}, a0[1] = {0};
    static const wgt_op ops[] = {WGT_OP_SUM, WGT_OP_MEAN, WGT_OP_PROD, WGT_OP_VAR, WGT_OP_STD};
    for (int i = 0; i < 5; i++) {
        check_reduce(&p, ops[i], a1, 1, false, 1e-6);
        check_reduce(&p, ops[i], a0, 1, true, 1e-6); /* empty output */
        check_reduce(&p, ops[i], NULL, 0, false, 1e-6);
    }
    pair_release(&p);
    pair q = make_pair("[4,0,3]", WGT_I32, 3, shape, FILL_UNIFORM);
    check_reduce(&q, WGT_OP_SUM, a1, 1, false, 0);
    check_reduce(&q, WGT_OP_PROD, a1, 1, true, 0);
    check_reduce(&q, WGT_OP_MEAN, a1, 1, false, 0);
    /* max over an empty axis has no identity: both backends refuse */
    wgt_tensor *g = wgt_max(q.g, a1, 1, false), *c = wgt_max(q.c, a1, 1, false);
    CHECK(!g && !c, "max over an empty axis should fail on both backends");
    wgt_tensor_release(g);
    wgt_tensor_release(c);
    CHECK(wgt_context_status(gpu) == WGT_ERR_INVALID_ARGUMENT && wgt_context_status(cpu) == WGT_ERR_INVALID_ARGUMENT,
          "max over an empty axis: %s / %s", wgt_context_error_message(gpu), wgt_context_error_message(cpu));
    wgt_context_clear_error(gpu);
    wgt_context_clear_error(cpu);
    pair_release(&q);
}

static void test_multi_axes(void)
{
    int64_t shape[4] = {6, 7, 8, 9};
    pair p = make_pair("[6,7,8,9]", WGT_F32, 4, shape, FILL_UNIFORM);
    int a02[2] = {0, 2}, a13[2] = {1, 3}, a03[2] = {0, 3}, a123[3] = {1, 2, 3}, a013[3] = {0, 1, 3};
    check_all_reductions(&p, a02, 2, false, 1e-5);
    check_all_reductions(&p, a13, 2, true, 1e-5);
    check_all_reductions(&p, a03, 2, false, 1e-5);
    check_all_reductions(&p, a123, 3, true, 1e-5);
    check_all_reductions(&p, a013, 3, false, 1e-5);
    for (int axis = 0; axis < 4; axis++) {
        check_reduce(&p, WGT_OP_ARGMAX, &axis, 1, false, 0);
        check_reduce(&p, WGT_OP_ARGMIN, &axis, 1, true, 0);
        check_axis(&p, AXIS_CUMSUM, axis, 1e-5);
        check_softmaxes(&p, axis, 1e-5);
    }
    pair_release(&p);
}

static void test_odd_sizes(void)
{
    int a0[1] = {0}, a1[1] = {1};
    int64_t s1[2] = {1000, 257};
    pair p = make_pair("[1000,257]", WGT_F32, 2, s1, FILL_UNIFORM);
    check_all_reductions(&p, a1, 1, false, 1e-5);
    check_all_reductions(&p, a0, 1, false, 1e-4);
    check_all_reductions(&p, NULL, 0, false, 1e-4);
    check_softmaxes(&p, 1, 1e-5);
    check_softmaxes(&p, 0, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 1, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 0, 1e-4);
    pair_release(&p);

    /* short rows, several per workgroup */
    int64_t s2[3] = {333, 3, 5};
    pair q = make_pair("[333,3,5]", WGT_F32, 3, s2, FILL_UNIFORM);
    int a2[1] = {2}, a12[2] = {1, 2};
    check_all_reductions(&q, a2, 1, true, 1e-5);
    check_all_reductions(&q, a12, 2, false, 1e-5);
    check_softmaxes(&q, 2, 1e-5);
    check_softmaxes(&q, 1, 1e-5);
    pair_release(&q);
}

static void test_views(void)
{
    int a0[1] = {0}, a1[1] = {1}, a2[1] = {2};
    int64_t s[2] = {64, 48};
    pair p = make_pair("[64,48]", WGT_F32, 2, s, FILL_UNIFORM);
    pair_transpose(&p, 0, 1); /* [48, 64] with strides (1, 48) */
    check_all_reductions(&p, a0, 1, false, 1e-5);
    check_all_reductions(&p, a1, 1, true, 1e-5);
    check_all_reductions(&p, NULL, 0, false, 1e-5);
    check_softmaxes(&p, 1, 1e-5);
    check_softmaxes(&p, 0, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 0, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 1, 1e-5);
    pair_release(&p);

    int64_t s2[2] = {100, 90};
    pair q = make_pair("[100,90]", WGT_F32, 2, s2, FILL_UNIFORM);
    pair_slice(&q, 1, 3, 90, 4); /* [100, 22], stride 4, odd offset */
    pair_slice(&q, 0, 1, 99, 2); /* [49, 22] */
    check_all_reductions(&q, a0, 1, false, 1e-5);
    check_all_reductions(&q, a1, 1, false, 1e-5);
    check_all_reductions(&q, NULL, 0, true, 1e-5);
    check_softmaxes(&q, 1, 1e-5);
    check_softmaxes(&q, 0, 1e-5);
    check_axis(&q, AXIS_CUMSUM, 1, 1e-5);
    check_axis(&q, AXIS_CUMSUM, 0, 1e-5);
    pair_release(&q);

    /* an offset that breaks vec4 alignment of otherwise contiguous rows */
    int64_t s3[2] = {33, 1024};
    pair r = make_pair("[33,1024]", WGT_F32, 2, s3, FILL_UNIFORM);
    pair_slice(&r, 1, 1, 1024, 1); /* rows of 1023 starting at odd offsets */
    check_all_reductions(&r, a1, 1, false, 1e-5);
    check_softmaxes(&r, 1, 1e-5);
    pair_release(&r);

    /* broadcast (stride 0) input */
    int64_t s4[3] = {1, 50, 1}, big[3] = {40, 50, 7};
    pair b = make_pair("[1,50,1]->[40,50,7]", WGT_F32, 3, s4, FILL_UNIFORM);
    pair_expand(&b, 3, big);
    int a02[2] = {0, 2};
    check_all_reductions(&b, a0, 1, false, 1e-5);
    check_all_reductions(&b, a2, 1, true, 1e-5);
    check_all_reductions(&b, a02, 2, false, 1e-5);
    check_all_reductions(&b, NULL, 0, false, 1e-5);
    check_softmaxes(&b, 0, 1e-5);
    check_axis(&b, AXIS_CUMSUM, 2, 1e-5);
    pair_release(&b);

    /* 3-D permuted */
    int64_t s5[3] = {5, 6, 7};
    pair t = make_pair("[5,6,7]", WGT_F32, 3, s5, FILL_UNIFORM);
    pair_transpose(&t, 0, 2); /* [7, 6, 5] */
    int a01[2] = {0, 1}, a12[2] = {1, 2};
    check_all_reductions(&t, a01, 2, false, 1e-5);
    check_all_reductions(&t, a12, 2, true, 1e-5);
    check_all_reductions(&t, a1, 1, false, 1e-5);
    check_softmaxes(&t, 2, 1e-5);
    check_axis(&t, AXIS_CUMSUM, 1, 1e-5);
    pair_release(&t);
}

static void test_special_values(void)
{
    int a0[1] = {0}, a1[1] = {1};
    int64_t s[2] = {120, 70};
    pair p = make_pair("[120,70] NaN/inf", WGT_F32, 2, s, FILL_SPECIAL);
    check_all_reductions(&p, a1, 1, false, 1e-5);
    check_all_reductions(&p, a0, 1, false, 1e-5);
    check_all_reductions(&p, NULL, 0, false, 1e-5);
    check_softmaxes(&p, 1, 1e-5);
    check_softmaxes(&p, 0, 1e-5);
    check_axis(&p, AXIS_CUMSUM, 1, 1e-5);
    pair_release(&p);

    pair h = make_pair("[120,70] NaN/inf", WGT_F16, 2, s, FILL_SPECIAL);
    check_all_reductions(&h, a1, 1, false, 2e-3);
    check_softmaxes(&h, 1, 2e-3);
    pair_release(&h);

    int64_t s2[2] = {40, 300};
    pair n = make_pair("[40,300] -inf rows", WGT_F32, 2, s2, FILL_NEG_INF);
    check_softmaxes(&n, 1, 1e-5);
    check_all_reductions(&n, a1, 1, false, 1e-5);
    pair_release(&n);
    int64_t s3[2] = {16, 40};
    pair n2 = make_pair("[16,40] -inf rows", WGT_F32, 2, s3, FILL_NEG_INF);
    check_softmaxes(&n2, 1, 1e-5);
    check_softmaxes(&n2, 0, 1e-5);
    pair_release(&n2);

    /* one NaN: the whole row, the first NaN's index, in a long two-pass row */
    int64_t len = 300000;
    float *data = malloc((size_t)len * sizeof(float));
    for (int64_t i = 0; i < len; i++) data[i] = (float)(i % 1000) / 1000.0f;
    data[250001] = NAN;
    data[100003] = NAN;
    data[7] = INFINITY;
    wgt_tensor *g = wgt_tensor_from_host(gpu, WGT_F32, 1, &len, data);
    wgt_tensor *c = wgt_tensor_from_host(cpu, WGT_F32, 1, &len, data);
    pair l = {g, c, "[300000] NaN"};
    check_all_reductions(&l, a0, 1, false, 5e-4);
    check_softmaxes(&l, 0, 1e-4);
    data[250001] = data[100003] = 0.5f;
    wgt_tensor_write(g, data, (size_t)len * sizeof(float));
    wgt_tensor_write(c, data, (size_t)len * sizeof(float));
    snprintf(l.name, sizeof(l.name), "[300000] one inf");
    check_all_reductions(&l, a0, 1, false, 5e-4);
    check_softmaxes(&l, 0, 1e-4);
    pair_release(&l);
    free(data);
}

/* Products whose partial products leave f32's range but whose value does not:
 * 2^600 * 2^-600 and friends (the CPU multiplies in double). */
static void test_products(void)
{
    int64_t shape[2] = {4, 2000};
    float *data = malloc(sizeof(float) * 8000);
    for (int64_t r = 0; r < 4; r++)
        for (int64_t i = 0; i < 2000; i++) {
            float big = r == 3 ? -1.75f : 2.0f;
            data[r * 2000 + i] = i < 600 ? big : i < 1200 ? 0.5f : i % 7 == r ? -1.0f : 1.0f;
            if (r == 1 && i == 1999) data[r * 2000 + i] = 0.0f;    /* 2^600 * ... * 0 = 0 */
            if (r == 2 && i >= 1200) data[r * 2000 + i] = 0.75f;  /* underflows for real */
        }
    wgt_tensor *g = wgt_tensor_from_host(gpu, WGT_F32, 2, shape, data);
    wgt_tensor *c = wgt_tensor_from_host(cpu, WGT_F32, 2, shape, data);
    pair p = {g, c, "[4,2000] products out of range"};
    int a0[1] = {0}, a1[1] = {1};
    check_reduce(&p, WGT_OP_PROD, a1, 1, false, 1e-4);
    check_reduce(&p, WGT_OP_PROD, a0, 1, false, 1e-5);
    pair_transpose(&p, 0, 1);
    check_reduce(&p, WGT_OP_PROD, a0, 1, false, 1e-4);
    pair_release(&p);
    /* a long row of values in [0.5, 2): partials of single threads overflow */
    int64_t n = 300000;
    float *d2 = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d2[i] = i < n / 2 ? 1.001f : 1.0f / 1.001f;
    g = wgt_tensor_from_host(gpu, WGT_F32, 1, &n, d2);
    c = wgt_tensor_from_host(cpu, WGT_F32, 1, &n, d2);
    pair q = {g, c, "[300000] product near 1"};
    check_reduce(&q, WGT_OP_PROD, a0, 1, false, 5e-3);
    pair_release(&q);
    free(d2);
    free(data);
}

static void test_ties(void)
{
    int64_t s[2] = {52, 77};
    for (int dt = 0; dt < 4; dt++) {
        wgt_dtype dtype = (wgt_dtype[]){WGT_F32, WGT_I32, WGT_U8, WGT_F16}[dt];
        pair p = make_pair("[52,77] ties", dtype, 2, s, FILL_TIES);
        for (int axis = 0; axis < 2; axis++) {
            check_reduce(&p, WGT_OP_ARGMAX, &axis, 1, false, 0);
            check_reduce(&p, WGT_OP_ARGMIN, &axis, 1, true, 0);
            check_reduce(&p, WGT_OP_MAX, &axis, 1, false, 0);
            check_reduce(&p, WGT_OP_MIN, &axis, 1, false, 0);
        }
        pair_release(&p);
    }
    /* ties across the splits of a two-pass row: the first index wins */
    int64_t len = 200000;
    int32_t *data = malloc((size_t)len * sizeof(int32_t));
    for (int64_t i = 0; i < len; i++) data[i] = (int32_t)(i % 7);
    wgt_tensor *g = wgt_tensor_from_host(gpu, WGT_I32, 1, &len, data);
    wgt_tensor *c = wgt_tensor_from_host(cpu, WGT_I32, 1, &len, data);
    pair l = {g, c, "[200000] i32 ties"};
    int a0[1] = {0};
    check_reduce(&l, WGT_OP_ARGMAX, a0, 1, false, 0);
    check_reduce(&l, WGT_OP_ARGMIN, a0, 1, false, 0);
    pair_release(&l);
    free(data);
}

static void test_dtypes(void)
{
    int a0[1] = {0}, a1[1] = {1};
    int64_t s[2] = {44, 129};
    wgt_dtype dtypes[] = {WGT_F16, WGT_I32, WGT_U8, WGT_BOOL};
    for (int i = 0; i < 4; i++) {
        double tol = dtypes[i] == WGT_F16 ? 2e-3 : 1e-5;
        pair p = make_pair("[44,129]", dtypes[i], 2, s, FILL_UNIFORM);
        check_all_reductions(&p, a1, 1, false, tol);
        check_all_reductions(&p, a0, 1, true, tol);
        check_all_reductions(&p, NULL, 0, false, tol);
        check_axis(&p, AXIS_CUMSUM, 1, tol);
        check_axis(&p, AXIS_CUMSUM, 0, tol);
        if (dtypes[i] == WGT_F16) {
            check_softmaxes(&p, 1, tol);
            check_softmaxes(&p, 0, tol);
        }
        pair_transpose(&p, 0, 1);
        check_all_reductions(&p, a1, 1, false, tol);
        check_axis(&p, AXIS_CUMSUM, 1, tol);
        pair_release(&p);
    }
    /* i32 sums and products that wrap; exact */
    int64_t w[2] = {31, 1001};
    pair p = make_pair("[31,1001] wrapping", WGT_I32, 2, w, FILL_WRAP);
    check_reduce(&p, WGT_OP_SUM, a1, 1, false, 0);
    check_reduce(&p, WGT_OP_SUM, a0, 1, false, 0);
    check_reduce(&p, WGT_OP_SUM, NULL, 0, false, 0);
    check_reduce(&p, WGT_OP_PROD, a1, 1, false, 0);
    check_reduce(&p, WGT_OP_MAX, a1, 1, false, 0);
    check_reduce(&p, WGT_OP_ARGMIN, a0, 1, false, 0);
    check_axis(&p, AXIS_CUMSUM, 1, 0);
    check_axis(&p, AXIS_CUMSUM, 0, 0);
    pair_release(&p);
    /* u8 with an odd byte offset (slice) */
    int64_t u[2] = {20, 203};
    pair q = make_pair("[20,203]", WGT_U8, 2, u, FILL_UNIFORM);
    pair_slice(&q, 1, 3, 200, 3);
    check_all_reductions(&q, a1, 1, false, 1e-5);
    check_all_reductions(&q, a0, 1, false, 1e-5);
    check_axis(&q, AXIS_CUMSUM, 1, 0);
    pair_release(&q);
    /* sizes that are not whole words (the upload itself goes through a copy kernel) */
    int64_t odd[2] = {7, 13};
    for (int i = 0; i < 3; i++) {
        pair o = make_pair("[7,13]", (wgt_dtype[]){WGT_U8, WGT_BOOL, WGT_F16}[i], 2, odd, FILL_UNIFORM);
        check_all_reductions(&o, a1, 1, false, i == 2 ? 2e-3 : 1e-5);
        check_all_reductions(&o, a0, 1, true, i == 2 ? 2e-3 : 1e-5);
        check_axis(&o, AXIS_CUMSUM, 0, i == 2 ? 2e-3 : 0);
        pair_release(&o);
    }
}

static void test_long(void)
{
    int a0[1] = {0}, a1[1] = {1};
    /* to a scalar: two passes */
    int64_t n = 1000003;
    pair p = make_pair("[1000003]", WGT_F32, 1, &n, FILL_UNIFORM);
    check_all_reductions(&p, a0, 1, false, 5e-4);
    check_axis(&p, AXIS_CUMSUM, 0, 5e-4);
    pair_release(&p);
    int64_t m = 262144;
    pair pi = make_pair("[262144]", WGT_I32, 1, &m, FILL_UNIFORM);
    check_all_reductions(&pi, a0, 1, false, 1e-4);
    check_axis(&pi, AXIS_CUMSUM, 0, 0);
    pair_release(&pi);

    /* few long rows; and a leading-axis reduce of few columns (columns + splits) */
    int64_t s[2] = {3, 100000};
    pair q = make_pair("[3,100000]", WGT_F32, 2, s, FILL_UNIFORM);
    check_all_reductions(&q, a1, 1, false, 5e-4);
    check_softmaxes(&q, 1, 1e-4);
    check_axis(&q, AXIS_CUMSUM, 1, 5e-4);
    pair_transpose(&q, 0, 1); /* [100000, 3] */
    check_all_reductions(&q, a0, 1, false, 5e-4);
    check_softmaxes(&q, 0, 1e-4);
    check_axis(&q, AXIS_CUMSUM, 0, 5e-4);
    pair_release(&q);
    int64_t s2[2] = {20000, 70};
    pair r = make_pair("[20000,70]", WGT_F32, 2, s2, FILL_UNIFORM);
    check_all_reductions(&r, a0, 1, false, 5e-4);
    check_softmaxes(&r, 0, 1e-4);
    check_axis(&r, AXIS_CUMSUM, 0, 5e-4);
    pair_release(&r);

    /* softmax rows from 2 to 40000, wide values; rows of up to 32768 (a
     * multiple of 4) are held in registers, longer ones take the online
     * kernel; WGT_WEBGPU_SOFTMAX_CACHE=0 forces the online kernel for all
     * (read when a context is created: the second round runs on its own) */
    int64_t lens[] = {2, 31, 32, 33, 255, 256, 1000, 4096, 8192, 8196, 32768, 40000};
    wgt_context *main_gpu = gpu;
    for (int online = 0; online < 2; online++) {
        if (online) {
            wgt_context_options o;
            wgt_context_options_init(&o);
            o.backend = WGT_BACKEND_WEBGPU;
            o.debug_guards = true;
            gpu = test_context_env(&o, (const char *[]){"WGT_WEBGPU_SOFTMAX_CACHE", "0", NULL});
            if (!gpu) break;
        }
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            int64_t shape[2] = {lens[i] >= 4096 ? 3 : 17, lens[i]};
            pair x = make_pair(online ? "softmax rows (online)" : "softmax rows", WGT_F32, 2, shape, FILL_WIDE);
            check_softmaxes(&x, 1, 1e-4);
            pair_release(&x);
        }
        int64_t shape[2] = {16, 4096};
        pair sp = make_pair(online ? "softmax rows NaN/inf (online)" : "softmax rows NaN/inf", WGT_F32, 2, shape,
                            FILL_SPECIAL);
        check_softmaxes(&sp, 1, 1e-4);
        pair_release(&sp);
        pair ni = make_pair(online ? "softmax rows -inf (online)" : "softmax rows -inf", WGT_F32, 2, shape,
                            FILL_NEG_INF);
        check_softmaxes(&ni, 1, 1e-4);
        pair_release(&ni);
    }
    if (gpu != main_gpu) wgt_context_destroy(gpu);
    gpu = main_gpu;
}

static void test_big_grid(void)
{
    int a1[1] = {1};
    /* 70000 rows: one workgroup per cumsum row, a 2-D grid (the reduce and
     * softmax kernels share the grid code; their > 65535-workgroup shapes need
     * rows of >= 1024 elements, too slow on lavapipe) */
    int64_t s[2] = {70000, 40};
    pair p = make_pair("[70000,40]", WGT_F32, 2, s, FILL_UNIFORM);
    check_axis(&p, AXIS_CUMSUM, 1, 1e-5);
    check_reduce(&p, WGT_OP_SUM, a1, 1, false, 1e-5);
    check_reduce(&p, WGT_OP_ARGMAX, a1, 1, false, 0);
    check_softmaxes(&p, 1, 1e-5);
    pair_release(&p);
}

int main(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.debug_guards = true;
    gpu = wgt_context_create(&o);
    if (!gpu || wgt_context_status(gpu) != WGT_OK) {
        fprintf(stderr, "FAIL: cannot create a webgpu context: %s\n", gpu ? wgt_context_error_message(gpu) : "");
        wgt_context_destroy(gpu);
        return 1;
    }
    cpu = test_cpu_context();
    if (!cpu) return 1;

    test_basic_axes();
    test_scalar_and_small();
    test_empty();
    test_multi_axes();
    test_odd_sizes();
    test_views();
    test_special_values();
    test_products();
    test_ties();
    test_dtypes();
    test_long();
    test_big_grid();

    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
