/*
 * WebGPU ELEMENTWISE kernel against the CPU backend, through the public API.
 *
 * Every case runs the same op on a WebGPU and a CPU context with the same data
 * and compares the results:
 *   exact   + - * comparisons, logic, max/min, neg/abs/sign/relu, floor/ceil/
 *           round, casts between every dtype pair, copies, slice assignment,
 *           fills, where, tril/one_hot/eye/arange/linspace, rand: bit for bit,
 *           except that two NaNs match whatever their payloads.
 *   approx  transcendentals, div and pow: |gpu - cpu| <= atol + rtol * |cpu|,
 *           NaN where NaN and the same infinities (tolerances at each case);
 *           atol is at least 1e-30, as GPUs may flush denormals to 0.
 * The inner-contiguous cases (strided destinations with contiguous rows)
 * compare with values computed in this file instead.
 * Shapes cover scalars, empty tensors, odd sizes, broadcasts, transposed and
 * sliced-with-step views, sub-word (f16/u8/bool) outputs at odd offsets, and
 * one launch of more than 65535 workgroups. Inputs mix ordinary values with
 * NaN, +-inf, +-0, halfway cases and out-of-range values for casts.
 *
 * WGT_TEST_VERBOSE=1 prints the worst error ratio of each approximate case.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "test_util.h"
#include "webgpu/webgpu_elementwise.h"

static wgt_context *G, *C; /* WebGPU, CPU */
static bool verbose;

typedef struct pair {
    wgt_tensor *g, *c;
} pair;

static void release(pair p)
{
    wgt_tensor_release(p.g);
    wgt_tensor_release(p.c);
}

/* ------------------------------------------------------------------- data */

static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(rng() & 0xffffff) / 16777216.0f; }

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Values that stress the semantics: NaN, infinities, signed zeros, halfway
 * cases for round and f16, out-of-range values for integer casts. */
static const float float_specials[] = {
    NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 1.0f, -1.0f, 3e9f, -3e9f,
    2147483520.0f, -2147483648.0f, 65504.0f, 65520.0f, 65519.996f, 1e30f, -1e30f, 2.9802322e-8f, 1e-7f,
    1.00048828125f /* 1 + 2^-11: f16 tie */, 300.7f, -1.0f, 255.9f, 1e-3f, -1e-3f, 3.0f, 7.0f};

static const float range_default[2] = {-10.0f, 10.0f};

/* n values of dtype into buf; floats in [range) with specials if specials. */
static void fill_random(wgt_dtype dt, int64_t n, void *buf, const float *range, bool specials)
{
    int ns = (int)(sizeof(float_specials) / sizeof(float_specials[0]));
    for (int64_t i = 0; i < n; i++) {
        bool special = specials && rng() % 5 == 0;
        switch (dt) {
        case WGT_F32: ((float *)buf)[i] = special ? float_specials[rng() % ns] : uniform(range[0], range[1]); break;
        case WGT_F16: { /* any bit pattern: subnormals, inf and NaN payloads included */
            uint16_t h = (uint16_t)rng();
            if (!special) { /* mostly moderate values */
                h = (uint16_t)((h & 0x83ff) | ((10 + rng() % 12) << 10));
            }
            ((uint16_t *)buf)[i] = h;
            break;
        }
        case WGT_I32: {
            static const int32_t ispecial[] = {INT32_MIN, INT32_MAX, 0, -1, 1, 65536, -65537, 46341};
            int32_t v = special ? ispecial[rng() % 8] : (rng() % 3 == 0 ? (int32_t)(rng() * 2u) : (int32_t)(rng() % 201) - 100);
            ((int32_t *)buf)[i] = v;
            break;
        }
        case WGT_U8: ((uint8_t *)buf)[i] = (uint8_t)rng(); break;
        default: ((uint8_t *)buf)[i] = (uint8_t)(rng() % 2); break;
        }
    }
}

static pair make_from(wgt_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    pair p = {wgt_tensor_from_host(G, dt, ndim, shape, data), wgt_tensor_from_host(C, dt, ndim, shape, data)};
    return p;
}

static pair make_range(wgt_dtype dt, int ndim, const int64_t *shape, const float *range, bool specials)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *buf = malloc((size_t)(n > 0 ? n : 1) * 4);
    fill_random(dt, n, buf, range, specials);
    pair p = make_from(dt, ndim, shape, buf);
    free(buf);
    return p;
}

static pair make(wgt_dtype dt, int ndim, const int64_t *shape) { return make_range(dt, ndim, shape, range_default, true); }

/* The knobs (WGT_WEBGPU_GRID_LIMIT, WGT_WEBGPU_DISABLE_F16) are read when a
 * context is created: G becomes a new one created with env (name, value pairs,
 * NULL-terminated: test_context_env; NULL: none set). G's tensors must be
 * released first. */
static bool use_knobs(const char *const *env)
{
    CHECK(wgt_context_live_tensors(G) == 0, "WebGPU context leaks %lld tensors",
          (long long)wgt_context_live_tensors(G));
    wgt_context_destroy(G);
    G = test_context_env(NULL, env);
    return G != NULL;
}

/* ------------------------------------------------------------- comparison */

static void report_errors(const char *what)
{
    if (wgt_context_status(G) != WGT_OK) {
        CHECK(false, "%s: webgpu error: %s", what, wgt_context_error_message(G));
        wgt_context_clear_error(G);
    }
    if (wgt_context_status(C) != WGT_OK) {
        CHECK(false, "%s: cpu error: %s", what, wgt_context_error_message(C));
        wgt_context_clear_error(C);
    }
}

static double value_at(wgt_dtype dt, const void *buf, int64_t i)
{
    switch (dt) {
    case WGT_F32: return ((const float *)buf)[i];
    case WGT_F16: return f16_to_f32(((const uint16_t *)buf)[i]);
    case WGT_I32: return ((const int32_t *)buf)[i];
    default: return ((const uint8_t *)buf)[i];
    }
}

/* Approximate results may also differ near 0: GPUs may flush denormal results
 * and intermediates (silu(-90) = -90 * a denormal) to 0. */
#define TINY 1e-30

