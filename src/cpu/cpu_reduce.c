/*
 * Reductions, scans and softmax: REDUCE, CUMSUM, SOFTMAX.
 *
 * The CPU backend is the oracle other backends are checked against, so float
 * data accumulates in double and integer sums and products in int64 (wrapping
 * to int32 on store). Work is split into pieces whose partial results combine
 * in a fixed order, so a result does not depend on the thread count.
 */
#include <stdlib.h>

#include <omp.h>

#include "cpu/cpu_internal.h"

/* Elements converted to double (or int64) at a time before the arithmetic. */
#define TILE 256
/* Reduced elements per work item when one output has many inputs. */
#define REDUCE_CHUNK 32768

/* Loads n elements at p with stride into double (exact for every dtype). */
static void load_doubles(const char *p, wgt_dtype dtype, int64_t stride, int64_t n, double *out)
{
    switch (dtype) {
    case WGT_F32: { const float *s = (const float *)p; for (int64_t i = 0; i < n; i++) out[i] = s[i * stride]; break; }
    case WGT_F16: { const uint16_t *s = (const uint16_t *)p; for (int64_t i = 0; i < n; i++) out[i] = cpu_f16_to_f32(s[i * stride]); break; }
    case WGT_I32: { const int32_t *s = (const int32_t *)p; for (int64_t i = 0; i < n; i++) out[i] = s[i * stride]; break; }
    default: { const uint8_t *s = (const uint8_t *)p; for (int64_t i = 0; i < n; i++) out[i] = s[i * stride]; break; }
    }
}

static void load_integers(const char *p, wgt_dtype dtype, int64_t stride, int64_t n, int64_t *out)
{
    size_t size = cpu_dtype_size(dtype);
    if (dtype == WGT_I32) { const int32_t *s = (const int32_t *)p; for (int64_t i = 0; i < n; i++) out[i] = s[i * stride]; }
    else if (size == 1) { const uint8_t *s = (const uint8_t *)p; for (int64_t i = 0; i < n; i++) out[i] = s[i * stride]; }
    else for (int64_t i = 0; i < n; i++) out[i] = cpu_load_i64(p + i * stride * (int64_t)size, dtype);
}

/* ================================================================ REDUCE */
/* x: [d0, .., dn) -> out: the same with the dims in reduce_mask set to 1 */

typedef struct reduce_partial {
    double sum;          /* SUM, MEAN, PROD (float); sum of squared deviations for VAR/STD */
    int64_t isum;        /* SUM, PROD of integers into an integer output (wraps) */
    double best;         /* MAX, MIN, ARGMAX, ARGMIN */
    int64_t best_index;  /* ARGMAX, ARGMIN: position in the reduced range */
    int64_t count;       /* elements seen */
} reduce_partial;

typedef struct reduce_plan {
    wgt_reduce_kind kind;
    bool integer_mode;   /* SUM/PROD of integers into an integer output */
    const char *x;
    char *out;
    wgt_dtype x_dtype, out_dtype;
    cpu_walk kept;       /* views: x, out */
    cpu_walk reduced;    /* view: x */
    int64_t n_outputs, n_reduced;
    int correction;
} reduce_plan;

static reduce_partial partial_init(const reduce_plan *p)
{
    bool product = p->kind == WGT_REDUCE_PROD;
    return (reduce_partial){.sum = product ? 1.0 : 0.0, .isum = product ? 1 : 0, .best = NAN, .best_index = 0, .count = 0};
}

/* Whether value (at index) replaces the current best: strictly better, or the
 * first NaN. Once the best is NaN nothing replaces it, so the first NaN wins. */
static bool replaces_best(const reduce_partial *acc, double value, bool want_max)
{
    if (acc->count == 0) return true;
    if (acc->best != acc->best) return false;
    if (value != value) return true;
    return want_max ? value > acc->best : value < acc->best;
}

/* Folds n loaded values (reduced positions first_index...) into acc. `second`
 * is the squared-deviation pass of VAR/STD, around mean. */
