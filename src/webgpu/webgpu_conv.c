/*
 * WebGPU convolution-family kernels (WGT_KERNEL_CONV; contracts in src/core/backend.h):
 *
 *   CONV_FORWARD, CONV_BACKWARD_INPUT, CONV_BACKWARD_WEIGHT
 *                          kernels/conv_gemm.wgsl   implicit GEMM, MODE 0 / 1 / 2
 *                          (+ kernels/conv_splitk_reduce.wgsl when the reduction is split)
 *   3x3 stride-1 convolutions (all three) where webgpu_conv_winograd_applies:
 *                          webgpu_conv_winograd.c, Winograd F(4x4, 3x3) around batched GEMMs
 *   CONV_BACKWARD_INPUT with at most 4 channels per group (the stem, depthwise)
 *                          kernels/conv_direct_dx.wgsl  an invocation per input pixel
 *                          (WGT_CONV_V2 "stem": kernels/conv_stem_dx.wgsl, webgpu_conv_stem.c)
 *   POOL_FORWARD, POOL_BACKWARD  webgpu_conv_pool.c
 *   BATCH_NORM_FORWARD / _BACKWARD  kernels/conv_bn_partials.wgsl + conv_bn_apply.wgsl
 *                          a workgroup per (channel, chunk): partial sums, then combine + apply
 *
 * The kernels compute in f32: f16 inputs are converted to f32 temporaries and
 * f16 outputs written through f32 temporaries (as webgpu_nn.c does). Every
 * view is contiguous (the front-end's contract), so a view is its buffer and
 * an element offset. Sizes and offsets are u32 in the kernels: larger calls
 * are refused by supports() (the front-end then reports WGT_ERR_UNSUPPORTED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "core/conv_call.h"
#include "webgpu/conv_shared.h"
#include "webgpu/webgpu_internal.h"


static bool fits_u32(const wgt_tensor_view *v)
{
    if (!v->storage) return false;
    return v->storage->bytes / 4 <= UINT32_MAX && v->offset >= 0 && v->offset <= UINT32_MAX;
}

static bool is_argmax(const wgt_kernel_call *call, bool output, int i)
{
    if (call->conv.pool_mode != WGT_POOL_MAX || i != 1) return false;
    return output ? call->conv.kernel == WGT_POOL_FORWARD : call->conv.kernel == WGT_POOL_BACKWARD;
}

bool webgpu_conv_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if ((unsigned)call->conv.kernel >= WGT_CONV_KERNEL_COUNT) return false;
    if (call->n_inputs != wgt_conv_call_inputs(call) || call->n_outputs < wgt_conv_call_outputs(call)) return false;
    for (int i = 0; i < call->n_inputs; i++) {
        const wgt_tensor_view *v = &call->inputs[i];
        bool ok = is_argmax(call, false, i) ? v->dtype == WGT_I32 : v->dtype == WGT_F32 || v->dtype == WGT_F16;
        if (!ok || !fits_u32(v) || !wgt_view_is_contiguous(v)) return false;
    }
    for (int i = 0; i < wgt_conv_call_outputs(call); i++) {
        const wgt_tensor_view *v = &call->outputs[i];
        bool ok = is_argmax(call, true, i) ? v->dtype == WGT_I32 : v->dtype == WGT_F32 || v->dtype == WGT_F16;
        if (!ok || !fits_u32(v) || !wgt_view_is_contiguous(v)) return false;
    }
    const int64_t sizes[] = {call->conv.n * call->conv.c * call->conv.h * call->conv.w,
                             call->conv.n * call->conv.k * call->conv.oh * call->conv.ow,
                             call->conv.k * call->conv.c * call->conv.kh * call->conv.kw};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (sizes[i] < 0 || sizes[i] > (int64_t)UINT32_MAX) return false;
    return true;
}

/* ------------------------------------------------------------ temporaries */

/* f16 operands go through f32 temporaries (webgpu_f32_views, f32_views.c):
 * the conv kernels compute in f32 only. */

/* ---------------------------------------------------------------- pipelines */

#define get_pipeline webgpu_conv_pipeline

static uint32_t u32of(int64_t v) { return (uint32_t)v; }

/* ----------------------------------------------------------- implicit GEMM */

/* The implicit GEMM's tiles (conv_gemm.wgsl: 256 invocations, each a TM x TN
 * block of the BM x BN tile, K slices BK deep). `speed` is the relative rate
 * of one padded multiply-add in that tile (a larger register block reuses
 * each shared load more): a rough model, enough to rank the tiles for one
 * problem against the work they waste on partial tiles. */
typedef struct conv_tile {
    const char *name;
    uint32_t bm, bn, bk, tm, tn;
    double speed;
    bool few_rows; /* only for problems of at most bm rows (WGT_CONV_STEM=0 leaves it out) */
    bool v2;       /* fewer than 256 invocations: a candidate only with WGT_CONV_V2 "tiles" */
} conv_tile;

