/*
 * WebGPU indexing kernels: GATHER, SCATTER_ADD, TOPK (contracts in backend.h).
 * WGSL: kernels/indexing_gather.wgsl, indexing_scatter_add.wgsl,
 * indexing_scatter_{common,sort,sum}.wgsl and indexing_topk_{common,sort,merge}.wgsl.
 *
 * Every view is read through its shape, strides and offset, carried in the
 * parameter block (8 dims as array<vec4<..>, 2>); buffers are bound as 32-bit
 * words. Offsets are computed in i32, so a storage may hold at most 2^31 - 1
 * elements (supports() says no beyond that).
 *
 * GATHER     every dtype, with no temporary: packed dtypes (f16 2 per word,
 *            u8/bool 4 per word) are gathered in place, each invocation owning
 *            one 32-bit word of the contiguous output, so it is bit exact
 *            (NaN payloads, -0) and never needs a conversion kernel.
 * SCATTER_ADD f32 and i32, atomics on the output words (f32 by a
 *            compare-exchange loop: no float-atomic feature needed). An f32
 *            scatter whose index is constant off the axis (index_select's and
 *            embedding's backward) into a contiguous out is summed by sorted
 *            rows instead (indexing_scatter_{common,sort,sum}.wgsl): a
 *            stable radix sort of the entries by row, then one invocation
 *            per output element adds its row's entries in a fixed order. The
 *            atomic loop, with N = 16384 entries on V = 65 rows, spent most
 *            of its time retrying contended words; the sorted sum is also
 *            deterministic. WGT_SCATTER_SORTED=0 turns it off (for timing).
 * TOPK       f32, f16, i32, u8 compared natively through an order-preserving
 *            u32 key (exact for every dtype). Rows padded to P = 2^m:
 *            P <= 2048: one dispatch; a workgroup bitonic-sorts 2048 / P rows
 *            in workgroup memory. P > 2048: a bitonic sort of each whole row
 *            in a temporary of (key, id) pairs (rows go in batches of at most
 *            256 MiB of pairs): blocks of 2048 sorted in workgroup memory, then
 *            global and in-block merge passes, O(P log^2 P) work for any
 *            k <= N. The kernels produce the indices;
 *            values are a GATHER of x along the last axis by those indices
 *            (bit exact, any dtype).
 *
 * Out-of-range indices (outside [-D, D)) give 0 (gather) or are skipped
 * (scatter_add) and are reported without a read-back per op: the kernels
 * lower a device flag to the dispatch's check id, and the caller's next
 * read-back or synchronize (webgpu_backend.c's vtable) reads the flag
 * (webgpu_indexing_check) and fails with
 * WGT_ERR_INVALID_ARGUMENT naming the op, the index and the axis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#define INDEXING_THREADS 256u   /* workgroup size of every indexing kernel */
#define TOPK_BLOCK 2048u        /* pairs a workgroup sorts (16 KiB of workgroup memory) */
#define TOPK_PAIRS_MAX_BYTES (256u << 20) /* long-row sort buffer per pass (and the binding limit) */

/* Our index logic keeps every access inside the views, which the front-end
 * keeps inside their storages: implementation bounds checks are not needed. */
static const bool indexing_checked = false;

/* ------------------------------------------------------------ parameters */

typedef struct gather_params {
    uint32_t shape[WGT_MAX_DIMS];
    int32_t x_strides[WGT_MAX_DIMS];
    int32_t index_strides[WGT_MAX_DIMS];
    uint32_t ndim, axis, numel, elem_bytes;
    int32_t x_offset, index_offset;
    uint32_t out_offset, first_word, words;
    int32_t axis_len;
    uint32_t check_id;                  /* reported for an out-of-range index; NO_CHECK: none */
    uint32_t pad;
} gather_params;

typedef struct scatter_params {
    uint32_t shape[WGT_MAX_DIMS];
    int32_t index_strides[WGT_MAX_DIMS];
    int32_t src_strides[WGT_MAX_DIMS];
    int32_t out_strides[WGT_MAX_DIMS];
    uint32_t ndim, axis, numel;
    int32_t axis_len, index_offset, src_offset, out_offset;
    uint32_t check_id;
} scatter_params;

/* indexing_scatter_common.wgsl's Params (sorted scatter_add) */
typedef struct scatter_sorted_params {
    uint32_t col_shape[WGT_MAX_DIMS];
    int32_t src_strides[WGT_MAX_DIMS];
    int32_t out_strides[WGT_MAX_DIMS];
    uint32_t ndim, n, cols, axis_len;
    int32_t index_offset, index_stride, src_offset, src_stride, out_offset, out_stride;
    uint32_t check_id, tiles, shift, first, in_keys, out_keys, chunks, segs, pad, sorted;
} scatter_sorted_params;

