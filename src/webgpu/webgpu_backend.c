/* The WebGPU backend's function table: routes each kernel call to its family. */
#include "webgpu/webgpu_internal.h"

static bool webgpu_supports(wgt_backend *b, const wgt_kernel_call *call)
{
    webgpu_backend *wg = webgpu_of(b);
    switch (call->kind) {
    case WGT_KERNEL_ELEMENTWISE: return webgpu_elementwise_supports(wg, call);
    case WGT_KERNEL_REDUCE:
    case WGT_KERNEL_CUMSUM:
    case WGT_KERNEL_SOFTMAX: return webgpu_reduce_supports(wg, call);
    case WGT_KERNEL_MATMUL: return webgpu_matmul_supports(wg, call);
    case WGT_KERNEL_GATHER:
    case WGT_KERNEL_SCATTER_ADD:
    case WGT_KERNEL_TOPK: return webgpu_indexing_supports(wg, call);
    case WGT_KERNEL_COUNT: break;
    }
    return false;
}

static wgt_status webgpu_run(wgt_backend *b, const wgt_kernel_call *call)
{
    webgpu_backend *wg = webgpu_of(b);
    if (wg->device_lost) return WGT_ERR_DEVICE_LOST;
    switch (call->kind) {
    case WGT_KERNEL_ELEMENTWISE: return webgpu_elementwise_run(wg, call);
    case WGT_KERNEL_REDUCE:
    case WGT_KERNEL_CUMSUM:
    case WGT_KERNEL_SOFTMAX: return webgpu_reduce_run(wg, call);
    case WGT_KERNEL_MATMUL: return webgpu_matmul_run(wg, call);
    case WGT_KERNEL_GATHER:
    case WGT_KERNEL_SCATTER_ADD:
    case WGT_KERNEL_TOPK: return webgpu_indexing_run(wg, call);
    case WGT_KERNEL_COUNT: break;
    }
    return wgt_error(b->ctx, WGT_ERR_INTERNAL, "%s: unknown kernel kind %d", call->op_name, (int)call->kind);
}

const wgt_backend_vtable webgpu_vtable = {
    .name = "webgpu",
    .destroy = webgpu_destroy,
    .adapter_info = webgpu_adapter_info,
    .storage_alloc = webgpu_storage_alloc,
    .storage_free = webgpu_storage_free,
    .storage_write = webgpu_storage_write,
    .storage_read = webgpu_storage_read,
    .supports = webgpu_supports,
    .run = webgpu_run,
    .synchronize = webgpu_synchronize,
    .memory_stats = webgpu_memory_stats,
    .pipeline_stats = webgpu_pipeline_stats,
    .execution_stats = webgpu_execution_stats,
    .memory_trim = webgpu_memory_trim,
    .memory_set_budget = webgpu_memory_set_budget,
    .custom_kernel = webgpu_custom_kernel,
};
