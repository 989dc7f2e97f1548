/*
 * Batch norm front-end (WGT_KERNEL_CONV, BATCH_NORM_FORWARD / _BACKWARD).
 *
 *   batch_norm: x [N, C, ...], running_mean/var [C]?, weight/bias [C]? -> x's shape
 *
 * x is read as [N, C, L] (L = the product of the spatial dims). Forward is one
 * kernel: a workgroup per channel computes the batch mean and the biased
 * variance (two passes over the channel, for accuracy) and writes y; in eval
 * mode it takes the running statistics instead. Backward is one kernel too:
 * per channel the sums of dy and dy xhat, then dx, dweight = sum dy xhat,
 * dbias = sum dy. The running statistics are updated with one small fused
 * expression each on the [C] vectors (PyTorch's unbiased variance there).
 *
 *   group_norm: x [N, C, ...], weight/bias [C]? -> x's shape (composite:
 *               layer_norm on the [N, G, C/G ...] view, then the affine)
 */
#include <math.h>
#include <string.h>

#include "core/tape.h"
#include "ops/conv_internal.h"
#include "ops/op_common.h"

static wgt_tensor_view ncl_view(const wgt_tensor *t, int64_t n, int64_t c, int64_t l)
{
    wgt_tensor_view v = t->view;
    v.ndim = 3;
    v.shape[0] = n, v.shape[1] = c, v.shape[2] = l;
    wgt_contiguous_strides(3, v.shape, v.strides);
    return v;
}

static bool check_vector(wgt_context *ctx, wgt_tensor *t, const char *what, int64_t c, bool f32_only, const char *op)
{
    if (!t) return true;
    char buf[128];
    if (t->ctx != ctx) {
        wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: %s belongs to another context", op, what);
        return false;
    }
    if (f32_only ? t->view.dtype != WGT_F32 : !wgt_dtype_is_float(t->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s has dtype %s, expected %s", op, what, wgt_dtype_name(t->view.dtype),
                  f32_only ? "f32" : "f32 or f16");
        return false;
    }
    if (t->view.ndim != 1 || t->view.shape[0] != c) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %s has shape %s, expected [%lld] (the channels, dim 1 of x)", op, what,
                  wgt_shape_string(t->view.ndim, t->view.shape, buf, sizeof(buf)), (long long)c);
        return false;
    }
    return true;
}

/* running = (1 - m) running + m batch_value (scaled by `scale`), in place. */
static bool update_running(wgt_tensor *running, wgt_tensor *batch_value, double momentum, double scale)
{
    if (!running) return true;
    wgt_tensor *in[2] = {running, batch_value};
    double p[2] = {1.0 - momentum, momentum * scale};
    wgt_tensor *next = wgt_fused_params(running->ctx, "a * p0 + b * p1", in, 2, p, 2);
    bool ok = next && wgt_assign(running, next) == WGT_OK;
    wgt_tensor_release(next);
    return ok;
}

