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

/* Gathers n elements of type T at p: element j lives at offsets[j]
 * when offsets is given, else at j * stride (elements). */
#define GATHER(T, CONVERT)                                                                           \
    do {                                                                                             \
        const T *src = (const T *)p;                                                                 \
        if (offsets) for (int64_t j = 0; j < n; j++) out[j] = CONVERT(src[offsets[j]]);              \
        else CPU_SIMD for (int64_t j = 0; j < n; j++) out[j] = CONVERT(src[j * stride]);             \
    } while (0)
#define AS_IS(v) (v)
#define F16_TO_I32(h) cpu_f32_to_i32(cpu_f16_to_f32(h))

/* Loads as double: exact for every dtype. */
static void load_doubles_at(const char *p, wgt_dtype dtype, const int64_t *offsets, int64_t stride, int64_t n, double *out)
{
    switch (dtype) {
    case WGT_F32: GATHER(float, AS_IS); break;
    case WGT_F16: GATHER(uint16_t, cpu_f16_to_f32); break;
    case WGT_I32: GATHER(int32_t, AS_IS); break;
    default: GATHER(uint8_t, AS_IS); break;
    }
}

static void load_doubles(const char *p, wgt_dtype dtype, int64_t stride, int64_t n, double *out)
{
    load_doubles_at(p, dtype, NULL, stride, n, out);
}

/* Loads integers exactly (u8/bool unsigned); floats CAST as in expr.h. */
static void load_integers_at(const char *p, wgt_dtype dtype, const int64_t *offsets, int64_t stride, int64_t n, int64_t *out)
{
    switch (dtype) {
    case WGT_F32: GATHER(float, cpu_f32_to_i32); break;
    case WGT_F16: GATHER(uint16_t, F16_TO_I32); break;
    case WGT_I32: GATHER(int32_t, AS_IS); break;
    default: GATHER(uint8_t, AS_IS); break;
    }
}

static void load_integers(const char *p, wgt_dtype dtype, int64_t stride, int64_t n, int64_t *out)
{
    load_integers_at(p, dtype, NULL, stride, n, out);
}
#undef GATHER

/* Stores n doubles (or int64s) by the store rules of cpu_store_f64/_i64. */
static void store_doubles_at(char *p, wgt_dtype dtype, const int64_t *offsets, int64_t stride, int64_t n, const double *v)
{
    int64_t size = (int64_t)cpu_dtype_size(dtype);
    if (dtype == WGT_F32) { /* the common case, without a call per element */
        float *dst = (float *)p;
        if (offsets) for (int64_t j = 0; j < n; j++) dst[offsets[j]] = (float)v[j];
        else CPU_SIMD for (int64_t j = 0; j < n; j++) dst[j * stride] = (float)v[j];
        return;
    }
    for (int64_t j = 0; j < n; j++) cpu_store_f64(p + (offsets ? offsets[j] : j * stride) * size, dtype, v[j]);
}

