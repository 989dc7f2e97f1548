/*
 * The storage-binding limit, checked per kernel call before anything is
 * recorded, so the message names the operand, its shape and dtype, the
 * tensor's real size, the buffer's size (the pool rounds allocations up to a
 * size class) and the limit (issue 8: "a buffer of 167772160 bytes exceeds
 * ... 134217728" said none of that). Buffers are bound whole (see
 * webgpu_internal.h), so a view fits only if its whole buffer does.
 */
#include <inttypes.h>
#include <stdio.h>

#include "webgpu/webgpu_internal.h"

static wgt_status check_view(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *v,
                             const char *role, int index)
{
    if (!v->storage || !v->storage->handle) return WGT_OK; /* malformed calls are reported by the kernels */
    uint64_t buffer = wgpuBufferGetSize(webgpu_view_buffer(v));
    uint64_t limit = wg->limits.maxStorageBufferBindingSize;
    if (buffer <= limit) return WGT_OK;
    char shape[160];
    uint64_t bytes = (uint64_t)wgt_shape_numel(v->ndim, v->shape) * wgt_dtype_size(v->dtype);
    return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED,
                     "%s: %s %d, %s %s of %" PRIu64 " bytes (storage of %zu bytes, a device buffer of %" PRIu64
                     " bytes), exceeds this device's storage binding limit of %" PRIu64
                     " bytes (maxStorageBufferBindingSize): split the tensor or use the CPU backend",
                     call->op_name ? call->op_name : "kernel", role, index,
                     wgt_shape_string(v->ndim, v->shape, shape, sizeof shape), wgt_dtype_name(v->dtype), bytes,
                     v->storage->bytes, buffer, limit);
}

wgt_status webgpu_check_binding_limits(webgpu_backend *wg, const wgt_kernel_call *call)
{
    for (int i = 0; i < call->n_inputs && i < WGT_MAX_KERNEL_INPUTS; i++) {
        wgt_status s = check_view(wg, call, &call->inputs[i], "input", i);
        if (s != WGT_OK) return s;
    }
    for (int i = 0; i < call->n_outputs && i < (int)(sizeof(call->outputs) / sizeof(call->outputs[0])); i++) {
        wgt_status s = check_view(wg, call, &call->outputs[i], "output", i);
        if (s != WGT_OK) return s;
    }
    return WGT_OK;
}
