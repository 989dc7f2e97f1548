/*
 * The parity suite: every op of the op table x every dtype it supports x the
 * shape classes that break kernels, run on the WebGPU backend and on the CPU
 * reference with identical inputs, compared with a stated tolerance:
 *
 *   normalized error ||gpu - cpu||_2 / ||cpu||_2 over finite elements, and
 *   NaN / +-inf positions must match exactly; integer and bool outputs exactly.
 *
 *   class      f32     f16     meaning
 *   EXACT      1e-7    1e-7    exact arithmetic, data movement (in practice 0)
 *   APPROX     2e-6    1e-3    transcendental functions, div and pow
 *   REDUCE     5e-4    5e-3    reductions, matmul, softmax, scans, atomic scatter
 *
 * GPU outputs carry guard bytes (options.debug_guards) that are checked after
 * every case to catch out-of-bounds writes. An op or dtype the GPU reports as
 * unsupported is counted and printed as a failure, never skipped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parity_support.h"
#include "test_util.h"

#define MAX_OUT 6
#define BIT(d) (1u << (d))
#define ALL_DTYPES (BIT(WGT_F32) | BIT(WGT_F16) | BIT(WGT_I32) | BIT(WGT_U8) | BIT(WGT_BOOL))
#define FLOATS (BIT(WGT_F32) | BIT(WGT_F16))
#define NUMERIC (FLOATS | BIT(WGT_I32) | BIT(WGT_U8))

typedef enum { TOL_EXACT, TOL_APPROX, TOL_REDUCE } tolerance_class;
typedef enum { KIND_UNARY, KIND_BINARY, KIND_WHERE, KIND_REDUCE, KIND_ARG, KIND_AXIS, KIND_MATMUL, KIND_OWN } op_kind;
typedef enum { T_NONE, T_TRANSPOSE, T_STEP } view_transform;

typedef struct shape_case {
    const char *name;
    int ndim[3];
    int64_t shape[3][WGT_MAX_DIMS];
    view_transform transform; /* applied to input 0 */
    int axes[4], n_axes;
    bool keepdim;
    bool special, large, empty_reduction;
} shape_case;

typedef struct parity_op parity_op;
/* Builds the op's outputs from inputs (NULL for KIND_OWN, which makes its own). */
typedef int (*run_fn)(const parity_op *op, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c,
                      wgt_dtype dtype, int variant, wgt_tensor **out);

struct parity_op {
    wgt_op op;
    op_kind kind;
    uint32_t dtypes;
    tolerance_class tol;
    run_fn run;
    input_domain domain;
    int variants; /* KIND_OWN: number of setups */
};

/* ------------------------------------------------------------------ cases */

#define S1(a) {1, 1, 1}, {{a}, {a}, {a}}
static const shape_case unary_cases[] = {
    {"scalar", {0, 0, 0}, {{0}}, T_NONE, {0}, 0, false, false, false, false},
    {"empty", {2, 2, 2}, {{0, 5}, {0, 5}, {0, 5}}, T_NONE, {0}, 0, false, false, false, false},
    {"size1", S1(1), T_NONE, {0}, 0, false, false, false, false},
    {"odd", {2, 2, 2}, {{7, 13}, {7, 13}, {7, 13}}, T_NONE, {0}, 0, false, false, false, false},
    {"not-workgroup-multiple", {2, 2, 2}, {{3, 333}, {3, 333}, {3, 333}}, T_NONE, {0}, 0, false, false, false, false},
    {"transposed", {2, 2, 2}, {{13, 7}, {7, 13}, {7, 13}}, T_TRANSPOSE, {0}, 0, false, false, false, false},
    {"sliced-step", {2, 2, 2}, {{43, 9}, {14, 9}, {14, 9}}, T_STEP, {0}, 0, false, false, false, false},
    {"special-values", S1(64), T_NONE, {0}, 0, false, true, false, false},
    {"large", S1((1 << 24) + 5), T_NONE, {0}, 0, false, false, true, false},
};

static const shape_case binary_extra_cases[] = {
    {"broadcast", {3, 2, 3}, {{5, 1, 7}, {6, 1}, {0}}, T_NONE, {0}, 0, false, false, false, false},
    {"tensor-scalar", {2, 0, 2}, {{7, 13}, {0}, {7, 13}}, T_NONE, {0}, 0, false, false, false, false},
};

static const shape_case reduce_cases[] = {
    {"scalar", {0}, {{0}}, T_NONE, {0}, 0, false, false, false, false},
    {"empty-axis", {2}, {{0, 4}}, T_NONE, {0}, 1, false, false, false, true},
    {"size1", {1}, {{1}}, T_NONE, {0}, 1, false, false, false, false},
    {"odd-axis1", {2}, {{7, 13}}, T_NONE, {1}, 1, false, false, false, false},
    {"odd-axis0", {2}, {{7, 13}}, T_NONE, {0}, 1, false, false, false, false},
    {"two-axes-keepdim", {3}, {{3, 5, 7}}, T_NONE, {0, 2}, 2, true, false, false, false},
    {"all-axes", {3}, {{3, 5, 7}}, T_NONE, {0}, 0, false, false, false, false},
    {"transposed", {2}, {{13, 7}}, T_TRANSPOSE, {1}, 1, false, false, false, false},
    {"sliced-step", {2}, {{40, 9}}, T_STEP, {0}, 1, false, false, false, false},
    {"special-values", {2}, {{8, 8}}, T_NONE, {1}, 1, false, true, false, false},
    {"many-rows", {2}, {{70000, 3}}, T_NONE, {1}, 1, false, false, false, false},
    {"long-to-scalar", {1}, {{(1 << 20) + 3}}, T_NONE, {0}, 0, false, false, true, false},
};

static const shape_case axis_cases[] = {
    {"scalar", {0}, {{0}}, T_NONE, {0}, 1, false, false, false, false},
    {"size1", {1}, {{1}}, T_NONE, {0}, 1, false, false, false, false},
    {"odd-last", {2}, {{7, 13}}, T_NONE, {1}, 1, false, false, false, false},
    {"odd-first", {2}, {{7, 13}}, T_NONE, {0}, 1, false, false, false, false},
    {"transposed", {2}, {{13, 7}}, T_TRANSPOSE, {1}, 1, false, false, false, false},
    {"sliced-step", {2}, {{40, 9}}, T_STEP, {1}, 1, false, false, false, false},
    {"special-values", {2}, {{4, 16}}, T_NONE, {1}, 1, false, true, false, false},
    {"many-rows", {2}, {{70000, 3}}, T_NONE, {1}, 1, false, false, false, false},
    {"long-rows", {2}, {{3, 5000}}, T_NONE, {1}, 1, false, false, false, false},
    {"empty", {2}, {{0, 5}}, T_NONE, {1}, 1, false, false, false, false},
};

static const shape_case matmul_cases[] = {
    {"small", {2, 2}, {{7, 5}, {5, 3}}, T_NONE, {0}, 0, false, false, false, false},
    {"1x1", {2, 2}, {{1, 1}, {1, 1}}, T_NONE, {0}, 0, false, false, false, false},
    {"odd", {2, 2}, {{33, 17}, {17, 65}}, T_NONE, {0}, 0, false, false, false, false},
    {"tile", {2, 2}, {{128, 64}, {64, 128}}, T_NONE, {0}, 0, false, false, false, false},
    {"vector-matrix", {1, 2}, {{5}, {5, 3}}, T_NONE, {0}, 0, false, false, false, false},
    {"matrix-vector", {2, 1}, {{7, 5}, {5}}, T_NONE, {0}, 0, false, false, false, false},
    {"gemv-long", {2, 1}, {{300, 257}, {257}}, T_NONE, {0}, 0, false, false, false, false},
    {"dot", {1, 1}, {{5}, {5}}, T_NONE, {0}, 0, false, false, false, false},
    {"batched-broadcast", {4, 4}, {{3, 1, 4, 5}, {1, 2, 5, 6}}, T_NONE, {0}, 0, false, false, false, false},
    {"transposed-a", {2, 2}, {{5, 7}, {5, 3}}, T_TRANSPOSE, {0}, 0, false, false, false, false},
    {"sliced-a", {2, 2}, {{40, 5}, {5, 3}}, T_STEP, {0}, 0, false, false, false, false},
    {"empty-k", {2, 2}, {{3, 0}, {0, 4}}, T_NONE, {0}, 0, false, false, false, false},
    {"many-batches", {3, 3}, {{70000, 2, 2}, {70000, 2, 2}}, T_NONE, {0}, 0, false, false, true, false},
};