/* bk of the first four: WGT_CONV_BK (8 by default; see choose_plan). */
static const conv_tile conv_tiles[] = {
    {"64", 64, 64, 16, 4, 4, 0.6, false, false},
    {"64x128", 64, 128, 16, 4, 8, 0.8, false, false},
    {"128x64", 128, 64, 16, 8, 4, 0.8, false, false},
    {"128", 128, 128, 16, 8, 8, 1.0, false, false},
    /* few rows (input gradients of 5 to 16 channels per group; 1 to 4 go to
     * conv_direct_dx.wgsl unless WGT_CONV_STEM=0): a 64-row tile computing 3
     * rows wastes 95% of its work, these 80% and 62% (8 x 512: 17 KiB of
     * workgroup memory, beyond WebGPU's default 16 KiB but within what
     * adapters offer; taken only where it fits) */
    {"16x256", 16, 256, 8, 4, 4, 0.5, true, false},
    {"8x512", 8, 512, 8, 4, 4, 0.45, true, false},
    /* WGT_CONV_V2 "tiles": 8 x 8 outputs per invocation (the register block
     * of the 128 x 128 tile, whose multiply measured as fast as the GEMM's)
     * on 128 or 64 invocations, for problems of 64 rows (the 64-channel
     * layers ran the 4 x 8 block of 64 x 128) and finer grids */
    {"64x128w", 64, 128, 16, 8, 8, 0.95, false, true},
    {"128x64w", 128, 64, 16, 8, 8, 0.95, false, true},
    {"64x64w", 64, 64, 16, 8, 8, 0.85, false, true},
};
#define CONV_N_TILES (sizeof(conv_tiles) / sizeof(conv_tiles[0]))

#define CONV_FILL 256u         /* workgroups that keep a large GPU busy (about two per SM of an H100) */
#define CONV_OLD_BIG_TILES 256u /* WGT_CONV_TILE=old: the former rule (128 x 128 from this many tiles) */
#define CONV_SPLIT_TARGET 512u /* workgroups split-K aims at (about 4 per SM); WGT_CONV_SPLIT_TARGET=<n> to tune */
#define CONV_SPLIT_MIN 256u    /* each split sums at least this many of the N OH OW terms */
#define CONV_SPLIT_MAX 1024u
#define CONV_SLOTS 264u        /* WGT_CONV_V2 "waves": workgroups of 256 invocations an H100 runs at once
                                * (2 per SM); WGT_CONV_SLOTS=<n> to tune */
#define CONV_V2_SPLIT_MIN 128u /* "waves": each split of a forward or input gradient sums >= this many terms */
#define CONV_V2_SPLIT_COST 48.0 /* "waves": multiply-adds that one partial element costs (written, read) */
#define CONV_V2_SPEED_64_DW 0.74 /* "ctab": the 64 x 64 tile's speed in the weight gradient */

#define cdiv webgpu_conv_cdiv

/* Workgroup memory of a tile with `pad` vec4s after each row of r, the r_info
 * table (16 bytes per r) when rtab, all twice when dbuf. */
static uint64_t tile_shared(const conv_tile *t, uint32_t pad, bool rtab, bool dbuf)
{
    uint64_t one = 16ull * t->bk * (t->bm / 4 + pad) + 16ull * t->bk * (t->bn / 4 + pad) + (rtab ? 16ull * t->bk : 0);
    return dbuf ? 2 * one : one;
}

/* Modelled time of a grid of tiles over `len` reduction terms each: padded
 * multiply-adds at the tile's speed, and never less than a full GPU's worth
 * of workgroups (fewer leave SMs idle). */
static double tile_cost(const conv_tile *t, uint64_t rows, uint64_t cols, uint64_t z, uint64_t len)
{
    uint64_t n = cdiv(rows, t->bm) * cdiv(cols, t->bn) * z;
    double depth = (double)(cdiv(len, t->bk) * t->bk);
    return (double)(n > CONV_FILL ? n : CONV_FILL) * t->bm * t->bn * depth / t->speed;
}

static uint32_t tile_threads(const conv_tile *t) { return (t->bm / t->tm) * (t->bn / t->tn); }

/* WGT_CONV_V2 "waves": the grid runs in whole waves of `slots` workgroups
 * (of 256 invocations; smaller ones fit proportionally more), each as long
 * as one workgroup's padded multiply-adds: a grid of 1.1 waves costs 2 (its
 * last workgroups start when the first end), which the former model, linear
 * past CONV_FILL, did not see (3 splits of a 196-tile forward are 2.2 waves
 * of an H100, 4 splits 3.0). */
static double wave_cost(const webgpu_knobs *k, const conv_tile *t, uint64_t rows, uint64_t cols, uint64_t z,
                        uint64_t len)
{
    uint64_t slots = (k->conv_slots > 0 ? k->conv_slots : CONV_SLOTS) * 256 / tile_threads(t);
    uint64_t n = cdiv(rows, t->bm) * cdiv(cols, t->bn) * z;
    double depth = (double)(cdiv(len, t->bk) * t->bk);
    return (double)(cdiv(n, slots) * slots) * t->bm * t->bn * depth / t->speed;
}

