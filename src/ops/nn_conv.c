/*
 * conv2d and conv_transpose2d front-ends (WGT_KERNEL_CONV), and the two
 * gradients they share.
 *
 *   conv2d:           x [N, C, H, W], w [K, C/g, KH, KW], bias [K]? -> [N, K, OH, OW]
 *   conv_transpose2d: x [N, C, H, W], w [C, K/g, KH, KW], bias [K]? -> [N, K, OH, OW]
 *
 * Three kernels do all the work: CONV_FORWARD, CONV_BACKWARD_INPUT (which is
 * the transposed convolution) and CONV_BACKWARD_WEIGHT. conv2d's backward is
 * (input grad, weight grad); conv_transpose2d's forward is the input grad of
 * the convolution whose output is x, and its backward is (forward, weight grad
 * with the roles of x and dy swapped). A 1x1 convolution with stride 1, no
 * padding and one group is a plain GEMM and goes to the MATMUL kernel
 * (y[n] = W x[n] with x[n] viewed as [C, H W]).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/tape.h"
#include "ops/conv_internal.h"
#include "ops/op_common.h"

/* Geometry values beyond this are refused before any arithmetic on them, so
 * the size formulas cannot overflow. */
#define CONV_MAX_PARAM ((int64_t)1 << 30)

static void grad_off(wgt_context *ctx) { ctx->no_grad_depth++; }
static void grad_on(wgt_context *ctx) { ctx->no_grad_depth--; }

void wgt_conv2d_options_init(wgt_conv2d_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->stride[0] = o->stride[1] = 1;
    o->dilation[0] = o->dilation[1] = 1;
    o->groups = 1;
}

void wgt_conv_geometry_to_ints(const wgt_conv_geometry *g, int64_t *v)
{
    int64_t a[WGT_CONV_GEOMETRY_INTS] = {g->stride_h, g->stride_w, g->pad_top, g->pad_bottom, g->pad_left, g->pad_right,
                                         g->dil_h, g->dil_w, g->groups, g->out_pad_h, g->out_pad_w};
    memcpy(v, a, sizeof(a));
}

wgt_conv_geometry wgt_conv_geometry_from_ints(const int64_t *v)
{
    wgt_conv_geometry g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]};
    return g;
}

/* The 4-D contiguous view of t (already contiguous) as [a, b, c, d]. */
static wgt_tensor_view view4(const wgt_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    wgt_tensor_view v = t->view;
    int64_t shape[4] = {a, b, c, d};
    v.ndim = 4;
    memcpy(v.shape, shape, sizeof(shape));
    wgt_contiguous_strides(4, v.shape, v.strides);
    return v;
}

static void fill_geometry(wgt_kernel_call *call, wgt_conv_kernel kernel, const wgt_conv_geometry *g, const char *op)
{
    memset(call, 0, sizeof(*call));
    call->kind = WGT_KERNEL_CONV;
    call->op_name = op;
    call->conv.kernel = kernel;
    call->conv.stride_h = g->stride_h, call->conv.stride_w = g->stride_w;
    call->conv.pad_top = g->pad_top, call->conv.pad_left = g->pad_left;
    call->conv.dil_h = g->dil_h, call->conv.dil_w = g->dil_w;
    call->conv.groups = g->groups;
}

static bool is_pointwise(const wgt_conv_geometry *g, int64_t kh, int64_t kw)
{
    return kh == 1 && kw == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_top == 0 && g->pad_bottom == 0 &&
           g->pad_left == 0 && g->pad_right == 0 && g->groups == 1;
}

/* bias [K] added per channel of y [N, K, ...] (the 1x1 GEMM path). */
static wgt_tensor *add_channel_bias(wgt_tensor *y, wgt_tensor *bias)
{
    int64_t shape[3] = {bias->view.shape[0], 1, 1};
    wgt_tensor *b3 = wgt_reshape(bias, 3, shape);
    wgt_tensor *out = b3 ? wgt_add(y, b3) : NULL;
    wgt_tensor_release(b3);
    return out;
}

