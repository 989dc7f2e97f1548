/*
 * Backward rules of linear, scaled_dot_product_attention and rope.
 *   linear     x [..., in], weight [out, in], bias [out] | NULL; written with
 *              public ops: dx = dy @ weight, dweight = dy^T x (the transposed
 *              dy read in place), dbias = sum of dy over the rows
 *   gelu_linear  linear's of gelu(h) (saved), with dh = (dy @ weight) *
 *              gelu'(h) in one product (ops/linear_internal.h)
 *   attention  the fused backward kernels (src/ops/attention_internal.h) from
 *              the saved output and row logsumexp, written into the views the
 *              engine hands (windows of a fused q/k/v projection's gradient)
 *   rope       rope with the angles negated (a rotation's transpose)
 */
#include "autograd/rules.h"
#include "ops/attention_internal.h"
#include "ops/linear_internal.h"

/* dy [..., out] as [rows, out] and x [..., in] as [rows, in] (contiguous copies
 * only when the views cannot be folded). */
static wgt_tensor *rows_of(wgt_tensor *t)
{
    int nd = wgt_tensor_ndim(t);
    const int64_t *shape = wgt_tensor_shape(t);
    int64_t last = shape[nd - 1], rows = 1;
    for (int d = 0; d + 1 < nd; d++) rows *= shape[d];
    int64_t two[2] = {rows, last};
    return wgt_reshape(t, 2, two);
}

/* dweight = dy^T x and dbias = the row sums of dy, as each is needed
 * (grad_inputs[1], grad_inputs[2]) */
static wgt_status weight_and_bias_grads(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor *x,
                                        wgt_tensor **grad_inputs)
{
    wgt_context *ctx = x->ctx;
    bool need_w = wgt_autograd_input_needs_grad(node, 1), need_b = wgt_autograd_input_needs_grad(node, 2);
    if (!need_w && !need_b) return WGT_OK;
    wgt_tensor *g2 = rows_of(grad_out);
    if (!g2) return ctx->status;
    if (need_w) {
        wgt_tensor *x2 = rows_of(x), *gt = x2 ? wgt_transpose(g2, 0, 1) : NULL;
        grad_inputs[1] = gt ? wgt_matmul(gt, x2) : NULL; /* [out, rows] x [rows, in] */
        wgt_tensor_release(gt);
        wgt_tensor_release(x2);
    }
    if (need_b && (!need_w || grad_inputs[1])) {
        int axis = 0;
        grad_inputs[2] = wgt_sum(g2, &axis, 1, false);
    }
    wgt_tensor_release(g2);
    return ctx->status;
}

/* inputs {x, weight, bias|NULL} */
wgt_status wgt_backward_linear(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0], *w = node->inputs[1];
    if (wgt_autograd_input_needs_grad(node, 0) && !(grad_inputs[0] = wgt_matmul(grad_out, w))) return x->ctx->status;
    return weight_and_bias_grads(node, grad_out, x, grad_inputs);
}

/* inputs {h, weight, bias|NULL}; saved[0] gelu(h) */
wgt_status wgt_backward_gelu_linear(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *h = node->inputs[0], *w = node->inputs[1];
    if (wgt_autograd_input_needs_grad(node, 0) && !(grad_inputs[0] = wgt_gelu_linear_input_grad(grad_out, w, h)))
        return h->ctx->status;
    return weight_and_bias_grads(node, grad_out, node->saved[0], grad_inputs);
}

/* inputs {q, k, v}; saved[0] out, saved[1] lse; ints[0] causal, ints[1] seed,
 * reals[0] dropout_p. grad_inputs[i] may come set: a view of its window of
 * the source's gradient (backward.c, window destinations), to write into. */
wgt_status wgt_backward_attention(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor **dst[3], *into[3];
    for (int i = 0; i < 3; i++) {
        dst[i] = wgt_autograd_input_needs_grad(node, i) ? &grad_inputs[i] : NULL;
        into[i] = grad_inputs[i];
        grad_inputs[i] = NULL;
    }
    return wgt_attention_backward_into(node->inputs[0], node->inputs[1], node->inputs[2], node->saved[0],
                                       node->saved[1], grad_out, node->params.ints[0] != 0, node->params.reals[0],
                                       (uint64_t)node->params.ints[1], into, dst[0], dst[1], dst[2]);
}

/* inputs {x}; ints[0] position_offset, ints[1] interleaved, reals[0] theta */
wgt_status wgt_backward_rope(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    grad_inputs[0] = wgt_rope_ex(grad_out, node->params.ints[0], node->params.reals[0], node->params.ints[1] != 0, true);
    return grad_inputs[0] ? WGT_OK : node->inputs[0]->ctx->status;
}
