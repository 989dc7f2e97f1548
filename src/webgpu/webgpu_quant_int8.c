/*
 * QMATMUL with int8_x on WebGPU (backend.h; wgt_set_matmul_precision MEDIUM,
 * the quantized prefill of an LLM): two dispatches,
 *   1. kernels/quant_rows_int8.wgsl: x f32 [M, K] -> 8-bit codes [M, K / 4]
 *      words and scales [M, K / 32] in temporaries, one invocation a group;
 *   2. kernels/quant_matmul_dp4a.wgsl: a tiled GEMM of x's codes and the
 *      weights' codes with dot4I8Packed, BM x BN outputs a workgroup, TM x TN
 *      an invocation (WGT_QUANT_DP4A_TILE=<bm>x<bn> forces a tile of the
 *      table below).
 * The CPU reference is cpu_quant.c's qmatmul_int8_x.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* Mirrors struct Params of quant_rows_int8.wgsl. */
typedef struct rows_params {
    uint32_t groups, x_offset, pad0, pad1;
} rows_params;

/* Mirrors struct Params of quant_matmul_dp4a.wgsl. */
typedef struct dp4a_params {
    uint32_t M, N, K, bits;
    uint32_t xq_offset, q_offset, s_offset, out_offset; /* xq, q in vec4 units; s, out in elements */
    uint32_t tiles_m, tiles_n, pad1, pad2;
} dp4a_params;

typedef struct dp4a_tile {
    int bm, bn, tm, tn;
} dp4a_tile;
/* 256 invocations each; largest first. Registers per invocation grow with
 * TM x TN twice (the group's integer sums and the f32 sums). */
static const dp4a_tile dp4a_tiles[] = {{128, 128, 8, 8}, {128, 64, 8, 4}, {64, 128, 4, 8}, {64, 64, 4, 4}};
#define DP4A_N_TILES (int)(sizeof(dp4a_tiles) / sizeof(dp4a_tiles[0]))
/* Workgroups from which the default takes 128 x 128 over 64 x 64 (~3 waves of
 * an H100's 132 SMs), for 4-bit weights only: with 8-bit weights 64 x 64
 * (two groups a slice) ran 512 x 16384 x 2048 in 0.512 / 0.501 ms against
 * 0.537 / 0.541 for 128 x 128 on an H200, where 4-bit weights ran both alike
 * (0.526 / 0.522 against 0.522 / 0.520; bench/results/h200-2026-11-29p, p3).
 * H100, a 512-token prefill's products, q8 / q4 ms
 * (`wgt bench --only qmatmul_q --precision medium`, WGT_QUANT_DP4A_TILE, one
 * group a slice; two: below):
 * 512 x 16384 x 2048: 128x128 0.548 / 0.590, 128x64 0.578 / 0.578, 64x64
 * 0.586 / 0.661; 512 x 3072 x 2048 (192 workgroups of 128 x 64): 0.169 /
 * 0.164 against 64x64's 0.138 / 0.157; 512 x 2048 x 8192: 64x64 0.323 /
 * 0.364, 128x64 0.357 / 0.399, 128x128 0.559 / 0.594. */
#define DP4A_LARGE_TILE_MIN_WORKGROUPS 384

/* Quantization groups (32 k each) a slice of quant_matmul_dp4a walks between
 * barriers: WGT_QUANT_DP4A_GPS=1|2|4, default DP4A_GROUPS_PER_SLICE. H100,
 * q8 / q4 ms at 1 / 2 / 4 (probes p9 of 2026-11-28c): 512 x 3072 x 2048
 * 0.138 / 0.114 / 0.127, 0.153 / 0.122 / 0.119; 512 x 2048 x 8192 0.322 /
 * 0.285 / 0.340, 0.376 / 0.285 / 0.299; 512 x 16384 x 2048 in 128 x 128
 * tiles at 2: 0.546, 0.526 (128 x 64 at 1: 0.553, 0.733). */
#define DP4A_GROUPS_PER_SLICE 2
static unsigned groups_per_slice(const webgpu_backend *wg)
{
    const unsigned g = wg->knobs.quant_dp4a_gps;
    return g == 1 || g == 2 || g == 4 ? g : DP4A_GROUPS_PER_SLICE;
}

/* Workgroup memory of a tile with gps groups a slice: two buffers of code rows
 * (2 gps + 1 vec4s each) and scales, x's and the weights' */
static uint64_t tile_shared(const dp4a_tile *t, unsigned gps)
{
    return 2ull * (uint64_t)(t->bm + t->bn) * (2 * gps + 1) * 16 + 2ull * (uint64_t)(t->bm + t->bn) * gps * 4;
}

/* The tile for an M x N output with bits-bit weights and *gps its groups a
 * slice: WGT_QUANT_DP4A_TILE (a table entry) when set, else for 4-bit weights
 * 128 x 128 from ~3 waves of workgroups, else 64 x 64; fewer groups a slice,
 * then the 64 x 64 tile, where the device's workgroup memory is short
 * (lavapipe: 32 KiB). NULL: the knob names no tile. */
