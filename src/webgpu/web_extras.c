/* The web build's stand-in for src/webgpu/native_extras.c: the few calls the
 * WebGPU backend makes outside the standard webgpu.h, answered by the page's
 * navigator.gpu through webgpu_web.c. */
#include <stdio.h>

#include "webgpu/webgpu_internal.h"
#include "webgpu_web/webgpu_web.h"

WGPUInstance webgpu_native_create_instance(bool include_gl)
{
    (void)include_gl; /* the browser picks the API under WebGPU */
    return wgpuCreateInstance(NULL);
}

/* A page sees one adapter: the one navigator.gpu.requestAdapter() offers. A
 * fresh one per call, because a browser adapter gives a single device. When
 * none is offered the reason goes to the console, where the page shows it. */
size_t webgpu_native_enumerate_adapters(WGPUInstance instance, WGPUAdapter *adapters, size_t capacity)
{
    (void)instance;
    WGPUAdapter a = web_request_adapter();
    if (!a) {
        fprintf(stderr, "webgpu: %s\n", web_adapter_refusal());
        return 0;
    }
    if (!adapters || capacity == 0) {
        wgpuAdapterRelease(a);
        return 1;
    }
    adapters[0] = a;
    return 1;
}

/* Promises settle only while the browser's event loop runs: yield to it
 * (ASYNCIFY) until one settles or 1 ms passes, then fire the callbacks. */
void webgpu_native_poll(WGPUInstance instance, WGPUDevice device)
{
    (void)device;
    web_yield(1);
    wgpuInstanceProcessEvents(instance);
}

/* Browsers always insert their bounds checks. */
WGPUShaderModule webgpu_native_create_unchecked_module(WGPUDevice device, const WGPUShaderModuleDescriptor *desc)
{
    return wgpuDeviceCreateShaderModule(device, desc);
}

/* Browser timestamps are in nanoseconds already. */
double webgpu_native_timestamp_period(WGPUQueue queue)
{
    (void)queue;
    return 1.0;
}

void webgpu_native_version(char *buf, size_t size) { snprintf(buf, size, "browser WebGPU (wgtensor web build)"); }

/* Browsers (Tint) require the directive before any subgroup built-in. */
const char *webgpu_native_subgroups_directive(void) { return "enable subgroups;\n"; }

/* Tint checks subgroup uniformity ("'subgroupAdd' must only be called from
 * subgroup uniform control flow"). */
bool webgpu_native_subgroup_uniformity_checked(void) { return true; }

WGPUFeatureName webgpu_native_subgroups_feature(WGPUAdapter adapter)
{
    return wgpuAdapterHasFeature(adapter, WGPUFeatureName_Subgroups) ? WGPUFeatureName_Subgroups : (WGPUFeatureName)0;
}

/* WGSL in browsers has no 64-bit integers. */
WGPUFeatureName webgpu_native_int64_feature(WGPUAdapter adapter)
{
    (void)adapter;
    return (WGPUFeatureName)0;
}

void webgpu_native_live_objects(WGPUInstance instance, char *buf, size_t size)
{
    (void)instance;
    if (size) buf[0] = '\0'; /* the browser keeps no registry we can read */
}
