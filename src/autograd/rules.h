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
 * the scope the engine opens around each rule.
 */
#ifndef WGT_AUTOGRAD_RULES_H
#define WGT_AUTOGRAD_RULES_H

#include "core/tape.h"

typedef wgt_status (*wgt_backward_rule)(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs);

/* Whether input i of node needs a gradient (requires grad itself or has a node). */
bool wgt_autograd_input_needs_grad(const wgt_grad_node *node, int i);

/* Sums g over the dims that broadcasting added or stretched so it has shape
 * (ndim, shape): the gradient of a broadcast read. Returns a new tensor. */
wgt_tensor *wgt_grad_sum_to_shape(wgt_tensor *g, int ndim, const int64_t *shape);

/* The rule for op, or NULL when op has none. */
wgt_backward_rule wgt_backward_rule_for(wgt_op op);
/* Ops that have no gradient by nature (comparisons, argmax, integer results,
 * creation ops). Asking for a gradient through one is an error. */
bool wgt_op_is_differentiable(wgt_op op);

#endif /* WGT_AUTOGRAD_RULES_H */