typedef struct topk_params {
    uint32_t lead_shape[WGT_MAX_DIMS];
    int32_t x_strides[WGT_MAX_DIMS];
    int32_t out_strides[WGT_MAX_DIMS];
    uint32_t lead_ndim, n, k, rows;
    int32_t x_offset, x_stride, out_offset, out_stride;
    uint32_t padded, blocks_per_row, groups, dtype;
    uint32_t largest, stage, dist, first_row;
} topk_params;

_Static_assert(sizeof(gather_params) % 16 == 0 && sizeof(gather_params) <= WEBGPU_PARAMS_MAX, "gather params");
_Static_assert(sizeof(scatter_params) % 16 == 0 && sizeof(scatter_params) <= WEBGPU_PARAMS_MAX, "scatter params");
_Static_assert(sizeof(scatter_sorted_params) % 16 == 0 && sizeof(scatter_sorted_params) <= WEBGPU_PARAMS_MAX,
               "scatter sorted params");
_Static_assert(sizeof(topk_params) % 16 == 0 && sizeof(topk_params) <= WEBGPU_PARAMS_MAX, "topk params");

/* Dims [first, first + n) of v into shape (1 past n) and strides (0 past n). */
static void fill_dims(const wgt_tensor_view *v, int first, int n, uint32_t *shape, int32_t *strides)
{
    for (int d = 0; d < WGT_MAX_DIMS; d++) {
        if (shape) shape[d] = d < n ? (uint32_t)v->shape[first + d] : 1u;
        if (strides) strides[d] = d < n ? (int32_t)v->strides[first + d] : 0;
    }
}

/* A rank-0 view as the 1-element rank-1 view the kernels index along axis 0. */
static wgt_tensor_view as_rank_one(const wgt_tensor_view *v)
{
    wgt_tensor_view r = *v;
    if (r.ndim == 0) {
        r.ndim = 1;
        r.shape[0] = 1;
        r.strides[0] = 0;
    }
    return r;
}

/* Whether the kernels' i32 element arithmetic reaches every element of v. */
static bool view_fits(const wgt_tensor_view *v)
{
    if (!v->storage || v->ndim < 0 || v->ndim > WGT_MAX_DIMS) return false;
    if (v->storage->bytes / wgt_dtype_size(v->dtype) > INT32_MAX || v->offset < 0 || v->offset > INT32_MAX)
        return false;
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] > INT32_MAX || v->strides[d] > INT32_MAX || v->strides[d] < -INT32_MAX) return false;
    return true;
}

/* ------------------------------------------------------------- pipelines */

/* The cached pipeline key, compiled on first use from the named kernel files
 * (concatenated: a shared part, then the entry file). */
static wgt_status get_pipeline(webgpu_backend *wg, const char *key, const char *common, const char *file,
                               const char *entry, int n_read_only, int n_read_write, const char *op,
                               webgpu_pipeline **out)
{
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    const char *head = common ? webgpu_kernel_source(common) : "";
    const char *body = webgpu_kernel_source(file);
    if (!head || !body)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel source %s is not embedded", op,
                         head ? file : common);
    size_t n_head = strlen(head), n_body = strlen(body);
    char *source = malloc(n_head + n_body + 2);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    memcpy(source, head, n_head);
    source[n_head] = '\n';
    memcpy(source + n_head + 1, body, n_body + 1);
    wgt_status s = webgpu_pipeline_create(wg, key, source, entry, n_read_only, n_read_write, true, indexing_checked,
                                          op, out);
    free(source);
    return s;
}

/* Dispatches `workgroups` (folded into 2-D when over the per-dimension limit). */
static wgt_status dispatch_linear(webgpu_backend *wg, webgpu_pipeline *p, const WGPUBuffer *buffers, int n_buffers,
                                  const void *params, size_t params_size, uint64_t workgroups, const char *op)
{
    uint32_t gx, gy;
    wgt_status s = webgpu_grid(wg, workgroups, &gx, &gy, op);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, p, buffers, n_buffers, params, params_size, gx, gy, 1, op);
}

/* ================================================= out-of-range reports */

#define NO_CHECK 0xffffffffu            /* flag[0] when nothing is out of range */
static const uint32_t flag_clear[4] = {NO_CHECK, 0, 0, 0};