wgt_tensor *wgt_batch_norm(wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var, wgt_tensor *weight,
                           wgt_tensor *bias, bool training, double momentum, double eps)
{
    const char *op = "wgt_batch_norm";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    char buf[128];
    if (!wgt_dtype_is_float(x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x has dtype %s, expected f32 or f16", op, wgt_dtype_name(x->view.dtype));
        return NULL;
    }
    if (x->view.ndim < 2) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x has shape %s, expected [N, C, ...]", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)));
        return NULL;
    }
    if (!(eps >= 0) || !isfinite(eps) || !(momentum >= 0 && momentum <= 1)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g must be finite and >= 0, momentum %g in [0, 1]", op, eps,
                  momentum);
        return NULL;
    }
    int64_t n = x->view.shape[0], c = x->view.shape[1];
    int64_t l = wgt_shape_numel(x->view.ndim - 2, x->view.shape + 2);
    if (!check_vector(ctx, running_mean, "running_mean", c, true, op) ||
        !check_vector(ctx, running_var, "running_var", c, true, op) || !check_vector(ctx, weight, "weight", c, false, op) ||
        !check_vector(ctx, bias, "bias", c, false, op))
        return NULL;
    if (!training && (!running_mean || !running_var)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eval mode (training = false) needs running_mean and running_var", op);
        return NULL;
    }
    if (training && n * l <= 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s has %lld value(s) per channel; training needs more than 1", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)), (long long)(n * l));
        return NULL;
    }
    if ((running_mean && wgt_op_check_inplace(ctx, running_mean, op) == false) ||
        (running_var && wgt_op_check_inplace(ctx, running_var, op) == false))
        return NULL;

    wgt_tensor *y = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, op);
    wgt_tensor *mean = NULL, *var = NULL;
    ctx->no_grad_depth++;
    if (y && training) {
        mean = wgt_tensor_alloc(ctx, WGT_F32, 1, &c, op);
        var = mean ? wgt_tensor_alloc(ctx, WGT_F32, 1, &c, op) : NULL;
    } else if (y) {
        mean = wgt_copy(running_mean);
        var = mean ? wgt_copy(running_var) : NULL;
    }
    wgt_tensor *xc = var ? wgt_contiguous(x) : NULL;
    wgt_tensor *wc = xc && weight ? wgt_contiguous(weight) : NULL, *bc = xc && bias ? wgt_contiguous(bias) : NULL;
    bool ok = xc && (!weight || wc) && (!bias || bc);
    if (ok && n * c * l > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_CONV;
        call.op_name = op;
        call.conv.kernel = WGT_BATCH_NORM_FORWARD;
        call.conv.n = n, call.conv.c = c, call.conv.h = l, call.conv.w = 1;
        call.conv.has_weight = weight != NULL, call.conv.has_bias = bias != NULL;
        call.conv.training = training;
        call.conv.eps = eps;
        call.inputs[call.n_inputs++] = ncl_view(xc, n, c, l);
        if (wc) call.inputs[call.n_inputs++] = wc->view;
        if (bc) call.inputs[call.n_inputs++] = bc->view;
        if (!training) call.inputs[call.n_inputs++] = mean->view, call.inputs[call.n_inputs++] = var->view;
        call.outputs[call.n_outputs++] = ncl_view(y, n, c, l);
        if (training) call.outputs[call.n_outputs++] = mean->view, call.outputs[call.n_outputs++] = var->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    if (ok && training) {
        double count = (double)(n * l);
        ok = update_running(running_mean, mean, momentum, 1.0) &&
             update_running(running_var, var, momentum, count / (count - 1.0));
    }
    ctx->no_grad_depth--;
    wgt_tensor_release(xc), wgt_tensor_release(wc), wgt_tensor_release(bc);
    wgt_tensor *args[3] = {x, weight, bias};
    if (ok && wgt_tape_wants(ctx, 3, args)) {
        wgt_grad_node *node = wgt_tape_record(y, WGT_OP_BATCH_NORM, 3, args);
        ok = node && wgt_tape_save(node, mean) && wgt_tape_save(node, var);
        if (node) {
            node->params.ints[0] = training;
            node->params.n_ints = 1;
            node->params.reals[0] = eps;
        }
    }
    wgt_tensor_release(mean), wgt_tensor_release(var);
    if (!ok) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}