/* Compares p.g with p.c; rtol = atol = 0 means exact. Releases p. */
static void compare_tol(pair p, double rtol, double atol, const char *what)
{
    report_errors(what);
    if (!p.g || !p.c) {
        CHECK(false, "%s: missing result (webgpu %p, cpu %p)", what, (void *)p.g, (void *)p.c);
        release(p);
        return;
    }
    wgt_dtype dt = wgt_tensor_dtype(p.c);
    int64_t n = wgt_tensor_numel(p.c);
    bool same = wgt_tensor_dtype(p.g) == dt && wgt_tensor_ndim(p.g) == wgt_tensor_ndim(p.c) && wgt_tensor_numel(p.g) == n;
    for (int d = 0; same && d < wgt_tensor_ndim(p.c); d++) same = wgt_tensor_dim(p.g, d) == wgt_tensor_dim(p.c, d);
    CHECK(same, "%s: dtype/shape differ", what);
    if (!same) {
        release(p);
        return;
    }
    size_t bytes = (size_t)n * wgt_dtype_size(dt);
    unsigned char *g = malloc(bytes + 1), *c = malloc(bytes + 1);
    wgt_status sg = wgt_tensor_read(p.g, g, bytes), sc = wgt_tensor_read(p.c, c, bytes);
    CHECK(sg == WGT_OK && sc == WGT_OK, "%s: read failed: %s / %s", what, wgt_context_error_message(G),
          wgt_context_error_message(C));
    int64_t bad = 0, first = -1;
    double worst = 0;
    bool is_float = dt == WGT_F32 || dt == WGT_F16;
    size_t es = wgt_dtype_size(dt);
    for (int64_t i = 0; sg == WGT_OK && sc == WGT_OK && i < n; i++) {
        double a = value_at(dt, g, i), b = value_at(dt, c, i);
        bool ok;
        if (is_float && (isnan(a) || isnan(b))) ok = isnan(a) && isnan(b);
        else if (rtol == 0 && atol == 0) ok = memcmp(g + i * es, c + i * es, es) == 0;
        else if (a == b) ok = true;
        else if (isinf(a) || isinf(b)) ok = false;
        else {
            double ratio = fabs(a - b) / ((atol > TINY ? atol : TINY) + rtol * fabs(b));
            if (ratio > worst) worst = ratio;
            ok = ratio <= 1.0;
        }
        if (!ok && bad++ == 0) first = i;
    }
    if (bad) {
        double a = value_at(dt, g, first), b = value_at(dt, c, first);
        CHECK(false, "%s: %lld of %lld elements differ; first at %lld: webgpu %.9g, cpu %.9g", what, (long long)bad,
              (long long)n, (long long)first, a, b);
    } else {
        CHECK(true, "%s", what);
    }
    if (verbose && (rtol != 0 || atol != 0)) printf("  %-40s worst error ratio %.3f\n", what, worst);
    free(g);
    free(c);
    release(p);
}
static void compare(pair p, const char *what) { compare_tol(p, 0, 0, what); }

/* ------------------------------------------------------------- op helpers */

static pair unary(wgt_op op, pair x) { return (pair){wgt_unary(op, x.g), wgt_unary(op, x.c)}; }
static pair binary(wgt_op op, pair a, pair b) { return (pair){wgt_binary(op, a.g, b.g), wgt_binary(op, a.c, b.c)}; }
static pair cast(pair x, wgt_dtype dt) { return (pair){wgt_cast(x.g, dt), wgt_cast(x.c, dt)}; }
static pair slice(pair x, int axis, int64_t start, int64_t stop, int64_t step)
{
    return (pair){wgt_slice(x.g, axis, start, stop, step), wgt_slice(x.c, axis, start, stop, step)};
}
static pair transpose(pair x, int a, int b) { return (pair){wgt_transpose(x.g, a, b), wgt_transpose(x.c, a, b)}; }
/* the same, releasing x (a temporary view) */
static pair slice_of(pair x, int axis, int64_t start, int64_t stop, int64_t step)
{
    pair r = slice(x, axis, start, stop, step);
    release(x);
    return r;
}
static pair transpose_of(pair x, int a, int b)
{
    pair r = transpose(x, a, b);
    release(x);
    return r;
}
static pair fused(const char *text, const pair *in, int n)
{
    wgt_tensor *g[8], *c[8];
    for (int i = 0; i < n; i++) {
        g[i] = in[i].g;
        c[i] = in[i].c;
    }
    return (pair){wgt_fused(G, text, g, n), wgt_fused(C, text, c, n)};
}
static void assign(pair dst, pair src, const char *what)
{
    wgt_status a = wgt_assign(dst.g, src.g), b = wgt_assign(dst.c, src.c);
    CHECK(a == WGT_OK && b == WGT_OK, "%s: assign failed: %s / %s", what, wgt_context_error_message(G),
          wgt_context_error_message(C));
}
/* a pair that is the same tensors again (for compare, which releases) */
static pair retain(pair p) { return (pair){wgt_tensor_retain(p.g), wgt_tensor_retain(p.c)}; }

static const char *dtype_names[] = {"f32", "f16", "i32", "u8", "bool"};

/* ------------------------------------------------------------------ cases */

/* Shapes used for binary ops: a, b broadcast together. */
typedef struct shape_case {
    const char *name;
    int nda, ndb;
    int64_t a[4], b[4];
} shape_case;

static const shape_case binary_shapes[] = {
    {"scalar", 0, 0, {0}, {0}},
    {"empty", 2, 2, {0, 3}, {0, 3}},
    {"odd", 1, 1, {7}, {7}},
    {"1031", 1, 1, {1031}, {1031}},
    {"broadcast", 3, 2, {4, 1, 5}, {3, 1}},
    {"scalar-broadcast", 2, 0, {33, 5}, {0}},
    {"row-broadcast", 2, 1, {17, 9}, {9}},
};

static void test_binary_exact(void)
{
    static const wgt_op ops[] = {WGT_OP_ADD, WGT_OP_SUB, WGT_OP_MUL, WGT_OP_MAXIMUM, WGT_OP_MINIMUM, WGT_OP_EQ,
                                 WGT_OP_NE, WGT_OP_LT, WGT_OP_LE, WGT_OP_GT, WGT_OP_GE, WGT_OP_LOGICAL_AND,
                                 WGT_OP_LOGICAL_OR};
    static const wgt_dtype dts[][2] = {{WGT_F32, WGT_F32}, {WGT_I32, WGT_I32}, {WGT_F16, WGT_F16}, {WGT_U8, WGT_U8},
                                       {WGT_BOOL, WGT_BOOL}, {WGT_I32, WGT_F32}, {WGT_U8, WGT_F16}, {WGT_BOOL, WGT_I32}};
    for (size_t s = 0; s < sizeof(binary_shapes) / sizeof(binary_shapes[0]); s++) {
        const shape_case *sc = &binary_shapes[s];
        for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
            pair a = make(dts[d][0], sc->nda, sc->a), b = make(dts[d][1], sc->ndb, sc->b);
            for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                char what[128];
                snprintf(what, sizeof what, "%s %s %s/%s", wgt_op_name(ops[o]), sc->name, dtype_names[dts[d][0]],
                         dtype_names[dts[d][1]]);
                compare(binary(ops[o], a, b), what);
            }
            release(a);
            release(b);
        }
    }
}

