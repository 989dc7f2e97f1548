/* Creation ops: zeros/ones/full, arange/linspace/eye and rand/randn. Each is an
 * expression with no inputs (constants, output coordinates, Philox draws) run by
 * the ELEMENTWISE kernel, so every backend fills memory itself without uploads. */
#include <math.h>

#include "ops/op_common.h"

static wgt_tensor *run_expr(wgt_context *ctx, const char *op, const wgt_expr *e, wgt_dtype dtype, int ndim,
                            const int64_t *shape)
{
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, ndim, shape, op);
    if (out && wgt_run_elementwise(ctx, op, e, 0, NULL, out) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

static bool ready(wgt_context *ctx) { return ctx && ctx->status == WGT_OK; }

wgt_tensor *wgt_full(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, double value)
{
    if (!ready(ctx)) return NULL;
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, ndim, shape, "wgt_full");
    if (out && wgt_fill(out, value) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_zeros(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape)
{
    return wgt_full(ctx, dtype, ndim, shape, 0.0);
}

wgt_tensor *wgt_ones(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape)
{
    return wgt_full(ctx, dtype, ndim, shape, 1.0);
}

/* [n]: start + i * step, computed in the dtype's value type (f32 or i32). */
static wgt_tensor *affine_sequence(wgt_context *ctx, const char *op, wgt_dtype dtype, int64_t n, double start,
                                   double step)
{
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_type t = wgt_expr_type_of(dtype);
    int i = wgt_expr_cast(&e, wgt_expr_index(&e, 0), t);
    int scaled = wgt_expr_binary(&e, WGT_EXPR_MUL, i, wgt_expr_const(&e, step, t));
    wgt_expr_binary(&e, WGT_EXPR_ADD, scaled, wgt_expr_const(&e, start, t));
    return run_expr(ctx, op, &e, dtype, 1, &n);
}

wgt_tensor *wgt_arange(wgt_context *ctx, wgt_dtype dtype, double start, double stop, double step)
{
    if (!ready(ctx)) return NULL;
    if (step == 0 || !isfinite(start) || !isfinite(stop) || !isfinite(step)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_arange: start %g, stop %g, step %g: step must be nonzero and all finite",
                  start, stop, step);
        return NULL;
    }
    double count = ceil((stop - start) / step);
    if (count < 0) count = 0;
    if (count > 4e18) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_arange: %g elements", count);
        return NULL;
    }
    return affine_sequence(ctx, "wgt_arange", dtype, (int64_t)count, start, step);
}

wgt_tensor *wgt_linspace(wgt_context *ctx, wgt_dtype dtype, double start, double stop, int64_t count)
{
    if (!ready(ctx)) return NULL;
    if (count < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_linspace: count %lld < 0", (long long)count);
        return NULL;
    }
    if (!wgt_dtype_is_float(dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "wgt_linspace: dtype %s is not floating", wgt_dtype_name(dtype));
        return NULL;
    }
    double step = count > 1 ? (stop - start) / (double)(count - 1) : 0.0;
    return affine_sequence(ctx, "wgt_linspace", dtype, count, start, step);
}

wgt_tensor *wgt_eye(wgt_context *ctx, wgt_dtype dtype, int64_t n, int64_t m)
{
    if (!ready(ctx)) return NULL;
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_binary(&e, WGT_EXPR_EQ, wgt_expr_index(&e, 0), wgt_expr_index(&e, 1));
    int64_t shape[2] = {n, m};
    return run_expr(ctx, "wgt_eye", &e, dtype, 2, shape);
}

static wgt_tensor *random_tensor(wgt_context *ctx, const char *op, wgt_expr_opcode kind, wgt_dtype dtype, int ndim,
                                 const int64_t *shape, uint64_t seed)
{
    if (!ready(ctx)) return NULL;
    if (!wgt_dtype_is_float(dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtype %s is not floating", op, wgt_dtype_name(dtype));
        return NULL;
    }
    wgt_expr e;
    wgt_expr_init(&e);
    e.seed = seed;
    int draw = wgt_expr_rand(&e, kind);
    /* A uniform draw within 2^-12 of 1 rounds to 1.0 in f16; cap it at the
     * largest f16 below 1 (1 - 2^-11) so the contract [0, 1) holds. */
    if (kind == WGT_EXPR_RAND_UNIFORM && dtype == WGT_F16)
        wgt_expr_binary(&e, WGT_EXPR_MIN, draw, wgt_expr_const(&e, 0.99951171875, WGT_EXPR_F32));
    return run_expr(ctx, op, &e, dtype, ndim, shape);
}

wgt_tensor *wgt_rand(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, uint64_t seed)
{
    return random_tensor(ctx, "wgt_rand", WGT_EXPR_RAND_UNIFORM, dtype, ndim, shape, seed);
}

wgt_tensor *wgt_randn(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, uint64_t seed)
{
    return random_tensor(ctx, "wgt_randn", WGT_EXPR_RAND_NORMAL, dtype, ndim, shape, seed);
}
