/*
 * ATTENTION, ATTENTION_BACKWARD and ROPE on WebGPU.
 *
 *   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out [B, H, Tq, D], lse f32 [B, H, Tq]
 *   backward -> dq [B, H, Tq, D], dk, dv [B, Hkv, Tk, D] (f32)
 *   rope: x [B, H, T, D] -> out [B, H, T, D]
 *
 * Kernels (src/webgpu/kernels/, after philox.wgsl and attention_common.wgsl):
 *   attention_forward           flash attention, one query row per invocation,
 *                               K/V tiles in shared memory read as broadcasts
 *                               (the default on a GPU without subgroups or
 *                               with D > 64)
 *   attention_forward_flash     FlashAttention-2 order: 4 x 4 register blocks of
 *                               scores and outputs, online softmax in registers
 *                               (WGT_ATTENTION_FORWARD=flash; the default on a
 *                               software adapter, where it is the fast one)
 *   attention_forward_tiled     4 x 4 register blocks, softmax on one invocation
 *                               per row (WGT_ATTENTION_FORWARD=tiled)
 *   attention_forward_quad      each query row split over the 4 lanes of a
 *                               subgroup quad, 4 rows a quad: a word read from
 *                               shared memory feeds 4 FMAs instead of 1 (the
 *                               default on a GPU with subgroups, D <= 64;
 *                               WGT_ATTENTION_FORWARD=quad)
 *   attention_backward_prepare  delta = rowsum(dout * out)
 *   attention_backward_dkdv     dk and dv in one pass per block of 64 keys,
 *                               4 invocations per key: scores and dp from
 *                               registers + broadcasts, then dk, dv as a small
 *                               GEMM over shared p, ds tiles; with dropout it
 *                               stores the mask as bits for the dq kernel
 *                               (the default on a GPU for D <= 64;
 *                               WGT_ATTENTION_BACKWARD=dkdv elsewhere)
 *   attention_backward_kv, _q   dk, dv with one key per invocation (query tiles
 *                               in shared memory, no atomics; two passes at
 *                               D = 64, WGT_ATTENTION_BACKWARD=rows, the GPU
 *                               default before _dkdv and still for D > 64);
 *                               dq with one row per invocation (the default
 *                               on a GPU)
 *   attention_backward_fused    dk, dv and dq in one pass per block of 32 keys
 *                               (WGT_ATTENTION_BACKWARD=fused, D <= 64): 4 x 4
 *                               register tiles for s, dp, dk, dv and dq, dq as
 *                               partial sums per key block that
 *   attention_backward_dq_reduce  adds in a fixed order (no atomics). On an
 *                               H100, fwd+bwd 64x6x256x64 causal dropout 0.2:
 *                               1.34 ms against 1.73 with dkdv + q (backward
 *                               0.93 ms against 1.31); 8x12x1024x64 causal:
 *                               3.53 against 3.95 (alternated runs of one
 *                               call); 1.14 ms since its workgroups have 8
 *                               invocations a key (two warps an SMSP, not
 *                               one: see the kernel). The GPU default where
 *                               its partials (~T / 64 times dq's memory) stay
 *                               within 8x dq and 512 MiB (run_backward)
 *   attention_backward_kv_tiled dk, dv: 4 keys x 4 rows register blocks per
 *                               invocation; _q_tiled: dq, 4 rows x 4 keys
 *                               (WGT_ATTENTION_BACKWARD=tiled, =kv_tiled, =q_tiled;
 *                               the defaults on a software adapter)
 *   rope                        one pair per invocation
 * Measured on an H100 (B 8, H 12, T 1024, D 64, causal, f32, forward +
 * backward, `wgt bench --only attn_fb`): one-per-invocation kernels with tiles
 * 128,16,128,16 4.23 ms (forward 0.87, prepare 0.06, dk 1.22, dv 0.85, dq
 * 1.18); with the former tiles 64,32,64,32 5.37 ms; the register-blocked
 * kernels 10.3-10.4 ms (their dk/dv and dq take 4.5 ms each).
 * Specialized per head dim by a prelude of constants (D4 vec4s per row, tile
 * sizes that fit the device's workgroup memory). The kernels compute in f32 on
 * f32 data of any strides; the forward reads f16 q, k, v in place
 * (WGT_ATTENTION_F16_COPIES=1: through f32 copies, as the backward and rope
 * take f16 tensors).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "webgpu/webgpu_internal.h"

#define ROPE_MAX_PAIRS 128   /* inv_freq table in the parameters: D <= 256 */
/* Head dims the kernels take: rows live in registers (D4 vec4 each) */
#define ATTENTION_MAX_D 256
/* Rows per workgroup of attention_backward_prepare (16 lanes per row) */
#define PREPARE_ROWS 16

/* Mirrors struct Params of attention_common.wgsl. */
typedef struct attention_params {
    uint32_t B, H, Hkv, group;
    uint32_t Tq, Tk, D, causal;
    uint32_t q_st[4], k_st[4], v_st[4], o_st[4], do_st[4];
    uint32_t offsets[12];       /* q, k, v, out | dout, outputs 0..2 | lse, delta, mask, mask words per row */
    float scale_log2, keep_scale;
    uint32_t threshold, dropout;
    uint32_t seed[2], blocks, order; /* order: attention_common.wgsl's block_order (forward quad, fused backward) */
    uint32_t dq_st[4], dk_st[4], dv_st[4]; /* backward: the gradients' strides (the fused path) */
} attention_params;

/* Mirrors struct Params of rope.wgsl. */
typedef struct rope_params {
    uint32_t B, H, T, D;
    uint32_t x_st[4];
    uint32_t x_offset, position_offset, interleaved, inverse;
    uint32_t pairs, out_offset, zero, pad; /* zero: rope.wgsl's ew_opaque */
    float inv_freq[ROPE_MAX_PAIRS];
} rope_params;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* block_order's group size for a grid of `pairs` (b, head) pairs: the knob's,
 * at most the pairs (one group), so that group size x blocks stays within
 * the grid's workgroup count (u32 in the kernel) */
static uint32_t order_groups(unsigned knob, uint64_t pairs) { return (uint32_t)(knob < pairs ? knob : pairs); }

