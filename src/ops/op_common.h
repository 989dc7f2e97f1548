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

/* bool < u8 < i32 < f16 < f32 */
wgt_dtype wgt_promote_dtypes(wgt_dtype a, wgt_dtype b);
bool wgt_dtype_is_float(wgt_dtype d);
/* F32 for f32/f16, I32 otherwise. */
wgt_expr_type wgt_expr_type_of(wgt_dtype d);

/* Runs expr over inputs (broadcast to out's shape here) into out (any view). */
wgt_status wgt_run_elementwise(wgt_context *ctx, const char *op, const wgt_expr *expr, int n_inputs,
                               wgt_tensor *const *inputs, wgt_tensor *out);

#endif /* WGT_OP_COMMON_H */