static void test_binary_views(void)
{
    /* transposed and sliced-with-step operands, f32 and f16 and i32 */
    static const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_I32, WGT_U8};
    for (size_t d = 0; d < 4; d++) {
        int64_t s1[2] = {13, 11}, s2[3] = {3, 40, 9};
        pair a = make(dts[d], 2, s1), b = make(dts[d], 2, s1), c = make(dts[d], 3, s2);
        pair at = transpose(a, 0, 1), bt = transpose(b, 0, 1);
        char what[96];
        snprintf(what, sizeof what, "add transposed %s", dtype_names[dts[d]]);
        compare(binary(WGT_OP_ADD, at, bt), what);
        int64_t s3[2] = {11, 13};
        pair e = make(dts[d], 2, s3);
        snprintf(what, sizeof what, "mul transposed*plain %s", dtype_names[dts[d]]);
        compare(binary(WGT_OP_MUL, at, e), what);
        release(e);
        pair cs = slice(c, 1, 1, 38, 3), cs2 = slice(c, 2, 2, 9, 2);
        pair cs3 = slice(cs2, 1, 3, 40, 1);
        snprintf(what, sizeof what, "sub sliced-step %s", dtype_names[dts[d]]);
        pair l = slice(cs, 2, 0, 4, 1), r = slice(cs3, 1, 0, 13, 1);
        compare(binary(WGT_OP_SUB, l, r), what);
        release(l);
        release(r);
        pair neg = unary(WGT_OP_NEG, cs);
        snprintf(what, sizeof what, "neg sliced-step %s", dtype_names[dts[d]]);
        compare(neg, what);
        release(a); release(b); release(c); release(at); release(bt); release(cs); release(cs2); release(cs3);
    }
}

static void test_binary_approx(void)
{
    int64_t n = 4099;
    static const float pos[2] = {0.01f, 4.0f};
    for (int d = 0; d < 2; d++) {
        wgt_dtype dt = d ? WGT_F16 : WGT_F32;
        pair a = make(dt, 1, &n), b = make(dt, 1, &n), p = make_range(dt, 1, &n, pos, false);
        char what[64];
        /* div: the hardware quotient may be 1-2 ulp off the correctly rounded one */
        snprintf(what, sizeof what, "div %s", dtype_names[dt]);
        compare_tol(binary(WGT_OP_DIV, a, b), dt == WGT_F16 ? 1e-3 : 3e-7, 0, what);
        /* pow: exp(y log x) in double-f32, <= 2 ulp from powf */
        snprintf(what, sizeof what, "pow %s", dtype_names[dt]);
        compare_tol(binary(WGT_OP_POW, a, b), dt == WGT_F16 ? 1e-3 : 3e-7, 0, what);
        snprintf(what, sizeof what, "pow positive base %s", dtype_names[dt]);
        compare_tol(binary(WGT_OP_POW, p, a), dt == WGT_F16 ? 1e-3 : 3e-7, 0, what);
        release(a); release(b); release(p);
    }
    int64_t s = 300;
    pair i = make(WGT_I32, 1, &s), j = make(WGT_I32, 1, &s);
    compare_tol(binary(WGT_OP_DIV, i, j), 3e-7, 0, "div i32 -> f32");
    release(i); release(j);
}

/* Unary ops: exact ones bit for bit, the rest with a tolerance each. */
typedef struct unary_case {
    wgt_op op;
    double rtol, atol; /* 0, 0: exact */
} unary_case;

static const unary_case unary_cases[] = {
    {WGT_OP_NEG, 0, 0}, {WGT_OP_ABS, 0, 0}, {WGT_OP_SIGN, 0, 0}, {WGT_OP_RELU, 0, 0},
    {WGT_OP_FLOOR, 0, 0}, {WGT_OP_CEIL, 0, 0}, {WGT_OP_ROUND, 0, 0}, {WGT_OP_LOGICAL_NOT, 0, 0},
    /* own f32 implementations, a few ulp from glibc */
    {WGT_OP_EXP, 4e-7, 0}, {WGT_OP_LOG, 4e-7, 1e-7}, {WGT_OP_LOG1P, 4e-7, 0}, {WGT_OP_TANH, 4e-7, 0},
    {WGT_OP_SIGMOID, 4e-7, 0}, {WGT_OP_SILU, 4e-7, 0}, {WGT_OP_SOFTPLUS, 4e-7, 0},
    /* gelu: 1 + erf(x) cancels for x << 0; error relative to |x| */
    {WGT_OP_GELU, 4e-7, 1e-6}, {WGT_OP_GELU_TANH, 4e-7, 1e-6},
    /* hardware sqrt and division */
    {WGT_OP_SQRT, 3e-7, 0}, {WGT_OP_RSQRT, 3e-7, 0}, {WGT_OP_RECIPROCAL, 3e-7, 0},
};

static void test_unary(void)
{
    int64_t shape[2] = {61, 67};
    static const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_I32, WGT_U8, WGT_BOOL};
    for (size_t d = 0; d < 5; d++) {
        pair x = make(dts[d], 2, shape);
        pair xt = transpose(x, 0, 1);
        for (size_t u = 0; u < sizeof(unary_cases) / sizeof(unary_cases[0]); u++) {
            const unary_case *uc = &unary_cases[u];
            bool f16_out = dts[d] == WGT_F16 && uc->op != WGT_OP_LOGICAL_NOT;
            /* an f16 result is rounded: allow one f16 ulp where the f32 value may differ */
            double rtol = uc->rtol == 0 ? 0 : f16_out ? 1e-3 : uc->rtol;
            double atol = uc->rtol == 0 ? 0 : f16_out ? 1e-6 : uc->atol;
            char what[96];
            snprintf(what, sizeof what, "%s %s", wgt_op_name(uc->op), dtype_names[dts[d]]);
            compare_tol(unary(uc->op, x), rtol, atol, what);
            snprintf(what, sizeof what, "%s %s transposed", wgt_op_name(uc->op), dtype_names[dts[d]]);
            compare_tol(unary(uc->op, xt), rtol, atol, what);
        }
        release(x);
        release(xt);
    }
    /* sin/cos: a few ulp, or ~1e-7 absolute near their zeros */
    static const float trig[2] = {-100.0f, 100.0f};
    int64_t n = 5003;
    pair t = make_range(WGT_F32, 1, &n, trig, false);
    compare_tol(unary(WGT_OP_SIN, t), 0, 3e-7, "sin f32 [-100, 100]");
    compare_tol(unary(WGT_OP_COS, t), 0, 3e-7, "cos f32 [-100, 100]");
    release(t);
    static const float far[2] = {-1e6f, 1e6f}; /* exact (Payne-Hanek) reduction above 256 */
    pair tf = make_range(WGT_F32, 1, &n, far, false);
    compare_tol(unary(WGT_OP_SIN, tf), 0, 3e-7, "sin f32 [-1e6, 1e6]");
    compare_tol(unary(WGT_OP_COS, tf), 0, 3e-7, "cos f32 [-1e6, 1e6]");
    release(tf);
    float special[10] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-6f, 1e30f, -3.4028235e38f, 256.0f, -12345.678f};
    int64_t ten = 10;
    pair sp = make_from(WGT_F32, 1, &ten, special);
    compare_tol(unary(WGT_OP_SIN, sp), 0, 3e-7, "sin specials");
    compare_tol(unary(WGT_OP_COS, sp), 0, 3e-7, "cos specials");
    release(sp);
    /* small arguments where log1p/expm1-style accuracy matters */
    static const float tiny[2] = {-1e-3f, 1e-3f};
    pair s = make_range(WGT_F32, 1, &n, tiny, false);
    compare_tol(unary(WGT_OP_LOG1P, s), 4e-7, 0, "log1p small");
    compare_tol(unary(WGT_OP_TANH, s), 4e-7, 0, "tanh small");
    compare_tol(unary(WGT_OP_EXP, s), 4e-7, 0, "exp small");
    release(s);
    static const float wide[2] = {-80.0f, 80.0f};
    pair w = make_range(WGT_F32, 1, &n, wide, false);
    compare_tol(unary(WGT_OP_EXP, w), 4e-7, 0, "exp [-80, 80]");
    compare_tol(unary(WGT_OP_SOFTPLUS, w), 4e-7, 0, "softplus [-80, 80]");
    compare_tol(unary(WGT_OP_SIGMOID, w), 4e-7, 0, "sigmoid [-80, 80]");
    release(w);
}