bool webgpu_attention_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0];
    if (x->ndim != 4 || (x->dtype != WGT_F32 && x->dtype != WGT_F16)) return false;
    for (int i = 0; i < call->n_inputs; i++)
        if (!webgpu_view_fits_u32(&call->inputs[i])) return false;
    switch (call->kind) {
    case WGT_KERNEL_ROPE: return x->shape[3] / 2 <= ROPE_MAX_PAIRS && call->n_inputs == 1;
    case WGT_KERNEL_ATTENTION:
        if (call->n_inputs == 5) return webgpu_attention_decode_wanted(wg, call); /* 8-bit k, v */
        return call->n_inputs == 3 && call->n_outputs == 2 && x->shape[3] <= ATTENTION_MAX_D;
    case WGT_KERNEL_ATTENTION_BACKWARD:
        return call->n_inputs == 6 && call->n_outputs == 3 && x->shape[3] <= ATTENTION_MAX_D &&
               wg->limits.maxStorageBuffersPerShaderStage >= 8;
    default: return false;
    }
}

/* ------------------------------------------------------------ pipelines */

/* The pipeline of kernel file (after attention_common) with constants D4, BQ,
 * BK and (attention_backward_kv) which gradients it computes (want: bit 0 dk,
 * bit 1 dv; bit 2: MASK_BITS, the dropout mask passed from dk/dv to dq as
 * bits; bit 3: VEC_IN, attention_backward_fused reads its inputs as vec4s,
 * IN_T; bit 4: the kernel uses subgroup built-ins; bit 5: it stages K and V
 * with kv_quads(), attention_kv_quads.wgsl, and reads q, k, v through ld_q,
 * ld_k, ld_v; bit 6: two rows a quad; bit 7, F16_IN: those read f16 in place,
 * attention_load_f16.wgsl, else f32, attention_load_f32.wgsl), cached under
 * a key naming them. */
#define F16_IN 128u

static wgt_status get_pipeline(webgpu_backend *wg, const char *file, uint32_t d4, uint32_t bq, uint32_t bk,
                               unsigned want, int n_read_only, int n_read_write, const char *op, webgpu_pipeline **out)
{
    char key[128];
    snprintf(key, sizeof(key), "%s:d%u:q%u:k%u:w%u", file, d4, bq, bk, want);
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    char consts[440];
    snprintf(consts, sizeof(consts),
             "%sconst D4: u32 = %uu;\nconst BQ: u32 = %uu;\nconst BK: u32 = %uu;\nconst WANT_DK: bool = %s;\n"
             "const WANT_DV: bool = %s;\nconst MASK_BITS: bool = %s;\nconst VEC_IN: bool = %s;\nalias IN_T = %s;\n"
             "const QR: u32 = %uu;\nalias QKV_WORD = %s;\n",
             want & 16 ? webgpu_native_subgroups_directive() : "", d4, bq, bk, want & 1 ? "true" : "false",
             want & 2 ? "true" : "false", want & 4 ? "true" : "false", want & 8 ? "true" : "false",
             want & 8 ? "vec4<f32>" : "f32", want & 64 ? 2u : 4u, want & F16_IN ? "u32" : "f32");
    /* unchecked: every kernel bounds its reads (row_ok, j < Tk, d < D) */
    const char *files[6] = {"philox", webgpu_philox_mul_file(wg), "attention_common", file, "attention_kv_quads",
                            want & F16_IN ? "attention_load_f16" : "attention_load_f32"};
    return webgpu_pipeline_assemble(wg, key, consts, files, want & 32 ? 6 : 4, n_read_only, n_read_write, false, op,
                                    out);
}

/* Tile sizes. WGT_ATTENTION_TILES="rows,keys,kv_keys,kv_rows,joint_d4" replaces
 * the defaults (read when the context is created, for experiments on a GPU; values that are
 * not powers of two in [4, 1024] keep the defaults); the device's limits then
 * shrink them where needed. */
typedef struct attention_tiles {
    uint32_t rows;     /* forward, dq: query rows per workgroup (the tiled kernels
                          take at most this many, dq at most 32, to fit memory) */
    uint32_t keys;     /* forward, dq: keys per shared K/V tile (tiled forward: 32 or 64) */
    uint32_t kv_keys;  /* one-key-per-invocation dk/dv: keys per workgroup (tiled: 32) */
    uint32_t kv_rows;  /* dk/dv: query rows per shared tile */
    uint32_t joint_d4; /* dk and dv in one pass up to this many vec4 per row (k, v,
                          dk, dv rows in registers together); beyond, one pass each */
} attention_tiles;

/* A software adapter (lavapipe): there the register-blocked kernels are the
 * fast ones (test_attention: 4 s of CPU against 61 s with the GPU defaults). */
static bool software(const webgpu_backend *wg) { return wg->info.type == WGT_ADAPTER_CPU; }

static bool tile_ok(unsigned v) { return v >= 4 && v <= 1024 && (v & (v - 1)) == 0; }

static attention_tiles choose_tiles(const webgpu_backend *wg, uint32_t d4)
{
    /* GPUs: the fastest tiles of the one-per-invocation kernels on an H100
     * (B 8, H 12, T 1024, D 64 causal): 128 rows, 16 keys, 128 kv keys, 16 kv
     * rows. Software adapters: those of the register-blocked kernels. */
    attention_tiles t = software(wg) ? (attention_tiles){64, 32, 64, 32, 8} : (attention_tiles){128, 16, 128, 16, 8};
    const unsigned *v = wg->knobs.attention_tiles; /* WGT_ATTENTION_TILES */
    if (wg->knobs.attention_tiles_set && tile_ok(v[0]) && tile_ok(v[1]) && tile_ok(v[2]) && tile_ok(v[3]))
        t = (attention_tiles){v[0], v[1], v[2], v[3], v[4]};
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup, shared = wg->limits.maxComputeWorkgroupStorageSize;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    while (t.rows > 4 && t.rows > threads) t.rows /= 2;
    while (t.kv_keys > 4 && t.kv_keys > threads) t.kv_keys /= 2;
    while (t.keys > 4 && 2ull * t.keys * d4 * 16 > shared) t.keys /= 2;
    while (t.kv_rows > 4 && 2ull * t.kv_rows * d4 * 16 + 8ull * t.kv_rows > shared) t.kv_rows /= 2;
    return t;
}

