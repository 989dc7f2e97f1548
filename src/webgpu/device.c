#define _GNU_SOURCE /* strcasestr */
/* WebGPU instance, adapter enumeration and selection, device creation with the
 * adapter's full limits, the error/device-lost callbacks, and deadline waits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "webgpu/webgpu_internal.h"

#define MAX_ADAPTERS 16

/* ------------------------------------------------------------ adapter info */

static const char *backend_name(WGPUBackendType t)
{
    switch (t) {
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    case WGPUBackendType_WebGPU: return "WebGPU";
    case WGPUBackendType_Null: return "Null";
    default: return "Unknown";
    }
}

static wgt_adapter_type adapter_type_of(WGPUAdapterType t)
{
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return WGT_ADAPTER_DISCRETE_GPU;
    case WGPUAdapterType_IntegratedGPU: return WGT_ADAPTER_INTEGRATED_GPU;
    case WGPUAdapterType_CPU: return WGT_ADAPTER_CPU;
    default: return WGT_ADAPTER_UNKNOWN;
    }
}

wgt_status webgpu_fill_adapter_info(WGPUAdapter adapter, int index, wgt_adapter_info *info)
{
    memset(info, 0, sizeof(*info));
    info->index = index;
    WGPUAdapterInfo ai = WGPU_ADAPTER_INFO_INIT;
    if (wgpuAdapterGetInfo(adapter, &ai) != WGPUStatus_Success) return WGT_ERR_INTERNAL;
    webgpu_copy_string(ai.device, info->name, sizeof(info->name));
    webgpu_copy_string(ai.vendor, info->vendor, sizeof(info->vendor));
    webgpu_copy_string(ai.architecture, info->architecture, sizeof(info->architecture));
    webgpu_copy_string(ai.description, info->driver, sizeof(info->driver));
    snprintf(info->backend, sizeof(info->backend), "%s", backend_name(ai.backendType));
    info->type = adapter_type_of(ai.adapterType);
    info->vendor_id = ai.vendorID;
    info->device_id = ai.deviceID;
    info->limits.subgroup_min_size = ai.subgroupMinSize;
    info->limits.subgroup_max_size = ai.subgroupMaxSize;
    wgpuAdapterInfoFreeMembers(ai);

    WGPULimits l = WGPU_LIMITS_INIT;
    if (wgpuAdapterGetLimits(adapter, &l) == WGPUStatus_Success) {
        info->limits.max_buffer_size = l.maxBufferSize;
        info->limits.max_storage_buffer_binding_size = l.maxStorageBufferBindingSize;
        info->limits.max_storage_buffers_per_shader_stage = l.maxStorageBuffersPerShaderStage;
        info->limits.max_compute_workgroup_storage_size = l.maxComputeWorkgroupStorageSize;
        info->limits.max_compute_invocations_per_workgroup = l.maxComputeInvocationsPerWorkgroup;
        info->limits.max_compute_workgroup_size_x = l.maxComputeWorkgroupSizeX;
        info->limits.max_compute_workgroup_size_y = l.maxComputeWorkgroupSizeY;
        info->limits.max_compute_workgroup_size_z = l.maxComputeWorkgroupSizeZ;
        info->limits.max_compute_workgroups_per_dimension = l.maxComputeWorkgroupsPerDimension;
        info->limits.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
        info->limits.min_uniform_buffer_offset_alignment = l.minUniformBufferOffsetAlignment;
    }
    info->shader_f16 = wgpuAdapterHasFeature(adapter, WGPUFeatureName_ShaderF16);
    info->timestamp_query = wgpuAdapterHasFeature(adapter, WGPUFeatureName_TimestampQuery);
    info->subgroups = webgpu_native_subgroups_feature(adapter) != 0;
    info->shader_int64 = webgpu_native_int64_feature(adapter) != 0;
    return WGT_OK;
}

int webgpu_adapter_score(const wgt_adapter_info *info, wgt_power_preference power)
{
    int type_score = 0;
    switch (info->type) {
    case WGT_ADAPTER_DISCRETE_GPU: type_score = power == WGT_POWER_LOW_POWER ? 200 : 300; break;
    case WGT_ADAPTER_INTEGRATED_GPU: type_score = power == WGT_POWER_LOW_POWER ? 300 : 200; break;
    case WGT_ADAPTER_CPU: type_score = 100; break;
    default: type_score = 50; break;
    }
    /* Prefer the native compute APIs over GL, which lacks much of compute. */
    int api = (!strcmp(info->backend, "Vulkan") || !strcmp(info->backend, "Metal") || !strcmp(info->backend, "D3D12"))
                  ? 20
                  : 0;
    return type_score + api;
}