static void fold_doubles(const reduce_plan *p, const double *v, int64_t n, int64_t first_index, bool second, double mean,
                         reduce_partial *acc)
{
    switch (p->kind) {
    case WGT_REDUCE_PROD: for (int64_t i = 0; i < n; i++) acc->sum *= v[i]; break;
    case WGT_REDUCE_MAX: case WGT_REDUCE_MIN: case WGT_REDUCE_ARGMAX: case WGT_REDUCE_ARGMIN: {
        bool want_max = p->kind == WGT_REDUCE_MAX || p->kind == WGT_REDUCE_ARGMAX;
        for (int64_t i = 0; i < n; i++) {
            if (replaces_best(acc, v[i], want_max)) { acc->best = v[i]; acc->best_index = first_index + i; }
            acc->count++;
        }
        return;
    }
    default:
        if (second) for (int64_t i = 0; i < n; i++) { double d = v[i] - mean; acc->sum += d * d; }
        else for (int64_t i = 0; i < n; i++) acc->sum += v[i];
        break;
    }
    acc->count += n;
}

/* Folds reduced positions [r0, r1) of the output whose x elements start at x. */
static void fold_range(const reduce_plan *p, const char *x, int64_t r0, int64_t r1, bool second, double mean,
                       reduce_partial *acc)
{
    const cpu_walk *w = &p->reduced;
    int64_t stride = w->strides[0][w->ndim - 1];
    size_t size = cpu_dtype_size(p->x_dtype);
    double values[TILE];
    int64_t integers[TILE];
    cpu_walk_position pos;
    cpu_walk_seek(w, r0, &pos);
    for (int64_t r = r0; r < r1;) {
        int64_t run = cpu_walk_run(w, &pos);
        if (run > r1 - r) run = r1 - r;
        for (int64_t done = 0; done < run; done += TILE) {
            int64_t n = run - done < TILE ? run - done : TILE;
            const char *src = x + (pos.offsets[0] + done * stride) * (int64_t)size;
            if (p->integer_mode) {
                load_integers(src, p->x_dtype, stride, n, integers);
                if (p->kind == WGT_REDUCE_PROD) for (int64_t i = 0; i < n; i++) acc->isum = (int64_t)((uint64_t)acc->isum * (uint64_t)integers[i]);
                else for (int64_t i = 0; i < n; i++) acc->isum = (int64_t)((uint64_t)acc->isum + (uint64_t)integers[i]);
                acc->count += n;
            } else {
                load_doubles(src, p->x_dtype, stride, n, values);
                fold_doubles(p, values, n, r + done, second, mean, acc);
            }
        }
        cpu_walk_advance(w, &pos, run);
        r += run;
    }
}

/* Folds a later partial (the following chunk) into acc. */
static void combine(const reduce_plan *p, reduce_partial *acc, const reduce_partial *next)
{
    switch (p->kind) {
    case WGT_REDUCE_PROD:
        acc->sum *= next->sum;
        acc->isum = (int64_t)((uint64_t)acc->isum * (uint64_t)next->isum);
        break;
    case WGT_REDUCE_MAX: case WGT_REDUCE_MIN: case WGT_REDUCE_ARGMAX: case WGT_REDUCE_ARGMIN: {
        bool want_max = p->kind == WGT_REDUCE_MAX || p->kind == WGT_REDUCE_ARGMAX;
        if (next->count > 0 && replaces_best(acc, next->best, want_max)) {
            acc->best = next->best;
            acc->best_index = next->best_index;
        }
        break;
    }
    default:
        acc->sum += next->sum;
        acc->isum = (int64_t)((uint64_t)acc->isum + (uint64_t)next->isum);
        break;
    }
    acc->count += next->count;
}

static double mean_of(const reduce_plan *p, const reduce_partial *first_pass)
{
    return first_pass->sum / (double)p->n_reduced; /* 0/0 = NaN when empty */
}

/* Writes the result of one output. deviations is the VAR/STD second pass. */
static void finish(const reduce_plan *p, const reduce_partial *acc, const reduce_partial *deviations, char *out)
{
    double n = (double)p->n_reduced;
    switch (p->kind) {
    case WGT_REDUCE_SUM: case WGT_REDUCE_PROD:
        if (p->integer_mode) cpu_store_i64(out, p->out_dtype, acc->isum);
        else cpu_store_f64(out, p->out_dtype, acc->sum);
        break;
    case WGT_REDUCE_MEAN: cpu_store_f64(out, p->out_dtype, acc->sum / n); break;
    case WGT_REDUCE_VAR: case WGT_REDUCE_STD: {
        /* (n - correction) clamped at 0, as PyTorch: 0/0 = NaN, x/0 = inf */
        double denominator = n - p->correction > 0 ? n - p->correction : 0.0;
        double variance = deviations->sum / denominator;
        cpu_store_f64(out, p->out_dtype, p->kind == WGT_REDUCE_STD ? sqrt(variance) : variance);
        break;
    }
    case WGT_REDUCE_MAX: case WGT_REDUCE_MIN:
        cpu_store_f64(out, p->out_dtype, acc->count ? acc->best : NAN); /* empty: rejected by the front-end */
        break;
    default:
        cpu_store_i64(out, p->out_dtype, acc->count ? acc->best_index : 0);
        break;
    }
}