static void copy_strides(uint32_t *dst, const wgt_tensor_view *v)
{
    for (int d = 0; d < 4; d++) dst[d] = (uint32_t)v->strides[d];
}

static void fill_params(const wgt_kernel_call *call, const wgt_tensor_view *in, int n_in, attention_params *p)
{
    memset(p, 0, sizeof(*p));
    const wgt_tensor_view *q = &in[0], *k = &in[1];
    p->B = (uint32_t)q->shape[0];
    p->H = (uint32_t)q->shape[1];
    p->Tq = (uint32_t)q->shape[2];
    p->D = (uint32_t)q->shape[3];
    p->Hkv = (uint32_t)k->shape[1];
    p->Tk = (uint32_t)k->shape[2];
    p->group = p->H / p->Hkv;
    p->causal = call->attention.causal;
    copy_strides(p->q_st, &in[0]);
    copy_strides(p->k_st, &in[1]);
    copy_strides(p->v_st, &in[2]);
    for (int i = 0; i < 3; i++) p->offsets[i] = (uint32_t)in[i].offset;
    if (n_in > 4) {
        copy_strides(p->o_st, &in[3]);
        copy_strides(p->do_st, &in[4]);
        p->offsets[3] = (uint32_t)in[3].offset;
        p->offsets[4] = (uint32_t)in[4].offset;
    }
    p->scale_log2 = (float)(call->attention.scale * 1.4426950408889634);
    p->threshold = wgt_attention_dropout_threshold(call->attention.dropout_p);
    p->dropout = p->threshold > 0;
    p->keep_scale = p->dropout ? (float)(1.0 / (1.0 - call->attention.dropout_p)) : 1.0f;
    p->seed[0] = (uint32_t)call->attention.seed;
    p->seed[1] = (uint32_t)(call->attention.seed >> 32);
}

static wgt_status dispatch_blocks(webgpu_backend *wg, webgpu_pipeline *pipe, const WGPUBuffer *buffers, int n,
                                  const attention_params *p, uint64_t workgroups, const char *op)
{
    uint32_t x, y;
    wgt_status s = webgpu_grid(wg, workgroups, &x, &y, op);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, pipe, buffers, n, p, sizeof(*p), x, y, 1, op);
}

/* f32 views of the inputs: the view itself, or an f32 temporary (temp[i] set). */
static wgt_status inputs_as_f32(webgpu_backend *wg, const wgt_kernel_call *call, wgt_tensor_view *in, bool *temp)
{
    for (int i = 0; i < call->n_inputs; i++) {
        temp[i] = call->inputs[i].dtype != WGT_F32;
        if (!temp[i]) {
            in[i] = call->inputs[i];
            continue;
        }
        wgt_status s = webgpu_temp_convert(wg, &call->inputs[i], WGT_F32, &in[i], call->op_name);
        if (s != WGT_OK) {
            temp[i] = false;
            return s;
        }
    }
    return WGT_OK;
}

static void release_temps(webgpu_backend *wg, wgt_tensor_view *in, const bool *temp, int n)
{
    for (int i = 0; i < n; i++)
        if (temp[i]) webgpu_temp_release(wg, &in[i]);
}

/* ------------------------------------------------------------ forward */

/* Bytes of workgroup memory attention_forward_tiled needs (see its tiles). */
static uint64_t tiled_forward_shared(uint32_t bq, uint32_t bk, uint32_t d4)
{
    return 16ull * ((uint64_t)bq * (d4 + 1) + 2ull * bk * (d4 + 1) + (uint64_t)bk * (bq / 4 + 1)) + 12ull * bq;
}

/* Bytes of workgroup memory attention_forward_flash needs (see its tiles). */
static uint64_t flash_forward_shared(uint32_t bq, uint32_t bk, uint32_t d4)
{
    return 16ull * ((uint64_t)bq * (d4 + 1) + 2ull * bk * (d4 + 1) + (uint64_t)bk * (bq / 4 + 1) + 2ull * bq);
}

/* Which forward kernel runs: WGT_ATTENTION_FORWARD=rows, =flash or =tiled; by
 * default attention_forward_flash on a software adapter, else
 * attention_forward (one row per invocation:
 * on an H100 at B 8, H 12, T 1024, D 64 causal it took 0.87 ms with 128-row
 * blocks and 16-key tiles, flash 1.23-1.34 ms, tiled 1.18 ms; see
 * docs/performance.md). */
typedef enum { FORWARD_FLASH, FORWARD_TILED, FORWARD_ROWS, FORWARD_QUAD } forward_kernel;

static forward_kernel forward_choice(const webgpu_backend *wg)
{
    switch (wg->knobs.attention_forward) {
    case WEBGPU_ATTN_FORWARD_ROWS: return FORWARD_ROWS;
    case WEBGPU_ATTN_FORWARD_FLASH: return FORWARD_FLASH;
    case WEBGPU_ATTN_FORWARD_TILED: return FORWARD_TILED;
    case WEBGPU_ATTN_FORWARD_QUAD: return FORWARD_QUAD;
    default: return software(wg) ? FORWARD_FLASH : wg->has_subgroups ? FORWARD_QUAD : FORWARD_ROWS;
    }
}

/* Rows per workgroup of attention_forward_quad (0: it does not apply: no
 * subgroups, subgroups narrower than a quad, D > 64 or tiles that do not
 * fit), keys per tile in *bk. Tiles: 64 rows (64 invocations) and 16 keys, or
 * WGT_ATTENTION_TILES' rows and keys; its K and V tiles take 2 * bk * DS * 16
 * bytes (DS = D4 rounded up to a multiple of 4).
 * On an H100 (64x6x256x64 causal, no dropout; `wgt bench --only attn_f_gpt`):
 * 64 rows and 16 keys 0.300 ms against 0.340-0.341 for attention_forward (32
 * keys 0.43, 64 keys 0.77, 32 rows 0.90: NVIDIA's Vulkan driver left the
 * workgroups of an SM about 64 KiB of shared memory in all, so the larger
 * tiles ran fewer warps); in the training step -0.25 ms. With 2 rows a quad
 * (128 invocations for 64 rows; WGT_ATTENTION_QUAD_ROWS=4 restores 4): 0.250-
 * 0.258 ms against 0.307-0.347, 0.285-0.289 against 0.354-0.368 with dropout
 * 0.2; 1 row a quad 0.378 (bench/results/h100-2026-11-28d, p5 and p6). */
