/*
 * WebGPU's dropout kernels that keep the mask as bits (WGT_KERNEL_NN's
 * DROPOUT_ADD and DROPOUT_MASKED; contract in src/core/backend.h):
 *
 *   DROPOUT_ADD     kernels/nn_dropout_add.wgsl     one invocation per mask word
 *   DROPOUT_MASKED  kernels/nn_dropout_masked.wgsl  one invocation per quad
 *
 * Why: the residual dropout's backward drew its mask again (Philox, integer
 * bound: 24.8 us a call for the GPT's [16384, 384] in an H200 profile; 16.1
 * reading the bits; the step 32.6 against 32.7-32.8 ms in one call,
 * bench/results/h200-2026-11-28i p4); reading 32 elements' bits from one
 * word costs 1/32 of the gradient's traffic. Both kernels move vec4s, so they
 * take f32 views of n % 4 == 0 elements at offsets that are multiples of 4 in
 * buffers of whole 16-byte words (webgpu_dropout_supports; the front-end asks
 * for these kernels only then, src/ops/nn_loss.c).
 */
#include <string.h>

#include "core/nn_call.h"
#include "webgpu/webgpu_internal.h"

/* Mirrors struct Params of both kernels. */
typedef struct dropout_params {
    uint32_t n, words, quads, seed_lo;
    uint32_t seed_hi, x_offset, h_offset, out_offset;
    uint32_t mask_offset;
    float p, scale;
    uint32_t zero;
} dropout_params;
_Static_assert(sizeof(dropout_params) % 16 == 0 && sizeof(dropout_params) <= WEBGPU_PARAMS_MAX, "dropout params");

static bool quad_view(const wgt_tensor_view *v)
{
    return v->storage && v->offset / 4 <= UINT32_MAX &&
           (uint64_t)v->offset + (uint64_t)v->shape[0] <= v->storage->bytes / 4 && webgpu_view_vec4_aligned(v);
}

bool webgpu_dropout_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if (!wgt_nn_call_shapes_valid(call)) return false;
    bool add = call->nn.kernel == WGT_NN_DROPOUT_ADD;
    const wgt_tensor_view *mask = add ? &call->outputs[1] : &call->inputs[1];
    int64_t n = call->inputs[0].shape[0];
    if (n % 4 != 0 || n / 4 > UINT32_MAX || !mask->storage || mask->offset > UINT32_MAX) return false;
    const wgt_tensor_view *rows[3] = {&call->inputs[0], add ? &call->inputs[1] : &call->outputs[0], &call->outputs[0]};
    for (int i = 0; i < 3; i++)
        if (!quad_view(rows[i])) return false;
    return true;
}

wgt_status webgpu_dropout_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name; /* webgpu_run asked webgpu_dropout_supports first */
    const bool add = call->nn.kernel == WGT_NN_DROPOUT_ADD;
    const int64_t n = call->inputs[0].shape[0];
    if (n == 0) return WGT_OK;
    const wgt_tensor_view *mask = add ? &call->outputs[1] : &call->inputs[1];
    dropout_params q;
    memset(&q, 0, sizeof(q));
    q.n = (uint32_t)n;
    q.words = (uint32_t)wgt_dropout_mask_words(n);
    q.quads = (uint32_t)(n / 4);
    q.seed_lo = (uint32_t)call->nn.seed;
    q.seed_hi = (uint32_t)(call->nn.seed >> 32);
    q.x_offset = (uint32_t)(call->inputs[0].offset / 4);
    q.h_offset = add ? (uint32_t)(call->inputs[1].offset / 4) : 0;
    q.out_offset = (uint32_t)(call->outputs[0].offset / 4);
    q.mask_offset = (uint32_t)mask->offset;
    q.p = (float)call->nn.dropout_p;
    q.scale = (float)(1.0 / (1.0 - call->nn.dropout_p));
    webgpu_pipeline *p;
    wgt_status s;
    if (add) {
        const char *files[3] = {"philox", webgpu_philox_mul_file(wg), "nn_dropout_add"};
        s = webgpu_pipeline_assemble(wg, wg->has_int64 ? "nn_dropout_add:64" : "nn_dropout_add:16", "", files, 3, 2, 2,
                                     false, op, &p);
    } else {
        const char *files[1] = {"nn_dropout_masked"};
        s = webgpu_pipeline_assemble(wg, "nn_dropout_masked", "", files, 1, 2, 1, false, op, &p);
    }
    if (s != WGT_OK) return s;
    uint64_t invocations = add ? q.words : q.quads;
    uint32_t gx, gy;
    if ((s = webgpu_grid(wg, (invocations + 255) / 256, &gx, &gy, op)) != WGT_OK) return s;
    WGPUBuffer buffers[4];
    if (add) {
        buffers[0] = webgpu_view_buffer(&call->inputs[0]), buffers[1] = webgpu_view_buffer(&call->inputs[1]);
        buffers[2] = webgpu_view_buffer(&call->outputs[0]), buffers[3] = webgpu_view_buffer(mask);
    } else {
        buffers[0] = webgpu_view_buffer(&call->inputs[0]), buffers[1] = webgpu_view_buffer(mask);
        buffers[2] = webgpu_view_buffer(&call->outputs[0]);
    }
    return webgpu_dispatch(wg, p, buffers, add ? 4 : 3, &q, sizeof(q), gx, gy, 1, op);
}
