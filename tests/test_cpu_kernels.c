/*
 * CPU backend kernels, checked one by one below the front-end: each case builds
 * a wgt_kernel_call by hand over storages allocated through the backend's
 * vtable and compares the result with values computed here, independently,
 * in plain double-precision loops (f16 is decoded and rounded here with
 * ldexp/frexp, Philox is re-implemented from its published constants).
 *
 * Outputs sit between guard bytes that must survive every kernel. Exits
 * non-zero on any mismatch and prints "N passed, M failed".
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/internal.h"
#include "cpu/cpu_internal.h"
#include "test_util.h"

#define PI 3.14159265358979323846

static wgt_context *ctx;
static wgt_backend *be;

/* ------------------------------------------------------- f16 references */

static double ref_f16_decode(uint16_t h)
{
    int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
    double v;
    if (exponent == 31) v = mantissa ? NAN : INFINITY;
    else if (exponent == 0) v = ldexp(mantissa, -24);
    else v = ldexp(1024 + mantissa, exponent - 25);
    return sign ? -v : v;
}

/* x rounded to the nearest f16 value, ties to even, overflow to inf. */
static double ref_f16_round(double x)
{
    if (isnan(x) || isinf(x)) return x;
    double a = fabs(x);
    if (a >= 65520.0) return copysign(INFINITY, x);
    double quantum;
    if (a < ldexp(1, -14)) quantum = ldexp(1, -24);
    else {
        int e;
        frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
        quantum = ldexp(1, e - 1 - 10);
    }
    return copysign(nearbyint(a / quantum) * quantum, x); /* nearbyint: ties to even */
}

/* Bits of an f16-representable value. */
static uint16_t ref_f16_encode(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v)) return 0x7e00;
    if (isinf(v)) return sign | 0x7c00;
    if (a < ldexp(1, -14)) return sign | (uint16_t)(a * ldexp(1, 24));
    int e;
    double m = frexp(a, &e);
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

/* -------------------------------------------------------- test tensors */

#define GUARD 16 /* elements of guard on each side of every test storage */

typedef struct test_tensor {
    wgt_storage storage;
    wgt_tensor_view view;
    int64_t capacity; /* elements, guards included */
} test_tensor;

static size_t dsize(wgt_dtype d) { return d == WGT_F16 ? 2 : (d == WGT_U8 || d == WGT_BOOL) ? 1 : 4; }

static void contiguous(wgt_tensor_view *v)
{
    int64_t s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) { v->strides[d] = s; s *= v->shape[d]; }
}

static int64_t numel_of(const wgt_tensor_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* A contiguous tensor with `elements` of room (0: numel) plus guards. */
static test_tensor *tensor_new_room(wgt_dtype dtype, int ndim, const int64_t *shape, int64_t elements)
{
    test_tensor *t = calloc(1, sizeof *t);
    t->view.dtype = dtype;
    t->view.ndim = ndim;
    for (int d = 0; d < ndim; d++) t->view.shape[d] = shape[d];
    contiguous(&t->view);
    if (elements == 0) elements = numel_of(&t->view);
    t->capacity = elements + 2 * GUARD;
    t->storage.refcount = 1;
    t->storage.bytes = ((size_t)t->capacity * dsize(dtype) + 3) & ~(size_t)3;
    if (be->vt->storage_alloc(be, t->storage.bytes, &t->storage.handle) != WGT_OK) abort();
    memset(t->storage.handle, 0xA5, t->storage.bytes);
    t->view.storage = &t->storage;
    t->view.offset = GUARD;
    return t;
}

static test_tensor *tensor_new(wgt_dtype dtype, int ndim, const int64_t *shape)
{
    return tensor_new_room(dtype, ndim, shape, 0);
}

static void tensor_free(test_tensor *t)
{
    if (!t) return;
    be->vt->storage_free(be, t->storage.handle);
    free(t);
}

/* Guard bytes before the view's first and after its last possible element. */
static bool guards_intact(const test_tensor *t)
{
    const unsigned char *p = t->storage.handle;
    size_t size = dsize(t->view.dtype);
    for (size_t i = 0; i < GUARD * size; i++) if (p[i] != 0xA5) return false;
    for (size_t i = (size_t)(t->capacity - GUARD) * size; i < t->storage.bytes; i++) if (p[i] != 0xA5) return false;
    return true;
}

/* Storage element index of linear (row-major) element i of view v. */
static int64_t element_at(const wgt_tensor_view *v, int64_t i)
{
    int64_t at = v->offset;
    for (int d = v->ndim - 1; d >= 0; d--) {
        at += (i % v->shape[d]) * v->strides[d];
        i /= v->shape[d];
    }
    return at;
}

static double get(const wgt_tensor_view *v, int64_t i)
{
    const char *p = (const char *)v->storage->handle + element_at(v, i) * (int64_t)dsize(v->dtype);
    switch (v->dtype) {
    case WGT_F32: { float f; memcpy(&f, p, 4); return f; }
    case WGT_F16: { uint16_t h; memcpy(&h, p, 2); return ref_f16_decode(h); }
    case WGT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    default: return *(const uint8_t *)p;
    }
}

static int32_t get_i32(const wgt_tensor_view *v, int64_t i)
{
    int32_t x;
    memcpy(&x, (const char *)v->storage->handle + element_at(v, i) * 4, 4);
    return x;
}

/* Stores v, which must be representable in the dtype (f16 is rounded here). */
static void set(const wgt_tensor_view *v, int64_t i, double x)
{
    char *p = (char *)v->storage->handle + element_at(v, i) * (int64_t)dsize(v->dtype);
    switch (v->dtype) {
    case WGT_F32: { float f = (float)x; memcpy(p, &f, 4); break; }
    case WGT_F16: { uint16_t h = ref_f16_encode(ref_f16_round(x)); memcpy(p, &h, 2); break; }
    case WGT_I32: { int32_t n = (int32_t)x; memcpy(p, &n, 4); break; }
    default: *(uint8_t *)p = (uint8_t)x; break;
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1p-53);
}

static void fill_random(const wgt_tensor_view *v, double lo, double hi, bool integers)
{
    for (int64_t i = 0; i < numel_of(v); i++) {
        double x = uniform(lo, hi);
        set(v, i, integers ? floor(x) : x);
    }
}

/* got matches want: NaN with NaN, inf exactly, else within atol + rtol |want|. */
static bool close_to(double got, double want, double rtol, double atol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* float result of an operation whose double result rounds correctly to float */
static double f32(double x) { return (double)(float)x; }

static wgt_status run(wgt_kernel_call *call) { return be->vt->run(be, call); }

static wgt_kernel_call new_call(wgt_kernel_kind kind)
{
    wgt_kernel_call c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.op_name = "test";
    c.n_outputs = 1;
    return c;
}

/* ------------------------------------------------------ expression help */

static int add_node(wgt_expr *e, int op, int type, int a0, int a1, int a2)
{
    wgt_expr_node *n = &e->nodes[e->n_nodes];
    memset(n, 0, sizeof *n);
    n->opcode = (uint8_t)op;
    n->type = (uint8_t)type;
    n->args[0] = (int16_t)a0; n->args[1] = (int16_t)a1; n->args[2] = (int16_t)a2;
    return e->n_nodes++;
}

static int add_input(wgt_expr *e, int k, int type)
{
    int j = add_node(e, WGT_EXPR_INPUT, type, -1, -1, -1);
    e->nodes[j].input_index = k;
    if (k + 1 > e->n_inputs) e->n_inputs = k + 1;
    return j;
}

static int add_const(wgt_expr *e, double v, int type)
{
    int j = add_node(e, WGT_EXPR_CONST, type, -1, -1, -1);
    e->nodes[j].constant = v;
    return j;
}

static void expr_init(wgt_expr *e) { memset(e, 0, sizeof *e); }

static wgt_status run_expr(const wgt_expr *e, test_tensor *const *inputs, const wgt_tensor_view *in_views, int n,
                           const wgt_tensor_view *out)
{
    wgt_kernel_call c = new_call(WGT_KERNEL_ELEMENTWISE);
    c.expr = e;
    c.n_inputs = n;
    for (int k = 0; k < n; k++) c.inputs[k] = in_views ? in_views[k] : inputs[k]->view;
    c.outputs[0] = *out;
    return run(&c);
}

/* ======================================================= f16 conversions */

static void test_f16_conversions(void)
{
    /* load: every f16 pattern -> f32 */
    int64_t n = 65536;
    test_tensor *h = tensor_new(WGT_F16, 1, &n), *f = tensor_new(WGT_F32, 1, &n);
    for (int64_t i = 0; i < n; i++) ((uint16_t *)h->storage.handle)[GUARD + i] = (uint16_t)i;
    wgt_expr e;
    expr_init(&e);
    add_input(&e, 0, WGT_EXPR_F32);
    CHECK(run_expr(&e, &h, NULL, 1, &f->view) == WGT_OK, "f16 -> f32 run");
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = ref_f16_decode((uint16_t)i), got = get(&f->view, i);
        if (!(isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want))) {
            if (bad++ < 5) fprintf(stderr, "  f16 0x%04x -> %g, want %g\n", (unsigned)i, got, want);
        }
    }
    CHECK(bad == 0, "%d f16 patterns decode wrongly", bad);

    /* store: for every finite half value, the value, the tie to the next one
     * and one float ulp either side of the tie, positive and negative */
    int64_t m = 0, cap = 65536 * 4 + 64;
    test_tensor *src = tensor_new(WGT_F32, 1, &cap), *dst = tensor_new(WGT_F16, 1, &cap);
    float *values = (float *)src->storage.handle + GUARD;
    for (uint32_t b = 0; b < 0x7c00; b++) {
        double lo = ref_f16_decode((uint16_t)b), hi = b + 1 < 0x7c00 ? ref_f16_decode((uint16_t)(b + 1)) : 65536.0;
        float tie = (float)((lo + hi) / 2); /* exact in float */
        float cases[4] = {(float)lo, tie, nextafterf(tie, 0), nextafterf(tie, INFINITY)};
        for (int c = 0; c < 4; c++) {
            values[m++] = (b & 1) ? -cases[c] : cases[c];
        }
    }
    float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e30f, -1e-30f, 0.0f, -0.0f,
                        FLT_MIN, FLT_TRUE_MIN, 2.98e-8f, 2.9802322e-8f, 2.9802326e-8f, 5.96e-8f};
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) values[m++] = specials[s];
    src->view.shape[0] = dst->view.shape[0] = m;
    CHECK(run_expr(&e, &src, NULL, 1, &dst->view) == WGT_OK, "f32 -> f16 run");
    bad = 0;
    for (int64_t i = 0; i < m; i++) {
        double want = ref_f16_round(values[i]), got = get(&dst->view, i);
        if (!(isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want))) {
            if (bad++ < 5) fprintf(stderr, "  f32 %.9g -> f16 %.9g, want %.9g\n", values[i], got, want);
        }
    }
    CHECK(bad == 0, "%d of %lld f32 values round to f16 wrongly", bad, (long long)m);
    CHECK(guards_intact(dst) && guards_intact(f), "f16 conversion wrote outside its output");
    tensor_free(h); tensor_free(f); tensor_free(src); tensor_free(dst);
}

/* ===================================================== elementwise ops */

static const float special_values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.7f, -3.7f,
                                       1e-3f, 1e30f, -1e30f, 1e-40f, 88.0f, -88.0f, 100.0f, INFINITY, -INFINITY, NAN};
#define N_SPECIAL (int)(sizeof special_values / sizeof special_values[0])

typedef struct unary_case {
    int op;
    double (*ref)(double);
    double rtol, atol; /* 0, 0: must equal the double result rounded to float */
    double lo, hi;     /* random input range */
} unary_case;

static double r_neg(double x) { return -x; }
static double r_abs(double x) { return fabs(x); }
static double r_sign(double x) { return isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_recip(double x) { return 1 / x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return isnan(x) ? x : x > 0 ? x : 0; }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }
static double r_gelu_tanh(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / PI) * (x + 0.044715 * x * x * x))); }
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_softplus(double x) { return isnan(x) ? x : x > 30 ? x : log1p(exp(x)); }
static double r_round(double x) { return nearbyint(x); }

