/* PLACEHOLDER: being written; supports nothing yet. */
#include "webgpu/webgpu_internal.h"
bool webgpu_indexing_supports(webgpu_backend *wg, const wgt_kernel_call *call) { (void)wg; (void)call; return false; }
wgt_status webgpu_indexing_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: not implemented", call->op_name);
}