/* "waves": the split count of least wave_cost plus the partials' traffic
 * (each split's output written and read once); each split at least
 * CONV_V2_SPLIT_MIN terms (the weight gradient's CONV_SPLIT_MIN), a multiple
 * of the slice depth. */
static void choose_splits_waves(const webgpu_knobs *k, const conv_tile *t, uint64_t rows, uint64_t cols,
                                uint64_t z, uint64_t depth, bool fill_only, uint64_t out_size, uint64_t *splits,
                                uint64_t *len)
{
    uint64_t most = depth / (fill_only ? CONV_V2_SPLIT_MIN : CONV_SPLIT_MIN);
    if (most > CONV_SPLIT_MAX) most = CONV_SPLIT_MAX;
    if (most < 1) most = 1;
    double best = 0;
    *splits = 1, *len = depth ? depth : 1;
    for (uint64_t s = 1; s <= most; s++) {
        uint64_t l = depth ? cdiv(cdiv(depth, s), t->bk) * t->bk : 1, n = depth ? cdiv(depth, l) : 1;
        if (n != s) continue; /* the same as a smaller count */
        double c = wave_cost(k, t, rows, cols, z * n, l) + (n > 1 ? (double)n * out_size * CONV_V2_SPLIT_COST : 0.0);
        if (s == 1 || c < best) best = c, *splits = n, *len = l;
    }
}

/* A plan for one call: the tile, its shared-memory options, and the splits of
 * the reduction (split-K). */
typedef struct gemm_plan {
    conv_tile tile; /* bk as chosen (WGT_CONV_BK) */
    uint32_t pad;
    bool rtab, dbuf;
    uint64_t splits, split_len;
} gemm_plan;

/* Splits of the reduction (split-K) on tile t: the weight gradient (a small
 * output over a long reduction) always aims at CONV_SPLIT_TARGET workgroups;
 * the forward and input gradient (fill_only) split only when their output
 * gives fewer than CONV_FILL (7 x 7 layers of 512 channels). Each split sums
 * at least CONV_SPLIT_MIN terms, a multiple of the slice depth.
 * WGT_CONV_SPLITK=<n> forces n (tests and tuning); WGT_CONV_SPLIT_TARGET=<n>
 * sets the target (on a GPU with a different SM count, or to trade the
 * last wave's idle SMs against more partial traffic). */
static void choose_splits(const webgpu_knobs *k, const conv_tile *t, uint64_t rows, uint64_t cols, uint64_t z,
                          uint64_t depth, bool fill_only, uint64_t *splits, uint64_t *len)
{
    uint64_t target = k->conv_split_target > 0 ? k->conv_split_target : CONV_SPLIT_TARGET;
    uint64_t base = cdiv(rows, t->bm) * cdiv(cols, t->bn) * z, s = cdiv(target, base);
    uint64_t most = depth / CONV_SPLIT_MIN;
    if (fill_only && base >= CONV_FILL) s = 1;
    if (k->conv_splits > 0) s = k->conv_splits, most = depth;
    if (s > most) s = most;
    if (s > CONV_SPLIT_MAX) s = CONV_SPLIT_MAX;
    if (s < 1) s = 1;
    *len = depth ? cdiv(cdiv(depth, s), t->bk) * t->bk : 1;
    *splits = depth ? cdiv(depth, *len) : 1;
}

/* rows x cols outputs in z independent GEMMs of `len` terms (the largest,
 * for the phases of an input gradient); own_splits: split-K is ours to
 * choose (fill_only: see choose_splits), out_size: the elements each split's
 * partial output has (what the reduction reads per split). */