static uint32_t quad_forward_rows(const webgpu_backend *wg, uint32_t d4, uint32_t *bk)
{
    uint32_t min_lanes = wg->info.limits.subgroup_min_size; /* 0: not reported */
    if (!wg->has_subgroups || d4 > 16 || (min_lanes != 0 && min_lanes < 4)) return 0;
    uint32_t bq = 64;
    *bk = 16;
    const unsigned *v = wg->knobs.attention_tiles; /* WGT_ATTENTION_TILES: rows, keys */
    if (wg->knobs.attention_tiles_set && tile_ok(v[0]) && tile_ok(v[1]) && v[0] >= 16) bq = v[0], *bk = v[1];
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    uint64_t ds = (d4 + 3) / 4 * 4;
    while (*bk > 4 && 32ull * *bk * ds > wg->limits.maxComputeWorkgroupStorageSize) *bk /= 2;
    while (bq > 16 && bq > threads) bq /= 2;
    return bq <= threads && 32ull * *bk * ds <= wg->limits.maxComputeWorkgroupStorageSize ? bq : 0;
}

/* Rows per workgroup of attention_forward_flash (0: does not fit), keys per
 * tile in *bk (t->keys, a multiple of 8). */
static uint32_t flash_forward_rows(const webgpu_backend *wg, const attention_tiles *t, uint32_t d4, uint32_t *bk)
{
    *bk = t->keys >= 8 ? t->keys : 8;
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    for (; *bk >= 8; *bk /= 2)
        for (uint32_t bq = t->rows; bq >= 16; bq /= 2)
            if (2 * bq <= threads && flash_forward_shared(bq, *bk, d4) <= wg->limits.maxComputeWorkgroupStorageSize)
                return bq;
    return 0;
}

/* Rows per workgroup of the tiled forward (0: use attention_forward). Its key
 * tile is 32 or 64 (4 keys of each 8-key stripe per invocation). */
static uint32_t tiled_forward_rows(const webgpu_backend *wg, const attention_tiles *t, uint32_t d4, uint32_t *bk)
{
    *bk = t->keys >= 64 ? 64 : 32;
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    for (uint32_t bq = t->rows; bq >= 16; bq /= 2)
        if (2 * bq <= threads && tiled_forward_shared(bq, *bk, d4) <= wg->limits.maxComputeWorkgroupStorageSize)
            return bq;
    return 0;
}

/* in: q, k, v as f32, or (f16_in) all three f16, read in place */
static wgt_status run_forward(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *in, bool f16_in)
{
    const char *op = call->op_name;
    const wgt_tensor_view *out = &call->outputs[0], *lse = &call->outputs[1];
    attention_params p;
    fill_params(call, in, 3, &p);
    uint32_t d4 = (p.D + 3) / 4;
    attention_tiles t = choose_tiles(wg, d4);
    forward_kernel kernel = forward_choice(wg);
    uint32_t bk = 32, bq = 0;
    if (kernel == FORWARD_QUAD && !(bq = quad_forward_rows(wg, d4, &bk))) kernel = FORWARD_ROWS;
    if (kernel == FORWARD_FLASH && !(bq = flash_forward_rows(wg, &t, d4, &bk))) kernel = FORWARD_TILED;
    if (kernel == FORWARD_TILED && !(bq = tiled_forward_rows(wg, &t, d4, &bk))) kernel = FORWARD_ROWS;
    uint32_t rows = kernel == FORWARD_ROWS ? t.rows : bq;
    webgpu_pipeline *pipe;
    static const char *const files[] = {[FORWARD_FLASH] = "attention_forward_flash",
                                        [FORWARD_TILED] = "attention_forward_tiled",
                                        [FORWARD_ROWS] = "attention_forward", [FORWARD_QUAD] = "attention_forward_quad"};
    /* attention_forward_quad's rows a quad (QR 2: want bit 6; 4 else): a step takes 16 / QR keys of a tile */
    bool two_rows = kernel == FORWARD_QUAD && wg->knobs.attention_quad_rows == 2 && bk >= 8;
    unsigned quad = kernel != FORWARD_QUAD ? 0 : two_rows ? 16 | 64 : 16;
    wgt_status s = get_pipeline(wg, files[kernel], d4, rows, kernel == FORWARD_ROWS ? t.keys : bk,
                                32 | quad | (f16_in ? F16_IN : 0), 3, 2, op, &pipe);
    if (s != WGT_OK) return s;
    wgt_tensor_view target = *out;
    bool temp = out->dtype != WGT_F32;
    if (temp && (s = webgpu_temp_alloc(wg, WGT_F32, 4, out->shape, &target)) != WGT_OK) return s;
    p.blocks = (uint32_t)ceil_div(p.Tq, rows);
    /* causal: the last query blocks (most keys) first, all pairs in one group:
     * 0.250 against 0.284 ms for the GPT's forward on an H200 (h200-2026-11-28g p3) */
    p.order = kernel == FORWARD_QUAD && p.causal ? order_groups(wg->knobs.attention_order[0], (uint64_t)p.B * p.H) : 0;
    WGPUBuffer buffers[5] = {webgpu_view_buffer(&in[0]), webgpu_view_buffer(&in[1]), webgpu_view_buffer(&in[2]),
                             webgpu_view_buffer(&target), webgpu_view_buffer(lse)};
    copy_strides(p.o_st, &target); /* the kernels write out through its strides */
    p.offsets[5] = (uint32_t)target.offset;
    p.offsets[6] = (uint32_t)lse->offset;
    if (!webgpu_view_fits_u32(&target) || !webgpu_view_fits_u32(lse))
        s = wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: outputs past 2^32 elements", op);
    if (s == WGT_OK) s = dispatch_blocks(wg, pipe, buffers, 5, &p, (uint64_t)p.blocks * p.B * p.H, op);
    if (s == WGT_OK && temp) s = webgpu_convert(wg, &target, out, op);
    if (temp) webgpu_temp_release(wg, &target);
    return s;
}

