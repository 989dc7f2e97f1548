/*
 * Pooling front-ends (WGT_KERNEL_CONV, POOL_FORWARD / POOL_BACKWARD).
 *
 *   max_pool2d:          x [N, C, H, W] -> [N, C, OH, OW] (+ argmax saved for backward)
 *   avg_pool2d:          x [N, C, H, W] -> [N, C, OH, OW]
 *   adaptive_avg_pool2d: x [N, C, H, W] -> [N, C, out_h, out_w]
 *
 * The window arithmetic is PyTorch's (aten/src/ATen/native/Pool.h and the CPU
 * kernels): output size with floor or ceil mode, windows clipped to the input
 * (max, avg) or to the input plus padding (avg's divisor with
 * count_include_pad). Backward gathers: each input element sums the gradients
 * of the windows that chose it (max) or contain it (avg), so the GPU needs no
 * atomics.
 */
#include <string.h>

#include "core/tape.h"
#include "ops/conv_internal.h"
#include "ops/op_common.h"

#define POOL_MAX_PARAM ((int64_t)1 << 30)

void wgt_pool2d_options_init(wgt_pool2d_options *o, int64_t kh, int64_t kw)
{
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->kernel[0] = kh, o->kernel[1] = kw;
    o->dilation[0] = o->dilation[1] = 1;
    o->count_include_pad = true;
}

void wgt_pool_geometry_to_ints(const wgt_pool_geometry *g, int64_t *v)
{
    int64_t a[WGT_POOL_GEOMETRY_INTS] = {g->mode, g->kh, g->kw, g->stride_h, g->stride_w, g->pad_h,
                                         g->pad_w, g->dil_h, g->dil_w, g->count_include_pad, g->out_h, g->out_w};
    memcpy(v, a, sizeof(a));
}

wgt_pool_geometry wgt_pool_geometry_from_ints(const int64_t *v)
{
    wgt_pool_geometry g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]};
    return g;
}

static void fill_call(wgt_kernel_call *call, wgt_conv_kernel kernel, const wgt_pool_geometry *g, const int64_t *xs,
                      const char *op)
{
    memset(call, 0, sizeof(*call));
    call->kind = WGT_KERNEL_CONV;
    call->op_name = op;
    call->conv.kernel = kernel;
    call->conv.pool_mode = (wgt_pool_mode)g->mode;
    call->conv.n = xs[0], call->conv.c = xs[1], call->conv.h = xs[2], call->conv.w = xs[3];
    call->conv.k = xs[1], call->conv.oh = g->out_h, call->conv.ow = g->out_w;
    call->conv.kh = g->kh, call->conv.kw = g->kw;
    call->conv.stride_h = g->stride_h, call->conv.stride_w = g->stride_w;
    call->conv.pad_top = g->pad_h, call->conv.pad_left = g->pad_w;
    call->conv.dil_h = g->dil_h, call->conv.dil_w = g->dil_w;
    call->conv.groups = 1;
    call->conv.count_include_pad = g->count_include_pad != 0;
}

/* pooling_output_shape of PyTorch: floor or ceil, and with ceil the last
 * window must start inside the input or the left padding. */