static gemm_plan choose_plan(webgpu_backend *wg, uint64_t rows, uint64_t cols, uint64_t z, uint64_t len,
                             bool own_splits, bool fill_only, uint64_t out_size)
{
    uint64_t limit_shared = wg->limits.maxComputeWorkgroupStorageSize;
    const webgpu_knobs *k = &wg->knobs;
    bool new_loads = k->conv_loads, few_rows_ok = k->conv_stem, rtab = k->conv_rtab, dbuf = k->conv_dbuf;
    const char *env = k->conv_tile[0] ? k->conv_tile : NULL;
    /* BK 8 by default: the MATMUL kernel measured BK = 16 slower on H100 and
     * H200 everywhere (register pressure; here also half the gathered columns
     * per invocation); WGT_CONV_BK=16 for comparison */
    uint32_t bk = k->conv_bk;
    gemm_plan best;
    memset(&best, 0, sizeof(best));
    bool found = false;
    double best_cost = 0;
    for (size_t i = 0; i < CONV_N_TILES; i++) {
        conv_tile tv = conv_tiles[i];
        const conv_tile *t = &tv;
        bool old_rule = env && strcmp(env, "old") == 0;
        if (!tv.few_rows) tv.bk = old_rule ? 16u : bk;
        /* WGT_CONV_V2 "ctab", weight gradient: 64 x 64 measured 0.92 of 64 x
         * 128's speed per padded multiply-add (H100: 426 vs 513 us on the
         * stem's 147 columns, 313 vs 323 on 576), not the 0.75 of the table */
        if (k->conv_v2_ctab && !fill_only && strcmp(tv.name, "64") == 0) tv.speed = CONV_V2_SPEED_64_DW;
        /* WGT_CONV_V2 "ctab": the column table takes 48 bytes per column quad */
        uint64_t shared = limit_shared - (k->conv_v2_ctab ? 12ull * t->bn : 0);
        if (tile_shared(t, 0, false, false) > shared) continue;
        /* what fits of: the table (it saves ALU on every load), double
         * buffering (one barrier per slice), the padding (bank conflicts on
         * some stores) */
        gemm_plan p = {tv, 0, rtab && tile_shared(t, 0, true, false) <= shared, false, 1, len};
        p.dbuf = dbuf && tile_shared(t, 0, p.rtab, true) <= shared;
        p.pad = new_loads && tile_shared(t, 1, p.rtab, p.dbuf) <= shared ? 1u : 0u;
        if (tv.v2 && !k->conv_v2_tiles && !(env && strcmp(env, t->name) == 0)) continue;
        if (own_splits) choose_splits(k, t, rows, cols, z, len, fill_only, &p.splits, &p.split_len);
        if (old_rule) {
            /* the former rule: 128 x 128 when there are CONV_OLD_BIG_TILES of them, else 64 x 64 */
            bool big = cdiv(rows, 128) * cdiv(cols, 128) * z >= CONV_OLD_BIG_TILES;
            if (strcmp(t->name, big ? "128" : "64") == 0) return p;
            continue;
        }
        if (env && strcmp(env, t->name) == 0) return p;
        if (t->few_rows && (rows > t->bm || !few_rows_ok)) continue;
        /* + the reduction: each split's partial output written and read once */
        double cost = tile_cost(t, rows, cols, z * p.splits, p.split_len) +
                      (p.splits > 1 ? (double)p.splits * out_size * 16.0 : 0.0);
        if (!found || cost < best_cost) best = p, best_cost = cost, found = true;
    }
    if (!found) { /* 64 x 64 (4 KiB at BK 8, 8 KiB at 16, + the table) fits every WebGPU device */
        best.tile = conv_tiles[0];
        best.rtab = rtab, best.splits = 1, best.split_len = len;
    }
    /* WGT_CONV_V2 "waves": the tile as chosen, its splits re-chosen by whole
     * waves, for the 8 x 8 tiles of 256 invocations (two per SM of an H100,
     * measured: the 128 x 128 layers gained 10-14%; the smaller blocks, whose
     * occupancy the model does not know, lost) */
    if (found && own_splits && k->conv_v2_waves && !k->conv_splits && best.tile.tm * best.tile.tn == 64 &&
        tile_threads(&best.tile) == 256)
        choose_splits_waves(k, &best.tile, rows, cols, z, len, fill_only, out_size, &best.splits, &best.split_len);
    return best;
}

/* The parameter block of kernels/conv_gemm.wgsl. */
typedef struct gemm_params {
    uint32_t n, c, h, w, k, oh, ow, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, cg;
    uint32_t kg, rows, cols, depth, a_offset, b_offset, out_offset, bias_offset;
    uint32_t split_len, has_bias, groups, out_split;
    uint32_t step_h, step_w, phases, pad2;
} gemm_params;
_Static_assert(sizeof(gemm_params) % 16 == 0 && sizeof(gemm_params) <= WEBGPU_PARAMS_MAX, "conv gemm params");

/* Both parameter blocks (gemm_params, direct_params) open with the same 17
 * geometry fields, n .. kg in this order; fill_geometry writes them. */
_Static_assert(offsetof(gemm_params, kg) == (CONV_GEOMETRY_FIELDS - 1) * sizeof(uint32_t), "gemm_params geometry");
/* The parameter block of kernels/conv_splitk_reduce.wgsl. */
typedef struct reduce_params {
    uint32_t size, splits, src_offset, dst_offset;
} reduce_params;

/* conv_splitk_sum.wgsl's smallest output: 256 workgroups of 256 elements */
#define CONV_SUM_MIN_SIZE 65536u
#define CONV_SUM_MAX_SPLITS 8u /* or at most this many splits */

/* dst[size] = sum over s of src[s][size], in order (deterministic). */
static wgt_status splitk_reduce(webgpu_backend *wg, const wgt_tensor_view *src, const wgt_tensor_view *dst,
                                uint32_t size, uint32_t splits, const char *op)
{
    webgpu_pipeline *pipe;
    /* WGT_CONV_V2 "reduce": an invocation per element where that fills the
     * GPU, or where the splits are few (every invocation then busy) */
    bool per_element = wg->knobs.conv_v2_reduce && (size >= CONV_SUM_MIN_SIZE || splits <= CONV_SUM_MAX_SPLITS);
    const char *file = per_element ? "conv_splitk_sum" : "conv_splitk_reduce";
    wgt_status s = get_pipeline(wg, file, "", NULL, file, 1, 1, op, &pipe);
    uint32_t gx = 0, gy = 0;
    if (s == WGT_OK) s = webgpu_grid(wg, cdiv(size, per_element ? 256 : 32), &gx, &gy, op); /* elements per workgroup */
    if (s != WGT_OK) return s;
    reduce_params p = {size, splits, (uint32_t)src->offset, (uint32_t)dst->offset};
    WGPUBuffer buffers[2] = {webgpu_view_buffer(src), webgpu_view_buffer(dst)};
    return webgpu_dispatch(wg, pipe, buffers, 2, &p, sizeof(p), gx, gy, 1, op);
}

