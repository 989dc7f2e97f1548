/*
 * QROWS on WebGPU: rows of D floats and their 8-bit form (an LLM's 8-bit KV
 * cache; backend.h has the contract, cpu_quant_rows.c the reference):
 *   quantize    x [.., D] f32/f16 -> codes u32 [.., D/4], scales f32 [.., D/32]
 *   dequantize  codes, scales -> x
 * One dispatch of kernels/quant_rows.wgsl, one invocation per group of 32
 * values. Views of up to 4 dims with any strides on the leading dims; f16 x
 * is addressed in u32 pairs, so its offset and leading strides must be even.
 */
#include <stdio.h>
#include <string.h>

#include "core/quant_call.h"
#include "webgpu/webgpu_internal.h"

/* Mirrors struct Params of quant_rows.wgsl. */
typedef struct qrows_params {
    uint32_t lead[4];   /* leading dims (3), groups per row */
    uint32_t x_st[4];   /* leading strides (3), offset */
    uint32_t c_st[4];
    uint32_t s_st[4];
    uint32_t groups, pad[3];
} qrows_params;

bool webgpu_quant_rows_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if (!wgt_qrows_call_ok(call)) return false;
    const wgt_tensor_view *x, *codes, *scales;
    wgt_qrows_views(call, &x, &codes, &scales);
    /* f16 x as u32 pairs: a group must start on an even element */
    for (int d = 0; d < x->ndim - 1; d++)
        if (x->dtype == WGT_F16 && x->shape[d] > 1 && x->strides[d] % 2) return false;
    if (x->dtype == WGT_F16 && x->offset % 2) return false;
    return webgpu_view_fits_u32(x) && webgpu_view_fits_u32(codes) && webgpu_view_fits_u32(scales) && wgt_shape_numel(x->ndim, x->shape) / 32 < UINT32_MAX;
}

/* The view's leading strides, padded in front to 3, and its offset. */
static void lead_strides(const wgt_tensor_view *v, uint32_t *st)
{
    const int lead = v->ndim - 1;
    for (int i = 0; i < 3; i++) st[i] = i >= 3 - lead ? (uint32_t)v->strides[i - (3 - lead)] : 0;
    st[3] = (uint32_t)v->offset;
}

wgt_status webgpu_quant_rows_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    const wgt_tensor_view *x, *codes, *scales;
    wgt_qrows_views(call, &x, &codes, &scales);
    const int nd = x->ndim, lead = nd - 1;
    qrows_params p;
    memset(&p, 0, sizeof(p));
    for (int i = 0; i < 3; i++) p.lead[i] = i >= 3 - lead ? (uint32_t)x->shape[i - (3 - lead)] : 1;
    p.lead[3] = (uint32_t)(x->shape[nd - 1] / 32);
    lead_strides(x, p.x_st);
    lead_strides(codes, p.c_st);
    lead_strides(scales, p.s_st);
    const uint64_t groups = (uint64_t)wgt_shape_numel(nd, x->shape) / 32;
    p.groups = (uint32_t)groups;
    if (groups == 0) return WGT_OK;

    const bool f16 = x->dtype == WGT_F16, deq = call->quant.dequantize;
    char key[64], consts[96];
    snprintf(key, sizeof(key), "quant_rows:%d%d", f16, deq);
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, key);
    if (!pipe) {
        snprintf(consts, sizeof(consts), "const X_F16: bool = %s;\nconst DEQUANTIZE: bool = %s;\n",
                 f16 ? "true" : "false", deq ? "true" : "false");
        const char *files[3] = {"quant_codes", "quant_q8_group", "quant_rows"};
        /* unchecked: every index is inside the views, which the front-end and this file checked */
        wgt_status s = webgpu_pipeline_assemble(wg, key, consts, files, 3, 0, 3, false, op, &pipe);
        if (s != WGT_OK) return s;
    }
    uint32_t gx, gy;
    wgt_status s = webgpu_grid(wg, (groups + 63) / 64, &gx, &gy, op);
    WGPUBuffer buffers[3] = {webgpu_view_buffer(x), webgpu_view_buffer(codes), webgpu_view_buffer(scales)};
    if (s == WGT_OK) s = webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
    return s;
}
