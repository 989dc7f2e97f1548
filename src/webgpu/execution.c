/* Execution: ops are recorded into one open command encoder and compute pass
 * and submitted in batches (on read-back, sync, upload, or when the batch is
 * full). Per-dispatch parameters go into a uniform ring bound with a dynamic
 * offset, written to the device once per batch. */
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

wgt_status webgpu_execution_init(webgpu_backend *wg)
{
    wg->ring_shadow = calloc(1, WEBGPU_RING_BYTES + WEBGPU_PARAMS_MAX);
    if (!wg->ring_shadow) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_context_create: out of host memory");
    wg->ring = webgpu_create_buffer(wg, WEBGPU_RING_BYTES + WEBGPU_PARAMS_MAX,
                                    WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "wgt_context_create");
    return wg->ring ? WGT_OK : wgt_context_status(wg->base.ctx);
}

void webgpu_execution_destroy(webgpu_backend *wg)
{
    for (int i = 0; i < WEBGPU_BIND_GROUP_CACHE; i++)
        if (wg->bind_groups[i].group) wgpuBindGroupRelease(wg->bind_groups[i].group);
    memset(wg->bind_groups, 0, sizeof(wg->bind_groups));
    if (wg->pass) wgpuComputePassEncoderRelease(wg->pass);
    if (wg->encoder) wgpuCommandEncoderRelease(wg->encoder);
    wg->pass = NULL;
    wg->encoder = NULL;
    if (wg->ring) {
        wgpuBufferDestroy(wg->ring);
        wgpuBufferRelease(wg->ring);
    }
    free(wg->ring_shadow);
}

static void end_pass(webgpu_backend *wg)
{
    if (!wg->pass) return;
    wgpuComputePassEncoderEnd(wg->pass);
    wgpuComputePassEncoderRelease(wg->pass);
    wg->pass = NULL;
}

static void ensure_encoder(webgpu_backend *wg)
{
    if (wg->encoder) return;
    WGPUCommandEncoderDescriptor desc = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    wg->encoder = wgpuDeviceCreateCommandEncoder(wg->device, &desc);
}

WGPUCommandEncoder webgpu_encoder_for_copy(webgpu_backend *wg)
{
    end_pass(wg);
    ensure_encoder(wg);
    return wg->encoder;
}

wgt_status webgpu_flush(webgpu_backend *wg)
{
    if (wg->device_lost) return WGT_ERR_DEVICE_LOST;
    /* A stuck queue can block wgpuQueueSubmit without limit: fail fast. */
    wgt_status stuck = webgpu_check_stuck(wg, "webgpu submit");
    if (stuck != WGT_OK) return stuck;
    if (!wg->encoder) return WGT_OK;
    end_pass(wg);
    if (wg->profiler) webgpu_profiler_resolve(wg, wg->encoder);
    if (wg->ring_used) wgpuQueueWriteBuffer(wg->queue, wg->ring, 0, wg->ring_shadow, wg->ring_used);
    WGPUCommandBufferDescriptor desc = WGPU_COMMAND_BUFFER_DESCRIPTOR_INIT;
    WGPUCommandBuffer commands = wgpuCommandEncoderFinish(wg->encoder, &desc);
    wgpuCommandEncoderRelease(wg->encoder);
    wg->encoder = NULL;
    if (commands) {
        wgpuQueueSubmit(wg->queue, 1, &commands);
        wgpuCommandBufferRelease(commands);
        webgpu_track_submission(wg);
        wg->exec.submits++;
    }
    wg->ring_used = 0;
    wg->batch_dispatches = 0;
    return wg->profiler ? webgpu_profiler_collect(wg) : WGT_OK;
}

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2)
{
    (void)message;
    (void)u2;
    webgpu_request *r = u1;
    r->status = (int)status;
    r->done = true;
    webgpu_request_release(r);
}

wgt_status webgpu_finish(webgpu_backend *wg, const char *op)
{
    wgt_status s = webgpu_flush(wg);
    if (s != WGT_OK) return s;
    webgpu_request *r = webgpu_request_new(wg, op); /* may outlive this call: see webgpu_request */
    if (!r) return WGT_ERR_OUT_OF_MEMORY;
    WGPUQueueWorkDoneCallbackInfo cb = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_work_done;
    cb.userdata1 = r;
    wgpuQueueOnSubmittedWorkDone(wg->queue, cb);
    s = webgpu_wait(wg, &r->done, op);
    if (s == WGT_OK && r->status != (int)WGPUQueueWorkDoneStatus_Success)
        s = wgt_error(wg->base.ctx, WGT_ERR_DEVICE_LOST, "%s: queue work finished with status %d", op, r->status);
    webgpu_request_release(r);
    return s;
}