/* ------------------------------------------------------------- inputs */

static bool is_float(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16; }

/* Uploads the same host data to both contexts and applies the transform. */
static void make_input(wgt_context *gpu, wgt_context *cpu, wgt_dtype dtype, int ndim, const int64_t *shape,
                       view_transform transform, bool special, input_domain domain, uint64_t seed, wgt_tensor **g,
                       wgt_tensor **c)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    void *data = malloc((size_t)(n > 0 ? n : 1) * wgt_dtype_size(dtype) + 4);
    parity_fill(data, dtype, n, domain, special && is_float(dtype), seed);
    wgt_tensor *base[2] = {wgt_tensor_from_host(gpu, dtype, ndim, shape, data),
                           wgt_tensor_from_host(cpu, dtype, ndim, shape, data)};
    wgt_tensor *out[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        if (!base[k]) continue;
        if (transform == T_TRANSPOSE && ndim >= 2) out[k] = wgt_transpose(base[k], 0, ndim - 1);
        else if (transform == T_STEP && ndim >= 1) out[k] = wgt_slice(base[k], 0, 1, shape[0], 3);
        else out[k] = wgt_tensor_retain(base[k]);
        wgt_tensor_release(base[k]);
    }
    free(data);
    *g = out[0];
    *c = out[1];
}

/* ---------------------------------------------------------------- runners */

static int run_unary(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                     int variant, wgt_tensor **out)
{
    (void)ctx, (void)c, (void)d, (void)variant;
    switch (p->op) {
    case WGT_OP_LEAKY_RELU: out[0] = wgt_leaky_relu(in[0], 0.125); break;
    case WGT_OP_ELU: out[0] = wgt_elu(in[0], 0.75); break;
    case WGT_OP_CLAMP: /* and the one-sided forms */
        out[0] = wgt_clamp(in[0], -1.25, 1.5);
        out[1] = wgt_clamp_min(in[0], -1.25);
        out[2] = wgt_clamp_max(in[0], 1.5);
        return 3;
    case WGT_OP_COPY: out[0] = wgt_copy(in[0]); break;
    default: out[0] = wgt_unary(p->op, in[0]); break;
    }
    return 1;
}

static int run_binary(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                      int variant, wgt_tensor **out)
{
    (void)ctx, (void)c, (void)d;
    out[0] = wgt_binary(p->op, in[0], in[1]);
    /* and the scalar form on the same input */
    out[1] = variant == 0 ? wgt_binary_scalar(p->op, in[0], 2.0) : NULL;
    return variant == 0 ? 2 : 1;
}

static int run_where(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                     int variant, wgt_tensor **out)
{
    (void)p, (void)ctx, (void)c, (void)d, (void)variant;
    out[0] = wgt_where(in[0], in[1], in[2]);
    return 1;
}

static int run_fused(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                     int variant, wgt_tensor **out)
{
    (void)p, (void)c, (void)variant;
    const char *expr = is_float(d) ? "sqrt(abs(a*b + a)) - exp(min(b, 1.5)) * 0.25 + where(a > b, a, -b)"
                                   : "a*b + maximum(a, b) - (a >= b) * 3";
    wgt_tensor *inputs[2] = {in[0], in[1]};
    out[0] = wgt_fused(ctx, expr, inputs, 2);
    return 1;
}

static int run_reduce(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                      int variant, wgt_tensor **out)
{
    (void)ctx, (void)d, (void)variant;
    if (p->op == WGT_OP_CUMSUM) out[0] = wgt_cumsum(in[0], c->axes[0]);
    else if (p->op == WGT_OP_SOFTMAX) out[0] = wgt_softmax(in[0], c->axes[0]);
    else if (p->op == WGT_OP_LOG_SOFTMAX) out[0] = wgt_log_softmax(in[0], c->axes[0]);
    else if (p->op == WGT_OP_ARGMAX) out[0] = wgt_argmax(in[0], c->axes[0], c->keepdim);
    else if (p->op == WGT_OP_ARGMIN) out[0] = wgt_argmin(in[0], c->axes[0], c->keepdim);
    else out[0] = wgt_reduce(p->op, in[0], c->axes, c->n_axes, c->keepdim);
    return 1;
}

static int run_matmul(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                      int variant, wgt_tensor **out)
{
    (void)p, (void)ctx, (void)c, (void)d, (void)variant;
    out[0] = wgt_matmul(in[0], in[1]);
    return 1;
}

/* Uploads host data of dtype/shape to ctx (same bytes on both backends). */
static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, input_domain domain,
                          uint64_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    void *data = malloc((size_t)(n ? n : 1) * wgt_dtype_size(dtype) + 4);
    parity_fill(data, dtype, n, domain, false, seed);
    wgt_tensor *t = wgt_tensor_from_host(ctx, dtype, ndim, shape, data);
    free(data);
    return t;
}

static wgt_tensor *upload_indices(wgt_context *ctx, int ndim, const int64_t *shape, int64_t low, int64_t high,
                                  uint64_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    int32_t *data = malloc((size_t)(n ? n : 1) * 4);
    parity_fill_indices(data, n, low, high, seed);
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_I32, ndim, shape, data);
    free(data);
    return t;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* Data movement and creation ops: each variant is one setup. */
