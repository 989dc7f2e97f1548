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
    case WGT_KERNEL_ATTENTION:
    case WGT_KERNEL_ATTENTION_BACKWARD:
    case WGT_KERNEL_ROPE: return webgpu_attention_supports(wg, call);
    case WGT_KERNEL_NN: return webgpu_nn_supports(wg, call);
    case WGT_KERNEL_OPTIMIZER: return webgpu_optimizer_supports(wg, call);
    case WGT_KERNEL_CONV: return webgpu_conv_supports(wg, call);
    case WGT_KERNEL_QMATMUL: return webgpu_quant_supports(wg, call);
    case WGT_KERNEL_QROWS: return webgpu_quant_rows_supports(wg, call);
    case WGT_KERNEL_COUNT: break;
    }
    return false;
}

static double view_bytes(const wgt_tensor_view *v)
{
    return (double)wgt_shape_numel(v->ndim, v->shape) * (double)wgt_dtype_size(v->dtype);
}

/* Bytes an op must move at least (inputs read once, outputs written once) and
 * its flops, for the profiler's GB/s and GFLOP/s. */
static void estimate_work(webgpu_backend *wg, const wgt_kernel_call *call)
{
    double bytes = 0, flops = 0;
    for (int i = 0; i < call->n_inputs; i++) bytes += view_bytes(&call->inputs[i]);
    for (int i = 0; i < call->n_outputs; i++) bytes += view_bytes(&call->outputs[i]);
    if (call->kind == WGT_KERNEL_MATMUL) {
        const wgt_tensor_view *a = &call->inputs[0], *o = &call->outputs[0];
        flops = 2.0 * (double)wgt_shape_numel(o->ndim, o->shape) * (double)a->shape[a->ndim - 1];
    }
    webgpu_profiler_set_work(wg, bytes, flops);
}

static wgt_status webgpu_run(wgt_backend *b, const wgt_kernel_call *call)
{
    webgpu_backend *wg = webgpu_of(b);
    if (wg->device_lost) return WGT_ERR_DEVICE_LOST;
    /* ELEMENTWISE plans and refuses inside its run(); the others are asked first. */
    if (call->kind != WGT_KERNEL_ELEMENTWISE && !webgpu_supports(b, call)) {
        const wgt_tensor_view *x = call->n_inputs ? &call->inputs[0] : &call->outputs[0];
        char buf[160];
        return wgt_error(b->ctx, WGT_ERR_UNSUPPORTED, "%s: the webgpu backend does not support %s %s", call->op_name,
                         wgt_dtype_name(x->dtype), wgt_shape_string(x->ndim, x->shape, buf, sizeof(buf)));
    }
    wgt_status limits = webgpu_check_binding_limits(wg, call); /* names the operand over the limit */
    if (limits != WGT_OK) return limits;
    if (wg->profiler) estimate_work(wg, call);
    switch (call->kind) {
    case WGT_KERNEL_ELEMENTWISE: return webgpu_elementwise_run(wg, call);
    case WGT_KERNEL_REDUCE:
    case WGT_KERNEL_CUMSUM:
    case WGT_KERNEL_SOFTMAX: return webgpu_reduce_run(wg, call);
    case WGT_KERNEL_MATMUL: return webgpu_matmul_run(wg, call);
    case WGT_KERNEL_GATHER:
    case WGT_KERNEL_SCATTER_ADD:
    case WGT_KERNEL_TOPK: return webgpu_indexing_run(wg, call);
    case WGT_KERNEL_ATTENTION:
    case WGT_KERNEL_ATTENTION_BACKWARD:
    case WGT_KERNEL_ROPE: return webgpu_attention_run(wg, call);
    case WGT_KERNEL_NN: return webgpu_nn_run(wg, call);
    case WGT_KERNEL_OPTIMIZER: return webgpu_optimizer_run(wg, call);
    case WGT_KERNEL_CONV: return webgpu_conv_run(wg, call);
    case WGT_KERNEL_QMATMUL: return webgpu_quant_run(wg, call);
    case WGT_KERNEL_QROWS: return webgpu_quant_rows_run(wg, call);
    case WGT_KERNEL_COUNT: break;
    }
    return wgt_error(b->ctx, WGT_ERR_INTERNAL, "%s: unknown kernel kind %d", call->op_name, (int)call->kind);
}

/* Out-of-range indices that the indexing kernels found on the device are
 * reported at the caller's next read-back or synchronize (webgpu_indexing.c).
 * The check is added here, at the vtable, so that memory.c and execution.c,
 * which the indexing kernels run on, never call back up into them. */
static wgt_status storage_read_checked(wgt_backend *b, void *handle, size_t offset, void *dst, size_t bytes)
{
    wgt_status s = webgpu_storage_read(b, handle, offset, dst, bytes);
    return s == WGT_OK ? webgpu_indexing_check(webgpu_of(b)) : s;
}

static wgt_status synchronize_checked(wgt_backend *b)
{
    wgt_status s = webgpu_synchronize(b);
    return s == WGT_OK ? webgpu_indexing_check(webgpu_of(b)) : s;
}

const wgt_backend_vtable webgpu_vtable = {
    .name = "webgpu",
    .destroy = webgpu_destroy,
    .adapter_info = webgpu_adapter_info,
    .storage_alloc = webgpu_storage_alloc,
    .storage_free = webgpu_storage_free,
    .storage_write = webgpu_storage_write,
    .storage_read = storage_read_checked,
    /* no index check here: it would wait for all recorded work (wgt_tensor_read_start) */
    .storage_read_start = webgpu_storage_read_start,
    .storage_read_finish = webgpu_storage_read_finish,
    .storage_read_ready = webgpu_storage_read_ready,
    .supports = webgpu_supports,
    .run = webgpu_run,
    .synchronize = synchronize_checked,
    .memory_stats = webgpu_memory_stats,
    .pipeline_stats = webgpu_pipeline_stats,
    .execution_stats = webgpu_execution_stats,
    .memory_trim = webgpu_memory_trim,
    .memory_set_budget = webgpu_memory_set_budget,
    .custom_kernel = webgpu_custom_kernel,
    .profiler_enable = webgpu_profiler_enable,
    .profiler_report = webgpu_profiler_report,
    .profiler_write_trace = webgpu_profiler_write_trace,
    .tune = webgpu_tune,
};