static void test_parametric_unary(void)
{
    int64_t shape[2] = {19, 23};
    pair x = make(WGT_F32, 2, shape), h = make(WGT_F16, 2, shape), i = make(WGT_I32, 2, shape);
    compare_tol((pair){wgt_leaky_relu(x.g, 0.01), wgt_leaky_relu(x.c, 0.01)}, 0, 0, "leaky_relu f32");
    compare_tol((pair){wgt_elu(x.g, 1.0), wgt_elu(x.c, 1.0)}, 4e-7, 1e-7, "elu f32");
    compare((pair){wgt_clamp(x.g, -1.5, 2.25), wgt_clamp(x.c, -1.5, 2.25)}, "clamp f32");
    compare((pair){wgt_clamp(h.g, -1.5, 2.25), wgt_clamp(h.c, -1.5, 2.25)}, "clamp f16");
    compare((pair){wgt_clamp(i.g, -7.5, 30.2), wgt_clamp(i.c, -7.5, 30.2)}, "clamp i32");
    compare((pair){wgt_binary_scalar(WGT_OP_MUL, h.g, 0.1), wgt_binary_scalar(WGT_OP_MUL, h.c, 0.1)}, "f16 * 0.1");
    compare((pair){wgt_binary_scalar(WGT_OP_ADD, i.g, 2147483000.0), wgt_binary_scalar(WGT_OP_ADD, i.c, 2147483000.0)},
            "i32 + big (wraps)");
    compare((pair){wgt_binary_scalar(WGT_OP_GT, x.g, 0.5), wgt_binary_scalar(WGT_OP_GT, x.c, 0.5)}, "f32 > 0.5");
    release(x); release(h); release(i);
}

static void test_where_and_fused(void)
{
    int64_t sa[2] = {37, 41}, sb[1] = {41}, sc[2] = {37, 1};
    pair c = make(WGT_BOOL, 2, sa), a = make(WGT_F32, 1, sb), b = make(WGT_F16, 2, sc);
    compare((pair){wgt_where(c.g, a.g, b.g), wgt_where(c.c, a.c, b.c)}, "where bool f32 f16");
    pair f = make(WGT_F32, 2, sa), i = make(WGT_I32, 1, sb);
    compare((pair){wgt_where(f.g, i.g, i.g), wgt_where(f.c, i.c, i.c)}, "where f32-cond (NaN true) i32");
    pair in[3] = {f, a, b};
    /* a product followed by a sum must round twice, as on the CPU (no fma) */
    compare(fused("a*b + c", in, 3), "fused a*b + c");
    compare(fused("a*b - c*a", in, 3), "fused a*b - c*a");
    compare(fused("where(a > b, a*2, b - 1)", in, 3), "fused where");
    compare(fused("clamp(a, -1, 1) * min(b, c)", in, 3), "fused clamp/min");
    compare(fused("!(a < b) || (c == 0) && (a != a)", in, 3), "fused logic");
    compare_tol(fused("sqrt(abs(a*b) + c*c)", in, 3), 3e-7, 0, "fused sqrt");
    compare_tol(fused("exp(-a*a) / (1 + b*b)", in, 3), 8e-7, 0, "fused exp/div");
    /* erf (GELU's backward): ew_erf (~1.3 ulp) against the C library's erff */
    compare_tol(fused("erf(a * 3) + erf(b) * c", in, 3), 8e-7, 1e-7, "fused erf");
    pair ii[2] = {i, c};
    compare(fused("a * 3 - b + (a > 5)", ii, 2), "fused i32/bool");
    compare_tol(fused("a / 7 + pow(a, 2)", ii, 2), 4e-7, 0, "fused i32 -> f32 div/pow");
    release(c); release(a); release(b); release(f); release(i);
}

static void test_casts(void)
{
    int64_t shape[2] = {29, 31};
    for (int from = 0; from < WGT_DTYPE_COUNT; from++) {
        pair x = make((wgt_dtype)from, 2, shape);
        pair xs = slice_of(transpose(x, 0, 1), 0, 1, 30, 2);
        for (int to = 0; to < WGT_DTYPE_COUNT; to++) {
            char what[64];
            snprintf(what, sizeof what, "cast %s -> %s", dtype_names[from], dtype_names[to]);
            compare(cast(x, (wgt_dtype)to), what);
            snprintf(what, sizeof what, "cast %s -> %s strided", dtype_names[from], dtype_names[to]);
            compare(cast(xs, (wgt_dtype)to), what);
        }
        compare((pair){wgt_copy(xs.g), wgt_copy(xs.c)}, "copy strided");
        release(x);
        release(xs);
    }
    /* integers near the f32 rounding boundary, and f32 -> f16 halfway cases */
    int32_t big[8] = {16777217, 16777219, -16777217, INT32_MAX, INT32_MIN, 33554435, 2147483583, 65521};
    int64_t eight = 8;
    pair b = make_from(WGT_I32, 1, &eight, big);
    compare(cast(b, WGT_F32), "cast i32 -> f32 rounding");
    compare(cast(b, WGT_F16), "cast i32 -> f16 rounding");
    release(b);
    float halves[8] = {1.00048828125f, 1.00146484375f, 65519.0f, 65520.0f, 2.9802322e-8f, 8.940697e-8f, -0.0f, 6.1e-5f};
    pair h = make_from(WGT_F32, 1, &eight, halves);
    compare(cast(h, WGT_F16), "cast f32 -> f16 halfway");
    release(h);
}

