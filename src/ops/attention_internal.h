/*
 * The attention and rope kernels as the autograd floor (and tests) need them
 * beyond the public API: the forward that also returns the row logsumexp, the
 * fused backward, and rope with the angle negated. Private to src/.
 */
#ifndef WGT_OPS_ATTENTION_INTERNAL_H
#define WGT_OPS_ATTENTION_INTERNAL_H

#include "core/internal.h"

/* wgt_scaled_dot_product_attention, also returning (if lse != NULL) the f32
 * logsumexp of each row of scaled scores, [B, H, Tq] (-inf for a row that sees
 * no key). Records no autograd node. */
wgt_tensor *wgt_attention_forward(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, double dropout_p,
                                  uint64_t seed, wgt_tensor **lse);

/* Gradients of attention from the forward's q, k, v, out, lse and the upstream
 * dout [B, H, Tq, D]: dq [B, H, Tq, D], dk, dv [B, Hkv, Tk, D] in q's dtype
 * (f32 arithmetic). The probabilities are recomputed tile by tile from lse;
 * causal, dropout_p and seed must be the forward's. Any of dq, dk, dv may be
 * NULL when not wanted (all three are computed). */
wgt_status wgt_attention_backward(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, wgt_tensor *out, wgt_tensor *lse,
                                  wgt_tensor *dout, bool causal, double dropout_p, uint64_t seed, wgt_tensor **dq,
                                  wgt_tensor **dk, wgt_tensor **dv);

/* wgt_attention_backward writing into given tensors: into[i] (NULL: a new
 * tensor), an f32 tensor of q's (k's, v's) shape with any strides, for q of
 * dtype f32 (the autograd engine passes windows of one [B, T, 3C] gradient, so
 * no copy moves them there). On success *dq (dk, dv) is into[i] itself, with a
 * new reference. */
wgt_status wgt_attention_backward_into(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, wgt_tensor *out, wgt_tensor *lse,
                                       wgt_tensor *dout, bool causal, double dropout_p, uint64_t seed,
                                       wgt_tensor *const into[3], wgt_tensor **dq, wgt_tensor **dk, wgt_tensor **dv);

/* wgt_rope; inverse turns by the negated angles (rope's gradient). Records no
 * autograd node. */
wgt_tensor *wgt_rope_ex(wgt_tensor *x, int64_t position_offset, double theta, bool interleaved, bool inverse);

#endif /* WGT_OPS_ATTENTION_INTERNAL_H */