static int run_own(const parity_op *p, wgt_context *ctx, wgt_tensor *const *in, const shape_case *c, wgt_dtype d,
                   int v, wgt_tensor **out)
{
    (void)in, (void)c;
    wgt_tensor *x = NULL, *y = NULL, *z = NULL, *idx = NULL;
    int n = 1;
    switch (p->op) {
    case WGT_OP_CAST: {
        x = upload(ctx, d, 2, v ? SHAPE(9, 7) : SHAPE(3, 5), DOMAIN_SIGNED, 11);
        if (v == 1) { /* a transposed source */
            y = wgt_transpose(x, 0, 1);
            wgt_tensor_release(x);
            x = y;
            y = NULL;
        }
        for (int t = 0; t < WGT_DTYPE_COUNT; t++) out[t] = wgt_cast(x, (wgt_dtype)t);
        n = WGT_DTYPE_COUNT;
        break;
    }
    case WGT_OP_FILL:
        x = wgt_tensor_empty(ctx, d, 2, SHAPE(5, 9));
        wgt_fill(x, 0);
        y = wgt_slice(x, 1, 1, 9, v + 2); /* strided view */
        wgt_fill(y, 3.0);
        out[0] = wgt_tensor_retain(x);
        break;
    case WGT_OP_CONCAT: {
        x = upload(ctx, d, 2, SHAPE(2, 3), DOMAIN_SIGNED, 1);
        y = upload(ctx, d, 2, v ? SHAPE(2, 5) : SHAPE(4, 3), DOMAIN_SIGNED, 2);
        z = upload(ctx, d, 2, v ? SHAPE(2, 1) : SHAPE(1, 3), DOMAIN_SIGNED, 3);
        wgt_tensor *parts[3] = {x, y, z};
        out[0] = wgt_concat(parts, 3, v ? 1 : 0);
        break;
    }
    case WGT_OP_STACK: {
        x = upload(ctx, d, 2, SHAPE(3, 4), DOMAIN_SIGNED, 1);
        y = upload(ctx, d, 2, SHAPE(3, 4), DOMAIN_SIGNED, 2);
        wgt_tensor *parts[2] = {x, y};
        out[0] = wgt_stack(parts, 2, v == 0 ? 0 : v == 1 ? 1 : -1);
        break;
    }
    case WGT_OP_SPLIT: {
        x = upload(ctx, d, 2, SHAPE(6, 5), DOMAIN_SIGNED, 4);
        const int64_t sizes[3] = {1, 2, v ? 2 : 3};
        wgt_split(x, v ? 1 : 0, sizes, 3, out);
        for (int k = 0; k < 3; k++) { /* read through a copy so the views themselves are exercised */
            wgt_tensor *copy = out[k] ? wgt_copy(out[k]) : NULL;
            wgt_tensor_release(out[k]);
            out[k] = copy;
        }
        n = 3;
        break;
    }
    case WGT_OP_SLICE_ASSIGN: {
        x = wgt_zeros(ctx, d, 2, SHAPE(6, 8));
        y = upload(ctx, d, 2, v ? SHAPE(1, 4) : SHAPE(3, 4), DOMAIN_SIGNED, 5); /* v1: broadcast source */
        wgt_tensor *rows = wgt_slice(x, 0, 0, 6, 2);
        z = wgt_slice(rows, 1, 1, 5, 1);
        wgt_tensor_release(rows);
        wgt_assign(z, y);
        out[0] = wgt_tensor_retain(x);
        break;
    }
    case WGT_OP_GATHER:
        x = upload(ctx, d, 3, SHAPE(6, 5, 4), DOMAIN_SIGNED, 6);
        if (v == 1) {
            y = wgt_transpose(x, 0, 2);
            wgt_tensor_release(x);
            x = y;
            y = NULL;
        }
        idx = v == 2 ? upload_indices(ctx, 3, SHAPE(6, 3, 4), -5, 5, 7) /* out of range is an error: test_semantics */
                     : upload_indices(ctx, 3, v == 1 ? SHAPE(4, 3, 6) : SHAPE(6, 3, 4), -5, 5, 8);
        out[0] = wgt_gather(x, 1, idx);
        break;
    case WGT_OP_INDEX_SELECT:
        x = upload(ctx, d, 2, SHAPE(7, 13), DOMAIN_SIGNED, 9);
        idx = upload_indices(ctx, 1, SHAPE(10), 0, v ? 13 : 7, 10);
        if (v == 1) { /* an index read through a strided slice */
            y = wgt_slice(idx, 0, 0, 10, 2);
            out[0] = wgt_index_select(x, 1, y);
        } else {
            out[0] = wgt_index_select(x, 0, idx);
        }
        break;
    case WGT_OP_EMBEDDING:
        x = upload(ctx, d, 2, SHAPE(10, 4), DOMAIN_SIGNED, 11);
        idx = upload_indices(ctx, 2, v ? SHAPE(70000, 1) : SHAPE(2, 3), 0, 10, 12);
        out[0] = wgt_embedding(x, idx);
        break;
    case WGT_OP_SCATTER_ADD:
        x = upload(ctx, d, 2, SHAPE(5, 6), DOMAIN_SIGNED, 13);
        idx = upload_indices(ctx, 2, v ? SHAPE(5, 40) : SHAPE(5, 8), 0, v ? 2 : 6, 14); /* v1: many collisions */
        y = upload(ctx, d, 2, v ? SHAPE(5, 40) : SHAPE(5, 8), DOMAIN_SIGNED, 15);
        out[0] = wgt_scatter_add(x, 1, idx, y);
        break;
    case WGT_OP_PAD:
        x = upload(ctx, d, 2, SHAPE(3, 4), DOMAIN_SIGNED, 16);
        out[0] = wgt_pad(x, v ? SHAPE(0, 0, 2, 1) : SHAPE(1, 2, 0, 3), v ? -1.0 : 0.0);
        break;
    case WGT_OP_TRIL:
    case WGT_OP_TRIU: {
        x = upload(ctx, d, v == 2 ? 3 : 2, v == 2 ? SHAPE(2, 4, 4) : SHAPE(5, 7), DOMAIN_SIGNED, 17);
        int64_t k = v == 0 ? 0 : v == 1 ? 2 : -1;
        out[0] = p->op == WGT_OP_TRIL ? wgt_tril(x, k) : wgt_triu(x, k);
        break;
    }
    case WGT_OP_ONE_HOT:
        idx = upload_indices(ctx, 2, SHAPE(2, 3), 0, v ? 3 : 5, 18); /* others are an error: test_semantics */
        out[0] = wgt_one_hot(idx, v ? 3 : 5, d);
        break;
    case WGT_OP_TOPK: {
        const int64_t *shape = v == 2 ? SHAPE(70000, 4) : SHAPE(7, 13);
        x = upload(ctx, d, 2, shape, DOMAIN_SIGNED, 19);
        wgt_topk(x, v == 2 ? 2 : v == 1 ? 13 : 3, v != 1, &out[0], &out[1]);
        n = 2;
        break;
    }
    case WGT_OP_VIEW: /* views have no kernel: each backend copies the strided result */
    case WGT_OP_PERMUTE:
    case WGT_OP_SLICE:
    case WGT_OP_EXPAND:
        x = upload(ctx, d, 3, SHAPE(3, 1, 10), DOMAIN_SIGNED, 30);
        if (p->op == WGT_OP_VIEW) { /* v0 stays a view, v1 has to copy */
            z = wgt_transpose(x, 0, 2);
            y = wgt_reshape(z, 2, v ? SHAPE(5, 6) : SHAPE(30, 1));
        }
        if (p->op == WGT_OP_PERMUTE) y = wgt_permute(x, v ? (int[]){2, 0, 1} : (int[]){1, 2, 0});
        if (p->op == WGT_OP_SLICE) y = wgt_slice(x, 2, v ? 1 : -7, 9, v ? 3 : 1);
        if (p->op == WGT_OP_EXPAND) y = wgt_expand(x, 4, v ? SHAPE(2, 3, 4, 10) : SHAPE(1, 3, 2, 10));
        out[0] = wgt_contiguous(y);
        break;
    case WGT_OP_ARANGE: out[0] = v ? wgt_arange(ctx, d, 3, 40, 7) : wgt_arange(ctx, d, 0, 10, 1); break;
    case WGT_OP_LINSPACE: out[0] = wgt_linspace(ctx, d, -1.5, 2.0, v ? 1 : 9); break;
    case WGT_OP_EYE: out[0] = wgt_eye(ctx, d, 4, v ? 6 : 4); break;
    case WGT_OP_RAND: out[0] = wgt_rand(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(3, 5), 42 + (uint64_t)v); break;
    case WGT_OP_RANDN: out[0] = wgt_randn(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(3, 5), 7 + (uint64_t)v); break;
    case WGT_OP_LAYER_NORM:
    case WGT_OP_RMS_NORM: /* v0 [5, 64] with weight (and bias), v1 [37, 769] without, v2 a transposed input */
        x = upload(ctx, d, 2, v == 1 ? SHAPE(37, 769) : v == 2 ? SHAPE(7, 13) : SHAPE(5, 64), DOMAIN_SIGNED, 20);
        if (v == 2) {
            y = wgt_transpose(x, 0, 1);
            wgt_tensor_release(x);
            x = y;
            y = NULL;
        }
        if (v == 0) {
            y = upload(ctx, d, 1, SHAPE(64), DOMAIN_SIGNED, 21);
            z = upload(ctx, d, 1, SHAPE(64), DOMAIN_SIGNED, 22);
        }
        out[0] = p->op == WGT_OP_LAYER_NORM ? wgt_layer_norm(x, y, z, 1e-5) : wgt_rms_norm(x, y, 1e-5);
        break;
    case WGT_OP_CROSS_ENTROPY: /* v1: C = 1000 (vec4 rows), targets of -1 ignored */
        x = upload(ctx, d, 2, v ? SHAPE(37, 1000) : SHAPE(6, 7), DOMAIN_SIGNED, 23);
        idx = upload_indices(ctx, 1, v ? SHAPE(37) : SHAPE(6), v ? -1 : 0, v ? 1000 : 7, 24);
        out[0] = wgt_cross_entropy(x, idx, WGT_REDUCTION_NONE, -1);
        out[1] = wgt_cross_entropy(x, idx, WGT_REDUCTION_MEAN, -1);
        n = 2;
        break;
    case WGT_OP_MSE_LOSS:
        x = upload(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(7, 13), DOMAIN_SIGNED, 25);
        y = upload(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(7, 13), DOMAIN_SIGNED, 26);
        out[0] = wgt_mse_loss(x, y, WGT_REDUCTION_NONE);
        out[1] = wgt_mse_loss(x, y, WGT_REDUCTION_MEAN);
        n = 2;
        break;
    case WGT_OP_DROPOUT: /* the same mask on both backends: exact; also the fused residual y + dropout(x) */
        x = upload(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(7, 13), DOMAIN_SIGNED, 27);
        y = upload(ctx, d, 2, v ? SHAPE(300, 301) : SHAPE(7, 13), DOMAIN_SIGNED, 32);
        out[0] = wgt_dropout(x, v ? 0.5 : 0.1, 1234 + (uint64_t)v);
        out[1] = wgt_dropout_add(y, x, v ? 0.5 : 0.1, 1234 + (uint64_t)v);
        n = 2;
        break;
    case WGT_OP_DROPOUT_ADD: /* recorded (h requires grad): f32 keeps the mask as bits (DROPOUT_ADD), and h's
                                gradient reads them (DROPOUT_MASKED); f16 takes the expression */
        x = upload(ctx, d, 2, v ? SHAPE(300, 300) : SHAPE(7, 12), DOMAIN_SIGNED, 27);
        y = upload(ctx, d, 2, v ? SHAPE(300, 300) : SHAPE(7, 12), DOMAIN_SIGNED, 32);
        z = upload(ctx, d, 2, v ? SHAPE(300, 300) : SHAPE(7, 12), DOMAIN_SIGNED, 33);
        wgt_tensor_set_requires_grad(y, true);
        out[0] = wgt_dropout_add(x, y, v ? 0.5 : 0.1, 99 + (uint64_t)v);
        out[1] = out[0] && wgt_backward_ex(out[0], z, false) == WGT_OK ? wgt_tensor_retain(wgt_tensor_grad(y)) : NULL;
        n = 2;
        break;
    case WGT_OP_LINEAR: /* v0 [5, 7, 33] x [19, 33]^T + bias, v1 [64, 32] x [64, 32]^T + bias (whole tiles: no
                           edge checks), v2 transposed x without bias */
        x = upload(ctx, d, v == 1 ? 2 : 3, v == 1 ? SHAPE(64, 32) : SHAPE(5, 7, 33), DOMAIN_SIGNED, 28);
        y = upload(ctx, d, 2, v == 1 ? SHAPE(64, 32) : SHAPE(19, 33), DOMAIN_SIGNED, 29);
        if (v != 2) z = upload(ctx, d, 1, v == 1 ? SHAPE(64) : SHAPE(19), DOMAIN_SIGNED, 31);
        if (v == 2) {
            idx = x; /* released below like the others */
            x = wgt_transpose(idx, 0, 1);
        }
        out[0] = wgt_linear(x, y, z);
        if (v == 2) wgt_tensor_release(idx), idx = NULL;
        break;
    case WGT_OP_GELU_LINEAR: /* v0 [5, 7, 33] h, [19, 33] weight + bias; v1 [64, 32] h, [64, 32] weight (whole
                                tiles); out and dh (the GELU-gradient epilogue's product) */
        x = upload(ctx, d, v == 1 ? 2 : 3, v == 1 ? SHAPE(64, 32) : SHAPE(5, 7, 33), DOMAIN_SIGNED, 36);
        y = upload(ctx, d, 2, v == 1 ? SHAPE(64, 32) : SHAPE(19, 33), DOMAIN_SIGNED, 37);
        if (v != 1) z = upload(ctx, d, 1, SHAPE(19), DOMAIN_SIGNED, 38);
        if (d == WGT_F32) wgt_tensor_set_requires_grad(x, true);
        out[0] = wgt_gelu_linear(x, y, z);
        n = 1;
        if (d == WGT_F32) { /* idx: the output's gradient (released below like the others) */
            idx = upload(ctx, d, v == 1 ? 2 : 3, v == 1 ? SHAPE(64, 64) : SHAPE(5, 7, 19), DOMAIN_SIGNED, 39);
            out[1] = out[0] && wgt_backward_ex(out[0], idx, false) == WGT_OK ? wgt_tensor_retain(wgt_tensor_grad(x))
                                                                              : NULL;
            n = 2;
        }
        break;
    case WGT_OP_ATTENTION: /* v0 plain, v1 causal GQA Tq < Tk, v2 causal with dropout, D = 80 */
        x = upload(ctx, d, 4, v == 2 ? SHAPE(1, 2, 21, 80) : v ? SHAPE(2, 4, 17, 64) : SHAPE(1, 2, 33, 32), DOMAIN_SIGNED, 32);
        y = upload(ctx, d, 4, v == 2 ? SHAPE(1, 1, 21, 80) : v ? SHAPE(2, 2, 40, 64) : SHAPE(1, 2, 33, 32), DOMAIN_SIGNED, 33);
        z = upload(ctx, d, 4, v == 2 ? SHAPE(1, 1, 21, 80) : v ? SHAPE(2, 2, 40, 64) : SHAPE(1, 2, 33, 32), DOMAIN_SIGNED, 34);
        out[0] = wgt_scaled_dot_product_attention(x, y, z, v != 0, v == 2 ? 0.2 : 0.0, 99);
        break;
    case WGT_OP_ROPE: /* v0 half-split from position 0, v1 interleaved from position 500 */
        x = upload(ctx, d, 4, SHAPE(2, 3, 9, 64), DOMAIN_SIGNED, 35);
        out[0] = wgt_rope(x, v ? 500 : 0, 10000.0, v == 1);
        break;
    case WGT_OP_CONV2D: /* v0 3x2 kernel, stride (2, 1), per-side padding, dilation (1, 2), bias; v1 depthwise; v2 1x1 GEMM path; v3 Winograd */
    case WGT_OP_CONV_TRANSPOSE2D: { /* v0 stride 2, output_padding 1, bias; v1 groups 2, 2x3 kernel; v2 1x1; v3 Winograd */
        wgt_conv2d_options co;
        wgt_conv2d_options_init(&co);
        bool t = p->op == WGT_OP_CONV_TRANSPOSE2D;
        if (v == 0) {
            x = upload(ctx, d, 4, t ? SHAPE(2, 4, 5, 4) : SHAPE(2, 3, 7, 9), DOMAIN_SIGNED, 36);
            y = upload(ctx, d, 4, t ? SHAPE(4, 3, 3, 3) : SHAPE(5, 3, 3, 2), DOMAIN_SIGNED, 37);
            z = upload(ctx, d, 1, t ? SHAPE(3) : SHAPE(5), DOMAIN_SIGNED, 38);
            co.stride[0] = 2, co.padding[0] = 1, co.padding[2] = 2, co.padding[3] = 1, co.dilation[1] = t ? 1 : 2;
            if (t) co.stride[1] = 2, co.padding[1] = 1, co.output_padding[0] = co.output_padding[1] = 1;
        } else if (v == 1) {
            x = upload(ctx, d, 4, t ? SHAPE(1, 4, 3, 5) : SHAPE(1, 6, 5, 5), DOMAIN_SIGNED, 39);
            y = upload(ctx, d, 4, t ? SHAPE(4, 3, 2, 3) : SHAPE(6, 1, 3, 3), DOMAIN_SIGNED, 40);
            co.groups = t ? 2 : 6;
            co.padding[0] = co.padding[1] = co.padding[2] = co.padding[3] = 1;
        } else if (v == 2) {
            x = upload(ctx, d, 4, SHAPE(2, 5, 4, 3), DOMAIN_SIGNED, 41);
            y = upload(ctx, d, 4, SHAPE(t ? 5 : 7, t ? 7 : 5, 1, 1), DOMAIN_SIGNED, 42);
        } else { /* v3: 3x3 stride 1 pad 1, 32 -> 33 channels: WebGPU's Winograd F(4x4, 3x3) path */
            x = upload(ctx, d, 4, t ? SHAPE(2, 33, 6, 7) : SHAPE(2, 32, 6, 7), DOMAIN_SIGNED, 70);
            y = upload(ctx, d, 4, SHAPE(33, 32, 3, 3), DOMAIN_SIGNED, 71); /* conv: [K, C, 3, 3]; transposed: [C, K, 3, 3] */
            z = upload(ctx, d, 1, t ? SHAPE(32) : SHAPE(33), DOMAIN_SIGNED, 72);
            co.padding[0] = co.padding[1] = co.padding[2] = co.padding[3] = 1;
        }
        out[0] = t ? wgt_conv_transpose2d(x, y, z, &co) : wgt_conv2d(x, y, z, &co);
        break;
    }
    case WGT_OP_MAX_POOL2D: /* v0 3x3 stride 2 pad 1 ceil mode; v1 2x3, dilation (2, 1), stride (1, 2) */
    case WGT_OP_AVG_POOL2D: { /* v0 3x3 stride 2 pad 1 ceil, count_include_pad; v1 3x2 pad 1 without the pad */
        wgt_pool2d_options po;
        wgt_pool2d_options_init(&po, 3, v ? (p->op == WGT_OP_MAX_POOL2D ? 3 : 2) : 3);
        x = upload(ctx, d, 4, v ? SHAPE(1, 5, 7, 9) : SHAPE(2, 3, 9, 8), DOMAIN_SIGNED, 43);
        if (v == 0) po.stride[0] = po.stride[1] = 2, po.padding[0] = po.padding[1] = 1, po.ceil_mode = true;
        else if (p->op == WGT_OP_MAX_POOL2D) po.kernel[0] = 2, po.stride[0] = 1, po.stride[1] = 2, po.padding[1] = 1, po.dilation[0] = 2;
        else po.stride[0] = 2, po.stride[1] = 1, po.padding[0] = po.padding[1] = 1, po.count_include_pad = false;
        out[0] = p->op == WGT_OP_MAX_POOL2D ? wgt_max_pool2d(x, &po) : wgt_avg_pool2d(x, &po);
        break;
    }
    case WGT_OP_ADAPTIVE_AVG_POOL2D: /* v0 7x5 -> 3x2, v1 global */
        x = upload(ctx, d, 4, SHAPE(2, 3, 7, 5), DOMAIN_SIGNED, 44);
        out[0] = wgt_adaptive_avg_pool2d(x, v ? 1 : 3, v ? 1 : 2);
        break;
    case WGT_OP_GROUP_NORM: /* v0 [2, 6, 5, 3] in 3 groups with weight and bias, v1 [3, 4, 7] in 2 groups, no affine */
        x = upload(ctx, d, v ? 3 : 4, v ? SHAPE(3, 4, 7) : SHAPE(2, 6, 5, 3), DOMAIN_SIGNED, 48);
        if (!v) y = upload(ctx, d, 1, SHAPE(6), DOMAIN_SIGNED, 49), z = upload(ctx, d, 1, SHAPE(6), DOMAIN_SIGNED, 50);
        out[0] = wgt_group_norm(x, v ? 2 : 3, y, z, 1e-5);
        break;
    case WGT_OP_BATCH_NORM: /* v0 training with weight and bias, v1 eval with running statistics */
        x = upload(ctx, d, 4, v ? SHAPE(2, 4, 5, 3) : SHAPE(3, 5, 7, 6), DOMAIN_SIGNED, 45);
        y = upload(ctx, d, 1, v ? SHAPE(4) : SHAPE(5), DOMAIN_SIGNED, 46);
        z = upload(ctx, d, 1, v ? SHAPE(4) : SHAPE(5), DOMAIN_SIGNED, 47);
        idx = wgt_full(ctx, WGT_F32, 1, v ? SHAPE(4) : SHAPE(5), 0.25);
        {
            wgt_tensor *rv = wgt_full(ctx, WGT_F32, 1, v ? SHAPE(4) : SHAPE(5), 1.5);
            out[0] = wgt_batch_norm(x, idx, rv, y, z, v == 0, 0.1, 1e-5);
            wgt_tensor_release(rv);
        }
        break;
    case WGT_OP_QLINEAR: { /* v0 8-bit GEMV x [1, 256] (decode), v1 4-bit GEMV, v2 4-bit x [2, 11, 96] (22 rows: 5 four-row blocks + 2)
                              all against W [37, K] quantized on the host (the same codes on both backends);
                              v3, v4: v2's shapes at MEDIUM precision (x quantized too: int8_x), 8 and 4 bits;
                              v5, v6: the GEMV at MEDIUM (WebGPU: quant_gemv_rows' INT8_X), 8 bits, and 4 bits
                              with a bias (wgt_qlinear_ex) */
        const int bits = v == 0 || v == 3 || v == 5 ? 8 : 4;
        const bool rows = v >= 2 && v <= 4;
        x = upload(ctx, WGT_F32, rows ? 3 : 2, rows ? SHAPE(2, 11, 96) : SHAPE(1, 256), DOMAIN_SIGNED, 48);
        y = upload(ctx, WGT_F32, 2, rows ? SHAPE(37, 96) : SHAPE(37, 256), DOMAIN_SIGNED, 49);
        wgt_tensor *qw = NULL, *qs = NULL;
        const wgt_matmul_precision before =
            wgt_set_matmul_precision(ctx, v >= 3 ? WGT_MATMUL_PRECISION_MEDIUM : WGT_MATMUL_PRECISION_HIGHEST);
        z = v == 6 ? upload(ctx, WGT_F32, 1, SHAPE(37), DOMAIN_SIGNED, 50) : NULL;
        const wgt_qlinear_fusion f = {.bias = z};
        if (wgt_quantize_weight(y, bits, &qw, &qs) == WGT_OK) out[0] = wgt_qlinear_ex(x, qw, qs, bits, &f);
        wgt_set_matmul_precision(ctx, before);
        wgt_tensor_release(qw);
        wgt_tensor_release(qs);
        break;
    }
    case WGT_OP_SUM_SQUARES: { /* v0 odd sizes in one kernel; v1 10 tensors (two kernels) of mixed dtypes with
                                  an empty, a transposed, a strided and multi-chunk ones (8192 per chunk); v2 none,
                                  and only empty ones: 0 */
        static const int64_t sizes[10][2] = {{7, 13},  {1, 1},  {0, 5},    {13, 7}, {40, 9},
                                             {1, 20000}, {3, 333}, {1, 8192}, {1, 8193}, {5, 1}};
        wgt_tensor *ts[10] = {NULL};
        int count = v == 0 ? 3 : v == 1 ? 10 : 1;
        for (int i = 0; i < count && v < 2; i++) {
            const int64_t *sh = v == 0 ? (i == 0 ? sizes[0] : i == 1 ? sizes[1] : sizes[6]) : sizes[i];
            wgt_dtype dt = v == 1 && i % 2 ? (d == WGT_F32 ? WGT_F16 : WGT_F32) : d;
            ts[i] = upload(ctx, dt, 2, sh, DOMAIN_SIGNED, 60 + (uint64_t)i);
            if (v == 1 && (i == 3 || i == 4)) { /* a transposed and a strided view */
                wgt_tensor *view = i == 3 ? wgt_transpose(ts[i], 0, 1) : wgt_slice(ts[i], 0, 1, 40, 3);
                wgt_tensor_release(ts[i]);
                ts[i] = view;
            }
        }
        if (v == 2) ts[0] = wgt_tensor_empty(ctx, d, 2, SHAPE(0, 5));
        out[0] = wgt_sum_squares(ctx, ts, v == 2 ? 0 : count);
        if (v == 2) out[1] = wgt_sum_squares(ctx, ts, 1), n = 2;
        for (int i = 0; i < 10; i++) wgt_tensor_release(ts[i]);
        break;
    }
    case WGT_OP_QUANTIZE_ROWS: { /* v0 x [2, 3, 64] into new codes and scales; v1 [2, 3, 4, 32] into rows 3..7
                                    of caches [2, 3, 10, ..] (strided destinations) */
        const int64_t rows_shape[4] = {2, 3, 4, 32};
        x = upload(ctx, d, v ? 4 : 3, v ? rows_shape : SHAPE(2, 3, 64), DOMAIN_SIGNED, 73);
        const int64_t D = v ? 32 : 64;
        y = wgt_zeros(ctx, WGT_I32, v ? 4 : 3, v ? SHAPE(2, 3, 10, D / 4) : SHAPE(2, 3, D / 4));
        z = wgt_zeros(ctx, WGT_F32, v ? 4 : 3, v ? SHAPE(2, 3, 10, D / 32) : SHAPE(2, 3, D / 32));
        wgt_scope_push(ctx);
        wgt_status st = v ? wgt_quantize_rows_into(wgt_slice(y, 2, 3, 7, 1), wgt_slice(z, 2, 3, 7, 1), x)
                          : wgt_quantize_rows_into(y, z, x);
        wgt_scope_pop(ctx);
        if (st == WGT_OK) out[0] = wgt_tensor_retain(y), out[1] = wgt_tensor_retain(z), n = 2;
        break;
    }
    case WGT_OP_DEQUANTIZE_ROWS: { /* v0 [37, 96] quantized on the host (the same codes on both backends); v1 a
                                      transposed-rows view of [4, 5, 64] */
        y = upload(ctx, WGT_F32, 2, v ? SHAPE(20, 64) : SHAPE(37, 96), DOMAIN_SIGNED, 74);
        wgt_tensor *qw = NULL, *qs = NULL;
        if (wgt_quantize_weight(y, 8, &qw, &qs) == WGT_OK) {
            wgt_scope_push(ctx);
            wgt_tensor *cw = v ? wgt_transpose(wgt_reshape(qw, 3, SHAPE(4, 5, 16)), 0, 1) : qw;
            wgt_tensor *cs = v ? wgt_transpose(wgt_reshape(qs, 3, SHAPE(4, 5, 2)), 0, 1) : qs;
            out[0] = wgt_scope_keep(wgt_dequantize_rows(cw, cs, d));
            wgt_scope_pop(ctx);
        }
        wgt_tensor_release(qw);
        wgt_tensor_release(qs);
        break;
    }
    case WGT_OP_ATTENTION_Q8: { /* v0 decode Tq 1 over 70 keys, 4 query heads a kv head; v1 Tq 3 causal, D 64;
                                   v2 a prefill Tq 6 (WebGPU: dequantized copies, then the float kernels) */
        const int64_t H = v == 0 ? 8 : 4, Tq = v == 0 ? 1 : v == 1 ? 3 : 6, Tk = v == 0 ? 70 : 21, D = v == 0 ? 32 : 64;
        x = upload(ctx, d, 4, SHAPE(1, H, Tq, D), DOMAIN_SIGNED, 75);
        wgt_tensor *kv[2] = {upload(ctx, WGT_F32, 2, SHAPE(2 * Tk, D), DOMAIN_SIGNED, 76),
                             upload(ctx, WGT_F32, 2, SHAPE(2 * Tk, D), DOMAIN_SIGNED, 77)};
        wgt_tensor *qc[2] = {NULL, NULL}, *sc[2] = {NULL, NULL};
        bool ok = true;
        for (int i = 0; i < 2; i++) ok = ok && wgt_quantize_weight(kv[i], 8, &qc[i], &sc[i]) == WGT_OK;
        if (ok) {
            wgt_scope_push(ctx);
            wgt_tensor *r[4];
            for (int i = 0; i < 2; i++) {
                r[2 * i] = wgt_reshape(qc[i], 4, SHAPE(1, 2, Tk, D / 4));
                r[2 * i + 1] = wgt_reshape(sc[i], 4, SHAPE(1, 2, Tk, D / 32));
            }
            out[0] = wgt_scope_keep(wgt_attention_q8(x, r[0], r[1], r[2], r[3], v != 0));
            wgt_scope_pop(ctx);
        }
        for (int i = 0; i < 2; i++) wgt_tensor_release(kv[i]), wgt_tensor_release(qc[i]), wgt_tensor_release(sc[i]);
        break;
    }
    case WGT_OP_ATTENTION_LINEAR: { /* one query row (WebGPU: the combine in the GEMV): v0 f16 weight [40, 8 x 32]
                                       + bias over 150 keys (3 chunks), 4 query heads a kv head; v1 4-bit weight, no
                                       bias, 65 keys; v2 8-bit weight + bias, 2 query rows (the composition); v3 an
                                       8-bit cache of 100 keys (wgt_attention_q8_linear_ex), f16 weight + bias */
        const int64_t Tq = v == 2 ? 2 : 1, Tk = v == 0 ? 150 : v == 1 ? 65 : v == 2 ? 70 : 100;
        x = upload(ctx, d, 4, SHAPE(1, 8, Tq, 32), DOMAIN_SIGNED, 78);
        y = upload(ctx, d, 4, SHAPE(1, 2, Tk, 32), DOMAIN_SIGNED, 79);
        z = upload(ctx, d, 4, SHAPE(1, 2, Tk, 32), DOMAIN_SIGNED, 80);
        wgt_tensor *w = upload(ctx, WGT_F32, 2, SHAPE(40, 256), DOMAIN_SIGNED, 81);
        wgt_tensor *bias = v == 1 ? NULL : upload(ctx, WGT_F32, 1, SHAPE(40), DOMAIN_SIGNED, 82);
        wgt_tensor *qw = NULL, *qs = NULL;
        if (v == 0) {
            wgt_scope_push(ctx);
            out[0] = wgt_scope_keep(wgt_attention_linear_ex(x, y, z, true, wgt_cast(w, WGT_F16), bias, WGT_F32));
            wgt_scope_pop(ctx);
        } else if (v == 3) { /* k and v as 8-bit rows [1, 2, Tk, 32 / 4] and [1, 2, Tk, 1] */
            wgt_scope_push(ctx);
            wgt_tensor *cache[4];
            for (int i = 0; i < 2; i++) {
                cache[2 * i] = wgt_zeros(ctx, WGT_I32, 4, SHAPE(1, 2, Tk, 8));
                cache[2 * i + 1] = wgt_zeros(ctx, WGT_F32, 4, SHAPE(1, 2, Tk, 1));
                wgt_quantize_rows_into(cache[2 * i], cache[2 * i + 1], i ? z : y);
            }
            out[0] = wgt_scope_keep(wgt_attention_q8_linear_ex(x, cache[0], cache[1], cache[2], cache[3], true,
                                                               wgt_cast(w, WGT_F16), bias, WGT_F32));
            wgt_scope_pop(ctx);
        } else if (wgt_quantize_weight(w, v == 1 ? 4 : 8, &qw, &qs) == WGT_OK) {
            out[0] = wgt_attention_qlinear_ex(x, y, z, true, qw, qs, v == 1 ? 4 : 8, bias);
        }
        wgt_tensor_release(qw);
        wgt_tensor_release(qs);
        wgt_tensor_release(w);
        wgt_tensor_release(bias);
        break;
    }
    default: n = 0; break;
    }
    wgt_tensor_release(x);
    wgt_tensor_release(y);
    wgt_tensor_release(z);
    wgt_tensor_release(idx);
    return n;
}