/* Slice assignment: destination views of every dtype at odd offsets and steps;
 * the whole destination is compared, so untouched elements must survive. */
static void test_assign(void)
{
    for (int dt = 0; dt < WGT_DTYPE_COUNT; dt++) {
        int64_t shape[2] = {9, 37};
        pair dst = make((wgt_dtype)dt, 2, shape);
        int64_t ss[2] = {9, 12};
        pair src = make(WGT_F32, 2, ss);
        char what[96];

        pair v = slice(dst, 1, 1, 37, 3); /* [9, 12] step 3 from offset 1 */
        assign(v, src, "assign step");
        snprintf(what, sizeof what, "assign %s step-3 slice", dtype_names[dt]);
        compare(retain(dst), what);
        release(v);

        pair row = slice_of(slice(dst, 0, 4, 5, 1), 1, 3, 30, 1); /* contiguous run at odd offset */
        int64_t rs[2] = {1, 27};
        pair r = make(WGT_I32, 2, rs);
        assign(row, r, "assign row");
        snprintf(what, sizeof what, "assign %s contiguous run at offset 151", dtype_names[dt]);
        compare(retain(dst), what);
        release(row);
        release(r);

        pair cols = slice(dst, 1, 5, 7, 1); /* [9, 2]: rows of two elements */
        int64_t one = 1;
        pair s = make(WGT_F16, 1, &one);
        assign(cols, s, "assign broadcast");
        snprintf(what, sizeof what, "assign %s broadcast into columns", dtype_names[dt]);
        compare(retain(dst), what);
        release(cols);
        release(s);

        pair t = transpose_of(slice(dst, 0, 1, 9, 2), 0, 1); /* [37, 4] transposed */
        int64_t ts[2] = {37, 4};
        pair u = make((wgt_dtype)dt, 2, ts);
        assign(t, u, "assign transposed");
        snprintf(what, sizeof what, "assign %s transposed destination", dtype_names[dt]);
        compare(retain(dst), what);
        release(t);
        release(u);

        pair f = slice(dst, 1, 2, 35, 4);
        wgt_status a = wgt_fill(f.g, -3.75), b = wgt_fill(f.c, -3.75);
        CHECK(a == WGT_OK && b == WGT_OK, "fill failed");
        snprintf(what, sizeof what, "fill %s strided", dtype_names[dt]);
        compare(retain(dst), what);
        release(f);

        pair same = slice(dst, 1, 0, 30, 1), shifted = slice(dst, 1, 1, 31, 1);
        assign(same, shifted, "assign overlapping");
        snprintf(what, sizeof what, "assign %s overlapping same storage", dtype_names[dt]);
        compare(retain(dst), what);
        release(same);
        release(shifted);
        release(dst);
        release(src);
    }
}

static void test_creation(void)
{
    int64_t shape[3] = {3, 17, 19};
    for (int dt = 0; dt < 2; dt++) {
        char what[64];
        snprintf(what, sizeof what, "rand %s", dtype_names[dt]);
        compare((pair){wgt_rand(G, (wgt_dtype)dt, 3, shape, 1234567890123ull), wgt_rand(C, (wgt_dtype)dt, 3, shape, 1234567890123ull)},
                what);
        /* randn: log and cos of the GPU's own f32 functions, a few ulp off */
        snprintf(what, sizeof what, "randn %s", dtype_names[dt]);
        compare_tol((pair){wgt_randn(G, (wgt_dtype)dt, 3, shape, 99), wgt_randn(C, (wgt_dtype)dt, 3, shape, 99)},
                    dt ? 1e-3 : 1e-6, 1e-6, what);
    }
    int64_t zero = 0;
    compare((pair){wgt_rand(G, WGT_F32, 1, &zero, 5), wgt_rand(C, WGT_F32, 1, &zero, 5)}, "rand empty");
    compare((pair){wgt_rand(G, WGT_F32, 0, NULL, 5), wgt_rand(C, WGT_F32, 0, NULL, 5)}, "rand scalar");
    for (int dt = 0; dt < WGT_DTYPE_COUNT; dt++) {
        char what[64];
        snprintf(what, sizeof what, "eye %s", dtype_names[dt]);
        compare((pair){wgt_eye(G, (wgt_dtype)dt, 13, 7), wgt_eye(C, (wgt_dtype)dt, 13, 7)}, what);
        snprintf(what, sizeof what, "zeros %s", dtype_names[dt]);
        compare((pair){wgt_full(G, (wgt_dtype)dt, 3, shape, -2.5), wgt_full(C, (wgt_dtype)dt, 3, shape, -2.5)}, what);
    }
    compare((pair){wgt_arange(G, WGT_F32, -3.0, 10.0, 0.1), wgt_arange(C, WGT_F32, -3.0, 10.0, 0.1)}, "arange f32");
    compare((pair){wgt_arange(G, WGT_I32, -30, 1000, 7), wgt_arange(C, WGT_I32, -30, 1000, 7)}, "arange i32");
    compare((pair){wgt_arange(G, WGT_F16, 0, 50, 0.3), wgt_arange(C, WGT_F16, 0, 50, 0.3)}, "arange f16");
    compare((pair){wgt_linspace(G, WGT_F32, -1.0, 3.0, 1001), wgt_linspace(C, WGT_F32, -1.0, 3.0, 1001)}, "linspace");

    int64_t ms[3] = {2, 11, 14};
    pair m = make(WGT_F32, 3, ms);
    compare((pair){wgt_tril(m.g, 0), wgt_tril(m.c, 0)}, "tril");
    compare((pair){wgt_triu(m.g, 2), wgt_triu(m.c, 2)}, "triu 2");
    compare((pair){wgt_tril(m.g, -3), wgt_tril(m.c, -3)}, "tril -3");
    release(m);
    int32_t ids[9] = {0, 3, 6, 1, 4, 5, 5, 2, 6}; /* in [0, 7): others are an error (test_semantics) */
    int64_t is[2] = {3, 3};
    pair id = make_from(WGT_I32, 2, is, ids);
    compare((pair){wgt_one_hot(id.g, 10, WGT_F32), wgt_one_hot(id.c, 10, WGT_F32)}, "one_hot f32");
    compare((pair){wgt_one_hot(id.g, 10, WGT_U8), wgt_one_hot(id.c, 10, WGT_U8)}, "one_hot u8");
    compare((pair){wgt_one_hot(id.g, 7, WGT_F16), wgt_one_hot(id.c, 7, WGT_F16)}, "one_hot f16");
    release(id);
}

/* More than 65535 workgroups: the 2-D grid fold. For real where the device
 * binds a u8 tensor of 2^28 + elements; always through WGT_WEBGPU_GRID_LIMIT,
 * which folds small grids the same way. */