/* ------------------------------------------------------------ backward */

/* Workgroup memory of the tiled backward kernels (see their tiles). */
static uint64_t tiled_kv_shared(uint32_t bk, uint32_t bq, uint32_t d4)
{
    return 16ull * (2ull * bk * (d4 + 1) + 2ull * bq * (d4 + 1) + 2ull * bq * (bk / 4 + 1)) + 8ull * bq;
}
static uint64_t tiled_q_shared(uint32_t bq, uint32_t bk, uint32_t d4)
{
    return 16ull * (2ull * bq * (d4 + 1) + 2ull * bk * (d4 + 1) + (uint64_t)bk * (bq / 4 + 1)) + 8ull * bq;
}

/* Tiles of the register-blocked backward: kv: 32 keys per workgroup, *kv_rows
 * query rows per tile; q: *q_rows rows per workgroup, t->keys keys per tile.
 * false: they do not fit, use the one-per-invocation kernels. */
static bool tiled_backward(const webgpu_backend *wg, const attention_tiles *t, uint32_t d4, uint32_t *kv_rows,
                           uint32_t *q_rows)
{
    uint64_t shared = wg->limits.maxComputeWorkgroupStorageSize;
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    if (t->keys < 8 || threads < 64) return false;
    *kv_rows = t->kv_rows;
    while (*kv_rows > 8 && tiled_kv_shared(32, *kv_rows, d4) > shared) *kv_rows /= 2;
    *q_rows = t->rows < 32 ? t->rows : 32;
    while (*q_rows > 8 && (tiled_q_shared(*q_rows, t->keys, d4) > shared || 2 * *q_rows > threads)) *q_rows /= 2;
    return *kv_rows >= 8 && tiled_kv_shared(32, *kv_rows, d4) <= shared && *q_rows >= 8 &&
           tiled_q_shared(*q_rows, t->keys, d4) <= shared;
}

/* Workgroup memory of attention_backward_dkdv: q, dout tiles [bq][d4] and
 * p, ds tiles [bq][bk] (see there). */
static uint64_t dkdv_shared(uint32_t bk, uint32_t bq, uint32_t d4)
{
    return 16ull * 2 * bq * d4 + 4ull * 2 * bq * bk;
}

/* Tiles of attention_backward_dkdv: *bk keys per workgroup (4 *bk invocations),
 * *bq query rows per tile; false when it does not apply (k and v rows in
 * registers: D <= 64) or does not fit. Defaults 64 keys (256 invocations, the
 * portable maximum), 32 rows where 32 KiB of workgroup memory are allowed
 * (fewer barriers per row), else 16 (16 KiB at D = 64).
 * WGT_ATTENTION_DKDV_TILES="bk,bq" replaces them (powers of two, for
 * experiments on a GPU); the limits then shrink them. */
static bool dkdv_tiles(const webgpu_backend *wg, uint32_t d4, uint32_t *bk, uint32_t *bq)
{
    if (d4 > 16) return false;
    uint64_t shared = wg->limits.maxComputeWorkgroupStorageSize;
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    *bk = 64;
    *bq = 32;
    const unsigned *v = wg->knobs.attention_dkdv_tiles; /* WGT_ATTENTION_DKDV_TILES */
    if (wg->knobs.attention_dkdv_tiles_set && tile_ok(v[0]) && tile_ok(v[1]) && v[0] >= 8)
        *bk = v[0], *bq = v[1];
    while (*bk > 8 && 4 * *bk > threads) *bk /= 2;
    while (*bq > 4 && dkdv_shared(*bk, *bq, d4) > shared) *bq /= 2;
    return 4 * *bk <= threads && dkdv_shared(*bk, *bq, d4) <= shared;
}

/* Workgroup memory of attention_backward_fused: k, v, q, dout tiles [bk][d4 + 1]
 * vec4, p, ds tiles [bk][bk / 4 + 1] vec4, lse and delta [bk] (see there). */
static uint64_t fused_shared(uint32_t bk, uint32_t d4)
{
    return 16ull * (4ull * bk * (d4 + 1) + 2ull * bk * (bk / 4 + 1)) + 8ull * bk;
}

/* Rows of dq partials per head that attention_backward_fused stores: per key
 * block of bk, the rows from its first query tile to Tq (all of them when not
 * causal). Mirrors first_row() there. */
static uint64_t fused_part_rows(const attention_params *p, uint32_t bk)
{
    uint64_t rows = 0;
    for (uint32_t j0 = 0; j0 < p->Tk; j0 += bk) {
        int64_t first = p->causal ? (int64_t)j0 - ((int64_t)p->Tk - (int64_t)p->Tq) : 0;
        first = first < 0 ? 0 : first / bk * bk;
        rows += p->Tq - (uint64_t)first;
    }
    return rows;
}

/* Whether attention_backward_fused applies: D <= 64 (column quads on 16
 * invocations), its tiles fit the workgroup memory (*bk keys = rows per
 * block: WGT_ATTENTION_FUSED_TILE, 32 by default, 16 where 32 does not fit),
 * and the work buffer (delta, then the dq partials from a multiple of 4 in
 * rows of 4 d4 floats, stored and summed as vec4s: *work_n floats) fits a
 * binding with u32 indices. */
static bool fused_fits(const webgpu_backend *wg, const attention_params *p, uint32_t d4, uint32_t *bk,
                       uint64_t *work_n)
{
    uint32_t threads = wg->limits.maxComputeInvocationsPerWorkgroup;
    if (wg->limits.maxComputeWorkgroupSizeX < threads) threads = wg->limits.maxComputeWorkgroupSizeX;
    if (d4 > 16) return false;
    *bk = wg->knobs.attention_fused_tile;
    uint32_t shared = wg->limits.maxComputeWorkgroupStorageSize;
    while (*bk > 16 && (fused_shared(*bk, d4) > shared || 8 * *bk > threads)) *bk /= 2;
    if (fused_shared(*bk, d4) > shared || 8 * *bk > threads) return false;
    uint64_t rows = (uint64_t)p->B * p->H * p->Tq;
    *work_n = rows + 4 + (uint64_t)p->B * p->H * fused_part_rows(p, *bk) * 4 * d4;
    return *work_n + 4096 < UINT32_MAX && rows * p->D < UINT32_MAX &&
           *work_n * 4 <= wg->limits.maxStorageBufferBindingSize && *work_n * 4 <= wg->limits.maxBufferSize;
}

