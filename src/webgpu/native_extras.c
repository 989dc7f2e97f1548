#define _POSIX_C_SOURCE 200809L /* setenv */
/* The wgpu-native extensions (wgpu.h) wgtensor uses, and nothing else: a build
 * against Dawn replaces this file alone. */
#include <stdio.h>
#include <stdlib.h>

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

WGPUInstance webgpu_native_create_instance(bool include_gl)
{

    WGPUInstanceExtras extras = {0};
    extras.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
    extras.backends = include_gl ? WGPUInstanceBackend_All : WGPUInstanceBackend_Primary;
    WGPUInstanceDescriptor desc = WGPU_INSTANCE_DESCRIPTOR_INIT;
    desc.nextInChain = &extras.chain;
    return wgpuCreateInstance(&desc);
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

bool webgpu_native_adapter_has_subgroups(WGPUAdapter adapter)
{
    return wgpuAdapterHasFeature(adapter, (WGPUFeatureName)WGPUNativeFeature_Subgroup) ||
           wgpuAdapterHasFeature(adapter, WGPUFeatureName_Subgroups);
}