static void test_large(void)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(G, &info);
    int64_t n = 65536LL * 256 * 16 + 4099; /* > 65535 workgroups of 256 x 16 u8 elements */
    if ((uint64_t)n <= info.limits.max_storage_buffer_binding_size) {
        pair a = make_range(WGT_U8, 1, &n, range_default, false);
        int64_t one = 1;
        pair b = make(WGT_U8, 1, &one);
        compare(binary(WGT_OP_ADD, a, b), "u8 add > 65535 workgroups");
        release(a);
        release(b);
    } else {
        printf("  (u8 add over 65535 workgroups skipped: %lld bytes exceed the binding limit %llu)\n", (long long)n,
               (unsigned long long)info.limits.max_storage_buffer_binding_size);
    }
    int64_t m = (1 << 22) + 3;
    pair x = make(WGT_F32, 1, &m), y = make(WGT_F32, 1, &m);
    compare(binary(WGT_OP_MUL, x, y), "f32 mul 2^22 + 3");
    release(x);
    release(y);
    if (!use_knobs((const char *[]){"WGT_WEBGPU_GRID_LIMIT", "7", NULL})) return;
    x = make(WGT_F32, 1, &m), y = make(WGT_F32, 1, &m);
    compare(binary(WGT_OP_ADD, x, y), "f32 add, grid folded into rows of 7 workgroups");
    pair xs = slice(x, 0, 5, m, 3);
    compare(unary(WGT_OP_NEG, xs), "f32 neg strided, grid folded");
    pair h = cast(xs, WGT_F16);
    compare(retain(h), "f32 -> f16 strided, grid folded");
    compare(cast(h, WGT_U8), "f16 -> u8, grid folded");
    release(x);
    release(y);
    release(xs);
    release(h);
    use_knobs(NULL);
}

static void test_casts(void);

/* f16 with the device's fast paths (shader-f16 stores, hardware conversions
 * where found exact) and with the portable ones (WGT_WEBGPU_DISABLE_F16=1). */
static void test_f16_paths(void)
{
    for (int pass = 0; pass < 2; pass++) {
        if (pass && !use_knobs((const char *[]){"WGT_WEBGPU_DISABLE_F16", "1", NULL})) return;
        const char *path = pass ? "portable f16" : "fast f16";
        char what[96];
        int64_t shape[2] = {21, 23};
        pair dst = make(WGT_F16, 2, shape);
        pair t = transpose(dst, 0, 1);
        pair src = make(WGT_F32, 2, (int64_t[2]){23, 21});
        assign(t, src, "assign f16 transposed");
        snprintf(what, sizeof what, "%s: strided store", path);
        compare(retain(dst), what);
        pair a = make(WGT_F16, 2, shape), b = make(WGT_F16, 2, shape);
        snprintf(what, sizeof what, "%s: add", path);
        compare(binary(WGT_OP_ADD, a, b), what);
        snprintf(what, sizeof what, "%s: exp", path);
        compare_tol(unary(WGT_OP_EXP, a), 1e-3, 1e-6, what);
        snprintf(what, sizeof what, "%s: copy", path);
        compare((pair){wgt_copy(a.g), wgt_copy(a.c)}, what);
        release(dst); release(t); release(src); release(a); release(b);
        if (pass) test_casts(); /* every dtype pair again, through the portable conversions */
    }
    use_knobs(NULL);
}

/* An input in the output's own buffer (in place): the backend must read a snapshot. */
static void test_in_place(void)
{
    int64_t n = 1001;
    pair x = make(WGT_F32, 1, &n);
    wgt_expr e;
    wgt_expr_init(&e);
    int a = wgt_expr_input(&e, 0, WGT_EXPR_F32);
    wgt_expr_binary(&e, WGT_EXPR_MUL, a, wgt_expr_const(&e, 3.0, WGT_EXPR_F32));
    wgt_tensor *xs[2] = {x.g, x.c};
    for (int k = 0; k < 2; k++) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof call);
        call.kind = WGT_KERNEL_ELEMENTWISE;
        call.op_name = "in-place test";
        call.expr = &e;
        call.n_inputs = 1;
        call.inputs[0] = xs[k]->view;
        call.n_outputs = 1;
        call.outputs[0] = xs[k]->view;
        wgt_status s = wgt_run_kernel(wgt_tensor_context(xs[k]), &call);
        CHECK(s == WGT_OK, "in-place run: %s", wgt_context_error_message(wgt_tensor_context(xs[k])));
    }
    compare(x, "in-place x *= 3");
}

/* ------------------------------------------- inner-contiguous strided stores */

/* Strided destinations whose innermost dim is contiguous, as the [B, H, T, D]
 * heads of a [B, T, 3 H D] qkv buffer (a full chunk is then one vec4 per
 * strided view: plan.inner_contiguous in webgpu_elementwise.c), and near
 * misses of that path. A case writes into a view of a base tensor through
 * wgt_assign (expression NULL) or wgt_fused_assign and compares the whole
 * base, read back, with the values computed here from the views' layouts
 * (written out in the case and checked against the library's views), so the
 * elements outside the view must survive. Each case also says whether the
 * whole-vec4 path must take it. WebGPU only: the reference is this code. */

/* base [base] contiguous, its last dim sliced [start, stop), viewed as [view]
 * and permuted by perm: a view of shape view[perm[i]], offset and strides */
typedef struct inner_view {
    int base_ndim;
    int64_t base[3], start, stop;
    int ndim;
    int64_t view[4];
    int perm[4];
    int64_t offset, strides[4];
} inner_view;

/* [B, H, T, D]: part (0 q, 1 k, 2 v) of a [B, T, 3 H D] buffer */
#define HEADS(B, T, H, D, part)                                                                             \
    {3, {B, T, 3 * (H) * (D)}, (part) * (H) * (D), ((part) + 1) * (H) * (D), 4, {B, T, H, D}, {0, 2, 1, 3}, \
     (part) * (H) * (D), {(T) * 3 * (H) * (D), D, 3 * (H) * (D), 1}}
/* [R, stop - start]: columns [start, stop) of a [R, W] buffer */
#define ROWS(R, W, start, stop) {2, {R, W}, start, stop, 2, {R, (stop) - (start)}, {0, 1}, start, {W, 1}}

typedef struct inner_case {
    const char *name;
    wgt_dtype dtype, in_dtype;  /* output, inputs */
    const char *expr;           /* NULL: wgt_assign of input a */
    inner_view out;
    /* per input: 'c' contiguous of the output's shape, 'v' the view in[k] of
     * its own base, 'b' a vector of the output's last dim broadcast, 's' a
     * scalar */
    const char *inputs;
    inner_view in[3];
    bool inner;                 /* the whole-vec4 path must take it */
} inner_case;