/* --------------------------------------------------------------- kernels */

wgt_tensor *wgt_conv2d_run(wgt_tensor *x, wgt_tensor *w, wgt_tensor *bias, const wgt_conv_geometry *g,
                           const char *op)
{
    wgt_context *ctx = x->ctx;
    const int64_t *xs = x->view.shape, *ws = w->view.shape;
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], KH = ws[2], KW = ws[3];
    int64_t OH = (H + g->pad_top + g->pad_bottom - g->dil_h * (KH - 1) - 1) / g->stride_h + 1;
    int64_t OW = (W + g->pad_left + g->pad_right - g->dil_w * (KW - 1) - 1) / g->stride_w + 1;
    int64_t yshape[4] = {N, K, OH, OW};
    grad_off(ctx);
    wgt_tensor *y = NULL;
    if (is_pointwise(g, KH, KW)) {
        int64_t x3[3] = {N, C, H * W}, w2[2] = {K, C}, y4[4] = {N, K, H, W};
        wgt_tensor *xr = wgt_reshape(x, 3, x3), *wr = wgt_reshape(w, 2, w2);
        wgt_tensor *prod = xr && wr ? wgt_matmul(wr, xr) : NULL;
        wgt_tensor *y3 = prod ? wgt_view(prod, 4, y4) : NULL;
        /* y3 is returned as it is (no retain + release: a release takes a
         * tensor out of the caller's scope) */
        y = y3;
        if (y3 && bias) {
            y = add_channel_bias(y3, bias);
            wgt_tensor_release(y3);
        }
        wgt_tensor_release(xr), wgt_tensor_release(wr), wgt_tensor_release(prod);
        grad_on(ctx);
        return y;
    }
    y = wgt_tensor_alloc(ctx, x->view.dtype, 4, yshape, op);
    wgt_tensor *xc = y ? wgt_contiguous(x) : NULL, *wc = xc ? wgt_contiguous(w) : NULL;
    wgt_tensor *bc = wc && bias ? wgt_contiguous(bias) : NULL;
    grad_on(ctx);
    bool ok = wc && (!bias || bc);
    if (ok && wgt_shape_numel(4, yshape) > 0) {
        wgt_kernel_call call;
        fill_geometry(&call, WGT_CONV_FORWARD, g, op);
        call.conv.n = N, call.conv.c = C, call.conv.h = H, call.conv.w = W;
        call.conv.k = K, call.conv.oh = OH, call.conv.ow = OW, call.conv.kh = KH, call.conv.kw = KW;
        call.conv.has_bias = bias != NULL;
        call.inputs[call.n_inputs++] = view4(xc, N, C, H, W);
        call.inputs[call.n_inputs++] = view4(wc, K, C / g->groups, KH, KW);
        if (bc) call.inputs[call.n_inputs++] = bc->view;
        call.n_outputs = 1;
        call.outputs[0] = y->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(xc), wgt_tensor_release(wc), wgt_tensor_release(bc);
    if (!ok) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}

