/* The subset of the standard webgpu.h that wgtensor calls, implemented on the
 * browser's navigator.gpu for the WebAssembly build (docs/web.md). It is a
 * backend-level module of its own: the WebGPU backend (src/webgpu) compiles
 * unchanged against the same webgpu.h, and only this file knows it runs in a
 * page. Emscripten 3.1.6 (Debian 12) ships a 2022 pre-standard webgpu.h, so
 * its -sUSE_WEBGPU cannot be used.
 *
 * Handles are small integers (cast to the opaque pointer types) indexing a
 * JavaScript table of GPU objects. Promises (requestDevice, mapAsync,
 * onSubmittedWorkDone, popErrorScope, device.lost) record their result in
 * JavaScript; the C side keeps the callback of each, and
 * wgpuInstanceProcessEvents fires those whose promise settled, so callbacks
 * run only where the backend polls (WGPUCallbackMode_AllowProcessEvents).
 * web_yield() (web_extras.c) lets the browser's event loop run, through
 * -sASYNCIFY, so promises can settle while C waits. */
#include <emscripten.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <webgpu.h>

#include "webgpu_web/webgpu_web.h"

#define ID(h) ((int)(intptr_t)(h))
#define HANDLE(T, id) ((T)(intptr_t)(id))

/* ------------------------------------------------------------ JavaScript side */

EM_JS(void, js_init, (void), {
    if (globalThis.WGTW) return;
    globalThis.WGTW = {
        objs : [null], /* handle -> GPU object; 0 is NULL */
        free : [],
        results : {},  /* request id -> {status, value, type, message} */
        pending : {},  /* request id -> promise not yet settled */
        next_request : 1,
        errors : [],   /* uncaptured errors: {device, type, message} */
        /* What the library asked of the browser, for the page's speed report
         * and tests/web/web_test.py: counts of the calls that cost a round trip
         * or a compile in the GPU process, and the time C spent waiting. */
        stats : {buffers : 0, modules : 0, pipelines : 0, bind_groups : 0, dispatches : 0, submits : 0, maps : 0,
                 scope_pops : 0, waits : 0, wait_ms : 0},
        add : function(o) {
            if (o === null || o === undefined) return 0;
            var id = this.free.length ? this.free.pop() : this.objs.length;
            this.objs[id] = o;
            return id;
        },
        drop : function(id) {
            if (id && this.objs[id] !== undefined && this.objs[id] !== null) {
                this.objs[id] = null;
                this.free.push(id);
            }
        },
        track : function(promise) {
            var id = this.next_request++;
            var self = this;
            var p = promise.then(function(r) { self.results[id] = r; delete self.pending[id]; },
                                 function(e) {
                                     self.results[id] = {status : 3, message : String(e && e.message || e)};
                                     delete self.pending[id];
                                 });
            this.pending[id] = p;
            return id;
        },
        errtype : function(e) {
            if (!e) return 1;
            if (typeof GPUValidationError !== "undefined" && e instanceof GPUValidationError) return 2;
            if (typeof GPUOutOfMemoryError !== "undefined" && e instanceof GPUOutOfMemoryError) return 3;
            if (typeof GPUInternalError !== "undefined" && e instanceof GPUInternalError) return 4;
            return 5;
        },
        limit_names : [
            "maxTextureDimension1D", "maxTextureDimension2D", "maxTextureDimension3D", "maxTextureArrayLayers",
            "maxBindGroups", "maxBindGroupsPlusVertexBuffers", "maxBindingsPerBindGroup",
            "maxDynamicUniformBuffersPerPipelineLayout", "maxDynamicStorageBuffersPerPipelineLayout",
            "maxSampledTexturesPerShaderStage", "maxSamplersPerShaderStage", "maxStorageBuffersPerShaderStage",
            "maxStorageTexturesPerShaderStage", "maxUniformBuffersPerShaderStage", "maxUniformBufferBindingSize",
            "maxStorageBufferBindingSize", "minUniformBufferOffsetAlignment", "minStorageBufferOffsetAlignment",
            "maxVertexBuffers", "maxBufferSize", "maxVertexAttributes", "maxVertexBufferArrayStride",
            "maxInterStageShaderVariables", "maxColorAttachments", "maxColorAttachmentBytesPerSample",
            "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
            "maxComputeWorkgroupSizeY", "maxComputeWorkgroupSizeZ", "maxComputeWorkgroupsPerDimension"
        ],
        feature_names : {9 : "timestamp-query", 11 : "shader-f16", 18 : "subgroups"},
    };
});

/* The one adapter the browser offers (navigator.gpu.requestAdapter), or 0 with
 * the reason in *why (WebGPU missing, adapter refused). */
EM_ASYNC_JS(int, js_request_adapter, (char *why, int why_size), {
    var fail = function(msg) { stringToUTF8(msg, why, why_size); return 0; };
    if (typeof navigator === "undefined" || !navigator.gpu)
        return fail("this browser has no WebGPU (navigator.gpu is missing; Chromium needs --enable-unsafe-webgpu on Linux)");
    var a = null;
    try {
        var pref = globalThis.WGT_POWER_PREFERENCE;
        a = await navigator.gpu.requestAdapter(pref ? {powerPreference : pref} : {});
    } catch (e) {
        return fail("navigator.gpu.requestAdapter failed: " + e);
    }
    if (!a) return fail("navigator.gpu.requestAdapter() returned no adapter (refused or blocklisted)");
    return WGTW.add(a);
});

