/*
 * Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, L2):
 *
 *   norm  = sqrt(sum over gradients g of sum(g^2))          f32 []
 *   scale = min(1, max_norm / (norm + 1e-6))                f32 []
 *   g     = g * scale                                       each gradient
 *
 * The squared norm is one wgt_sum_squares of the gradients. Everything stays
 * on the device: the norm and the scale are scalar tensors that the
 * multiplications broadcast, so no value is read back and the host
 * never waits. Each gradient is replaced by its scaled copy (one kernel; an
 * in-place multiply would need a snapshot of the aliased input on WebGPU), or,
 * with wgt_clip_grad_norm_scale, left alone: the optimizer multiplies by the
 * scale inside its update (wgt_optimizer_set_grad_scale_tensor), one kernel
 * per gradient fewer.
 */
#include <math.h>
#include <stdlib.h>

#include "ops/op_common.h"

/* The norm and the scale, as tensors of the caller's current scope (the
 * scope pushed by the callers below). */
static wgt_status norm_and_scale(wgt_context *ctx, wgt_tensor *const *params, int n, double max_norm, bool want_norm,
                                 wgt_tensor **norm_out, wgt_tensor **scale_out)
{
    /* The squared norm of all gradients in one multi-tensor reduction
     * (wgt_sum_squares: 7 gradients per kernel, then one sum of the partials),
     * where a multiply and a sum per gradient and a fused add of the partial
     * norms every 7 were 85 kernels or more for GPT's 39 parameters (112 on
     * lavapipe, where the larger sums take two passes); now 6 and a sum. */
    wgt_tensor *grads[64] = {NULL}, **list = grads;
    if (n > 64 && !(list = malloc(sizeof(*list) * (size_t)n)))
        return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "gradient clipping: out of host memory");
    int n_grads = 0;
    for (int i = 0; i < n; i++)
        if (params[i]->grad) list[n_grads++] = params[i]->grad;
    wgt_tensor *total = wgt_sum_squares(ctx, list, n_grads);
    if (list != grads) free(list);
    /* max_norm is a kernel parameter: no upload (which would end the batch)
     * and no new pipeline when it changes. The norm gets a kernel of its own
     * only when the caller asks for it. */
    double limit = max_norm;
    wgt_tensor *norm = total && want_norm ? wgt_sqrt(total) : NULL;
    *norm_out = norm;
    *scale_out = !total ? NULL
                 : norm ? wgt_fused_params(ctx, "minimum(p0 / (a + 0.000001), 1)", &norm, 1, &limit, 1)
                        : wgt_fused_params(ctx, "minimum(p0 / (sqrt(a) + 0.000001), 1)", &total, 1, &limit, 1);
    return ctx->status;
}

static wgt_context *check_args(const char *op, wgt_tensor *const *params, int n, double max_norm, wgt_status *s)
{
    *s = WGT_ERR_INVALID_ARGUMENT;
    if (!params || n <= 0) return NULL;
    wgt_context *ctx = wgt_op_begin(op, n, params);
    if (!ctx) {
        if (params[0]) *s = params[0]->ctx->status;
        return NULL;
    }
    if (!(max_norm >= 0) || !isfinite(max_norm)) {
        *s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: max_norm %g must be finite and >= 0", op, max_norm);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        wgt_tensor *g = params[i]->grad;
        if (g && !wgt_dtype_is_float(g->view.dtype)) {
            *s = wgt_error(ctx, WGT_ERR_DTYPE, "%s: the gradient of parameter %d is %s", op, i,
                           wgt_dtype_name(g->view.dtype));
            return NULL;
        }
    }
    *s = WGT_OK;
    return ctx;
}

wgt_status wgt_clip_grad_norm(wgt_tensor *const *params, int n, double max_norm, wgt_tensor **total_norm)
{
    if (total_norm) *total_norm = NULL;
    wgt_status s;
    wgt_context *ctx = check_args("wgt_clip_grad_norm", params, n, max_norm, &s);
    if (!ctx) return s;
    if (wgt_scope_push(ctx) != WGT_OK) return ctx->status;
    wgt_no_grad_push(ctx);
    wgt_tensor *norm = NULL, *scale = NULL;
    norm_and_scale(ctx, params, n, max_norm, total_norm != NULL, &norm, &scale);
    for (int i = 0; scale && i < n && ctx->status == WGT_OK; i++) {
        wgt_tensor *g = params[i]->grad;
        if (!g) continue;
        wgt_tensor *scaled = wgt_mul(g, scale);
        if (!scaled) break;
        if (scaled->view.dtype != g->view.dtype) scaled = wgt_cast(scaled, g->view.dtype);
        if (scaled) wgt_tensor_set_grad(params[i], scaled);
    }
    s = ctx->status;
    if (s == WGT_OK && total_norm) *total_norm = wgt_scope_keep(norm);
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    return s;
}

wgt_status wgt_clip_grad_norm_scale(wgt_tensor *const *params, int n, double max_norm, wgt_tensor **scale,
                                    wgt_tensor **total_norm)
{
    if (total_norm) *total_norm = NULL;
    if (scale) *scale = NULL;
    wgt_status s;
    wgt_context *ctx = check_args("wgt_clip_grad_norm_scale", params, n, max_norm, &s);
    if (!ctx) return s;
    if (!scale) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_clip_grad_norm_scale: scale is NULL");
    if (wgt_scope_push(ctx) != WGT_OK) return ctx->status;
    wgt_no_grad_push(ctx);
    wgt_tensor *norm = NULL, *factor = NULL;
    s = norm_and_scale(ctx, params, n, max_norm, total_norm != NULL, &norm, &factor);
    if (s == WGT_OK) {
        *scale = wgt_scope_keep(factor);
        if (total_norm) *total_norm = wgt_scope_keep(norm);
    }
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    return s;
}