wgt_tensor *wgt_conv2d_input_grad(wgt_tensor *dy, wgt_tensor *w, int64_t h, int64_t w_size,
                                  const wgt_conv_geometry *g, const char *op)
{
    wgt_context *ctx = dy->ctx;
    const int64_t *ds = dy->view.shape, *ws = w->view.shape;
    int64_t N = ds[0], K = ds[1], OH = ds[2], OW = ds[3], C = ws[1] * g->groups, KH = ws[2], KW = ws[3];
    int64_t xshape[4] = {N, C, h, w_size};
    grad_off(ctx);
    wgt_tensor *dx = NULL;
    if (is_pointwise(g, KH, KW) && OH == h && OW == w_size) {
        int64_t d3[3] = {N, K, OH * OW}, w2[2] = {K, C};
        wgt_tensor *dr = wgt_reshape(dy, 3, d3), *wr = wgt_reshape(w, 2, w2);
        wgt_tensor *wt = wr ? wgt_transpose(wr, 0, 1) : NULL;
        wgt_tensor *prod = dr && wt ? wgt_matmul(wt, dr) : NULL;
        dx = prod ? wgt_view(prod, 4, xshape) : NULL;
        wgt_tensor_release(dr), wgt_tensor_release(wr), wgt_tensor_release(wt), wgt_tensor_release(prod);
        grad_on(ctx);
        return dx;
    }
    dx = wgt_tensor_alloc(ctx, dy->view.dtype, 4, xshape, op);
    wgt_tensor *dc = dx ? wgt_contiguous(dy) : NULL, *wc = dc ? wgt_contiguous(w) : NULL;
    grad_on(ctx);
    bool ok = wc != NULL;
    if (ok && wgt_shape_numel(4, xshape) > 0) {
        wgt_kernel_call call;
        fill_geometry(&call, WGT_CONV_BACKWARD_INPUT, g, op);
        call.conv.n = N, call.conv.c = C, call.conv.h = h, call.conv.w = w_size;
        call.conv.k = K, call.conv.oh = OH, call.conv.ow = OW, call.conv.kh = KH, call.conv.kw = KW;
        call.n_inputs = 2;
        call.inputs[0] = view4(dc, N, K, OH, OW);
        call.inputs[1] = view4(wc, K, C / g->groups, KH, KW);
        call.n_outputs = 1;
        call.outputs[0] = dx->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(dc), wgt_tensor_release(wc);
    if (!ok) {
        wgt_tensor_release(dx);
        return NULL;
    }
    return dx;
}

/* Splits of the weight gradient's reduction (N OH OW terms per weight), for
 * a GPU to get enough workgroups (a GEMM with a long K and a small output).
 * The WebGPU backend splits by itself (split-K into a temporary, knowing its
 * tiles), so this asks for one split unless WGT_CONV_SPLITK=0 turns its own
 * off (the former path, for comparison; ctx->conv_frontend_splits, read when
 * the context was created); the CPU reference sums in one. */
static int64_t weight_grad_splits(wgt_context *ctx, int64_t k_per_group, int64_t cols, int64_t groups, int64_t total)
{
    if (ctx->backend_kind == WGT_BACKEND_CPU || total <= 0 || !ctx->conv_frontend_splits) return 1;
    int64_t tiles = ((k_per_group + 63) / 64) * ((cols + 63) / 64) * groups;
    int64_t want = (512 + tiles - 1) / tiles; /* about 4 workgroups per SM of a large GPU */
    int64_t most = total / 256;               /* each split still sums at least 256 terms */
    if (want > most) want = most;
    if (want > 64) want = 64;
    return want < 1 ? 1 : want;
}

wgt_tensor *wgt_conv2d_weight_grad(wgt_tensor *x, wgt_tensor *dy, int64_t kh, int64_t kw, wgt_dtype dtype,
                                   const wgt_conv_geometry *g, const char *op)
{
    wgt_context *ctx = x->ctx;
    const int64_t *xs = x->view.shape, *ds = dy->view.shape;
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ds[1], OH = ds[2], OW = ds[3], cg = C / g->groups;
    int64_t wshape[4] = {K, cg, kh, kw};
    grad_off(ctx);
    wgt_tensor *dw = NULL;
    if (is_pointwise(g, kh, kw) && OH == H && OW == W) {
        /* sum over n of dy[n] [K, HW] x[n]^T [HW, C] */
        int64_t d3[3] = {N, K, H * W}, x3[3] = {N, C, H * W};
        wgt_tensor *dr = wgt_reshape(dy, 3, d3), *xr = wgt_reshape(x, 3, x3);
        wgt_tensor *xt = xr ? wgt_transpose(xr, 1, 2) : NULL;
        wgt_tensor *prod = dr && xt ? wgt_matmul(dr, xt) : NULL;
        int axis = 0;
        wgt_tensor *sum = prod ? wgt_sum(prod, &axis, 1, false) : NULL;
        dw = sum ? wgt_reshape(sum, 4, wshape) : NULL;
        wgt_tensor_release(dr), wgt_tensor_release(xr), wgt_tensor_release(xt), wgt_tensor_release(prod);
        wgt_tensor_release(sum);
        grad_on(ctx);
        if (dw && wgt_tensor_dtype(dw) != dtype) {
            wgt_tensor *c = wgt_cast(dw, dtype);
            wgt_tensor_release(dw);
            dw = c;
        }
        return dw;
    }
    int64_t total = N * OH * OW;
    int64_t splits = weight_grad_splits(ctx, K / g->groups, cg * kh * kw, g->groups, total);
    int64_t len = total > 0 ? (total + splits - 1) / splits : 1;
    splits = total > 0 ? (total + len - 1) / len : 1;
    int64_t pshape[5] = {splits, K, cg, kh, kw};
    wgt_tensor *partials = total > 0 ? wgt_tensor_alloc(ctx, WGT_F32, 5, pshape, op) : wgt_zeros(ctx, WGT_F32, 5, pshape);
    wgt_tensor *xc = partials ? wgt_contiguous(x) : NULL, *dc = xc ? wgt_contiguous(dy) : NULL;
    bool ok = dc != NULL;
    if (ok && total > 0 && wgt_shape_numel(4, wshape) > 0) {
        wgt_kernel_call call;
        fill_geometry(&call, WGT_CONV_BACKWARD_WEIGHT, g, op);
        call.conv.n = N, call.conv.c = C, call.conv.h = H, call.conv.w = W;
        call.conv.k = K, call.conv.oh = OH, call.conv.ow = OW, call.conv.kh = kh, call.conv.kw = kw;
        call.conv.split_len = len;
        call.n_inputs = 2;
        call.inputs[0] = view4(xc, N, C, H, W);
        call.inputs[1] = view4(dc, N, K, OH, OW);
        call.n_outputs = 1;
        call.outputs[0] = partials->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    if (ok) {
        int axis = 0;
        wgt_tensor *sum = splits > 1 ? wgt_sum(partials, &axis, 1, false) : wgt_reshape(partials, 4, wshape);
        dw = sum;
        if (sum && dtype != WGT_F32) {
            dw = wgt_cast(sum, dtype);
            wgt_tensor_release(sum);
        }
    }
    wgt_tensor_release(partials), wgt_tensor_release(xc), wgt_tensor_release(dc);
    grad_on(ctx);
    return dw;
}

/* ------------------------------------------------------------ validation */

static bool check_float4(wgt_context *ctx, wgt_tensor *t, const char *what, const char *op)
{
    char buf[128];
    if (!wgt_dtype_is_float(t->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s has dtype %s, expected f32 or f16", op, what, wgt_dtype_name(t->view.dtype));
        return false;
    }
    if (t->view.ndim != 4) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %s has shape %s, expected 4 dims (%s)", op, what,
                  wgt_shape_string(t->view.ndim, t->view.shape, buf, sizeof(buf)),
                  strcmp(what, "x") == 0 ? "N, C, H, W" : "out, in / groups, KH, KW");
        return false;
    }
    for (int i = 0; i < 4; i++)
        if (t->view.shape[i] > CONV_MAX_PARAM) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s has shape %s, a dim over 2^30", op, what,
                      wgt_shape_string(4, t->view.shape, buf, sizeof(buf)));
            return false;
        }
    return true;
}

