/* GPU profiling with timestamp queries: when enabled, each dispatch runs in its
 * own compute pass whose begin/end timestamps land in a query set; at each
 * submit the queries are resolved and read back (profiling therefore
 * synchronizes every batch — it measures kernels, not the pipeline). Results:
 * a per-op table (calls, total and mean GPU time, GB/s, GFLOP/s) and a trace
 * file in the Chrome trace format that Perfetto and chrome://tracing open.
 * When disabled the cost is one branch per dispatch. */
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#define PROFILE_SLOTS 1024 /* dispatches per batch with timestamps */

struct webgpu_profiler {
    WGPUQuerySet queries;
    WGPUBuffer resolve, readback;
    uint32_t used;
    const char *names[PROFILE_SLOTS];
    double bytes[PROFILE_SLOTS], flops[PROFILE_SLOTS];
    double pending_bytes, pending_flops; /* the op being recorded */
    double period_ns;                    /* per timestamp tick */
    /* aggregates */
    struct op_total {
        const char *name;
        uint64_t calls;
        double ns, bytes, flops;
    } *totals;
    int n_totals, totals_capacity;
    /* trace events */
    struct trace_event {
        const char *name;
        double start_ns, duration_ns;
    } *events;
    size_t n_events, events_capacity;
    double origin_ns; /* first timestamp seen */
    bool have_origin;
};

/* The query set and its buffers; the caller (profiler_control.c) has flushed,
 * so no earlier work is profiled. */
wgt_status webgpu_profiler_create(webgpu_backend *wg)
{
    wgt_backend *b = &wg->base;
    webgpu_profiler *p = calloc(1, sizeof(*p));
    if (!p) return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_profiler_enable: out of host memory");
    WGPUQuerySetDescriptor qd = WGPU_QUERY_SET_DESCRIPTOR_INIT;
    qd.type = WGPUQueryType_Timestamp;
    qd.count = 2 * PROFILE_SLOTS;
    p->queries = wgpuDeviceCreateQuerySet(wg->device, &qd);
    p->resolve = webgpu_create_buffer(wg, 16 * PROFILE_SLOTS, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc,
                                      "wgt_profiler_enable");
    p->readback = webgpu_create_buffer(wg, 16 * PROFILE_SLOTS, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                                       "wgt_profiler_enable");
    p->period_ns = webgpu_native_timestamp_period(wg->queue);
    wg->profiler = p;
    if (!p->queries || !p->resolve || !p->readback) {
        webgpu_profiler_destroy(wg);
        return wgt_context_status(b->ctx) != WGT_OK ? wgt_context_status(b->ctx) : WGT_ERR_INTERNAL;
    }
    return WGT_OK;
}

void webgpu_profiler_destroy(webgpu_backend *wg)
{
    webgpu_profiler *p = wg->profiler;
    if (!p) return;
    if (p->queries) wgpuQuerySetRelease(p->queries);
    if (p->resolve) wgpuBufferRelease(p->resolve);
    if (p->readback) wgpuBufferRelease(p->readback);
    free(p->totals);
    free(p->events);
    free(p);
    wg->profiler = NULL;
}

void webgpu_profiler_set_work(webgpu_backend *wg, double bytes, double flops)
{
    if (!wg->profiler) return;
    wg->profiler->pending_bytes = bytes;
    wg->profiler->pending_flops = flops;
}

/* Opens the pass for the next dispatch with begin/end timestamps. */
WGPUComputePassEncoder webgpu_profiler_begin_pass(webgpu_backend *wg, WGPUCommandEncoder encoder, const char *op)
{
    webgpu_profiler *p = wg->profiler;
    uint32_t slot = p->used++;
    p->names[slot] = op;
    /* the op's work counts once, on its first dispatch */
    p->bytes[slot] = p->pending_bytes;
    p->flops[slot] = p->pending_flops;
    p->pending_bytes = p->pending_flops = 0;
    WGPUPassTimestampWrites tw = WGPU_PASS_TIMESTAMP_WRITES_INIT;
    tw.querySet = p->queries;
    tw.beginningOfPassWriteIndex = 2 * slot;
    tw.endOfPassWriteIndex = 2 * slot + 1;
    WGPUComputePassDescriptor cpd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    cpd.timestampWrites = &tw;
    return wgpuCommandEncoderBeginComputePass(encoder, &cpd);
}

bool webgpu_profiler_full(const webgpu_backend *wg) { return wg->profiler && wg->profiler->used >= PROFILE_SLOTS; }

