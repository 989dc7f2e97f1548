/* Elementwise op front-ends: binary, unary, where, fused expressions, casts,
 * copies, fills and slice assignment. Each builds an expression program (see
 * src/core/expr.h) and runs it as one ELEMENTWISE kernel. Shapes: inputs
 * broadcast together (NumPy rules) -> out [broadcast shape]. */
#include <math.h>
#include <string.h>

#include "ops/op_common.h"
#include "core/tape.h"

/* Allocates the output of an elementwise op over inputs broadcast together. */
static wgt_tensor *alloc_broadcast_output(wgt_context *ctx, const char *op, int n, wgt_tensor *const *inputs,
                                          wgt_dtype dtype)
{
    const wgt_tensor_view *views[WGT_MAX_KERNEL_INPUTS];
    for (int i = 0; i < n; i++) views[i] = &inputs[i]->view;
    int ndim = 0;
    int64_t shape[WGT_MAX_DIMS];
    if (!wgt_broadcast_shapes(ctx, n, views, &ndim, shape, op)) return NULL;
    return wgt_tensor_alloc(ctx, dtype, ndim, shape, op);
}

/* Runs expr on inputs into a fresh output of dtype; NULL on error. */
static wgt_tensor *run_to_new(wgt_context *ctx, const char *op, const wgt_expr *e, int n, wgt_tensor *const *inputs,
                              wgt_dtype dtype)
{
    wgt_tensor *out = alloc_broadcast_output(ctx, op, n, inputs, dtype);
    if (!out) return NULL;
    if (wgt_run_elementwise(ctx, op, e, n, inputs, out) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

/* run_to_new, recording an autograd node for op that keeps the program. */
static wgt_tensor *run_recorded(wgt_context *ctx, wgt_op op, const char *name, const wgt_expr *e, int n,
                                wgt_tensor *const *inputs, wgt_dtype dtype)
{
    wgt_tensor *out = run_to_new(ctx, name, e, n, inputs, dtype);
    wgt_op_record_expr(&out, op, n, inputs, e);
    return out;
}

/* ------------------------------------------------------------------ binary */

static const struct {
    wgt_op op;
    wgt_expr_opcode code;
    const char *call;
} binary_ops[] = {
    {WGT_OP_ADD, WGT_EXPR_ADD, "wgt_add"},
    {WGT_OP_SUB, WGT_EXPR_SUB, "wgt_sub"},
    {WGT_OP_MUL, WGT_EXPR_MUL, "wgt_mul"},
    {WGT_OP_DIV, WGT_EXPR_DIV, "wgt_div"},
    {WGT_OP_POW, WGT_EXPR_POW, "wgt_pow"},
    {WGT_OP_MAXIMUM, WGT_EXPR_MAX, "wgt_maximum"},
    {WGT_OP_MINIMUM, WGT_EXPR_MIN, "wgt_minimum"},
    {WGT_OP_EQ, WGT_EXPR_EQ, "wgt_eq"},
    {WGT_OP_NE, WGT_EXPR_NE, "wgt_ne"},
    {WGT_OP_LT, WGT_EXPR_LT, "wgt_lt"},
    {WGT_OP_LE, WGT_EXPR_LE, "wgt_le"},
    {WGT_OP_GT, WGT_EXPR_GT, "wgt_gt"},
    {WGT_OP_GE, WGT_EXPR_GE, "wgt_ge"},
    {WGT_OP_LOGICAL_AND, WGT_EXPR_AND, "wgt_logical_and"},
    {WGT_OP_LOGICAL_OR, WGT_EXPR_OR, "wgt_logical_or"},
};

static int find_binary(wgt_op op)
{
    for (int i = 0; i < (int)(sizeof(binary_ops) / sizeof(binary_ops[0])); i++)
        if (binary_ops[i].op == op) return i;
    return -1;
}

/* Output dtype of a binary op on operands of dtypes a and b. */
static wgt_dtype binary_result_dtype(wgt_expr_opcode code, wgt_dtype a, wgt_dtype b)
{
    if (code >= WGT_EXPR_EQ && code <= WGT_EXPR_OR) return WGT_BOOL;
    wgt_dtype d = wgt_promote_dtypes(a, b);
    if ((code == WGT_EXPR_DIV || code == WGT_EXPR_POW) && !wgt_dtype_is_float(d)) return WGT_F32;
    return d;
}

/* PyTorch's rule for a 0-d tensor beside a dimensioned one: within its own
 * category (bool < integer < floating) it does not widen the result, so
 * f16 [n] + f32 [] is f16 and u8 [n] + i32 [] is u8. Otherwise the order
 * bool < u8 < i32 < f16 < f32. */
static int dtype_category(wgt_dtype d) { return d == WGT_BOOL ? 0 : wgt_dtype_is_float(d) ? 2 : 1; }
static wgt_dtype promote_tensors(const wgt_tensor *a, const wgt_tensor *b)
{
    if ((a->view.ndim == 0) != (b->view.ndim == 0)) {
        const wgt_tensor *dimensioned = a->view.ndim ? a : b, *scalar = a->view.ndim ? b : a;
        if (dtype_category(scalar->view.dtype) <= dtype_category(dimensioned->view.dtype))
            return dimensioned->view.dtype;
    }
    return wgt_promote_dtypes(a->view.dtype, b->view.dtype);
}

/* v rounded to the nearest f16 value (ties to even; beyond 65504 -> inf). */
static double round_to_f16(double v)
{
    if (!isfinite(v) || v == 0) return v;
    int e;
    frexp(v, &e);
    double quantum = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10); /* 2^-24 for subnormals */
    double r = nearbyint(v / quantum) * quantum;
    return fabs(r) > 65504.0 ? copysign(INFINITY, v) : r;
}

wgt_tensor *wgt_binary(wgt_op op, wgt_tensor *a, wgt_tensor *b)
{
    int k = find_binary(op);
    wgt_tensor *args[2] = {a, b};
    const char *name = k >= 0 ? binary_ops[k].call : "wgt_binary";
    wgt_context *ctx = wgt_op_begin(name, 2, args);
    if (!ctx) return NULL;
    if (k < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_binary: op %d (%s) is not a binary op", (int)op, wgt_op_name(op));
        return NULL;
    }
    wgt_expr e;
    wgt_expr_init(&e);
    int x = wgt_expr_input(&e, 0, wgt_expr_type_of(a->view.dtype));
    int y = wgt_expr_input(&e, 1, wgt_expr_type_of(b->view.dtype));
    wgt_expr_binary(&e, binary_ops[k].code, x, y);
    wgt_dtype promoted = promote_tensors(a, b);
    return run_recorded(ctx, op, name, &e, 2, args, binary_result_dtype(binary_ops[k].code, promoted, promoted));
}

wgt_tensor *wgt_add(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_ADD, a, b); }
wgt_tensor *wgt_sub(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_SUB, a, b); }
wgt_tensor *wgt_mul(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_MUL, a, b); }
wgt_tensor *wgt_div(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_DIV, a, b); }
wgt_tensor *wgt_pow(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_POW, a, b); }
wgt_tensor *wgt_maximum(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_MAXIMUM, a, b); }
wgt_tensor *wgt_minimum(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_MINIMUM, a, b); }
wgt_tensor *wgt_eq(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_EQ, a, b); }
wgt_tensor *wgt_ne(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_NE, a, b); }
wgt_tensor *wgt_lt(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_LT, a, b); }
wgt_tensor *wgt_le(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_LE, a, b); }
wgt_tensor *wgt_gt(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_GT, a, b); }
wgt_tensor *wgt_ge(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_GE, a, b); }
wgt_tensor *wgt_logical_and(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_LOGICAL_AND, a, b); }
wgt_tensor *wgt_logical_or(wgt_tensor *a, wgt_tensor *b) { return wgt_binary(WGT_OP_LOGICAL_OR, a, b); }