/* WGT_ATTENTION_BACKWARD=fused: delta (attention_backward_prepare), then dk,
 * dv and the dq partials in one pass (attention_backward_fused), then dq as
 * their sum (attention_backward_dq_reduce). p has the outputs' offsets. */
static wgt_status run_backward_fused(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *in,
                                     attention_params *p, uint32_t d4, uint32_t bk, uint64_t work_n)
{
    const char *op = call->op_name;
    webgpu_pipeline *prepare, *fused, *reduce;
    wgt_status s = get_pipeline(wg, "attention_backward_prepare", d4, PREPARE_ROWS, bk, 0, 2, 1, op, &prepare);
    /* vec4 loads when every quad of q, k, v and dout is 16 aligned bytes */
    bool vec_in = p->D % 4 == 0;
    for (int i = 0; i < 5; i++)
        if (i != 3)
            vec_in = vec_in && in[i].strides[3] == 1 && in[i].offset % 4 == 0 && in[i].strides[0] % 4 == 0 &&
                     in[i].strides[1] % 4 == 0 && in[i].strides[2] % 4 == 0;
    if (s == WGT_OK) s = get_pipeline(wg, "attention_backward_fused", d4, bk, bk, vec_in ? 8 : 0, 5, 3, op, &fused);
    if (s == WGT_OK) s = get_pipeline(wg, "attention_backward_dq_reduce", d4, bk, bk, 0, 1, 1, op, &reduce);
    if (s != WGT_OK) return s;
    if (!wgt_view_is_contiguous(&in[5])) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: lse must be contiguous", op);
    wgt_tensor_view work;
    int64_t n = (int64_t)work_n;
    s = webgpu_temp_alloc(wg, WGT_F32, 1, &n, &work);
    if (s != WGT_OK) return s;
    uint64_t rows = (uint64_t)p->B * p->H * p->Tq;
    if ((uint64_t)work.offset + work_n >= UINT32_MAX)
        s = wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: work buffer past 2^32 elements", op);
    p->offsets[8] = (uint32_t)in[5].offset;
    p->offsets[9] = (uint32_t)work.offset;
    p->offsets[10] = (uint32_t)((work.offset + rows + 3) / 4 * 4);
    p->offsets[11] = (uint32_t)fused_part_rows(p, bk);
    WGPUBuffer w = webgpu_view_buffer(&work);
    if (s == WGT_OK) {
        WGPUBuffer b[3] = {webgpu_view_buffer(&in[3]), webgpu_view_buffer(&in[4]), w};
        s = dispatch_blocks(wg, prepare, b, 3, p, ceil_div((int64_t)rows, PREPARE_ROWS), op);
    }
    if (s == WGT_OK) {
        p->blocks = (uint32_t)ceil_div(p->Tk, bk);
        /* causal: key block 0 (most query tiles) first, groups of 64 (b, kv head)
         * pairs that share their q and dout reads in L2: the GPT's backward ~0.70
         * against ~0.72 ms (64 pairs) and ~0.75 (all in one group) on an H200 */
        p->order = p->causal ? order_groups(wg->knobs.attention_order[1], (uint64_t)p->B * p->Hkv) : 0;
        WGPUBuffer b[8] = {webgpu_view_buffer(&in[0]), webgpu_view_buffer(&in[1]), webgpu_view_buffer(&in[2]),
                           webgpu_view_buffer(&in[4]), webgpu_view_buffer(&in[5]), w,
                           webgpu_view_buffer(&call->outputs[1]), webgpu_view_buffer(&call->outputs[2])};
        s = dispatch_blocks(wg, fused, b, 8, p, (uint64_t)p->blocks * p->B * p->Hkv, op);
    }
    if (s == WGT_OK) {
        WGPUBuffer b[2] = {w, webgpu_view_buffer(&call->outputs[0])};
        s = dispatch_blocks(wg, reduce, b, 2, p, ceil_div((int64_t)(rows * d4), 256), op);
    }
    webgpu_temp_release(wg, &work);
    return s;
}

static wgt_status run_backward_kernels(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *in,
                                       bool contiguous, bool *needs_contiguous);

/* The gradients may be any f32 views (the autograd engine hands windows of one
 * [B, T, 3C] gradient, webgpu_attention_run): attention_backward_fused and its
 * dq reduction write through their strides, the other kernels into contiguous
 * temporaries copied over afterwards. */
static wgt_status run_backward(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *in)
{
    bool contiguous = true;
    for (int i = 0; i < 3; i++) {
        if (call->outputs[i].dtype != WGT_F32 || call->outputs[i].ndim != 4 || !webgpu_view_fits_u32(&call->outputs[i]))
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: gradient %d must be a 4-D f32 view", call->op_name,
                             i);
        contiguous = contiguous && wgt_view_is_contiguous(&call->outputs[i]);
    }
    bool needs_contiguous = false;
    wgt_status s = run_backward_kernels(wg, call, in, contiguous, &needs_contiguous);
    if (!needs_contiguous) return s;
    /* strided gradients on the kernels that write them contiguous */
    wgt_kernel_call copy = *call;
    memset(copy.outputs, 0, 3 * sizeof(copy.outputs[0]));
    s = WGT_OK;
    for (int i = 0; i < 3 && s == WGT_OK; i++)
        s = webgpu_temp_alloc(wg, WGT_F32, 4, call->outputs[i].shape, &copy.outputs[i]);
    if (s == WGT_OK) s = run_backward_kernels(wg, &copy, in, true, &needs_contiguous);
    for (int i = 0; i < 3 && s == WGT_OK; i++) s = webgpu_convert(wg, &copy.outputs[i], &call->outputs[i], call->op_name);
    for (int i = 0; i < 3; i++) webgpu_temp_release(wg, &copy.outputs[i]);
    return s;
}

/* contiguous: every gradient is; else only the fused path runs, and where it
 * does not apply *needs_contiguous is set and nothing runs (run_backward
 * copies). */