wgt_status webgpu_synchronize(wgt_backend *b) { return webgpu_finish(webgpu_of(b), "wgt_synchronize"); }

wgt_status webgpu_execution_stats(wgt_backend *b, wgt_execution_stats *stats)
{
    *stats = webgpu_of(b)->exec;
    return WGT_OK;
}

wgt_status webgpu_grid(webgpu_backend *wg, uint64_t workgroups, uint32_t *x, uint32_t *y, const char *op)
{
    uint64_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    if (workgroups <= limit) {
        *x = (uint32_t)(workgroups ? workgroups : 1);
        *y = 1;
        return WGT_OK;
    }
    uint64_t rows = (workgroups + limit - 1) / limit;
    if (rows > limit)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_WORKGROUP_SIZE,
                         "%s: %llu workgroups exceed %llu x %llu, the largest 2-D grid", op,
                         (unsigned long long)workgroups, (unsigned long long)limit, (unsigned long long)limit);
    /* Balance the two dimensions so the overshoot past `workgroups` stays small. */
    uint64_t cols = (workgroups + rows - 1) / rows;
    *x = (uint32_t)cols;
    *y = (uint32_t)rows;
    return WGT_OK;
}

void webgpu_bind_groups_forget(webgpu_backend *wg, WGPUBuffer buffer)
{
    for (int i = 0; i < WEBGPU_BIND_GROUP_CACHE; i++) {
        webgpu_bind_group_entry *e = &wg->bind_groups[i];
        if (!e->group) continue;
        for (int k = 0; k < e->n_buffers; k++)
            if (e->buffers[k] == buffer) {
                wgpuBindGroupRelease(e->group); /* recorded work keeps its own reference */
                memset(e, 0, sizeof(*e));
                break;
            }
    }
}

/* The cached bind group for (p's layout, buffers), created on a miss (the
 * entry's previous group is released: recorded passes hold their own refs). */
static wgt_status bind_group_for(webgpu_backend *wg, webgpu_pipeline *p, WGPUBuffer const *buffers, int n_buffers,
                                 const char *op, WGPUBindGroup *out)
{
    wgt_context *ctx = wg->base.ctx;
    uint64_t h = (uint64_t)(uintptr_t)p->layout * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n_buffers; i++) h = (h ^ (uint64_t)(uintptr_t)buffers[i]) * 0x100000001B3ull;
    webgpu_bind_group_entry *e = &wg->bind_groups[(h >> 24) % wg->knobs.bind_group_slots];
    if (e->group && e->layout == p->layout && e->n_buffers == n_buffers &&
        memcmp(e->buffers, buffers, sizeof(WGPUBuffer) * (size_t)n_buffers) == 0) {
        *out = e->group;
        return WGT_OK;
    }
    /* Only new bindings need validating: cached ones passed this before. */
    for (int i = 0; i < n_buffers; i++) {
        uint64_t size = wgpuBufferGetSize(buffers[i]);
        if (size > wg->limits.maxStorageBufferBindingSize)
            return wgt_error(ctx, WGT_ERR_UNSUPPORTED,
                             "%s: a buffer of %llu bytes exceeds this device's storage binding limit of %llu bytes",
                             op, (unsigned long long)size, (unsigned long long)wg->limits.maxStorageBufferBindingSize);
    }

    WGPUBindGroupEntry entries[WEBGPU_MAX_BINDINGS + 1];
    int n = 0;
    if (p->has_params) {
        WGPUBindGroupEntry be = WGPU_BIND_GROUP_ENTRY_INIT;
        be.binding = 0;
        be.buffer = wg->ring;
        be.offset = 0;
        be.size = WEBGPU_PARAMS_MAX;
        entries[n++] = be;
    }
    for (int i = 0; i < n_buffers; i++) {
        WGPUBindGroupEntry be = WGPU_BIND_GROUP_ENTRY_INIT;
        be.binding = (uint32_t)(i + (p->has_params ? 1 : 0));
        be.buffer = buffers[i];
        be.size = WGPU_WHOLE_SIZE;
        entries[n++] = be;
    }
    WGPUBindGroupDescriptor bgd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    bgd.layout = p->layout;
    bgd.entryCount = (size_t)n;
    bgd.entries = entries;
    WGPUBindGroup group = wgpuDeviceCreateBindGroup(wg->device, &bgd);
    if (!group) return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: bind group creation failed", op);
    wg->exec.bind_groups++;
    if (e->group) wgpuBindGroupRelease(e->group);
    e->layout = p->layout;
    e->n_buffers = n_buffers;
    memcpy(e->buffers, buffers, sizeof(WGPUBuffer) * (size_t)n_buffers);
    e->group = group;
    *out = group;
    return WGT_OK;
}