static void test_float_unary(void)
{
    const unary_case cases[] = {
        {WGT_EXPR_NEG, r_neg, 0, 0, -100, 100}, {WGT_EXPR_ABS, r_abs, 0, 0, -100, 100},
        {WGT_EXPR_SIGN, r_sign, 0, 0, -2, 2}, {WGT_EXPR_SQRT, sqrt, 0, 0, 0, 100},
        {WGT_EXPR_RECIPROCAL, r_recip, 0, 0, -10, 10}, {WGT_EXPR_FLOOR, floor, 0, 0, -10, 10},
        {WGT_EXPR_CEIL, ceil, 0, 0, -10, 10}, {WGT_EXPR_ROUND, r_round, 0, 0, -10, 10},
        {WGT_EXPR_RELU, r_relu, 0, 0, -10, 10}, {WGT_EXPR_RSQRT, r_rsqrt, 3e-7, 0, 0, 100},
        {WGT_EXPR_EXP, exp, 2e-6, 1e-30, -20, 20}, {WGT_EXPR_LOG, log, 2e-6, 1e-7, 0, 100},
        {WGT_EXPR_LOG1P, log1p, 2e-6, 1e-7, -1, 100}, {WGT_EXPR_SIN, sin, 2e-6, 1e-7, -20, 20},
        {WGT_EXPR_COS, cos, 2e-6, 1e-7, -20, 20}, {WGT_EXPR_TANH, tanh, 2e-6, 1e-7, -10, 10},
        {WGT_EXPR_SIGMOID, r_sigmoid, 2e-6, 1e-7, -20, 20}, {WGT_EXPR_GELU, r_gelu, 1e-5, 1e-6, -10, 10},
        {WGT_EXPR_GELU_TANH, r_gelu_tanh, 1e-5, 1e-5, -10, 10}, {WGT_EXPR_SILU, r_silu, 1e-5, 1e-6, -20, 20},
        {WGT_EXPR_SOFTPLUS, r_softplus, 1e-5, 1e-6, -20, 40}, {WGT_EXPR_ERF, erf, 2e-6, 1e-7, -6, 6},
    };
    int64_t n = 1000 + N_SPECIAL;
    test_tensor *x = tensor_new(WGT_F32, 1, &n), *out = tensor_new(WGT_F32, 1, &n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const unary_case *uc = &cases[c];
        for (int i = 0; i < N_SPECIAL; i++) set(&x->view, i, special_values[i]);
        for (int64_t i = N_SPECIAL; i < n; i++) set(&x->view, i, uniform(uc->lo, uc->hi));
        wgt_expr e;
        expr_init(&e);
        add_node(&e, uc->op, WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), -1, -1);
        CHECK(run_expr(&e, &x, NULL, 1, &out->view) == WGT_OK, "unary op %d runs", uc->op);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            double in = get(&x->view, i), want = uc->ref(in), got = get(&out->view, i);
            bool ok = uc->rtol == 0 && uc->atol == 0
                          ? (isnan(want) ? isnan(got) : got == f32(want))
                          : close_to(got, f32(want), uc->rtol, uc->atol);
            if (!ok && bad++ < 3) fprintf(stderr, "  op %d (%s) x=%.9g got %.9g want %.9g\n", uc->op,
                                          wgt_expr_opcode_name((wgt_expr_opcode)uc->op), in, got, want);
        }
        CHECK(bad == 0, "unary op %s: %d mismatches", wgt_expr_opcode_name((wgt_expr_opcode)uc->op), bad);
    }
    CHECK(guards_intact(out), "unary ops wrote outside the output");
    tensor_free(x);
    tensor_free(out);
}

static double r_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double r_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

static void test_float_binary(void)
{
    int64_t n = N_SPECIAL * N_SPECIAL + 2000;
    test_tensor *a = tensor_new(WGT_F32, 1, &n), *b = tensor_new(WGT_F32, 1, &n);
    test_tensor *out = tensor_new(WGT_F32, 1, &n), *flags = tensor_new(WGT_BOOL, 1, &n);
    for (int i = 0; i < N_SPECIAL; i++) {
        for (int j = 0; j < N_SPECIAL; j++) {
            set(&a->view, i * N_SPECIAL + j, special_values[i]);
            set(&b->view, i * N_SPECIAL + j, special_values[j]);
        }
    }
    for (int64_t i = N_SPECIAL * N_SPECIAL; i < n; i++) {
        set(&a->view, i, uniform(-100, 100));
        set(&b->view, i, i % 7 == 0 ? get(&a->view, i) : uniform(-100, 100)); /* some equal pairs */
    }
    test_tensor *ins[2] = {a, b};
    const int arith[] = {WGT_EXPR_ADD, WGT_EXPR_SUB, WGT_EXPR_MUL, WGT_EXPR_DIV, WGT_EXPR_MAX, WGT_EXPR_MIN, WGT_EXPR_POW};
    for (size_t c = 0; c < sizeof arith / sizeof arith[0]; c++) {
        wgt_expr e;
        expr_init(&e);
        add_node(&e, arith[c], WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), add_input(&e, 1, WGT_EXPR_F32), -1);
        CHECK(run_expr(&e, ins, NULL, 2, &out->view) == WGT_OK, "binary op runs");
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = get(&a->view, i), y = get(&b->view, i), got = get(&out->view, i), want;
            bool ok;
            switch (arith[c]) {
            case WGT_EXPR_ADD: want = x + y; break;
            case WGT_EXPR_SUB: want = x - y; break;
            case WGT_EXPR_MUL: want = x * y; break;
            case WGT_EXPR_DIV: want = x / y; break;
            case WGT_EXPR_MAX: want = r_max(x, y); break;
            case WGT_EXPR_MIN: want = r_min(x, y); break;
            default: want = pow(x, y); break;
            }
            if (arith[c] == WGT_EXPR_POW) ok = close_to(got, f32(want), 2e-6, 1e-38);
            else ok = isnan(want) ? isnan(got) : got == f32(want); /* + - * / exactly as IEEE f32 */
            if (!ok && bad++ < 3) fprintf(stderr, "  %s(%.9g, %.9g) = %.9g, want %.9g\n",
                                          wgt_expr_opcode_name((wgt_expr_opcode)arith[c]), x, y, got, want);
        }
        CHECK(bad == 0, "binary %s: %d mismatches", wgt_expr_opcode_name((wgt_expr_opcode)arith[c]), bad);
    }
    /* comparisons and logic, stored as bool */
    const int logic[] = {WGT_EXPR_EQ, WGT_EXPR_NE, WGT_EXPR_LT, WGT_EXPR_LE, WGT_EXPR_GT, WGT_EXPR_GE, WGT_EXPR_AND, WGT_EXPR_OR};
    for (size_t c = 0; c < sizeof logic / sizeof logic[0]; c++) {
        wgt_expr e;
        expr_init(&e);
        add_node(&e, logic[c], WGT_EXPR_I32, add_input(&e, 0, WGT_EXPR_F32), add_input(&e, 1, WGT_EXPR_F32), -1);
        CHECK(run_expr(&e, ins, NULL, 2, &flags->view) == WGT_OK, "compare runs");
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = get(&a->view, i), y = get(&b->view, i), got = get(&flags->view, i);
            bool tx = x != 0 || isnan(x), ty = y != 0 || isnan(y), want;
            switch (logic[c]) {
            case WGT_EXPR_EQ: want = x == y; break;
            case WGT_EXPR_NE: want = !(x == y); break; /* NaN != anything */
            case WGT_EXPR_LT: want = x < y; break;
            case WGT_EXPR_LE: want = x <= y; break;
            case WGT_EXPR_GT: want = x > y; break;
            case WGT_EXPR_GE: want = x >= y; break;
            case WGT_EXPR_AND: want = tx && ty; break;
            default: want = tx || ty; break;
            }
            if (got != (double)want && bad++ < 3) fprintf(stderr, "  %s(%g, %g) = %g\n", wgt_expr_opcode_name((wgt_expr_opcode)logic[c]), x, y, got);
        }
        CHECK(bad == 0, "logic %s: %d mismatches", wgt_expr_opcode_name((wgt_expr_opcode)logic[c]), bad);
    }
    /* NOT and WHERE with a NaN condition: NaN is true */
    wgt_expr e;
    expr_init(&e);
    int x0 = add_input(&e, 0, WGT_EXPR_F32), x1 = add_input(&e, 1, WGT_EXPR_F32);
    add_node(&e, WGT_EXPR_WHERE, WGT_EXPR_F32, x0, x1, add_node(&e, WGT_EXPR_NOT, WGT_EXPR_I32, x1, -1, -1));
    CHECK(run_expr(&e, ins, NULL, 2, &out->view) == WGT_OK, "where runs");
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double c = get(&a->view, i), y = get(&b->view, i), got = get(&out->view, i);
        double want = (c != 0 || isnan(c)) ? y : (double)!(y != 0 || isnan(y));
        if (!(isnan(want) ? isnan(got) : got == want)) bad++;
    }
    CHECK(bad == 0, "where/not: %d mismatches", bad);
    CHECK(guards_intact(out) && guards_intact(flags), "binary ops wrote outside the output");
    tensor_free(a); tensor_free(b); tensor_free(out); tensor_free(flags);
}

static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

static void test_int_ops(void)
{
    const int32_t specials[] = {0, 1, -1, 2, -2, 7, -7, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 65536, 300, 255, 256};
    const int ns = sizeof specials / sizeof specials[0];
    int64_t n = ns * ns;
    test_tensor *a = tensor_new(WGT_I32, 1, &n), *b = tensor_new(WGT_I32, 1, &n), *out = tensor_new(WGT_I32, 1, &n);
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) { set(&a->view, i * ns + j, specials[i]); set(&b->view, i * ns + j, specials[j]); }
    test_tensor *ins[2] = {a, b};
    const int ops[] = {WGT_EXPR_ADD, WGT_EXPR_SUB, WGT_EXPR_MUL, WGT_EXPR_MAX, WGT_EXPR_MIN, WGT_EXPR_NEG, WGT_EXPR_ABS,
                       WGT_EXPR_SIGN, WGT_EXPR_RELU, WGT_EXPR_LT, WGT_EXPR_EQ};
    for (size_t c = 0; c < sizeof ops / sizeof ops[0]; c++) {
        wgt_expr e;
        expr_init(&e);
        int x = add_input(&e, 0, WGT_EXPR_I32), y = add_input(&e, 1, WGT_EXPR_I32);
        bool unary = ops[c] >= WGT_EXPR_NEG && ops[c] <= WGT_EXPR_NOT;
        add_node(&e, ops[c], WGT_EXPR_I32, x, unary ? -1 : y, -1);
        CHECK(run_expr(&e, ins, NULL, 2, &out->view) == WGT_OK, "int op runs");
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t p = get_i32(&a->view, i), q = get_i32(&b->view, i);
            int32_t got = get_i32(&out->view, i), want;
            switch (ops[c]) {
            case WGT_EXPR_ADD: want = wrap32(p + q); break;
            case WGT_EXPR_SUB: want = wrap32(p - q); break;
            case WGT_EXPR_MUL: want = wrap32((int64_t)((uint64_t)p * (uint64_t)q)); break;
            case WGT_EXPR_MAX: want = (int32_t)(p > q ? p : q); break;
            case WGT_EXPR_MIN: want = (int32_t)(p < q ? p : q); break;
            case WGT_EXPR_NEG: want = wrap32(-p); break;
            case WGT_EXPR_ABS: want = wrap32(p < 0 ? -p : p); break;
            case WGT_EXPR_SIGN: want = (p > 0) - (p < 0); break;
            case WGT_EXPR_RELU: want = (int32_t)(p > 0 ? p : 0); break;
            case WGT_EXPR_LT: want = p < q; break;
            default: want = p == q; break;
            }
            if (got != want && bad++ < 3) fprintf(stderr, "  int %s(%lld, %lld) = %d, want %d\n",
                                                  wgt_expr_opcode_name((wgt_expr_opcode)ops[c]), (long long)p, (long long)q, got, want);
        }
        CHECK(bad == 0, "int %s: %d mismatches", wgt_expr_opcode_name((wgt_expr_opcode)ops[c]), bad);
    }
    tensor_free(a); tensor_free(b); tensor_free(out);
}

