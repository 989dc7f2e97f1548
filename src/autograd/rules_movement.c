/*
 * Gradients of views and data movement: each routes grad_out back to where
 * the input's elements went. Views reshape, permute back, or scatter into a
 * zero tensor of the source's shape (slice); broadcasts sum (expand); gathers
 * scatter-add (gather, index_select, topk); concat and pad slice.
 */
#include "autograd/rules.h"
#include "ops/op_common.h"

static wgt_status result(wgt_tensor **slot, wgt_tensor *t, wgt_context *ctx)
{
    *slot = t;
    return t ? WGT_OK : ctx->status;
}

static wgt_tensor *zeros_like(const wgt_tensor *x)
{
    return wgt_zeros(x->ctx, WGT_F32, x->view.ndim, x->view.shape);
}

wgt_status wgt_backward_view(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    const wgt_tensor *x = node->inputs[0];
    return result(&grads[0], wgt_reshape(g, x->view.ndim, x->view.shape), g->ctx);
}

/* out dim i is input dim order[i]: permute back with the inverse. */
wgt_status wgt_backward_permute(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    int inverse[WGT_MAX_DIMS];
    for (int i = 0; i < g->view.ndim; i++) inverse[node->params.ints[i]] = i;
    return result(&grads[0], wgt_permute(g, inverse), g->ctx);
}

/* ints: axis, start, step of the slice; the gradient is g placed there in zeros. */
wgt_status wgt_backward_slice(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    wgt_context *ctx = g->ctx;
    int axis = (int)node->params.ints[0];
    int64_t start = node->params.ints[1], step = node->params.ints[2], len = g->view.shape[axis];
    /* the whole axis (positions 0..T of a block_size-T table): g is the
     * gradient; a leaf gets its own copy, so no two .grad share a buffer */
    if (start == 0 && step == 1 && len == node->inputs[0]->view.shape[axis])
        return result(&grads[0], node->inputs[0]->grad_node ? g : wgt_copy(g), ctx);
    wgt_tensor *z = zeros_like(node->inputs[0]);
    if (!z) return ctx->status;
    if (len > 0) {
        wgt_tensor *window = wgt_slice(z, axis, start, start + (len - 1) * step + 1, step);
        if (!window || wgt_assign(window, g) != WGT_OK) return ctx->status;
    }
    return result(&grads[0], z, ctx);
}

wgt_status wgt_backward_expand(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    const wgt_tensor *x = node->inputs[0];
    return result(&grads[0], wgt_grad_sum_to_shape(g, x->view.ndim, x->view.shape), g->ctx);
}

/* ints[0]: axis; input i gets its own stretch of g along it. */
wgt_status wgt_backward_concat(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    int axis = (int)node->params.ints[0];
    int64_t at = 0;
    for (int i = 0; i < node->n_inputs; i++) {
        int64_t size = node->inputs[i]->view.shape[axis];
        if (wgt_autograd_input_needs_grad(node, i)) {
            grads[i] = wgt_slice(g, axis, at, at + size, 1);
            if (!grads[i]) return g->ctx->status;
        }
        at += size;
    }
    return WGT_OK;
}

/* inputs: x, index; ints[0]: axis. */
wgt_status wgt_backward_gather(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    int axis = (int)node->params.ints[0];
    return result(&grads[0], wgt_scatter_add_zeros(node->inputs[0], axis, node->inputs[1], g), g->ctx);
}

/* inputs: x, index [n]; ints[0]: axis. The index is broadcast to g's shape. */
wgt_status wgt_backward_index_select(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    int axis = (int)node->params.ints[0];
    wgt_tensor *index = node->inputs[1];
    int64_t shape[WGT_MAX_DIMS];
    for (int d = 0; d < g->view.ndim; d++) shape[d] = d == axis ? index->view.shape[0] : 1;
    wgt_tensor *column = wgt_view(index, g->view.ndim, shape);
    wgt_tensor *spread = column ? wgt_expand(column, g->view.ndim, g->view.shape) : NULL;
    return result(&grads[0], spread ? wgt_scatter_add_zeros(node->inputs[0], axis, spread, g) : NULL, g->ctx);
}

/* inputs: dst, index, src; ints[0]: axis. */
wgt_status wgt_backward_scatter_add(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    int axis = (int)node->params.ints[0];
    if (wgt_autograd_input_needs_grad(node, 0)) grads[0] = g;
    if (wgt_autograd_input_needs_grad(node, 2))
        return result(&grads[2], wgt_gather(g, axis, node->inputs[1]), g->ctx);
    return WGT_OK;
}

/* ints[d]: padding before dim d; the gradient is g's middle. */
wgt_status wgt_backward_pad(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    const wgt_tensor *x = node->inputs[0];
    wgt_tensor *inner = g; /* the slices belong to the rule's scope */
    for (int d = 0; d < x->view.ndim && inner; d++) {
        int64_t before = node->params.ints[d];
        inner = wgt_slice(inner, d, before, before + x->view.shape[d], 1);
    }
    return result(&grads[0], inner, g->ctx);
}

/* values' gradient goes back to the positions the saved indices name. */
wgt_status wgt_backward_topk(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    return result(&grads[0], wgt_scatter_add_zeros(node->inputs[0], -1, node->saved[0], g), g->ctx);
}