/* OpenGL/EGL is probed only when asked for (WGT_ADAPTER or the adapter name
 * naming it): compute never prefers it over Vulkan, and probing EGL on a
 * headless machine prints "XDG_RUNTIME_DIR is invalid" errors to stderr. */
static bool names_gl(const char *s) { return s && (strcasestr(s, "gl") != NULL); }

static bool wants_gl(const wgt_context_options *o)
{
    return names_gl(getenv("WGT_ADAPTER")) || (o && names_gl(o->adapter_name));
}

static WGPUInstance create_instance(bool include_gl) { return webgpu_native_create_instance(include_gl); }

/* The deadline of a wait without progress: the option (which
 * WGT_WAIT_TIMEOUT_MS overrides, context_create.c), else 10 s on a GPU and
 * 120 s on a software adapter (lavapipe runs a large kernel ~1000x slower, and
 * one long kernel shows no progress until it ends). */
static uint32_t default_timeout_ms(const wgt_context_options *o, const wgt_adapter_info *info)
{
    if (o->wait_timeout_ms) return o->wait_timeout_ms;
    return info->type == WGT_ADAPTER_CPU ? 120000 : 10000;
}

wgt_status wgt_adapters_enumerate(wgt_adapter_info **infos, size_t *count)
{
    if (!infos || !count) return WGT_ERR_INVALID_ARGUMENT;
    *infos = NULL;
    *count = 0;
    WGPUInstance instance = create_instance(wants_gl(NULL));
    if (!instance) return WGT_ERR_NO_ADAPTER;
    WGPUAdapter adapters[MAX_ADAPTERS];
    size_t n = webgpu_native_enumerate_adapters(instance, adapters, MAX_ADAPTERS);
    if (n == 0 && !wants_gl(NULL)) {
        wgpuInstanceRelease(instance);
        instance = create_instance(true);
        if (!instance) return WGT_ERR_NO_ADAPTER;
        n = webgpu_native_enumerate_adapters(instance, adapters, MAX_ADAPTERS);
    }
    wgt_status status = WGT_OK;
    if (n == 0) {
        status = WGT_ERR_NO_ADAPTER;
    } else {
        *infos = calloc(n, sizeof(**infos));
        if (!*infos) status = WGT_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++) {
            if (*infos) webgpu_fill_adapter_info(adapters[i], (int)i, &(*infos)[i]);
            wgpuAdapterRelease(adapters[i]);
        }
        if (*infos) *count = n;
    }
    wgpuInstanceRelease(instance);
    return status;
}

void wgt_adapters_free(wgt_adapter_info *infos) { free(infos); }

/* Picks an adapter by index, name substring, type and power preference. */
static int choose_adapter(wgt_context *ctx, const wgt_adapter_info *infos, size_t n, const wgt_context_options *o)
{
    if (o->adapter_index >= 0) {
        if ((size_t)o->adapter_index >= n) {
            wgt_error(ctx, WGT_ERR_NO_ADAPTER, "wgt_context_create: adapter index %d requested, %zu adapters exist",
                      o->adapter_index, n);
            return -1;
        }
        return o->adapter_index;
    }
    int best = -1, best_score = -1;
    for (size_t i = 0; i < n; i++) {
        /* the name may be the adapter's, its vendor's or its API's (WGT_ADAPTER=gl picks OpenGL) */
        if (o->adapter_name && !strcasestr(infos[i].name, o->adapter_name) &&
            !strcasestr(infos[i].vendor, o->adapter_name) && !strcasestr(infos[i].backend, o->adapter_name))
            continue;
        if (o->adapter_type != WGT_ADAPTER_ANY && infos[i].type != o->adapter_type) continue;
        int score = webgpu_adapter_score(&infos[i], o->power);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    if (best < 0)
        wgt_error(ctx, WGT_ERR_NO_ADAPTER, "wgt_context_create: no adapter matches name \"%s\" and type %s among %zu",
                  o->adapter_name ? o->adapter_name : "", wgt_adapter_type_name(o->adapter_type), n);
    return best;
}

/* ------------------------------------------------------------ callbacks */

/* The device's own callbacks (uncaptured errors, loss) can fire for as long as
 * the device lives, which can be longer than its context (a parked device,
 * below): they reach the backend through this link, cleared when the backend
 * goes away and freed with the device. */
struct webgpu_device_link {
    webgpu_backend *wg;
};

static void on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message, void *u1,
                                void *u2)
{
    (void)device;
    (void)u2;
    webgpu_backend *wg = u1 ? ((webgpu_device_link *)u1)->wg : NULL;
    if (!wg) return;
    char text[768];
    webgpu_copy_string(message, text, sizeof(text));
    wgt_error(wg->base.ctx, type == WGPUErrorType_OutOfMemory ? WGT_ERR_OUT_OF_MEMORY : WGT_ERR_INTERNAL,
              "webgpu: uncaptured %s error: %s", type == WGPUErrorType_Validation ? "validation" : "device", text);
}