void webgpu_profiler_resolve(webgpu_backend *wg, WGPUCommandEncoder encoder)
{
    webgpu_profiler *p = wg->profiler;
    if (!p || p->used == 0) return;
    wgpuCommandEncoderResolveQuerySet(encoder, p->queries, 0, 2 * p->used, p->resolve, 0);
    wgpuCommandEncoderCopyBufferToBuffer(encoder, p->resolve, 0, p->readback, 0, 16ull * p->used);
}

static struct op_total *total_for(webgpu_profiler *p, const char *name)
{
    for (int i = 0; i < p->n_totals; i++)
        if (p->totals[i].name == name || strcmp(p->totals[i].name, name) == 0) return &p->totals[i];
    if (p->n_totals == p->totals_capacity) {
        int capacity = p->totals_capacity ? 2 * p->totals_capacity : 32;
        struct op_total *grown = realloc(p->totals, (size_t)capacity * sizeof(*grown));
        if (!grown) return NULL;
        p->totals = grown;
        p->totals_capacity = capacity;
    }
    struct op_total *t = &p->totals[p->n_totals++];
    memset(t, 0, sizeof(*t));
    t->name = name;
    return t;
}

/* After the submit that resolved the queries: read them and accumulate. */
wgt_status webgpu_profiler_collect(webgpu_backend *wg)
{
    webgpu_profiler *p = wg->profiler;
    if (!p || p->used == 0) return WGT_OK;
    uint32_t n = p->used;
    p->used = 0;
    webgpu_request *r = webgpu_request_new(wg, "wgt profiler"); /* may outlive this call */
    if (!r) return WGT_ERR_OUT_OF_MEMORY;
    WGPUBufferMapCallbackInfo cb = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = webgpu_on_map_request;
    cb.userdata1 = r;
    wgpuBufferMapAsync(p->readback, WGPUMapMode_Read, 0, 16ull * n, cb);
    wgt_status s = webgpu_wait(wg, &r->done, "wgt profiler");
    int status = r->status;
    webgpu_request_release(r);
    if (s != WGT_OK) return s;
    if (status != (int)WGPUMapAsyncStatus_Success)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "wgt profiler: mapping timestamps failed");
    const uint64_t *ticks = wgpuBufferGetConstMappedRange(p->readback, 0, 16ull * n);
    for (uint32_t i = 0; ticks && i < n; i++) {
        double start = (double)ticks[2 * i] * p->period_ns, end = (double)ticks[2 * i + 1] * p->period_ns;
        double ns = end > start ? end - start : 0;
        if (!p->have_origin) {
            p->origin_ns = start;
            p->have_origin = true;
        }
        struct op_total *t = total_for(p, p->names[i]);
        if (t) {
            t->calls++;
            t->ns += ns;
            t->bytes += p->bytes[i];
            t->flops += p->flops[i];
        }
        if (p->n_events == p->events_capacity) {
            size_t capacity = p->events_capacity ? 2 * p->events_capacity : 1024;
            struct trace_event *grown = realloc(p->events, capacity * sizeof(*grown));
            if (!grown) continue;
            p->events = grown;
            p->events_capacity = capacity;
        }
        p->events[p->n_events++] = (struct trace_event){p->names[i], start - p->origin_ns, ns};
    }
    wgpuBufferUnmap(p->readback);
    return WGT_OK;
}

void webgpu_profiler_print(const webgpu_backend *wg, FILE *out)
{
    const webgpu_profiler *p = wg->profiler;
    fprintf(out, "%-24s %8s %12s %12s %10s %10s\n", "op", "calls", "total ms", "mean us", "GB/s", "GFLOP/s");
    for (int i = 0; i < p->n_totals; i++) {
        const struct op_total *t = &p->totals[i];
        double ms = t->ns / 1e6;
        fprintf(out, "%-24s %8llu %12.3f %12.2f %10.1f %10.1f\n", t->name, (unsigned long long)t->calls, ms,
                t->calls ? t->ns / 1e3 / (double)t->calls : 0.0, t->ns > 0 ? t->bytes / t->ns : 0.0,
                t->ns > 0 ? t->flops / t->ns : 0.0);
    }
}

void webgpu_profiler_print_trace(const webgpu_backend *wg, FILE *f)
{
    const webgpu_profiler *p = wg->profiler;
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    for (size_t i = 0; i < p->n_events; i++)
        fprintf(f, "%s{\"name\": \"%s\", \"cat\": \"gpu\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f}",
                i ? ",\n" : "", p->events[i].name, p->events[i].start_ns / 1e3, p->events[i].duration_ns / 1e3);
    fprintf(f, "\n]}\n");
}