/* which: 0 vendor, 1 architecture, 2 device, 3 description. */
EM_JS(int, js_adapter_string, (int a, int which, char *out, int size), {
    var ad = WGTW.objs[a];
    var info = ad.info || {};
    var s = [ info.vendor, info.architecture, info.device, info.description ][which] || "";
    if (which == 2 && !s) s = [ info.vendor, info.architecture ].filter(Boolean).join(" ") || "WebGPU adapter";
    if (which == 3) s = "browser WebGPU" + (s ? ": " + s : "");
    stringToUTF8(s, out, size);
    return lengthBytesUTF8(s);
});

EM_JS(int, js_adapter_is_fallback, (int a), {
    var info = WGTW.objs[a].info || {};
    var d = ((info.device || "") + " " + (info.description || "") + " " + (info.architecture || "")).toLowerCase();
    return (info.isFallbackAdapter || d.indexOf("swiftshader") >= 0 || d.indexOf("llvmpipe") >= 0 ||
            d.indexOf("lavapipe") >= 0) ? 1 : 0;
});

EM_JS(int, js_adapter_subgroup_size, (int a, int max), {
    var info = WGTW.objs[a].info || {};
    var v = max ? info.subgroupMaxSize : info.subgroupMinSize;
    return v ? v : 0;
});

/* limits: an adapter or a device; fills out[i] for each name, -1 when absent. */
EM_JS(void, js_limits, (int obj, double *out, int n), {
    var l = WGTW.objs[obj].limits;
    for (var i = 0; i < n; i++) {
        var v = l[WGTW.limit_names[i]];
        HEAPF64[(out >> 3) + i] = (v === undefined) ? -1 : v;
    }
});

EM_JS(int, js_has_feature, (int obj, int feature), {
    var name = WGTW.feature_names[feature];
    return name && WGTW.objs[obj].features.has(name) ? 1 : 0;
});

/* Starts adapter.requestDevice; limits[i] < 0 means not required. Returns the
 * request id. The device's uncaptured errors are queued for ProcessEvents. */
EM_JS(int, js_request_device, (int a, const int *features, int n_features, const double *limits, int n_limits), {
    var ad = WGTW.objs[a];
    var desc = {requiredFeatures : [], requiredLimits : {}};
    for (var i = 0; i < n_features; i++) {
        var name = WGTW.feature_names[HEAP32[(features >> 2) + i]];
        if (name && ad.features.has(name)) desc.requiredFeatures.push(name);
    }
    if (limits) {
        for (var j = 0; j < n_limits; j++) {
            var v = HEAPF64[(limits >> 3) + j];
            var nm = WGTW.limit_names[j];
            if (v >= 0 && ad.limits[nm] !== undefined) desc.requiredLimits[nm] = v;
        }
    }
    return WGTW.track(ad.requestDevice(desc).then(function(d) {
        var id = WGTW.add(d);
        d.onuncapturederror = function(ev) {
            WGTW.errors.push({device : id, type : WGTW.errtype(ev.error), message : String(ev.error && ev.error.message)});
        };
        return {status : 1, value : id};
    }));
});

EM_JS(int, js_device_lost, (int d), {
    return WGTW.track(WGTW.objs[d].lost.then(function(info) {
        return {status : info.reason === "destroyed" ? 2 : 1, message : String(info.message)};
    }));
});

/* -1 while the request is pending; else its status, value and message. */
EM_JS(int, js_result, (int req, int *value, int *type, char *msg, int msg_size), {
    var r = WGTW.results[req];
    if (!r) return -1;
    delete WGTW.results[req];
    HEAP32[value >> 2] = r.value || 0;
    HEAP32[type >> 2] = r.type || 0;
    stringToUTF8(r.message || "", msg, msg_size);
    return r.status;
});

EM_JS(int, js_next_error, (int *device, char *msg, int msg_size), {
    var e = WGTW.errors.shift();
    if (!e) return 0;
    HEAP32[device >> 2] = e.device;
    stringToUTF8(e.message, msg, msg_size);
    return e.type;
});

/* Waits until a pending request settles or timeout_ms pass, letting the
 * browser run (the only way a promise can settle). */
EM_ASYNC_JS(void, js_yield, (int timeout_ms), {
    var t0 = performance.now();
    var timer = 0;
    var ps = Object.values(WGTW.pending);
    ps.push(new Promise(function(r) { timer = setTimeout(r, timeout_ms); }));
    await Promise.race(ps);
    clearTimeout(timer); /* a settled promise won: no stray timer wakes the page later */
    WGTW.stats.waits++;
    WGTW.stats.wait_ms += performance.now() - t0;
});

/* 1 when a promise has settled whose callback has not fired yet (or an
 * uncaptured error waits): then there is no reason to wait at all. */
EM_JS(int, js_has_settled, (void), {
    for (var k in WGTW.results) return 1;
    return WGTW.errors.length ? 1 : 0;
});