static const inner_case inner_cases[] = {
    /* the training step's copies, a smaller B: strides (256 * 1152, 64, 1152, 1) */
    {"f32 heads copy [2,6,256,64] -> k of [2,256,1152]", WGT_F32, WGT_F32, NULL, HEADS(2, 256, 6, 64, 1), "c",
     {{0}}, true},
    {"f32 heads copy from strided heads", WGT_F32, WGT_F32, NULL, HEADS(2, 16, 6, 64, 0), "v",
     {HEADS(2, 16, 6, 64, 2)}, true},
    {"f32 a*b+c into heads, b heads, c [64]", WGT_F32, WGT_F32, "a*b+c", HEADS(2, 16, 6, 64, 2), "cvb",
     {{0}, HEADS(2, 16, 6, 64, 1)}, true},
    {"i32 heads copy", WGT_I32, WGT_I32, NULL, HEADS(2, 16, 6, 64, 1), "c", {{0}}, true},
    {"i32 a*b+c into heads, b heads, c [64]", WGT_I32, WGT_I32, "a*b+c", HEADS(2, 16, 6, 64, 1), "cvb",
     {{0}, HEADS(2, 16, 6, 64, 0)}, true},
    {"f32 rows of 8 at offset 4, stride 12", WGT_F32, WGT_F32, NULL, ROWS(33, 12, 4, 12), "c", {{0}}, true},
    /* b contiguous but at offset 1 (loaded element by element), c a scalar */
    {"f32 a*b+c into rows, b at offset 1, c scalar", WGT_F32, WGT_F32, "a*b+c", ROWS(33, 12, 4, 12), "cvs",
     {{0}, {1, {265}, 1, 265, 2, {33, 8}, {0, 1}, 1, {8, 1}}}, true},
    /* just missed: element by element as before */
    {"f32 rows of 6 (not whole chunks)", WGT_F32, WGT_F32, NULL, ROWS(33, 8, 0, 6), "c", {{0}}, false},
    {"f32 rows at offset 1", WGT_F32, WGT_F32, NULL, ROWS(33, 12, 1, 9), "c", {{0}}, false},
    {"f32 rows of stride 10", WGT_F32, WGT_F32, NULL, ROWS(33, 10, 0, 8), "c", {{0}}, false},
    {"i32 rows at offset 2", WGT_I32, WGT_I32, NULL, ROWS(33, 12, 2, 10), "c", {{0}}, false},
    {"f32 copy from rows at offset 1", WGT_F32, WGT_F32, NULL, ROWS(33, 12, 4, 12), "v", {ROWS(33, 13, 1, 9)}, false},
    {"f32 a*b+c into rows of stride 10", WGT_F32, WGT_F32, "a*b+c", ROWS(33, 10, 0, 8), "cvb",
     {{0}, ROWS(33, 12, 4, 12)}, false},
    {"f16 -> f32 heads copy (2-byte input)", WGT_F32, WGT_F16, NULL, HEADS(2, 16, 6, 64, 1), "c", {{0}}, false},
};

static int64_t inner_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* The view v of base; NULL (with a failed CHECK) unless its layout is v's. */
static wgt_tensor *inner_make_view(wgt_tensor *base, const inner_view *v, const char *what)
{
    wgt_tensor *s = wgt_slice(base, v->base_ndim - 1, v->start, v->stop, 1);
    wgt_tensor *r = s ? wgt_view(s, v->ndim, v->view) : NULL;
    wgt_tensor *p = r ? wgt_permute(r, v->perm) : NULL;
    wgt_tensor_release(s);
    wgt_tensor_release(r);
    bool same = p && wgt_tensor_offset(p) == v->offset;
    for (int d = 0; same && d < v->ndim; d++)
        same = wgt_tensor_dim(p, d) == v->view[v->perm[d]] && wgt_tensor_strides(p)[d] == v->strides[d];
    CHECK(same, "%s: the view's layout is not the case's", what);
    if (!same) wgt_tensor_release(p);
    return same ? p : NULL;
}

/* Element i of a host array of dtype (f32, i32 or f16) as bits. */
static uint32_t inner_bits(wgt_dtype dt, const void *buf, int64_t i)
{
    return dt == WGT_F16 ? ((const uint16_t *)buf)[i] : ((const uint32_t *)buf)[i];
}

/* expr of the inputs' bits x[] (in_dtype) as the output dtype's bits. */
static uint32_t inner_reference(const inner_case *ic, const uint32_t *x)
{
    if (!ic->expr) /* a copy: the bits, or an f16 widened */
        return ic->in_dtype == WGT_F16 ? float_bits(f16_to_f32((uint16_t)x[0])) : x[0];
    if (ic->dtype == WGT_I32) return x[0] * x[1] + x[2]; /* i32 wraps */
    volatile float product = bits_f32(x[0]) * bits_f32(x[1]); /* rounded on its own, as the kernel does */
    return float_bits(product + bits_f32(x[2]));
}

