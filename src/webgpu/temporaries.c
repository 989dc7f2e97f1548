/* Device temporaries for kernels that work in another dtype or layout than the
 * caller's views: allocate, convert (an ELEMENTWISE copy, so any dtype and any
 * strides), release. Releasing right after recording is safe: the block goes
 * back to the pool and only later-recorded work can reuse it (queue order). */
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

wgt_status webgpu_convert(webgpu_backend *wg, const wgt_tensor_view *src, const wgt_tensor_view *dst, const char *op)
{
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_input(&e, 0, (src->dtype == WGT_F32 || src->dtype == WGT_F16) ? WGT_EXPR_F32 : WGT_EXPR_I32);
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_ELEMENTWISE;
    call.op_name = op;
    call.expr = &e;
    call.n_inputs = 1;
    call.inputs[0] = *src;
    call.n_outputs = 1;
    call.outputs[0] = *dst;
    return webgpu_elementwise_run(wg, &call);
}

wgt_status webgpu_temp_convert(webgpu_backend *wg, const wgt_tensor_view *src, wgt_dtype dtype, wgt_tensor_view *out,
                               const char *op)
{
    wgt_status s = webgpu_temp_alloc(wg, dtype, src->ndim, src->shape, out);
    if (s == WGT_OK && wgt_shape_numel(src->ndim, src->shape) > 0) s = webgpu_convert(wg, src, out, op);
    if (s != WGT_OK) webgpu_temp_release(wg, out);
    return s;
}