static void on_device_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message, void *u1,
                           void *u2)
{
    (void)device;
    (void)u2;
    /* The reason first: a device released after its context (a late device
     * request) reports Destroyed and must not touch the link. */
    if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    webgpu_backend *wg = u1 ? ((webgpu_device_link *)u1)->wg : NULL;
    if (!wg) return;
    char text[512];
    webgpu_copy_string(message, text, sizeof(text));
    wg->device_lost = true;
    wgt_error_fatal(wg->base.ctx, WGT_ERR_DEVICE_LOST, "webgpu: device lost (reason %d): %s", (int)reason, text);
}

/* ------------------------------------------------------------ device */

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1, void *u2)
{
    (void)u2;
    webgpu_request *r = u1;
    r->status = (int)status;
    if (status == WGPURequestDeviceStatus_Success) r->device = device;
    webgpu_copy_string(message, r->message, sizeof(r->message));
    r->done = true;
    webgpu_request_release(r);
}

/* Requests every limit the adapter offers and the features that help compute. */
static bool request_device(webgpu_backend *wg)
{
    wgt_context *ctx = wg->base.ctx;
    WGPULimits limits = WGPU_LIMITS_INIT;
    wgpuAdapterGetLimits(wg->adapter, &limits);

    WGPUFeatureName features[5];
    size_t n_features = 0;
    if (wg->info.shader_f16) features[n_features++] = WGPUFeatureName_ShaderF16;
    if (wg->info.timestamp_query) features[n_features++] = WGPUFeatureName_TimestampQuery;
    WGPUFeatureName subgroups = webgpu_native_subgroups_feature(wg->adapter);
    if (subgroups) features[n_features++] = subgroups;
    /* 64-bit integers: Philox's 32 x 32 -> 64-bit products in one multiply */
    WGPUFeatureName int64 = wg->knobs.philox_mul16 ? (WGPUFeatureName)0 : webgpu_native_int64_feature(wg->adapter);
    if (int64) features[n_features++] = int64;

    WGPUDeviceDescriptor desc = WGPU_DEVICE_DESCRIPTOR_INIT;
    desc.label = webgpu_string("wgtensor");
    desc.requiredFeatureCount = n_features;
    desc.requiredFeatures = features;
    desc.requiredLimits = &limits;
    desc.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    wg->link = calloc(1, sizeof(*wg->link));
    if (!wg->link) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_context_create: out of host memory");
        return false;
    }
    wg->link->wg = wg;
    desc.uncapturedErrorCallbackInfo.userdata1 = wg->link;
    desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
    desc.deviceLostCallbackInfo.callback = on_device_lost;
    desc.deviceLostCallbackInfo.userdata1 = wg->link;

    /* The device request may outlive this wait (timeout): its record is shared. */
    char first[512] = "";
    WGPUDevice device = NULL;
    for (int attempt = 0; attempt < 2 && !device; attempt++) {
        if (attempt == 1) {
            /* Some adapters (GL through EGL) refuse their own reported limits or
             * features: try once more with the defaults before giving up. */
            desc.requiredLimits = NULL;
            desc.requiredFeatureCount = 0;
        }
        webgpu_request *req = webgpu_request_new(wg, "wgt_context_create");
        if (!req) return false;
        WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = on_device;
        cb.userdata1 = req;
        wgpuAdapterRequestDevice(wg->adapter, &desc, cb);
        wgt_status s = webgpu_wait(wg, &req->done, "wgt_context_create: request device");
        if (s == WGT_OK) {
            device = req->device; /* taken over from the record */
            req->device = NULL;
            if (attempt == 0) snprintf(first, sizeof(first), "%s", req->message);
        }
        webgpu_request_release(req);
        if (s != WGT_OK) return false;
    }
    if (!device) {
        wgt_error(ctx, WGT_ERR_NO_ADAPTER, "wgt_context_create: device request on \"%s\" failed: %s", wg->info.name,
                  first);
        return false;
    }
    wg->device = device;
    wg->queue = wgpuDeviceGetQueue(wg->device);
    wg->limits = (WGPULimits)WGPU_LIMITS_INIT;
    wgpuDeviceGetLimits(wg->device, &wg->limits);
    wg->has_f16 = wgpuDeviceHasFeature(wg->device, WGPUFeatureName_ShaderF16);
    wg->has_timestamps = wgpuDeviceHasFeature(wg->device, WGPUFeatureName_TimestampQuery);
    wg->has_subgroups = subgroups && wgpuDeviceHasFeature(wg->device, subgroups);
    wg->has_int64 = int64 && wgpuDeviceHasFeature(wg->device, int64);
    return true;
}