/* CAST saturation and every store conversion */
static void test_casts_and_stores(void)
{
    const float fin[] = {NAN, 3e9f, -3e9f, -2.7f, 2.7f, 2147483520.0f, -2147483648.0f, 2147483648.0f, 300.7f, -1.5f,
                         0.1f, -0.0f, 0.0f, INFINITY, -INFINITY, 255.9f, 256.0f, 65519.0f, 65520.0f};
    const int nf = sizeof fin / sizeof fin[0];
    int64_t n = nf;
    test_tensor *x = tensor_new(WGT_F32, 1, &n);
    for (int i = 0; i < nf; i++) set(&x->view, i, fin[i]);
    /* F32 -> i32 / u8 / bool stores (store CASTs first) and an explicit CAST node */
    for (int kind = 0; kind < 4; kind++) {
        wgt_dtype dt = kind == 0 || kind == 3 ? WGT_I32 : kind == 1 ? WGT_U8 : WGT_BOOL;
        test_tensor *out = tensor_new(dt, 1, &n);
        wgt_expr e;
        expr_init(&e);
        int in = add_input(&e, 0, WGT_EXPR_F32);
        if (kind == 3) add_node(&e, WGT_EXPR_CAST, WGT_EXPR_I32, in, -1, -1);
        CHECK(run_expr(&e, &x, NULL, 1, &out->view) == WGT_OK, "store run");
        for (int i = 0; i < nf; i++) {
            double v = fin[i];
            int64_t cast = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int64_t)trunc(v);
            double want = dt == WGT_I32 ? (double)cast : dt == WGT_U8 ? (double)(cast & 0xff) : (double)(v != 0 || isnan(v));
            double got = get(&out->view, i);
            CHECK(got == want, "store f32 %g as %s: got %g want %g", v, wgt_dtype_name(dt), got, want);
        }
        CHECK(guards_intact(out), "store wrote outside");
        tensor_free(out);
    }
    /* I32 -> u8 (low bits), bool (!= 0), f16 (nearest even), f32 (nearest) */
    const int32_t iin[] = {257, -1, 256, 0, 65519, 70000, 2049, 2051, 16777217, -16777219, INT32_MIN, 4095, 4097};
    const int ni = sizeof iin / sizeof iin[0];
    n = ni;
    test_tensor *xi = tensor_new(WGT_I32, 1, &n);
    for (int i = 0; i < ni; i++) set(&xi->view, i, iin[i]);
    const wgt_dtype outs[] = {WGT_U8, WGT_BOOL, WGT_F16, WGT_F32};
    for (int k = 0; k < 4; k++) {
        test_tensor *out = tensor_new(outs[k], 1, &n);
        wgt_expr e;
        expr_init(&e);
        add_input(&e, 0, WGT_EXPR_I32);
        CHECK(run_expr(&e, &xi, NULL, 1, &out->view) == WGT_OK, "int store run");
        for (int i = 0; i < ni; i++) {
            double v = iin[i];
            double want = outs[k] == WGT_U8 ? (double)((uint32_t)iin[i] & 0xff) : outs[k] == WGT_BOOL ? (double)(iin[i] != 0)
                        : outs[k] == WGT_F16 ? ref_f16_round(v) : f32(v);
            CHECK(get(&out->view, i) == want, "store i32 %d as %s: got %g want %g", iin[i], wgt_dtype_name(outs[k]), get(&out->view, i), want);
        }
        tensor_free(out);
    }
    /* u8 and bool load unsigned; I32 -> F32 CAST; constants */
    int64_t four = 4;
    test_tensor *u = tensor_new(WGT_U8, 1, &four), *fo = tensor_new(WGT_F32, 1, &four);
    const double uv[] = {200, 255, 0, 1};
    for (int i = 0; i < 4; i++) set(&u->view, i, uv[i]);
    wgt_expr e;
    expr_init(&e);
    int in = add_input(&e, 0, WGT_EXPR_I32);
    add_node(&e, WGT_EXPR_ADD, WGT_EXPR_F32, add_node(&e, WGT_EXPR_CAST, WGT_EXPR_F32, in, -1, -1), add_const(&e, 0.25, WGT_EXPR_F32), -1);
    CHECK(run_expr(&e, &u, NULL, 1, &fo->view) == WGT_OK, "u8 load run");
    for (int i = 0; i < 4; i++) CHECK(get(&fo->view, i) == uv[i] + 0.25, "u8 %g loads as %g", uv[i], get(&fo->view, i) - 0.25);
    tensor_free(u); tensor_free(fo); tensor_free(x); tensor_free(xi);
}

/* ---------------------------------------- strided, broadcast, big, empty */

/* The strided walk's dim merging (cpu_walk_init): dims whose strides chain
 * merge into one run, others stay apart, and a view of no elements with sizes
 * whose products overflow int64 (any sizes are valid there) merges nothing:
 * the api_fuzzer's seed 34 under UBSan reached an unchecked product. */
static void test_walk_merges(void)
{
    cpu_walk w;
    const int64_t contiguous[3] = {12, 4, 1}, transposed[3] = {1, 2, 6};
    const int64_t *both[2] = {contiguous, transposed};
    cpu_walk_init(&w, 3, (const int64_t[]){2, 3, 4}, 1, both);
    CHECK(w.ndim == 1 && w.shape[0] == 24 && w.strides[0][0] == 1, "walk: contiguous [2, 3, 4] is one run of 24 (got "
          "%d dims, first %lld)", w.ndim, (long long)w.shape[0]);
    cpu_walk_init(&w, 3, (const int64_t[]){2, 3, 4}, 2, both);
    CHECK(w.ndim == 3, "walk: beside a permuted view nothing merges (got %d dims)", w.ndim);
    const int64_t huge = (int64_t)1 << 62, strides[3] = {0, 4, 1};
    const int64_t *one[1] = {strides};
    cpu_walk_init(&w, 3, (const int64_t[]){0, huge, 4}, 1, one);
    CHECK(w.ndim == 3 && w.shape[0] == 0 && w.shape[1] == huge && w.shape[2] == 4,
          "walk: [0, 2^62, 4] (products past int64) keeps its dims (got %d dims)", w.ndim);
}

static void test_views(void)
{
    /* a: [300, 257] read transposed as [257, 300]; b: [300] broadcast along
     * dim 0 (stride 0); out: every other element of a [257, 600] buffer, so
     * the store goes through a strided view and must leave the rest alone */
    int64_t as[2] = {300, 257}, bs[1] = {300}, os[2] = {257, 600};
    test_tensor *a = tensor_new(WGT_F32, 2, as), *b = tensor_new(WGT_F16, 1, bs), *o = tensor_new(WGT_F32, 2, os);
    fill_random(&a->view, -10, 10, false);
    fill_random(&b->view, -10, 10, false);
    for (int64_t i = 0; i < 257 * 600; i++) set(&o->view, i, -777.0);
    wgt_tensor_view av = a->view, bv = b->view, ov = o->view;
    av.shape[0] = 257; av.shape[1] = 300; av.strides[0] = 1; av.strides[1] = 257;
    bv.ndim = 2; bv.shape[0] = 257; bv.shape[1] = 300; bv.strides[0] = 0; bv.strides[1] = 1;
    ov.shape[1] = 300; ov.strides[1] = 2; ov.offset = GUARD + 1;
    wgt_expr e;
    expr_init(&e);
    add_node(&e, WGT_EXPR_MUL, WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), add_input(&e, 1, WGT_EXPR_F32), -1);
    test_tensor *ins[2] = {a, b};
    wgt_tensor_view views[2] = {av, bv};
    CHECK(run_expr(&e, ins, views, 2, &ov) == WGT_OK, "strided run");
    int bad = 0;
    for (int64_t r = 0; r < 257; r++) {
        for (int64_t c = 0; c < 600; c++) {
            double got = get(&o->view, r * 600 + c);
            double want = c % 2 == 1 ? f32(get(&a->view, (c / 2) * 257 + r) * get(&b->view, c / 2)) : -777.0;
            if (got != want && bad++ < 3) fprintf(stderr, "  strided [%lld, %lld] got %g want %g\n", (long long)r, (long long)c, got, want);
        }
    }
    CHECK(bad == 0, "strided/broadcast elementwise: %d mismatches", bad);
    CHECK(guards_intact(o), "strided store wrote outside");

    /* rank 8 with odd dims, a permuted input, offsets */
    int64_t s8[8] = {2, 3, 1, 2, 3, 2, 1, 5};
    test_tensor *x8 = tensor_new(WGT_I32, 8, s8), *y8 = tensor_new(WGT_I32, 8, s8);
    fill_random(&x8->view, -1000, 1000, true);
    wgt_tensor_view xv = x8->view; /* swap dims 0 and 7 of the storage: read it as [5, 3, 1, 2, 3, 2, 1, 2] */
    xv.shape[0] = 5; xv.shape[7] = 2; xv.strides[0] = x8->view.strides[7]; xv.strides[7] = x8->view.strides[0];
    wgt_tensor_view yv = y8->view;
    yv.shape[0] = 5; yv.shape[7] = 2;
    contiguous(&yv);
    expr_init(&e);
    add_node(&e, WGT_EXPR_NEG, WGT_EXPR_I32, add_input(&e, 0, WGT_EXPR_I32), -1, -1);
    CHECK(run_expr(&e, &x8, &xv, 1, &yv) == WGT_OK, "rank 8 run");
    bad = 0;
    for (int64_t i = 0; i < numel_of(&yv); i++) if (get(&yv, i) != -get(&xv, i)) bad++;
    CHECK(bad == 0, "rank 8 permuted: %d mismatches", bad);
    tensor_free(x8); tensor_free(y8);

    /* rank 0: scalar + scalar */
    test_tensor *s0 = tensor_new(WGT_F32, 0, NULL), *s1 = tensor_new(WGT_F32, 0, NULL);
    set(&s0->view, 0, 1.25);
    expr_init(&e);
    add_node(&e, WGT_EXPR_ADD, WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), add_const(&e, 2.0, WGT_EXPR_F32), -1);
    CHECK(run_expr(&e, &s0, NULL, 1, &s1->view) == WGT_OK && get(&s1->view, 0) == 3.25, "rank 0 elementwise");
    tensor_free(s0); tensor_free(s1);

    /* numel 0, no storage at all: a no-op */
    wgt_tensor_view empty = {0};
    empty.dtype = WGT_F32; empty.ndim = 2; empty.shape[0] = 0; empty.shape[1] = 5;
    expr_init(&e);
    add_node(&e, WGT_EXPR_EXP, WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), -1, -1);
    wgt_kernel_call c = new_call(WGT_KERNEL_ELEMENTWISE);
    c.expr = &e; c.n_inputs = 1; c.inputs[0] = empty; c.outputs[0] = empty;
    CHECK(run(&c) == WGT_OK, "empty elementwise is a no-op");

    /* a big mixed-type fusion over the parallel path: sqrt(a * b + c) with
     * c an i32 input cast to F32, rows broadcast, result to f16 */
    int64_t big[2] = {513, 301};
    test_tensor *p = tensor_new(WGT_F32, 2, big), *q = tensor_new(WGT_I32, 1, &big[1]), *r = tensor_new(WGT_F16, 2, big);
    fill_random(&p->view, 0, 10, false);
    fill_random(&q->view, 0, 100, true);
    wgt_tensor_view qv = q->view;
    qv.ndim = 2; qv.shape[0] = 513; qv.shape[1] = 301; qv.strides[0] = 0; qv.strides[1] = 1;
    expr_init(&e);
    int pa = add_input(&e, 0, WGT_EXPR_F32), qa = add_input(&e, 1, WGT_EXPR_I32);
    int prod = add_node(&e, WGT_EXPR_MUL, WGT_EXPR_F32, pa, pa, -1);
    int sum = add_node(&e, WGT_EXPR_ADD, WGT_EXPR_F32, prod, add_node(&e, WGT_EXPR_CAST, WGT_EXPR_F32, qa, -1, -1), -1);
    add_node(&e, WGT_EXPR_SQRT, WGT_EXPR_F32, sum, -1, -1);
    test_tensor *pq[2] = {p, q};
    wgt_tensor_view pqv[2] = {p->view, qv};
    CHECK(run_expr(&e, pq, pqv, 2, &r->view) == WGT_OK, "big fused run");
    bad = 0;
    for (int64_t i = 0; i < 513 * 301; i++) {
        double pv = get(&p->view, i), qq = get(&q->view, i % 301);
        double want = ref_f16_round(f32(sqrt(f32(f32(pv * pv) + qq))));
        if (get(&r->view, i) != want && bad++ < 3) fprintf(stderr, "  fused %lld: got %g want %g\n", (long long)i, get(&r->view, i), want);
    }
    CHECK(bad == 0, "big fused: %d mismatches", bad);
    CHECK(guards_intact(r), "big fused wrote outside");
    tensor_free(p); tensor_free(q); tensor_free(r); tensor_free(a); tensor_free(b); tensor_free(o);
}

/* INDEX, constants and Philox random numbers */

static void ref_philox(uint32_t k0, uint32_t k1, uint32_t c[4])
{
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1; c[3] = (uint32_t)p0; c[0] = n0; c[2] = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
}