EM_JS(void, js_release, (int id), { WGTW.drop(id); });
EM_JS(void, js_destroy, (int id), {
    var o = WGTW.objs[id];
    if (o && o.destroy) o.destroy();
});
EM_JS(int, js_queue, (int d), { return WGTW.add(WGTW.objs[d].queue); });

EM_JS(int, js_create_buffer, (int d, double size, int usage, int mapped), {
    try {
        WGTW.stats.buffers++;
        return WGTW.add(WGTW.objs[d].createBuffer({size : size, usage : usage, mappedAtCreation : !!mapped}));
    } catch (e) {
        return 0; /* RangeError: the size cannot be allocated at all */
    }
});
EM_JS(double, js_buffer_size, (int b), { return WGTW.objs[b].size; });

EM_JS(int, js_map_read, (int b, double offset, double size), {
    WGTW.stats.maps++;
    return WGTW.track(WGTW.objs[b].mapAsync(GPUMapMode.READ, offset, size).then(function() { return {status : 1}; }));
});
EM_JS(void, js_copy_mapped, (int b, double offset, double size, void *dst), {
    var range = WGTW.objs[b].getMappedRange(offset, size);
    HEAPU8.set(new Uint8Array(range), dst);
});
EM_JS(void, js_unmap, (int b), { WGTW.objs[b].unmap(); });

EM_JS(int, js_create_module, (int d, const char *code, int len), {
    WGTW.stats.modules++;
    return WGTW.add(WGTW.objs[d].createShaderModule({code : UTF8ToString(code, len)}));
});

/* kinds[i]: 2 uniform, 3 storage, 4 read-only storage; dynamic[i]: hasDynamicOffset. */
EM_JS(int, js_create_bgl, (int d, int n, const int *bindings, const int *kinds, const int *dynamic), {
    var names = {2 : "uniform", 3 : "storage", 4 : "read-only-storage"};
    var entries = [];
    for (var i = 0; i < n; i++)
        entries.push({
            binding : HEAP32[(bindings >> 2) + i],
            visibility : GPUShaderStage.COMPUTE,
            buffer : {type : names[HEAP32[(kinds >> 2) + i]], hasDynamicOffset : !!HEAP32[(dynamic >> 2) + i]}
        });
    return WGTW.add(WGTW.objs[d].createBindGroupLayout({entries : entries}));
});

EM_JS(int, js_create_pipeline_layout, (int d, int n, const int *layouts), {
    var ls = [];
    for (var i = 0; i < n; i++) ls.push(WGTW.objs[HEAP32[(layouts >> 2) + i]]);
    return WGTW.add(WGTW.objs[d].createPipelineLayout({bindGroupLayouts : ls}));
});

EM_JS(int, js_create_pipeline, (int d, int layout, int module, const char *entry, int entry_len), {
    WGTW.stats.pipelines++;
    return WGTW.add(WGTW.objs[d].createComputePipeline({
        layout : layout ? WGTW.objs[layout] : "auto",
        compute : {module : WGTW.objs[module], entryPoint : UTF8ToString(entry, entry_len)}
    }));
});

/* sizes[i] < 0: the whole buffer from offset. */
EM_JS(int, js_create_bind_group, (int d, int layout, int n, const int *bindings, const int *buffers,
                                  const double *offsets, const double *sizes), {
    WGTW.stats.bind_groups++;
    var entries = [];
    for (var i = 0; i < n; i++) {
        var res = {buffer : WGTW.objs[HEAP32[(buffers >> 2) + i]], offset : HEAPF64[(offsets >> 3) + i]};
        var s = HEAPF64[(sizes >> 3) + i];
        if (s >= 0) res.size = s;
        entries.push({binding : HEAP32[(bindings >> 2) + i], resource : res});
    }
    return WGTW.add(WGTW.objs[d].createBindGroup({layout : WGTW.objs[layout], entries : entries}));
});