/* A constant of the right type for combining with a value of type t. */
static int scalar_constant(wgt_expr *e, double value, wgt_expr_type t)
{
    bool integral = value == floor(value) && fabs(value) < 2147483648.0;
    return wgt_expr_const(e, value, (t == WGT_EXPR_I32 && integral) ? WGT_EXPR_I32 : WGT_EXPR_F32);
}

wgt_tensor *wgt_binary_scalar(wgt_op op, wgt_tensor *a, double value)
{
    int k = find_binary(op);
    const char *name = "wgt_binary_scalar";
    wgt_context *ctx = wgt_op_begin(name, 1, &a);
    if (!ctx) return NULL;
    if (k < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: op %d (%s) is not a binary op", name, (int)op, wgt_op_name(op));
        return NULL;
    }
    wgt_expr_opcode code = binary_ops[k].code;
    bool arithmetic = code == WGT_EXPR_ADD || code == WGT_EXPR_SUB || code == WGT_EXPR_MUL || code == WGT_EXPR_MAX ||
                      code == WGT_EXPR_MIN;
    if (a->view.dtype == WGT_U8 && arithmetic && isfinite(value) && value == floor(value) && (value < 0 || value > 255)) {
        /* the result would be stored as u8 and wrap: refuse it, as NumPy 2 and
         * PyTorch refuse a Python int that overflows the tensor's dtype */
        char shape[128];
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                  "%s: %s of a u8 tensor %s with the integer %.17g, which is outside u8's range [0, 255]; cast the "
                  "tensor to i32 first",
                  name, wgt_op_name(op), wgt_shape_string(a->view.ndim, a->view.shape, shape, sizeof shape), value);
        return NULL;
    }
    /* an f16 tensor compares with the scalar as f16, as PyTorch (f16(0.1) == 0.1) */
    if (a->view.dtype == WGT_F16 && code >= WGT_EXPR_EQ && code <= WGT_EXPR_GE) value = round_to_f16(value);
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_type t = wgt_expr_type_of(a->view.dtype);
    int x = wgt_expr_input(&e, 0, t);
    int c = scalar_constant(&e, value, t);
    wgt_expr_binary(&e, binary_ops[k].code, x, c);
    wgt_dtype scalar_dtype = e.nodes[c].type == WGT_EXPR_F32 ? WGT_F32 : a->view.dtype;
    wgt_dtype out = binary_result_dtype(binary_ops[k].code, a->view.dtype, scalar_dtype);
    /* a f16 tensor with a float scalar stays f16, as in PyTorch */
    if (a->view.dtype == WGT_F16 && out == WGT_F32) out = WGT_F16;
    return run_recorded(ctx, op, name, &e, 1, &a, out);
}