static void test_index_and_random(void)
{
    int64_t shape[3] = {3, 4, 50};
    test_tensor *out = tensor_new(WGT_I32, 3, shape);
    for (int axis = 0; axis < 3; axis++) {
        wgt_expr e;
        expr_init(&e);
        int j = add_node(&e, WGT_EXPR_INDEX, WGT_EXPR_I32, -1, -1, -1);
        e.nodes[j].axis = axis;
        add_node(&e, WGT_EXPR_MUL, WGT_EXPR_I32, j, add_const(&e, 3, WGT_EXPR_I32), -1);
        CHECK(run_expr(&e, NULL, NULL, 0, &out->view) == WGT_OK, "index run");
        int bad = 0;
        for (int64_t i = 0; i < 600; i++) {
            int64_t coord[3] = {i / 200, (i / 50) % 4, i % 50};
            if (get_i32(&out->view, i) != 3 * coord[axis]) bad++;
        }
        CHECK(bad == 0, "INDEX(%d): %d mismatches", axis, bad);
    }
    tensor_free(out);

    int64_t n = 100000;
    test_tensor *u = tensor_new(WGT_F32, 1, &n);
    for (int normal = 0; normal < 2; normal++) {
        uint64_t seed = 0x123456789abcdef0ull + (uint64_t)normal;
        wgt_expr e;
        expr_init(&e);
        e.seed = seed;
        add_node(&e, normal ? WGT_EXPR_RAND_NORMAL : WGT_EXPR_RAND_UNIFORM, WGT_EXPR_F32, -1, -1, -1);
        CHECK(run_expr(&e, NULL, NULL, 0, &u->view) == WGT_OK, "rand run");
        int bad = 0;
        double mean = 0;
        for (int64_t i = 0; i < n; i++) {
            /* the contract: uniform i is word i % 4 of counter i / 4, normal i
             * takes words 2 (i % 2), 2 (i % 2) + 1 of counter i / 2 */
            uint32_t c[4] = {(uint32_t)(normal ? i / 2 : i / 4), 0, 0, 0};
            ref_philox((uint32_t)seed, (uint32_t)(seed >> 32), c);
            double want, got = get(&u->view, i);
            if (!normal) want = (double)(c[i % 4] >> 8) / 16777216.0;
            else {
                const uint32_t *w = c + 2 * (i % 2);
                want = sqrt(-2 * log(((w[0] >> 8) + 1.0) / 16777216.0)) * cos(2 * PI * ((w[1] >> 8) / 16777216.0));
            }
            if (!(normal ? close_to(got, want, 1e-5, 2e-6) : got == want) && bad++ < 3) fprintf(stderr, "  rand %lld: %.9g want %.9g\n", (long long)i, got, want);
            mean += got;
        }
        CHECK(bad == 0, "%s: %d mismatches", normal ? "randn" : "rand", bad);
        CHECK(fabs(mean / n - (normal ? 0.0 : 0.5)) < 0.01, "random mean %g", mean / n);
    }
    tensor_free(u);
}

/* ================================================================ REDUCE */

static double reduce_ref(const wgt_tensor_view *x, uint32_t mask, int64_t out_index, wgt_reduce_kind kind, int correction)
{
    /* coordinates of the output (keepdim shape), then every x element that maps there */
    int64_t oshape[WGT_MAX_DIMS], ocoord[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) oshape[d] = (mask >> d) & 1 ? 1 : x->shape[d];
    for (int d = x->ndim - 1, r = (int)out_index; d >= 0; d--) { ocoord[d] = r % oshape[d]; r /= (int)oshape[d]; }
    double sum = 0, prod = 1, best = NAN, count = 0, sq = 0;
    int64_t best_at = -1, position = 0;
    double values[4096];
    int nv = 0;
    for (int64_t i = 0; i < numel_of(x); i++) {
        int64_t rem = i, coord[WGT_MAX_DIMS];
        for (int d = x->ndim - 1; d >= 0; d--) { coord[d] = rem % x->shape[d]; rem /= x->shape[d]; }
        bool mine = true;
        for (int d = 0; d < x->ndim; d++) if (!((mask >> d) & 1) && coord[d] != ocoord[d]) mine = false;
        if (!mine) continue;
        double v = get(x, i);
        values[nv++] = v;
        sum += v; prod *= v; count++;
        bool want_max = kind == WGT_REDUCE_MAX || kind == WGT_REDUCE_ARGMAX;
        if (best_at < 0 || (!isnan(best) && (isnan(v) || (want_max ? v > best : v < best)))) { best = v; best_at = position; }
        position++;
    }
    double mean = sum / count;
    for (int i = 0; i < nv; i++) sq += (values[i] - mean) * (values[i] - mean);
    double denominator = count - correction > 0 ? count - correction : 0;
    switch (kind) {
    case WGT_REDUCE_SUM: return sum;
    case WGT_REDUCE_MEAN: return mean;
    case WGT_REDUCE_PROD: return prod;
    case WGT_REDUCE_VAR: return sq / denominator;
    case WGT_REDUCE_STD: return sqrt(sq / denominator);
    case WGT_REDUCE_MAX: case WGT_REDUCE_MIN: return best;
    default: return (double)best_at;
    }
}

static const char *const reduce_names[] = {"sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin"};

static int check_reduce(const wgt_tensor_view *x, uint32_t mask, wgt_reduce_kind kind, int correction, wgt_dtype out_dtype, double rtol)
{
    int64_t oshape[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) oshape[d] = (mask >> d) & 1 ? 1 : x->shape[d];
    test_tensor *out = tensor_new(out_dtype, x->ndim, oshape);
    wgt_kernel_call c = new_call(WGT_KERNEL_REDUCE);
    c.n_inputs = 1; c.inputs[0] = *x; c.outputs[0] = out->view;
    c.reduce = kind; c.reduce_mask = mask; c.correction = correction;
    int bad = 0;
    if (run(&c) != WGT_OK) bad = 1000000;
    for (int64_t i = 0; bad < 1000000 && i < numel_of(&out->view); i++) {
        double want = reduce_ref(x, mask, i, kind, correction), got = get(&out->view, i);
        if (out_dtype == WGT_F16) want = ref_f16_round(want);
        else if (out_dtype == WGT_F32) want = f32(want);
        if (!close_to(got, want, rtol, 0) && bad++ < 3)
            fprintf(stderr, "  reduce %s mask 0x%x out %lld: got %.9g want %.9g\n", reduce_names[kind], mask, (long long)i, got, want);
    }
    if (!guards_intact(out)) bad++;
    tensor_free(out);
    return bad;
}

