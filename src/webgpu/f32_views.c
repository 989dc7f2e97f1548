/* f32 views of a call for the kernel families that compute in f32 only (nn,
 * conv): f16 inputs converted into temporaries, f16 outputs written to
 * temporaries and converted back (see webgpu_internal.h). */
#include <string.h>

#include "webgpu/webgpu_internal.h"

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
