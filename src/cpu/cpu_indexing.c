/*
 * Indexing kernels: GATHER, SCATTER_ADD, TOPK.
 *
 * GATHER and SCATTER_ADD walk every position of the index tensor except along
 * axis (the "other" coordinates), then run along axis. Elements with different
 * other coordinates never touch the same output element, so those positions
 * split across threads, and a scatter adds into each output element in the
 * same order as a serial loop: the result is deterministic.
 */
#include <stdlib.h>

#include <omp.h>

#include "cpu/cpu_internal.h"

/* A rank-0 view as the 1-element, rank-1 view these kernels index along axis 0. */
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

static void copy_element(char *dst, const char *src, size_t size)
{
    switch (size) {
    case 4: memcpy(dst, src, 4); break;
    case 2: memcpy(dst, src, 2); break;
    default: *dst = *src; break;
    }
}

/* Index value wrapped into [0, length), or -1 when outside [-length, length). */
static int64_t wrap_index(int32_t index, int64_t length)
{
    int64_t i = index < 0 ? (int64_t)index + length : index;
    return i >= 0 && i < length ? i : -1;
}

/* Walk over every dim of shape but axis, for views[0..n). */
typedef struct along_axis {
    cpu_walk others;
    int64_t n_others, length;        /* positions off axis; elements along axis */
    int64_t axis_strides[3];
} along_axis;

static void along_axis_init(along_axis *a, const wgt_tensor_view *shape_of, int axis, int n, const wgt_tensor_view *const *views)
{
    int64_t shape[WGT_MAX_DIMS] = {0}, strides[3][WGT_MAX_DIMS] = {{0}};
    const int64_t *stride_rows[3];
    int m = 0;
    for (int d = 0; d < shape_of->ndim; d++) {
        if (d == axis) continue;
        shape[m] = shape_of->shape[d];
        for (int v = 0; v < n; v++) strides[v][m] = views[v]->strides[d];
        m++;
    }
    for (int v = 0; v < n; v++) {
        stride_rows[v] = strides[v];
        a->axis_strides[v] = views[v]->strides[axis];
    }
    cpu_walk_init(&a->others, m, shape, n, stride_rows);
    a->n_others = cpu_numel(m, shape);
    a->length = shape_of->shape[axis];
}

/* index shape may be smaller than x / out, except along axis. */
static bool fits_inside(const wgt_tensor_view *small, const wgt_tensor_view *big, int axis)
{
    if (small->ndim != big->ndim) return false;
    for (int d = 0; d < small->ndim; d++) {
        if (d != axis && small->shape[d] > big->shape[d]) return false;
    }
    return true;
}

static bool same_shape(const wgt_tensor_view *a, const wgt_tensor_view *b)
{
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d]) return false;
    }
    return true;
}

static wgt_status shape_error(cpu_backend *b, const wgt_kernel_call *call, const char *what, const wgt_tensor_view *v1,
                              const wgt_tensor_view *v2)
{
    char s1[96], s2[96];
    return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "%s: %s vs %s (axis %d)", what, cpu_shape_string(v1->ndim, v1->shape, s1, sizeof s1),
                    cpu_shape_string(v2->ndim, v2->shape, s2, sizeof s2), call->axis);
}

/* ================================================================ GATHER */
/* x: [.., D, ..], index i32: [.., n, ..] -> out: index's shape,
 * out[c] = x[c with c[axis] = index[c]], 0 where the index is outside [-D, D),
 * and then the call fails with WGT_ERR_INVALID_ARGUMENT naming the index (the
 * WebGPU backend reports the same at the next read-back or synchronize). */

/* The error for an index outside [-D, D) found by a kernel. */
static wgt_status out_of_range(cpu_backend *b, const wgt_kernel_call *call, int32_t index, int axis, int64_t D)
{
    return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "index %d is out of range for axis %d of size %lld (valid: -%lld .. %lld)",
                    index, axis, (long long)D, (long long)D, (long long)D - 1);
}

