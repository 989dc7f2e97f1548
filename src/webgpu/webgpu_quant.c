/*
 * QMATMUL on WebGPU: x [M, K] f32 times group-wise 8/4-bit weights [N, K]
 * (transposed) -> out [M, N] f32, dequantized inside the kernel
 * (kernels/quant_matmul.wgsl): one workgroup per output column and block of 4
 * rows of x, vec4<u32> weight loads, one scale per 32 weights. Decode (M = 1)
 * takes kernels/quant_gemv.wgsl instead: 16 output columns per workgroup of
 * 256, each invocation reusing a group's x for 4 columns (WGT_QUANT_GEMV=0
 * keeps quant_matmul for M = 1, to compare).
 */
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* Mirrors struct Params of quant_matmul.wgsl. */
typedef struct quant_params {
    uint32_t M, N, K, bits;
    uint32_t x_offset, q_offset, s_offset, out_offset; /* x, q in vec4 units; s, out in elements */
    uint32_t row_blocks, pad[3];
} quant_params;

#define QUANT_ROWS 4       /* ROWS of quant_matmul */
#define QUANT_GEMV_ROWS 16 /* ROWS of quant_gemv: output columns per workgroup */

static bool contiguous_aligned(const wgt_tensor_view *v)
{
    return v->ndim == 2 && v->strides[1] == 1 && v->strides[0] == v->shape[1] && v->offset % 4 == 0;
}

bool webgpu_quant_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2];
    return call->n_inputs == 3 && x->dtype == WGT_F32 && q->dtype == WGT_I32 && s->dtype == WGT_F32 &&
           call->outputs[0].dtype == WGT_F32 && (call->quant.bits == 8 || call->quant.bits == 4) &&
           contiguous_aligned(x) && contiguous_aligned(q) && x->shape[1] % 32 == 0;
}

wgt_status webgpu_quant_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    wgt_context *ctx = wg->base.ctx;
    if (!webgpu_quant_supports(wg, call))
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: quantized matmul needs f32 x and i32 weights, contiguous with "
                         "offsets that are multiples of 4, K %% 32 == 0, 8 or 4 bits", op);
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2], *out = &call->outputs[0];
    const int64_t M = x->shape[0], K = x->shape[1], N = q->shape[0];
    if (M == 0 || N == 0) return WGT_OK;
    const uint64_t limit = UINT32_MAX;
    if ((uint64_t)(M * K) >= limit || (uint64_t)(N * K) >= limit || (uint64_t)(M * N) >= limit ||
        (uint64_t)x->offset >= limit || (uint64_t)q->offset >= limit || (uint64_t)s->offset + (uint64_t)N * (K / 32) >= limit ||
        (uint64_t)out->offset + (uint64_t)(M * N) >= limit)
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: [%lld, %lld] x [%lld, %lld] exceeds 2^32 elements", op,
                         (long long)M, (long long)K, (long long)N, (long long)K);
    quant_params p;
    memset(&p, 0, sizeof(p));
    p.M = (uint32_t)M, p.N = (uint32_t)N, p.K = (uint32_t)K, p.bits = (uint32_t)call->quant.bits;
    p.x_offset = (uint32_t)(x->offset / 4), p.q_offset = (uint32_t)(q->offset / 4);
    p.s_offset = (uint32_t)s->offset, p.out_offset = (uint32_t)out->offset;
    p.row_blocks = (uint32_t)((M + QUANT_ROWS - 1) / QUANT_ROWS);
    const char *env = getenv("WGT_QUANT_GEMV");
    const bool gemv = M == 1 && !(env && strcmp(env, "0") == 0);
    const char *kernel = gemv ? "quant_gemv" : "quant_matmul";
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, kernel);
    wgt_status st = WGT_OK;
    if (!pipe) {
        const char *source = webgpu_kernel_source(kernel);
        if (!source) return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, kernel);
        st = webgpu_pipeline_create(wg, kernel, source, NULL, 3, 1, true, false, op, &pipe);
        if (st != WGT_OK) return st;
    }
    uint32_t gx, gy;
    /* quant_gemv: QUANT_GEMV_ROWS columns per workgroup; quant_matmul: one
     * column per workgroup and block of 4 rows */
    st = webgpu_grid(wg, gemv ? (uint64_t)(N + QUANT_GEMV_ROWS - 1) / QUANT_GEMV_ROWS : (uint64_t)N * p.row_blocks,
                     &gx, &gy, op);
    WGPUBuffer buffers[4] = {webgpu_view_buffer(x), webgpu_view_buffer(q), webgpu_view_buffer(s),
                             webgpu_view_buffer(out)};
    if (st == WGT_OK) st = webgpu_dispatch(wg, pipe, buffers, 4, &p, sizeof(p), gx, gy, 1, op);
    return st;
}
