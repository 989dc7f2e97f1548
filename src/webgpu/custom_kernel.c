/* Caller-supplied WGSL: validated completely before anything reaches the
 * implementation (which aborts the process on some invalid work). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* Finds "@workgroup_size(a[, b[, c]])" on the function named entry. Returns the
 * number of literal sizes found (0 if they are not integer literals). */
static int parse_workgroup_size(const char *src, const char *entry, uint32_t size[3])
{
    size_t elen = strlen(entry);
    for (const char *fn = strstr(src, "fn "); fn; fn = strstr(fn + 3, "fn ")) {
        const char *name = fn + 3;
        while (*name == ' ') name++;
        if (strncmp(name, entry, elen) != 0 || (isalnum((unsigned char)name[elen]) || name[elen] == '_')) continue;
        /* The attribute precedes "fn" within the same declaration. */
        const char *start = fn;
        while (start > src && start[-1] != ';' && start[-1] != '}') start--;
        const char *attr = NULL;
        for (const char *p = strstr(start, "@workgroup_size"); p && p < fn; p = strstr(p + 1, "@workgroup_size"))
            attr = p;
        if (!attr) return 0;
        const char *p = strchr(attr, '(');
        if (!p) return 0;
        p++;
        size[0] = size[1] = size[2] = 1;
        int n = 0;
        while (n < 3) {
            while (isspace((unsigned char)*p)) p++;
            if (!isdigit((unsigned char)*p)) return 0; /* an override or const expression */
            char *end;
            unsigned long v = strtoul(p, &end, 0);
            size[n++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            p = end;
            while (*p == 'u' || *p == 'i' || isspace((unsigned char)*p)) p++;
            if (*p == ',') {
                p++;
                continue;
            }
            break;
        }
        return n;
    }
    return 0;
}

static uint64_t hash64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return h;
}