static bool needs_second_pass(const reduce_plan *p) { return p->kind == WGT_REDUCE_VAR || p->kind == WGT_REDUCE_STD; }

/* Many outputs, each reduced in one piece: threads take contiguous output ranges. */
static void reduce_per_output(const reduce_plan *p, int threads)
{
    size_t x_size = cpu_dtype_size(p->x_dtype), out_size = cpu_dtype_size(p->out_dtype);
    bool parallel = threads > 1 && p->n_outputs > 1 && p->n_outputs * p->n_reduced > CPU_PARALLEL_THRESHOLD;
#pragma omp parallel num_threads(threads) if (parallel)
    {
        int team = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t first = p->n_outputs * me / team, last = p->n_outputs * (me + 1) / team;
        cpu_walk_position pos;
        if (first < last) cpu_walk_seek(&p->kept, first, &pos);
        for (int64_t o = first; o < last; o++) {
            const char *x = p->x + pos.offsets[0] * (int64_t)x_size;
            reduce_partial acc = partial_init(p), deviations = partial_init(p);
            fold_range(p, x, 0, p->n_reduced, false, 0.0, &acc);
            if (needs_second_pass(p)) fold_range(p, x, 0, p->n_reduced, true, mean_of(p, &acc), &deviations);
            finish(p, &acc, &deviations, p->out + pos.offsets[1] * (int64_t)out_size);
            if (o + 1 < last) cpu_walk_advance(&p->kept, &pos, 1);
        }
    }
}

/* Few outputs with long reductions: chunks of every output run in parallel and
 * their partials combine in chunk order. */
static wgt_status reduce_in_chunks(const reduce_plan *p, int threads, int64_t n_chunks)
{
    size_t x_size = cpu_dtype_size(p->x_dtype), out_size = cpu_dtype_size(p->out_dtype);
    int64_t n_items = p->n_outputs * n_chunks;
    reduce_partial *partials = malloc((size_t)n_items * sizeof *partials);
    reduce_partial *totals = malloc((size_t)p->n_outputs * 2 * sizeof *totals);
    if (!partials || !totals) {
        free(partials);
        free(totals);
        return WGT_ERR_OUT_OF_MEMORY;
    }
    for (int pass = 0; pass < (needs_second_pass(p) ? 2 : 1); pass++) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
        for (int64_t item = 0; item < n_items; item++) {
            int64_t o = item / n_chunks, chunk = item % n_chunks;
            cpu_walk_position pos;
            cpu_walk_seek(&p->kept, o, &pos);
            int64_t r0 = chunk * REDUCE_CHUNK, r1 = r0 + REDUCE_CHUNK < p->n_reduced ? r0 + REDUCE_CHUNK : p->n_reduced;
            partials[item] = partial_init(p);
            double mean = pass ? mean_of(p, &totals[2 * o]) : 0.0;
            fold_range(p, p->x + pos.offsets[0] * (int64_t)x_size, r0, r1, pass == 1, mean, &partials[item]);
        }
        for (int64_t o = 0; o < p->n_outputs; o++) {
            reduce_partial acc = partials[o * n_chunks];
            for (int64_t c = 1; c < n_chunks; c++) combine(p, &acc, &partials[o * n_chunks + c]);
            totals[2 * o + pass] = acc;
        }
    }
    for (int64_t o = 0; o < p->n_outputs; o++) {
        cpu_walk_position pos;
        cpu_walk_seek(&p->kept, o, &pos);
        finish(p, &totals[2 * o], &totals[2 * o + 1], p->out + pos.offsets[1] * (int64_t)out_size);
    }
    free(partials);
    free(totals);
    return WGT_OK;
}

