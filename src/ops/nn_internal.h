/*
 * The backward halves of the fused neural-network ops (src/ops/nn_norm.c,
 * nn_loss.c), for the rules in src/autograd/rules_nn.c. Each runs with grad
 * mode as the caller left it (rules run with it off), returns new tensors and
 * records an error on the context on failure (NULL / the status).
 *
 * Tape records of the forward ops (what each saves, node->params slots):
 *   LAYER_NORM  inputs {x, weight|NULL, bias|NULL}; saved[0] stats f32 [R, 2]
 *               (mean, rstd per row); reals[0] eps
 *   RMS_NORM    inputs {x, weight|NULL}; saved[0] stats (mean = 0, rstd)
 *   CROSS_ENTROPY inputs {logits, targets}; saved[0] lse f32 [R], saved[1] the
 *               count of non-ignored targets f32 [] (MEAN only);
 *               ints[0] reduction, ints[1] ignore_index
 *   MSE_LOSS    inputs {input, target}; ints[0] reduction
 *   DROPOUT     inputs {x}; reals[0] p, ints[0] seed (the mask is regenerated
 *               from the seed, never stored)
 */
#ifndef WGT_OPS_NN_INTERNAL_H
#define WGT_OPS_NN_INTERNAL_H

#include "core/internal.h"

/* x [..., D], weight [D] or NULL, stats f32 [R, 2] (R = numel / D) as the
 * forward saved them, dy [..., D] -> *dx [..., D] (x's dtype), *dweight and
 * *dbias [D] (f32) when the pointer is not NULL (dweight needs nothing of
 * weight; dbias is just the column sums of dy). rms: rms norm.
 * dx_into (or NULL): an f32 gradient of x's shape, contiguous, x f32 too, that
 * dx is added to in place (one f32 add per element, as wgt_add would give);
 * *dx is then dx_into itself, no new reference. The autograd engine folds the
 * residual stream's gradient sum into the norm this way (backward.c). */
wgt_status wgt_norm_backward(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *stats, wgt_tensor *dy, bool rms,
                             wgt_tensor **dx, wgt_tensor *dx_into, wgt_tensor **dweight, wgt_tensor **dbias);

/* The gradient of h in wgt_dropout_add's recorded form: g [...] (any float
 * dtype and strides) through mask (i32 [W], the DROPOUT_ADD kernel's bits of
 * g's element count) -> f32, g's shape: where(kept, g / (1 - p), 0). */
wgt_tensor *wgt_dropout_masked(wgt_tensor *g, wgt_tensor *mask, double p);

/* logits [..., C], targets i32 [...], lse f32 [R] from the forward, g f32 with
 * targets' shape or [] (one scale for every row, e.g. grad / count for MEAN)
 * -> dlogits [..., C] (logits' dtype) = (softmax(logits) - onehot(target)) g,
 * zero rows where target == ignore_index. */
wgt_tensor *wgt_cross_entropy_backward(wgt_tensor *logits, wgt_tensor *targets, wgt_tensor *lse, wgt_tensor *g,
                                       int64_t ignore_index);

/* d/d input and d/d target of mse_loss for upstream grad g ([] for MEAN/SUM,
 * input's shape for NONE): +-2 (input - target) g (/ numel for MEAN), one
 * fused elementwise kernel each; either pointer may be NULL. */
wgt_status wgt_mse_loss_backward(wgt_tensor *input, wgt_tensor *target, wgt_tensor *g, wgt_reduction reduction,
                                 wgt_tensor **d_input, wgt_tensor **d_target);

/* The dropout forward without recording a node: the rule applies it to the
 * upstream gradient with the forward's p and seed (same mask, same scale). */
wgt_tensor *wgt_dropout_apply(wgt_tensor *x, double p, uint64_t seed, const char *op);

#endif /* WGT_OPS_NN_INTERNAL_H */