/* Options -> geometry with every range check; false + error. */
static bool geometry_of(wgt_context *ctx, const wgt_conv2d_options *o, bool transposed, wgt_conv_geometry *g,
                        const char *op)
{
    wgt_conv2d_options d;
    if (!o) {
        wgt_conv2d_options_init(&d);
        o = &d;
    }
    for (int i = 0; i < 2; i++) {
        if (o->stride[i] < 1 || o->stride[i] > CONV_MAX_PARAM || o->dilation[i] < 1 || o->dilation[i] > CONV_MAX_PARAM) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: stride (%lld, %lld) and dilation (%lld, %lld) must be >= 1 (and <= 2^30)",
                      op, (long long)o->stride[0], (long long)o->stride[1], (long long)o->dilation[0],
                      (long long)o->dilation[1]);
            return false;
        }
        int64_t op_limit = o->stride[i] > o->dilation[i] ? o->stride[i] : o->dilation[i];
        if (o->output_padding[i] < 0 || (o->output_padding[i] > 0 && (!transposed || o->output_padding[i] >= op_limit))) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                      "%s: output_padding (%lld, %lld) must be >= 0, smaller than the stride or the dilation, and is for "
                      "conv_transpose2d only", op, (long long)o->output_padding[0], (long long)o->output_padding[1]);
            return false;
        }
    }
    for (int i = 0; i < 4; i++)
        if (o->padding[i] < 0 || o->padding[i] > CONV_MAX_PARAM) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: padding (%lld, %lld, %lld, %lld) must be in [0, 2^30]", op,
                      (long long)o->padding[0], (long long)o->padding[1], (long long)o->padding[2],
                      (long long)o->padding[3]);
            return false;
        }
    if (o->groups < 1 || o->groups > CONV_MAX_PARAM) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: groups %lld must be >= 1", op, (long long)o->groups);
        return false;
    }
    wgt_conv_geometry r = {o->stride[0], o->stride[1], o->padding[0], o->padding[1], o->padding[2], o->padding[3],
                           o->dilation[0], o->dilation[1], o->groups, o->output_padding[0], o->output_padding[1]};
    *g = r;
    return true;
}

