#define _POSIX_C_SOURCE 200809L /* setenv */
/* The wgpu-native extensions (wgpu.h) wgtensor uses, and nothing else: a build
 * against Dawn replaces this file alone. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wgpu.h>

#include "webgpu/webgpu_internal.h"

/* Mesa's Vulkan device-select layer orders GPUs by the display's; with no
 * display at all it has nothing to do but print "XDG_RUNTIME_DIR is invalid"
 * (it tries Wayland) on every enumeration. Headless and not steered by the user
 * (MESA_VK_DEVICE_SELECT): leave it out. The loader reads this when a Vulkan
 * instance is created; set at load time, before any thread of the program can
 * race the environment. */
__attribute__((constructor)) static void quiet_headless_device_select(void)
{
    if (!getenv("WAYLAND_DISPLAY") && !getenv("DISPLAY") && !getenv("MESA_VK_DEVICE_SELECT") &&
        !getenv("NODEVICE_SELECT"))
        setenv("NODEVICE_SELECT", "1", 0);
}

/* WGT_WGPU_LOG=error|warn|info|debug|trace: wgpu-native's own log on stderr.
 * An error scope reports only the top line of some failures ("Validation
 * Error"); wgpu's log often carries the cause (which limit, which binding). */
static void print_wgpu_log(WGPULogLevel level, WGPUStringView message, void *userdata)
{
    (void)userdata;
    static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};
    const char *name = (unsigned)level < 6 ? names[level] : "?";
    size_t n = message.data ? (message.length == WGPU_STRLEN ? strlen(message.data) : message.length) : 0;
    fprintf(stderr, "wgpu %s: %.*s\n", name, (int)(n > 65536 ? 65536 : n), message.data ? message.data : "");
}

static void install_wgpu_log(void)
{
    const char *want = getenv("WGT_WGPU_LOG");
    if (!want || !*want) return;
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
    WGPULogLevel level = WGPULogLevel_Warn;
    for (int i = 0; i < 5; i++)
        if (strcmp(want, names[i]) == 0) level = (WGPULogLevel)(WGPULogLevel_Error + i);
    wgpuSetLogCallback(print_wgpu_log, NULL);
    wgpuSetLogLevel(level);
}

/* One instance per process and backend set (with GL or without), created on
 * first use and kept until exit; each caller gets its own reference and
 * releases it. An instance per context exhausted NVIDIA's Vulkan driver: in a
 * process that had made ~28 contexts one after another, the next instance
 * enumerated no Vulkan adapter (seen on an H100 and on H200s, driver
 * 580.159.04; tests/test_context_churn.c), and context creation fell back to
 * GL, whose compute the driver refused. The kept instance is reachable, so
 * leak checkers do not count it. */
static WGPUInstance process_instances[2];
static pthread_mutex_t process_instances_lock = PTHREAD_MUTEX_INITIALIZER;

WGPUInstance webgpu_native_create_instance(bool include_gl)
{
    pthread_mutex_lock(&process_instances_lock);
    WGPUInstance *kept = &process_instances[include_gl ? 1 : 0];
    if (!*kept) {
        install_wgpu_log();
        WGPUInstanceExtras extras = {0};
        extras.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
        extras.backends = include_gl ? WGPUInstanceBackend_All : WGPUInstanceBackend_Primary;
        WGPUInstanceDescriptor desc = WGPU_INSTANCE_DESCRIPTOR_INIT;
        desc.nextInChain = &extras.chain;
        *kept = wgpuCreateInstance(&desc);
    }
    WGPUInstance instance = *kept;
    if (instance) wgpuInstanceAddRef(instance);
    pthread_mutex_unlock(&process_instances_lock);
    return instance;
}