static wgt_status run_gemm(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    const char *op = call->op_name;
    int mode = call->conv.kernel == WGT_CONV_FORWARD ? 0 : call->conv.kernel == WGT_CONV_BACKWARD_INPUT ? 1 : 2;
    gemm_params p;
    memset(&p, 0, sizeof(p));
    webgpu_conv_fill_geometry(call, &p);
    p.groups = u32of(call->conv.groups);
    uint64_t taps = (uint64_t)p.kh * p.kw, wsize = (uint64_t)p.k * p.cg * taps;
    bool phased = mode == 1 && webgpu_conv_use_phases(wg, call);
    uint64_t z = p.groups, fe_splits = 1, plan_len = 0, out_size = wsize;
    p.phases = 1;
    switch (mode) {
    case 0:
        p.rows = p.kg, p.cols = p.n * p.oh * p.ow, p.depth = (uint32_t)(p.cg * taps), plan_len = p.depth;
        out_size = (uint64_t)p.n * p.k * p.oh * p.ow;
        break;
    case 1:
        p.rows = p.cg, p.depth = (uint32_t)(p.kg * taps), plan_len = p.depth;
        p.cols = p.n * p.h * p.w;
        out_size = (uint64_t)p.n * p.c * p.h * p.w;
        if (phased) {
            /* one GEMM per phase (ih % sh, iw % sw), z = group + groups phase;
             * cols and depth of the largest phase (the kernel bounds each) */
            p.step_h = p.stride_h / webgpu_conv_gcd(p.stride_h, p.dil_h), p.step_w = p.stride_w / webgpu_conv_gcd(p.stride_w, p.dil_w);
            p.cols = (uint32_t)(p.n * cdiv(p.h, p.stride_h) * cdiv(p.w, p.stride_w));
            plan_len = p.kg * cdiv(p.kh, p.step_h) * cdiv(p.kw, p.step_w);
            p.phases = p.stride_h * p.stride_w;
            z *= p.phases;
        }
        break;
    default:
        p.rows = p.kg, p.cols = (uint32_t)(p.cg * taps), p.depth = p.n * p.oh * p.ow;
        /* the front-end asks for one split (the partials it sums) unless
         * WGT_CONV_SPLITK=0 (the former path): split-K is then ours */
        uint64_t len = call->conv.split_len > 0 ? (uint64_t)call->conv.split_len : p.depth;
        fe_splits = p.depth ? cdiv(p.depth, len) : 1;
        z *= fe_splits;
        plan_len = fe_splits == 1 ? p.depth : len;
        break;
    }
    bool own_splits = fe_splits == 1 && wg->knobs.conv_own_splitk;
    gemm_plan plan = choose_plan(wg, p.rows, p.cols, z, plan_len, own_splits, mode != 2, out_size);
    const conv_tile *tile = &plan.tile;
    uint64_t splits = own_splits ? plan.splits : 1;
    /* the grid's z, the partials' binding and their u32 indexing bound the splits */
    uint64_t most = wg->limits.maxComputeWorkgroupsPerDimension / z;
    uint64_t fit = out_size ? wg->limits.maxStorageBufferBindingSize / 4 / out_size : most;
    if (out_size && fit > UINT32_MAX / out_size) fit = UINT32_MAX / out_size;
    if (most > fit) most = fit;
    if (splits > 1 && splits > most) {
        splits = most > 1 ? most : 1;
        plan.split_len = cdiv(cdiv(plan_len, splits), tile->bk) * tile->bk;
        splits = cdiv(plan_len, plan.split_len);
    }
    /* each split sums r in [split split_len, (split + 1) split_len) of its GEMM */
    p.split_len = (uint32_t)(splits > 1 ? plan.split_len : plan_len);
    z *= splits;

    /* inputs (x, w), (dy, w), (x, dy): A is always the second, B the first */
    const wgt_tensor_view *a = &v->in[1], *b = &v->in[0], *out = &v->out[0];
    const wgt_tensor_view *bias = mode == 0 && call->conv.has_bias ? &v->in[2] : a;
    p.a_offset = (uint32_t)a->offset, p.b_offset = (uint32_t)b->offset;
    p.bias_offset = (uint32_t)bias->offset;
    p.has_bias = mode == 0 && call->conv.has_bias;
    p.out_split = (uint32_t)out_size; /* the front-end's partials (WGT_CONV_SPLITK=0) are wsize apart too */

    uint64_t gx = cdiv(p.cols, tile->bn), gy = cdiv(p.rows, tile->bm);
    uint64_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    if (gx > limit || gy > limit || z > limit)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED,
                         "%s: a grid of %llu x %llu x %llu workgroups exceeds the device's %llu per dimension", op,
                         (unsigned long long)gx, (unsigned long long)gy, (unsigned long long)z,
                         (unsigned long long)limit);
    if (gx == 0 || gy == 0 || z == 0) return WGT_OK;

    bool new_loads = wg->knobs.conv_loads, along_r = mode == 2 && new_loads, rtab = plan.rtab;
    if (wg->knobs.conv_debug) /* the plan of every call, to check the choices on a new GPU */
        fprintf(stderr, "wgt conv: %s mode %d rows %u cols %u depth %llu z %llu: tile %s bk %u pad %u rtab %d dbuf %d "
                "splits %llu x %u%s\n", op, mode, p.rows, p.cols, (unsigned long long)plan_len, (unsigned long long)z,
                tile->name, tile->bk, plan.pad, (int)rtab, (int)plan.dbuf,
                (unsigned long long)(fe_splits > 1 ? fe_splits : splits), p.split_len, phased ? " phased" : "");
    char key[96], prelude[384];
    /* WGT_CONV_V2 "ctab" for blocks smaller than 8 x 8 (measured on an H100:
     * 9-16% faster there, 15% slower on the 128 x 128 input gradient) */
    bool ctab = wg->knobs.conv_v2_ctab && tile->tm * tile->tn < 64;
    snprintf(key, sizeof(key), "conv_gemm/%d/%u/%u/%u/%u/%u/%u/%d/%d/%d/%d/%d/%d", mode, tile->bm, tile->bn, tile->bk,
             tile->tm, tile->tn, plan.pad, (int)phased, (int)along_r, (int)rtab, (int)plan.dbuf, (int)new_loads,
             (int)ctab);
    snprintf(prelude, sizeof(prelude),
             "const MODE = %du;\nconst PHASED = %s;\nconst B_ALONG_R = %s;\nconst RTAB = %s;\nconst DBUF = %s;\n"
             "const B_SPREAD = %s;\nconst BM = %uu;\nconst BN = %uu;\nconst BK = %uu;\nconst TM = %uu;\n"
             "const TN = %uu;\nconst PAD = %uu;\nconst CTAB = %s;\n",
             mode, phased ? "true" : "false", along_r ? "true" : "false", rtab ? "true" : "false",
             plan.dbuf ? "true" : "false", new_loads ? "true" : "false", tile->bm, tile->bn, tile->bk, tile->tm,
             tile->tn, plan.pad, ctab ? "true" : "false");
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, key, prelude, NULL, "conv_gemm", 3, 1, op, &pipe);
    if (s != WGT_OK) return s;

    /* split-K: partial outputs [splits, out's size] in a temporary, then summed into out */
    wgt_tensor_view partials = {0};
    const wgt_tensor_view *dst = out;
    if (splits > 1) {
        int64_t shape[2] = {(int64_t)splits, (int64_t)out_size};
        s = webgpu_temp_alloc(wg, WGT_F32, 2, shape, &partials);
        if (s != WGT_OK) return s;
        dst = &partials;
    }
    p.out_offset = (uint32_t)dst->offset;
    WGPUBuffer buffers[4] = {webgpu_view_buffer(a), webgpu_view_buffer(b), webgpu_view_buffer(bias),
                             webgpu_view_buffer(dst)};
    s = webgpu_dispatch(wg, pipe, buffers, 4, &p, sizeof(p), (uint32_t)gx, (uint32_t)gy, (uint32_t)z, op);
    if (s == WGT_OK && splits > 1) s = splitk_reduce(wg, &partials, out, (uint32_t)out_size, (uint32_t)splits, op);
    if (partials.storage) webgpu_temp_release(wg, &partials);
    return s;
}