/* Checks x, weight, bias of a (transposed) convolution; *k gets the output
 * channels. */
static bool check_conv_args(wgt_context *ctx, wgt_tensor *x, wgt_tensor *w, wgt_tensor *bias, const wgt_conv_geometry *g,
                            bool transposed, int64_t *k, const char *op)
{
    char b1[128], b2[128];
    if (w->ctx != ctx || (bias && bias->ctx != ctx)) {
        wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: weight or bias belongs to another context", op);
        return false;
    }
    if (!check_float4(ctx, x, "x", op) || !check_float4(ctx, w, "weight", op)) return false;
    if (w->view.dtype != x->view.dtype || (bias && bias->view.dtype != x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x is %s but weight is %s%s%s; all must share one dtype", op,
                  wgt_dtype_name(x->view.dtype), wgt_dtype_name(w->view.dtype), bias ? " and bias " : "",
                  bias ? wgt_dtype_name(bias->view.dtype) : "");
        return false;
    }
    const int64_t *xs = x->view.shape, *ws = w->view.shape;
    int64_t C = xs[1];
    if (C % g->groups != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s has %lld channels, not divisible by groups %lld", op,
                  wgt_shape_string(4, xs, b1, sizeof(b1)), (long long)C, (long long)g->groups);
        return false;
    }
    bool shape_ok;
    if (!transposed) {
        *k = ws[0];
        shape_ok = ws[1] == C / g->groups && ws[0] % g->groups == 0 && ws[0] > 0;
    } else {
        *k = ws[1] * g->groups;
        shape_ok = ws[0] == C && ws[1] > 0;
    }
    if (!shape_ok || ws[2] < 1 || ws[3] < 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                  "%s: weight %s does not match x %s with groups %lld: expected %s with a kernel of at least 1 x 1", op,
                  wgt_shape_string(4, ws, b1, sizeof(b1)), wgt_shape_string(4, xs, b2, sizeof(b2)), (long long)g->groups,
                  transposed ? "[C, K / groups, KH, KW]" : "[K, C / groups, KH, KW] with K divisible by groups");
        return false;
    }
    if (bias && (bias->view.ndim != 1 || bias->view.shape[0] != *k)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: bias has shape %s, expected [%lld] (the output channels)", op,
                  wgt_shape_string(bias->view.ndim, bias->view.shape, b1, sizeof(b1)), (long long)*k);
        return false;
    }
    if (C < 1 || xs[2] < 1 || xs[3] < 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s has an empty channel or spatial dim", op,
                  wgt_shape_string(4, xs, b1, sizeof(b1)));
        return false;
    }
    return true;
}

