/*
 * Backward rules of the fused neural-network ops: layer_norm, rms_norm,
 * cross_entropy, mse_loss, dropout. Each calls the op's backward kernels in
 * src/ops (nn_internal.h documents what the forward saved on the node).
 */
#include "autograd/rules.h"
#include "ops/nn_internal.h"

/* g in dtype (a new reference; g itself when it already has it). */
static wgt_tensor *as_dtype(wgt_tensor *g, wgt_dtype dtype)
{
    if (!g || wgt_tensor_dtype(g) == dtype) return g;
    wgt_tensor *c = wgt_cast(g, dtype);
    wgt_tensor_release(g);
    return c;
}

/* inputs {x, weight|NULL, bias|NULL (layer_norm only)}, saved[0] stats.
 * grad_inputs[0] may come set (wgt_backward_rule_accumulates): x's gradient
 * so far, which dx is added to in place and which stays in grad_inputs[0]. */
wgt_status wgt_backward_norm(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    bool rms = node->op == WGT_OP_RMS_NORM;
    wgt_tensor *x = node->inputs[0], *w = node->inputs[1];
    bool need_w = wgt_autograd_input_needs_grad(node, 1);
    bool need_b = !rms && wgt_autograd_input_needs_grad(node, 2);
    wgt_tensor *dw = NULL, *db = NULL, *into = grad_inputs[0];
    wgt_status s = wgt_norm_backward(x, w, node->saved[0], grad_out, rms,
                                     into || wgt_autograd_input_needs_grad(node, 0) ? &grad_inputs[0] : NULL, into,
                                     need_w ? &dw : NULL, need_b ? &db : NULL);
    if (s != WGT_OK) return s;
    /* dweight, dbias are f32 sums; a parameter's gradient has its dtype */
    if (need_w && !(grad_inputs[1] = as_dtype(dw, wgt_tensor_dtype(w)))) return wgt_context_status(x->ctx);
    if (need_b && !(grad_inputs[2] = as_dtype(db, wgt_tensor_dtype(node->inputs[2])))) return wgt_context_status(x->ctx);
    return WGT_OK;
}

/* inputs {x, h}; saved[0] the mask (i32 words, DROPOUT_ADD's layout);
 * reals[0] p. x's gradient is the output's (handed on as it is to an
 * intermediate, as the fused add's rule does; a leaf gets a copy, its .grad
 * must not alias), h's the output's through the mask (f32). */
wgt_status wgt_backward_dropout_add(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    wgt_tensor *x = node->inputs[0]; /* x, h and the output are f32 (nn_loss.c records this op only then) */
    if (wgt_autograd_input_needs_grad(node, 0)) {
        /* wgt_cast: a fresh f32 copy (a leaf's, or of an f16 grad_output of wgt_backward_ex) */
        bool pass = x->grad_node && grad_out->view.dtype == WGT_F32;
        grad_inputs[0] = pass ? wgt_grad_sum_to_shape(grad_out, x->view.ndim, x->view.shape) : wgt_cast(grad_out, WGT_F32);
        if (!grad_inputs[0]) return wgt_context_status(grad_out->ctx);
    }
    if (wgt_autograd_input_needs_grad(node, 1)) {
        grad_inputs[1] = wgt_dropout_masked(grad_out, node->saved[0], node->params.reals[0]);
        if (!grad_inputs[1]) return wgt_context_status(grad_out->ctx);
    }
    return WGT_OK;
}

/* inputs {logits, targets}; saved[0] lse, saved[1] count (MEAN);
 * ints[0] reduction, ints[1] ignore_index */
wgt_status wgt_backward_cross_entropy(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    wgt_tensor *logits = node->inputs[0];
    /* MEAN: the per-row scale is grad / count; grad_out is the engine's, never released here */
    wgt_tensor *scaled = node->params.ints[0] == WGT_REDUCTION_MEAN ? wgt_div(grad_out, node->saved[1]) : NULL;
    if (node->params.ints[0] == WGT_REDUCTION_MEAN && !scaled) return wgt_context_status(logits->ctx);
    grad_inputs[0] = wgt_cross_entropy_backward(logits, node->inputs[1], node->saved[0], scaled ? scaled : grad_out,
                                                node->params.ints[1]);
    wgt_tensor_release(scaled);
    return grad_inputs[0] ? WGT_OK : wgt_context_status(logits->ctx);
}

/* inputs {input, target}; ints[0] reduction */
wgt_status wgt_backward_mse_loss(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    return wgt_mse_loss_backward(node->inputs[0], node->inputs[1], grad_out, (wgt_reduction)node->params.ints[0],
                                 wgt_autograd_input_needs_grad(node, 0) ? &grad_inputs[0] : NULL,
                                 wgt_autograd_input_needs_grad(node, 1) ? &grad_inputs[1] : NULL);
}

/* inputs {x}; reals[0] p, ints[0] seed: the same mask and scale on grad_out */
wgt_status wgt_backward_dropout(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    grad_inputs[0] = wgt_dropout_apply(grad_out, node->params.reals[0], (uint64_t)node->params.ints[0],
                                       "wgt_dropout backward");
    grad_inputs[0] = as_dtype(grad_inputs[0], wgt_tensor_dtype(node->inputs[0]));
    return grad_inputs[0] ? WGT_OK : wgt_context_status(grad_out->ctx);
}