/* The flag buffer (created and cleared on first use). */
static WGPUBuffer index_flag(webgpu_backend *wg, const char *op)
{
    webgpu_block *flag = &wg->index_check.flag;
    if (!flag->buffer) {
        flag->buffer = webgpu_create_buffer(
            wg, sizeof(flag_clear), WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, op);
        if (!flag->buffer) return NULL;
        flag->size = flag->requested = sizeof(flag_clear);
        /* runs before the first use: nothing recorded so far binds this buffer */
        wgpuQueueWriteBuffer(wg->queue, flag->buffer, 0, flag_clear, sizeof(flag_clear));
    }
    return flag->buffer;
}

/* Names the dispatch about to be recorded for a report; returns its check id. */
static uint32_t index_check_register(webgpu_backend *wg, const char *op, int axis, int64_t axis_len)
{
    struct webgpu_index_check *c = &wg->index_check;
    int slot = c->pending < WEBGPU_INDEX_CHECKS ? c->pending : WEBGPU_INDEX_CHECKS - 1;
    snprintf(c->calls[slot].op, sizeof(c->calls[slot].op), "%s", op ? op : "indexing");
    c->calls[slot].axis = axis;
    c->calls[slot].axis_len = axis_len;
    c->pending++;
    return (uint32_t)slot;
}

wgt_status webgpu_indexing_check(webgpu_backend *wg)
{
    struct webgpu_index_check *c = &wg->index_check;
    if (c->pending == 0 || !c->flag.buffer) return WGT_OK;
    int pending = c->pending;
    c->pending = 0;
    uint32_t words[4];
    wgt_status s = webgpu_storage_read(&wg->base, &c->flag, 0, words, sizeof(words));
    if (s != WGT_OK || words[0] == NO_CHECK) return s;
    s = webgpu_storage_write(&wg->base, &c->flag, 0, flag_clear, sizeof(flag_clear));
    if (s != WGT_OK) return s;
    int slot = words[0] < WEBGPU_INDEX_CHECKS ? (int)words[0] : WEBGPU_INDEX_CHECKS - 1;
    long long D = (long long)c->calls[slot].axis_len;
    /* the last slot is shared: it names the latest of the dispatches beyond it */
    char shared[96] = "";
    if (pending > WEBGPU_INDEX_CHECKS && slot == WEBGPU_INDEX_CHECKS - 1)
        snprintf(shared, sizeof shared, " (or in one of the %d indexing ops recorded just before it)",
                 pending - WEBGPU_INDEX_CHECKS);
    return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT,
                     "%s: index %d is out of range for axis %d of size %lld (valid: -%lld .. %lld)%s; found on the "
                     "device, reported at the next read-back or synchronize",
                     c->calls[slot].op, (int32_t)words[1], c->calls[slot].axis, D, D, D - 1, shared);
}

void webgpu_indexing_destroy(webgpu_backend *wg)
{
    if (wg->index_check.flag.buffer) {
        wgpuBufferDestroy(wg->index_check.flag.buffer);
        wgpuBufferRelease(wg->index_check.flag.buffer);
    }
    memset(&wg->index_check, 0, sizeof(wg->index_check));
}

/* ================================================================ GATHER */
/* Mirrors struct Params of indexing_gather_rows.wgsl. */
typedef struct gather_rows_params {
    uint32_t quads, row_quads, x_offset, x_row;
    uint32_t out_offset;
    int32_t index_offset, index_stride, rows;
    uint32_t check_id, pad0, pad1, pad2;
} gather_rows_params;

/* Whole rows (kernels/indexing_gather_rows.wgsl): index_select / embedding
 * along dim 0 of a 2-D table of 4-byte elements with contiguous rows of C % 4
 * == 0, the index broadcast along C, out contiguous, everything 16-byte
 * aligned. The GPT's embedding took 46 us a step in the generic kernel (H200
 * profile, 16384 rows of 384), for 25 MB written. false (*s untouched) where
 * that does not apply. */