static void record(wgt_tensor **y, wgt_op opcode, wgt_tensor *x, wgt_tensor *w, wgt_tensor *bias,
                   const wgt_conv_geometry *g)
{
    wgt_tensor *args[3] = {x, w, bias};
    if (!*y || !wgt_tape_wants(x->ctx, 3, args)) return;
    wgt_grad_node *node = wgt_tape_record(*y, opcode, 3, args);
    if (!node) {
        wgt_tensor_release(*y);
        *y = NULL;
        return;
    }
    wgt_conv_geometry_to_ints(g, node->params.ints);
    node->params.n_ints = WGT_CONV_GEOMETRY_INTS;
}

/* ---------------------------------------------------------------- public */

wgt_tensor *wgt_conv2d(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, const wgt_conv2d_options *options)
{
    const char *op = "wgt_conv2d";
    wgt_tensor *args[2] = {x, weight};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    wgt_conv_geometry g;
    int64_t k;
    if (!geometry_of(ctx, options, false, &g, op) || !check_conv_args(ctx, x, weight, bias, &g, false, &k, op)) return NULL;
    const int64_t *xs = x->view.shape, *ws = weight->view.shape;
    int64_t eh = g.dil_h * (ws[2] - 1) + 1, ew = g.dil_w * (ws[3] - 1) + 1;
    int64_t ph = xs[2] + g.pad_top + g.pad_bottom, pw = xs[3] + g.pad_left + g.pad_right;
    if (eh > ph || ew > pw) {
        char b1[128], b2[128];
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                  "%s: the kernel %lld x %lld (dilated: %lld x %lld) of weight %s is larger than the padded input %lld x "
                  "%lld of x %s: the output would be empty", op, (long long)ws[2], (long long)ws[3], (long long)eh,
                  (long long)ew, wgt_shape_string(4, ws, b1, sizeof(b1)), (long long)ph, (long long)pw,
                  wgt_shape_string(4, xs, b2, sizeof(b2)));
        return NULL;
    }
    wgt_tensor *y = wgt_conv2d_run(x, weight, bias, &g, op);
    record(&y, WGT_OP_CONV2D, x, weight, bias, &g);
    return y;
}

wgt_tensor *wgt_conv_transpose2d(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, const wgt_conv2d_options *options)
{
    const char *op = "wgt_conv_transpose2d";
    wgt_tensor *args[2] = {x, weight};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    wgt_conv_geometry g;
    int64_t k;
    if (!geometry_of(ctx, options, true, &g, op) || !check_conv_args(ctx, x, weight, bias, &g, true, &k, op)) return NULL;
    const int64_t *xs = x->view.shape, *ws = weight->view.shape;
    int64_t oh = (xs[2] - 1) * g.stride_h - g.pad_top - g.pad_bottom + g.dil_h * (ws[2] - 1) + g.out_pad_h + 1;
    int64_t ow = (xs[3] - 1) * g.stride_w - g.pad_left - g.pad_right + g.dil_w * (ws[3] - 1) + g.out_pad_w + 1;
    if (oh < 1 || ow < 1) {
        char b1[128], b2[128];
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s with weight %s gives an empty output %lld x %lld (padding too large)",
                  op, wgt_shape_string(4, xs, b1, sizeof(b1)), wgt_shape_string(4, ws, b2, sizeof(b2)), (long long)oh,
                  (long long)ow);
        return NULL;
    }
    /* the convolution whose input gradient this is maps [N, K, oh, ow] to x */
    wgt_tensor *y = wgt_conv2d_input_grad(x, weight, oh, ow, &g, op);
    if (y && bias) {
        grad_off(ctx);
        wgt_tensor *yb = add_channel_bias(y, bias);
        grad_on(ctx);
        wgt_tensor_release(y);
        y = yb;
    }
    record(&y, WGT_OP_CONV_TRANSPOSE2D, x, weight, bias, &g);
    return y;
}