wgt_status cpu_run_reduce(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    char xs[96], os[96];
    uint32_t mask = call->reduce_mask;
    if (x->ndim < 32 && (mask >> x->ndim) != 0) {
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "reduce mask 0x%x names dims beyond rank %d", mask, x->ndim);
    }
    bool keepdim_shape = out->ndim == x->ndim;
    for (int d = 0; keepdim_shape && d < x->ndim; d++) keepdim_shape = out->shape[d] == ((mask >> d) & 1 ? 1 : x->shape[d]);
    if (!keepdim_shape) {
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "output %s is not the keepdim shape of x %s with mask 0x%x",
                        cpu_shape_string(out->ndim, out->shape, os, sizeof os),
                        cpu_shape_string(x->ndim, x->shape, xs, sizeof xs), mask);
    }

    reduce_plan p = {.kind = call->reduce, .x = cpu_view_data(x), .out = NULL, .x_dtype = x->dtype,
                     .out_dtype = out->dtype, .correction = call->correction};
    p.integer_mode = (p.kind == WGT_REDUCE_SUM || p.kind == WGT_REDUCE_PROD) && !cpu_dtype_is_float(x->dtype) &&
                     !cpu_dtype_is_float(out->dtype);
    int64_t kept_shape[WGT_MAX_DIMS], kept_x[WGT_MAX_DIMS], kept_out[WGT_MAX_DIMS];
    int64_t reduced_shape[WGT_MAX_DIMS], reduced_x[WGT_MAX_DIMS];
    int n_kept = 0, n_reduced = 0;
    for (int d = 0; d < x->ndim; d++) {
        if ((mask >> d) & 1) {
            reduced_shape[n_reduced] = x->shape[d];
            reduced_x[n_reduced++] = x->strides[d];
        } else {
            kept_shape[n_kept] = x->shape[d];
            kept_x[n_kept] = x->strides[d];
            kept_out[n_kept++] = out->strides[d];
        }
    }
    p.n_outputs = cpu_numel(n_kept, kept_shape);
    p.n_reduced = cpu_numel(n_reduced, reduced_shape);
    if (p.n_outputs == 0) return WGT_OK;
    p.out = cpu_view_data(out);
    const int64_t *kept_strides[2] = {kept_x, kept_out};
    const int64_t *reduced_strides[1] = {reduced_x};
    cpu_walk_init(&p.kept, n_kept, kept_shape, 2, kept_strides);
    cpu_walk_init(&p.reduced, n_reduced, reduced_shape, 1, reduced_strides);
    if (p.n_reduced == 0) p.x = NULL; /* nothing is read; x may have no storage */

    int64_t n_chunks = (p.n_reduced + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
    if (n_chunks <= 1 || b->threads == 1) {
        reduce_per_output(&p, b->threads);
        return WGT_OK;
    }
    if (reduce_in_chunks(&p, b->threads, n_chunks) != WGT_OK) {
        return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate partial results for %lld outputs", (long long)p.n_outputs);
    }
    return WGT_OK;
}

/* ======================================================= along one axis */
/*
 * CUMSUM and SOFTMAX work along one axis of x [outer.., D, inner..]. A work item
 * is one outer position and a chunk of up to TILE inner positions; it walks the
 * axis in tiles of [L, n] elements (L * n <= TILE), so a last-axis softmax reads
 * rows in long runs and a first-axis cumsum reads whole rows of inner elements.
 */
typedef struct axis_plan {
    const char *x;
    char *out;
    wgt_dtype x_dtype, out_dtype;
    int64_t length;           /* D */
    int64_t x_axis_stride, out_axis_stride;
    cpu_walk outer, inner;    /* views: x, out */
    int64_t n_outer, n_inner, n_inner_chunks;
} axis_plan;

typedef struct axis_item {
    int64_t x_base, out_base;             /* element offsets of the outer position */
    int64_t n;                            /* inner positions in this chunk */
    int64_t x_inner[TILE], out_inner[TILE];
} axis_item;

/* Fills item for work item index `item`. */
static void axis_item_locate(const axis_plan *p, int64_t item, axis_item *it)
{
    int64_t o = item / p->n_inner_chunks, j0 = (item % p->n_inner_chunks) * TILE;
    cpu_walk_position pos;
    cpu_walk_seek(&p->outer, o, &pos);
    it->x_base = pos.offsets[0];
    it->out_base = pos.offsets[1];
    it->n = p->n_inner - j0 < TILE ? p->n_inner - j0 : TILE;
    cpu_walk_seek(&p->inner, j0, &pos);
    for (int64_t j = 0; j < it->n; j++) {
        it->x_inner[j] = pos.offsets[0];
        it->out_inner[j] = pos.offsets[1];
        if (j + 1 < it->n) cpu_walk_advance(&p->inner, &pos, 1);
    }
}

