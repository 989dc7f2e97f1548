/* Caller-supplied WGSL: validated completely before anything reaches the
 * implementation (which aborts the process on some invalid work: a shader
 * compiler panic on non-UTF-8 text, an invalid command buffer in submit).
 *
 * Each custom kernel is recorded in its own command encoder inside an error
 * scope and submitted only if the implementation accepted it: bindings smaller
 * than the shader declares, or one buffer bound read-only and read-write, come
 * back as WGT_ERR_INVALID_ARGUMENT instead of an abort in wgpuQueueSubmit. */
#include <ctype.h>
#include <stdio.h>
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

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
 * Returns the byte offset of the first invalid sequence, or -1. */
static long long utf8_invalid_at(const char *text)
{
    const unsigned char *s = (const unsigned char *)text, *p = s;
    while (*p) {
        unsigned c = *p;
        int n;
        unsigned min;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return (long long)(p - s);
        }
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return (long long)(p - s);
            c = (c << 6) | (p[i] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return (long long)(p - s);
        p += n + 1;
    }
    return -1;
}

/* The bytes of tensor i's elements inside its buffer: exactly its view, so a
 * kernel's index 0 is the tensor's first element (not a debug guard or the
 * start of a parent tensor). Refuses what WebGPU cannot bind. */
static wgt_status binding_range(webgpu_backend *wg, const wgt_tensor *t, int i, uint64_t *offset, uint64_t *size)
{
    const char *op = "wgt_custom_kernel_run";
    uint64_t elem = wgt_dtype_size(t->view.dtype);
    uint64_t numel = (uint64_t)wgt_shape_numel(t->view.ndim, t->view.shape);
    uint64_t buffer_size = ((webgpu_block *)t->view.storage->handle)->size;
    uint64_t align = wg->limits.minStorageBufferOffsetAlignment ? wg->limits.minStorageBufferOffsetAlignment : 256;
    *offset = (uint64_t)t->view.offset * elem;
    *size = (numel * elem + 3) & ~(uint64_t)3; /* storage bindings are whole words */
    if (numel == 0)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: buffers[%d] has no elements to bind", op, i);
    if (*offset % align)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT,
                         "%s: buffers[%d] starts at byte %llu of its storage, not a multiple of the device's "
                         "%llu-byte storage offset alignment (a slice: use wgt_contiguous first)",
                         op, i, (unsigned long long)*offset, (unsigned long long)align);
    if (*offset + *size > buffer_size)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT,
                         "%s: buffers[%d] (%llu bytes at %llu) cannot be bound as whole words inside its %llu-byte "
                         "storage",
                         op, i, (unsigned long long)(numel * elem), (unsigned long long)*offset,
                         (unsigned long long)buffer_size);
    return WGT_OK;
}

/* Pipeline cache key: source hash and length, entry point, access pattern.
 * Heap-allocated: the entry point has no length limit. */
