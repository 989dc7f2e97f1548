/* Reductions, cumsum and softmax front-ends.
 *   reduce: x [d0..dn) over a set of axes -> keepdim ? [.. 1 ..] : [dims left]
 *   cumsum, softmax, log_softmax: x [...] -> [...] along one axis
 * Output dtypes: sum/prod/cumsum of f32/f16 keep the dtype, of integers give
 * i32; mean/var/std of integers give f32; max/min keep the dtype; arg* give i32. */
#include <math.h>
#include <string.h>

#include "ops/op_common.h"
#include "core/tape.h"

static const char *reduce_call_name(wgt_reduce_kind kind)
{
    static const char *const names[WGT_REDUCE_COUNT] = {"wgt_sum", "wgt_mean", "wgt_max", "wgt_min", "wgt_prod",
                                                        "wgt_var", "wgt_std", "wgt_argmax", "wgt_argmin"};
    return names[kind];
}

static wgt_dtype reduce_output_dtype(wgt_reduce_kind kind, wgt_dtype in)
{
    switch (kind) {
    case WGT_REDUCE_ARGMAX:
    case WGT_REDUCE_ARGMIN: return WGT_I32;
    case WGT_REDUCE_MAX:
    case WGT_REDUCE_MIN: return in;
    case WGT_REDUCE_SUM:
    case WGT_REDUCE_PROD: return wgt_dtype_is_float(in) ? in : WGT_I32;
    default: return wgt_dtype_is_float(in) ? in : WGT_F32;
    }
}

/* Builds the reduced-dims mask from axes (n_axes 0 = all); false + error. */
static bool axes_mask(wgt_context *ctx, const wgt_tensor_view *x, const int *axes, int n_axes, uint32_t *mask,
                      const char *op)
{
    *mask = 0;
    if (n_axes < 0 || (n_axes > 0 && !axes)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: n_axes %d with axes %s", op, n_axes, axes ? "given" : "NULL");
        return false;
    }
    if (n_axes == 0) {
        *mask = x->ndim ? (1u << x->ndim) - 1 : 0;
        return true;
    }
    for (int i = 0; i < n_axes; i++) {
        int axis = axes[i];
        if (x->ndim == 0 && (axis == 0 || axis == -1)) continue; /* a scalar reduces to itself */
        if (!wgt_normalize_axis(ctx, &axis, x->ndim, op)) return false;
        if (*mask & (1u << axis)) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: axis %d listed twice", op, axes[i]);
            return false;
        }
        *mask |= 1u << axis;
    }
    return true;
}