/* An OpenGL adapter may lack what wgtensor's kernels need (storage buffers in
 * compute shaders): NVIDIA's GL through EGL, which wgpu offers when no Vulkan
 * adapter answers, refused every kernel with a bare "Validation Error" at its
 * first use. Such an adapter is refused here, once, with the cause: a
 * one-binding compute pipeline is built (and kept in the cache). Vulkan,
 * Metal and D3D12 adapters are not probed. */
static bool compute_works(webgpu_backend *wg)
{
    if (strcasestr(wg->info.backend, "gl") == NULL) return true;
    static const char probe[] = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
                                "@compute @workgroup_size(1) fn main() { x[0] = 1u; }\n";
    webgpu_pipeline *pipe;
    if (webgpu_pipeline_create(wg, "compute_probe", probe, "main", 0, 1, false, true, "wgt_context_create",
                               &pipe) == WGT_OK)
        return true;
    char cause[600];
    snprintf(cause, sizeof(cause), "%s", wgt_context_error_message(wg->base.ctx));
    wgt_context_clear_error(wg->base.ctx);
    wgt_error(wg->base.ctx, WGT_ERR_NO_ADAPTER,
              "wgt_context_create: adapter \"%s\" (%s) cannot run compute shaders with storage buffers (%s); "
              "use a Vulkan, Metal or D3D12 adapter, or WGT_BACKEND=cpu",
              wg->info.name, wg->info.backend, cause);
    return false;
}

/* ------------------------------------------------------------ teardown */

/* Devices of contexts destroyed while stuck. Releasing a device waits for its
 * queue to drain (inside wgpu-native), which on a hung GPU is forever: such a
 * device is parked here instead and released once its queue is idle, checked
 * whenever a context is created or destroyed. Still reachable at exit, so leak
 * checkers do not count it. */
typedef struct parked_device {
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    webgpu_progress *progress;          /* idle when completed reaches submitted */
    uint64_t submitted;
    webgpu_device_link *link;           /* freed with the device */
    struct parked_device *next;
} parked_device;

static parked_device *parked_devices;
static pthread_mutex_t parked_lock = PTHREAD_MUTEX_INITIALIZER;

static void release_device(WGPUInstance instance, WGPUAdapter adapter, WGPUDevice device, WGPUQueue queue)
{
    if (queue) wgpuQueueRelease(queue);
    if (device) {
        wgpuDeviceDestroy(device);
        wgpuDeviceRelease(device);
    }
    if (adapter) wgpuAdapterRelease(adapter);
    if (instance && getenv("WGT_REPORT_LIVE")) { /* what this context left unreleased (a leak) */
        char live[512];
        webgpu_native_live_objects(instance, live, sizeof(live));
        fprintf(stderr, "wgt_context_destroy: wgpu objects still held in the process's instance: %s\n", live[0] ? live : "none");
    }
    if (instance) wgpuInstanceRelease(instance);
}

static void sweep_parked_devices(void)
{
    pthread_mutex_lock(&parked_lock);
    for (parked_device **link = &parked_devices; *link;) {
        parked_device *p = *link;
        /* Only the instance's event processing here: polling the device itself
         * can wait for its queue. */
        wgpuInstanceProcessEvents(p->instance);
        if (!p->progress || __atomic_load_n(&p->progress->completed, __ATOMIC_ACQUIRE) >= p->submitted) {
            *link = p->next;
            release_device(p->instance, p->adapter, p->device, p->queue);
            webgpu_progress_release(p->progress);
            free(p->link);
            free(p);
        } else {
            link = &p->next;
        }
    }
    pthread_mutex_unlock(&parked_lock);
}

/* false if there was no memory to park it (then it is released, blocking). */
static bool park_device(webgpu_backend *wg)
{
    parked_device *p = calloc(1, sizeof(*p));
    if (!p) return false;
    *p = (parked_device){wg->instance, wg->adapter, wg->device, wg->queue, wg->progress, wg->submitted, wg->link, NULL};
    if (wg->progress) __atomic_add_fetch(&wg->progress->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&parked_lock);
    p->next = parked_devices;
    parked_devices = p;
    pthread_mutex_unlock(&parked_lock);
    return true;
}

