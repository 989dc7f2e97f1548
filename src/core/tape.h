/*
 * The autograd tape as the lower floors see it: a node records how a tensor was
 * made (which op, from which inputs, with which parameters and saved tensors).
 * Op front-ends (src/ops) record nodes; the autograd floor (src/autograd) walks
 * them backward with one rule per op. Core owns the node's memory because a
 * tensor's release frees its node; core knows nothing about gradients.
 *
 * Recording costs nothing when no input requires grad or grad mode is off:
 *
 *     wgt_tensor *in[3] = {x, weight, bias};
 *     if (wgt_tape_wants(ctx, 3, in)) {
 *         wgt_grad_node *node = wgt_tape_record(out, WGT_OP_LAYER_NORM, 3, in);
 *         if (!node) { wgt_tensor_release(out); return NULL; }
 *         node->params.reals[0] = eps;
 *         wgt_tape_save(node, mean);            // extra tensors backward needs
 *         wgt_tape_save_output(node, out);      // out itself (no reference cycle)
 *     }
 */
#ifndef WGT_TAPE_H
#define WGT_TAPE_H

#include "core/internal.h"

#define WGT_TAPE_MAX_SAVED 6

/* Op parameters backward needs; each op documents its own use of the slots. */
typedef struct wgt_tape_params {
    int64_t ints[2 * WGT_MAX_DIMS + 4];
    double reals[4];
    int n_ints;
} wgt_tape_params;

typedef struct wgt_grad_node {
    int refcount;
    wgt_op op;
    int n_inputs;
    /* retained; NULL for an absent optional input. An input whose values the
     * op's rule does not read (and that is not a leaf requiring grad) is a
     * stand-in: a tensor with the input's view (shape, strides, dtype) and
     * requires_grad but no storage (view.storage NULL), holding the input's
     * grad node, so the activation itself is freed as soon as nothing else
     * needs it (wgt_tape_drop_input_values). */
    wgt_tensor **inputs;
    int n_saved;
    wgt_tensor *saved[WGT_TAPE_MAX_SAVED];   /* retained, never carry a node of their own */
    wgt_tape_params params;
    void *owned;                             /* op-specific heap data (e.g. a copied expression) */
    void (*free_owned)(void *owned);
    /* the output's shape and dtype, so backward can shape gradients after the
     * output tensor itself is gone */
    wgt_dtype out_dtype;
    int out_ndim;
    int64_t out_shape[WGT_MAX_DIMS];
    bool released;                           /* backward ran without keep_graph: inputs/saved dropped */
    /* backward bookkeeping, owned by src/autograd */
    wgt_tensor *grad;                        /* accumulated gradient of the output */
    int pending;                             /* consumers not yet processed */
    uint64_t visit;                          /* pass number of the last visit */
    /* grad written window by window by step-1 slices of the output (backward.c):
     * axis + 1 (0: grad is an ordinary sum) and the [start, end) ranges written
     * so far; the rest of grad is unwritten until the node runs */
    int window_axis1, n_windows;
    int64_t windows[8][2];
} wgt_grad_node;

/* True when grad mode is on for ctx and one of the n (possibly NULL) inputs
 * requires grad or carries a node. */
bool wgt_tape_wants(wgt_context *ctx, int n, wgt_tensor *const *inputs);

/* Creates the node that made out and attaches it to out (out must have none).
 * Retains the non-NULL inputs. NULL + error recorded on out's context on OOM. */
wgt_grad_node *wgt_tape_record(wgt_tensor *out, wgt_op op, int n_inputs, wgt_tensor *const *inputs);

/* Replaces input i by a stand-in without storage (see inputs above), unless it
 * is a leaf that requires grad. wgt_tape_record does this itself for the ops
 * whose rule reads no input values; for an elementwise op,
 * wgt_tape_drop_unread_expr_inputs does it for each input its derivative
 * programs never read. */
void wgt_tape_drop_input_values(wgt_grad_node *node, int i);
struct wgt_expr;
void wgt_tape_drop_unread_expr_inputs(wgt_grad_node *node, const struct wgt_expr *e);

/* Keeps t alive for backward (retained). false + error when the slots are full. */
bool wgt_tape_save(wgt_grad_node *node, wgt_tensor *t);
/* Keeps the op's own output for backward without a reference cycle: saves an
 * alias of out's view that has no node. */
bool wgt_tape_save_output(wgt_grad_node *node, wgt_tensor *out);

/* Node lifetime (in tensor.c, with the tensor's own release: each frees the
 * other). Drops the inputs and saved tensors (after a backward without keep_graph). */
void wgt_tape_node_release_inputs(wgt_grad_node *node);
void wgt_tape_node_retain(wgt_grad_node *node);
void wgt_tape_node_release(wgt_grad_node *node);

#endif /* WGT_TAPE_H */
