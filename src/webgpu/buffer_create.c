/* Device buffer creation inside an error scope, with out-of-memory told
 * apart from other failures. Its own file, below memory.c: the execution
 * ring, the profiler and the kernel families create buffers of their own,
 * and memory.c records through execution.c, so with creation in memory.c the
 * two called each other. */
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* wgpu reports some out-of-memory conditions as other error types ("Not
 * enough memory left"): classify by the message too. */
static bool is_out_of_memory(WGPUErrorType type, const char *message)
{
    return type == WGPUErrorType_OutOfMemory || strstr(message, "memory left") || strstr(message, "out of memory") ||
           strstr(message, "Out of memory") || strstr(message, "OutOfMemory");
}

static WGPUBuffer create_buffer(webgpu_backend *wg, uint64_t size, WGPUBufferUsage usage, const char *op,
                                bool fault_point)
{
    if (fault_point && wgt_fault_hit(&wg->base.fault, WGT_FAULT_ALLOC)) {
        wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY,
                  "%s: device buffer of %llu bytes could not be created: out of memory (injected fault)", op,
                  (unsigned long long)size);
        return NULL;
    }
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.size = size;
    desc.usage = usage;
    webgpu_error_scope_push(wg);
    WGPUBuffer buffer = wgpuDeviceCreateBuffer(wg->device, &desc);
    WGPUErrorType type;
    char message[512];
    wgt_status s = webgpu_error_scope_pop(wg, &type, message, sizeof(message));
    if (s != WGT_OK || type != WGPUErrorType_NoError || !buffer) {
        if (buffer) wgpuBufferRelease(buffer);
        if (s == WGT_OK)
            wgt_error(wg->base.ctx, is_out_of_memory(type, message) ? WGT_ERR_OUT_OF_MEMORY : WGT_ERR_INTERNAL,
                      "%s: device buffer of %llu bytes could not be created: %s", op, (unsigned long long)size,
                      message);
        return NULL;
    }
    return buffer;
}

WGPUBuffer webgpu_create_buffer(webgpu_backend *wg, uint64_t size, WGPUBufferUsage usage, const char *op)
{
    return create_buffer(wg, size, usage, op, true);
}

/* No fault point here: webgpu_storage_alloc, the pool's only caller, has its own. */
WGPUBuffer webgpu_create_pool_buffer(webgpu_backend *wg, uint64_t size, WGPUBufferUsage usage, const char *op)
{
    return create_buffer(wg, size, usage, op, false);
}