size_t webgpu_native_enumerate_adapters(WGPUInstance instance, WGPUAdapter *adapters, size_t capacity)
{
    size_t count = wgpuInstanceEnumerateAdapters(instance, NULL, NULL);
    if (!adapters) return count;
    if (count > capacity) count = capacity;
    WGPUAdapter all[64];
    size_t n = wgpuInstanceEnumerateAdapters(instance, NULL, all);
    if (n > 64) n = 64;
    for (size_t i = 0; i < n; i++) {
        if (i < count) adapters[i] = all[i];
        else wgpuAdapterRelease(all[i]);
    }
    return n < count ? n : count;
}

void webgpu_native_poll(WGPUInstance instance, WGPUDevice device)
{
    if (device) wgpuDevicePoll(device, 0, NULL);
    wgpuInstanceProcessEvents(instance);
}

WGPUShaderModule webgpu_native_create_unchecked_module(WGPUDevice device, const WGPUShaderModuleDescriptor *desc)
{
    return wgpuDeviceCreateShaderModuleTrusted(device, desc, WGPUShaderRuntimeChecks_None);
}

double webgpu_native_timestamp_period(WGPUQueue queue) { return (double)wgpuQueueGetTimestampPeriod(queue); }

void webgpu_native_version(char *buf, size_t size)
{
    uint32_t v = wgpuGetVersion();
    snprintf(buf, size, "wgpu-native %u.%u.%u.%u", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
}

/* Naga takes the subgroup built-ins without WGSL's `enable subgroups;` (and
 * refuses the directive: "not yet implemented in Naga"). */
const char *webgpu_native_subgroups_directive(void) { return ""; }

bool webgpu_native_subgroup_uniformity_checked(void) { return false; }

/* wgpu-native offers subgroups as its own feature (WGPUNativeFeature_Subgroup),
 * not as the standard name: requesting only the standard one left them off. */
WGPUFeatureName webgpu_native_subgroups_feature(WGPUAdapter adapter)
{
    if (wgpuAdapterHasFeature(adapter, WGPUFeatureName_Subgroups)) return WGPUFeatureName_Subgroups;
    if (wgpuAdapterHasFeature(adapter, (WGPUFeatureName)WGPUNativeFeature_Subgroup))
        return (WGPUFeatureName)WGPUNativeFeature_Subgroup;
    return (WGPUFeatureName)0;
}

WGPUFeatureName webgpu_native_int64_feature(WGPUAdapter adapter)
{
    return wgpuAdapterHasFeature(adapter, (WGPUFeatureName)WGPUNativeFeature_ShaderInt64)
               ? (WGPUFeatureName)WGPUNativeFeature_ShaderInt64
               : (WGPUFeatureName)0;
}

/* The wgpu objects of instance that its user has not released (wgpu-native's
 * registry report), as "devices 1 buffers 3 ..." into buf; empty when none.
 * Called just before a context releases its instance: anything listed then
 * outlives the context (a leak that keeps the device, and on NVIDIA its
 * driver context, alive). */
void webgpu_native_live_objects(WGPUInstance instance, char *buf, size_t size)
{
    WGPUGlobalReport r;
    memset(&r, 0, sizeof(r));
    if (size) buf[0] = '\0';
    wgpuGenerateReport(instance, &r);
    const struct {
        const char *name;
        const WGPURegistryReport *report;
    } all[] = {{"adapters", &r.hub.adapters},
               {"devices", &r.hub.devices},
               {"queues", &r.hub.queues},
               {"pipeline layouts", &r.hub.pipelineLayouts},
               {"shader modules", &r.hub.shaderModules},
               {"bind group layouts", &r.hub.bindGroupLayouts},
               {"bind groups", &r.hub.bindGroups},
               {"command buffers", &r.hub.commandBuffers},
               {"compute pipelines", &r.hub.computePipelines},
               {"query sets", &r.hub.querySets},
               {"buffers", &r.hub.buffers}};
    size_t at = 0;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (!all[i].report->numKeptFromUser || at >= size) continue;
        int n = snprintf(buf + at, size - at, "%s%s %zu", at ? ", " : "", all[i].name, all[i].report->numKeptFromUser);
        if (n > 0) at += (size_t)n;
    }
}
