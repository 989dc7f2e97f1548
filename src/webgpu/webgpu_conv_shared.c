/*
 * What the convolution files share (webgpu_conv.c: the implicit GEMM, the
 * direct input gradient, pooling and batch norm; webgpu_conv_stem.c: the
 * stem's input gradient): the pipeline lookup, the parameter blocks' common
 * geometry, the stride-phase test and an integer helper. Declared in
 * conv_shared.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conv_call.h"
#include "webgpu/conv_shared.h"

static const bool conv_checked = false; /* every index is bounds-checked by the kernels' own logic */

wgt_status webgpu_conv_pipeline(webgpu_backend *wg, const char *key, const char *prelude, const char *common,
                                const char *file, int n_read_only, int n_read_write, const char *op,
                                webgpu_pipeline **out)
{
    const char *files[2] = {common ? common : file, file};
    return webgpu_pipeline_assemble(wg, key, prelude, files, common ? 2 : 1, n_read_only, n_read_write, conv_checked,
                                    op, out);
}

uint32_t webgpu_conv_gcd(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t r = a % b;
        a = b, b = r;
    }
    return a;
}

/* Both parameter blocks (gemm_params, direct_params in webgpu_conv.c; the
 * stem's) open with the same 17 geometry fields, n .. kg in this order. */
void webgpu_conv_fill_geometry(const wgt_kernel_call *call, void *params)
{
    const uint32_t groups = webgpu_conv_u32(call->conv.groups), c = webgpu_conv_u32(call->conv.c), k = webgpu_conv_u32(call->conv.k);
    const uint32_t g[CONV_GEOMETRY_FIELDS] = {
        webgpu_conv_u32(call->conv.n),        c,
        webgpu_conv_u32(call->conv.h),        webgpu_conv_u32(call->conv.w),
        k,                          webgpu_conv_u32(call->conv.oh),
        webgpu_conv_u32(call->conv.ow),       webgpu_conv_u32(call->conv.kh),
        webgpu_conv_u32(call->conv.kw),       webgpu_conv_u32(call->conv.stride_h),
        webgpu_conv_u32(call->conv.stride_w), webgpu_conv_u32(call->conv.pad_top),
        webgpu_conv_u32(call->conv.pad_left), webgpu_conv_u32(call->conv.dil_h),
        webgpu_conv_u32(call->conv.dil_w),    c / groups,
        k / groups};
    memcpy(params, g, sizeof(g));
}

/* Whether the input gradient runs one GEMM per stride phase (at stride 1,
 * one phase: the same GEMM with the simplest loads), unless the phase
 * arithmetic (pad + stride dil) would overflow the kernel's i32. */
bool webgpu_conv_use_phases(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (!wg->knobs.conv_phases) return false;
    const int64_t lim = (int64_t)1 << 30;
    return call->conv.pad_top + call->conv.stride_h * (call->conv.dil_h + 1) < lim &&
           call->conv.pad_left + call->conv.stride_w * (call->conv.dil_w + 1) < lim;
}