static bool run_gather_rows(webgpu_backend *wg, const wgt_tensor_view *x, const wgt_tensor_view *index,
                            const wgt_tensor_view *out, int axis, bool report, const char *op, wgt_status *s)
{
    if (axis != 0 || x->ndim != 2 || out->ndim != 2 || index->ndim != 2 || wgt_dtype_size(x->dtype) != 4 ||
        x->strides[1] != 1 || x->strides[0] % 4 != 0 || x->strides[0] < 0 || out->shape[1] % 4 != 0 ||
        index->strides[1] != 0 || !wgt_view_is_contiguous(out) || !webgpu_view_vec4_aligned(x) ||
        !webgpu_view_vec4_aligned(out))
        return false;
    int64_t quads = wgt_shape_numel(2, out->shape) / 4;
    if (quads > UINT32_MAX || x->shape[0] > INT32_MAX || index->strides[0] > INT32_MAX) return false;
    gather_rows_params params;
    memset(&params, 0, sizeof(params));
    params.quads = (uint32_t)quads;
    params.row_quads = (uint32_t)(out->shape[1] / 4);
    params.x_offset = (uint32_t)(x->offset / 4);
    params.x_row = (uint32_t)(x->strides[0] / 4);
    params.out_offset = (uint32_t)(out->offset / 4);
    params.index_offset = (int32_t)index->offset;
    params.index_stride = (int32_t)index->strides[0];
    params.rows = (int32_t)x->shape[0];
    webgpu_pipeline *p;
    if ((*s = get_pipeline(wg, "indexing_gather_rows", NULL, "indexing_gather_rows", "main", 2, 2, op, &p)) != WGT_OK)
        return true;
    WGPUBuffer flag = index_flag(wg, op);
    if (!flag) {
        *s = wgt_context_status(wg->base.ctx);
        return true;
    }
    params.check_id = report ? index_check_register(wg, op, axis, x->shape[axis]) : NO_CHECK;
    WGPUBuffer buffers[4] = {webgpu_view_buffer(x), webgpu_view_buffer(index), webgpu_view_buffer(out), flag};
    *s = dispatch_linear(wg, p, buffers, 4, &params, sizeof(params), (quads + INDEXING_THREADS - 1) / INDEXING_THREADS,
                         op);
    return true;
}

/* x [.., D, ..], index i32 [out's shape] -> out contiguous (kernels/indexing_gather.wgsl) */

static wgt_status run_gather(webgpu_backend *wg, const wgt_tensor_view *x_in, const wgt_tensor_view *index_in,
                             const wgt_tensor_view *out_in, int axis, bool report, const char *op)
{
    wgt_tensor_view x = as_rank_one(x_in), index = as_rank_one(index_in), out = as_rank_one(out_in);
    int64_t numel = wgt_shape_numel(out.ndim, out.shape);
    if (numel == 0) return WGT_OK;
    wgt_status s_rows;
    if (wg->knobs.gather_rows && run_gather_rows(wg, &x, &index, &out, axis, report, op, &s_rows)) return s_rows;
    gather_params params;
    memset(&params, 0, sizeof(params));
    fill_dims(&out, 0, out.ndim, params.shape, NULL);
    fill_dims(&x, 0, x.ndim, NULL, params.x_strides);
    fill_dims(&index, 0, index.ndim, NULL, params.index_strides);
    uint32_t elem_bytes = (uint32_t)wgt_dtype_size(x.dtype);
    uint64_t first_byte = (uint64_t)out.offset * elem_bytes, end_byte = first_byte + (uint64_t)numel * elem_bytes;
    params.ndim = (uint32_t)out.ndim;
    params.axis = (uint32_t)axis;
    params.numel = (uint32_t)numel;
    params.elem_bytes = elem_bytes;
    params.x_offset = (int32_t)x.offset;
    params.index_offset = (int32_t)index.offset;
    params.out_offset = (uint32_t)out.offset;
    params.first_word = (uint32_t)(first_byte / 4);
    params.words = (uint32_t)((end_byte + 3) / 4 - first_byte / 4);
    params.axis_len = (int32_t)x.shape[axis];

    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, "indexing_gather", NULL, "indexing_gather", "main", 2, 2, op, &p);
    if (s != WGT_OK) return s;
    WGPUBuffer flag = index_flag(wg, op);
    if (!flag) return wgt_context_status(wg->base.ctx);
    /* topk's own indices are in range: only user indices are reported */
    params.check_id = report ? index_check_register(wg, op, axis, x.shape[axis]) : NO_CHECK;
    WGPUBuffer buffers[4] = {webgpu_view_buffer(&x), webgpu_view_buffer(&index), webgpu_view_buffer(&out), flag};
    return dispatch_linear(wg, p, buffers, 4, &params, sizeof(params),
                           (params.words + INDEXING_THREADS - 1) / INDEXING_THREADS, op);
}

/* =========================================================== SCATTER_ADD */
/* index i32 [.., n, ..], src [index's shape], out [.., D, ..] (holds dst):
 * out[c with c[axis] = index[c]] += src[c] (kernels/indexing_scatter_add.wgsl) */

#define SCATTER_SORT_THREADS 256u /* entries per sort tile = the radix (8-bit digits) */
#define SCATTER_SUM_THREADS 64u   /* columns per sum workgroup */
#define SCATTER_SEG 64u           /* sorted positions per segment */

/* Whether the sorted path takes this call: f32 into a contiguous out (so every
 * output element is owned by one invocation), an index constant off the axis
 * (index_select's broadcast index: stride 0 or size 1 on every other dim), and
 * temporaries within the binding limit. WGT_SCATTER_SORTED=0 says no (the
 * atomic kernel, for comparison; read when the context was created). */
