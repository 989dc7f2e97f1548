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
/* wgt_attention_forward that, with dropout, also stores the keep bits after
 * lse's rows in its storage (backend.h, attention.mask_words) and says how many
 * words a row they take in *mask_words (0 without dropout): what the autograd
 * node saves, so its backward reads the mask instead of drawing it again. */
wgt_tensor *wgt_attention_forward_masked(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, double dropout_p,
                                         uint64_t seed, wgt_tensor **lse, int64_t *mask_words);
/* The keep bits stored after lse's rows: an i32 view [rows, words] of lse's
 * storage (a new reference), or NULL when the storage is too short. */
wgt_tensor *wgt_attention_mask_view(wgt_tensor *lse, int64_t words);

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
/* The same with the forward's keep bits (mask_words from
 * wgt_attention_forward_masked; 0: none): lse must be that forward's. */
wgt_status wgt_attention_backward_masked(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, wgt_tensor *out, wgt_tensor *lse,
                                         wgt_tensor *dout, bool causal, double dropout_p, uint64_t seed,
                                         int64_t mask_words, wgt_tensor *const into[3], wgt_tensor **dq,
                                         wgt_tensor **dk, wgt_tensor **dv);

/* wgt_rope; inverse turns by the negated angles (rope's gradient). Records no
 * autograd node. */
wgt_tensor *wgt_rope_ex(wgt_tensor *x, int64_t position_offset, double theta, bool interleaved, bool inverse);

#endif /* WGT_OPS_ATTENTION_INTERNAL_H */
