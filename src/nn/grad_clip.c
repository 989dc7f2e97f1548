/*
 * Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, L2):
 *
 *   norm  = sqrt(sum over gradients g of sum(g^2))          f32 []
 *   scale = min(1, max_norm / (norm + 1e-6))                f32 []
 *   g     = g * scale                                       each gradient
 *
 * Everything stays on the device: the norm and the scale are scalar tensors
 * that the multiplications broadcast, so no value is read back and the host
 * never waits. Each gradient is replaced by its scaled copy (one kernel; an
 * in-place multiply would need a snapshot of the aliased input on WebGPU).
 */
#include <math.h>

#include "ops/op_common.h"

wgt_status wgt_clip_grad_norm(wgt_tensor *const *params, int n, double max_norm, wgt_tensor **total_norm)
{
    const char *op = "wgt_clip_grad_norm";
    if (total_norm) *total_norm = NULL;
    if (!params || n <= 0) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = wgt_op_begin(op, n, params);
    if (!ctx) return params[0] ? params[0]->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!(max_norm >= 0) || !isfinite(max_norm))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: max_norm %g must be finite and >= 0", op, max_norm);
    for (int i = 0; i < n; i++) {
        wgt_tensor *g = params[i]->grad;
        if (g && !wgt_dtype_is_float(g->view.dtype))
            return wgt_error(ctx, WGT_ERR_DTYPE, "%s: the gradient of parameter %d is %s", op, i,
                             wgt_dtype_name(g->view.dtype));
    }
    if (wgt_scope_push(ctx) != WGT_OK) return ctx->status;
    wgt_no_grad_push(ctx);
    /* Sum of squares per gradient, then over gradients. */
    wgt_tensor *sums[64], *total = NULL;
    int n_sums = 0;
    for (int i = 0; i < n && ctx->status == WGT_OK; i++) {
        wgt_tensor *g = params[i]->grad;
        if (!g) continue;
        wgt_tensor *g32 = g->view.dtype == WGT_F32 ? g : wgt_cast(g, WGT_F32);
        wgt_tensor *sq = g32 ? wgt_sum(wgt_mul(g32, g32), NULL, 0, false) : NULL;
        if (!sq) break;
        sums[n_sums++] = sq;
        if (n_sums == 64) { /* fold into the running total: wgt_stack takes a bounded list */
            wgt_tensor *part = wgt_sum(wgt_stack(sums, n_sums, 0), NULL, 0, false);
            total = total ? wgt_add(total, part) : part;
            n_sums = 0;
        }
    }
    if (ctx->status == WGT_OK && n_sums > 0) {
        wgt_tensor *part = wgt_sum(wgt_stack(sums, n_sums, 0), NULL, 0, false);
        total = total ? wgt_add(total, part) : part;
    }
    if (ctx->status == WGT_OK && !total) total = wgt_zeros(ctx, WGT_F32, 0, NULL);
    wgt_tensor *norm = total ? wgt_sqrt(total) : NULL;
    /* max_norm is a kernel parameter: no upload (which would end the batch)
     * and no new pipeline when it changes. */
    double limit = max_norm;
    wgt_tensor *scale = norm ? wgt_fused_params(ctx, "minimum(p0 / (a + 0.000001), 1)", &norm, 1, &limit, 1) : NULL;
    for (int i = 0; scale && i < n && ctx->status == WGT_OK; i++) {
        wgt_tensor *g = params[i]->grad;
        if (!g) continue;
        wgt_tensor *scaled = wgt_mul(g, scale);
        if (!scaled) break;
        if (scaled->view.dtype != g->view.dtype) scaled = wgt_cast(scaled, g->view.dtype);
        if (scaled) wgt_tensor_set_grad(params[i], scaled);
    }
    wgt_status s = ctx->status;
    if (s == WGT_OK && total_norm) *total_norm = wgt_scope_keep(norm);
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    return s;
}
