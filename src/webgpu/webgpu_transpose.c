/*
 * Tiled transpose on WebGPU: the ELEMENTWISE copies that move a transposed or
 * permuted view into a contiguous tensor.
 *
 *   x   [.., R, .., C] with stride 1 along R, stride != 1 along C
 *   ->  out [.., R, .., C] contiguous, same dtype (4 bytes), bit for bit
 *
 * The generic elementwise kernel walks the output linearly, so its reads along
 * C jump by x's stride and every load is its own memory transaction (0.37 of
 * PyTorch's x.t().contiguous() at 8192 x 8192 f32). transpose_tiled.wgsl
 * stages TILE x TILE tiles in workgroup memory so reads go along R and writes
 * along C, both coalesced; transpose_tiled_vec4.wgsl does it in 16-byte loads
 * and stores where sides, strides and offsets are whole quads (both after
 * transpose_common.wgsl: the parameters and where a tile lies).
 *
 * The call is seen after the elementwise collapse: size-1 dims dropped, dims
 * contiguous in both views merged. C is the innermost remaining dim, R the
 * innermost other dim with x stride 1, and every other dim is a batch dim
 * (at most 6, any strides) that the kernel unravels per workgroup.
 *
 * Environment: WGT_WEBGPU_TRANSPOSE=TxY picks the tile (T = 32 or 64) and the
 * workgroup rows (Y: 32 x Y invocations), default 32x8, for timing variants
 * without rebuilding; WGT_WEBGPU_GRID_LIMIT=n folds the grid into rows of n
 * workgroups as the elementwise kernel does (tests reach the fold cheaply).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_transpose.h"

#define TP_MAX_BATCH 6
/* Shorter sides leave most of a 32-wide tile idle: the generic kernel does
 * as well there (its reads along a short C are nearly contiguous anyway). */
#define TP_MIN_SIDE 16

/* Matches struct Params in transpose_tiled.wgsl. */
typedef struct tp_params {
    uint32_t rows, cols, in_col_stride, out_row_stride;
    uint32_t in_offset, out_offset, tiles_c, tiles_r;
    uint32_t n_tiles, n_batch, pad0, pad1;
    uint32_t batch[TP_MAX_BATCH][4]; /* size, x stride, out stride, 0; innermost first */
} tp_params;

typedef struct tp_plan {
    tp_params params;
    uint64_t tiles;
    int tile, wg_y;
    bool vec4; /* transpose_tiled_vec4.wgsl: every index along R and C and both offsets are whole quads */
} tp_plan;

static atomic_uint_fast64_t transposes;

static atomic_uint_fast64_t transposes_vec4;

uint64_t webgpu_transpose_count(void) { return (uint64_t)atomic_load(&transposes); }
uint64_t webgpu_transpose_vec4_count(void) { return (uint64_t)atomic_load(&transposes_vec4); }

/* Tile and workgroup rows: WGT_WEBGPU_TRANSPOSE=TxY where the device allows
 * it, else 32 x 8 (256 invocations, 4 elements each, 4.2 KB of tile). */
static void tile_config(const webgpu_backend *wg, int *tile, int *wg_y)
{
    *tile = 32;
    *wg_y = 8;
    int t = wg->knobs.transpose_tile, y = wg->knobs.transpose_rows;
    if (!t && !y) return; /* unset */
    bool ok = (t == 32 || t == 64) && y >= 1 && y <= 32 && (y & (y - 1)) == 0 && t % y == 0 &&
              (uint32_t)(32 * y) <= wg->limits.maxComputeInvocationsPerWorkgroup &&
              (uint32_t)y <= wg->limits.maxComputeWorkgroupSizeY &&
              (uint64_t)t * (uint64_t)(t + 1) * 4 <= wg->limits.maxComputeWorkgroupStorageSize;
    if (ok) {
        *tile = t;
        *wg_y = y;
    }
}

/* Element range [lo, hi] a view touches. */
static void view_extent(const wgt_tensor_view *v, int64_t *lo, int64_t *hi)
{
    /* Checked: an extent past int64 reads as lo = -1, outside any storage. */
    if (!wgt_view_extent(v, lo, hi)) *lo = -1;
}