wgt_tensor *wgt_where(wgt_tensor *cond, wgt_tensor *a, wgt_tensor *b)
{
    wgt_tensor *args[3] = {cond, a, b};
    wgt_context *ctx = wgt_op_begin("wgt_where", 3, args);
    if (!ctx) return NULL;
    wgt_expr e;
    wgt_expr_init(&e);
    int c = wgt_expr_input(&e, 0, wgt_expr_type_of(cond->view.dtype));
    int x = wgt_expr_input(&e, 1, wgt_expr_type_of(a->view.dtype));
    int y = wgt_expr_input(&e, 2, wgt_expr_type_of(b->view.dtype));
    wgt_expr_where(&e, c, x, y);
    return run_recorded(ctx, WGT_OP_WHERE, "wgt_where", &e, 3, args, promote_tensors(a, b));
}

/* ------------------------------------------------------------------- unary */

static const struct {
    wgt_op op;
    wgt_expr_opcode code;
    const char *call;
} unary_ops[] = {
    {WGT_OP_NEG, WGT_EXPR_NEG, "wgt_neg"}, {WGT_OP_ABS, WGT_EXPR_ABS, "wgt_abs"},
    {WGT_OP_SIGN, WGT_EXPR_SIGN, "wgt_sign"}, {WGT_OP_EXP, WGT_EXPR_EXP, "wgt_exp"},
    {WGT_OP_LOG, WGT_EXPR_LOG, "wgt_log"}, {WGT_OP_LOG1P, WGT_EXPR_LOG1P, "wgt_log1p"},
    {WGT_OP_SQRT, WGT_EXPR_SQRT, "wgt_sqrt"}, {WGT_OP_RSQRT, WGT_EXPR_RSQRT, "wgt_rsqrt"},
    {WGT_OP_RECIPROCAL, WGT_EXPR_RECIPROCAL, "wgt_reciprocal"}, {WGT_OP_SIN, WGT_EXPR_SIN, "wgt_sin"},
    {WGT_OP_COS, WGT_EXPR_COS, "wgt_cos"}, {WGT_OP_TANH, WGT_EXPR_TANH, "wgt_tanh"},
    {WGT_OP_SIGMOID, WGT_EXPR_SIGMOID, "wgt_sigmoid"}, {WGT_OP_RELU, WGT_EXPR_RELU, "wgt_relu"},
    {WGT_OP_GELU, WGT_EXPR_GELU, "wgt_gelu"}, {WGT_OP_GELU_TANH, WGT_EXPR_GELU_TANH, "wgt_gelu_tanh"},
    {WGT_OP_SILU, WGT_EXPR_SILU, "wgt_silu"}, {WGT_OP_SOFTPLUS, WGT_EXPR_SOFTPLUS, "wgt_softplus"},
    {WGT_OP_FLOOR, WGT_EXPR_FLOOR, "wgt_floor"}, {WGT_OP_CEIL, WGT_EXPR_CEIL, "wgt_ceil"},
    {WGT_OP_ROUND, WGT_EXPR_ROUND, "wgt_round"}, {WGT_OP_LOGICAL_NOT, WGT_EXPR_NOT, "wgt_logical_not"},
};