wgt_status webgpu_dispatch(webgpu_backend *wg, webgpu_pipeline *p, WGPUBuffer const *buffers, int n_buffers,
                           const void *params, size_t params_size, uint32_t x, uint32_t y, uint32_t z,
                           const char *op)
{
    wgt_context *ctx = wg->base.ctx;
    if (wgt_fault_hit(&wg->base.fault, WGT_FAULT_LOST_DISPATCH))
        webgpu_lose_device(wg, "injected fault while recording a dispatch");
    if (wg->device_lost) return WGT_ERR_DEVICE_LOST;
    if (x == 0 || y == 0 || z == 0) return WGT_OK;
    uint32_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    if (x > limit || y > limit || z > limit)
        return wgt_error(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE, "%s: workgroup counts (%u, %u, %u) exceed the limit %u",
                         op, x, y, z, limit);
    if (n_buffers != p->n_storage)
        return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: %d buffers for a kernel with %d bindings", op, n_buffers,
                         p->n_storage);
    if (params_size > WEBGPU_PARAMS_MAX)
        return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: %zu parameter bytes, at most %d", op, params_size,
                         WEBGPU_PARAMS_MAX);

    uint32_t align = wg->limits.minUniformBufferOffsetAlignment ? wg->limits.minUniformBufferOffsetAlignment : 256;
    if (p->has_params && wg->ring_used + WEBGPU_PARAMS_MAX > WEBGPU_RING_BYTES) {
        wgt_status s = webgpu_flush(wg);
        if (s != WGT_OK) return s;
    }
    uint32_t offset = wg->ring_used;
    if (p->has_params) {
        if (params_size) memcpy(wg->ring_shadow + offset, params, params_size);
        wg->ring_used += (uint32_t)((params_size + align - 1) / align * align);
        if (params_size == 0) wg->ring_used += align;
    }

    WGPUBindGroup group;
    wgt_status s = bind_group_for(wg, p, buffers, n_buffers, op, &group);
    if (s != WGT_OK) return s;

    wg->current_op = op;
    WGPUComputePassEncoder pass = webgpu_open_pass(wg);
    wgpuComputePassEncoderSetPipeline(pass, p->pipeline);
    wgpuComputePassEncoderSetBindGroup(pass, 0, group, p->has_params ? 1 : 0, p->has_params ? &offset : NULL);
    wgpuComputePassEncoderDispatchWorkgroups(pass, x, y, z);
    return webgpu_dispatch_recorded(wg);
}

WGPUComputePassEncoder webgpu_open_pass(webgpu_backend *wg)
{
    if (wg->profiler) {
        /* One pass per dispatch, each with its own begin/end timestamps. */
        end_pass(wg);
        if (webgpu_profiler_full(wg)) webgpu_flush(wg);
        ensure_encoder(wg);
        wg->pass = webgpu_profiler_begin_pass(wg, wg->encoder, wg->current_op ? wg->current_op : "kernel");
        return wg->pass;
    }
    ensure_encoder(wg);
    if (!wg->pass) {
        WGPUComputePassDescriptor cpd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
        wg->pass = wgpuCommandEncoderBeginComputePass(wg->encoder, &cpd);
    }
    return wg->pass;
}

/* Dispatches per batch: WEBGPU_BATCH_DISPATCHES, or WGT_BATCH_DISPATCHES=n in
 * [1, WEBGPU_BATCH_DISPATCHES_MAX] (wg->knobs.batch_dispatches, read when the
 * context was created). With 256, a decoded token's ~250 dispatches fit one
 * batch and the GPU waited until the host had recorded all of them; smaller
 * batches let it start on the first layers meanwhile. */
wgt_status webgpu_dispatch_recorded(webgpu_backend *wg)
{
    if (wg->profiler) end_pass(wg);
    wg->exec.dispatches++;
    if (++wg->batch_dispatches >= wg->knobs.batch_dispatches) return webgpu_flush(wg);
    return WGT_OK;
}