static bool scatter_sorted_applies(webgpu_backend *wg, const wgt_tensor_view *index, const wgt_tensor_view *out,
                                   int axis)
{
    if (!wg->knobs.scatter_sorted) return false;
    if (out->dtype != WGT_F32 || !wgt_view_is_contiguous(out)) return false;
    for (int d = 0; d < index->ndim; d++)
        if (d != axis && index->shape[d] != 1 && index->strides[d] != 0) return false;
    uint64_t n = (uint64_t)index->shape[axis], cols = (uint64_t)wgt_shape_numel(index->ndim, index->shape) / n;
    uint64_t tiles = (n + SCATTER_SORT_THREADS - 1) / SCATTER_SORT_THREADS;
    uint64_t limit = wg->limits.maxStorageBufferBindingSize;
    uint64_t segs = (n + SCATTER_SEG - 1) / SCATTER_SEG;
    /* pairs 4 N words, hist 256 tiles, part 2 segs M (indexed in i32) */
    return 16 * n <= limit && 4 * SCATTER_SORT_THREADS * tiles <= limit && 8 * segs * cols <= limit &&
           2 * segs * cols <= INT32_MAX && n <= UINT32_MAX / 4 && (uint64_t)out->shape[axis] < UINT32_MAX;
}

/* index [.., N, ..] (constant off the axis), src [index's shape], out
 * contiguous [.., V, ..]: the sort passes and the two sums of
 * indexing_scatter_{sort,sum}.wgsl (pairs, hist and part are temporaries). */
static wgt_status run_scatter_add_sorted(webgpu_backend *wg, const wgt_tensor_view *index, const wgt_tensor_view *src,
                                         const wgt_tensor_view *out, int axis, const char *op)
{
    uint32_t n = (uint32_t)index->shape[axis], V = (uint32_t)out->shape[axis];
    uint32_t cols = (uint32_t)(wgt_shape_numel(index->ndim, index->shape) / n);
    scatter_sorted_params params;
    memset(&params, 0, sizeof(params));
    fill_dims(index, 0, index->ndim, params.col_shape, NULL);
    fill_dims(src, 0, src->ndim, NULL, params.src_strides);
    fill_dims(out, 0, out->ndim, NULL, params.out_strides);
    params.col_shape[axis] = 1; /* the axis is walked by the sorted ids, the rest are columns */
    params.src_strides[axis] = params.out_strides[axis] = 0;
    params.ndim = (uint32_t)index->ndim;
    params.n = n;
    params.cols = cols;
    params.axis_len = V;
    params.index_offset = (int32_t)index->offset;
    params.index_stride = (int32_t)index->strides[axis];
    params.src_offset = (int32_t)src->offset;
    params.src_stride = (int32_t)src->strides[axis];
    params.out_offset = (int32_t)out->offset;
    params.out_stride = (int32_t)out->strides[axis];
    params.tiles = (n + SCATTER_SORT_THREADS - 1) / SCATTER_SORT_THREADS;
    params.chunks = (cols + SCATTER_SUM_THREADS - 1) / SCATTER_SUM_THREADS;
    params.segs = (n + SCATTER_SEG - 1) / SCATTER_SEG;

    webgpu_pipeline *hist_p = NULL, *scan_p = NULL, *scatter_p = NULL, *seg_p = NULL, *rows_p = NULL;
    wgt_status s = get_pipeline(wg, "indexing_scatter_sort_histogram", "indexing_scatter_common",
                                "indexing_scatter_sort", "sort_histogram", 1, 3, op, &hist_p);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_scatter_sort_scan", "indexing_scatter_common", "indexing_scatter_sort",
                         "sort_scan", 1, 3, op, &scan_p);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_scatter_sort_scatter", "indexing_scatter_common", "indexing_scatter_sort",
                         "sort_scatter", 1, 3, op, &scatter_p);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_scatter_sum_segments", "indexing_scatter_common", "indexing_scatter_sum",
                         "sum_segments", 2, 2, op, &seg_p);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_scatter_sum_rows", "indexing_scatter_common", "indexing_scatter_sum",
                         "sum_rows", 2, 2, op, &rows_p);
    if (s != WGT_OK) return s;
    WGPUBuffer flag = index_flag(wg, op);
    if (!flag) return wgt_context_status(wg->base.ctx);

    int64_t pair_words = 4 * (int64_t)n, hist_words = (int64_t)SCATTER_SORT_THREADS * params.tiles;
    int64_t part_words = 2 * (int64_t)params.segs * cols; /* a head and a tail piece per segment and column */
    wgt_tensor_view pairs, hist, part;
    memset(&hist, 0, sizeof(hist));
    memset(&part, 0, sizeof(part));
    s = webgpu_temp_alloc(wg, WGT_I32, 1, &pair_words, &pairs);
    if (s == WGT_OK) s = webgpu_temp_alloc(wg, WGT_I32, 1, &hist_words, &hist);
    if (s == WGT_OK) s = webgpu_temp_alloc(wg, WGT_F32, 1, &part_words, &part);

    /* LSD passes over 8-bit digits of keys in [0, V] (V: out of range) */
    int passes = 1;
    while (passes < 4 && ((uint64_t)V >> (8 * passes)) != 0) passes++;
    WGPUBuffer sort_buffers[4] = {webgpu_view_buffer(index), NULL, NULL, flag};
    if (s == WGT_OK) {
        sort_buffers[1] = webgpu_view_buffer(&pairs);
        sort_buffers[2] = webgpu_view_buffer(&hist);
        params.check_id = index_check_register(wg, op, axis, V);
    }
    for (int pass = 0; s == WGT_OK && pass < passes; pass++) {
        params.shift = 8u * (uint32_t)pass;
        params.first = pass == 0;
        params.in_keys = pass % 2 ? 0 : 2 * n; /* pass 0 reads the index, not pairs */
        params.out_keys = pass % 2 ? 2 * n : 0;
        s = dispatch_linear(wg, hist_p, sort_buffers, 4, &params, sizeof(params), params.tiles, op);
        if (s == WGT_OK) s = webgpu_dispatch(wg, scan_p, sort_buffers, 4, &params, sizeof(params), 1, 1, 1, op);
        if (s == WGT_OK)
            s = dispatch_linear(wg, scatter_p, sort_buffers, 4, &params, sizeof(params), params.tiles, op);
    }
    params.sorted = params.out_keys;
    WGPUBuffer sum_buffers[4] = {webgpu_view_buffer(src), NULL, NULL, webgpu_view_buffer(out)};
    if (s == WGT_OK) {
        sum_buffers[1] = webgpu_view_buffer(&pairs);
        sum_buffers[2] = webgpu_view_buffer(&part);
    }
    uint64_t sum_groups = (uint64_t)params.segs * params.chunks;
    if (s == WGT_OK) s = dispatch_linear(wg, seg_p, sum_buffers, 4, &params, sizeof(params), sum_groups, op);
    if (s == WGT_OK) s = dispatch_linear(wg, rows_p, sum_buffers, 4, &params, sizeof(params), sum_groups, op);
    /* safe right after recording: only later-recorded work can reuse the blocks */
    webgpu_temp_release(wg, &part);
    webgpu_temp_release(wg, &hist);
    webgpu_temp_release(wg, &pairs);
    return s;
}