/* ------------------------------------------------------------- the table */

static const parity_op table[] = {
    {WGT_OP_ADD, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_SUB, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_MUL, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_DIV, KIND_BINARY, ALL_DTYPES, TOL_APPROX, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_POW, KIND_BINARY, ALL_DTYPES, TOL_APPROX, run_binary, DOMAIN_POSITIVE, 0},
    {WGT_OP_MAXIMUM, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_MINIMUM, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_EQ, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_NE, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_LT, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_LE, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_GT, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_GE, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_LOGICAL_AND, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_LOGICAL_OR, KIND_BINARY, ALL_DTYPES, TOL_EXACT, run_binary, DOMAIN_SIGNED, 0},
    {WGT_OP_WHERE, KIND_WHERE, ALL_DTYPES, TOL_EXACT, run_where, DOMAIN_SIGNED, 0},
    {WGT_OP_NEG, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_ABS, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_SIGN, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_EXP, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_LOG, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_POSITIVE, 0},
    {WGT_OP_LOG1P, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_POSITIVE, 0},
    {WGT_OP_SQRT, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_POSITIVE, 0},
    {WGT_OP_RSQRT, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_POSITIVE, 0},
    {WGT_OP_RECIPROCAL, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_SIN, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_COS, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_TANH, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_SIGMOID, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_RELU, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_LEAKY_RELU, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_ELU, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_GELU, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_GELU_TANH, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_SILU, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_SOFTPLUS, KIND_UNARY, ALL_DTYPES, TOL_APPROX, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_CLAMP, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_FLOOR, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_CEIL, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_ROUND, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_LOGICAL_NOT, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_FUSED, KIND_BINARY, FLOATS | BIT(WGT_I32), TOL_APPROX, run_fused, DOMAIN_SIGNED, 0},
    {WGT_OP_SUM, KIND_REDUCE, ALL_DTYPES, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_MEAN, KIND_REDUCE, ALL_DTYPES, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_MAX, KIND_REDUCE, ALL_DTYPES, TOL_EXACT, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_MIN, KIND_REDUCE, ALL_DTYPES, TOL_EXACT, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_PROD, KIND_REDUCE, NUMERIC, TOL_REDUCE, run_reduce, DOMAIN_POSITIVE, 0},
    {WGT_OP_VAR, KIND_REDUCE, NUMERIC, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_STD, KIND_REDUCE, NUMERIC, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_ARGMAX, KIND_ARG, NUMERIC, TOL_EXACT, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_ARGMIN, KIND_ARG, NUMERIC, TOL_EXACT, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_CUMSUM, KIND_AXIS, NUMERIC, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_SOFTMAX, KIND_AXIS, FLOATS, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_LOG_SOFTMAX, KIND_AXIS, FLOATS, TOL_REDUCE, run_reduce, DOMAIN_SIGNED, 0},
    {WGT_OP_MATMUL, KIND_MATMUL, FLOATS | BIT(WGT_I32), TOL_REDUCE, run_matmul, DOMAIN_SIGNED, 0},
    {WGT_OP_COPY, KIND_UNARY, ALL_DTYPES, TOL_EXACT, run_unary, DOMAIN_SIGNED, 0},
    {WGT_OP_CAST, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_FILL, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_CONCAT, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_STACK, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_SPLIT, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_SLICE_ASSIGN, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_GATHER, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_INDEX_SELECT, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_SCATTER_ADD, KIND_OWN, BIT(WGT_F32) | BIT(WGT_I32), TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_EMBEDDING, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_PAD, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_TRIL, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_TRIU, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_ONE_HOT, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_TOPK, KIND_OWN, NUMERIC, TOL_EXACT, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_VIEW, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_PERMUTE, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_SLICE, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_EXPAND, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_ARANGE, KIND_OWN, NUMERIC, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_LINSPACE, KIND_OWN, FLOATS, TOL_APPROX, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_EYE, KIND_OWN, ALL_DTYPES, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_RAND, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_DROPOUT_ADD, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_RANDN, KIND_OWN, FLOATS, TOL_APPROX, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_LAYER_NORM, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_RMS_NORM, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_CROSS_ENTROPY, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_MSE_LOSS, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_DROPOUT, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_LINEAR, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_GELU_LINEAR, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_ATTENTION_LINEAR, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 4},
    {WGT_OP_ATTENTION, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_ROPE, KIND_OWN, FLOATS, TOL_APPROX, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_CONV2D, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 4},
    {WGT_OP_CONV_TRANSPOSE2D, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 4},
    {WGT_OP_MAX_POOL2D, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_AVG_POOL2D, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_ADAPTIVE_AVG_POOL2D, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_BATCH_NORM, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_GROUP_NORM, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_QLINEAR, KIND_OWN, BIT(WGT_F32), TOL_REDUCE, run_own, DOMAIN_SIGNED, 7},
    {WGT_OP_SUM_SQUARES, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
    {WGT_OP_QUANTIZE_ROWS, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_DEQUANTIZE_ROWS, KIND_OWN, FLOATS, TOL_EXACT, run_own, DOMAIN_SIGNED, 2},
    {WGT_OP_ATTENTION_Q8, KIND_OWN, FLOATS, TOL_REDUCE, run_own, DOMAIN_SIGNED, 3},
};

static double tolerance(tolerance_class t, wgt_dtype d)
{
    bool half = d == WGT_F16;
    switch (t) {
    case TOL_EXACT: return 1e-7;
    case TOL_APPROX: return half ? 1e-3 : 2e-6;
    case TOL_REDUCE: return half ? 5e-3 : 5e-4;
    }
    return 0;
}

/* ---------------------------------------------------------------- driver */

static int cases_run, cases_passed, cases_unsupported;
static int large_skipped; /* under WGT_SANITIZE only */

static void release_all(wgt_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        wgt_tensor_release(t[i]);
        t[i] = NULL;
    }
}