EM_JS(int, js_create_encoder, (int d), { return WGTW.add(WGTW.objs[d].createCommandEncoder()); });
EM_JS(int, js_begin_pass, (int e, int query_set, int begin_index, int end_index), {
    var desc = {};
    if (query_set) {
        desc.timestampWrites = {querySet : WGTW.objs[query_set]};
        if (begin_index >= 0) desc.timestampWrites.beginningOfPassWriteIndex = begin_index;
        if (end_index >= 0) desc.timestampWrites.endOfPassWriteIndex = end_index;
    }
    return WGTW.add(WGTW.objs[e].beginComputePass(desc));
});
EM_JS(void, js_set_pipeline, (int p, int pipeline), { WGTW.objs[p].setPipeline(WGTW.objs[pipeline]); });
EM_JS(void, js_set_bind_group, (int p, int index, int group, int n, const unsigned *offsets), {
    var offs = [];
    for (var i = 0; i < n; i++) offs.push(HEAPU32[(offsets >> 2) + i]);
    WGTW.objs[p].setBindGroup(index, group ? WGTW.objs[group] : null, offs);
});
EM_JS(void, js_dispatch, (int p, int x, int y, int z), {
    WGTW.stats.dispatches++;
    WGTW.objs[p].dispatchWorkgroups(x >>> 0, y >>> 0, z >>> 0);
});
EM_JS(void, js_end_pass, (int p), { WGTW.objs[p].end(); });
EM_JS(void, js_copy_b2b, (int e, int src, double so, int dst, double dso, double size), {
    WGTW.objs[e].copyBufferToBuffer(WGTW.objs[src], so, WGTW.objs[dst], dso, size);
});
EM_JS(void, js_resolve, (int e, int qs, int first, int count, int dst, double offset), {
    WGTW.objs[e].resolveQuerySet(WGTW.objs[qs], first, count, WGTW.objs[dst], offset);
});
EM_JS(int, js_finish, (int e), { return WGTW.add(WGTW.objs[e].finish()); });
EM_JS(void, js_submit, (int q, int n, const int *cmds), {
    WGTW.stats.submits++;
    var list = [];
    for (var i = 0; i < n; i++) list.push(WGTW.objs[HEAP32[(cmds >> 2) + i]]);
    WGTW.objs[q].submit(list);
});
EM_JS(int, js_work_done, (int q, int dummy), {
    return WGTW.track(WGTW.objs[q].onSubmittedWorkDone().then(function() { return {status : 1}; }));
});
EM_JS(void, js_write_buffer, (int q, int b, double offset, const void *data, double size), {
    WGTW.objs[q].writeBuffer(WGTW.objs[b], offset, HEAPU8, data, size);
});
EM_JS(int, js_create_query_set, (int d, int count), {
    try {
        return WGTW.add(WGTW.objs[d].createQuerySet({type : "timestamp", count : count}));
    } catch (e) {
        return 0;
    }
});
EM_JS(void, js_push_scope, (int d, int filter), {
    WGTW.objs[d].pushErrorScope([ "", "validation", "out-of-memory", "internal" ][filter]);
});
EM_JS(int, js_pop_scope, (int d, int dummy), {
    WGTW.stats.scope_pops++;
    return WGTW.track(WGTW.objs[d].popErrorScope().then(function(e) {
        return {status : 1, type : WGTW.errtype(e), message : e ? String(e.message) : ""};
    }));
});

/* ------------------------------------------------------------ C side: requests */

enum request_kind { REQ_DEVICE, REQ_MAP, REQ_WORK_DONE, REQ_SCOPE, REQ_LOST };

typedef struct web_request {
    int id; /* JavaScript request id; 0 = free slot */
    enum request_kind kind;
    WGPUBuffer buffer; /* REQ_MAP: the buffer whose state changes */
    WGPUDevice device; /* REQ_LOST */
    union {
        WGPURequestDeviceCallbackInfo device;
        WGPUBufferMapCallbackInfo map;
        WGPUQueueWorkDoneCallbackInfo work;
        WGPUPopErrorScopeCallbackInfo scope;
        WGPUDeviceLostCallbackInfo lost;
    } cb;
} web_request;

/* Outstanding requests; a few per wait in practice (one map, one scope pair,
 * one work-done per submission not yet finished). Grows when full. */
static web_request *requests;
static size_t n_requests, cap_requests;
static uint64_t next_future = 1;

static WGPUFuture add_request(int id, enum request_kind kind, web_request *proto)
{
    if (n_requests == cap_requests) {
        size_t cap = cap_requests ? 2 * cap_requests : 64;
        web_request *grown = realloc(requests, cap * sizeof(*grown));
        if (!grown) abort(); /* a callback dropped would hang its waiter until the deadline */
        requests = grown;
        cap_requests = cap;
    }
    *proto = (web_request){.id = id, .kind = kind, .buffer = proto->buffer, .device = proto->device, .cb = proto->cb};
    requests[n_requests++] = *proto;
    return (WGPUFuture){next_future++};
}

/* Uncaptured-error callbacks, by device handle. */
#define MAX_DEVICES 16
static struct {
    int device;
    WGPUUncapturedErrorCallbackInfo info;
} uncaptured[MAX_DEVICES];

static WGPUStringView view(const char *s) { return (WGPUStringView){s, strlen(s)}; }

static void fire(const web_request *r, int status, int value, int type, const char *msg)
{
    switch (r->kind) {
    case REQ_DEVICE:
        if (status == 1) web_register_device(HANDLE(WGPUDevice, value));
        if (r->cb.device.callback)
            r->cb.device.callback(status == 1 ? WGPURequestDeviceStatus_Success : WGPURequestDeviceStatus_Error,
                                  HANDLE(WGPUDevice, status == 1 ? value : 0), view(msg), r->cb.device.userdata1,
                                  r->cb.device.userdata2);
        break;
    case REQ_MAP:
        if (r->cb.map.callback)
            r->cb.map.callback(status == 1 ? WGPUMapAsyncStatus_Success : WGPUMapAsyncStatus_Error, view(msg),
                               r->cb.map.userdata1, r->cb.map.userdata2);
        break;
    case REQ_WORK_DONE:
        if (r->cb.work.callback)
            r->cb.work.callback(status == 1 ? WGPUQueueWorkDoneStatus_Success : WGPUQueueWorkDoneStatus_Error,
                                view(msg), r->cb.work.userdata1, r->cb.work.userdata2);
        break;
    case REQ_SCOPE:
        if (r->cb.scope.callback)
            r->cb.scope.callback(status == 1 ? WGPUPopErrorScopeStatus_Success : WGPUPopErrorScopeStatus_Error,
                                 status == 1 ? (WGPUErrorType)type : WGPUErrorType_Unknown, view(msg),
                                 r->cb.scope.userdata1, r->cb.scope.userdata2);
        break;
    case REQ_LOST:
        if (r->cb.lost.callback)
            r->cb.lost.callback(&r->device, status == 2 ? WGPUDeviceLostReason_Destroyed : WGPUDeviceLostReason_Unknown,
                                view(msg), r->cb.lost.userdata1, r->cb.lost.userdata2);
        break;
    }
}

