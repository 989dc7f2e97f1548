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

/* One copy for every f32-only family, so that they treat f16 alike. */
wgt_status webgpu_f32_views_begin(webgpu_backend *wg, const wgt_kernel_call *call, int n_outputs, webgpu_f32_views *v)
{
    memset(v, 0, sizeof(*v));
    if (n_outputs > WEBGPU_F32_VIEWS_MAX_OUTPUTS)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: %d outputs, f32 views hold at most %d", call->op_name,
                         n_outputs, WEBGPU_F32_VIEWS_MAX_OUTPUTS);
    wgt_status s = WGT_OK;
    for (int i = 0; i < call->n_inputs && s == WGT_OK; i++) {
        v->in[i] = call->inputs[i];
        if (call->inputs[i].dtype == WGT_F16) {
            s = webgpu_temp_convert(wg, &call->inputs[i], WGT_F32, &v->in[i], call->op_name);
            v->in_temp[i] = s == WGT_OK;
        }
    }
    for (int i = 0; i < n_outputs && s == WGT_OK; i++) {
        v->out[i] = call->outputs[i];
        if (call->outputs[i].dtype == WGT_F16) {
            s = webgpu_temp_alloc(wg, WGT_F32, call->outputs[i].ndim, call->outputs[i].shape, &v->out[i]);
            v->out_temp[i] = s == WGT_OK;
        }
    }
    return s;
}

wgt_status webgpu_f32_views_finish(webgpu_backend *wg, const wgt_kernel_call *call, webgpu_f32_views *v, wgt_status s)
{
    for (int i = 0; i < WEBGPU_F32_VIEWS_MAX_OUTPUTS; i++) {
        if (!v->out_temp[i]) continue;
        if (s == WGT_OK) s = webgpu_convert(wg, &v->out[i], &call->outputs[i], call->op_name);
        webgpu_temp_release(wg, &v->out[i]);
    }
    for (int i = 0; i < WGT_MAX_KERNEL_INPUTS; i++)
        if (v->in_temp[i]) webgpu_temp_release(wg, &v->in[i]);
    return s;
}
