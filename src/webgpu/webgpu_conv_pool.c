/*
 * Pooling (WGT_KERNEL_CONV POOL_FORWARD / POOL_BACKWARD, contracts in
 * src/core/backend.h), called by webgpu_conv.c:
 *
 *   POOL_FORWARD    kernels/conv_pool_max_rows.wgsl  max without dilation
 *                   (WGT_POOL_TILES), OW a multiple of 4: an invocation per 4
 *                   outputs of a row, the window's size as constants
 *                   kernels/conv_pool.wgsl           otherwise: an invocation per output element
 *   POOL_BACKWARD   kernels/conv_pool_backward_max.wgsl  max without dilation
 *                   (WGT_POOL_TILES, the default), W a multiple of 4: an
 *                   invocation per 2 x 4 input elements
 *                   kernels/conv_pool_backward.wgsl  otherwise: an invocation
 *                   per input element (gathers from its windows; no atomics)
 */
#include <stdio.h>
#include <string.h>

#include "webgpu/conv_shared.h"
#include "webgpu/webgpu_internal.h"

typedef struct pool_params {
    uint32_t planes, h, w, oh, ow, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, mode;
    uint32_t count_include_pad, total, x_offset, y_offset, arg_offset, pad0;
} pool_params;
_Static_assert(sizeof(pool_params) % 16 == 0, "pool params");

static uint32_t u32of(int64_t v) { return (uint32_t)v; }

#define POOL_TILE_ROWS 2u /* conv_pool_backward_max.wgsl TR x TC */
#define POOL_TILE_COLS 4u
#define POOL_PATCH_MAX 64u /* conv_pool_max_rows.wgsl: input values per invocation (registers) */

wgt_status webgpu_conv_pool(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    const char *op = call->op_name;
    bool forward = call->conv.kernel == WGT_POOL_FORWARD, max = call->conv.pool_mode == WGT_POOL_MAX;
    pool_params p;
    memset(&p, 0, sizeof(p));
    p.planes = u32of(call->conv.n * call->conv.c);
    p.h = u32of(call->conv.h), p.w = u32of(call->conv.w), p.oh = u32of(call->conv.oh), p.ow = u32of(call->conv.ow);
    p.kh = u32of(call->conv.kh), p.kw = u32of(call->conv.kw);
    p.stride_h = u32of(call->conv.stride_h), p.stride_w = u32of(call->conv.stride_w);
    p.pad_h = u32of(call->conv.pad_top), p.pad_w = u32of(call->conv.pad_left);
    p.dil_h = u32of(call->conv.dil_h), p.dil_w = u32of(call->conv.dil_w);
    p.mode = (uint32_t)call->conv.pool_mode;
    p.count_include_pad = call->conv.count_include_pad;
    p.total = forward ? p.planes * p.oh * p.ow : p.planes * p.h * p.w;
    if (p.total == 0) return WGT_OK;
    webgpu_pipeline *pipe;
    const char *file = forward ? "conv_pool" : "conv_pool_backward";
    /* WGT_CONV_V2 "pool": the backward's window ranges (conv_pool_backward.wgsl RANGES) */
    bool ranges = !forward && wg->knobs.conv_v2_pool;
    const char *key = forward ? file : ranges ? "conv_pool_backward/ranges" : "conv_pool_backward/taps";
    const char *prelude = forward ? "" : ranges ? "const RANGES = true;\n" : "const RANGES = false;\n";
    /* WGT_POOL_TILES: max without dilation, 2 x 4 input elements per invocation
     * (vec4 stores: W and dx's offset multiples of 4) */
    const wgt_tensor_view *dx_view = &v->out[0];
    if (!forward && max && p.dil_h == 1 && p.dil_w == 1 && p.w % POOL_TILE_COLS == 0 &&
        dx_view->offset % POOL_TILE_COLS == 0 && wg->knobs.pool_tiles) {
        file = key = "conv_pool_backward_max", prelude = "";
        uint64_t tiles = (uint64_t)p.planes * ((p.h + POOL_TILE_ROWS - 1) / POOL_TILE_ROWS) *
                         ((p.w + POOL_TILE_COLS - 1) / POOL_TILE_COLS);
        p.total = (uint32_t)tiles; /* at most planes h w, which fits (supports()) */
    }
    /* WGT_POOL_TILES, forward: max without dilation, 4 outputs of a row per
     * invocation (vec4 stores: OW and the output offsets multiples of 4), the
     * window as constants, its input patch at most POOL_PATCH_MAX values */
    char fkey[64], fprelude[128];
    if (forward && max && p.dil_h == 1 && p.dil_w == 1 && p.ow % POOL_TILE_COLS == 0 && wg->knobs.pool_tiles &&
        v->out[0].offset % POOL_TILE_COLS == 0 && v->out[1].offset % POOL_TILE_COLS == 0 &&
        (uint64_t)p.kh * ((POOL_TILE_COLS - 1) * p.stride_w + p.kw) <= POOL_PATCH_MAX) {
        snprintf(fkey, sizeof(fkey), "conv_pool_max_rows/%u/%u/%u/%u", p.kh, p.kw, p.stride_h, p.stride_w);
        snprintf(fprelude, sizeof(fprelude), "const KH = %uu;\nconst KW = %uu;\nconst SH = %uu;\nconst SW = %uu;\n"
                 "const PW = %uu;\n", p.kh, p.kw, p.stride_h, p.stride_w, (POOL_TILE_COLS - 1) * p.stride_w + p.kw);
        file = "conv_pool_max_rows", key = fkey, prelude = fprelude;
        p.total /= POOL_TILE_COLS;
    }
    wgt_status s = webgpu_conv_pipeline(wg, key, prelude, "conv_pool_common", file, forward ? 1 : 2, forward ? 2 : 1,
                                        op, &pipe);
    if (s != WGT_OK) return s;
    uint32_t gx, gy;
    s = webgpu_grid(wg, ((uint64_t)p.total + 255) / 256, &gx, &gy, op);
    if (s != WGT_OK) return s;
    if (forward) {
        const wgt_tensor_view *x = &v->in[0], *y = &v->out[0];
        wgt_tensor_view scratch = {0};
        const wgt_tensor_view *arg = max ? &v->out[1] : NULL;
        if (!arg) { /* the kernel binds an argmax buffer it never writes: a small temporary, never y */
            int64_t four = 4;
            s = webgpu_temp_alloc(wg, WGT_I32, 1, &four, &scratch);
            if (s != WGT_OK) return s;
            arg = &scratch;
        }
        p.x_offset = (uint32_t)x->offset, p.y_offset = (uint32_t)y->offset, p.arg_offset = (uint32_t)arg->offset;
        WGPUBuffer buffers[3] = {webgpu_view_buffer(x), webgpu_view_buffer(y), webgpu_view_buffer(arg)};
        s = webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
        if (scratch.storage) webgpu_temp_release(wg, &scratch);
        return s;
    }
    const wgt_tensor_view *dy = &v->in[0], *dx = &v->out[0], *arg = max ? &v->in[1] : dy;
    p.x_offset = (uint32_t)dy->offset, p.y_offset = (uint32_t)dx->offset, p.arg_offset = (uint32_t)arg->offset;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(dy), webgpu_view_buffer(arg), webgpu_view_buffer(dx)};
    return webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
}