wgt_status wgt_batch_norm_backward(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *mean, wgt_tensor *var,
                                   wgt_tensor *dy, bool training, double eps, wgt_tensor **dx, wgt_tensor **dweight,
                                   wgt_tensor **dbias)
{
    const char *op = "wgt_batch_norm backward";
    wgt_context *ctx = x->ctx;
    int64_t n = x->view.shape[0], c = x->view.shape[1];
    int64_t l = wgt_shape_numel(x->view.ndim - 2, x->view.shape + 2);
    if (dx) *dx = NULL;
    if (dweight) *dweight = NULL;
    if (dbias) *dbias = NULL;
    /* the kernel writes all three; unwanted ones are dropped below */
    wgt_tensor *gx = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, op);
    wgt_tensor *gw = gx ? wgt_tensor_alloc(ctx, WGT_F32, 1, &c, op) : NULL;
    wgt_tensor *gb = gw ? wgt_tensor_alloc(ctx, WGT_F32, 1, &c, op) : NULL;
    ctx->no_grad_depth++;
    wgt_tensor *xc = gb ? wgt_contiguous(x) : NULL, *dc = xc ? wgt_contiguous(dy) : NULL;
    wgt_tensor *wc = dc && weight ? wgt_contiguous(weight) : NULL;
    ctx->no_grad_depth--;
    wgt_status s = dc && (!weight || wc) ? WGT_OK : wgt_context_status(ctx);
    if (s == WGT_OK && n * c * l > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_CONV;
        call.op_name = op;
        call.conv.kernel = WGT_BATCH_NORM_BACKWARD;
        call.conv.n = n, call.conv.c = c, call.conv.h = l, call.conv.w = 1;
        call.conv.has_weight = weight != NULL;
        call.conv.training = training;
        call.conv.eps = eps;
        call.inputs[call.n_inputs++] = ncl_view(xc, n, c, l);
        if (wc) call.inputs[call.n_inputs++] = wc->view;
        call.inputs[call.n_inputs++] = mean->view;
        call.inputs[call.n_inputs++] = var->view;
        call.inputs[call.n_inputs++] = ncl_view(dc, n, c, l);
        call.n_outputs = 3;
        call.outputs[0] = ncl_view(gx, n, c, l);
        call.outputs[1] = gw->view;
        call.outputs[2] = gb->view;
        s = wgt_run_kernel(ctx, &call);
    }
    wgt_tensor_release(xc), wgt_tensor_release(dc), wgt_tensor_release(wc);
    if (s == WGT_OK && dx) *dx = gx, gx = NULL;
    if (s == WGT_OK && dweight) *dweight = gw, gw = NULL;
    if (s == WGT_OK && dbias) *dbias = gb, gb = NULL;
    wgt_tensor_release(gx), wgt_tensor_release(gw), wgt_tensor_release(gb);
    return s;
}

/* ------------------------------------------------------------ group norm */

/* Composite (no node of its own): the ops it is made of record theirs. */
wgt_tensor *wgt_group_norm(wgt_tensor *x, int64_t num_groups, wgt_tensor *weight, wgt_tensor *bias, double eps)
{
    const char *op = "wgt_group_norm";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    char buf[128];
    if (!wgt_dtype_is_float(x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x has dtype %s, expected f32 or f16", op, wgt_dtype_name(x->view.dtype));
        return NULL;
    }
    if (x->view.ndim < 2 || num_groups < 1 || x->view.shape[1] % num_groups != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s is not [N, C, ...] with C divisible by num_groups %lld", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)), (long long)num_groups);
        return NULL;
    }
    if (!(eps >= 0) || !isfinite(eps)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g must be finite and >= 0", op, eps);
        return NULL;
    }
    int64_t n = x->view.shape[0], c = x->view.shape[1];
    if (!check_vector(ctx, weight, "weight", c, false, op) || !check_vector(ctx, bias, "bias", c, false, op)) return NULL;
    int64_t rest = (c / num_groups) * wgt_shape_numel(x->view.ndim - 2, x->view.shape + 2);
    int64_t gshape[3] = {n, num_groups, rest}, vshape[WGT_MAX_DIMS];
    vshape[0] = c; /* weight and bias as [C, 1, ...] against x's dims after N */
    for (int d = 1; d < x->view.ndim - 1; d++) vshape[d] = 1;
    if (wgt_scope_push(ctx) != WGT_OK) return NULL;
    wgt_tensor *grouped = wgt_reshape(x, 3, gshape);
    wgt_tensor *normed = grouped ? wgt_layer_norm(grouped, NULL, NULL, eps) : NULL;
    wgt_tensor *y = normed ? wgt_reshape(normed, x->view.ndim, x->view.shape) : NULL;
    if (y && weight) {
        wgt_tensor *wv = wgt_reshape(weight, x->view.ndim - 1, vshape);
        y = wv ? wgt_mul(y, wv) : NULL;
    }
    if (y && bias) {
        wgt_tensor *bv = wgt_reshape(bias, x->view.ndim - 1, vshape);
        y = bv ? wgt_add(y, bv) : NULL;
    }
    /* the affine ops promote: keep x's dtype as PyTorch (an f32 weight on f16 x) */
    if (y && wgt_tensor_dtype(y) != x->view.dtype) y = wgt_cast(y, x->view.dtype);
    wgt_tensor *out = y ? wgt_scope_keep(y) : NULL;
    wgt_scope_pop(ctx);
    return out;
}