static wgt_status run_scatter_add(webgpu_backend *wg, const wgt_kernel_call *call)
{
    wgt_tensor_view index = as_rank_one(&call->inputs[0]), src = as_rank_one(&call->inputs[1]);
    wgt_tensor_view out = as_rank_one(&call->outputs[0]);
    int64_t numel = wgt_shape_numel(index.ndim, index.shape);
    if (numel == 0 || wgt_shape_numel(out.ndim, out.shape) == 0) return WGT_OK;
    if (scatter_sorted_applies(wg, &index, &out, call->axis))
        return run_scatter_add_sorted(wg, &index, &src, &out, call->axis, call->op_name);
    scatter_params params;
    memset(&params, 0, sizeof(params));
    fill_dims(&index, 0, index.ndim, params.shape, params.index_strides);
    fill_dims(&src, 0, src.ndim, NULL, params.src_strides);
    fill_dims(&out, 0, out.ndim, NULL, params.out_strides);
    params.ndim = (uint32_t)index.ndim;
    params.axis = (uint32_t)call->axis;
    params.numel = (uint32_t)numel;
    params.axis_len = (int32_t)out.shape[call->axis];
    params.index_offset = (int32_t)index.offset;
    params.src_offset = (int32_t)src.offset;
    params.out_offset = (int32_t)out.offset;

    bool is_f32 = out.dtype == WGT_F32;
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, is_f32 ? "indexing_scatter_add_f32" : "indexing_scatter_add_i32", NULL,
                                "indexing_scatter_add", is_f32 ? "scatter_add_f32" : "scatter_add_i32", 2, 2,
                                call->op_name, &p);
    if (s != WGT_OK) return s;
    WGPUBuffer flag = index_flag(wg, call->op_name);
    if (!flag) return wgt_context_status(wg->base.ctx);
    params.check_id = index_check_register(wg, call->op_name, call->axis, out.shape[call->axis]);
    WGPUBuffer buffers[4] = {webgpu_view_buffer(&index), webgpu_view_buffer(&src), webgpu_view_buffer(&out), flag};
    return dispatch_linear(wg, p, buffers, 4, &params, sizeof(params),
                           ((uint64_t)numel + INDEXING_THREADS - 1) / INDEXING_THREADS, call->op_name);
}