/* Whether v lies inside its storage with 32-bit element indices (the kernel
 * runs without implementation bounds checks, so this is what keeps it safe). */
static bool view_in_range(const wgt_tensor_view *v)
{
    if (!v->storage || !v->storage->handle) return false;
    int64_t lo, hi;
    view_extent(v, &lo, &hi);
    int64_t elements = (int64_t)(v->storage->bytes / wgt_dtype_size(v->dtype));
    return lo >= 0 && hi < elements && hi <= (int64_t)UINT32_MAX;
}

/* Fills P when call is a tiled transpose (see webgpu_transpose_applies). */
static bool plan_transpose(const webgpu_backend *wg, const wgt_kernel_call *call, tp_plan *P)
{
    if (call->kind != WGT_KERNEL_ELEMENTWISE || call->n_inputs != 1 || call->n_outputs != 1 || !call->expr)
        return false;
    const wgt_expr *e = call->expr;
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    if (x->dtype != out->dtype || (x->dtype != WGT_F32 && x->dtype != WGT_I32)) return false;
    /* A pure load: no cast, no arithmetic, so moving bits is exact. */
    wgt_expr_type type = x->dtype == WGT_F32 ? WGT_EXPR_F32 : WGT_EXPR_I32;
    if (e->n_nodes != 1 || e->nodes[0].opcode != WGT_EXPR_INPUT || e->nodes[0].input_index != 0 ||
        e->nodes[0].type != type)
        return false;
    if (x->ndim != out->ndim || x->ndim < 2 || x->ndim > WGT_MAX_DIMS) return false;
    for (int d = 0; d < out->ndim; d++)
        if (x->shape[d] != out->shape[d] || out->shape[d] <= 0) return false; /* empty: the generic path */
    /* Same storage: the generic path reads from a snapshot. */
    if (x->storage == out->storage || !view_in_range(x) || !view_in_range(out)) return false;

    /* Collapse: drop size-1 dims, merge dims contiguous in both views. */
    int nd = 0;
    int64_t shape[WGT_MAX_DIMS], xs[WGT_MAX_DIMS], os[WGT_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1) continue;
        if (nd > 0 && xs[nd - 1] == x->strides[d] * out->shape[d] && os[nd - 1] == out->strides[d] * out->shape[d]) {
            shape[nd - 1] *= out->shape[d];
            xs[nd - 1] = x->strides[d];
            os[nd - 1] = out->strides[d];
            continue;
        }
        shape[nd] = out->shape[d];
        xs[nd] = x->strides[d];
        os[nd] = out->strides[d];
        nd++;
    }
    if (nd < 2 || nd - 2 > TP_MAX_BATCH) return false;
    int64_t expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (os[d] != expect) return false; /* strided output: the generic path */
        expect *= shape[d];
    }
    int c = nd - 1, r = -1;
    if (xs[c] == 1) return false; /* already a plain copy */
    for (int d = nd - 2; d >= 0 && r < 0; d--)
        if (xs[d] == 1) r = d;
    if (r < 0 || shape[r] < TP_MIN_SIDE || shape[c] < TP_MIN_SIDE) return false;

    memset(P, 0, sizeof(*P));
    tile_config(wg, &P->tile, &P->wg_y);
    tp_params *p = &P->params;
    uint64_t tile = (uint64_t)P->tile;
    p->rows = (uint32_t)shape[r];
    p->cols = (uint32_t)shape[c];
    p->in_col_stride = (uint32_t)xs[c];
    p->out_row_stride = (uint32_t)os[r];
    p->in_offset = (uint32_t)x->offset;
    p->out_offset = (uint32_t)out->offset;
    p->tiles_c = (uint32_t)(((uint64_t)shape[c] + tile - 1) / tile);
    p->tiles_r = (uint32_t)(((uint64_t)shape[r] + tile - 1) / tile);
    uint64_t tiles = (uint64_t)p->tiles_c * p->tiles_r;
    for (int d = nd - 2; d >= 0; d--) { /* batch dims, innermost first */
        if (d == r) continue;
        uint32_t *b = p->batch[p->n_batch++];
        b[0] = (uint32_t)shape[d];
        b[1] = (uint32_t)xs[d];  /* two's complement: the kernel's u32 sums wrap to the right index */
        b[2] = (uint32_t)os[d];
        tiles *= (uint64_t)shape[d];
    }
    /* 16-byte loads and stores (x^T of a [tokens, 384] activation: ~2.2 TB/s
     * one u32 a lane on an H200) when every quad is whole and aligned. */
    bool quads = P->tile == 32 && wg->knobs.transpose_vec4 && shape[r] % 4 == 0 && shape[c] % 4 == 0 &&
                 xs[c] % 4 == 0 && os[r] % 4 == 0 && webgpu_view_vec4_aligned(x) && webgpu_view_vec4_aligned(out);
    for (int d = 0; d < nd && quads; d++)
        if (d != r && d != c && (xs[d] % 4 != 0 || os[d] % 4 != 0)) quads = false;
    P->vec4 = quads;
    /* Every tile holds an element, so tiles <= numel <= 2^32; the 2-D grid caps it. */
    uint64_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    if (tiles > (uint64_t)UINT32_MAX || tiles > limit * limit) return false;
    p->n_tiles = (uint32_t)tiles;
    P->tiles = tiles;
    return true;
}