/* ------------------------------------------ direct input gradient (few C) */

/* The parameter block of kernels/conv_direct_dx.wgsl. */
typedef struct direct_params {
    uint32_t n, c, h, w, k, oh, ow, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, cg;
    uint32_t kg, groups, total, w_offset, dy_offset, dx_offset, pad0, pad1;
} direct_params;
_Static_assert(sizeof(direct_params) % 16 == 0, "conv direct params");
_Static_assert(offsetof(direct_params, kg) == (CONV_GEOMETRY_FIELDS - 1) * sizeof(uint32_t), "direct_params geometry");

#define CONV_DIRECT_MAX_CG 4u

/* Whether the input gradient goes to conv_direct_dx.wgsl: at most
 * CONV_DIRECT_MAX_CG channels per group (the GEMM's rows: its smallest tile,
 * 8 rows, would waste 5/8 of its work on the stem's 3), unless
 * WGT_CONV_STEM=0; the tap arithmetic must fit the kernel's i32. */
static bool use_direct_dx(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->conv.kernel != WGT_CONV_BACKWARD_INPUT || !wg->knobs.conv_stem) return false;
    if (strcmp(wg->knobs.conv_tile, "old") == 0) return false;
    const int64_t lim = (int64_t)1 << 30;
    return call->conv.c / call->conv.groups <= CONV_DIRECT_MAX_CG &&
           call->conv.h + call->conv.pad_top < lim && call->conv.w + call->conv.pad_left < lim &&
           (call->conv.kh - 1) * call->conv.dil_h < lim && (call->conv.kw - 1) * call->conv.dil_w < lim;
}

