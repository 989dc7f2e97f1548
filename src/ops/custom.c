/* wgt_custom_kernel_run front-end: checks the caller's arguments, then hands the
 * storages to the backend (only WebGPU runs WGSL). */
#include "ops/op_common.h"

#define WEBGPU_CUSTOM_MAX_BUFFERS 8

wgt_status wgt_custom_kernel_run(wgt_context *ctx, const wgt_custom_kernel *k)
{
    const char *op = "wgt_custom_kernel_run";
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->status != WGT_OK) return ctx->status;
    if (!k) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: kernel is NULL", op);
    if (!k->wgsl || !k->entry_point || !k->entry_point[0])
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: wgsl or entry_point is NULL or empty", op);
    if (k->n_buffers < 0 || k->n_buffers > WEBGPU_CUSTOM_MAX_BUFFERS || (k->n_buffers > 0 && !k->buffers))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: n_buffers %d (0..%d) or buffers NULL", op, k->n_buffers,
                         WEBGPU_CUSTOM_MAX_BUFFERS);
    if (k->uniform_size > 0 && !k->uniform)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: uniform is NULL with uniform_size %zu", op,
                         k->uniform_size);
    wgt_storage *storages[WEBGPU_CUSTOM_MAX_BUFFERS];
    for (int i = 0; i < k->n_buffers; i++) {
        const wgt_tensor *t = k->buffers[i];
        if (!t) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: buffers[%d] is NULL", op, i);
        if (t->ctx != ctx)
            return wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: buffers[%d] belongs to another context", op, i);
        if (!wgt_view_is_contiguous(&t->view))
            return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: buffers[%d] is not contiguous (use wgt_contiguous)",
                             op, i);
        storages[i] = t->view.storage;
    }
    if (!ctx->backend->vt->custom_kernel)
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: the %s backend does not run WGSL", op, ctx->backend->vt->name);
    return ctx->backend->vt->custom_kernel(ctx->backend, k, storages);
}