static void test_reduce(void)
{
    int64_t shape[3] = {3, 4, 5};
    test_tensor *x = tensor_new(WGT_F32, 3, shape);
    fill_random(&x->view, -3, 3, false);
    for (uint32_t mask = 0; mask < 8; mask++) {
        for (int kind = WGT_REDUCE_SUM; kind <= WGT_REDUCE_STD; kind++) {
            for (int corr = 0; corr < (kind >= WGT_REDUCE_VAR ? 2 : 1); corr++) {
                CHECK(check_reduce(&x->view, mask, (wgt_reduce_kind)kind, corr, WGT_F32, 1e-6) == 0, "reduce %s mask 0x%x corr %d", reduce_names[kind], mask, corr);
            }
        }
    }
    for (int axis = 0; axis < 3; axis++) {
        CHECK(check_reduce(&x->view, 1u << axis, WGT_REDUCE_ARGMAX, 0, WGT_I32, 0) == 0, "argmax axis %d", axis);
        CHECK(check_reduce(&x->view, 1u << axis, WGT_REDUCE_ARGMIN, 0, WGT_I32, 0) == 0, "argmin axis %d", axis);
    }
    /* transposed view, f16 output */
    wgt_tensor_view t = x->view;
    t.shape[0] = 5; t.shape[2] = 3; t.strides[0] = 1; t.strides[2] = 20;
    CHECK(check_reduce(&t, 0x5, WGT_REDUCE_SUM, 0, WGT_F16, 0) == 0, "sum of transposed view into f16");
    CHECK(check_reduce(&t, 0x2, WGT_REDUCE_MEAN, 0, WGT_F32, 1e-6) == 0, "mean of transposed view");
    /* NaN: max/min propagate, argmax/argmin give the first NaN; ties: the first */
    int64_t row[2] = {2, 6};
    test_tensor *nx = tensor_new(WGT_F32, 2, row);
    const double nv[12] = {1, 5, NAN, 5, NAN, 0, 3, 3, -1, 3, -1, 2};
    for (int i = 0; i < 12; i++) set(&nx->view, i, nv[i]);
    for (int kind = WGT_REDUCE_MAX; kind <= WGT_REDUCE_ARGMIN; kind++) {
        if (kind == WGT_REDUCE_PROD || kind == WGT_REDUCE_VAR || kind == WGT_REDUCE_STD) continue;
        bool arg = kind >= WGT_REDUCE_ARGMAX;
        CHECK(check_reduce(&nx->view, 0x2, (wgt_reduce_kind)kind, 0, arg ? WGT_I32 : WGT_F32, 0) == 0, "NaN/ties %s", reduce_names[kind]);
    }
    /* integers: i32 sum wraps; u8 sum into f32; bool sum into i32; i32 max; prod wraps */
    int64_t ishape[2] = {4, 3};
    test_tensor *xi = tensor_new(WGT_I32, 2, ishape), *xu = tensor_new(WGT_U8, 2, ishape), *xb = tensor_new(WGT_BOOL, 2, ishape);
    const double iv[12] = {2147483647, 5, -7, 2147483647, 100000, 3, -2147483648.0, 70000, 11, 1, 1, 13};
    for (int i = 0; i < 12; i++) { set(&xi->view, i, iv[i]); set(&xu->view, i, 200 + i); set(&xb->view, i, i % 3 == 0); }
    for (uint32_t mask = 1; mask < 4; mask++) {
        int64_t os[2] = {mask & 1 ? 1 : 4, mask & 2 ? 1 : 3};
        test_tensor *o = tensor_new(WGT_I32, 2, os);
        wgt_kernel_call c = new_call(WGT_KERNEL_REDUCE);
        c.n_inputs = 1; c.inputs[0] = xi->view; c.outputs[0] = o->view; c.reduce_mask = mask;
        for (int kind = 0; kind < 2; kind++) {
            c.reduce = kind ? WGT_REDUCE_PROD : WGT_REDUCE_SUM;
            CHECK(run(&c) == WGT_OK, "int reduce runs");
            for (int64_t i = 0; i < numel_of(&o->view); i++) {
                int64_t acc = kind ? 1 : 0;
                for (int64_t j = 0; j < 12; j++) {
                    int64_t r = j / 3, col = j % 3;
                    if ((mask & 1 || r == (mask & 2 ? i : i / 3)) && (mask & 2 || col == i % 3))
                        acc = kind ? (int64_t)((uint64_t)acc * (uint64_t)(int64_t)iv[j]) : acc + (int64_t)iv[j];
                }
                CHECK(get_i32(&o->view, i) == wrap32(acc), "i32 %s mask %u [%lld]: %d want %d", kind ? "prod" : "sum", mask, (long long)i, get_i32(&o->view, i), wrap32(acc));
            }
        }
        tensor_free(o);
        CHECK(check_reduce(&xi->view, mask, WGT_REDUCE_MAX, 0, WGT_I32, 0) == 0, "i32 max mask %u", mask);
        CHECK(check_reduce(&xi->view, mask, WGT_REDUCE_MEAN, 0, WGT_F32, 1e-7) == 0, "i32 mean mask %u", mask);
        CHECK(check_reduce(&xu->view, mask, WGT_REDUCE_SUM, 0, WGT_F32, 0) == 0, "u8 sum mask %u", mask);
        CHECK(check_reduce(&xb->view, mask, WGT_REDUCE_SUM, 0, WGT_I32, 0) == 0, "bool sum mask %u", mask);
        CHECK(check_reduce(&xu->view, mask, WGT_REDUCE_ARGMAX, 0, WGT_I32, 0) == 0, "u8 argmax mask %u", mask);
    }
    /* empty reductions: sum 0, prod 1, mean/var NaN; and an empty output */
    wgt_tensor_view ev = {0};
    ev.dtype = WGT_F32; ev.ndim = 2; ev.shape[0] = 3; ev.shape[1] = 0;
    const double empty_want[] = {0, NAN, NAN, NAN, 1, NAN, NAN};
    for (int kind = WGT_REDUCE_SUM; kind <= WGT_REDUCE_STD; kind++) {
        int64_t os[2] = {3, 1};
        test_tensor *o = tensor_new(WGT_F32, 2, os);
        wgt_kernel_call c = new_call(WGT_KERNEL_REDUCE);
        c.n_inputs = 1; c.inputs[0] = ev; c.outputs[0] = o->view; c.reduce = (wgt_reduce_kind)kind; c.reduce_mask = 2;
        CHECK(run(&c) == WGT_OK, "empty reduce runs");
        if (kind != WGT_REDUCE_MAX && kind != WGT_REDUCE_MIN)
            CHECK(close_to(get(&o->view, 0), empty_want[kind], 0, 0), "empty %s = %g", reduce_names[kind], get(&o->view, 0));
        tensor_free(o);
    }
    wgt_kernel_call c = new_call(WGT_KERNEL_REDUCE);
    c.n_inputs = 1; c.inputs[0] = ev; c.outputs[0] = ev; c.outputs[0].shape[0] = 3; c.reduce_mask = 0;
    CHECK(run(&c) == WGT_OK, "reduce with an empty output is a no-op");
    /* var with one element and correction 1 is NaN */
    int64_t one[1] = {1};
    test_tensor *x1 = tensor_new(WGT_F32, 1, one);
    set(&x1->view, 0, 4.0);
    CHECK(check_reduce(&x1->view, 1, WGT_REDUCE_VAR, 1, WGT_F32, 0) == 0, "var of one element, correction 1");
    /* long reductions take the chunked path: 3 x 100003 along axis 1, and to a scalar */
    int64_t ls[2] = {3, 100003};
    test_tensor *lx = tensor_new(WGT_F32, 2, ls);
    fill_random(&lx->view, 1, 2, false);
    set(&lx->view, 50000, 7.0); set(&lx->view, 90000, 7.0);            /* ties across chunks: first wins */
    set(&lx->view, 100003 + 70000, NAN); set(&lx->view, 100003 + 80000, NAN); /* row 1: first NaN */
    for (int kind = WGT_REDUCE_SUM; kind <= WGT_REDUCE_ARGMIN; kind++) {
        if (kind == WGT_REDUCE_PROD) continue;
        bool arg = kind >= WGT_REDUCE_ARGMAX;
        int64_t os[2] = {3, 1};
        test_tensor *o = tensor_new(arg ? WGT_I32 : WGT_F32, 2, os);
        c = new_call(WGT_KERNEL_REDUCE);
        c.n_inputs = 1; c.inputs[0] = lx->view; c.outputs[0] = o->view; c.reduce = (wgt_reduce_kind)kind; c.reduce_mask = 2; c.correction = 1;
        CHECK(run(&c) == WGT_OK, "long reduce runs");
        for (int64_t r = 0; r < 3; r++) {
            double sum = 0, sq = 0, best = get(&lx->view, r * 100003);
            int64_t at = 0;
            bool want_max = kind == WGT_REDUCE_MAX || kind == WGT_REDUCE_ARGMAX;
            for (int64_t i = 0; i < 100003; i++) {
                double v = get(&lx->view, r * 100003 + i);
                sum += v;
                if (!isnan(best) && (isnan(v) || (want_max ? v > best : v < best))) { best = v; at = i; }
            }
            for (int64_t i = 0; i < 100003; i++) { double d = get(&lx->view, r * 100003 + i) - sum / 100003; sq += d * d; }
            double want = kind == WGT_REDUCE_SUM ? sum : kind == WGT_REDUCE_MEAN ? sum / 100003 : kind == WGT_REDUCE_VAR ? sq / 100002
                        : kind == WGT_REDUCE_STD ? sqrt(sq / 100002) : arg ? (double)at : best;
            CHECK(close_to(get(&o->view, r), arg ? want : f32(want), 1e-6, 0), "long %s row %lld: %.9g want %.9g", reduce_names[kind], (long long)r, get(&o->view, r), want);
        }
        tensor_free(o);
    }
    /* a long product is one running product: it underflows to 0 and stays 0
     * through a later stretch that alone would overflow (0, not inf * 0 = NaN) */
    int64_t ps[1] = {70000};
    test_tensor *px = tensor_new(WGT_F32, 1, ps), *po = tensor_new(WGT_F32, 1, one);
    for (int64_t i = 0; i < 70000; i++) set(&px->view, i, i < 35000 ? 1e-10 : 1e10);
    c = new_call(WGT_KERNEL_REDUCE);
    c.n_inputs = 1; c.inputs[0] = px->view; c.outputs[0] = po->view; c.reduce = WGT_REDUCE_PROD; c.reduce_mask = 1;
    CHECK(run(&c) == WGT_OK && get(&po->view, 0) == 0.0, "long prod underflow then overflow: %g, want 0", get(&po->view, 0));
    tensor_free(px); tensor_free(po);
    /* a long reduction over the leading dim: neighbouring outputs walk together */
    int64_t cs[2] = {50000, 7};
    test_tensor *cx = tensor_new(WGT_F32, 2, cs);
    fill_random(&cx->view, -1, 1, false);
    set(&cx->view, 7 * 30000 + 2, NAN); set(&cx->view, 7 * 40000 + 2, NAN); set(&cx->view, 7 * 100 + 3, 5.0); set(&cx->view, 7 * 200 + 3, 5.0);
    for (int kind = WGT_REDUCE_SUM; kind <= WGT_REDUCE_ARGMIN; kind++) {
        bool arg = kind >= WGT_REDUCE_ARGMAX;
        test_tensor *o = tensor_new(arg ? WGT_I32 : WGT_F32, 2, (int64_t[2]){1, 7});
        c = new_call(WGT_KERNEL_REDUCE);
        c.n_inputs = 1; c.inputs[0] = cx->view; c.outputs[0] = o->view; c.reduce = (wgt_reduce_kind)kind; c.reduce_mask = 1; c.correction = 1;
        CHECK(run(&c) == WGT_OK, "column reduce runs");
        for (int64_t col = 0; col < 7; col++) {
            double sum = 0, prod = 1, sq = 0, best = get(&cx->view, col);
            int64_t at = 0;
            bool want_max = kind == WGT_REDUCE_MAX || kind == WGT_REDUCE_ARGMAX;
            for (int64_t i = 0; i < 50000; i++) {
                double v = get(&cx->view, i * 7 + col);
                sum += v; prod *= v;
                if (!isnan(best) && (isnan(v) || (want_max ? v > best : v < best))) { best = v; at = i; }
            }
            for (int64_t i = 0; i < 50000; i++) { double d = get(&cx->view, i * 7 + col) - sum / 50000; sq += d * d; }
            double want = kind == WGT_REDUCE_SUM ? sum : kind == WGT_REDUCE_MEAN ? sum / 50000 : kind == WGT_REDUCE_VAR ? sq / 49999
                        : kind == WGT_REDUCE_STD ? sqrt(sq / 49999) : kind == WGT_REDUCE_PROD ? prod : arg ? (double)at : best;
            CHECK(close_to(get(&o->view, col), arg ? want : f32(want), 1e-6, 0), "column %s col %lld: %.9g want %.9g", reduce_names[kind], (long long)col, get(&o->view, col), want);
        }
        tensor_free(o);
    }
    tensor_free(cx);
    test_tensor *scalar = tensor_new(WGT_F32, 2, (int64_t[2]){1, 1});
    wgt_tensor_view row0 = lx->view; /* rows 0 and 2 only: no NaN, strided by 2 rows */
    row0.shape[0] = 2; row0.strides[0] = 2 * 100003;
    c = new_call(WGT_KERNEL_REDUCE);
    c.n_inputs = 1; c.inputs[0] = row0; c.outputs[0] = scalar->view; c.reduce = WGT_REDUCE_SUM; c.reduce_mask = 3;
    CHECK(run(&c) == WGT_OK, "scalar reduce runs");
    double total = 0;
    for (int64_t i = 0; i < 100003; i++) total += get(&lx->view, i) + get(&lx->view, 2 * 100003 + i);
    CHECK(get(&scalar->view, 0) == f32(total), "sum to scalar: %.9g want %.9g", get(&scalar->view, 0), f32(total));
    tensor_free(scalar); tensor_free(lx); tensor_free(x1); tensor_free(xi); tensor_free(xu); tensor_free(xb); tensor_free(nx); tensor_free(x);
}

/* ================================================================ CUMSUM */

static void test_cumsum(void)
{
    int64_t shape[3] = {3, 300, 7};
    test_tensor *x = tensor_new(WGT_F32, 3, shape), *xi = tensor_new(WGT_I32, 3, shape);
    fill_random(&x->view, -5, 5, false);
    fill_random(&xi->view, -2e9, 2e9, true);
    for (int dt = 0; dt < 3; dt++) {
        for (int axis = 0; axis < 3; axis++) {
            const test_tensor *src = dt == 1 ? xi : x;
            wgt_dtype out_dtype = dt == 0 ? WGT_F32 : dt == 1 ? WGT_I32 : WGT_F16;
            test_tensor *o = tensor_new(out_dtype, 3, shape);
            wgt_kernel_call c = new_call(WGT_KERNEL_CUMSUM);
            c.n_inputs = 1; c.inputs[0] = src->view; c.outputs[0] = o->view; c.axis = axis;
            CHECK(run(&c) == WGT_OK, "cumsum runs");
            int bad = 0;
            int64_t inner = axis == 2 ? 1 : axis == 1 ? 7 : 2100;
            for (int64_t i = 0; i < numel_of(&o->view); i++) {
                int64_t d = (i / inner) % shape[axis];
                double acc = 0;
                int64_t iacc = 0;
                for (int64_t k = 0; k <= d; k++) {
                    acc += get(&src->view, i - (d - k) * inner);
                    iacc += (int64_t)get(&src->view, i - (d - k) * inner);
                }
                double want = dt == 0 ? f32(acc) : dt == 1 ? (double)wrap32(iacc) : ref_f16_round(acc);
                if (!close_to(get(&o->view, i), want, dt == 0 ? 1e-6 : 0, dt == 0 ? 1e-5 : 0) && bad++ < 3)
                    fprintf(stderr, "  cumsum axis %d [%lld]: %.9g want %.9g\n", axis, (long long)i, get(&o->view, i), want);
            }
            CHECK(bad == 0 && guards_intact(o), "cumsum %s axis %d: %d mismatches", wgt_dtype_name(out_dtype), axis, bad);
            tensor_free(o);
        }
    }
    /* a transposed, u8 input into i32 */
    int64_t us[2] = {40, 3};
    test_tensor *u = tensor_new(WGT_U8, 2, us), *o = tensor_new(WGT_I32, 2, (int64_t[2]){3, 40});
    fill_random(&u->view, 0, 256, true);
    wgt_tensor_view ut = u->view;
    ut.shape[0] = 3; ut.shape[1] = 40; ut.strides[0] = 1; ut.strides[1] = 3;
    wgt_kernel_call c = new_call(WGT_KERNEL_CUMSUM);
    c.n_inputs = 1; c.inputs[0] = ut; c.outputs[0] = o->view; c.axis = 1;
    CHECK(run(&c) == WGT_OK, "u8 cumsum runs");
    int bad = 0;
    for (int64_t r = 0; r < 3; r++) {
        int64_t acc = 0;
        for (int64_t k = 0; k < 40; k++) { acc += (int64_t)get(&ut, r * 40 + k); if (get_i32(&o->view, r * 40 + k) != acc) bad++; }
    }
    CHECK(bad == 0, "u8 transposed cumsum: %d mismatches", bad);
    tensor_free(u); tensor_free(o); tensor_free(x); tensor_free(xi);
}

/* =============================================================== SOFTMAX */

