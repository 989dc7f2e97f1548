/* What the web implementation of webgpu.h (webgpu_web.c) offers beyond the
 * standard header, for web_extras.c (the web build's stand-in for
 * src/webgpu/native_extras.c). */
#ifndef WGT_WEBGPU_WEB_H
#define WGT_WEBGPU_WEB_H

#include <webgpu.h>

/* navigator.gpu.requestAdapter(), awaited (ASYNCIFY); NULL when the browser
 * has no WebGPU or refuses, with the reason in web_adapter_refusal(). */
WGPUAdapter web_request_adapter(void);
const char *web_adapter_refusal(void);
/* Lets the browser's event loop run until a pending promise settles or
 * timeout_ms pass (ASYNCIFY). */
void web_yield(int timeout_ms);
void web_register_device(WGPUDevice device);

#endif