void wgpuInstanceProcessEvents(WGPUInstance instance)
{
    (void)instance;
    char msg[512];
    int device, type;
    while ((type = js_next_error(&device, msg, sizeof msg)) != 0) {
        for (int i = 0; i < MAX_DEVICES; i++)
            if (uncaptured[i].device == device && uncaptured[i].info.callback) {
                WGPUDevice d = HANDLE(WGPUDevice, device);
                uncaptured[i].info.callback(&d, (WGPUErrorType)type, view(msg), uncaptured[i].info.userdata1,
                                            uncaptured[i].info.userdata2);
            }
    }
    /* A callback may add requests (realloc): index, never hold pointers. */
    for (size_t i = 0; i < n_requests;) {
        int value = 0;
        int status = js_result(requests[i].id, &value, &type, msg, sizeof msg);
        if (status < 0) {
            i++;
            continue;
        }
        web_request r = requests[i];
        requests[i] = requests[--n_requests];
        fire(&r, status, value, type, msg);
    }
}

/* A result that settled while C was busy (recording, or between two waits)
 * is delivered at once: waiting on the pending promises alone would sleep on
 * the timer (>= 1 ms, 4 ms once timers nest) before ProcessEvents ran. */
void web_yield(int timeout_ms)
{
    if (js_has_settled()) return;
    js_yield(timeout_ms);
}

/* ------------------------------------------------------------ instance, adapter */

WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor *descriptor)
{
    (void)descriptor;
    js_init();
    return HANDLE(WGPUInstance, 1); /* the page's navigator.gpu; nothing to hold */
}
void wgpuInstanceRelease(WGPUInstance instance) { (void)instance; }

static char adapter_refusal[256];
const char *web_adapter_refusal(void) { return adapter_refusal; }

WGPUAdapter web_request_adapter(void)
{
    js_init();
    adapter_refusal[0] = '\0';
    return HANDLE(WGPUAdapter, js_request_adapter(adapter_refusal, sizeof adapter_refusal));
}

static WGPUStringView owned_string(int adapter, int which)
{
    char buf[256];
    int n = js_adapter_string(adapter, which, buf, sizeof buf);
    (void)n;
    size_t len = strlen(buf);
    char *s = malloc(len + 1);
    if (!s) return (WGPUStringView){NULL, 0};
    memcpy(s, buf, len + 1);
    return (WGPUStringView){s, len};
}

WGPUStatus wgpuAdapterGetInfo(WGPUAdapter adapter, WGPUAdapterInfo *info)
{
    int a = ID(adapter);
    if (!a) return WGPUStatus_Error;
    info->vendor = owned_string(a, 0);
    info->architecture = owned_string(a, 1);
    info->device = owned_string(a, 2);
    info->description = owned_string(a, 3);
    info->backendType = WGPUBackendType_WebGPU;
    info->adapterType = js_adapter_is_fallback(a) ? WGPUAdapterType_CPU : WGPUAdapterType_Unknown;
    info->vendorID = 0;
    info->deviceID = 0;
    info->subgroupMinSize = (uint32_t)js_adapter_subgroup_size(a, 0);
    info->subgroupMaxSize = (uint32_t)js_adapter_subgroup_size(a, 1);
    return WGPUStatus_Success;
}

void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo info)
{
    free((void *)info.vendor.data);
    free((void *)info.architecture.data);
    free((void *)info.device.data);
    free((void *)info.description.data);
}

/* WGPULimits as a list of fields in JavaScript's limit_names order. */
#define N_LIMITS 31
#define U32(f) {offsetof(WGPULimits, f), 4}
#define U64(f) {offsetof(WGPULimits, f), 8}
static const struct {
    size_t offset, bytes;
} limit_fields[N_LIMITS] = {
    U32(maxTextureDimension1D), U32(maxTextureDimension2D), U32(maxTextureDimension3D),
    U32(maxTextureArrayLayers), U32(maxBindGroups), U32(maxBindGroupsPlusVertexBuffers),
    U32(maxBindingsPerBindGroup), U32(maxDynamicUniformBuffersPerPipelineLayout),
    U32(maxDynamicStorageBuffersPerPipelineLayout), U32(maxSampledTexturesPerShaderStage),
    U32(maxSamplersPerShaderStage), U32(maxStorageBuffersPerShaderStage), U32(maxStorageTexturesPerShaderStage),
    U32(maxUniformBuffersPerShaderStage), U64(maxUniformBufferBindingSize), U64(maxStorageBufferBindingSize),
    U32(minUniformBufferOffsetAlignment), U32(minStorageBufferOffsetAlignment), U32(maxVertexBuffers),
    U64(maxBufferSize), U32(maxVertexAttributes), U32(maxVertexBufferArrayStride),
    U32(maxInterStageShaderVariables), U32(maxColorAttachments), U32(maxColorAttachmentBytesPerSample),
    U32(maxComputeWorkgroupStorageSize), U32(maxComputeInvocationsPerWorkgroup), U32(maxComputeWorkgroupSizeX),
    U32(maxComputeWorkgroupSizeY), U32(maxComputeWorkgroupSizeZ), U32(maxComputeWorkgroupsPerDimension),
};