static void test_softmax(void)
{
    int64_t shape[3] = {4, 300, 5};
    test_tensor *x = tensor_new(WGT_F32, 3, shape);
    fill_random(&x->view, -30, 30, false);
    /* special lines along axis 2: all -inf, one NaN, one +inf, huge values */
    for (int k = 0; k < 5; k++) { set(&x->view, k, -INFINITY); set(&x->view, 10 + k, 1000.0 + k); }
    set(&x->view, 5 + 2, NAN);
    set(&x->view, 15 + 1, -INFINITY);
    for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
        for (int axis = 0; axis < 3; axis++) {
            for (int dt = 0; dt < 2; dt++) {
                wgt_dtype out_dtype = dt ? WGT_F16 : WGT_F32;
                test_tensor *o = tensor_new(out_dtype, 3, shape);
                wgt_kernel_call c = new_call(WGT_KERNEL_SOFTMAX);
                c.n_inputs = 1; c.inputs[0] = x->view; c.outputs[0] = o->view; c.axis = axis; c.log_softmax = log_softmax;
                CHECK(run(&c) == WGT_OK, "softmax runs");
                int64_t inner = axis == 2 ? 1 : axis == 1 ? 5 : 1500;
                int bad = 0;
                for (int64_t i = 0; i < numel_of(&o->view); i++) {
                    int64_t d = (i / inner) % shape[axis], first = i - d * inner;
                    double m = -INFINITY, s = 0;
                    bool nan = false;
                    for (int64_t k = 0; k < shape[axis]; k++) { double v = get(&x->view, first + k * inner); if (isnan(v)) nan = true; else if (v > m) m = v; }
                    for (int64_t k = 0; k < shape[axis]; k++) s += exp(get(&x->view, first + k * inner) - m);
                    double v = get(&x->view, i);
                    double want = nan ? NAN : log_softmax ? v - m - log(s) : exp(v - m) / s;
                    want = dt ? ref_f16_round(want) : f32(want);
                    if (!close_to(get(&o->view, i), want, dt ? 0 : 1e-6, dt ? 0 : 1e-30) && bad++ < 3)
                        fprintf(stderr, "  %s axis %d [%lld]: %.9g want %.9g\n", log_softmax ? "log_softmax" : "softmax", axis, (long long)i, get(&o->view, i), want);
                }
                CHECK(bad == 0 && guards_intact(o), "%s axis %d %s: %d mismatches", log_softmax ? "log_softmax" : "softmax", axis, wgt_dtype_name(out_dtype), bad);
                tensor_free(o);
            }
        }
    }
    tensor_free(x);
    /* lines longer than the kernel keeps in cache: recomputed, same answers */
    int64_t ls[2] = {2, 20011};
    test_tensor *lx = tensor_new(WGT_F16, 2, ls);
    fill_random(&lx->view, -10, 10, false);
    set(&lx->view, 20011 + 77, NAN);
    for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
        test_tensor *o = tensor_new(WGT_F32, 2, ls);
        wgt_kernel_call c = new_call(WGT_KERNEL_SOFTMAX);
        c.n_inputs = 1; c.inputs[0] = lx->view; c.outputs[0] = o->view; c.axis = 1; c.log_softmax = log_softmax;
        CHECK(run(&c) == WGT_OK, "long softmax runs");
        int bad = 0;
        double m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < 20011; i++) m = fmax(m, get(&lx->view, i));
        for (int64_t i = 0; i < 20011; i++) sum += exp(get(&lx->view, i) - m);
        for (int64_t i = 0; i < 2 * 20011; i++) {
            double v = get(&lx->view, i);
            double want = i >= 20011 ? NAN : log_softmax ? v - m - log(sum) : exp(v - m) / sum;
            if (!close_to(get(&o->view, i), f32(want), 1e-6, 1e-30)) bad++;
        }
        CHECK(bad == 0 && guards_intact(o), "long %s: %d mismatches", log_softmax ? "log_softmax" : "softmax", bad);
        tensor_free(o);
    }
    tensor_free(lx);
}

/* ================================================================ MATMUL */

static int check_matmul(wgt_tensor_view a, wgt_tensor_view b, wgt_dtype dtype, const char *what)
{
    int n = a.ndim;
    int64_t oshape[WGT_MAX_DIMS];
    for (int d = 0; d < n - 2; d++) oshape[d] = a.shape[d];
    oshape[n - 2] = a.shape[n - 2];
    oshape[n - 1] = b.shape[n - 1];
    test_tensor *o = tensor_new(dtype, n, oshape);
    wgt_kernel_call c = new_call(WGT_KERNEL_MATMUL);
    c.n_inputs = 2; c.inputs[0] = a; c.inputs[1] = b; c.outputs[0] = o->view;
    if (run(&c) != WGT_OK) { tensor_free(o); return 1000000; }
    int64_t M = a.shape[n - 2], K = a.shape[n - 1], N = b.shape[n - 1], batches = numel_of(&o->view) / (M * N > 0 ? M * N : 1);
    int bad = 0;
    for (int64_t bt = 0; bt < batches && M * N > 0; bt++) {
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double sum = 0, magnitude = 0;
                int64_t isum = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = get(&a, (bt * M + i) * K + k), q = get(&b, (bt * K + k) * N + j);
                    sum += p * q; magnitude += fabs(p * q);
                    isum += (int64_t)((uint64_t)(int64_t)p * (uint64_t)(int64_t)q);
                }
                double got = get(&o->view, (bt * M + i) * N + j);
                bool ok = dtype == WGT_I32 ? got == wrap32(isum)
                        : fabs(got - sum) <= 1e-6 * magnitude + (dtype == WGT_F16 ? fabs(sum) / 1024 : 0);
                if (!ok && bad++ < 3) fprintf(stderr, "  matmul %s [%lld, %lld, %lld]: %.9g want %.9g\n", what, (long long)bt, (long long)i, (long long)j, got, sum);
            }
        }
    }
    if (!guards_intact(o)) bad++;
    tensor_free(o);
    return bad;
}

static void test_matmul(void)
{
    int64_t as[3] = {2, 33, 17}, bs[3] = {2, 17, 29};
    test_tensor *a = tensor_new(WGT_F32, 3, as), *b = tensor_new(WGT_F32, 3, bs);
    fill_random(&a->view, -2, 2, false);
    fill_random(&b->view, -2, 2, false);
    CHECK(check_matmul(a->view, b->view, WGT_F32, "contiguous") == 0, "f32 matmul contiguous");
    /* transposed operands: storage [2, 17, 33] read as [2, 33, 17] */
    test_tensor *at = tensor_new(WGT_F32, 3, (int64_t[3]){2, 17, 33}), *bt = tensor_new(WGT_F32, 3, (int64_t[3]){2, 29, 17});
    fill_random(&at->view, -2, 2, false);
    fill_random(&bt->view, -2, 2, false);
    wgt_tensor_view atv = at->view, btv = bt->view;
    atv.shape[1] = 33; atv.shape[2] = 17; atv.strides[1] = 1; atv.strides[2] = 33;
    btv.shape[1] = 17; btv.shape[2] = 29; btv.strides[1] = 1; btv.strides[2] = 17;
    CHECK(check_matmul(atv, b->view, WGT_F32, "a^T") == 0, "f32 matmul transposed a");
    CHECK(check_matmul(a->view, btv, WGT_F32, "b^T") == 0, "f32 matmul transposed b");
    CHECK(check_matmul(atv, btv, WGT_F32, "both^T") == 0, "f32 matmul both transposed");
    /* broadcast batch (stride 0) and a column step of 2 (packed) */
    wgt_tensor_view bb = b->view;
    bb.strides[0] = 0;
    CHECK(check_matmul(a->view, bb, WGT_F32, "broadcast b") == 0, "f32 matmul broadcast batch");
    wgt_tensor_view a2 = at->view; /* [2, 17, 33] -> [2, 17, 17] every other column */
    a2.shape[2] = 17; a2.strides[2] = 2;
    wgt_tensor_view b17 = b->view;
    CHECK(check_matmul(a2, b17, WGT_F32, "step 2") == 0, "f32 matmul strided columns");
    /* 4-D batch [2, 3], M = 1 and N = 1 edge shapes */
    test_tensor *a4 = tensor_new(WGT_F32, 4, (int64_t[4]){2, 3, 1, 8}), *b4 = tensor_new(WGT_F32, 4, (int64_t[4]){2, 3, 8, 1});
    fill_random(&a4->view, -1, 1, false);
    fill_random(&b4->view, -1, 1, false);
    CHECK(check_matmul(a4->view, b4->view, WGT_F32, "4-D vec") == 0, "f32 matmul 4-D, M = N = 1");
    /* matrix x vector and vector x matrix (sgemv): a column of b (step 29), a
     * row of a^T (step 33), with either operand transposed */
    wgt_tensor_view column = b->view, row = a->view, row_t = atv;
    column.shape[2] = 1;
    row.shape[1] = 1;
    row_t.shape[1] = 1;
    CHECK(check_matmul(a->view, column, WGT_F32, "a x column") == 0, "f32 matrix x strided vector");
    CHECK(check_matmul(atv, column, WGT_F32, "a^T x column") == 0, "f32 transposed matrix x vector");
    CHECK(check_matmul(row, b->view, WGT_F32, "row x b") == 0, "f32 vector x matrix");
    CHECK(check_matmul(row_t, btv, WGT_F32, "row of a^T x b^T") == 0, "f32 strided vector x transposed matrix");
    /* f16 and i32 */
    test_tensor *ah = tensor_new(WGT_F16, 3, as), *bh = tensor_new(WGT_F16, 3, bs);
    fill_random(&ah->view, -2, 2, false);
    fill_random(&bh->view, -2, 2, false);
    CHECK(check_matmul(ah->view, bh->view, WGT_F16, "f16") == 0, "f16 matmul");
    wgt_tensor_view column_h = bh->view;
    column_h.shape[2] = 1;
    CHECK(check_matmul(ah->view, column_h, WGT_F16, "f16 a x column") == 0, "f16 matrix x vector");
    test_tensor *ai = tensor_new(WGT_I32, 3, as), *bi = tensor_new(WGT_I32, 3, bs);
    fill_random(&ai->view, -70000, 70000, true);
    fill_random(&bi->view, -70000, 70000, true);
    CHECK(check_matmul(ai->view, bi->view, WGT_I32, "i32") == 0, "i32 matmul wraps");
    wgt_tensor_view bit = bi->view;
    bit.strides[0] = 0;
    CHECK(check_matmul(ai->view, bit, WGT_I32, "i32 broadcast") == 0, "i32 matmul broadcast batch");
    /* K = 0 gives zeros; M = 0 is a no-op */
    wgt_tensor_view ak = a->view, bk = b->view;
    ak.shape[2] = 0; bk.shape[1] = 0;
    CHECK(check_matmul(ak, bk, WGT_F32, "K=0") == 0, "f32 matmul with K = 0 is zeros");
    wgt_tensor_view am = a->view;
    am.shape[1] = 0;
    CHECK(check_matmul(am, b->view, WGT_F32, "M=0") == 0, "f32 matmul with M = 0");
    /* bigger ones, split over threads: bands of rows, of columns (N > M), of
     * matrix x vector rows and of vector x matrix columns, the last bands short */
    test_tensor *ga = tensor_new(WGT_F32, 2, (int64_t[2]){200, 300}), *gb = tensor_new(WGT_F32, 2, (int64_t[2]){300, 100});
    test_tensor *gc = tensor_new(WGT_F32, 2, (int64_t[2]){300, 1000}), *gv = tensor_new(WGT_F32, 2, (int64_t[2]){1000, 300});
    fill_random(&ga->view, -1, 1, false);
    fill_random(&gb->view, -1, 1, false);
    fill_random(&gc->view, -1, 1, false);
    fill_random(&gv->view, -1, 1, false);
    CHECK(check_matmul(ga->view, gb->view, WGT_F32, "200x300x100") == 0, "f32 matmul 200x300x100");
    wgt_tensor_view gat = ga->view; /* [100, 300]: rows 0..99 of ga */
    gat.shape[0] = 100;
    CHECK(check_matmul(gat, gc->view, WGT_F32, "100x300x1000") == 0, "f32 matmul 100x300x1000");
    wgt_tensor_view x_col = gc->view, x_row = gv->view;
    x_col.shape[1] = 1; /* [300, 1], step 1000 */
    x_row.shape[0] = 1; /* [1, 300] */
    CHECK(check_matmul(gv->view, x_col, WGT_F32, "1000x300 x vector") == 0, "f32 large matrix x vector");
    CHECK(check_matmul(x_row, gc->view, WGT_F32, "vector x 300x1000") == 0, "f32 vector x large matrix");
    tensor_free(ga); tensor_free(gb); tensor_free(gc); tensor_free(gv); tensor_free(a); tensor_free(b); tensor_free(at); tensor_free(bt); tensor_free(a4); tensor_free(b4);
    tensor_free(ah); tensor_free(bh); tensor_free(ai); tensor_free(bi);
}

/* ===================================================== GATHER / SCATTER */