static wgt_status run_direct_dx(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    const char *op = call->op_name;
    direct_params p;
    memset(&p, 0, sizeof(p));
    webgpu_conv_fill_geometry(call, &p);
    p.groups = u32of(call->conv.groups);
    uint64_t total = (uint64_t)p.n * p.groups * p.h * p.w; /* at most dx's size: u32 */
    p.total = (uint32_t)total;
    /* inputs dy, w; output dx */
    const wgt_tensor_view *dy = &v->in[0], *w = &v->in[1], *dx = &v->out[0];
    p.w_offset = (uint32_t)w->offset, p.dy_offset = (uint32_t)dy->offset, p.dx_offset = (uint32_t)dx->offset;
    if (total == 0) return WGT_OK;
    if (wg->knobs.conv_debug)
        fprintf(stderr, "wgt conv: %s direct input gradient cg %u k/g %u, %llu pixels\n", op, p.cg, p.kg,
                (unsigned long long)total);
    char key[48], prelude[32];
    snprintf(key, sizeof(key), "conv_direct_dx/%u", p.cg);
    snprintf(prelude, sizeof(prelude), "const CG = %uu;\n", p.cg);
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, key, prelude, NULL, "conv_direct_dx", 2, 1, op, &pipe);
    uint32_t gx = 0, gy = 0;
    if (s == WGT_OK) s = webgpu_grid(wg, cdiv(total, 256), &gx, &gy, op);
    if (s != WGT_OK) return s;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(w), webgpu_view_buffer(dy), webgpu_view_buffer(dx)};
    return webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
}

/* -------------------------------------------------------------- batch norm */

/* The parameter block of kernels/conv_bn_common.wgsl. */
typedef struct bn_params {
    uint32_t n, c, l, flags;
    float eps;
    uint32_t x_offset, w_offset, b_offset, mean_offset, var_offset, y_offset, grads_offset;
    uint32_t splits, chunk, n_groups, pad0;
} bn_params;
_Static_assert(sizeof(bn_params) % 16 == 0, "batch norm params");

/* Chunks per channel: enough workgroups for a large GPU (BN_TARGET_GROUPS in
 * all), each chunk at least BN_MIN_CHUNK elements, at most BN_MAX_SPLITS. */
#define BN_TARGET_GROUPS 1024u
#define BN_MIN_CHUNK 2048u
#define BN_MAX_SPLITS 256u

static wgt_status bn_dispatch(webgpu_backend *wg, const char *file, bool backward, int n_read_only, int n_read_write,
                              const WGPUBuffer *buffers, bn_params *p, const char *op)
{
    char key[64], prelude[128];
    bool stream = wg->knobs.bn_stream; /* WGT_BN_STREAM (conv_bn_common.wgsl) */
    bool welford = wg->knobs.bn_welford && !backward; /* WGT_BN_WELFORD (conv_bn_partials.wgsl) */
    snprintf(key, sizeof(key), "%s/%d/%d/%d", file, (int)backward, (int)stream, (int)welford);
    snprintf(prelude, sizeof(prelude), "const BACKWARD = %s;\nconst STREAM = %s;\nconst WELFORD = %s;\n",
             backward ? "true" : "false", stream ? "true" : "false", welford ? "true" : "false");
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, key, prelude, "conv_bn_common", file, n_read_only, n_read_write, op, &pipe);
    uint32_t gx = 0, gy = 0;
    if (s == WGT_OK) s = webgpu_grid(wg, p->n_groups, &gx, &gy, op);
    if (s == WGT_OK) s = webgpu_dispatch(wg, pipe, buffers, n_read_only + n_read_write, p, sizeof(*p), gx, gy, 1, op);
    return s;
}