/* Runs one op/dtype/case on both backends and compares every output. */
static void run_case(const parity_op *p, wgt_context *gpu, wgt_context *cpu, wgt_dtype d, const shape_case *c,
                     int n_inputs, int variant, const char *label)
{
    wgt_tensor *gin[3] = {NULL}, *cin[3] = {NULL};
    for (int i = 0; i < n_inputs; i++) {
        wgt_dtype in_dtype = (p->kind == KIND_WHERE && i == 0) ? WGT_BOOL : d;
        make_input(gpu, cpu, in_dtype, c->ndim[i], c->shape[i], i == 0 ? c->transform : T_NONE, c->special,
                   p->domain, 1000u * (uint64_t)i + (uint64_t)p->op, &gin[i], &cin[i]);
    }
    wgt_tensor *gout[MAX_OUT] = {NULL}, *cout[MAX_OUT] = {NULL};
    int ng = p->run(p, gpu, gin, c, d, variant, gout);
    int nc = p->run(p, cpu, cin, c, d, variant, cout);
    cases_run++;
    wgt_status gs = wgt_context_status(gpu), cs = wgt_context_status(cpu);
    bool ok = true;
    if (gs != WGT_OK || cs != WGT_OK) {
        ok = false;
        if (gs == WGT_ERR_UNSUPPORTED && cs == WGT_OK) cases_unsupported++;
        fprintf(stderr, "FAIL %s: gpu %s (%s) / cpu %s (%s)\n", label, wgt_status_string(gs),
                wgt_context_error_message(gpu), wgt_status_string(cs), wgt_context_error_message(cpu));
    } else if (ng != nc) {
        ok = false;
        fprintf(stderr, "FAIL %s: %d gpu outputs, %d cpu outputs\n", label, ng, nc);
    } else {
        for (int k = 0; k < ng && ok; k++) {
            if (!gout[k] || !cout[k]) {
                ok = gout[k] == cout[k];
                if (!ok) fprintf(stderr, "FAIL %s: output %d missing on one backend\n", label, k);
                continue;
            }
            parity_compare r = parity_compare_tensors(gout[k], cout[k], tolerance(p->tol, wgt_tensor_dtype(gout[k])));
            if (!r.ok) {
                ok = false;
                fprintf(stderr, "FAIL %s output %d: %s\n", label, k, r.detail);
            }
            if (wgt_tensor_check_guards(gout[k]) != WGT_OK) {
                ok = false;
                fprintf(stderr, "FAIL %s output %d: %s\n", label, k, wgt_context_error_message(gpu));
            }
        }
    }
    cases_passed += ok;
    CHECK(ok, "%s", label);
    release_all(gout, MAX_OUT);
    release_all(cout, MAX_OUT);
    release_all(gin, 3);
    release_all(cin, 3);
    wgt_context_clear_error(gpu);
    wgt_context_clear_error(cpu);
}