static void test_gather_scatter(void)
{
    int64_t xs[2] = {5, 6}, is[2] = {4, 3};
    for (int dt = 0; dt < 3; dt++) {
        wgt_dtype dtype = dt == 0 ? WGT_F32 : dt == 1 ? WGT_F16 : WGT_U8;
        test_tensor *x = tensor_new(dtype, 2, xs), *idx = tensor_new(WGT_I32, 2, is), *o = tensor_new(dtype, 2, is);
        fill_random(&x->view, 0, 100, true);
        for (int axis = 0; axis < 2; axis++) {
            int64_t D = xs[axis];
            for (int64_t i = 0; i < 12; i++) set(&idx->view, i, (double)((i * 7) % (2 * D + 3) - D - 1)); /* some outside [-D, D) */
            wgt_kernel_call c = new_call(WGT_KERNEL_GATHER);
            c.n_inputs = 2; c.inputs[0] = x->view; c.inputs[1] = idx->view; c.outputs[0] = o->view; c.axis = axis;
            /* out-of-range indices give 0 and an error naming the index (issue 8) */
            wgt_status gs = run(&c);
            CHECK(gs == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_error_message(ctx), "out of range"),
                  "gather with indices outside [-D, D): %s", wgt_context_error_message(ctx));
            wgt_context_clear_error(ctx);
            for (int64_t i = 0; i < 12; i++) {
                int64_t r = i / 3, col = i % 3, k = get_i32(&idx->view, i);
                int64_t kk = k < 0 ? k + D : k;
                double want = kk < 0 || kk >= D ? 0 : get(&x->view, axis == 0 ? kk * 6 + col : r * 6 + kk);
                CHECK(get(&o->view, i) == want, "gather %s axis %d [%lld] index %lld: %g want %g", wgt_dtype_name(dtype), axis, (long long)i, (long long)k, get(&o->view, i), want);
            }
            CHECK(guards_intact(o), "gather wrote outside");
        }
        tensor_free(x); tensor_free(idx); tensor_free(o);
    }
    /* scatter_add f32 and i32: repeated indices accumulate, outside skipped */
    for (int dt = 0; dt < 2; dt++) {
        wgt_dtype dtype = dt ? WGT_I32 : WGT_F32;
        for (int axis = 0; axis < 2; axis++) {
            test_tensor *dst = tensor_new(dtype, 2, xs), *idx = tensor_new(WGT_I32, 2, is), *src = tensor_new(dtype, 2, is);
            fill_random(&dst->view, -50, 50, true);
            fill_random(&src->view, -50, 50, dt == 1);
            int64_t D = xs[axis];
            for (int64_t i = 0; i < 12; i++) set(&idx->view, i, (double)((i * 5) % (2 * D + 2) - D - 1));
            double want[30];
            for (int i = 0; i < 30; i++) want[i] = get(&dst->view, i);
            for (int64_t i = 0; i < 12; i++) {
                int64_t r = i / 3, col = i % 3, k = get_i32(&idx->view, i), kk = k < 0 ? k + D : k;
                if (kk < 0 || kk >= D) continue;
                int64_t at = axis == 0 ? kk * 6 + col : r * 6 + kk;
                want[at] = dt ? want[at] + get(&src->view, i) : f32(want[at] + get(&src->view, i));
            }
            wgt_kernel_call c = new_call(WGT_KERNEL_SCATTER_ADD);
            c.n_inputs = 2; c.inputs[0] = idx->view; c.inputs[1] = src->view; c.outputs[0] = dst->view; c.axis = axis;
            /* out-of-range indices are skipped and reported (issue 8) */
            CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "scatter_add with indices outside [-D, D) not reported");
            wgt_context_clear_error(ctx);
            int bad = 0;
            for (int i = 0; i < 30; i++) if (get(&dst->view, i) != want[i]) bad++;
            CHECK(bad == 0 && guards_intact(dst), "scatter_add %s axis %d: %d mismatches", wgt_dtype_name(dtype), axis, bad);
            tensor_free(dst); tensor_free(idx); tensor_free(src);
        }
    }
}

/* ================================================================== TOPK */

static void test_topk(void)
{
    const int64_t Ns[] = {10, 200};
    for (int t = 0; t < 2; t++) {
        int64_t N = Ns[t];
        int64_t xs[2] = {3, N};
        for (int dt = 0; dt < 3; dt++) {
            wgt_dtype dtype = dt == 0 ? WGT_F32 : dt == 1 ? WGT_F16 : WGT_I32;
            test_tensor *x = tensor_new(dtype, 2, xs);
            fill_random(&x->view, -5, 5, true); /* integers: many ties */
            if (dtype != WGT_I32) { set(&x->view, 3, NAN); set(&x->view, N + 1, NAN); set(&x->view, N + 2, NAN); set(&x->view, 5, INFINITY); }
            for (int largest = 0; largest < 2; largest++) {
                const int64_t ks[] = {0, 1, 2, 5, 10, 32, 33, 100, 200};
                for (size_t kc = 0; kc < sizeof ks / sizeof ks[0] && ks[kc] <= N; kc++) {
                    int64_t k = ks[kc];
                    int64_t vs[2] = {3, k};
                    test_tensor *v = tensor_new(dtype, 2, vs), *ix = tensor_new(WGT_I32, 2, vs);
                    wgt_kernel_call c = new_call(WGT_KERNEL_TOPK);
                    c.n_inputs = 1; c.inputs[0] = x->view; c.n_outputs = 2; c.outputs[0] = v->view; c.outputs[1] = ix->view;
                    c.k = k; c.largest = largest;
                    CHECK(run(&c) == WGT_OK, "topk runs");
                    int bad = 0;
                    for (int64_t r = 0; r < 3; r++) {
                        /* reference: repeatedly pick the best unused element, scanning in index order */
                        bool used[256] = {false};
                        for (int64_t j = 0; j < k; j++) {
                            int64_t best = -1;
                            for (int64_t i = 0; i < N; i++) {
                                if (used[i]) continue;
                                double a = get(&x->view, r * N + i), b = best < 0 ? 0 : get(&x->view, r * N + best);
                                bool better = best < 0 || (largest ? (isnan(a) && !isnan(b)) || (!isnan(a) && !isnan(b) && a > b)
                                                                   : (!isnan(a) && isnan(b)) || (!isnan(a) && !isnan(b) && a < b));
                                if (better) best = i;
                            }
                            used[best] = true;
                            double got = get(&v->view, r * k + j), want = get(&x->view, r * N + best);
                            if (get_i32(&ix->view, r * k + j) != best || !(isnan(want) ? isnan(got) : got == want)) bad++;
                        }
                    }
                    CHECK(bad == 0 && guards_intact(v) && guards_intact(ix), "topk %s N %lld k %lld largest %d: %d mismatches", wgt_dtype_name(dtype), (long long)N, (long long)k, largest, bad);
                    tensor_free(v); tensor_free(ix);
                }
            }
            tensor_free(x);
        }
    }
}

/* ============================================== supports, errors, storage */

static void test_contract(void)
{
    int64_t s[2] = {2, 2};
    test_tensor *f = tensor_new(WGT_F32, 2, s), *bl = tensor_new(WGT_BOOL, 2, s), *i = tensor_new(WGT_I32, 2, s), *h = tensor_new(WGT_F16, 2, s);
    wgt_kernel_call c = new_call(WGT_KERNEL_MATMUL);
    c.n_inputs = 2; c.inputs[0] = bl->view; c.inputs[1] = bl->view; c.outputs[0] = bl->view;
    CHECK(!be->vt->supports(be, &c), "matmul on bool is unsupported");
    c.inputs[0] = c.inputs[1] = c.outputs[0] = h->view;
    CHECK(be->vt->supports(be, &c), "matmul on f16 is supported");
    c = new_call(WGT_KERNEL_SOFTMAX);
    c.n_inputs = 1; c.inputs[0] = i->view; c.outputs[0] = f->view;
    CHECK(!be->vt->supports(be, &c), "softmax of i32 is unsupported");
    c = new_call(WGT_KERNEL_SCATTER_ADD);
    c.n_inputs = 2; c.inputs[0] = i->view; c.inputs[1] = h->view; c.outputs[0] = h->view;
    CHECK(!be->vt->supports(be, &c), "scatter_add into f16 is unsupported");
    c = new_call(WGT_KERNEL_REDUCE);
    c.n_inputs = 1; c.inputs[0] = f->view; c.outputs[0] = f->view; c.reduce = WGT_REDUCE_ARGMAX;
    CHECK(!be->vt->supports(be, &c), "argmax into f32 is unsupported");
    CHECK(run(&c) == WGT_ERR_UNSUPPORTED, "run of an unsupported call says so");
    wgt_context_clear_error(ctx);

    /* a view reaching past its storage is refused, not read */
    wgt_expr e;
    expr_init(&e);
    add_input(&e, 0, WGT_EXPR_F32);
    wgt_tensor_view past = f->view;
    past.shape[0] = 1000;
    c = new_call(WGT_KERNEL_ELEMENTWISE);
    c.expr = &e; c.n_inputs = 1; c.inputs[0] = past; c.outputs[0] = f->view;
    CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "out-of-bounds view refused");
    CHECK(wgt_context_status(ctx) == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_error_message(ctx), "wgt_test") != NULL,
          "error recorded with the op name: %s", wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    c.inputs[0] = f->view;
    c.inputs[0].offset = -1;
    CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "negative offset refused");
    wgt_context_clear_error(ctx);
    /* malformed program: argument refers forward */
    c.inputs[0] = f->view;
    add_node(&e, WGT_EXPR_ADD, WGT_EXPR_F32, 0, 5, -1);
    CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "malformed expression refused");
    wgt_context_clear_error(ctx);
    /* shape mismatch, bad axis, bad k */
    expr_init(&e);
    add_input(&e, 0, WGT_EXPR_F32);
    c.inputs[0].shape[1] = 1;
    CHECK(run(&c) == WGT_ERR_SHAPE_MISMATCH, "unbroadcast input refused");
    wgt_context_clear_error(ctx);
    c = new_call(WGT_KERNEL_CUMSUM);
    c.n_inputs = 1; c.inputs[0] = f->view; c.outputs[0] = f->view; c.axis = 2;
    CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "bad cumsum axis refused");
    wgt_context_clear_error(ctx);
    c = new_call(WGT_KERNEL_TOPK);
    c.n_inputs = 1; c.inputs[0] = f->view; c.n_outputs = 2; c.outputs[0] = f->view; c.outputs[1] = i->view; c.k = 3;
    CHECK(run(&c) == WGT_ERR_INVALID_ARGUMENT, "k > N refused");
    wgt_context_clear_error(ctx);
    CHECK(run(NULL) == WGT_ERR_INVALID_ARGUMENT, "NULL call refused");
    wgt_context_clear_error(ctx);

    /* storage round trip through the vtable, bounds checked */
    float data[4] = {1, 2, 3, 4}, back[4] = {0};
    CHECK(be->vt->storage_write(be, f->storage.handle, GUARD * 4, data, 16) == WGT_OK, "storage write");
    CHECK(be->vt->storage_read(be, f->storage.handle, GUARD * 4, back, 16) == WGT_OK && memcmp(data, back, 16) == 0, "storage read back");
    CHECK(be->vt->storage_read(be, f->storage.handle, f->storage.bytes - 8, back, 16) == WGT_ERR_INVALID_ARGUMENT, "read past the end refused");
    wgt_context_clear_error(ctx);
    CHECK(((uintptr_t)f->storage.handle & 63) == 0, "storage is 64-byte aligned");
    CHECK(be->vt->synchronize(be) == WGT_OK, "synchronize");

    wgt_memory_stats m0, m1;
    CHECK(be->vt->memory_stats(be, &m0) == WGT_OK, "memory stats");
    void *handle = NULL;
    CHECK(be->vt->storage_alloc(be, 1000, &handle) == WGT_OK && handle, "alloc");
    be->vt->memory_stats(be, &m1);
    CHECK(m1.bytes_in_use >= m0.bytes_in_use + 1000 && m1.allocations == m0.allocations + 1, "stats count the allocation");
    be->vt->storage_free(be, handle);
    be->vt->memory_stats(be, &m1);
    CHECK(m1.bytes_in_use == m0.bytes_in_use, "stats count the free");
    CHECK(be->vt->memory_set_budget(be, m0.bytes_in_use + 100) == WGT_OK, "set budget");
    CHECK(be->vt->storage_alloc(be, 1000, &handle) == WGT_ERR_OUT_OF_MEMORY, "budget enforced");
    wgt_context_clear_error(ctx);
    be->vt->memory_set_budget(be, 0);

    wgt_adapter_info info;
    CHECK(be->vt->adapter_info(be, &info) == WGT_OK && info.type == WGT_ADAPTER_CPU && strlen(info.name) > 0, "adapter info: %s", info.name);
    tensor_free(f); tensor_free(bl); tensor_free(i); tensor_free(h);
}

/* ================================================ vectorized exp, softmax */

/* Ulps between two finite floats of the same sign (or both zero). */
static int64_t ulps_apart(float a, float b)
{
    int32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    if ((x < 0) != (y < 0)) return (a == b) ? 0 : INT32_MAX;
    return llabs((int64_t)x - (int64_t)y);
}