wgt_status cpu_run_gather(cpu_backend *b, const wgt_kernel_call *call)
{
    wgt_tensor_view x = as_rank_one(&call->inputs[0]), index = as_rank_one(&call->inputs[1]);
    wgt_tensor_view out = as_rank_one(&call->outputs[0]);
    int axis = call->axis;
    if (axis < 0 || axis >= x.ndim) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "axis %d out of range for rank %d", axis, x.ndim);
    if (!same_shape(&out, &index)) return shape_error(b, call, "out and index shapes differ", &out, &index);
    if (!fits_inside(&index, &x, axis)) return shape_error(b, call, "index larger than x off the axis", &index, &x);
    if (cpu_numel(out.ndim, out.shape) == 0) return WGT_OK;
    /* x of no elements (D = 0, as index has elements off the axis): every
     * index is out of range and x is never read, but its strides (any sizes
     * are valid for a view of no elements) would still be walked, whose
     * offsets can overflow (the api_fuzzer's seed 271 under UBSan) */
    if (x.shape[axis] == 0)
        for (int d = 0; d < x.ndim; d++) x.strides[d] = 0;

    const wgt_tensor_view *views[3] = {&out, &index, &x};
    along_axis a;
    along_axis_init(&a, &out, axis, 3, views);
    int64_t D = x.shape[axis];
    size_t size = cpu_dtype_size(x.dtype);
    char *out_data = cpu_view_data(&out);
    const int32_t *index_data = (const int32_t *)cpu_view_data(&index);
    const char *x_data = cpu_view_data(&x);
    bool parallel = b->threads > 1 && a.n_others > 1 && a.n_others * a.length > CPU_PARALLEL_THRESHOLD;
    bool bad = false;
    int32_t bad_index = 0;
#pragma omp parallel num_threads(b->threads) if (parallel)
    {
        int team = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t first = a.n_others * me / team, last = a.n_others * (me + 1) / team;
        cpu_walk_position pos;
        if (first < last) cpu_walk_seek(&a.others, first, &pos);
        for (int64_t o = first; o < last; o++) {
            for (int64_t j = 0; j < a.length; j++) {
                char *dst = out_data + (pos.offsets[0] + j * a.axis_strides[0]) * (int64_t)size;
                int32_t raw = index_data[pos.offsets[1] + j * a.axis_strides[1]];
                int64_t i = wrap_index(raw, D);
                if (i < 0) {
                    memset(dst, 0, size);
#pragma omp critical(cpu_index_range)
                    {
                        bad = true;
                        bad_index = raw;
                    }
                } else {
                    copy_element(dst, x_data + (pos.offsets[2] + i * a.axis_strides[2]) * (int64_t)size, size);
                }
            }
            if (o + 1 < last) cpu_walk_advance(&a.others, &pos, 1);
        }
    }
    return bad ? out_of_range(b, call, bad_index, axis, D) : WGT_OK;
}

/* =========================================================== SCATTER_ADD */
/* index i32: [.., n, ..], src: index's shape, out: [.., D, ..] (holds dst),
 * out[c with c[axis] = index[c]] += src[c]; indices outside [-D, D) are
 * skipped, and then the call fails as GATHER's does */

wgt_status cpu_run_scatter_add(cpu_backend *b, const wgt_kernel_call *call)
{
    wgt_tensor_view index = as_rank_one(&call->inputs[0]), src = as_rank_one(&call->inputs[1]);
    wgt_tensor_view out = as_rank_one(&call->outputs[0]);
    int axis = call->axis;
    if (axis < 0 || axis >= out.ndim) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "axis %d out of range for rank %d", axis, out.ndim);
    if (!same_shape(&src, &index)) return shape_error(b, call, "src and index shapes differ", &src, &index);
    if (!fits_inside(&index, &out, axis)) return shape_error(b, call, "index larger than out off the axis", &index, &out);
    if (cpu_numel(index.ndim, index.shape) == 0 || cpu_numel(out.ndim, out.shape) == 0) return WGT_OK;

    const wgt_tensor_view *views[3] = {&index, &src, &out};
    along_axis a;
    along_axis_init(&a, &index, axis, 3, views);
    int64_t D = out.shape[axis];
    const int32_t *index_data = (const int32_t *)cpu_view_data(&index);
    const char *src_data = cpu_view_data(&src);
    char *out_data = cpu_view_data(&out);
    bool is_float = out.dtype == WGT_F32;
    bool parallel = b->threads > 1 && a.n_others > 1 && a.n_others * a.length > CPU_PARALLEL_THRESHOLD;
    bool bad = false;
    int32_t bad_index = 0;
#pragma omp parallel num_threads(b->threads) if (parallel)
    {
        int team = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t first = a.n_others * me / team, last = a.n_others * (me + 1) / team;
        cpu_walk_position pos;
        if (first < last) cpu_walk_seek(&a.others, first, &pos);
        for (int64_t o = first; o < last; o++) {
            for (int64_t j = 0; j < a.length; j++) {
                int32_t raw = index_data[pos.offsets[0] + j * a.axis_strides[0]];
                int64_t i = wrap_index(raw, D);
                if (i < 0) {
#pragma omp critical(cpu_index_range)
                    {
                        bad = true;
                        bad_index = raw;
                    }
                    continue;
                }
                int64_t from = pos.offsets[1] + j * a.axis_strides[1], to = pos.offsets[2] + i * a.axis_strides[2];
                if (is_float) ((float *)out_data)[to] += ((const float *)src_data)[from];
                else ((int32_t *)out_data)[to] = (int32_t)((uint32_t)((int32_t *)out_data)[to] + (uint32_t)((const int32_t *)src_data)[from]);
            }
            if (o + 1 < last) cpu_walk_advance(&a.others, &pos, 1);
        }
    }
    return bad ? out_of_range(b, call, bad_index, axis, D) : WGT_OK;
}