void webgpu_destroy(wgt_backend *b)
{
    webgpu_backend *wg = webgpu_of(b);
    /* Waits at most one deadline, and not at all once the device is known
     * stuck or lost (webgpu_finish fails fast then). */
    if (wg->device && !wg->device_lost) webgpu_finish(wg, "wgt_context_destroy");
    webgpu_profiler_destroy(wg);
    webgpu_elementwise_destroy(wg);
    webgpu_indexing_destroy(wg);
    webgpu_execution_destroy(wg);
    webgpu_pipeline_cache_destroy(wg);
    webgpu_allocator_destroy(wg);
    bool stuck = wg->device && !wg->device_lost && webgpu_check_stuck(wg, "wgt_context_destroy") != WGT_OK;
    if (wg->link) wg->link->wg = NULL; /* from here on the device's callbacks reach nothing */
    if (!stuck || !park_device(wg)) {
        release_device(wg->instance, wg->adapter, wg->device, wg->queue);
        free(wg->link);
    }
    sweep_parked_devices();
    webgpu_progress_release(wg->progress); /* callbacks still pending keep their own references */
    free(wg);
}

wgt_status webgpu_adapter_info(wgt_backend *b, wgt_adapter_info *info)
{
    *info = webgpu_of(b)->info;
    return WGT_OK;
}

wgt_backend *wgt_webgpu_backend_create(wgt_context *ctx, const wgt_context_options *options)
{
    webgpu_backend *wg = calloc(1, sizeof(*wg));
    if (!wg) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_context_create: out of host memory");
        return NULL;
    }
    wg->base.vt = &webgpu_vtable;
    wg->base.ctx = ctx;
    sweep_parked_devices();
    wgt_fault_from_environment(&wg->base.fault);
    webgpu_knobs_read(&wg->knobs);
    wg->timeout_ms = options->wait_timeout_ms ? options->wait_timeout_ms : 10000; /* until the adapter is known */
    wg->instance = create_instance(wants_gl(options));
    if (!wg->instance) {
        wgt_error(ctx, WGT_ERR_NO_ADAPTER, "wgt_context_create: WebGPU instance creation failed");
        free(wg);
        return NULL;
    }
    WGPUAdapter adapters[MAX_ADAPTERS];
    wgt_adapter_info infos[MAX_ADAPTERS];
    size_t n = webgpu_native_enumerate_adapters(wg->instance, adapters, MAX_ADAPTERS);
    if (n == 0 && !wants_gl(options)) {
        /* No Vulkan/Metal/D3D12 adapter: GL is all there is, probe it after all. */
        wgpuInstanceRelease(wg->instance);
        wg->instance = create_instance(true);
        n = wg->instance ? webgpu_native_enumerate_adapters(wg->instance, adapters, MAX_ADAPTERS) : 0;
    }
    for (size_t i = 0; i < n; i++) webgpu_fill_adapter_info(adapters[i], (int)i, &infos[i]);
    int chosen = -1;
    if (n == 0)
        wgt_error(ctx, WGT_ERR_NO_ADAPTER,
                  "wgt_context_create: no WebGPU adapter found (no Vulkan/Metal/D3D12/GL driver); "
                  "install a GPU driver or mesa-vulkan-drivers, or use WGT_BACKEND=cpu");
    else
        chosen = choose_adapter(ctx, infos, n, options);
    for (size_t i = 0; i < n; i++) {
        if ((int)i == chosen) wg->adapter = adapters[i];
        else wgpuAdapterRelease(adapters[i]);
    }
    if (chosen < 0) {
        wgpuInstanceRelease(wg->instance);
        free(wg);
        return NULL;
    }
    wg->info = infos[chosen];
    wg->timeout_ms = default_timeout_ms(options, &wg->info);
    wg->progress = calloc(1, sizeof(*wg->progress));
    if (wg->progress) wg->progress->refs = 1;
    webgpu_allocator_init(wg);
    webgpu_pipeline_cache_init(wg);
    if (!request_device(wg) || webgpu_execution_init(wg) != WGT_OK || !compute_works(wg)) {
        webgpu_destroy(&wg->base);
        return NULL;
    }
    webgpu_tune_load(wg);
    wg->allocator.budget = options->memory_budget_bytes;
    wg->allocator.stats.budget_bytes = options->memory_budget_bytes;
    return &wg->base;
}