/* floor/ceil/round of an integer is the integer itself, in its own dtype (as
 * PyTorch): no trip through f32, which would round i32 values beyond 2^24. */
static bool integer_rounding(wgt_expr_opcode code, wgt_dtype in)
{
    return (code == WGT_EXPR_FLOOR || code == WGT_EXPR_CEIL || code == WGT_EXPR_ROUND) && !wgt_dtype_is_float(in);
}

/* Float functions keep a float dtype and turn integers into f32. */
static wgt_dtype unary_result_dtype(wgt_expr_opcode code, wgt_dtype in)
{
    if (integer_rounding(code, in)) return in;
    if (code == WGT_EXPR_NOT) return WGT_BOOL;
    if (wgt_expr_opcode_float_only(code) && !wgt_dtype_is_float(in)) return WGT_F32;
    return in;
}

wgt_tensor *wgt_unary(wgt_op op, wgt_tensor *x)
{
    int k = -1;
    for (int i = 0; i < (int)(sizeof(unary_ops) / sizeof(unary_ops[0])); i++)
        if (unary_ops[i].op == op) k = i;
    const char *name = k >= 0 ? unary_ops[k].call : "wgt_unary";
    wgt_context *ctx = wgt_op_begin(name, 1, &x);
    if (!ctx) return NULL;
    if (k < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_unary: op %d (%s) is not a unary op without parameters",
                  (int)op, wgt_op_name(op));
        return NULL;
    }
    wgt_expr e;
    wgt_expr_init(&e);
    int in = wgt_expr_input(&e, 0, wgt_expr_type_of(x->view.dtype));
    if (!integer_rounding(unary_ops[k].code, x->view.dtype)) wgt_expr_unary(&e, unary_ops[k].code, in);
    return run_recorded(ctx, op, name, &e, 1, &x, unary_result_dtype(unary_ops[k].code, x->view.dtype));
}