static const dp4a_tile *choose_tile(const webgpu_backend *wg, int64_t M, int64_t N, int bits, unsigned *gps)
{
    const char *env = wg->knobs.quant_dp4a_tile;
    const dp4a_tile *t = NULL;
    for (int i = 0; *env && i < DP4A_N_TILES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%dx%d", dp4a_tiles[i].bm, dp4a_tiles[i].bn);
        if (strcmp(env, name) == 0) t = &dp4a_tiles[i];
    }
    if (*env && !t) return NULL;
    if (!t) {
        const dp4a_tile *large = &dp4a_tiles[0];
        int64_t tiles = ((M + large->bm - 1) / large->bm) * ((N + large->bn - 1) / large->bn);
        t = bits == 4 && tiles >= DP4A_LARGE_TILE_MIN_WORKGROUPS ? large : &dp4a_tiles[DP4A_N_TILES - 1];
    }
    const uint64_t limit = wg->limits.maxComputeWorkgroupStorageSize;
    *gps = groups_per_slice(wg);
    while (*gps > 1 && tile_shared(t, *gps) > limit) *gps /= 2;
    if (tile_shared(t, *gps) > limit) t = &dp4a_tiles[DP4A_N_TILES - 1]; /* 64 x 64, one group: 12.8 KiB */
    return t;
}

/* x's codes and scales (the temporaries codes [M K / 4] i32, scales [M K / 32] f32) */
static wgt_status quantize_rows(webgpu_backend *wg, const wgt_tensor_view *x, wgt_tensor_view *codes,
                                wgt_tensor_view *scales, const char *op)
{
    const int64_t M = x->shape[0], K = x->shape[1], groups = M * K / 32;
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, "quant_rows_int8");
    wgt_status s = WGT_OK;
    if (!pipe) {
        const char *files[2] = {"quant_q8_group", "quant_rows_int8"};
        s = webgpu_pipeline_assemble(wg, "quant_rows_int8", "", files, 2, 1, 2, false, op, &pipe);
        if (s != WGT_OK) return s;
    }
    int64_t code_shape[1] = {M * K / 4}, scale_shape[1] = {groups};
    s = webgpu_temp_alloc(wg, WGT_I32, 1, code_shape, codes);
    if (s == WGT_OK) s = webgpu_temp_alloc(wg, WGT_F32, 1, scale_shape, scales);
    if (s != WGT_OK) return s;
    rows_params p = {(uint32_t)groups, (uint32_t)(x->offset / 4), 0, 0};
    uint32_t gx, gy;
    s = webgpu_grid(wg, (uint64_t)(groups + 255) / 256, &gx, &gy, op);
    WGPUBuffer buffers[3] = {webgpu_view_buffer(x), webgpu_view_buffer(codes), webgpu_view_buffer(scales)};
    if (s == WGT_OK) s = webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
    return s;
}

wgt_status webgpu_quant_run_int8_x(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2], *out = &call->outputs[0];
    const int64_t M = x->shape[0], K = x->shape[1], N = q->shape[0];
    const int bits = call->quant.bits;
    unsigned gps = 1;
    const dp4a_tile *tile = choose_tile(wg, M, N, bits, &gps);
    if (!tile)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: [%lld, %lld] x [%lld, %lld]^T: "
                         "WGT_QUANT_DP4A_TILE=\"%s\" names no tile (128x128, 128x64, 64x128 or 64x64)", op,
                         (long long)M, (long long)K, (long long)N, (long long)K, wg->knobs.quant_dp4a_tile);
    char key[64];
    snprintf(key, sizeof(key), "quant_matmul_dp4a:%dx%d:%d:g%u", tile->bm, tile->bn, bits, gps);
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, key);
    wgt_status st = WGT_OK;
    if (!pipe) {
        char prelude[160];
        snprintf(prelude, sizeof(prelude), "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst TM: u32 = %du;\n"
                 "const TN: u32 = %du;\nconst BITS: u32 = %du;\nconst GPS: u32 = %uu;\n", tile->bm, tile->bn, tile->tm,
                 tile->tn, bits, gps);
        const char *files[1] = {"quant_matmul_dp4a"};
        /* xq, q, scales read-only; out; xs read-only: bindings 1..5 */
        static const bool read_only[5] = {true, true, true, false, true};
        const char *body = webgpu_kernel_source(files[0]);
        if (!body) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, files[0]);
        size_t n = strlen(prelude) + strlen(body) + 1;
        char *source = malloc(n);
        if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        snprintf(source, n, "%s%s", prelude, body);
        st = webgpu_pipeline_create_ex(wg, key, source, NULL, 5, read_only, true, false, false, op, &pipe);
        free(source);
        if (st != WGT_OK) return st;
    }
    wgt_tensor_view codes, xscales;
    memset(&codes, 0, sizeof(codes));
    memset(&xscales, 0, sizeof(xscales));
    st = quantize_rows(wg, x, &codes, &xscales, op);
    dp4a_params p;
    memset(&p, 0, sizeof(p));
    p.M = (uint32_t)M, p.N = (uint32_t)N, p.K = (uint32_t)K, p.bits = (uint32_t)bits;
    p.xq_offset = 0, p.q_offset = (uint32_t)(q->offset / 4);
    p.s_offset = (uint32_t)s->offset, p.out_offset = (uint32_t)out->offset;
    p.tiles_m = (uint32_t)((M + tile->bm - 1) / tile->bm);
    p.tiles_n = (uint32_t)((N + tile->bn - 1) / tile->bn);
    uint32_t gx, gy;
    if (st == WGT_OK) st = webgpu_grid(wg, (uint64_t)p.tiles_m * p.tiles_n, &gx, &gy, op);
    WGPUBuffer buffers[5] = {webgpu_view_buffer(&codes), webgpu_view_buffer(q), webgpu_view_buffer(s),
                             webgpu_view_buffer(out), webgpu_view_buffer(&xscales)};
    if (st == WGT_OK) st = webgpu_dispatch(wg, pipe, buffers, 5, &p, sizeof(p), gx, gy, 1, op);
    /* released right after recording: queue order keeps the blocks' reuse safe */
    webgpu_temp_release(wg, &codes);
    webgpu_temp_release(wg, &xscales);
    return st;
}
