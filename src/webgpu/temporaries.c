/* Device temporaries for kernels that work in another dtype or layout than the
 * caller's views: allocate and release. Releasing right after recording is
 * safe: the block goes back to the pool and only later-recorded work can reuse
 * it (queue order). Filling one by conversion (webgpu_convert, an ELEMENTWISE
 * copy) is in webgpu_elementwise.c, and the f32 views of f32-only families in
 * f32_views.c: this file calls no kernel, so every kernel family can use it. */
#include <string.h>

#include "webgpu/webgpu_internal.h"

wgt_status webgpu_temp_alloc(webgpu_backend *wg, wgt_dtype dtype, int ndim, const int64_t *shape,
                             wgt_tensor_view *out)
{
    memset(out, 0, sizeof(*out));
    out->dtype = dtype;
    out->ndim = ndim;
    memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
    wgt_contiguous_strides(ndim, shape, out->strides);
    size_t bytes = (size_t)wgt_shape_numel(ndim, shape) * wgt_dtype_size(dtype);
    out->storage = wgt_storage_create(wg->base.ctx, bytes, "webgpu temporary");
    return out->storage ? WGT_OK : wgt_context_status(wg->base.ctx);
}

void webgpu_temp_release(webgpu_backend *wg, wgt_tensor_view *v)
{
    if (v->storage) wgt_storage_release(wg->base.ctx, v->storage);
    v->storage = NULL;
}
