/*
 * Backward rules: one function per differentiable op, in files by op family
 * (rules_elementwise.c, rules_reduce.c, rules_nn.c, ...). The table in rules.c
 * maps every wgt_op to its rule or marks it not differentiable; test_autograd
 * fails if an op has neither.
 *
 * A rule receives the node (inputs, saved tensors, params, the output's shape)
 * and grad_out (the gradient of the node's output: same shape as the output,
 * f32 or f16 like the output). It fills grad_inputs[i] with a new tensor of
 * exactly inputs[i]'s shape for every input i where wgt_autograd_input_needs_grad
 * is true, and may leave the others NULL. Rules run with grad mode off and are
 * written with the public ops, so both backends get them. On error they record
 * it on the context and return the status; tensors they made are released by
 * the scope the engine opens around each rule. A returned gradient is a tensor
 * made in that scope (the engine takes it over), grad_out itself, or, for a
 * rule that takes destinations (below), the handed view with a new reference.
 */
#ifndef WGT_AUTOGRAD_RULES_H
#define WGT_AUTOGRAD_RULES_H

#include "core/tape.h"

typedef wgt_status (*wgt_backward_rule)(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);

/* Whether input i of node needs a gradient (requires grad itself or has a node). */
bool wgt_autograd_input_needs_grad(const wgt_grad_node *node, int i);

/* Sums g over the dims that broadcasting added or stretched so it has shape
 * (ndim, shape): the gradient of a broadcast read. Returns a new tensor of the
 * current scope, or g itself when it already has that shape. */
wgt_tensor *wgt_grad_sum_to_shape(wgt_tensor *g, int ndim, const int64_t *shape);

/* The rule for op, or NULL when op has none. */
wgt_backward_rule wgt_backward_rule_for(wgt_op op);
/* Whether op's rule accepts destinations: grad_inputs[i] set on entry to a
 * view of input i's shape (f32) that it may write the gradient into and
 * return (with a new reference) instead of a tensor of its own. */
bool wgt_backward_rule_takes_destinations(wgt_op op);
/* Whether op's rule reads grad_out through its strides, so the engine need
 * not make a first gradient contiguous for it. */
bool wgt_backward_rule_reads_any_grad(wgt_op op);
/* Whether op's rule may get grad_inputs[0] set on entry to input 0's gradient
 * so far (f32, contiguous, its own storage, nothing else holding it): the rule
 * then adds its gradient into that tensor in place and leaves it in
 * grad_inputs[0], saving the engine's separate add (backward.c). */
bool wgt_backward_rule_accumulates(wgt_op op);
/* Ops that have no gradient by nature (comparisons, argmax, integer results,
 * creation ops). Asking for a gradient through one is an error. */
bool wgt_op_is_differentiable(wgt_op op);
/* Whether the rule table says anything about op (test_autograd checks all). */
bool wgt_autograd_op_classified(wgt_op op);


/* ---- rules by family (each file documents the ops it covers) ---- */
/* rules_elementwise.c: every op run as an expression program (binary, unary,
 * where, leaky_relu, elu, fused, copy, cast, tril, triu) by symbolic differentiation of the
 * program, and clamp. */
wgt_status wgt_backward_elementwise(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_clamp(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
/* rules_reduce.c: reductions, cumsum, softmax, log_softmax, matmul */
wgt_status wgt_backward_reduce(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_cumsum(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_softmax(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_matmul(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
/* rules_movement.c: views, concat, gather/index_select, scatter_add, pad, topk */
wgt_status wgt_backward_view(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_permute(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_slice(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_expand(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_concat(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_gather(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_index_select(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_scatter_add(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_pad(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_topk(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
/* rules_nn.c: layer_norm and rms_norm (one rule), cross_entropy, mse_loss, dropout */
wgt_status wgt_backward_norm(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_cross_entropy(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_mse_loss(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_dropout(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_dropout_add(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
/* rules_attention.c */
wgt_status wgt_backward_linear(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_gelu_linear(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_attention(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_rope(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);

/* rules_conv.c: conv2d, conv_transpose2d, the poolings, batch_norm */
wgt_status wgt_backward_conv2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_conv_transpose2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_pool2d(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);
wgt_status wgt_backward_batch_norm(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);

#endif /* WGT_AUTOGRAD_RULES_H */