static void run_op(const parity_op *p, wgt_context *gpu, wgt_context *cpu)
{
    for (int dt = 0; dt < WGT_DTYPE_COUNT; dt++) {
        if (!(p->dtypes & BIT(dt))) continue;
        wgt_dtype d = (wgt_dtype)dt;
        char label[256];
        const shape_case *cases = NULL;
        size_t n_cases = 0;
        int n_inputs = 1;
        switch (p->kind) {
        case KIND_UNARY: cases = unary_cases, n_cases = sizeof(unary_cases) / sizeof(unary_cases[0]); break;
        case KIND_BINARY:
        case KIND_WHERE:
            cases = unary_cases, n_cases = sizeof(unary_cases) / sizeof(unary_cases[0]);
            n_inputs = p->kind == KIND_WHERE ? 3 : 2;
            break;
        case KIND_REDUCE:
        case KIND_ARG: cases = reduce_cases, n_cases = sizeof(reduce_cases) / sizeof(reduce_cases[0]); break;
        case KIND_AXIS: cases = axis_cases, n_cases = sizeof(axis_cases) / sizeof(axis_cases[0]); break;
        case KIND_MATMUL:
            cases = matmul_cases, n_cases = sizeof(matmul_cases) / sizeof(matmul_cases[0]);
            n_inputs = 2;
            break;
        case KIND_OWN:
            for (int v = 0; v < p->variants; v++) {
                snprintf(label, sizeof(label), "%s %s variant %d", wgt_op_name(p->op), wgt_dtype_name(d), v);
                run_case(p, gpu, cpu, d, &unary_cases[0], 0, v, label);
            }
            continue;
        }
        for (size_t i = 0; i < n_cases; i++) {
            const shape_case *c = &cases[i];
            /* The large classes are f32 only: lavapipe is ~1000x slower than a GPU. */
            if (c->large && d != WGT_F32) continue;
#if defined(WGT_SANITIZE) || defined(WGT_PARITY_SMALL)
            /* 2^24-element cases cost minutes each under ASan and on the web
             * build's SwiftShader (web/CMakeLists.txt); `make test` runs them. */
            if (c->large) {
                large_skipped++;
                continue;
            }
#endif
            if (c->special && !is_float(d)) continue;
            if (p->kind == KIND_ARG && c->n_axes != 1) continue;
            if (c->empty_reduction && (p->op == WGT_OP_MAX || p->op == WGT_OP_MIN || p->kind == KIND_ARG)) continue;
            snprintf(label, sizeof(label), "%s %s %s", wgt_op_name(p->op), wgt_dtype_name(d), c->name);
            run_case(p, gpu, cpu, d, c, n_inputs, 0, label);
        }
        if (p->kind == KIND_BINARY || p->kind == KIND_WHERE) {
            for (size_t i = 0; i < sizeof(binary_extra_cases) / sizeof(binary_extra_cases[0]); i++) {
                shape_case c = binary_extra_cases[i];
                if (p->kind == KIND_WHERE) { /* cond [5,1,7] or [], a/b broadcast */
                    c.ndim[2] = c.ndim[1];
                    memcpy(c.shape[2], c.shape[1], sizeof(c.shape[2]));
                }
                snprintf(label, sizeof(label), "%s %s %s", wgt_op_name(p->op), wgt_dtype_name(d), c.name);
                run_case(p, gpu, cpu, d, &c, n_inputs, 1, label);
            }
        }
    }
}