static void read_limits(int obj, WGPULimits *limits)
{
    double v[N_LIMITS];
    js_limits(obj, v, N_LIMITS);
    for (int i = 0; i < N_LIMITS; i++) {
        if (v[i] < 0) continue;
        char *field = (char *)limits + limit_fields[i].offset;
        if (limit_fields[i].bytes == 4) {
            uint32_t x = (uint32_t)v[i];
            memcpy(field, &x, 4);
        } else {
            uint64_t x = (uint64_t)v[i];
            memcpy(field, &x, 8);
        }
    }
}

static void write_limits(const WGPULimits *limits, double *v)
{
    for (int i = 0; i < N_LIMITS; i++) {
        const char *field = (const char *)limits + limit_fields[i].offset;
        v[i] = -1;
        if (limit_fields[i].bytes == 4) {
            uint32_t x;
            memcpy(&x, field, 4);
            if (x != WGPU_LIMIT_U32_UNDEFINED) v[i] = x;
        } else {
            uint64_t x;
            memcpy(&x, field, 8);
            if (x != WGPU_LIMIT_U64_UNDEFINED) v[i] = (double)x;
        }
    }
}

WGPUStatus wgpuAdapterGetLimits(WGPUAdapter adapter, WGPULimits *limits)
{
    if (!ID(adapter)) return WGPUStatus_Error;
    read_limits(ID(adapter), limits);
    return WGPUStatus_Success;
}

WGPUStatus wgpuDeviceGetLimits(WGPUDevice device, WGPULimits *limits)
{
    if (!ID(device)) return WGPUStatus_Error;
    read_limits(ID(device), limits);
    return WGPUStatus_Success;
}

WGPUBool wgpuAdapterHasFeature(WGPUAdapter adapter, WGPUFeatureName feature)
{
    return ID(adapter) && js_has_feature(ID(adapter), (int)feature);
}
WGPUBool wgpuDeviceHasFeature(WGPUDevice device, WGPUFeatureName feature)
{
    return ID(device) && js_has_feature(ID(device), (int)feature);
}
void wgpuAdapterRelease(WGPUAdapter adapter) { js_release(ID(adapter)); }

/* ------------------------------------------------------------ device */

static struct {
    WGPUDeviceLostCallbackInfo lost;
    WGPUUncapturedErrorCallbackInfo error;
} pending_device_callbacks;

WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor,
                                    WGPURequestDeviceCallbackInfo callbackInfo)
{
    int features[8];
    int n_features = 0;
    double limits[N_LIMITS];
    bool has_limits = false;
    pending_device_callbacks.lost = (WGPUDeviceLostCallbackInfo){0};
    pending_device_callbacks.error = (WGPUUncapturedErrorCallbackInfo){0};
    if (descriptor) {
        for (size_t i = 0; i < descriptor->requiredFeatureCount && n_features < 8; i++)
            features[n_features++] = (int)descriptor->requiredFeatures[i];
        if (descriptor->requiredLimits) {
            write_limits(descriptor->requiredLimits, limits);
            has_limits = true;
        }
        pending_device_callbacks.lost = descriptor->deviceLostCallbackInfo;
        pending_device_callbacks.error = descriptor->uncapturedErrorCallbackInfo;
    }
    int id = js_request_device(ID(adapter), features, n_features, has_limits ? limits : NULL, N_LIMITS);
    web_request r = {0};
    r.cb.device = callbackInfo;
    return add_request(id, REQ_DEVICE, &r);
}

/* Called when a device arrives: attaches the descriptor's lost and error
 * callbacks to it. */
void web_register_device(WGPUDevice device)
{
    int d = ID(device);
    for (int i = 0; i < MAX_DEVICES; i++)
        if (uncaptured[i].device == 0) {
            uncaptured[i].device = d;
            uncaptured[i].info = pending_device_callbacks.error;
            break;
        }
    if (pending_device_callbacks.lost.callback) {
        web_request r = {0};
        r.device = device;
        r.cb.lost = pending_device_callbacks.lost;
        add_request(js_device_lost(d), REQ_LOST, &r);
    }
}

WGPUQueue wgpuDeviceGetQueue(WGPUDevice device) { return HANDLE(WGPUQueue, js_queue(ID(device))); }
void wgpuDeviceDestroy(WGPUDevice device) { js_destroy(ID(device)); }
void wgpuDeviceRelease(WGPUDevice device)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (uncaptured[i].device == ID(device)) uncaptured[i].device = 0;
    js_release(ID(device));
}
void wgpuQueueRelease(WGPUQueue queue) { js_release(ID(queue)); }