/* tile[l * n + j] = x[axis d0 + l, inner j] for l < rows, as double. */
static void load_tile(const axis_plan *p, const axis_item *it, int64_t d0, int64_t rows, double *tile)
{
    size_t size = cpu_dtype_size(p->x_dtype);
    for (int64_t l = 0; l < rows; l++) {
        const char *row = p->x + (it->x_base + (d0 + l) * p->x_axis_stride) * (int64_t)size;
        double *t = tile + l * it->n;
        if (it->n == 1) { t[0] = cpu_load_f64(row + it->x_inner[0] * (int64_t)size, p->x_dtype); continue; }
        switch (p->x_dtype) {
        case WGT_F32: for (int64_t j = 0; j < it->n; j++) t[j] = ((const float *)row)[it->x_inner[j]]; break;
        case WGT_F16: for (int64_t j = 0; j < it->n; j++) t[j] = cpu_f16_to_f32(((const uint16_t *)row)[it->x_inner[j]]); break;
        case WGT_I32: for (int64_t j = 0; j < it->n; j++) t[j] = ((const int32_t *)row)[it->x_inner[j]]; break;
        default: for (int64_t j = 0; j < it->n; j++) t[j] = ((const uint8_t *)row)[it->x_inner[j]]; break;
        }
    }
}

static void store_tile(const axis_plan *p, const axis_item *it, int64_t d0, int64_t rows, const double *tile)
{
    size_t size = cpu_dtype_size(p->out_dtype);
    for (int64_t l = 0; l < rows; l++) {
        char *row = p->out + (it->out_base + (d0 + l) * p->out_axis_stride) * (int64_t)size;
        for (int64_t j = 0; j < it->n; j++) cpu_store_f64(row + it->out_inner[j] * (int64_t)size, p->out_dtype, tile[l * it->n + j]);
    }
}

/* Splits x and out (same shape) around axis. False if the shapes differ. */
static bool axis_plan_init(axis_plan *p, const wgt_tensor_view *x, const wgt_tensor_view *out, int axis)
{
    if (out->ndim != x->ndim) return false;
    for (int d = 0; d < x->ndim; d++) {
        if (out->shape[d] != x->shape[d]) return false;
    }
    p->x = cpu_view_data(x);
    p->out = cpu_view_data(out);
    p->x_dtype = x->dtype;
    p->out_dtype = out->dtype;
    /* a scalar is a line of one element */
    p->length = x->ndim ? x->shape[axis] : 1;
    p->x_axis_stride = x->ndim ? x->strides[axis] : 0;
    p->out_axis_stride = x->ndim ? out->strides[axis] : 0;
    int inner_ndim = x->ndim ? x->ndim - axis - 1 : 0, outer_ndim = x->ndim ? axis : 0;
    const int64_t *outer_strides[2] = {x->strides, out->strides};
    const int64_t *inner_strides[2] = {x->strides + axis + 1, out->strides + axis + 1};
    cpu_walk_init(&p->outer, outer_ndim, x->shape, 2, outer_strides);
    cpu_walk_init(&p->inner, inner_ndim, x->shape + axis + 1, 2, inner_strides);
    p->n_outer = cpu_numel(outer_ndim, x->shape);
    p->n_inner = cpu_numel(inner_ndim, x->shape + axis + 1);
    p->n_inner_chunks = (p->n_inner + TILE - 1) / TILE;
    return true;
}

static wgt_status check_axis_call(cpu_backend *b, const wgt_kernel_call *call, axis_plan *p)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    int axis = call->axis;
    if (axis < 0 || axis >= (x->ndim ? x->ndim : 1)) {
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "axis %d out of range for rank %d", axis, x->ndim);
    }
    if (!axis_plan_init(p, x, out, axis)) {
        char xs[96], os[96];
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "output %s differs from x %s",
                        cpu_shape_string(out->ndim, out->shape, os, sizeof os), cpu_shape_string(x->ndim, x->shape, xs, sizeof xs));
    }
    return WGT_OK;
}

/* ================================================================ CUMSUM */
/* x: [..., D, ...] -> out: [..., D, ...], out[.., d, ..] = sum of x[.., 0..d, ..] */