static void run_inner_case(const inner_case *ic)
{
    const inner_view *ov = &ic->out;
    int nd = ov->ndim, n_in = (int)strlen(ic->inputs);
    int64_t shape[4];
    for (int d = 0; d < nd; d++) shape[d] = ov->view[ov->perm[d]];
    int64_t n = inner_numel(nd, shape), n_base = inner_numel(ov->base_ndim, ov->base);
    size_t bytes = (size_t)n_base * 4;
    uint32_t *base = malloc(bytes), *expect = malloc(bytes), *got = malloc(bytes);
    void *host[3] = {NULL, NULL, NULL};
    wgt_tensor *gbase = NULL, *dst = NULL, *in[3] = {NULL, NULL, NULL}, *in_base[3] = {NULL, NULL, NULL};
    fill_random(ic->dtype, n_base, base, range_default, true);
    memcpy(expect, base, bytes);
    gbase = wgt_tensor_from_host(G, ic->dtype, ov->base_ndim, ov->base, base);
    dst = gbase ? inner_make_view(gbase, ov, ic->name) : NULL;
    bool ok = dst != NULL;
    for (int k = 0; ok && k < n_in; k++) {
        const inner_view *iv = &ic->in[k];
        char kind = ic->inputs[k];
        int64_t count = kind == 'v' ? inner_numel(iv->base_ndim, iv->base) : kind == 'b' ? shape[nd - 1]
                        : kind == 's' ? 1 : n;
        host[k] = malloc((size_t)count * 4);
        /* a*b+c: ordinary values (products of specials would reach denormals, which GPUs may flush);
         * copies: specials and a NaN with a payload */
        fill_random(ic->in_dtype, count, host[k], range_default, !ic->expr);
        if (!ic->expr && ic->in_dtype == WGT_F32)
            for (int64_t i = 5; i < count; i += 97) ((uint32_t *)host[k])[i] = 0x7fc12345u;
        if (kind == 'v') {
            in_base[k] = wgt_tensor_from_host(G, ic->in_dtype, iv->base_ndim, iv->base, host[k]);
            in[k] = in_base[k] ? inner_make_view(in_base[k], iv, ic->name) : NULL;
        } else {
            int in_nd = kind == 'b' ? 1 : kind == 's' ? 0 : nd;
            in[k] = wgt_tensor_from_host(G, ic->in_dtype, in_nd, &shape[nd - in_nd], host[k]);
        }
        ok = in[k] != NULL;
    }
    uint64_t before = webgpu_elementwise_inner_contiguous_count();
    if (ok) ok = (ic->expr ? wgt_fused_assign(dst, ic->expr, in, n_in) : wgt_assign(dst, in[0])) == WGT_OK;
    ok = ok && wgt_tensor_read(gbase, got, bytes) == WGT_OK;
    CHECK(ok, "%s: %s", ic->name, wgt_context_error_message(G));
    uint64_t taken = webgpu_elementwise_inner_contiguous_count() - before;
    CHECK(!ok || taken == (ic->inner ? 1u : 0u), "%s: the whole-vec4 path ran %llu times, expected %d", ic->name,
          (unsigned long long)taken, ic->inner);

    /* the reference: every position of the output view, unravelled */
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t c[4], r = i, o = ov->offset;
        for (int d = nd - 1; d >= 0; d--) {
            c[d] = r % shape[d];
            r /= shape[d];
            o += c[d] * ov->strides[d];
        }
        uint32_t x[3] = {0, 0, 0};
        for (int k = 0; k < n_in; k++) {
            int64_t at = i;
            if (ic->inputs[k] == 'b') at = c[nd - 1];
            if (ic->inputs[k] == 's') at = 0;
            if (ic->inputs[k] == 'v') {
                at = ic->in[k].offset;
                for (int d = 0; d < nd; d++) at += c[d] * ic->in[k].strides[d];
            }
            x[k] = inner_bits(ic->in_dtype, host[k], at);
        }
        expect[o] = inner_reference(ic, x);
    }
    /* bit for bit; two f32 NaNs match whatever their payloads, except where a
     * copy takes the whole-vec4 path (it moves the bits) */
    bool any_nan = ic->dtype == WGT_F32 && !(ic->inner && !ic->expr && ic->in_dtype == ic->dtype);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; ok && i < n_base; i++) {
        bool same = got[i] == expect[i] || (any_nan && isnan(bits_f32(got[i])) && isnan(bits_f32(expect[i])));
        if (!same && bad++ == 0) first = i;
    }
    if (bad) CHECK(false, "%s: %lld of %lld elements differ; first at %lld: webgpu 0x%08x, expected 0x%08x", ic->name,
                   (long long)bad, (long long)n_base, (long long)first, got[first], expect[first]);
    else CHECK(ok, "%s", ic->name);
    for (int k = 0; k < 3; k++) {
        wgt_tensor_release(in[k]);
        wgt_tensor_release(in_base[k]);
        free(host[k]);
    }
    wgt_tensor_release(dst);
    wgt_tensor_release(gbase);
    free(base);
    free(expect);
    free(got);
}

static void test_inner_contiguous(void)
{
    for (size_t i = 0; i < sizeof(inner_cases) / sizeof(inner_cases[0]); i++) run_inner_case(&inner_cases[i]);
    report_errors("inner-contiguous stores");
}

static void test_pipeline_reuse(void)
{
    wgt_pipeline_stats before, after;
    int64_t s1 = 100, s2[2] = {7, 9};
    pair a = make(WGT_F32, 1, &s1), b = make(WGT_F32, 2, s2);
    compare_tol(unary(WGT_OP_EXP, a), 4e-7, 0, "exp warm-up");
    wgt_pipeline_stats_get(G, &before);
    compare_tol(unary(WGT_OP_EXP, b), 4e-7, 0, "exp other shape");
    wgt_pipeline_stats_get(G, &after);
    CHECK(after.misses == before.misses, "a new shape compiled a new pipeline (%llu -> %llu misses)",
          (unsigned long long)before.misses, (unsigned long long)after.misses);
    release(a);
    release(b);
}

/* Philox's 32 x 32 -> 64-bit products both ways: with 64-bit integers
 * (philox_mul64.wgsl, the default where the adapter has them) and from 16-bit
 * halves (philox_mul16.wgsl, WGT_PHILOX_INT64=0, what browsers run): rand and
 * dropout bit for bit the CPU's on each. */
static void test_philox_paths(void)
{
    wgt_adapter_info info;
    bool int64 = wgt_context_adapter_info(G, &info) == WGT_OK && info.shader_int64;
    printf("philox: the default context's adapter %s 64-bit integers\n", int64 ? "has" : "has no");
    wgt_context *g16 = test_context_env(NULL, (const char *[]){"WGT_PHILOX_INT64", "0", NULL});
    if (!g16) return;
    int64_t shape[2] = {37, 129}; /* 4773 draws: a partial last Philox block */
    wgt_context *gs[2] = {G, g16};
    for (int k = 0; k < 2; k++) {
        char what[96];
        snprintf(what, sizeof what, "rand, products %s", k ? "from 16-bit halves" : "by the default path");
        compare((pair){wgt_rand(gs[k], WGT_F32, 2, shape, 0xfeedbeefcafeull), wgt_rand(C, WGT_F32, 2, shape, 0xfeedbeefcafeull)},
                what);
        wgt_tensor *ones_g = wgt_full(gs[k], WGT_F32, 2, shape, 1.0), *ones_c = wgt_full(C, WGT_F32, 2, shape, 1.0);
        snprintf(what, sizeof what, "dropout 0.3, products %s", k ? "from 16-bit halves" : "by the default path");
        compare((pair){wgt_dropout(ones_g, 0.3, 77), wgt_dropout(ones_c, 0.3, 77)}, what);
        wgt_tensor_release(ones_g);
        wgt_tensor_release(ones_c);
    }
    wgt_context_destroy(g16);
}

int main(void)
{
    verbose = getenv("WGT_TEST_VERBOSE") != NULL;
    rng_state = 0x9e3779b97f4a7c15ull;
    G = test_webgpu_context();
    C = test_cpu_context();
    if (!G || !C) return test_summary();
    test_binary_exact();
    test_binary_views();
    test_binary_approx();
    test_unary();
    test_parametric_unary();
    test_where_and_fused();
    test_casts();
    test_assign();
    test_creation();
    test_philox_paths();
    test_f16_paths();
    test_in_place();
    test_inner_contiguous();
    test_pipeline_reuse();
    test_large();
    if (!G) return test_summary();
    wgt_context_destroy(G);
    wgt_context_destroy(C);
    return test_summary();
}