wgt_status webgpu_custom_kernel(wgt_backend *b, const wgt_custom_kernel *k, wgt_storage *const *storages)
{
    webgpu_backend *wg = webgpu_of(b);
    wgt_context *ctx = b->ctx;
    const char *op = "wgt_custom_kernel_run";
    const WGPULimits *lim = &wg->limits;

    uint32_t size[3];
    if (parse_workgroup_size(k->wgsl, k->entry_point, size) > 0) {
        uint64_t invocations = (uint64_t)size[0] * size[1] * size[2];
        if (size[0] == 0 || size[1] == 0 || size[2] == 0 || size[0] > lim->maxComputeWorkgroupSizeX ||
            size[1] > lim->maxComputeWorkgroupSizeY || size[2] > lim->maxComputeWorkgroupSizeZ ||
            invocations > lim->maxComputeInvocationsPerWorkgroup)
            return wgt_error(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE,
                             "%s: @workgroup_size(%u, %u, %u) of \"%s\" exceeds the device limits "
                             "(%u, %u, %u; %u invocations)",
                             op, size[0], size[1], size[2], k->entry_point, lim->maxComputeWorkgroupSizeX,
                             lim->maxComputeWorkgroupSizeY, lim->maxComputeWorkgroupSizeZ,
                             lim->maxComputeInvocationsPerWorkgroup);
    }
    for (int d = 0; d < 3; d++)
        if (k->workgroups[d] > lim->maxComputeWorkgroupsPerDimension)
            return wgt_error(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE,
                             "%s: workgroup count %u in dimension %d exceeds the limit %u (fold large grids into 2-D)",
                             op, k->workgroups[d], d, lim->maxComputeWorkgroupsPerDimension);
    if (k->n_buffers > (int)lim->maxStorageBuffersPerShaderStage || k->n_buffers > WEBGPU_MAX_BINDINGS)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %d buffers, at most %d", op, k->n_buffers,
                         (int)(lim->maxStorageBuffersPerShaderStage < WEBGPU_MAX_BINDINGS
                                   ? lim->maxStorageBuffersPerShaderStage
                                   : WEBGPU_MAX_BINDINGS));
    if (k->uniform_size > lim->maxUniformBufferBindingSize)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %zu uniform bytes exceed the limit %llu", op,
                         k->uniform_size, (unsigned long long)lim->maxUniformBufferBindingSize);
    for (int i = 0; i < k->n_buffers; i++)
        if (storages[i]->bytes > lim->maxStorageBufferBindingSize)
            return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: buffer %d has %zu bytes, over the binding limit %llu", op,
                             i, storages[i]->bytes, (unsigned long long)lim->maxStorageBufferBindingSize);

    bool read_only[WEBGPU_MAX_BINDINGS];
    char key[160];
    int used = snprintf(key, sizeof(key), "custom:%016llx:%zu:%s:", (unsigned long long)hash64(k->wgsl),
                        strlen(k->wgsl), k->entry_point);
    for (int i = 0; i < k->n_buffers; i++) {
        read_only[i] = k->read_only && k->read_only[i];
        if (used < (int)sizeof(key) - 2) key[used++] = read_only[i] ? 'r' : 'w';
    }
    snprintf(key + used, sizeof(key) - (size_t)used, ":%c", k->uniform_size ? 'u' : '-');

    webgpu_pipeline *p = webgpu_pipeline_find(wg, key);
    if (!p) {
        wgt_status s = webgpu_pipeline_create_ex(wg, key, k->wgsl, k->entry_point, k->n_buffers, read_only,
                                                 k->uniform_size > 0, true, true, op, &p);
        if (s != WGT_OK) return s;
    }
    if (k->workgroups[0] == 0 || k->workgroups[1] == 0 || k->workgroups[2] == 0) return WGT_OK;

    WGPUBuffer uniform = NULL;
    uint64_t uniform_bytes = (k->uniform_size + 15) & ~(uint64_t)15;
    if (k->uniform_size) {
        uniform = webgpu_create_buffer(wg, uniform_bytes, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, op);
        if (!uniform) return wgt_context_status(ctx);
        unsigned char *padded = calloc(1, uniform_bytes);
        if (!padded) {
            wgpuBufferRelease(uniform);
            return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        }
        memcpy(padded, k->uniform, k->uniform_size);
        /* A fresh buffer no recorded command uses: the queue write needs no flush. */
        wgpuQueueWriteBuffer(wg->queue, uniform, 0, padded, uniform_bytes);
        free(padded);
    }
    WGPUBindGroupEntry entries[WEBGPU_MAX_BINDINGS + 1];
    int n = 0;
    for (int i = 0; i < k->n_buffers; i++) {
        WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
        e.binding = (uint32_t)i;
        e.buffer = ((webgpu_block *)storages[i]->handle)->buffer;
        e.size = WGPU_WHOLE_SIZE;
        entries[n++] = e;
    }
    if (uniform) {
        WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
        e.binding = (uint32_t)k->n_buffers;
        e.buffer = uniform;
        e.size = uniform_bytes;
        entries[n++] = e;
    }
    WGPUBindGroupDescriptor bgd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    bgd.layout = p->layout;
    bgd.entryCount = (size_t)n;
    bgd.entries = entries;
    webgpu_error_scope_push(wg);
    WGPUBindGroup group = wgpuDeviceCreateBindGroup(wg->device, &bgd);
    WGPUErrorType type;
    char message[512];
    wgt_status s = webgpu_error_scope_pop(wg, &type, message, sizeof(message));
    if (s == WGT_OK && type != WGPUErrorType_NoError)
        s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the buffers do not match the shader's bindings: %s", op,
                      message);
    if (s == WGT_OK) {
        wg->current_op = op;
        WGPUComputePassEncoder pass = webgpu_open_pass(wg);
        wgpuComputePassEncoderSetPipeline(pass, p->pipeline);
        wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
        wgpuComputePassEncoderDispatchWorkgroups(pass, k->workgroups[0], k->workgroups[1], k->workgroups[2]);
        s = webgpu_dispatch_recorded(wg);
    }
    if (group) wgpuBindGroupRelease(group);
    if (uniform) wgpuBufferRelease(uniform); /* recorded work keeps it alive */
    return s;
}