/* ================================================================== TOPK */
/* x: [..., N] -> values: [..., k] (x's dtype), indices i32: [..., k], along the
 * last axis. Largest first (smallest first if !largest); NaN is larger than
 * everything; equal values go in index order. */

typedef struct ranked {
    double value;
    int64_t index;
} ranked;

/* Whether a goes before b: a total order, so any sort gives the same answer. */
static bool ranks_before(const ranked *a, const ranked *b, bool largest)
{
    bool a_nan = a->value != a->value, b_nan = b->value != b->value;
    if (a_nan != b_nan) return largest ? a_nan : b_nan;
    if (!a_nan && a->value != b->value) return largest ? a->value > b->value : a->value < b->value;
    return a->index < b->index;
}

static int compare_largest(const void *a, const void *b) { return ranks_before(a, b, true) ? -1 : 1; }
static int compare_smallest(const void *a, const void *b) { return ranks_before(a, b, false) ? -1 : 1; }

/* First k of row[0..n) in rank order into row[0..k). Small k keeps a sorted
 * window of the best k seen (about n comparisons); large k sorts everything. */
static void select_top(ranked *row, int64_t n, int64_t k, bool largest)
{
    if (k > 32) {
        qsort(row, (size_t)n, sizeof *row, largest ? compare_largest : compare_smallest);
        return;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        ranked candidate = row[i];
        if (kept == k && !ranks_before(&candidate, &row[k - 1], largest)) continue;
        int64_t at = kept < k ? kept++ : k - 1;
        while (at > 0 && ranks_before(&candidate, &row[at - 1], largest)) {
            row[at] = row[at - 1];
            at--;
        }
        row[at] = candidate;
    }
}

wgt_status cpu_run_topk(cpu_backend *b, const wgt_kernel_call *call)
{
    wgt_tensor_view x = as_rank_one(&call->inputs[0]);
    wgt_tensor_view values = as_rank_one(&call->outputs[0]), indices = as_rank_one(&call->outputs[1]);
    int last = x.ndim - 1;
    int64_t N = x.shape[last], k = call->k;
    if (k < 0 || k > N) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "k = %lld outside 0..%lld", (long long)k, (long long)N);
    bool shapes_agree = same_shape(&values, &indices) && values.ndim == x.ndim && values.shape[last] == k;
    for (int d = 0; shapes_agree && d < last; d++) shapes_agree = values.shape[d] == x.shape[d];
    if (!shapes_agree) return shape_error(b, call, "values/indices must be x's shape with k last", &values, &x);
    int64_t rows = cpu_numel(last, x.shape);
    if (rows == 0 || k == 0) return WGT_OK;

    const int64_t *strides[3] = {x.strides, values.strides, indices.strides};
    cpu_walk row_walk;
    cpu_walk_init(&row_walk, last, x.shape, 3, strides);
    size_t size = cpu_dtype_size(x.dtype);
    const char *x_data = cpu_view_data(&x);
    char *value_data = cpu_view_data(&values);
    int32_t *index_data = (int32_t *)cpu_view_data(&indices);
    int64_t xs = x.strides[last], vs = values.strides[last], is = indices.strides[last];
    bool failed = false;
    bool parallel = b->threads > 1 && rows > 1 && rows * N > CPU_PARALLEL_THRESHOLD;
#pragma omp parallel num_threads(b->threads) if (parallel)
    {
        ranked *row = malloc((size_t)N * sizeof *row);
        if (!row) {
#pragma omp atomic write
            failed = true;
        }
        int team = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t first = rows * me / team, end = rows * (me + 1) / team;
        cpu_walk_position pos;
        if (first < end) cpu_walk_seek(&row_walk, first, &pos);
        for (int64_t r = first; row && r < end; r++) {
            const char *src = x_data + pos.offsets[0] * (int64_t)size;
            for (int64_t i = 0; i < N; i++) row[i] = (ranked){cpu_load_f64(src + i * xs * (int64_t)size, x.dtype), i};
            select_top(row, N, k, call->largest);
            for (int64_t j = 0; j < k; j++) {
                /* the element itself, bit for bit (NaN payloads, -0) */
                copy_element(value_data + (pos.offsets[1] + j * vs) * (int64_t)size, src + row[j].index * xs * (int64_t)size, size);
                index_data[pos.offsets[2] + j * is] = (int32_t)row[j].index;
            }
            if (r + 1 < end) cpu_walk_advance(&row_walk, &pos, 1);
        }
        free(row);
    }
    if (failed) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate a row of %lld elements", (long long)N);
    return WGT_OK;
}