static wgt_status run_backward_kernels(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *in,
                                       bool contiguous, bool *needs_contiguous)
{
    const char *op = call->op_name;
    attention_params p;
    fill_params(call, in, 6, &p);
    for (int i = 0; i < 3; i++) p.offsets[5 + i] = (uint32_t)call->outputs[i].offset;
    copy_strides(p.dq_st, &call->outputs[0]);
    copy_strides(p.dk_st, &call->outputs[1]);
    copy_strides(p.dv_st, &call->outputs[2]);
    uint32_t d4 = (p.D + 3) / 4;
    webgpu_attn_backward env = wg->knobs.attention_backward;
    uint32_t fused_bk = 0;
    uint64_t work_n = 0;
    if (env == WEBGPU_ATTN_BACKWARD_FUSED) {
        if (fused_fits(wg, &p, d4, &fused_bk, &work_n))
            return run_backward_fused(wg, call, in, &p, d4, fused_bk, work_n);
        env = WEBGPU_ATTN_BACKWARD_DEFAULT; /* D > 64 or too large: the default kernels */
    } else if (env == WEBGPU_ATTN_BACKWARD_DEFAULT && !software(wg) &&
               fused_fits(wg, &p, d4, &fused_bk, &work_n)) {
        /* The GPU default where its dq partials (about T / 64 times dq's
         * size) stay within 8x dq and 512 MiB: on an H100 at the GPT's shape
         * (64 x 6 x 256 x 64, dropout) fwd + bwd 1.34 ms against 1.73 with
         * dkdv (alternated runs of one call), peak training memory the same.
         * Longer sequences take dkdv (T = 1024's partials are 16x dq). */
        const uint64_t dq_bytes = (uint64_t)p.B * p.H * p.Tq * p.D * 4, work_bytes = work_n * 4;
        if (work_bytes <= 8 * dq_bytes && work_bytes <= ((uint64_t)512 << 20))
            return run_backward_fused(wg, call, in, &p, d4, fused_bk, work_n);
    }
    if (!contiguous) {
        *needs_contiguous = true; /* run_backward copies */
        return WGT_OK;
    }
    attention_tiles t = choose_tiles(wg, d4);
    uint32_t kv_rows = 0, q_rows = 0;
    bool tiled = tiled_backward(wg, &t, d4, &kv_rows, &q_rows);
    /* By default on a GPU dk and dv in one pass (attention_backward_dkdv) and
     * dq with one row per invocation; before it the one-per-invocation kernels
     * (on an H100, B 8, H 12, T 1024, D 64 causal: dk/dv 2.07 ms in two passes,
     * dq 1.18 ms; the tiled ones 4.5 and 4.4 ms), still taken for D > 64. The
     * register-blocked ones on a software adapter.
     * WGT_ATTENTION_BACKWARD=dkdv, =rows (the former GPU default), =tiled,
     * =kv_tiled or =q_tiled picks. */
    bool unset = env == WEBGPU_ATTN_BACKWARD_DEFAULT;
    bool both = unset ? software(wg) : env == WEBGPU_ATTN_BACKWARD_TILED;
    bool tiled_kv = tiled && (both || env == WEBGPU_ATTN_BACKWARD_KV_TILED);
    bool tiled_q = tiled && (both || env == WEBGPU_ATTN_BACKWARD_Q_TILED);
    uint32_t dkdv_bk = 0, dkdv_bq = 0;
    bool dkdv = !tiled_kv && (unset ? !software(wg) : env == WEBGPU_ATTN_BACKWARD_DKDV) &&
                dkdv_tiles(wg, d4, &dkdv_bk, &dkdv_bq);
    uint32_t kv_keys = tiled_kv ? 32 : dkdv ? dkdv_bk : t.kv_keys;
    uint32_t dq_rows = tiled_q ? q_rows : t.rows;
    bool split = !tiled_kv && !dkdv && d4 > t.joint_d4;
    /* With dropout, attention_backward_dkdv hands its mask to the dq kernel as
     * bits ([rows][ceil(Tk / 32)] words after delta in one buffer: 1/8 byte
     * per weight), so Philox runs once per weight in the backward instead of
     * twice. WGT_ATTENTION_DROPOUT_MASK=0 turns it off (dq draws again). */
    uint64_t rows = (uint64_t)p.B * p.H * p.Tq, words = ((uint64_t)p.Tk + 31) / 32;
    bool mask = dkdv && !tiled_q && p.dropout && dkdv_bk % 32 == 0 && wg->knobs.attention_dropout_mask &&
                rows * (1 + words) < UINT32_MAX && rows * (1 + words) * 4 <= wg->limits.maxStorageBufferBindingSize &&
                rows * (1 + words) * 4 <= wg->limits.maxBufferSize;
    webgpu_pipeline *prepare, *kv[2] = {NULL, NULL}, *dq;
    wgt_status s = get_pipeline(wg, "attention_backward_prepare", d4, PREPARE_ROWS, t.keys, 0, 2, 1, op, &prepare);
    if (s == WGT_OK && tiled_kv)
        s = get_pipeline(wg, "attention_backward_kv_tiled", d4, kv_rows, 32, 3 | 32, 6, 2, op, &kv[0]);
    else if (s == WGT_OK && dkdv)
        s = get_pipeline(wg, "attention_backward_dkdv", d4, dkdv_bq, dkdv_bk, 3 | (mask ? 4 : 0), 5, 3, op,
                         &kv[0]);
    else if (s == WGT_OK)
        s = get_pipeline(wg, "attention_backward_kv", d4, t.kv_rows, t.kv_keys, split ? 1 : 3, 6, 2, op, &kv[0]);
    if (s == WGT_OK && split) s = get_pipeline(wg, "attention_backward_kv", d4, t.kv_rows, t.kv_keys, 2, 6, 2, op, &kv[1]);
    if (s == WGT_OK)
        s = get_pipeline(wg, tiled_q ? "attention_backward_q_tiled" : "attention_backward_q", d4, dq_rows, t.keys,
                         (mask ? 4 : 0) | 32, 6, 1, op, &dq);
    if (s != WGT_OK) return s;
    wgt_tensor_view delta;   /* delta f32 [rows], then (mask) the mask words */
    int64_t delta_n = (int64_t)(rows * (mask ? 1 + words : 1));
    s = webgpu_temp_alloc(wg, WGT_F32, 1, &delta_n, &delta);
    if (s != WGT_OK) return s;
    p.offsets[10] = (uint32_t)(delta.offset + rows);
    p.offsets[11] = (uint32_t)words;
    WGPUBuffer q = webgpu_view_buffer(&in[0]), k = webgpu_view_buffer(&in[1]), v = webgpu_view_buffer(&in[2]);
    WGPUBuffer o = webgpu_view_buffer(&in[3]), dout = webgpu_view_buffer(&in[4]), lse = webgpu_view_buffer(&in[5]);
    WGPUBuffer d = webgpu_view_buffer(&delta);
    p.offsets[8] = (uint32_t)in[5].offset;
    p.offsets[9] = (uint32_t)delta.offset;
    if (!wgt_view_is_contiguous(&in[5]))
        s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: lse must be contiguous", op);
    if (s == WGT_OK) {
        WGPUBuffer b[3] = {o, dout, d};
        s = dispatch_blocks(wg, prepare, b, 3, &p, ceil_div((int64_t)rows, PREPARE_ROWS), op);
    }
    if (s == WGT_OK) {
        p.blocks = (uint32_t)ceil_div(p.Tk, kv_keys);
        WGPUBuffer b[8] = {q, k, v, dout, lse, d, webgpu_view_buffer(&call->outputs[1]),
                           webgpu_view_buffer(&call->outputs[2])};
        for (int pass = 0; pass < 2 && s == WGT_OK; pass++)
            if (kv[pass]) s = dispatch_blocks(wg, kv[pass], b, 8, &p, (uint64_t)p.blocks * p.B * p.Hkv, op);
    }
    if (s == WGT_OK) {
        p.blocks = (uint32_t)ceil_div(p.Tq, dq_rows);
        WGPUBuffer b[7] = {q, k, v, dout, lse, d, webgpu_view_buffer(&call->outputs[0])};
        s = dispatch_blocks(wg, dq, b, 7, &p, (uint64_t)p.blocks * p.B * p.H, op);
    }
    webgpu_temp_release(wg, &delta);
    return s;
}