wgt_tensor *wgt_neg(wgt_tensor *x) { return wgt_unary(WGT_OP_NEG, x); }
wgt_tensor *wgt_abs(wgt_tensor *x) { return wgt_unary(WGT_OP_ABS, x); }
wgt_tensor *wgt_sign(wgt_tensor *x) { return wgt_unary(WGT_OP_SIGN, x); }
wgt_tensor *wgt_exp(wgt_tensor *x) { return wgt_unary(WGT_OP_EXP, x); }
wgt_tensor *wgt_log(wgt_tensor *x) { return wgt_unary(WGT_OP_LOG, x); }
wgt_tensor *wgt_log1p(wgt_tensor *x) { return wgt_unary(WGT_OP_LOG1P, x); }
wgt_tensor *wgt_sqrt(wgt_tensor *x) { return wgt_unary(WGT_OP_SQRT, x); }
wgt_tensor *wgt_rsqrt(wgt_tensor *x) { return wgt_unary(WGT_OP_RSQRT, x); }
wgt_tensor *wgt_reciprocal(wgt_tensor *x) { return wgt_unary(WGT_OP_RECIPROCAL, x); }
wgt_tensor *wgt_sin(wgt_tensor *x) { return wgt_unary(WGT_OP_SIN, x); }
wgt_tensor *wgt_cos(wgt_tensor *x) { return wgt_unary(WGT_OP_COS, x); }
wgt_tensor *wgt_tanh(wgt_tensor *x) { return wgt_unary(WGT_OP_TANH, x); }
wgt_tensor *wgt_sigmoid(wgt_tensor *x) { return wgt_unary(WGT_OP_SIGMOID, x); }
wgt_tensor *wgt_relu(wgt_tensor *x) { return wgt_unary(WGT_OP_RELU, x); }
wgt_tensor *wgt_gelu(wgt_tensor *x) { return wgt_unary(WGT_OP_GELU, x); }
wgt_tensor *wgt_gelu_tanh(wgt_tensor *x) { return wgt_unary(WGT_OP_GELU_TANH, x); }
wgt_tensor *wgt_silu(wgt_tensor *x) { return wgt_unary(WGT_OP_SILU, x); }
wgt_tensor *wgt_softplus(wgt_tensor *x) { return wgt_unary(WGT_OP_SOFTPLUS, x); }
wgt_tensor *wgt_floor(wgt_tensor *x) { return wgt_unary(WGT_OP_FLOOR, x); }
wgt_tensor *wgt_ceil(wgt_tensor *x) { return wgt_unary(WGT_OP_CEIL, x); }
wgt_tensor *wgt_round(wgt_tensor *x) { return wgt_unary(WGT_OP_ROUND, x); }
wgt_tensor *wgt_logical_not(wgt_tensor *x) { return wgt_unary(WGT_OP_LOGICAL_NOT, x); }

/* leaky_relu(x) = x > 0 ? x : slope * x */
wgt_tensor *wgt_leaky_relu(wgt_tensor *x, double negative_slope)
{
    wgt_context *ctx = wgt_op_begin("wgt_leaky_relu", 1, &x);
    if (!ctx) return NULL;
    wgt_expr e;
    wgt_expr_init(&e);
    int in = wgt_expr_cast(&e, wgt_expr_input(&e, 0, wgt_expr_type_of(x->view.dtype)), WGT_EXPR_F32);
    int positive = wgt_expr_binary(&e, WGT_EXPR_GT, in, wgt_expr_const(&e, 0, WGT_EXPR_F32));
    int scaled = wgt_expr_binary(&e, WGT_EXPR_MUL, in, wgt_expr_const(&e, negative_slope, WGT_EXPR_F32));
    wgt_expr_where(&e, positive, in, scaled);
    return run_recorded(ctx, WGT_OP_LEAKY_RELU, "wgt_leaky_relu", &e, 1, &x, unary_result_dtype(WGT_EXPR_EXP, x->view.dtype));
}

/* elu(x) = x > 0 ? x : alpha * (exp(x) - 1) */
wgt_tensor *wgt_elu(wgt_tensor *x, double alpha)
{
    wgt_context *ctx = wgt_op_begin("wgt_elu", 1, &x);
    if (!ctx) return NULL;
    wgt_expr e;
    wgt_expr_init(&e);
    int in = wgt_expr_cast(&e, wgt_expr_input(&e, 0, wgt_expr_type_of(x->view.dtype)), WGT_EXPR_F32);
    int positive = wgt_expr_binary(&e, WGT_EXPR_GT, in, wgt_expr_const(&e, 0, WGT_EXPR_F32));
    int expm1 = wgt_expr_binary(&e, WGT_EXPR_SUB, wgt_expr_unary(&e, WGT_EXPR_EXP, in),
                                wgt_expr_const(&e, 1, WGT_EXPR_F32));
    int scaled = wgt_expr_binary(&e, WGT_EXPR_MUL, expm1, wgt_expr_const(&e, alpha, WGT_EXPR_F32));
    wgt_expr_where(&e, positive, in, scaled);
    return run_recorded(ctx, WGT_OP_ELU, "wgt_elu", &e, 1, &x, unary_result_dtype(WGT_EXPR_EXP, x->view.dtype));
}