/* ================================================================== TOPK */
/* x [rows.., N] -> values [rows.., k] (x's dtype), indices i32 [rows.., k]
 * (kernels/indexing_topk_*.wgsl, then GATHER for the values) */

static uint32_t topk_dtype_code(wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F32: return 0;
    case WGT_F16: return 1;
    case WGT_I32: return 2;
    default: return 3; /* WGT_U8 */
    }
}

/* Records the sort passes that write the indices of the top k of each row. */
static wgt_status topk_indices(webgpu_backend *wg, const wgt_tensor_view *x, const wgt_tensor_view *indices, int64_t k,
                               bool largest, const char *op)
{
    int last = x->ndim - 1;
    int64_t n = x->shape[last], rows = wgt_shape_numel(last, x->shape);
    uint64_t padded = 1;
    while (padded < (uint64_t)n) padded <<= 1;

    topk_params params;
    memset(&params, 0, sizeof(params));
    fill_dims(x, 0, last, params.lead_shape, params.x_strides);
    fill_dims(indices, 0, last, NULL, params.out_strides);
    params.lead_ndim = (uint32_t)last;
    params.n = (uint32_t)n;
    params.k = (uint32_t)k;
    params.rows = (uint32_t)rows;
    params.x_offset = (int32_t)x->offset;
    params.x_stride = (int32_t)x->strides[last];
    params.out_offset = (int32_t)indices->offset;
    params.out_stride = (int32_t)indices->strides[last];
    params.padded = (uint32_t)padded;
    params.dtype = topk_dtype_code(x->dtype);
    params.largest = largest ? 1u : 0u;

    webgpu_pipeline *p;
    wgt_status s;
    if (padded <= TOPK_BLOCK) {
        uint64_t rows_per_group = TOPK_BLOCK / padded;
        params.blocks_per_row = 1;
        params.groups = (uint32_t)(((uint64_t)rows + rows_per_group - 1) / rows_per_group);
        s = get_pipeline(wg, "indexing_topk_sort_rows", "indexing_topk_common", "indexing_topk_sort", "sort_rows", 1,
                         1, op, &p);
        if (s != WGT_OK) return s;
        WGPUBuffer buffers[2] = {webgpu_view_buffer(x), webgpu_view_buffer(indices)};
        return dispatch_linear(wg, p, buffers, 2, &params, sizeof(params), params.groups, op);
    }

    /* Long rows: a bitonic sort of every whole row through a temporary of
     * (key, id) pairs, for as many rows per pass as the buffer holds. */
    uint64_t limit = wg->limits.maxStorageBufferBindingSize < TOPK_PAIRS_MAX_BYTES
                         ? wg->limits.maxStorageBufferBindingSize
                         : TOPK_PAIRS_MAX_BYTES;
    uint64_t row_bytes = padded * 8, rows_per_pass = limit / row_bytes;
    if (rows_per_pass == 0)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED,
                         "%s: rows of %lld elements need a %llu-byte sort buffer, over this device's storage "
                         "binding limit of %llu bytes",
                         op, (long long)n, (unsigned long long)row_bytes, (unsigned long long)limit);
    if (rows_per_pass > (uint64_t)rows) rows_per_pass = (uint64_t)rows;
    webgpu_pipeline *blocks = NULL, *global = NULL, *local = NULL;
    s = get_pipeline(wg, "indexing_topk_sort_blocks", "indexing_topk_common", "indexing_topk_sort", "sort_blocks", 1,
                     1, op, &blocks);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_topk_merge_global", "indexing_topk_common", "indexing_topk_merge",
                         "merge_global", 0, 2, op, &global);
    if (s == WGT_OK)
        s = get_pipeline(wg, "indexing_topk_merge_local", "indexing_topk_common", "indexing_topk_merge", "merge_local",
                         0, 2, op, &local);
    if (s != WGT_OK) return s;
    int64_t words = (int64_t)(rows_per_pass * padded * 2);
    wgt_tensor_view pairs;
    s = webgpu_temp_alloc(wg, WGT_I32, 1, &words, &pairs);
    if (s != WGT_OK) return s;
    params.blocks_per_row = (uint32_t)(padded / TOPK_BLOCK);
    for (uint64_t first = 0; s == WGT_OK && first < (uint64_t)rows; first += rows_per_pass) {
        uint64_t pass_rows = (uint64_t)rows - first < rows_per_pass ? (uint64_t)rows - first : rows_per_pass;
        params.first_row = (uint32_t)first;
        params.rows = (uint32_t)pass_rows;
        params.groups = (uint32_t)(pass_rows * params.blocks_per_row);
        params.stage = params.dist = 0;
        WGPUBuffer sort_buffers[2] = {webgpu_view_buffer(x), webgpu_view_buffer(&pairs)};
        s = dispatch_linear(wg, blocks, sort_buffers, 2, &params, sizeof(params), params.groups, op);
        WGPUBuffer merge_buffers[2] = {webgpu_view_buffer(&pairs), webgpu_view_buffer(indices)};
        uint64_t pair_groups = (pass_rows * padded / 2 + INDEXING_THREADS - 1) / INDEXING_THREADS;
        for (uint64_t stage = 2 * TOPK_BLOCK; s == WGT_OK && stage <= padded; stage <<= 1) {
            params.stage = (uint32_t)stage;
            for (uint64_t dist = stage / 2; s == WGT_OK && dist >= TOPK_BLOCK; dist >>= 1) {
                params.dist = (uint32_t)dist;
                s = dispatch_linear(wg, global, merge_buffers, 2, &params, sizeof(params), pair_groups, op);
            }
            if (s == WGT_OK)
                s = dispatch_linear(wg, local, merge_buffers, 2, &params, sizeof(params), params.groups, op);
        }
    }
    webgpu_temp_release(wg, &pairs); /* safe: only later-recorded work can reuse the block */
    return s;
}

