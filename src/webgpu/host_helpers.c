#define _POSIX_C_SOURCE 199309L /* clock_gettime */
/* Host-side helpers every runtime file uses: WGPUStringView to and from C
 * strings, and the monotonic clock of deadlines and compile timings. Apart
 * from device.c so that the files device.c sets up (waits, pipeline cache,
 * tuner) do not call back into it. */
#include <string.h>
#include <time.h>

#include "webgpu/webgpu_internal.h"

WGPUStringView webgpu_string(const char *s) { return (WGPUStringView){s, s ? strlen(s) : 0}; }

void webgpu_copy_string(WGPUStringView v, char *buf, size_t size)
{
    if (size == 0) return;
    size_t n = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(buf, v.data, n);
    buf[n] = '\0';
}

double webgpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