/* exp runs through a polynomial of its own (src/cpu/cpu_math.h), not libm:
 * at most 1 ulp from the correctly rounded value over a sweep of float bit
 * patterns (every range, subnormal results included), inf/0 at the ends and
 * NaN kept bit for bit. The output is large enough for streaming stores. */
static void test_exp_accuracy(void)
{
    int64_t n = (int64_t)1 << 22;
    test_tensor *x = tensor_new(WGT_F32, 1, &n), *out = tensor_new(WGT_F32, 1, &n);
    uint32_t *bits = (uint32_t *)x->storage.handle + GUARD;
    for (int64_t i = 0; i < n; i++) bits[i] = (uint32_t)(i * 1031u + 7u); /* every exponent, both signs */
    const uint32_t specials[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u, 0x7f800000u, 0xff800000u,
                                 0x42b17217u /* largest finite result */, 0x42b17218u /* first inf */,
                                 0xc2cff1b5u /* near half the smallest subnormal */,
                                 0xc2ce8ed0u /* the smallest subnormal */, 0xc2aeac50u /* near the smallest normal */};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) bits[i] = specials[i];
    wgt_expr e;
    expr_init(&e);
    add_node(&e, WGT_EXPR_EXP, WGT_EXPR_F32, add_input(&e, 0, WGT_EXPR_F32), -1, -1);
    CHECK(run_expr(&e, &x, NULL, 1, &out->view) == WGT_OK, "exp runs");
    const float *got = (const float *)out->storage.handle + GUARD;
    int bad = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < n; i++) {
        float in;
        memcpy(&in, &bits[i], 4);
        bool ok;
        if (isnan(in)) {
            ok = memcmp(&got[i], &bits[i], 4) == 0 || (bits[i] & 0x00400000u) == 0; /* signaling NaNs may be quieted */
            ok = ok && isnan(got[i]);
        } else {
            float want = (float)exp((double)in);
            int64_t d = ulps_apart(got[i], want);
            if (d > worst) worst = d;
            ok = d <= 1;
        }
        if (!ok && bad++ < 3) fprintf(stderr, "  exp(%a) = %a, want %a\n", in, got[i], (float)exp((double)in));
    }
    CHECK(bad == 0, "exp: %d results more than 1 ulp off (worst %lld)", bad, (long long)worst);
    CHECK(guards_intact(out), "exp wrote outside the output");
    tensor_free(x);
    tensor_free(out);
}

/* A softmax along a non-last axis whose lines do not fit the kernel's cache
 * (inner size 2, 20011 long): the recomputing path, same answers. */
static void test_softmax_recompute(void)
{
    int64_t shape[2] = {20011, 2};
    test_tensor *x = tensor_new(WGT_F32, 2, shape), *o = tensor_new(WGT_F32, 2, shape);
    fill_random(&x->view, -10, 10, false);
    for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
        wgt_kernel_call c = new_call(WGT_KERNEL_SOFTMAX);
        c.n_inputs = 1; c.inputs[0] = x->view; c.outputs[0] = o->view; c.axis = 0; c.log_softmax = log_softmax;
        CHECK(run(&c) == WGT_OK, "strided long softmax runs");
        int bad = 0;
        for (int j = 0; j < 2; j++) {
            double m = -INFINITY, sum = 0;
            for (int64_t i = 0; i < shape[0]; i++) m = fmax(m, get(&x->view, 2 * i + j));
            for (int64_t i = 0; i < shape[0]; i++) sum += exp(get(&x->view, 2 * i + j) - m);
            for (int64_t i = 0; i < shape[0]; i++) {
                double v = get(&x->view, 2 * i + j);
                double want = log_softmax ? v - m - log(sum) : exp(v - m) / sum;
                if (!close_to(get(&o->view, 2 * i + j), f32(want), 1e-6, 1e-30)) bad++;
            }
        }
        CHECK(bad == 0 && guards_intact(o), "strided long %s: %d mismatches", log_softmax ? "log_softmax" : "softmax", bad);
    }
    tensor_free(x);
    tensor_free(o);
}

/* ===================================================== storage cache */

/* Freed storage is cached for reuse by size class, within a budget, until a
 * trim; under AddressSanitizer nothing is cached (the backend says why). */
static void test_storage_cache(void)
{
#if defined(__SANITIZE_ADDRESS__)
    const bool caching = false;
#else
    const bool caching = true;
#endif
    wgt_memory_stats m0, m1;
    be->vt->memory_trim(be);
    be->vt->memory_stats(be, &m0);
    CHECK(m0.bytes_reserved == m0.bytes_in_use, "trim leaves nothing cached");

    void *first = NULL, *again = NULL;
    CHECK(be->vt->storage_alloc(be, 1000, &first) == WGT_OK, "alloc");
    be->vt->storage_free(be, first);
    be->vt->memory_stats(be, &m1);
    CHECK(m1.bytes_in_use == m0.bytes_in_use && (m1.bytes_reserved > m1.bytes_in_use) == caching, "a freed block stays cached");
    CHECK(be->vt->storage_alloc(be, 1020, &again) == WGT_OK, "alloc of the same size class");
    be->vt->memory_stats(be, &m1);
    if (caching) {
        CHECK(again == first && m1.pool_hits == m0.pool_hits + 1 && m1.device_allocations == m0.device_allocations + 1,
              "the cached block is reused (hits %llu, system allocations %llu)", (unsigned long long)(m1.pool_hits - m0.pool_hits),
              (unsigned long long)(m1.device_allocations - m0.device_allocations));
    }
    CHECK(m1.bytes_in_use >= m0.bytes_in_use + 1020, "in use counts the size class");
    be->vt->storage_free(be, again);

    /* a large block: mapped directly, still aligned, every byte usable */
    size_t big = ((size_t)5 << 20) + 12;
    void *handle = NULL;
    CHECK(be->vt->storage_alloc(be, big, &handle) == WGT_OK && ((uintptr_t)handle & 63) == 0, "large alloc, aligned");
    if (handle) {
        uint32_t word = 0x12345678u, back = 0;
        memset(handle, 0x5a, big);
        CHECK(be->vt->storage_write(be, handle, big - 4, &word, 4) == WGT_OK &&
              be->vt->storage_read(be, handle, big - 4, &back, 4) == WGT_OK && back == word, "large block round trip");
        CHECK(be->vt->storage_read(be, handle, big - 2, &back, 4) == WGT_ERR_INVALID_ARGUMENT, "large block bounds checked");
        wgt_context_clear_error(ctx);
        be->vt->storage_free(be, handle);
    }

    /* from 1 MiB up a class is an eighth of a power of two: 9 MiB (a [8, 256,
     * 1152] f32 projection) takes 9 MiB, not the 10 of quarter steps;
     * 9 MiB + 1 byte takes the next eighth, 10 MiB */
    if (caching) {
        size_t sizes[2] = {(size_t)9 << 20, ((size_t)9 << 20) + 1}, want[2] = {(size_t)9 << 20, (size_t)10 << 20};
        for (int i = 0; i < 2; i++) {
            wgt_memory_stats before, after;
            be->vt->memory_stats(be, &before);
            CHECK(be->vt->storage_alloc(be, sizes[i], &handle) == WGT_OK, "alloc of %zu bytes", sizes[i]);
            be->vt->memory_stats(be, &after);
            CHECK(after.bytes_in_use - before.bytes_in_use == want[i], "%zu bytes took a block of %llu, %zu expected",
                  sizes[i], (unsigned long long)(after.bytes_in_use - before.bytes_in_use), want[i]);
            be->vt->storage_free(be, handle);
        }
    }

    /* the cache counts against a budget and gives way to new blocks */
    be->vt->memory_stats(be, &m1);
    CHECK(be->vt->memory_set_budget(be, m1.bytes_in_use + 8192) == WGT_OK, "set budget");
    CHECK(be->vt->storage_alloc(be, 6000, &handle) == WGT_OK, "alloc under the budget despite the cache");
    be->vt->memory_stats(be, &m1);
    CHECK(m1.bytes_reserved <= m1.budget_bytes, "reserved %llu within the budget %llu",
          (unsigned long long)m1.bytes_reserved, (unsigned long long)m1.budget_bytes);
    be->vt->storage_free(be, handle);
    be->vt->memory_set_budget(be, 0);
    CHECK(be->vt->memory_trim(be) == WGT_OK, "trim");
    be->vt->memory_stats(be, &m1);
    CHECK(m1.bytes_reserved == m1.bytes_in_use && m1.bytes_in_use == m0.bytes_in_use, "trim gives every cached block back");
}

/* ============================================ thread count independence */

/* The same reductions on a one-thread backend give the same bits: sums split
 * into pieces by layout, never by thread. (Products do not: BLAS kernels sum
 * in an order that depends on the shape of the block each thread gets.) */
static void test_thread_independence(void)
{
    wgt_context_options options;
    wgt_context_options_init(&options);
    options.cpu_threads = 1;
    wgt_backend *one = wgt_cpu_backend_create(ctx, &options);
    CHECK(one != NULL, "one-thread backend");
    if (!one) return;
    int64_t n = 300007, shape[2] = {37, 8111};
    test_tensor *v = tensor_new(WGT_F32, 1, &n), *m = tensor_new(WGT_F32, 2, shape);
    fill_random(&v->view, -1e3, 1e3, false);
    fill_random(&m->view, -20, 20, false);
    int64_t one_elem = 1, rows[2] = {37, 1};
    const wgt_reduce_kind kinds[] = {WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_VAR};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int matrix = 0; matrix < 2; matrix++) {
            test_tensor *x = matrix ? m : v;
            test_tensor *a = matrix ? tensor_new(WGT_F32, 2, rows) : tensor_new(WGT_F32, 1, &one_elem);
            test_tensor *b = matrix ? tensor_new(WGT_F32, 2, rows) : tensor_new(WGT_F32, 1, &one_elem);
            wgt_kernel_call c = new_call(WGT_KERNEL_REDUCE);
            c.n_inputs = 1; c.inputs[0] = x->view; c.reduce = kinds[k]; c.reduce_mask = matrix ? 2u : 1u; c.correction = 1;
            c.outputs[0] = a->view;
            CHECK(run(&c) == WGT_OK, "reduce runs");
            c.outputs[0] = b->view;
            CHECK(one->vt->run(one, &c) == WGT_OK, "reduce runs on one thread");
            CHECK(memcmp(a->storage.handle, b->storage.handle, a->storage.bytes) == 0, "reduce %d of %s: same bits on one thread",
                  (int)kinds[k], matrix ? "rows" : "a vector");
            tensor_free(a);
            tensor_free(b);
        }
    }
    for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
        test_tensor *a = tensor_new(WGT_F32, 2, shape), *b = tensor_new(WGT_F32, 2, shape);
        wgt_kernel_call c = new_call(WGT_KERNEL_SOFTMAX);
        c.n_inputs = 1; c.inputs[0] = m->view; c.axis = 1; c.log_softmax = log_softmax;
        c.outputs[0] = a->view;
        CHECK(run(&c) == WGT_OK, "softmax runs");
        c.outputs[0] = b->view;
        CHECK(one->vt->run(one, &c) == WGT_OK, "softmax runs on one thread");
        CHECK(memcmp(a->storage.handle, b->storage.handle, a->storage.bytes) == 0, "%s: same bits on one thread",
              log_softmax ? "log_softmax" : "softmax");
        tensor_free(a);
        tensor_free(b);
    }
    tensor_free(v);
    tensor_free(m);
    one->vt->destroy(one);
}

int main(void)
{
    wgt_context_options options;
    wgt_context_options_init(&options);
    options.backend = WGT_BACKEND_CPU;
    ctx = wgt_context_create(&options);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "FAIL: cannot create a cpu context\n");
        return 1;
    }
    /* our own backend instance, so the kernels are called directly */
    be = wgt_cpu_backend_create(ctx, &options);
    if (!be) {
        fprintf(stderr, "FAIL: wgt_cpu_backend_create\n");
        return 1;
    }
    test_f16_conversions();
    test_float_unary();
    test_float_binary();
    test_int_ops();
    test_casts_and_stores();
    test_views();
    test_walk_merges();
    test_index_and_random();
    test_reduce();
    test_cumsum();
    test_exp_accuracy();
    test_softmax();
    test_softmax_recompute();
    test_matmul();
    test_gather_scatter();
    test_topk();
    test_contract();
    test_storage_cache();
    test_thread_independence();
    CHECK(wgt_context_status(ctx) == WGT_OK, "no stray error left: %s", wgt_context_error_message(ctx));
    be->vt->destroy(be);
    wgt_context_destroy(ctx);
    return test_summary();
}