static void cumsum_item(const axis_plan *p, const axis_item *it)
{
    double tile[TILE], sum[TILE] = {0};
    int64_t isum[TILE] = {0};
    bool integers = !cpu_dtype_is_float(p->x_dtype);
    int64_t rows_per_tile = TILE / it->n;
    size_t x_size = cpu_dtype_size(p->x_dtype), out_size = cpu_dtype_size(p->out_dtype);
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        if (integers) { /* exact in int64, wrapping like the int32 result */
            for (int64_t l = 0; l < rows; l++) {
                const char *row = p->x + (it->x_base + (d0 + l) * p->x_axis_stride) * (int64_t)x_size;
                char *out_row = p->out + (it->out_base + (d0 + l) * p->out_axis_stride) * (int64_t)out_size;
                for (int64_t j = 0; j < it->n; j++) {
                    isum[j] = (int64_t)((uint64_t)isum[j] + (uint64_t)cpu_load_i64(row + it->x_inner[j] * (int64_t)x_size, p->x_dtype));
                    cpu_store_i64(out_row + it->out_inner[j] * (int64_t)out_size, p->out_dtype, isum[j]);
                }
            }
            continue;
        }
        load_tile(p, it, d0, rows, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < it->n; j++) {
                sum[j] += tile[l * it->n + j];
                tile[l * it->n + j] = sum[j];
            }
        }
        store_tile(p, it, d0, rows, tile);
    }
}

wgt_status cpu_run_cumsum(cpu_backend *b, const wgt_kernel_call *call)
{
    axis_plan p;
    wgt_status s = check_axis_call(b, call, &p);
    if (s) return s;
    int64_t n_items = p.n_outer * p.n_inner_chunks;
    if (n_items == 0 || p.length == 0) return WGT_OK;
    bool parallel = b->threads > 1 && n_items > 1 && n_items * p.length * (p.n_inner < TILE ? p.n_inner : TILE) > CPU_PARALLEL_THRESHOLD;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t item = 0; item < n_items; item++) {
        axis_item it;
        axis_item_locate(&p, item, &it);
        cumsum_item(&p, &it);
    }
    return WGT_OK;
}

/* =============================================================== SOFTMAX */
/* x: [..., D, ...] -> out: [..., D, ...], exp(x - max) / sum(exp(x - max)) along
 * axis, or x - max - log(sum(exp(x - max))) for log_softmax. In double. A NaN
 * makes its line NaN; a line of -inf gives NaN (max - max), as PyTorch. */

static void softmax_item(const axis_plan *p, const axis_item *it, bool log_softmax)
{
    double tile[TILE], max[TILE], sum[TILE];
    int64_t n = it->n, rows_per_tile = TILE / n;
    for (int64_t j = 0; j < n; j++) { max[j] = -INFINITY; sum[j] = 0.0; }
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        load_tile(p, it, d0, rows, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) {
                double v = tile[l * n + j];
                if (v > max[j] || v != v) max[j] = max[j] != max[j] ? max[j] : v;
            }
        }
    }
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        load_tile(p, it, d0, rows, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) sum[j] += exp(tile[l * n + j] - max[j]);
        }
    }
    for (int64_t j = 0; j < n; j++) sum[j] = log_softmax ? log(sum[j]) : sum[j];
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        load_tile(p, it, d0, rows, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) {
                double shifted = tile[l * n + j] - max[j];
                tile[l * n + j] = log_softmax ? shifted - sum[j] : exp(shifted) / sum[j];
            }
        }
        store_tile(p, it, d0, rows, tile);
    }
}

wgt_status cpu_run_softmax(cpu_backend *b, const wgt_kernel_call *call)
{
    axis_plan p;
    wgt_status s = check_axis_call(b, call, &p);
    if (s) return s;
    int64_t n_items = p.n_outer * p.n_inner_chunks;
    if (n_items == 0 || p.length == 0) return WGT_OK;
    bool parallel = b->threads > 1 && n_items > 1 && n_items * p.length * (p.n_inner < TILE ? p.n_inner : TILE) > CPU_PARALLEL_THRESHOLD / 4;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t item = 0; item < n_items; item++) {
        axis_item it;
        axis_item_locate(&p, item, &it);
        softmax_item(&p, &it, call->log_softmax);
    }
    return WGT_OK;
}
