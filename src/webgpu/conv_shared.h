/*
 * What the convolution files share, defined in webgpu_conv_shared.c: the
 * pipeline lookup, the parameter blocks' common geometry, the stride-phase
 * test and two integer helpers; and the entry points webgpu_conv.c calls in
 * webgpu_conv_stem.c (the WGT_CONV_V2 "stem" input gradient) and
 * webgpu_conv_pool.c (pooling).
 */
#ifndef WGT_WEBGPU_CONV_SHARED_H
#define WGT_WEBGPU_CONV_SHARED_H

#include <stdbool.h>
#include <stdint.h>

#include "webgpu/webgpu_internal.h"

/* The parameter blocks open with the same 17 geometry fields, n .. kg (the
 * GEMM's, the direct and the stem input gradients'). */
#define CONV_GEOMETRY_FIELDS 17

/* The conv kernel `file` (+ `common`) after `prelude`, cached under `key`. */
wgt_status webgpu_conv_pipeline(webgpu_backend *wg, const char *key, const char *prelude, const char *common,
                                const char *file, int n_read_only, int n_read_write, const char *op,
                                webgpu_pipeline **out);
void webgpu_conv_fill_geometry(const wgt_kernel_call *call, void *params);
/* Whether the phase arithmetic of the input gradient fits the kernels' i32 (and WGT_CONV_PHASES). */
bool webgpu_conv_use_phases(const webgpu_backend *wg, const wgt_kernel_call *call);
uint32_t webgpu_conv_gcd(uint32_t a, uint32_t b);
static inline uint64_t webgpu_conv_cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static inline uint32_t webgpu_conv_u32(int64_t v) { return (uint32_t)v; }

/* webgpu_conv_stem.c */
bool webgpu_conv_stem_fits(const webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_conv_stem_dx(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v);

/* webgpu_conv_winograd.c: 3x3 stride-1 convolutions (forward and both gradients) */
bool webgpu_conv_winograd_applies(const webgpu_backend *wg, const wgt_kernel_call *call);
/* *short_of_memory: its temporaries did not fit (nothing was recorded, the
 * error cleared): the caller runs the implicit GEMM instead */
wgt_status webgpu_conv_winograd(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v,
                                bool *short_of_memory);

/* webgpu_conv_pool.c: POOL_FORWARD and POOL_BACKWARD */
wgt_status webgpu_conv_pool(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v);

#endif