/* clamp(x, lo, hi) = min(max(x, lo), hi); NaN stays NaN. An integer tensor
 * clamps in I32 with bounds rounded inward and limited to its dtype's range, so
 * no value goes through f32 (issue 8: i32 16777217 stayed exact only this way). */
static wgt_tensor *clamp_bounds(wgt_tensor *x, const char *name, bool has_lo, double lo, bool has_hi, double hi)
{
    wgt_context *ctx = wgt_op_begin(name, 1, &x);
    if (!ctx) return NULL;
    if (has_lo && has_hi && lo > hi) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: lo %g > hi %g", name, lo, hi);
        return NULL;
    }
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_type t = wgt_expr_type_of(x->view.dtype);
    if (t == WGT_EXPR_I32) {
        if ((has_lo && isnan(lo)) || (has_hi && isnan(hi))) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: a NaN bound for a %s tensor", name,
                      wgt_dtype_name(x->view.dtype));
            return NULL;
        }
        double dmin = x->view.dtype == WGT_I32 ? -2147483648.0 : 0.0;
        double dmax = x->view.dtype == WGT_I32 ? 2147483647.0 : x->view.dtype == WGT_U8 ? 255.0 : 1.0;
        lo = fmin(fmax(ceil(lo), dmin), dmax);
        hi = fmin(fmax(floor(hi), dmin), dmax);
    }
    int v = wgt_expr_input(&e, 0, t);
    if (has_lo) v = wgt_expr_binary(&e, WGT_EXPR_MAX, v, wgt_expr_const(&e, lo, t));
    if (has_hi) v = wgt_expr_binary(&e, WGT_EXPR_MIN, v, wgt_expr_const(&e, hi, t));
    wgt_tensor *out = run_to_new(ctx, name, &e, 1, &x, x->view.dtype);
    wgt_grad_node *node = wgt_op_record(&out, WGT_OP_CLAMP, 1, &x);
    if (node) { /* the bounds the gradient passes between (inclusive) */
        node->params.reals[0] = has_lo ? lo : -INFINITY;
        node->params.reals[1] = has_hi ? hi : INFINITY;
    }
    return out;
}

wgt_tensor *wgt_clamp(wgt_tensor *x, double lo, double hi) { return clamp_bounds(x, "wgt_clamp", true, lo, true, hi); }
wgt_tensor *wgt_clamp_min(wgt_tensor *x, double lo) { return clamp_bounds(x, "wgt_clamp_min", true, lo, false, 0); }
wgt_tensor *wgt_clamp_max(wgt_tensor *x, double hi) { return clamp_bounds(x, "wgt_clamp_max", false, 0, true, hi); }

/* ------------------------------------------------------------------- fused */

wgt_tensor *wgt_fused(wgt_context *ctx, const char *expression, wgt_tensor *const *inputs, int n_inputs)
{
    return wgt_fused_params(ctx, expression, inputs, n_inputs, NULL, 0);
}