static wgt_status run_batch_norm(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    const char *op = call->op_name;
    bool backward = call->conv.kernel == WGT_BATCH_NORM_BACKWARD, training = call->conv.training;
    bn_params p;
    memset(&p, 0, sizeof(p));
    p.n = u32of(call->conv.n), p.c = u32of(call->conv.c), p.l = u32of(call->conv.h * call->conv.w);
    p.eps = (float)call->conv.eps;
    p.flags = (training ? 1u : 0u) | (call->conv.has_weight ? 2u : 0u) | (!backward && call->conv.has_bias ? 4u : 0u);
    uint64_t count = (uint64_t)p.n * p.l;
    if (count * p.c == 0) return WGT_OK;
    uint64_t splits = (BN_TARGET_GROUPS + p.c - 1) / p.c, most = (count + BN_MIN_CHUNK - 1) / BN_MIN_CHUNK;
    if (splits > most) splits = most;
    if (splits > BN_MAX_SPLITS) splits = BN_MAX_SPLITS;
    if (splits < 1) splits = 1;
    p.chunk = (uint32_t)((count + splits - 1) / splits);
    p.splits = (uint32_t)((count + p.chunk - 1) / p.chunk);
    p.n_groups = p.c * p.splits;
    int k = 0;
    const wgt_tensor_view *x = &v->in[k++];
    const wgt_tensor_view *w = call->conv.has_weight ? &v->in[k++] : x;
    const wgt_tensor_view *b = x, *mean = NULL, *var = NULL, *y = &v->out[0];
    if (backward) {
        mean = &v->in[k++], var = &v->in[k++], b = &v->in[k++]; /* b = dy */
    } else {
        if (call->conv.has_bias) b = &v->in[k++];
        if (training) mean = &v->out[1], var = &v->out[2];
        else mean = &v->in[k++], var = &v->in[k++];
    }
    /* partials [C][splits] (vec2), and dw, db as one [2, C] temporary: the
     * apply kernel has one binding for both */
    wgt_tensor_view partials = {0}, grads = {0};
    int64_t pshape[2] = {(int64_t)p.n_groups, 2}, gshape[2] = {2, call->conv.c};
    wgt_status s = webgpu_temp_alloc(wg, WGT_F32, 2, pshape, &partials);
    if (s == WGT_OK) s = webgpu_temp_alloc(wg, WGT_F32, 2, gshape, &grads);
    p.x_offset = (uint32_t)x->offset, p.w_offset = (uint32_t)w->offset, p.b_offset = (uint32_t)b->offset;
    p.mean_offset = (uint32_t)mean->offset, p.var_offset = (uint32_t)var->offset, p.y_offset = (uint32_t)y->offset;
    p.grads_offset = (uint32_t)grads.offset;
    /* vec2 partials are addressed from 0: a fresh temporary starts its buffer */
    if (s == WGT_OK && partials.offset != 0) s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: partials at an offset", op);
    if (s == WGT_OK && (training || backward)) {
        /* mean and var are only read here (backward); forward binds them too, unread */
        WGPUBuffer buffers[5] = {webgpu_view_buffer(x), webgpu_view_buffer(b), webgpu_view_buffer(backward ? mean : x),
                                 webgpu_view_buffer(backward ? var : x), webgpu_view_buffer(&partials)};
        s = bn_dispatch(wg, "conv_bn_partials", backward, 4, 1, buffers, &p, op);
    }
    if (s == WGT_OK) {
        /* mean and var are bound read_write in both directions: they are
         * separate tensors that no other binding aliases */
        WGPUBuffer buffers[8] = {webgpu_view_buffer(x), webgpu_view_buffer(w), webgpu_view_buffer(b),
                                 webgpu_view_buffer(&partials), webgpu_view_buffer(y), webgpu_view_buffer(mean),
                                 webgpu_view_buffer(var), webgpu_view_buffer(&grads)};
        s = bn_dispatch(wg, "conv_bn_apply", backward, 4, 4, buffers, &p, op);
    }
    if (s == WGT_OK && backward) {
        wgt_tensor_view row = grads;
        row.ndim = 1;
        row.shape[0] = call->conv.c;
        row.strides[0] = 1;
        s = webgpu_convert(wg, &row, &call->outputs[1], op);
        row.offset += call->conv.c;
        if (s == WGT_OK) s = webgpu_convert(wg, &row, &call->outputs[2], op);
    }
    if (partials.storage) webgpu_temp_release(wg, &partials);
    if (grads.storage) webgpu_temp_release(wg, &grads);
    return s;
}

wgt_status webgpu_conv_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    webgpu_f32_views v;
    wgt_status s = webgpu_f32_views_begin(wg, call, wgt_conv_call_outputs(call), &v);
    if (s == WGT_OK) {
        switch (call->conv.kernel) {
        case WGT_CONV_FORWARD:
        case WGT_CONV_BACKWARD_INPUT:
        case WGT_CONV_BACKWARD_WEIGHT: {
            bool short_of_memory = true; /* also: Winograd does not apply */
            if (webgpu_conv_winograd_applies(wg, call)) s = webgpu_conv_winograd(wg, call, &v, &short_of_memory);
            if (s != WGT_OK || !short_of_memory) break;
            if (!use_direct_dx(wg, call)) s = run_gemm(wg, call, &v);
            else if (wg->knobs.conv_v2_stem && webgpu_conv_stem_fits(wg, call)) s = webgpu_conv_stem_dx(wg, call, &v);
            else s = run_direct_dx(wg, call, &v);
            break;
        }
        case WGT_POOL_FORWARD:
        case WGT_POOL_BACKWARD: s = webgpu_conv_pool(wg, call, &v); break;
        case WGT_BATCH_NORM_FORWARD:
        case WGT_BATCH_NORM_BACKWARD: s = run_batch_norm(wg, call, &v); break;
        default: s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: unknown convolution kernel", call->op_name);
        }
    }
    /* backward batch norm writes dw/db itself (through the [2, C] temporary) */
    if (call->conv.kernel == WGT_BATCH_NORM_BACKWARD) v.out_temp[1] = v.out_temp[2] = false;
    return webgpu_f32_views_finish(wg, call, &v, s);
}
