/* The autograd tape's nodes: recording and saving tensors for backward. See
 * src/core/tape.h for the contract and src/autograd for backward. A node's
 * release is in tensor.c, beside the tensor's: each frees the other. */
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/tape.h"

bool wgt_tape_wants(wgt_context *ctx, int n, wgt_tensor *const *inputs)
{
    if (!ctx || ctx->no_grad_depth > 0) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && (inputs[i]->requires_grad || inputs[i]->grad_node)) return true;
    return false;
}

/* The ops whose backward rule (src/autograd/rules_*.c) reads no input's
 * values, only shapes, dtypes and the node's params: views and data movement
 * (reshape, permute, slice, expand, concat, pad), sum and mean (an expand of
 * the gradient), dropout (the same mask on the gradient; dropout_add's saved
 * as bits) and rope (the inverse
 * rotation of the gradient). Elementwise ops decide per input from their
 * program (wgt_tape_drop_unread_expr_inputs). Every other op keeps its inputs.
 * A rule added for one of these ops that starts reading input values must
 * take the op out of this list. */
static bool rule_reads_inputs(wgt_op op)
{
    switch (op) {
    case WGT_OP_VIEW: case WGT_OP_PERMUTE: case WGT_OP_SLICE: case WGT_OP_EXPAND: case WGT_OP_CONCAT:
    case WGT_OP_PAD: case WGT_OP_SUM: case WGT_OP_MEAN: case WGT_OP_DROPOUT: case WGT_OP_ROPE:
    case WGT_OP_DROPOUT_ADD:
        return false;
    default: return true;
    }
}

void wgt_tape_drop_input_values(wgt_grad_node *node, int i)
{
    wgt_tensor *in = node->inputs[i];
    if (!in || !in->view.storage) return;      /* absent, or already a stand-in */
    if (in->requires_grad && !in->grad_node) return; /* a leaf: its .grad goes to the tensor itself */
    wgt_tensor *stub = calloc(1, sizeof(*stub));
    if (!stub) return; /* out of host memory: keeping the tensor is correct, only costlier */
    stub->ctx = in->ctx;
    stub->refcount = 1;
    stub->view = in->view;
    stub->view.storage = NULL;
    stub->scope_level = -1;
    stub->requires_grad = in->requires_grad;
    stub->grad_node = in->grad_node;
    if (stub->grad_node) wgt_tape_node_retain(stub->grad_node);
    in->ctx->live_tensors++;
    node->inputs[i] = stub;
    wgt_tensor_unref(in);
}

/* Which inputs the derivative programs of e (rules_elementwise.c) read. Going
 * by backprop_node there: add, sub, neg, cast pass the gradient on without
 * values; sign/floor/ceil/round, comparisons and logic give zeros or nothing;
 * mul reads each operand for the other's gradient, div the divisor for the
 * dividend's, so an operand that depends on no input (a constant: dropout's
 * 1/(1-p), a scale) makes the other unread; where reads its condition; every
 * other opcode reads its operands and its own value. A node's value depends
 * on the inputs below it. */
void wgt_tape_drop_unread_expr_inputs(wgt_grad_node *node, const wgt_expr *e)
{
    uint64_t dep[WGT_EXPR_MAX_NODES], read = 0;
    for (int i = 0; i < e->n_nodes; i++) {
        const wgt_expr_node *n = &e->nodes[i];
        uint64_t d = 0;
        if (n->opcode == WGT_EXPR_INPUT)
            d = n->input_index >= 0 && n->input_index < 64 ? (uint64_t)1 << n->input_index : ~(uint64_t)0;
        for (int k = 0; k < 3; k++)
            if (n->args[k] >= 0) d |= dep[n->args[k]];
        dep[i] = d;
        switch ((wgt_expr_opcode)n->opcode) {
        case WGT_EXPR_INPUT: case WGT_EXPR_CONST: case WGT_EXPR_INDEX: case WGT_EXPR_RAND_UNIFORM:
        case WGT_EXPR_RAND_NORMAL: case WGT_EXPR_CAST: case WGT_EXPR_NEG: case WGT_EXPR_ADD: case WGT_EXPR_SUB:
        case WGT_EXPR_SIGN: case WGT_EXPR_FLOOR: case WGT_EXPR_CEIL: case WGT_EXPR_ROUND: case WGT_EXPR_NOT:
        case WGT_EXPR_EQ: case WGT_EXPR_NE: case WGT_EXPR_LT: case WGT_EXPR_LE: case WGT_EXPR_GT: case WGT_EXPR_GE:
        case WGT_EXPR_AND: case WGT_EXPR_OR:
            break;
        case WGT_EXPR_MUL: { /* d/da = g b, d/db = g a: a side without inputs (a constant) has no gradient */
            uint64_t a = dep[n->args[0]], b = dep[n->args[1]];
            read |= (a ? b : 0) | (b ? a : 0);
            break;
        }
        case WGT_EXPR_DIV: { /* d/da = g / b, d/db = -g y / b */
            uint64_t a = dep[n->args[0]], b = dep[n->args[1]];
            read |= (a ? b : 0) | (b ? a | b : 0);
            break;
        }
        case WGT_EXPR_WHERE: read |= dep[n->args[0]]; break;
        default: read |= d; break;
        }
    }
    for (int i = 0; i < node->n_inputs && i < 64; i++)
        if (!(read & ((uint64_t)1 << i))) wgt_tape_drop_input_values(node, i);
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
    if (!rule_reads_inputs(op))
        for (int i = 0; i < n_inputs; i++) wgt_tape_drop_input_values(node, i);
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

/* Grad mode: a context flag that wgt_tape_wants reads. It lives here, below
 * ops, because ops switch it off around their internal work (quant.c). */
wgt_status wgt_no_grad_push(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    ctx->no_grad_depth++;
    return WGT_OK;
}

wgt_status wgt_no_grad_pop(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->no_grad_depth == 0)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_no_grad_pop: no wgt_no_grad_push is open");
    ctx->no_grad_depth--;
    return WGT_OK;
}

bool wgt_grad_enabled(const wgt_context *ctx) { return ctx && ctx->no_grad_depth == 0; }