static void store_integers_at(char *p, wgt_dtype dtype, const int64_t *offsets, int64_t stride, int64_t n, const int64_t *v)
{
    int64_t size = (int64_t)cpu_dtype_size(dtype);
    for (int64_t j = 0; j < n; j++) cpu_store_i64(p + (offsets ? offsets[j] : j * stride) * size, dtype, v[j]);
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

/* Sums (SUM, MEAN and both passes of VAR/STD) run in LANES interleaved
 * partial sums, element i of a run going to lane i % LANES, that add up
 * pairwise at the end of the range. One running sum is a chain of dependent
 * adds that cannot vectorize; lanes can. The order still depends on the layout
 * only, never on the thread count. */
#define LANES 16

static bool sums_in_lanes(const reduce_plan *p)
{
    return !p->integer_mode && (p->kind == WGT_REDUCE_SUM || p->kind == WGT_REDUCE_MEAN ||
                                p->kind == WGT_REDUCE_VAR || p->kind == WGT_REDUCE_STD);
}

/* lane[i % LANES] += v[i] (or (v[i] - mean)^2 when squares). n need not be a
 * multiple of LANES. */
CPU_MULTIVERSION
static void lanes_add(double *restrict lane, const double *restrict v, int64_t n, bool squares, double mean)
{
    int64_t i = 0;
    if (squares) {
        for (; i + LANES <= n; i += LANES) {
            CPU_SIMD for (int j = 0; j < LANES; j++) { double d = v[i + j] - mean; lane[j] += d * d; }
        }
        for (int j = 0; i < n; i++, j++) { double d = v[i] - mean; lane[j] += d * d; }
    } else {
        for (; i + LANES <= n; i += LANES) {
            CPU_SIMD for (int j = 0; j < LANES; j++) lane[j] += v[i + j];
        }
        for (int j = 0; i < n; i++, j++) lane[j] += v[i];
    }
}

/* The same straight from contiguous f32 data, without a buffer of doubles. */
CPU_MULTIVERSION
static void lanes_add_f32(double *restrict lane, const float *restrict x, int64_t n, bool squares, double mean)
{
    int64_t i = 0;
    if (squares) {
        for (; i + LANES <= n; i += LANES) {
            CPU_SIMD for (int j = 0; j < LANES; j++) { double d = (double)x[i + j] - mean; lane[j] += d * d; }
        }
        for (int j = 0; i < n; i++, j++) { double d = (double)x[i] - mean; lane[j] += d * d; }
    } else {
        for (; i + LANES <= n; i += LANES) {
            CPU_SIMD for (int j = 0; j < LANES; j++) lane[j] += (double)x[i + j];
        }
        for (int j = 0; i < n; i++, j++) lane[j] += (double)x[i];
    }
}

/* The lanes added pairwise, in a fixed order. */
static double lanes_total(const double *lane)
{
    double t[LANES];
    memcpy(t, lane, sizeof t);
    for (int width = LANES / 2; width >= 1; width /= 2) {
        for (int j = 0; j < width; j++) t[j] += t[j + width];
    }
    return t[0];
}

/* Folds n loaded values (reduced positions first_index...) into acc: PROD and
 * the MAX/MIN family, whose order of operations the lanes would change. */
static void fold_doubles(const reduce_plan *p, const double *v, int64_t n, int64_t first_index, reduce_partial *acc)
{
    switch (p->kind) {
    case WGT_REDUCE_PROD: for (int64_t i = 0; i < n; i++) acc->sum *= v[i]; break;
    default: { /* MAX, MIN, ARGMAX, ARGMIN */
        bool want_max = p->kind == WGT_REDUCE_MAX || p->kind == WGT_REDUCE_ARGMAX;
        for (int64_t i = 0; i < n; i++) {
            if (replaces_best(acc, v[i], want_max)) { acc->best = v[i]; acc->best_index = first_index + i; }
            acc->count++;
        }
        return;
    }
    }
    acc->count += n;
}

/* Folds reduced positions [r0, r1) of the output whose x elements start at x.
 * `second` is the squared-deviation pass of VAR/STD, around mean. */
static void fold_range(const reduce_plan *p, const char *x, int64_t r0, int64_t r1, bool second, double mean,
                       reduce_partial *acc)
{
    const cpu_walk *w = &p->reduced;
    int64_t stride = w->strides[0][w->ndim - 1];
    size_t size = cpu_dtype_size(p->x_dtype);
    bool lanes = sums_in_lanes(p);
    double values[TILE], lane[LANES] = {0};
    int64_t integers[TILE];
    cpu_walk_position pos;
    cpu_walk_seek(w, r0, &pos);
    for (int64_t r = r0; r < r1;) {
        int64_t run = cpu_walk_run(w, &pos);
        if (run > r1 - r) run = r1 - r;
        const char *run_start = x + pos.offsets[0] * (int64_t)size;
        if (lanes && p->x_dtype == WGT_F32 && stride == 1) {
            lanes_add_f32(lane, (const float *)run_start, run, second, mean);
            acc->count += run;
            cpu_walk_advance(w, &pos, run);
            r += run;
            continue;
        }
        for (int64_t done = 0; done < run; done += TILE) { /* TILE is a multiple of LANES: lanes continue */
            int64_t n = run - done < TILE ? run - done : TILE;
            const char *src = run_start + done * stride * (int64_t)size;
            if (p->integer_mode) {
                load_integers(src, p->x_dtype, stride, n, integers);
                if (p->kind == WGT_REDUCE_PROD) for (int64_t i = 0; i < n; i++) acc->isum = (int64_t)((uint64_t)acc->isum * (uint64_t)integers[i]);
                else for (int64_t i = 0; i < n; i++) acc->isum = (int64_t)((uint64_t)acc->isum + (uint64_t)integers[i]);
                acc->count += n;
            } else if (lanes) {
                load_doubles(src, p->x_dtype, stride, n, values);
                lanes_add(lane, values, n, second, mean);
                acc->count += n;
            } else {
                load_doubles(src, p->x_dtype, stride, n, values);
                fold_doubles(p, values, n, r + done, acc);
            }
        }
        cpu_walk_advance(w, &pos, run);
        r += run;
    }
    if (lanes) acc->sum += lanes_total(lane);
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
    /* Threads take ranges of outputs as they become free (a thread the system
     * preempts holds up no one), each range walked from one seek. */
    int64_t per_range = p->n_outputs / (threads * 16) > 1 ? p->n_outputs / (threads * 16) : 1;
    int64_t n_ranges = (p->n_outputs + per_range - 1) / per_range;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (parallel)
    for (int64_t range = 0; range < n_ranges; range++) {
        int64_t first = range * per_range, last = first + per_range < p->n_outputs ? first + per_range : p->n_outputs;
        cpu_walk_position pos;
        cpu_walk_seek(&p->kept, first, &pos);
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

/* Outputs that lie next to each other in x (a reduction over leading dims, as a
 * sum over the batch): a group of up to TILE neighbouring outputs walks the
 * reduced positions together, reading each row of neighbours in one run
 * instead of one strided element per output. Sums run in the same order as
 * per output. */
static bool outputs_are_inner(const reduce_plan *p)
{
    if (p->kept.shape[p->kept.ndim - 1] < 2 || p->n_reduced < 2) return false;
    int64_t kept_stride = llabs(p->kept.strides[0][p->kept.ndim - 1]);
    int64_t reduced_stride = llabs(p->reduced.strides[0][p->reduced.ndim - 1]);
    return kept_stride < reduced_stride;
}

typedef struct output_group {
    double sum[TILE], best[TILE], mean[TILE];
    int64_t isum[TILE], best_index[TILE];
} output_group;

/* One pass over all reduced positions for n outputs starting at x (stride
 * between outputs x_step); `second` is the VAR/STD deviation pass. */
static void fold_group(const reduce_plan *p, const char *x, int64_t x_step, int64_t n, bool second, output_group *g)
{
    const cpu_walk *w = &p->reduced;
    int64_t run_stride = w->strides[0][w->ndim - 1], size = (int64_t)cpu_dtype_size(p->x_dtype);
    bool want_max = p->kind == WGT_REDUCE_MAX || p->kind == WGT_REDUCE_ARGMAX;
    double v[TILE];
    int64_t iv[TILE];
    cpu_walk_position pos;
    cpu_walk_seek(w, 0, &pos);
    for (int64_t r = 0; r < p->n_reduced;) {
        int64_t run = cpu_walk_run(w, &pos);
        for (int64_t i = 0; i < run; i++, r++) {
            const char *row = x + (pos.offsets[0] + i * run_stride) * size;
            if (p->integer_mode) {
                load_integers(row, p->x_dtype, x_step, n, iv);
                if (p->kind == WGT_REDUCE_PROD) for (int64_t j = 0; j < n; j++) g->isum[j] = (int64_t)((uint64_t)g->isum[j] * (uint64_t)iv[j]);
                else for (int64_t j = 0; j < n; j++) g->isum[j] = (int64_t)((uint64_t)g->isum[j] + (uint64_t)iv[j]);
                continue;
            }
            load_doubles(row, p->x_dtype, x_step, n, v);
            switch (p->kind) {
            case WGT_REDUCE_PROD: CPU_SIMD for (int64_t j = 0; j < n; j++) g->sum[j] *= v[j]; break;
            case WGT_REDUCE_MAX: case WGT_REDUCE_MIN: case WGT_REDUCE_ARGMAX: case WGT_REDUCE_ARGMIN:
                for (int64_t j = 0; j < n; j++) {
                    reduce_partial acc = {.best = g->best[j], .count = r};
                    if (replaces_best(&acc, v[j], want_max)) { g->best[j] = v[j]; g->best_index[j] = r; }
                }
                break;
            default:
                if (second) CPU_SIMD for (int64_t j = 0; j < n; j++) { double d = v[j] - g->mean[j]; g->sum[j] += d * d; }
                else CPU_SIMD for (int64_t j = 0; j < n; j++) g->sum[j] += v[j];
                break;
            }
        }
        cpu_walk_advance(w, &pos, run);
    }
}

static wgt_status reduce_across_outputs(const reduce_plan *p, int threads)
{
    const cpu_walk *k = &p->kept;
    int64_t L = k->shape[k->ndim - 1], chunks = (L + TILE - 1) / TILE, n_groups = p->n_outputs / L * chunks;
    int64_t x_step = k->strides[0][k->ndim - 1], out_step = k->strides[1][k->ndim - 1];
    size_t x_size = cpu_dtype_size(p->x_dtype), out_size = cpu_dtype_size(p->out_dtype);
    output_group *groups = malloc((size_t)(threads > 0 ? threads : 1) * sizeof *groups);
    if (!groups) return WGT_ERR_OUT_OF_MEMORY;
    bool parallel = threads > 1 && n_groups > 1 && p->n_outputs * p->n_reduced > CPU_PARALLEL_THRESHOLD;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (parallel)
    for (int64_t group = 0; group < n_groups; group++) {
        output_group *g = &groups[omp_get_thread_num()];
        int64_t first = group / chunks * L + group % chunks * TILE;
        int64_t n = L - group % chunks * TILE < TILE ? L - group % chunks * TILE : TILE;
        cpu_walk_position pos;
        cpu_walk_seek(k, first, &pos);
        const char *x = p->x + pos.offsets[0] * (int64_t)x_size;
        reduce_partial init = partial_init(p);
        for (int64_t j = 0; j < n; j++) {
            g->sum[j] = init.sum; g->isum[j] = init.isum; g->best[j] = init.best; g->best_index[j] = 0;
        }
        fold_group(p, x, x_step, n, false, g);
        reduce_partial totals[TILE], deviations[TILE];
        for (int64_t j = 0; j < n; j++) {
            totals[j] = (reduce_partial){.sum = g->sum[j], .isum = g->isum[j], .best = g->best[j],
                                         .best_index = g->best_index[j], .count = p->n_reduced};
        }
        if (needs_second_pass(p)) {
            for (int64_t j = 0; j < n; j++) { g->mean[j] = mean_of(p, &totals[j]); g->sum[j] = 0.0; }
            fold_group(p, x, x_step, n, true, g);
            for (int64_t j = 0; j < n; j++) deviations[j] = (reduce_partial){.sum = g->sum[j], .count = p->n_reduced};
        }
        for (int64_t j = 0; j < n; j++) finish(p, &totals[j], &deviations[j], p->out + (pos.offsets[1] + j * out_step) * (int64_t)out_size);
    }
    free(groups);
    return WGT_OK;
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
    if (p.n_reduced == 0) {
        /* empty reductions read nothing: x may have no storage, and its
         * strides (any, for a view of no elements) are not walked, whose
         * offsets can overflow (the api_fuzzer's seed 149 under UBSan) */
        const int64_t *out_strides[1] = {kept_out};
        cpu_walk outputs;
        cpu_walk_init(&outputs, n_kept, kept_shape, 1, out_strides);
        reduce_partial none = partial_init(&p);
        cpu_walk_position pos;
        cpu_walk_seek(&outputs, 0, &pos);
        for (int64_t o = 0; o < p.n_outputs; o++) {
            finish(&p, &none, &none, p.out + pos.offsets[0] * (int64_t)cpu_dtype_size(out->dtype));
            if (o + 1 < p.n_outputs) cpu_walk_advance(&outputs, &pos, 1);
        }
        return WGT_OK;
    }
    const int64_t *kept_strides[2] = {kept_x, kept_out};
    const int64_t *reduced_strides[1] = {reduced_x};
    cpu_walk_init(&p.kept, n_kept, kept_shape, 2, kept_strides);
    cpu_walk_init(&p.reduced, n_reduced, reduced_shape, 1, reduced_strides);

    /* The order of operations depends on the layout only, never on the thread
     * count. Products stay sequential: chunk products that over- and underflow
     * would meet as inf * 0 = NaN where the running product stays at 0. */
    int64_t n_chunks = (p.n_reduced + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
    wgt_status status = WGT_OK;
    if (outputs_are_inner(&p)) status = reduce_across_outputs(&p, b->threads);
    else if (n_chunks <= 1 || p.kind == WGT_REDUCE_PROD) reduce_per_output(&p, b->threads);
    else status = reduce_in_chunks(&p, b->threads, n_chunks);
    if (status != WGT_OK) {
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

/* tile[l * n + j] = x[axis d0 + l, inner j] for l < rows, as double (or int64
 * when integers). One inner position reads a strided run along the axis. */
static void load_tile(const axis_plan *p, const axis_item *it, int64_t d0, int64_t rows, bool integers, void *tile)
{
    int64_t size = (int64_t)cpu_dtype_size(p->x_dtype);
    for (int64_t l = 0; l < rows; l += it->n == 1 ? rows : 1) {
        const char *row = p->x + (it->x_base + (d0 + l) * p->x_axis_stride) * size;
        const int64_t *offsets = it->n == 1 ? NULL : it->x_inner;
        const char *first = it->n == 1 ? row + it->x_inner[0] * size : row;
        int64_t n = it->n == 1 ? rows : it->n;
        if (integers) load_integers_at(first, p->x_dtype, offsets, p->x_axis_stride, n, (int64_t *)tile + l * it->n);
        else load_doubles_at(first, p->x_dtype, offsets, p->x_axis_stride, n, (double *)tile + l * it->n);
    }
}

static void store_tile(const axis_plan *p, const axis_item *it, int64_t d0, int64_t rows, bool integers, const void *tile)
{
    int64_t size = (int64_t)cpu_dtype_size(p->out_dtype);
    for (int64_t l = 0; l < rows; l += it->n == 1 ? rows : 1) {
        char *row = p->out + (it->out_base + (d0 + l) * p->out_axis_stride) * size;
        const int64_t *offsets = it->n == 1 ? NULL : it->out_inner;
        char *first = it->n == 1 ? row + it->out_inner[0] * size : row;
        int64_t n = it->n == 1 ? rows : it->n;
        if (integers) store_integers_at(first, p->out_dtype, offsets, p->out_axis_stride, n, (const int64_t *)tile + l * it->n);
        else store_doubles_at(first, p->out_dtype, offsets, p->out_axis_stride, n, (const double *)tile + l * it->n);
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
    /* floats sum in double; integers in int64, wrapping like the int32 result */
    bool integers = !cpu_dtype_is_float(p->x_dtype);
    double tile[TILE], sum[TILE] = {0};
    int64_t itile[TILE], isum[TILE] = {0};
    int64_t n = it->n, rows_per_tile = TILE / n;
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        load_tile(p, it, d0, rows, integers, integers ? (void *)itile : (void *)tile);
        for (int64_t l = 0; l < rows; l++) {
            if (integers) {
                for (int64_t j = 0; j < n; j++) itile[l * n + j] = isum[j] = (int64_t)((uint64_t)isum[j] + (uint64_t)itile[l * n + j]);
            } else {
                for (int64_t j = 0; j < n; j++) tile[l * n + j] = sum[j] += tile[l * n + j];
            }
        }
        store_tile(p, it, d0, rows, integers, integers ? (void *)itile : (void *)tile);
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

/* Lines of up to this many elements are loaded once and keep their exps: one
 * read and one exp per element instead of three reads and two exps. */
#define SOFTMAX_CACHE 16384

static void softmax_item(const axis_plan *p, const axis_item *it, bool log_softmax, double *cache)
{
    double local[TILE], max[TILE], sum[TILE];
    int64_t n = it->n, rows_per_tile = TILE / n;
    bool cached = cache && p->length * n <= SOFTMAX_CACHE;
    for (int64_t j = 0; j < n; j++) { max[j] = -INFINITY; sum[j] = 0.0; }
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        double *tile = cached ? cache + d0 * n : local;
        load_tile(p, it, d0, rows, false, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) {
                double v = tile[l * n + j];
                if (v > max[j] || v != v) max[j] = max[j] != max[j] ? max[j] : v; /* NaN sticks */
            }
        }
    }
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        double *tile = cached ? cache + d0 * n : local;
        if (!cached) load_tile(p, it, d0, rows, false, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) {
                double e = cpu_exp(tile[l * n + j] - max[j]);
                sum[j] += e;
                if (cached && !log_softmax) tile[l * n + j] = e;
            }
        }
    }
    for (int64_t j = 0; j < n; j++) sum[j] = log_softmax ? log(sum[j]) : sum[j];
    for (int64_t d0 = 0; d0 < p->length; d0 += rows_per_tile) {
        int64_t rows = p->length - d0 < rows_per_tile ? p->length - d0 : rows_per_tile;
        double *tile = cached ? cache + d0 * n : local;
        if (!cached) load_tile(p, it, d0, rows, false, tile);
        for (int64_t l = 0; l < rows; l++) {
            for (int64_t j = 0; j < n; j++) {
                double t = tile[l * n + j];
                if (log_softmax) tile[l * n + j] = t - max[j] - sum[j];
                else tile[l * n + j] = (cached ? t : cpu_exp(t - max[j])) / sum[j];
            }
        }
        store_tile(p, it, d0, rows, false, tile);
    }
}

/* ------------------------------------------------- one line at a time */
/* A softmax along an axis without inner positions (the last axis, the common
 * case) works on one whole line at a time, in a buffer of doubles: each pass
 * but the sum is a plain loop over the line that vectorizes. The arithmetic is
 * softmax_item's, in the same order. */

/* Longest line held whole (8 MiB of doubles per thread); longer lines take
 * softmax_item's path. */
#define SOFTMAX_LINE_MAX ((int64_t)1 << 20)

/* Largest element of v; a NaN if v has one (the first, as softmax_item keeps). */
CPU_MULTIVERSION
static double line_max(const double *restrict v, int64_t n)
{
    double lane[LANES];
    int64_t nan[LANES] = {0};
    for (int j = 0; j < LANES; j++) lane[j] = -INFINITY;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        CPU_SIMD for (int j = 0; j < LANES; j++) {
            double x = v[i + j];
            lane[j] = x > lane[j] ? x : lane[j]; /* max of the others is exact in any order */
            nan[j] |= x != x;
        }
    }
    for (int j = 0; i < n; i++, j++) {
        lane[j] = v[i] > lane[j] ? v[i] : lane[j];
        nan[j] |= v[i] != v[i];
    }
    double max = -INFINITY;
    int64_t any_nan = 0;
    for (int j = 0; j < LANES; j++) {
        max = lane[j] > max ? lane[j] : max;
        any_nan |= nan[j];
    }
    if (any_nan) {
        for (i = 0; v[i] == v[i]; i++) {}
        return v[i];
    }
    return max;
}

/* e[i] = exp(v[i] - max) */
CPU_MULTIVERSION
static void line_exp(const double *v, double *e, int64_t n, double max)
{
    CPU_SIMD for (int64_t i = 0; i < n; i++) e[i] = cpu_exp(v[i] - max);
}

/* The sum of exp(v[i] - max); with keep, v[i] becomes exp(v[i] - max). The
 * exps vectorize; the sum runs in order, one element after the other, like
 * softmax_item's: the terms are full double-precision values whose order
 * shows in the last bits of the sum, and log_softmax's log(sum) of a sum near
 * 1 magnifies those bits into the result. */
static double line_exp_sum(double *v, int64_t n, double max, bool keep)
{
    double sum = 0.0, local[TILE];
    for (int64_t done = 0; done < n; done += TILE) {
        int64_t m = n - done < TILE ? n - done : TILE;
        double *e = keep ? v + done : local;
        line_exp(v + done, e, m, max);
        for (int64_t i = 0; i < m; i++) sum += e[i];
    }
    return sum;
}

/* softmax: v[i] / sum; log_softmax: v[i] - max - log(sum). */
CPU_MULTIVERSION
static void line_finish(double *restrict v, int64_t n, double max, double sum, bool log_softmax)
{
    if (log_softmax) {
        double log_sum = log(sum);
        CPU_SIMD for (int64_t i = 0; i < n; i++) v[i] = v[i] - max - log_sum;
    } else {
        CPU_SIMD for (int64_t i = 0; i < n; i++) v[i] = v[i] / sum;
    }
}

static void softmax_line(const axis_plan *p, const axis_item *it, bool log_softmax, bool stream, double *line)
{
    int64_t n = p->length;
    const char *x = p->x + (it->x_base + it->x_inner[0]) * (int64_t)cpu_dtype_size(p->x_dtype);
    if (p->x_dtype == WGT_F32 && p->x_axis_stride == 1) {
        const float *f = (const float *)x;
        CPU_SIMD for (int64_t i = 0; i < n; i++) line[i] = f[i];
    } else {
        load_doubles(x, p->x_dtype, p->x_axis_stride, n, line);
    }
    double max = line_max(line, n);
    double sum = line_exp_sum(line, n, max, !log_softmax);
    line_finish(line, n, max, sum, log_softmax);

    char *out = p->out + (it->out_base + it->out_inner[0]) * (int64_t)cpu_dtype_size(p->out_dtype);
    if (p->out_dtype != WGT_F32 || p->out_axis_stride != 1) {
        store_doubles_at(out, p->out_dtype, NULL, p->out_axis_stride, n, line);
        return;
    }
    float rounded[TILE]; /* through a small buffer, so a large output can stream */
    for (int64_t done = 0; done < n; done += TILE) {
        int64_t m = n - done < TILE ? n - done : TILE;
        CPU_SIMD for (int64_t i = 0; i < m; i++) rounded[i] = (float)line[done + i];
        cpu_copy_out((float *)out + done, rounded, (size_t)m * sizeof(float), stream);
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
    int threads = parallel ? b->threads : 1;
    bool lines = p.n_inner == 1 && p.length <= SOFTMAX_LINE_MAX;
    int64_t per_thread = lines ? p.length : SOFTMAX_CACHE; /* doubles */
    double *scratch = cpu_scratch(b, (size_t)per_thread * sizeof(double) * (size_t)threads);
    if (!scratch && lines) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate a line of %lld doubles", (long long)p.length);
    bool stream = (size_t)(p.n_outer * p.length * p.n_inner) * cpu_dtype_size(p.out_dtype) >= CPU_STREAM_BYTES;
#pragma omp parallel num_threads(threads) if (parallel)
    {
        double *mine = scratch ? scratch + per_thread * omp_get_thread_num() : NULL; /* NULL: recompute instead */
        /* dynamic: a thread the system preempts holds up no one */
#pragma omp for schedule(dynamic, 4) nowait
        for (int64_t item = 0; item < n_items; item++) {
            axis_item it;
            axis_item_locate(&p, item, &it);
            if (lines) softmax_line(&p, &it, call->log_softmax, stream, mine);
            else softmax_item(&p, &it, call->log_softmax, mine);
        }
        if (stream) cpu_stream_fence();
    }
    return WGT_OK;
}