wgt_tensor *wgt_fused_params(wgt_context *ctx, const char *expression, wgt_tensor *const *inputs, int n_inputs,
                             const double *params, int n_params)
{
    if (!ctx || ctx->status != WGT_OK) return NULL;
    if (n_params < 0 || n_params > WGT_EXPR_MAX_PARAMS || (n_params > 0 && !params)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fused_params: %d parameters%s (0..%d)", n_params,
                  n_params > 0 && !params ? " but NULL values" : "", WGT_EXPR_MAX_PARAMS);
        return NULL;
    }
    if (!expression || n_inputs < 0 || n_inputs > WGT_MAX_KERNEL_INPUTS || (n_inputs > 0 && !inputs)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fused: NULL expression or bad input count %d (0..%d)", n_inputs,
                  WGT_MAX_KERNEL_INPUTS);
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i] || inputs[i]->ctx != ctx) {
            wgt_error(ctx, inputs[i] ? WGT_ERR_CONTEXT_MISMATCH : WGT_ERR_INVALID_ARGUMENT,
                      "wgt_fused: input %d is %s", i, inputs[i] ? "from another context" : "NULL");
            return NULL;
        }
    }
    wgt_expr_type types[WGT_MAX_KERNEL_INPUTS];
    bool any_f32 = false, any_f16 = false;
    for (int i = 0; i < n_inputs; i++) {
        types[i] = wgt_expr_type_of(inputs[i]->view.dtype);
        any_f32 |= inputs[i]->view.dtype == WGT_F32;
        any_f16 |= inputs[i]->view.dtype == WGT_F16;
    }
    wgt_expr e;
    char err[256];
    if (wgt_expr_parse_params(expression, n_inputs, types, params, n_params, &e, err, sizeof(err)) != 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fused: %s", err);
        return NULL;
    }
    const wgt_expr_node *root = &e.nodes[e.n_nodes - 1];
    wgt_dtype out;
    if (root->type == WGT_EXPR_F32) out = (any_f16 && !any_f32) ? WGT_F16 : WGT_F32;
    else if (root->opcode >= WGT_EXPR_EQ && root->opcode <= WGT_EXPR_OR) out = WGT_BOOL;
    else if (root->opcode == WGT_EXPR_NOT) out = WGT_BOOL;
    else out = WGT_I32;
    return run_recorded(ctx, WGT_OP_FUSED, "wgt_fused", &e, n_inputs, inputs, out);
}

/* ---------------------------------------------------- copy, cast, fill, assign */

/* out = input converted on store (the expression is a single load). */
static wgt_status copy_into(wgt_context *ctx, const char *op, wgt_tensor *dst, wgt_tensor *src)
{
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_input(&e, 0, wgt_expr_type_of(src->view.dtype));
    return wgt_run_elementwise(ctx, op, &e, 1, &src, dst);
}

/* A copy's node: the program is the single load copy_into runs. */
static void record_copy(wgt_tensor **out, wgt_op op, wgt_tensor *x)
{
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_input(&e, 0, wgt_expr_type_of(x->view.dtype));
    wgt_op_record_expr(out, op, 1, &x, &e);
}

wgt_tensor *wgt_cast(wgt_tensor *x, wgt_dtype dtype)
{
    wgt_context *ctx = wgt_op_begin("wgt_cast", 1, &x);
    if (!ctx) return NULL;
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) {
        wgt_error(ctx, WGT_ERR_DTYPE, "wgt_cast: invalid dtype %d", (int)dtype);
        return NULL;
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, x->view.ndim, x->view.shape, "wgt_cast");
    if (out && copy_into(ctx, "wgt_cast", out, x) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    record_copy(&out, WGT_OP_CAST, x);
    return out;
}

wgt_tensor *wgt_copy(wgt_tensor *x)
{
    wgt_context *ctx = wgt_op_begin("wgt_copy", 1, &x);
    if (!ctx) return NULL;
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, "wgt_copy");
    if (out && copy_into(ctx, "wgt_copy", out, x) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    record_copy(&out, WGT_OP_COPY, x);
    return out;
}

/* True if two elements of v share memory (a broadcast dim): writing is ambiguous. */
static bool view_overlaps(const wgt_tensor_view *v)
{
    for (int i = 0; i < v->ndim; i++)
        if (v->strides[i] == 0 && v->shape[i] > 1) return true;
    return false;
}

wgt_status wgt_assign(wgt_tensor *dst, wgt_tensor *src)
{
    wgt_tensor *args[2] = {dst, src};
    wgt_context *ctx = wgt_op_begin("wgt_assign", 2, args);
    if (!ctx) return dst && dst->ctx ? dst->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!wgt_op_check_inplace(ctx, dst, "wgt_assign")) return ctx->status;
    if (view_overlaps(&dst->view))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "wgt_assign: destination is a broadcast view (stride 0); its elements overlap");
    if (dst->view.storage == src->view.storage) {
        /* Same storage: read from a snapshot so overlapping ranges stay correct. */
        wgt_tensor *snapshot = wgt_copy(src);
        if (!snapshot) return ctx->status;
        wgt_status s = copy_into(ctx, "wgt_assign", dst, snapshot);
        wgt_tensor_release(snapshot);
        return s;
    }
    return copy_into(ctx, "wgt_assign", dst, src);
}

