/*
 * The input gradient of few channels per group (the stem's 3, depthwise) by
 * kernels/conv_stem_dx.wgsl: WGT_CONV_V2 "stem" (webgpu_conv.c calls it instead
 * of conv_direct_dx.wgsl where webgpu_conv_stem_fits says the grid fits). The
 * kernel's header says how it works and why.
 */
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "webgpu/conv_shared.h"
#include "webgpu/webgpu_internal.h"

/* The parameter block of kernels/conv_stem_dx.wgsl (WGT_CONV_V2 "stem"). */
typedef struct stem_params {
    uint32_t n, c, h, w, k, oh, ow, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, cg;
    uint32_t kg, groups, step_h, step_w, w_offset, dy_offset, dx_offset, pad0;
} stem_params;
_Static_assert(sizeof(stem_params) % 16 == 0, "conv stem params");
_Static_assert(offsetof(stem_params, kg) == (CONV_GEOMETRY_FIELDS - 1) * sizeof(uint32_t), "stem_params geometry");

#define STEM_PX 4u          /* pixels per invocation */
#define STEM_WSH 512u       /* vec4s of weights in workgroup memory (8 KiB): output channels x phase taps */

/* The input gradient of few channels per group by conv_stem_dx.wgsl: one
 * dispatch, z = the stride phases, y = n groups + g, x = blocks of the
 * phase's pixels. False (the caller takes conv_direct_dx.wgsl) where the grid
 * or the phase arithmetic would not fit. */
bool webgpu_conv_stem_fits(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    uint64_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    uint64_t plane = webgpu_conv_cdiv((uint64_t)call->conv.h, (uint64_t)call->conv.stride_h) *
                     webgpu_conv_cdiv((uint64_t)call->conv.w, (uint64_t)call->conv.stride_w);
    return webgpu_conv_use_phases(wg, call) && (uint64_t)call->conv.n * call->conv.groups <= limit &&
           (uint64_t)call->conv.stride_h * call->conv.stride_w <= limit &&
           webgpu_conv_cdiv(plane, STEM_PX * 256) <= limit && plane < ((uint64_t)1 << 30);
}

wgt_status webgpu_conv_stem_dx(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    const char *op = call->op_name;
    stem_params p;
    memset(&p, 0, sizeof(p));
    webgpu_conv_fill_geometry(call, &p);
    p.groups = webgpu_conv_u32(call->conv.groups);
    p.step_h = p.stride_h / webgpu_conv_gcd(p.stride_h, p.dil_h), p.step_w = p.stride_w / webgpu_conv_gcd(p.stride_w, p.dil_w);
    /* inputs dy, w; output dx */
    const wgt_tensor_view *dy = &v->in[0], *w = &v->in[1], *dx = &v->out[0];
    p.w_offset = (uint32_t)w->offset, p.dy_offset = (uint32_t)dy->offset, p.dx_offset = (uint32_t)dx->offset;
    uint64_t plane = webgpu_conv_cdiv(p.h, p.stride_h) * webgpu_conv_cdiv(p.w, p.stride_w), gy = (uint64_t)p.n * p.groups;
    if (plane == 0 || gy == 0) return WGT_OK;
    uint32_t taps = (uint32_t)(webgpu_conv_cdiv(p.kh, p.step_h) * webgpu_conv_cdiv(p.kw, p.step_w)); /* the largest phase's */
    uint32_t chunk = STEM_WSH / taps > 0 ? STEM_WSH / taps : 1;
    if (chunk > p.kg) chunk = p.kg > 0 ? p.kg : 1;
    if (wg->knobs.conv_debug)
        fprintf(stderr, "wgt conv: %s stem input gradient cg %u k/g %u, %u phases of %llu pixels, %u taps, chunk %u\n",
                op, p.cg, p.kg, p.stride_h * p.stride_w, (unsigned long long)plane, taps, chunk);
    char key[64], prelude[128];
    snprintf(key, sizeof(key), "conv_stem_dx/%u/%u/%u", p.cg, taps, chunk);
    snprintf(prelude, sizeof(prelude), "const CG = %uu;\nconst PX = %uu;\nconst TAPS = %uu;\nconst CO_CHUNK = %uu;\n",
             p.cg, STEM_PX, taps, chunk);
    webgpu_pipeline *pipe;
    wgt_status s = webgpu_conv_pipeline(wg, key, prelude, NULL, "conv_stem_dx", 2, 1, op, &pipe);
    if (s != WGT_OK) return s;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(w), webgpu_view_buffer(dy), webgpu_view_buffer(dx)};
    return webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), (uint32_t)webgpu_conv_cdiv(plane, STEM_PX * 256), (uint32_t)gy,
                           p.stride_h * p.stride_w, op);
}
