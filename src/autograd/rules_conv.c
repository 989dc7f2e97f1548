/*
 * Backward rules of the convolution family: conv2d, conv_transpose2d,
 * max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm. Each calls the
 * family's kernels through src/ops/conv_internal.h (which documents what the
 * forward saved on the node).
 */
#include "autograd/rules.h"
#include "ops/conv_internal.h"

/* g in dtype (a new reference; g itself when it already has it). */
static wgt_tensor *as_dtype(wgt_tensor *g, wgt_dtype dtype)
{
    if (!g || wgt_tensor_dtype(g) == dtype) return g;
    wgt_tensor *c = wgt_cast(g, dtype);
    wgt_tensor_release(g);
    return c;
}

/* The bias gradient of a convolution: dy summed over N, OH, OW. */
static wgt_tensor *channel_sums(wgt_tensor *dy)
{
    int axes[3] = {0, 2, 3};
    return wgt_sum(dy, axes, 3, false);
}

/* inputs {x, weight, bias|NULL}; ints: the geometry */
wgt_status wgt_backward_conv2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0], *w = node->inputs[1];
    wgt_conv_geometry g = wgt_conv_geometry_from_ints(node->params.ints);
    const int64_t *xs = wgt_tensor_shape(x), *ws = wgt_tensor_shape(w);
    if (wgt_autograd_input_needs_grad(node, 0) &&
        !(grad_inputs[0] = wgt_conv2d_input_grad(grad_out, w, xs[2], xs[3], &g, "wgt_conv2d backward")))
        return wgt_context_status(x->ctx);
    if (wgt_autograd_input_needs_grad(node, 1) &&
        !(grad_inputs[1] = wgt_conv2d_weight_grad(x, grad_out, ws[2], ws[3], wgt_tensor_dtype(w), &g,
                                                  "wgt_conv2d backward")))
        return wgt_context_status(x->ctx);
    if (wgt_autograd_input_needs_grad(node, 2) &&
        !(grad_inputs[2] = as_dtype(channel_sums(grad_out), wgt_tensor_dtype(node->inputs[2]))))
        return wgt_context_status(x->ctx);
    return WGT_OK;
}

/* inputs {x, weight, bias|NULL}: y = the input gradient of the convolution
 * that maps y's shape to x's, so dx = that convolution of dy, and dweight is
 * its weight gradient with x in the role of the convolution's dy. */
wgt_status wgt_backward_conv_transpose2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0], *w = node->inputs[1];
    wgt_conv_geometry g = wgt_conv_geometry_from_ints(node->params.ints);
    const int64_t *ws = wgt_tensor_shape(w);
    if (wgt_autograd_input_needs_grad(node, 0) &&
        !(grad_inputs[0] = wgt_conv2d_run(grad_out, w, NULL, &g, "wgt_conv_transpose2d backward")))
        return wgt_context_status(x->ctx);
    if (wgt_autograd_input_needs_grad(node, 1) &&
        !(grad_inputs[1] = wgt_conv2d_weight_grad(grad_out, x, ws[2], ws[3], wgt_tensor_dtype(w), &g,
                                                  "wgt_conv_transpose2d backward")))
        return wgt_context_status(x->ctx);
    if (wgt_autograd_input_needs_grad(node, 2) &&
        !(grad_inputs[2] = as_dtype(channel_sums(grad_out), wgt_tensor_dtype(node->inputs[2]))))
        return wgt_context_status(x->ctx);
    return WGT_OK;
}

/* inputs {x}; saved[0] argmax (max pooling); ints: the pool geometry */
wgt_status wgt_backward_pool2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0];
    wgt_pool_geometry g = wgt_pool_geometry_from_ints(node->params.ints);
    grad_inputs[0] = wgt_pool2d_backward(grad_out, g.mode == WGT_POOL_MAX ? node->saved[0] : NULL, wgt_tensor_shape(x),
                                         wgt_tensor_dtype(x), &g, "wgt_pool2d backward");
    return grad_inputs[0] ? WGT_OK : wgt_context_status(x->ctx);
}

/* inputs {x, weight|NULL, bias|NULL}; saved mean, var; ints[0] training; reals[0] eps */
wgt_status wgt_backward_batch_norm(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0], *w = node->inputs[1], *b = node->inputs[2];
    bool need_w = wgt_autograd_input_needs_grad(node, 1), need_b = wgt_autograd_input_needs_grad(node, 2);
    wgt_tensor *dw = NULL, *db = NULL;
    wgt_status s = wgt_batch_norm_backward(x, w, node->saved[0], node->saved[1], grad_out, node->params.ints[0] != 0,
                                           node->params.reals[0],
                                           wgt_autograd_input_needs_grad(node, 0) ? &grad_inputs[0] : NULL,
                                           need_w ? &dw : NULL, need_b ? &db : NULL);
    if (s != WGT_OK) return s;
    if (need_w && !(grad_inputs[1] = as_dtype(dw, wgt_tensor_dtype(w)))) return wgt_context_status(x->ctx);
    if (need_b && !(grad_inputs[2] = as_dtype(db, wgt_tensor_dtype(b)))) return wgt_context_status(x->ctx);
    return WGT_OK;
}