void wgpuDevicePushErrorScope(WGPUDevice device, WGPUErrorFilter filter) { js_push_scope(ID(device), (int)filter); }

WGPUFuture wgpuDevicePopErrorScope(WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo)
{
    web_request r = {0};
    r.cb.scope = callbackInfo;
    return add_request(js_pop_scope(ID(device), 0), REQ_SCOPE, &r);
}

/* ------------------------------------------------------------ buffers */

/* Host copies of mapped ranges, freed at unmap. */
typedef struct mapped_copy {
    WGPUBuffer buffer;
    void *data;
    struct mapped_copy *next;
} mapped_copy;
static mapped_copy *mapped;

WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice device, const WGPUBufferDescriptor *descriptor)
{
    return HANDLE(WGPUBuffer, js_create_buffer(ID(device), (double)descriptor->size, (int)descriptor->usage,
                                               descriptor->mappedAtCreation));
}
uint64_t wgpuBufferGetSize(WGPUBuffer buffer) { return (uint64_t)js_buffer_size(ID(buffer)); }

WGPUFuture wgpuBufferMapAsync(WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,
                              WGPUBufferMapCallbackInfo callbackInfo)
{
    (void)mode; /* the library maps for reading only */
    web_request r = {0};
    r.buffer = buffer;
    r.cb.map = callbackInfo;
    return add_request(js_map_read(ID(buffer), (double)offset, (double)size), REQ_MAP, &r);
}

const void *wgpuBufferGetConstMappedRange(WGPUBuffer buffer, size_t offset, size_t size)
{
    mapped_copy *m = malloc(sizeof(*m));
    void *data = malloc(size ? size : 1);
    if (!m || !data) {
        free(m);
        free(data);
        return NULL;
    }
    js_copy_mapped(ID(buffer), (double)offset, (double)size, data);
    *m = (mapped_copy){buffer, data, mapped};
    mapped = m;
    return data;
}

static void drop_mapped(WGPUBuffer buffer)
{
    for (mapped_copy **p = &mapped; *p;) {
        if ((*p)->buffer == buffer) {
            mapped_copy *m = *p;
            *p = m->next;
            free(m->data);
            free(m);
        } else {
            p = &(*p)->next;
        }
    }
}

void wgpuBufferUnmap(WGPUBuffer buffer)
{
    js_unmap(ID(buffer));
    drop_mapped(buffer);
}
void wgpuBufferDestroy(WGPUBuffer buffer)
{
    js_destroy(ID(buffer));
    drop_mapped(buffer);
}
void wgpuBufferRelease(WGPUBuffer buffer) { js_release(ID(buffer)); }

void wgpuQueueWriteBuffer(WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void *data, size_t size)
{
    js_write_buffer(ID(queue), ID(buffer), (double)bufferOffset, data, (double)size);
}

/* ------------------------------------------------------------ shaders, pipelines */

static int string_length(WGPUStringView s) { return s.data ? (int)(s.length == WGPU_STRLEN ? strlen(s.data) : s.length) : 0; }

WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice device, const WGPUShaderModuleDescriptor *descriptor)
{
    const WGPUChainedStruct *c = descriptor->nextInChain;
    while (c && c->sType != WGPUSType_ShaderSourceWGSL) c = c->next;
    if (!c) return NULL;
    const WGPUShaderSourceWGSL *wgsl = (const WGPUShaderSourceWGSL *)c;
    return HANDLE(WGPUShaderModule, js_create_module(ID(device), wgsl->code.data ? wgsl->code.data : "",
                                                     string_length(wgsl->code)));
}
void wgpuShaderModuleRelease(WGPUShaderModule module) { js_release(ID(module)); }

WGPUBindGroupLayout wgpuDeviceCreateBindGroupLayout(WGPUDevice device, const WGPUBindGroupLayoutDescriptor *descriptor)
{
    int n = (int)descriptor->entryCount;
    int bindings[64], kinds[64], dynamic[64];
    if (n > 64) return NULL;
    for (int i = 0; i < n; i++) {
        const WGPUBindGroupLayoutEntry *e = &descriptor->entries[i];
        bindings[i] = (int)e->binding;
        kinds[i] = e->buffer.type == WGPUBufferBindingType_Undefined ? WGPUBufferBindingType_Uniform : (int)e->buffer.type;
        dynamic[i] = e->buffer.hasDynamicOffset ? 1 : 0;
    }
    return HANDLE(WGPUBindGroupLayout, js_create_bgl(ID(device), n, bindings, kinds, dynamic));
}
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout layout) { js_release(ID(layout)); }

WGPUPipelineLayout wgpuDeviceCreatePipelineLayout(WGPUDevice device, const WGPUPipelineLayoutDescriptor *descriptor)
{
    int ids[8];
    int n = (int)descriptor->bindGroupLayoutCount;
    if (n > 8) return NULL;
    for (int i = 0; i < n; i++) ids[i] = ID(descriptor->bindGroupLayouts[i]);
    return HANDLE(WGPUPipelineLayout, js_create_pipeline_layout(ID(device), n, ids));
}
void wgpuPipelineLayoutRelease(WGPUPipelineLayout layout) { js_release(ID(layout)); }

WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice device, const WGPUComputePipelineDescriptor *descriptor)
{
    const char *entry = descriptor->compute.entryPoint.data ? descriptor->compute.entryPoint.data : "main";
    int len = descriptor->compute.entryPoint.data ? string_length(descriptor->compute.entryPoint) : 4;
    return HANDLE(WGPUComputePipeline, js_create_pipeline(ID(device), ID(descriptor->layout),
                                                          ID(descriptor->compute.module), entry, len));
}
void wgpuComputePipelineRelease(WGPUComputePipeline pipeline) { js_release(ID(pipeline)); }

WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice device, const WGPUBindGroupDescriptor *descriptor)
{
    int n = (int)descriptor->entryCount;
    int bindings[64], buffers[64];
    double offsets[64], sizes[64];
    if (n > 64) return NULL;
    for (int i = 0; i < n; i++) {
        const WGPUBindGroupEntry *e = &descriptor->entries[i];
        bindings[i] = (int)e->binding;
        buffers[i] = ID(e->buffer);
        offsets[i] = (double)e->offset;
        sizes[i] = e->size == WGPU_WHOLE_SIZE ? -1 : (double)e->size;
    }
    return HANDLE(WGPUBindGroup, js_create_bind_group(ID(device), ID(descriptor->layout), n, bindings, buffers,
                                                      offsets, sizes));
}
void wgpuBindGroupRelease(WGPUBindGroup group) { js_release(ID(group)); }

/* ------------------------------------------------------------ commands */

WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice device, const WGPUCommandEncoderDescriptor *descriptor)
{
    (void)descriptor;
    return HANDLE(WGPUCommandEncoder, js_create_encoder(ID(device)));
}
void wgpuCommandEncoderRelease(WGPUCommandEncoder encoder) { js_release(ID(encoder)); }

WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder encoder,
                                                          const WGPUComputePassDescriptor *descriptor)
{
    const WGPUPassTimestampWrites *tw = descriptor ? descriptor->timestampWrites : NULL;
    int qs = tw ? ID(tw->querySet) : 0;
    int begin = tw && tw->beginningOfPassWriteIndex != WGPU_QUERY_SET_INDEX_UNDEFINED ? (int)tw->beginningOfPassWriteIndex : -1;
    int end = tw && tw->endOfPassWriteIndex != WGPU_QUERY_SET_INDEX_UNDEFINED ? (int)tw->endOfPassWriteIndex : -1;
    return HANDLE(WGPUComputePassEncoder, js_begin_pass(ID(encoder), qs, begin, end));
}
void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder pass, WGPUComputePipeline pipeline)
{
    js_set_pipeline(ID(pass), ID(pipeline));
}
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder pass, uint32_t groupIndex, WGPUBindGroup group,
                                        size_t dynamicOffsetCount, const uint32_t *dynamicOffsets)
{
    js_set_bind_group(ID(pass), (int)groupIndex, ID(group), (int)dynamicOffsetCount, dynamicOffsets);
}
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z)
{
    js_dispatch(ID(pass), (int)x, (int)y, (int)z);
}
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder pass) { js_end_pass(ID(pass)); }
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder pass) { js_release(ID(pass)); }

void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder encoder, WGPUBuffer source, uint64_t sourceOffset,
                                          WGPUBuffer destination, uint64_t destinationOffset, uint64_t size)
{
    js_copy_b2b(ID(encoder), ID(source), (double)sourceOffset, ID(destination), (double)destinationOffset,
                (double)size);
}
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder encoder, WGPUQuerySet querySet, uint32_t firstQuery,
                                       uint32_t queryCount, WGPUBuffer destination, uint64_t destinationOffset)
{
    js_resolve(ID(encoder), ID(querySet), (int)firstQuery, (int)queryCount, ID(destination), (double)destinationOffset);
}
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder encoder, const WGPUCommandBufferDescriptor *descriptor)
{
    (void)descriptor;
    return HANDLE(WGPUCommandBuffer, js_finish(ID(encoder)));
}
void wgpuCommandBufferRelease(WGPUCommandBuffer buffer) { js_release(ID(buffer)); }

void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer *commands)
{
    int ids[64];
    for (size_t start = 0; start < commandCount; start += 64) {
        int n = (int)(commandCount - start < 64 ? commandCount - start : 64);
        for (int i = 0; i < n; i++) ids[i] = ID(commands[start + (size_t)i]);
        js_submit(ID(queue), n, ids);
    }
}

WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo)
{
    web_request r = {0};
    r.cb.work = callbackInfo;
    return add_request(js_work_done(ID(queue), 0), REQ_WORK_DONE, &r);
}

/* ------------------------------------------------------------ timestamp queries */

WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice device, const WGPUQuerySetDescriptor *descriptor)
{
    return HANDLE(WGPUQuerySet, js_create_query_set(ID(device), (int)descriptor->count));
}
void wgpuQuerySetRelease(WGPUQuerySet querySet)
{
    js_destroy(ID(querySet));
    js_release(ID(querySet));
}