static wgt_tensor *reduce(wgt_reduce_kind kind, wgt_tensor *x, const int *axes, int n_axes, int correction,
                          bool keepdim)
{
    const char *op = reduce_call_name(kind);
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    uint32_t mask;
    if (!axes_mask(ctx, &x->view, axes, n_axes, &mask, op)) return NULL;
    if (correction < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: correction %d < 0", op, correction);
        return NULL;
    }
    int64_t kept_shape[WGT_MAX_DIMS], out_shape[WGT_MAX_DIMS];
    bool reduces_empty = false; /* a reduced size is 0 (not a product: the sizes of an empty x may overflow one) */
    int out_ndim = 0;
    for (int d = 0; d < x->view.ndim; d++) {
        bool r = mask & (1u << d);
        kept_shape[d] = r ? 1 : x->view.shape[d];
        if (r) reduces_empty |= x->view.shape[d] == 0;
        else out_shape[out_ndim++] = x->view.shape[d];
    }
    bool needs_elements = kind == WGT_REDUCE_MAX || kind == WGT_REDUCE_MIN || kind == WGT_REDUCE_ARGMAX ||
                          kind == WGT_REDUCE_ARGMIN;
    if (reduces_empty && needs_elements && wgt_shape_numel(x->view.ndim, kept_shape) > 0) {
        char buf[160];
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: reducing %s over an empty axis has no identity", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)));
        return NULL;
    }
    if (x->view.dtype == WGT_BOOL && (kind == WGT_REDUCE_VAR || kind == WGT_REDUCE_STD)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: bool input", op);
        return NULL;
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, reduce_output_dtype(kind, x->view.dtype), x->view.ndim, kept_shape, op);
    if (!out) return NULL;
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_REDUCE;
    call.op_name = op;
    call.n_inputs = 1;
    call.inputs[0] = x->view;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    call.reduce = kind;
    call.reduce_mask = mask;
    call.correction = correction;
    if (wgt_shape_numel(x->view.ndim, kept_shape) > 0 && wgt_run_kernel(ctx, &call) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    static const wgt_op op_of_kind[WGT_REDUCE_COUNT] = {WGT_OP_SUM, WGT_OP_MEAN, WGT_OP_MAX, WGT_OP_MIN, WGT_OP_PROD,
                                                        WGT_OP_VAR, WGT_OP_STD, WGT_OP_ARGMAX, WGT_OP_ARGMIN};
    struct wgt_grad_node *node = wgt_op_record(&out, op_of_kind[kind], 1, &x);
    if (node) { /* ints: reduced-dims mask, correction; max/min/std/prod reuse the (keepdim) result */
        node->params.ints[0] = mask;
        node->params.ints[1] = correction;
        if (kind == WGT_REDUCE_MAX || kind == WGT_REDUCE_MIN || kind == WGT_REDUCE_STD || kind == WGT_REDUCE_PROD)
            wgt_tape_save_output(node, out);
    }
    if (!out) return NULL;
    if (keepdim) return out;
    wgt_tensor *squeezed = wgt_view(out, out_ndim, out_shape);
    wgt_tensor_release(out);
    return squeezed;
}

static const wgt_reduce_kind kind_of_op[] = {
    [WGT_OP_SUM] = WGT_REDUCE_SUM, [WGT_OP_MEAN] = WGT_REDUCE_MEAN, [WGT_OP_MAX] = WGT_REDUCE_MAX,
    [WGT_OP_MIN] = WGT_REDUCE_MIN, [WGT_OP_PROD] = WGT_REDUCE_PROD, [WGT_OP_VAR] = WGT_REDUCE_VAR,
    [WGT_OP_STD] = WGT_REDUCE_STD, [WGT_OP_ARGMAX] = WGT_REDUCE_ARGMAX, [WGT_OP_ARGMIN] = WGT_REDUCE_ARGMIN,
};

wgt_tensor *wgt_reduce(wgt_op op, wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    if (op < WGT_OP_SUM || op > WGT_OP_ARGMIN) {
        wgt_context *ctx = wgt_op_begin("wgt_reduce", 1, &x);
        if (ctx) wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_reduce: op %s is not a reduction", wgt_op_name(op));
        return NULL;
    }
    wgt_reduce_kind kind = kind_of_op[op];
    if ((kind == WGT_REDUCE_ARGMAX || kind == WGT_REDUCE_ARGMIN) && n_axes != 1) {
        wgt_context *ctx = wgt_op_begin(reduce_call_name(kind), 1, &x);
        if (ctx) wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: exactly one axis, got %d", reduce_call_name(kind), n_axes);
        return NULL;
    }
    return reduce(kind, x, axes, n_axes, kind == WGT_REDUCE_VAR || kind == WGT_REDUCE_STD ? 1 : 0, keepdim);
}

wgt_tensor *wgt_sum(wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    return reduce(WGT_REDUCE_SUM, x, axes, n_axes, 0, keepdim);
}
wgt_tensor *wgt_mean(wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    return reduce(WGT_REDUCE_MEAN, x, axes, n_axes, 0, keepdim);
}
wgt_tensor *wgt_max(wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    return reduce(WGT_REDUCE_MAX, x, axes, n_axes, 0, keepdim);
}
wgt_tensor *wgt_min(wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    return reduce(WGT_REDUCE_MIN, x, axes, n_axes, 0, keepdim);
}
wgt_tensor *wgt_prod(wgt_tensor *x, const int *axes, int n_axes, bool keepdim)
{
    return reduce(WGT_REDUCE_PROD, x, axes, n_axes, 0, keepdim);
}
wgt_tensor *wgt_var(wgt_tensor *x, const int *axes, int n_axes, int correction, bool keepdim)
{
    return reduce(WGT_REDUCE_VAR, x, axes, n_axes, correction, keepdim);
}
wgt_tensor *wgt_std(wgt_tensor *x, const int *axes, int n_axes, int correction, bool keepdim)
{
    return reduce(WGT_REDUCE_STD, x, axes, n_axes, correction, keepdim);
}
wgt_tensor *wgt_argmax(wgt_tensor *x, int axis, bool keepdim)
{
    return reduce(WGT_REDUCE_ARGMAX, x, &axis, 1, 0, keepdim);
}
wgt_tensor *wgt_argmin(wgt_tensor *x, int axis, bool keepdim)
{
    return reduce(WGT_REDUCE_ARGMIN, x, &axis, 1, 0, keepdim);
}

/* cumsum / softmax / log_softmax: one axis, output shaped like x. */
static wgt_tensor *along_axis(wgt_kernel_kind kind, bool log, wgt_tensor *x, int axis, const char *op)
{
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if (!wgt_normalize_axis(ctx, &axis, x->view.ndim, op)) return NULL;
    wgt_dtype dtype = x->view.dtype;
    if (kind == WGT_KERNEL_SOFTMAX && !wgt_dtype_is_float(dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtype %s is not floating (cast first)", op, wgt_dtype_name(dtype));
        return NULL;
    }
    if (kind == WGT_KERNEL_CUMSUM && !wgt_dtype_is_float(dtype)) dtype = WGT_I32;
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, x->view.ndim, x->view.shape, op);
    if (!out) return NULL;
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = kind;
    call.op_name = op;
    call.n_inputs = 1;
    call.inputs[0] = x->view;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    call.axis = x->view.ndim ? axis : 0;
    call.log_softmax = log;
    if (wgt_shape_numel(x->view.ndim, x->view.shape) > 0 && wgt_run_kernel(ctx, &call) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    wgt_op node_op = kind == WGT_KERNEL_CUMSUM ? WGT_OP_CUMSUM : log ? WGT_OP_LOG_SOFTMAX : WGT_OP_SOFTMAX;
    struct wgt_grad_node *node = wgt_op_record(&out, node_op, 1, &x);
    if (node) { /* ints[0]: the axis; softmax rules reuse the result */
        node->params.ints[0] = call.axis;
        if (kind == WGT_KERNEL_SOFTMAX) wgt_tape_save_output(node, out);
    }
    return out;
}

wgt_tensor *wgt_cumsum(wgt_tensor *x, int axis) { return along_axis(WGT_KERNEL_CUMSUM, false, x, axis, "wgt_cumsum"); }
wgt_tensor *wgt_softmax(wgt_tensor *x, int axis) { return along_axis(WGT_KERNEL_SOFTMAX, false, x, axis, "wgt_softmax"); }
wgt_tensor *wgt_log_softmax(wgt_tensor *x, int axis)
{
    return along_axis(WGT_KERNEL_SOFTMAX, true, x, axis, "wgt_log_softmax");
}