static char *pipeline_key(webgpu_backend *wg, const wgt_custom_kernel *k, const bool *read_only)
{
    char access[WEBGPU_MAX_BINDINGS + 1];
    for (int i = 0; i < k->n_buffers; i++) access[i] = read_only[i] ? 'r' : 'w';
    access[k->n_buffers] = '\0';
    const char *fmt = "custom:%016llx:%zu:%s:%s:%c";
    unsigned long long h = (unsigned long long)hash64(k->wgsl);
    size_t len = strlen(k->wgsl);
    char u = k->uniform_size ? 'u' : '-';
    int n = snprintf(NULL, 0, fmt, h, len, k->entry_point, access, u);
    if (n < 0) return NULL;
    char *key = webgpu_host_alloc(wg, (size_t)n + 1, 1, false);
    if (key) snprintf(key, (size_t)n + 1, fmt, h, len, k->entry_point, access, u);
    return key;
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
    uint64_t offsets[WEBGPU_MAX_BINDINGS], sizes[WEBGPU_MAX_BINDINGS];
    for (int i = 0; i < k->n_buffers; i++) {
        read_only[i] = k->read_only && k->read_only[i];
        wgt_status s = binding_range(wg, k->buffers[i], i, &offsets[i], &sizes[i]);
        if (s != WGT_OK) return s;
    }
    /* One buffer in two bindings, one of them writable: a usage conflict that
     * wgpu-native turns into an abort at submit. */
    for (int i = 0; i < k->n_buffers; i++)
        for (int j = i + 1; j < k->n_buffers; j++)
            if (storages[i]->handle == storages[j]->handle && (!read_only[i] || !read_only[j]))
                return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                                 "%s: buffers[%d] and buffers[%d] share one storage and one of them is read-write "
                                 "(WebGPU forbids that aliasing in one dispatch; copy one with wgt_contiguous)",
                                 op, i, j);
    long long bad = utf8_invalid_at(k->wgsl);
    if (bad >= 0)
        return wgt_error(ctx, WGT_ERR_SHADER_COMPILE, "%s: the WGSL source is not valid UTF-8 (byte %lld)", op, bad);

    char *key = pipeline_key(wg, k, read_only);
    if (!key) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory (the pipeline key of %zu bytes)", op,
                               strlen(k->entry_point) + 64);
    webgpu_pipeline *p = webgpu_pipeline_find(wg, key);
    if (!p) {
        wgt_status s = webgpu_pipeline_create_ex(wg, key, k->wgsl, k->entry_point, k->n_buffers, read_only,
                                                 k->uniform_size > 0, true, true, op, &p);
        if (s != WGT_OK) {
            free(key);
            return s;
        }
    }
    free(key);
    if (k->workgroups[0] == 0 || k->workgroups[1] == 0 || k->workgroups[2] == 0) return WGT_OK;
    /* Its own command buffer (below): submit what is recorded before it. */
    wgt_status flushed = webgpu_flush(wg);
    if (flushed != WGT_OK) return flushed;

    WGPUBuffer uniform = NULL;
    uint64_t uniform_bytes = (k->uniform_size + 15) & ~(uint64_t)15;
    if (k->uniform_size) {
        uniform = webgpu_create_buffer(wg, uniform_bytes, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, op);
        if (!uniform) return wgt_context_status(ctx);
        unsigned char *padded = webgpu_host_alloc(wg, 1, uniform_bytes, true);
        if (!padded) {
            wgpuBufferRelease(uniform);
            return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%llu uniform bytes)", op,
                             (unsigned long long)uniform_bytes);
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
        e.offset = offsets[i];
        e.size = sizes[i];
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
    /* Bind group, pass and command buffer in one error scope: whatever the
     * implementation rejects is reported here and never submitted. */
    webgpu_error_scope_push(wg);
    WGPUBindGroup group = wgpuDeviceCreateBindGroup(wg->device, &bgd);
    WGPUCommandEncoderDescriptor ed = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(wg->device, &ed);
    WGPUComputePassDescriptor cpd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(encoder, &cpd);
    wgpuComputePassEncoderSetPipeline(pass, p->pipeline);
    wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    wgpuComputePassEncoderDispatchWorkgroups(pass, k->workgroups[0], k->workgroups[1], k->workgroups[2]);
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
    WGPUCommandBufferDescriptor cbd = WGPU_COMMAND_BUFFER_DESCRIPTOR_INIT;
    WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, &cbd);
    wgpuCommandEncoderRelease(encoder);
    WGPUErrorType type;
    char message[512];
    wgt_status s = webgpu_error_scope_pop(wg, &type, message, sizeof(message));
    if (s == WGT_OK && (type != WGPUErrorType_NoError || !commands))
        s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the buffers do not match the shader's bindings: %s", op,
                      message);
    if (s == WGT_OK) {
        wgpuQueueSubmit(wg->queue, 1, &commands);
        webgpu_track_submission(wg);
        wg->exec.submits++;
        wg->exec.dispatches++;
    }
    if (commands) wgpuCommandBufferRelease(commands);
    if (group) wgpuBindGroupRelease(group);
    if (uniform) wgpuBufferRelease(uniform); /* submitted work keeps it alive */
    return s;
}