bool webgpu_transpose_applies(webgpu_backend *wg, const wgt_kernel_call *call)
{
    tp_plan P;
    return plan_transpose(wg, call, &P);
}

wgt_status webgpu_transpose_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    wgt_context *ctx = wg->base.ctx;
    const char *op = call->op_name ? call->op_name : "transpose";
    tp_plan P;
    if (!plan_transpose(wg, call, &P))
        return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: not a tiled transpose (call webgpu_transpose_applies first)", op);

    /* One pipeline per tile config serves f32 and i32 (bits are moved as u32). */
    char key[64];
    const char *kernel = P.vec4 ? "transpose_tiled_vec4" : "transpose_tiled";
    snprintf(key, sizeof key, "%s;b32;%dx%d", kernel, P.tile, P.wg_y);
    webgpu_pipeline *pipeline = webgpu_pipeline_find(wg, key);
    if (!pipeline) {
        const char *common = webgpu_kernel_source("transpose_common"), *body = webgpu_kernel_source(kernel);
        if (!common || !body) return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, kernel);
        char prelude[96];
        if (P.vec4)
            snprintf(prelude, sizeof prelude, "const WG: u32 = %du;\n", 32 * P.wg_y);
        else
            snprintf(prelude, sizeof prelude, "const TILE: u32 = %du;\nconst WG_Y: u32 = %du;\n", P.tile, P.wg_y);
        size_t n = strlen(prelude) + strlen(common) + strlen(body) + 2;
        char *source = malloc(n);
        if (!source) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        snprintf(source, n, "%s%s\n%s", prelude, common, body);
        /* checked = false: the kernel skips every position outside R x C and
         * plan_transpose keeps both views inside their storages. */
        wgt_status s = webgpu_pipeline_create(wg, key, source, "main", 1, 1, true, false, op, &pipeline);
        free(source);
        if (s != WGT_OK) return s;
    }

    uint32_t gx, gy;
    uint64_t row = wg->knobs.grid_limit; /* testing aid: fold into 2-D sooner */
    if (row > 0 && row < P.tiles && (P.tiles + row - 1) / row <= wg->limits.maxComputeWorkgroupsPerDimension) {
        gx = (uint32_t)row;
        gy = (uint32_t)((P.tiles + row - 1) / row);
    } else {
        wgt_status s = webgpu_grid(wg, P.tiles, &gx, &gy, op);
        if (s != WGT_OK) return s;
    }
    WGPUBuffer buffers[2] = {webgpu_view_buffer(&call->inputs[0]), webgpu_view_buffer(&call->outputs[0])};
    wgt_status s = webgpu_dispatch(wg, pipeline, buffers, 2, &P.params, sizeof P.params, gx, gy, 1, op);
    if (s == WGT_OK) atomic_fetch_add(&transposes, 1);
    if (s == WGT_OK && P.vec4) atomic_fetch_add(&transposes_vec4, 1);
    return s;
}