static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode)
{
    int64_t span = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    if (span < 0) return 0; /* the kernel does not fit */
    int64_t out = span / stride + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

static bool check_x(wgt_context *ctx, wgt_tensor *x, const char *op)
{
    char buf[128];
    if (!wgt_dtype_is_float(x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x has dtype %s, expected f32 or f16", op, wgt_dtype_name(x->view.dtype));
        return false;
    }
    if (x->view.ndim != 4 || x->view.shape[2] < 1 || x->view.shape[3] < 1 || x->view.shape[2] > POOL_MAX_PARAM ||
        x->view.shape[3] > POOL_MAX_PARAM) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x has shape %s, expected [N, C, H, W] with H, W in [1, 2^30]", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)));
        return false;
    }
    return true;
}

/* Runs the forward kernel and records the node. */
static wgt_tensor *pool_forward(wgt_tensor *x, const wgt_pool_geometry *g, wgt_op opcode, const char *op)
{
    wgt_context *ctx = x->ctx;
    const int64_t *xs = x->view.shape;
    int64_t yshape[4] = {xs[0], xs[1], g->out_h, g->out_w};
    bool max = g->mode == WGT_POOL_MAX;
    wgt_tensor *y = wgt_tensor_alloc(ctx, x->view.dtype, 4, yshape, op);
    wgt_tensor *arg = y && max ? wgt_tensor_alloc(ctx, WGT_I32, 4, yshape, op) : NULL;
    ctx->no_grad_depth++;
    wgt_tensor *xc = y && (!max || arg) ? wgt_contiguous(x) : NULL;
    ctx->no_grad_depth--;
    bool ok = xc != NULL;
    if (ok && wgt_shape_numel(4, yshape) > 0) {
        wgt_kernel_call call;
        fill_call(&call, WGT_POOL_FORWARD, g, xs, op);
        call.n_inputs = 1;
        call.inputs[0] = xc->view;
        call.n_outputs = max ? 2 : 1;
        call.outputs[0] = y->view;
        if (max) call.outputs[1] = arg->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(xc);
    if (ok && wgt_tape_wants(ctx, 1, &x)) {
        wgt_grad_node *node = wgt_tape_record(y, opcode, 1, &x);
        ok = node && (!max || wgt_tape_save(node, arg));
        if (node) {
            wgt_pool_geometry_to_ints(g, node->params.ints);
            node->params.n_ints = WGT_POOL_GEOMETRY_INTS;
        }
    }
    wgt_tensor_release(arg);
    if (!ok) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}

static wgt_tensor *windowed_pool(wgt_tensor *x, const wgt_pool2d_options *o, bool max, const char *op)
{
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if (!o) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: options is NULL (the kernel size is required)", op);
        return NULL;
    }
    if (!check_x(ctx, x, op)) return NULL;
    wgt_pool_geometry g = {max ? WGT_POOL_MAX : WGT_POOL_AVG, o->kernel[0], o->kernel[1],
                           o->stride[0] ? o->stride[0] : o->kernel[0], o->stride[1] ? o->stride[1] : o->kernel[1],
                           o->padding[0], o->padding[1], max ? o->dilation[0] : 1, max ? o->dilation[1] : 1,
                           o->count_include_pad, 0, 0};
    char buf[128];
    for (int i = 0; i < 2; i++) {
        int64_t k = i ? g.kw : g.kh, s = i ? g.stride_w : g.stride_h, p = i ? g.pad_w : g.pad_h;
        int64_t d = i ? g.dil_w : g.dil_h;
        if (k < 1 || k > POOL_MAX_PARAM || s < 1 || s > POOL_MAX_PARAM || d < 1 || d > POOL_MAX_PARAM || p < 0 ||
            (max && o->dilation[i] < 1)) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                      "%s: kernel (%lld, %lld), stride (%lld, %lld) and dilation (%lld, %lld) must be in [1, 2^30] "
                      "(stride 0: the kernel size), padding (%lld, %lld) >= 0",
                      op, (long long)o->kernel[0], (long long)o->kernel[1], (long long)o->stride[0],
                      (long long)o->stride[1], (long long)o->dilation[0], (long long)o->dilation[1],
                      (long long)o->padding[0], (long long)o->padding[1]);
            return NULL;
        }
        int64_t effective = max ? d * (k - 1) + 1 : k;
        if (p > effective / 2) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                      "%s: padding %lld is more than half the (dilated) kernel %lld along %s (as PyTorch refuses)", op,
                      (long long)p, (long long)effective, i ? "w" : "h");
            return NULL;
        }
    }
    const int64_t *xs = x->view.shape;
    g.out_h = pooled_size(xs[2], g.kh, g.pad_h, g.stride_h, g.dil_h, o->ceil_mode);
    g.out_w = pooled_size(xs[3], g.kw, g.pad_w, g.stride_w, g.dil_w, o->ceil_mode);
    if (g.out_h < 1 || g.out_w < 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                  "%s: the kernel %lld x %lld (dilation %lld, %lld; padding %lld, %lld) is larger than the padded input "
                  "of x %s: the output would be empty",
                  op, (long long)g.kh, (long long)g.kw, (long long)g.dil_h, (long long)g.dil_w, (long long)g.pad_h,
                  (long long)g.pad_w, wgt_shape_string(4, xs, buf, sizeof(buf)));
        return NULL;
    }
    return pool_forward(x, &g, max ? WGT_OP_MAX_POOL2D : WGT_OP_AVG_POOL2D, op);
}

wgt_tensor *wgt_max_pool2d(wgt_tensor *x, const wgt_pool2d_options *options)
{
    return windowed_pool(x, options, true, "wgt_max_pool2d");
}

wgt_tensor *wgt_avg_pool2d(wgt_tensor *x, const wgt_pool2d_options *options)
{
    return windowed_pool(x, options, false, "wgt_avg_pool2d");
}

wgt_tensor *wgt_adaptive_avg_pool2d(wgt_tensor *x, int64_t out_h, int64_t out_w)
{
    const char *op = "wgt_adaptive_avg_pool2d";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if (!check_x(ctx, x, op)) return NULL;
    if (out_h < 1 || out_w < 1 || out_h > POOL_MAX_PARAM || out_w > POOL_MAX_PARAM) {
        char buf[128];
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: output size %lld x %lld for x %s must be in [1, 2^30]", op,
                  (long long)out_h, (long long)out_w, wgt_shape_string(4, x->view.shape, buf, sizeof(buf)));
        return NULL;
    }
    wgt_pool_geometry g = {WGT_POOL_ADAPTIVE_AVG, 1, 1, 1, 1, 0, 0, 1, 1, 0, out_h, out_w};
    return pool_forward(x, &g, WGT_OP_ADAPTIVE_AVG_POOL2D, op);
}

wgt_tensor *wgt_pool2d_backward(wgt_tensor *dy, wgt_tensor *argmax, const int64_t *x_shape, wgt_dtype dtype,
                                const wgt_pool_geometry *g, const char *op)
{
    wgt_context *ctx = dy->ctx;
    wgt_tensor *dx = wgt_tensor_alloc(ctx, dtype, 4, x_shape, op);
    ctx->no_grad_depth++;
    wgt_tensor *dc = dx ? wgt_contiguous(dy) : NULL;
    wgt_tensor *ac = dc && argmax ? wgt_contiguous(argmax) : NULL;
    ctx->no_grad_depth--;
    bool ok = dc && (!argmax || ac);
    if (ok && wgt_shape_numel(4, x_shape) > 0) {
        wgt_kernel_call call;
        fill_call(&call, WGT_POOL_BACKWARD, g, x_shape, op);
        call.inputs[call.n_inputs++] = dc->view;
        if (ac) call.inputs[call.n_inputs++] = ac->view;
        call.n_outputs = 1;
        call.outputs[0] = dx->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(dc), wgt_tensor_release(ac);
    if (!ok) {
        wgt_tensor_release(dx);
        return NULL;
    }
    return dx;
}
