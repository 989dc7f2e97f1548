/* Helpers shared by the op front-ends in src/ops: argument checks, broadcasting,
 * dtype promotion, and building kernel calls. */
#ifndef WGT_OP_COMMON_H
#define WGT_OP_COMMON_H

#include "core/internal.h"

/* Checks n tensor arguments of a public call: none NULL, one context, no pending
 * error. Returns the context, or NULL (error recorded where a context is known). */
wgt_context *wgt_op_begin(const char *op, int n, wgt_tensor *const *args);

/* Broadcast shape of n views (NumPy rules) into shape/ndim; false + error. */
bool wgt_broadcast_shapes(wgt_context *ctx, int n, const wgt_tensor_view *const *views, int *ndim, int64_t *shape,
                          const char *op);
/* View of in broadcast to shape (stride 0 on broadcast dims); false + error. */
bool wgt_broadcast_view(wgt_context *ctx, const wgt_tensor_view *in, int ndim, const int64_t *shape, wgt_tensor_view *out,
                        const char *op);

/* A 2-D view with its dims swapped (shape and strides): a weight [out, in]
 * as the [in, out] operand of a product. */
wgt_tensor_view wgt_view_transposed(const wgt_tensor_view *v);

/* bool < u8 < i32 < f16 < f32 */
wgt_dtype wgt_promote_dtypes(wgt_dtype a, wgt_dtype b);
bool wgt_dtype_is_float(wgt_dtype d);
/* F32 for f32/f16, I32 otherwise. */
wgt_expr_type wgt_expr_type_of(wgt_dtype d);

/* Runs expr over inputs (broadcast to out's shape here) into out (any view). */
wgt_status wgt_run_elementwise(wgt_context *ctx, const char *op, const wgt_expr *expr, int n_inputs,
                               wgt_tensor *const *inputs, wgt_tensor *out);

/* Autograd recording (src/core/tape.h). When an input needs grad, grad mode is
 * on and *out is a float tensor, attaches a node for op to *out and returns it
 * for the caller to fill params and save tensors; otherwise returns NULL. On
 * failure releases *out and sets it to NULL (the error is recorded). */
struct wgt_grad_node *wgt_op_record(wgt_tensor **out, wgt_op op, int n_inputs, wgt_tensor *const *inputs);
/* The same for an op run as an expression program: the node keeps a copy of
 * expr, from which autograd derives the backward program. */
struct wgt_grad_node *wgt_op_record_expr(wgt_tensor **out, wgt_op op, int n_inputs, wgt_tensor *const *inputs,
                                         const wgt_expr *expr);
/* In-place writes (fill, assign, tensor_write) refuse a destination on the
 * tape while grad mode is on; false + error. */
bool wgt_op_check_inplace(wgt_context *ctx, const wgt_tensor *dst, const char *op);
/* The destination and table of the decode rope projections
 * (wgt_rms_norm_linear_rope_into, wgt_qlinear_rope_into) for N output rows:
 * dst N contiguous f32 or f16 elements, not on the tape, sharing no storage
 * with inputs[0 .. n_inputs); table f32 or f16 [4, D/2] with unit row
 * stride, N whole heads of D; 0 <= pass_begin <= pass_end <= heads. false +
 * an error naming op and the cause. */
bool wgt_op_check_rope_into(wgt_context *ctx, const char *op, wgt_tensor *dst, wgt_tensor *table, int64_t N,
                            int64_t pass_begin, int64_t pass_end, wgt_tensor *const *inputs, int n_inputs);

/* Zeros of like's shape (f32) with src scatter-added along axis (as
 * wgt_scatter_add, without copying the zeros first; not recorded): the
 * gradient of the gathering ops. */
wgt_tensor *wgt_scatter_add_zeros(const wgt_tensor *like, int axis, wgt_tensor *index, wgt_tensor *src);

#endif /* WGT_OP_COMMON_H */