/* ------------------------------------------------------------ rope */

static wgt_status run_rope(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *x)
{
    const char *op = call->op_name;
    const wgt_tensor_view *out = &call->outputs[0];
    rope_params p;
    memset(&p, 0, sizeof(p));
    p.B = (uint32_t)x->shape[0];
    p.H = (uint32_t)x->shape[1];
    p.T = (uint32_t)x->shape[2];
    p.D = (uint32_t)x->shape[3];
    copy_strides(p.x_st, x);
    p.x_offset = (uint32_t)x->offset;
    p.position_offset = (uint32_t)call->rope.position_offset;
    p.interleaved = call->rope.interleaved;
    p.inverse = call->rope.inverse;
    uint64_t pairs = (uint64_t)p.B * p.H * p.T * (p.D / 2);
    if (pairs >= UINT32_MAX) return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %llu pairs exceed 2^32", op,
                                              (unsigned long long)pairs);
    p.pairs = (uint32_t)pairs;
    /* the CPU backend's values exactly (cpu_attention.c) */
    for (uint32_t i = 0; i < p.D / 2; i++) p.inv_freq[i] = (float)pow(call->rope.theta, -2.0 * i / (double)p.D);
    /* rope.wgsl, then the accurate cos and sin it calls (and what they use) */
    const char *files[3] = {"rope", "elementwise_common", "elementwise_math"};
    webgpu_pipeline *pipe;
    wgt_status s = webgpu_pipeline_assemble(wg, "rope", "", files, 3, 1, 1, false, op, &pipe);
    if (s != WGT_OK) return s;
    wgt_tensor_view target = *out;
    bool temp = out->dtype != WGT_F32;
    if (temp && (s = webgpu_temp_alloc(wg, WGT_F32, 4, out->shape, &target)) != WGT_OK) return s;
    p.out_offset = (uint32_t)target.offset;
    if (!webgpu_view_fits_u32(&target)) s = wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: out past 2^32 elements", op);
    uint32_t gx, gy;
    if (s == WGT_OK) s = webgpu_grid(wg, ceil_div(p.pairs, 256), &gx, &gy, op);
    WGPUBuffer buffers[2] = {webgpu_view_buffer(x), webgpu_view_buffer(&target)};
    if (s == WGT_OK) s = webgpu_dispatch(wg, pipe, buffers, 2, &p, sizeof(p), gx, gy, 1, op);
    if (s == WGT_OK && temp) s = webgpu_convert(wg, &target, out, op);
    if (temp) webgpu_temp_release(wg, &target);
    return s;
}

wgt_status webgpu_attention_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (wgt_shape_numel(call->outputs[0].ndim, call->outputs[0].shape) == 0) return WGT_OK;
    /* decoding (Tq <= 4, long K/V): split over the keys, f16 read in place */
    if (webgpu_attention_decode_wanted(wg, call)) return webgpu_attention_decode_run(wg, call);
    wgt_tensor_view in[6];
    bool temp[6] = {false};
    /* the forward reads f16 q, k, v in place (an LLM prefill's: three
     * dispatches fewer than their f32 copies) */
    const bool f16_in = call->kind == WGT_KERNEL_ATTENTION && call->inputs[0].dtype == WGT_F16 &&
                        call->inputs[1].dtype == WGT_F16 && call->inputs[2].dtype == WGT_F16 &&
                        !wg->knobs.attention_f16_copies;
    if (f16_in) {
        memcpy(in, call->inputs, 3 * sizeof(in[0]));
        return run_forward(wg, call, in, true);
    }
    wgt_status s = inputs_as_f32(wg, call, in, temp);
    if (s == WGT_OK) {
        switch (call->kind) {
        case WGT_KERNEL_ATTENTION: s = run_forward(wg, call, in, false); break;
        case WGT_KERNEL_ATTENTION_BACKWARD: s = run_backward(wg, call, in); break;
        default: s = run_rope(wg, call, &in[0]); break;
        }
    }
    release_temps(wg, in, temp, call->n_inputs);
    return s;
}