int main(int argc, char **argv)
{
    /* optional: one op name, or --part K/N to run every N-th op of the table
     * (CTest runs the suite in parts, tests/CMakeLists.txt) */
    const char *only = argc > 1 ? argv[1] : NULL;
    int part = 1, parts = 1;
    if (only && strcmp(only, "--part") == 0) {
        if (argc < 3 || sscanf(argv[2], "%d/%d", &part, &parts) != 2 || parts < 1 || part < 1 || part > parts) {
            fprintf(stderr, "usage: %s [op name | --part K/N]\n", argv[0]);
            return 2;
        }
        only = NULL;
    }
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.debug_guards = true;
    o.wait_timeout_ms = 120000; /* lavapipe runs the large cases slowly */
    wgt_context *gpu = wgt_context_create(&o);
    o.backend = WGT_BACKEND_CPU;
    wgt_context *cpu = wgt_context_create(&o);
    if (wgt_context_status(gpu) != WGT_OK || wgt_context_status(cpu) != WGT_OK) {
        fprintf(stderr, "FAIL: contexts: %s / %s\n", wgt_context_error_message(gpu), wgt_context_error_message(cpu));
        return 1;
    }
    wgt_adapter_info info;
    wgt_context_adapter_info(gpu, &info);
    printf("parity: %s (%s, driver %s) vs cpu\n", info.name, info.backend, info.driver);

    /* Every op of the op table must have a parity entry (checked by part 1). */
    for (int op = 0; op < WGT_OP_COUNT && part == 1; op++) {
        bool found = false;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) found |= table[i].op == (wgt_op)op;
        CHECK(found, "op %s has no parity entry", wgt_op_name((wgt_op)op));
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (only && strcmp(only, wgt_op_name(table[i].op)) != 0) continue;
        if ((int)(i % (size_t)parts) != part - 1) continue;
        int before = cases_run, passed_before = cases_passed;
        run_op(&table[i], gpu, cpu);
        printf("  %-14s %4d cases, %4d passed\n", wgt_op_name(table[i].op), cases_run - before,
               cases_passed - passed_before);
        fflush(stdout);
    }
    printf("parity: %d cases run, %d passed, %d failed (%d of them unsupported on the GPU)\n", cases_run, cases_passed,
           cases_run - cases_passed, cases_unsupported);
    if (parts > 1) printf("parity: part %d of %d of the op table\n", part, parts);
    if (large_skipped) printf("parity: %d large cases not run under sanitizers or on the web build (make test runs them)\n", large_skipped);
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
