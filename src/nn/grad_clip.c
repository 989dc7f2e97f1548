/*
 * Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, L2):
 *
 *   norm  = sqrt(sum over gradients g of sum(g^2))          f32 []
 *   scale = min(1, max_norm / (norm + 1e-6))                f32 []
 *   g     = g * scale                                       each gradient
 *
 * The partial sums are added 7 per kernel. Everything stays on the device: the norm and the scale are scalar tensors
 * that the multiplications broadcast, so no value is read back and the host
 * never waits. Each gradient is replaced by its scaled copy (one kernel; an
 * in-place multiply would need a snapshot of the aliased input on WebGPU), or,
 * with wgt_clip_grad_norm_scale, left alone: the optimizer multiplies by the
 * scale inside its update (wgt_optimizer_set_grad_scale_tensor), one kernel
 * per gradient fewer.
 */
#include <math.h>

#include "ops/op_common.h"

/* The norm and the scale, as tensors of the caller's current scope (the
 * scope pushed by the callers below). */
static wgt_status norm_and_scale(wgt_context *ctx, wgt_tensor *const *params, int n, double max_norm, bool want_norm,
                                 wgt_tensor **norm_out, wgt_tensor **scale_out)
{
    /* Sum of squares per gradient, then over gradients: the scalar partials
     * are added 7 at a time by one fused kernel (the running total and 6 new
     * ones; 7 inputs + the output are the 8 storage bindings WebGPU allows),
     * not stacked, which copied every scalar in a kernel of its own. */
    static const char *const sums_of[8] = {NULL, "a", "a + b", "a + b + c", "a + b + c + d", "a + b + c + d + e",
                                           "a + b + c + d + e + f", "a + b + c + d + e + f + g"};
    wgt_tensor *terms[7], *total = NULL;
    int n_terms = 0;
    for (int i = 0; i < n && ctx->status == WGT_OK; i++) {
        wgt_tensor *g = params[i]->grad;
        if (!g) continue;
        /* the squares (and an f16 gradient's f32 copy) are released at once:
         * left to the scope, they were a second copy of every gradient */
        wgt_tensor *g32 = g->view.dtype == WGT_F32 ? g : wgt_cast(g, WGT_F32);
        wgt_tensor *squares = g32 ? wgt_mul(g32, g32) : NULL;
        wgt_tensor *sq = squares ? wgt_sum(squares, NULL, 0, false) : NULL;
        wgt_tensor_release(squares);
        if (g32 != g) wgt_tensor_release(g32);
        if (!sq) break;
        terms[n_terms++] = sq;
        if (n_terms == 7) {
            terms[0] = wgt_fused(ctx, sums_of[7], terms, 7);
            n_terms = terms[0] ? 1 : 0;
        }
    }
    if (ctx->status == WGT_OK && n_terms > 0)
        total = n_terms == 1 ? terms[0] : wgt_fused(ctx, sums_of[n_terms], terms, n_terms);
    if (ctx->status == WGT_OK && !total) total = wgt_zeros(ctx, WGT_F32, 0, NULL);
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