static wgt_status run_topk(webgpu_backend *wg, const wgt_kernel_call *call)
{
    wgt_tensor_view x = as_rank_one(&call->inputs[0]);
    wgt_tensor_view values = as_rank_one(&call->outputs[0]), indices = as_rank_one(&call->outputs[1]);
    if (call->k == 0 || wgt_shape_numel(x.ndim - 1, x.shape) == 0) return WGT_OK;
    wgt_status s = topk_indices(wg, &x, &indices, call->k, call->largest, call->op_name);
    if (s != WGT_OK) return s;
    return run_gather(wg, &x, &indices, &values, x.ndim - 1, false, call->op_name);
}

/* ================================================================ seam */

bool webgpu_indexing_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    switch (call->kind) {
    case WGT_KERNEL_GATHER: {
        if (call->n_inputs < 2 || call->n_outputs < 1) return false;
        const wgt_tensor_view *x = &call->inputs[0], *index = &call->inputs[1], *out = &call->outputs[0];
        int ndim = x->ndim ? x->ndim : 1;
        return index->dtype == WGT_I32 && out->dtype == x->dtype && call->axis >= 0 && call->axis < ndim &&
               wgt_view_is_contiguous(out) && view_fits(x) && view_fits(index) && view_fits(out);
    }
    case WGT_KERNEL_SCATTER_ADD: {
        if (call->n_inputs < 2 || call->n_outputs < 1) return false;
        const wgt_tensor_view *index = &call->inputs[0], *src = &call->inputs[1], *out = &call->outputs[0];
        int ndim = out->ndim ? out->ndim : 1;
        return (out->dtype == WGT_F32 || out->dtype == WGT_I32) && src->dtype == out->dtype &&
               index->dtype == WGT_I32 && call->axis >= 0 && call->axis < ndim && view_fits(index) &&
               view_fits(src) && view_fits(out);
    }
    case WGT_KERNEL_TOPK: {
        if (call->n_inputs < 1 || call->n_outputs < 2) return false;
        const wgt_tensor_view *x = &call->inputs[0], *values = &call->outputs[0], *indices = &call->outputs[1];
        bool dtype_ok = x->dtype == WGT_F32 || x->dtype == WGT_F16 || x->dtype == WGT_I32 || x->dtype == WGT_U8;
        return dtype_ok && values->dtype == x->dtype && indices->dtype == WGT_I32 &&
               wgt_view_is_contiguous(values) && view_fits(x) && view_fits(values) && view_fits(indices);
    }
    default: return false;
    }
}

wgt_status webgpu_indexing_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    switch (call->kind) {
    case WGT_KERNEL_GATHER:
        return run_gather(wg, &call->inputs[0], &call->inputs[1], &call->outputs[0], call->axis, true, call->op_name);
    case WGT_KERNEL_SCATTER_ADD: return run_scatter_add(wg, call);
    case WGT_KERNEL_TOPK: return run_topk(wg, call);
    default:
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel kind %d is not an indexing kernel", call->op_name,
                         (int)call->kind);
    }
}