/* dst = expression over inputs, in one ELEMENTWISE kernel storing straight
 * into dst's view (wgt_fused's program, wgt_assign's store). The values are
 * those of wgt_assign(dst, wgt_fused(...)) bit for bit: the same program,
 * converted to dst's dtype on store where wgt_fused would store its own dtype
 * (the same for a dst of wgt_fused's result dtype). */
wgt_status wgt_fused_assign(wgt_tensor *dst, const char *expression, wgt_tensor *const *inputs, int n_inputs)
{
    if (!dst) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = wgt_op_begin("wgt_fused_assign", 1, &dst);
    if (!ctx) return dst->ctx ? dst->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!expression || n_inputs < 0 || n_inputs > WGT_MAX_KERNEL_INPUTS || (n_inputs > 0 && !inputs))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fused_assign: NULL expression or bad input count %d (0..%d)",
                         n_inputs, WGT_MAX_KERNEL_INPUTS);
    const wgt_tensor_view *views[WGT_MAX_KERNEL_INPUTS + 1];
    wgt_expr_type types[WGT_MAX_KERNEL_INPUTS];
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i] || inputs[i]->ctx != ctx)
            return wgt_error(ctx, inputs[i] ? WGT_ERR_CONTEXT_MISMATCH : WGT_ERR_INVALID_ARGUMENT,
                             "wgt_fused_assign: input %d is %s", i, inputs[i] ? "from another context" : "NULL");
        if (inputs[i]->view.storage == dst->view.storage)
            return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                             "wgt_fused_assign: input %d shares dst's storage (an input written while read)", i);
        views[i] = &inputs[i]->view;
        types[i] = wgt_expr_type_of(inputs[i]->view.dtype);
    }
    if (!wgt_op_check_inplace(ctx, dst, "wgt_fused_assign")) return ctx->status;
    if (view_overlaps(&dst->view))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "wgt_fused_assign: destination is a broadcast view (stride 0); its elements overlap");
    /* the inputs must broadcast to dst's shape exactly (dst does not grow) */
    views[n_inputs] = &dst->view;
    int ndim = 0;
    int64_t shape[WGT_MAX_DIMS];
    if (!wgt_broadcast_shapes(ctx, n_inputs + 1, views, &ndim, shape, "wgt_fused_assign")) return ctx->status;
    if (ndim != dst->view.ndim || memcmp(shape, dst->view.shape, (size_t)ndim * sizeof(int64_t))) {
        char ds[160], bs[160];
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "wgt_fused_assign: inputs broadcast to %s, not dst's %s",
                         wgt_shape_string(ndim, shape, bs, sizeof(bs)),
                         wgt_shape_string(dst->view.ndim, dst->view.shape, ds, sizeof(ds)));
    }
    wgt_expr e;
    char err[256];
    if (wgt_expr_parse_params(expression, n_inputs, types, NULL, 0, &e, err, sizeof(err)) != 0)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fused_assign: %s", err);
    return wgt_run_elementwise(ctx, "wgt_fused_assign", &e, n_inputs, inputs, dst);
}

wgt_status wgt_fill(wgt_tensor *t, double value)
{
    wgt_context *ctx = wgt_op_begin("wgt_fill", 1, &t);
    if (!ctx) return t && t->ctx ? t->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!wgt_op_check_inplace(ctx, t, "wgt_fill")) return ctx->status;
    if (view_overlaps(&t->view))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_fill: tensor is a broadcast view (stride 0)");
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_type type = wgt_expr_type_of(t->view.dtype);
    /* bool: the documented cast rule (value != 0, NaN -> true), as PyTorch */
    if (t->view.dtype == WGT_BOOL) value = (value != 0 || isnan(value)) ? 1 : 0;
    wgt_expr_const(&e, type == WGT_EXPR_I32 ? trunc(value) : value, type);
    return wgt_run_elementwise(ctx, "wgt_fill", &e, 0, NULL, t);
}
