/* The autograd tape's nodes: recording and saving tensors for backward. See
 * src/core/tape.h for the contract and src/autograd for backward. A node's
 * release is in tensor.c, beside the tensor's: each frees the other. */
#include <stdlib.h>
#include <string.h>

#include "core/tape.h"

bool wgt_tape_wants(wgt_context *ctx, int n, wgt_tensor *const *inputs)
{
    if (!ctx || ctx->no_grad_depth > 0) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && (inputs[i]->requires_grad || inputs[i]->grad_node)) return true;
    return false;
}

wgt_grad_node *wgt_tape_record(wgt_tensor *out, wgt_op op, int n_inputs, wgt_tensor *const *inputs)
{
    wgt_context *ctx = out->ctx;
    wgt_grad_node *node = calloc(1, sizeof(*node));
    wgt_tensor **copy = n_inputs > 0 ? calloc((size_t)n_inputs, sizeof(*copy)) : NULL;
    if (!node || (n_inputs > 0 && !copy)) {
        free(node);
        free(copy);
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory recording the autograd node", wgt_op_name(op));
        return NULL;
    }
    node->refcount = 1;
    node->op = op;
    node->n_inputs = n_inputs;
    node->inputs = copy;
    for (int i = 0; i < n_inputs; i++) copy[i] = wgt_tensor_ref(inputs[i]);
    node->out_dtype = out->view.dtype;
    node->out_ndim = out->view.ndim;
    memcpy(node->out_shape, out->view.shape, sizeof(node->out_shape));
    if (out->grad_node) wgt_tape_node_release(out->grad_node);
    out->grad_node = node;
    return node;
}

bool wgt_tape_save(wgt_grad_node *node, wgt_tensor *t)
{
    if (node->n_saved == WGT_TAPE_MAX_SAVED) {
        wgt_error(t->ctx, WGT_ERR_INTERNAL, "%s: more than %d tensors saved for backward", wgt_op_name(node->op),
                  WGT_TAPE_MAX_SAVED);
        return false;
    }
    node->saved[node->n_saved++] = wgt_tensor_ref(t);
    return true;
}

/* An unscoped alias of t's view: shares the storage, has no node, so saving
 * it in t's own node makes no reference cycle. */
bool wgt_tape_save_output(wgt_grad_node *node, wgt_tensor *out)
{
    wgt_context *ctx = out->ctx;
    wgt_tensor *alias = wgt_tensor_wrap(ctx, &out->view);
    if (!alias) return false;
    wgt_scope_remove(alias); /* out of every scope: the node owns it */
    bool ok = wgt_tape_save(node, alias);
    wgt_tensor_release(alias);
    return ok;
}
