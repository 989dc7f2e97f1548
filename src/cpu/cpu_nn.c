/*
 * CPU reference of the fused neural-network kernels (WGT_KERNEL_NN; contracts
 * in src/core/backend.h): layer/rms norm forward and backward, the per-chunk
 * partial sums of the norm's weight and bias gradients, cross-entropy
 * forward and backward, and the chunked sums of squares of wgt_sum_squares.
 *
 * Rows are contiguous (the front-end guarantees it), so a row is a pointer and
 * a length. Values are loaded as double and every sum is taken in double: this
 * backend is the reference the GPU is compared with. Rows are independent and
 * split over threads; the parameter-gradient partials are one chunk of rows
 * per task, so no two threads write one output element.
 */
#include "core/nn_call.h"
#include "cpu/cpu_internal.h"

int cpu_nn_input_count(const wgt_kernel_call *call) { return wgt_nn_call_inputs(call); }
int cpu_nn_output_count(const wgt_kernel_call *call) { return wgt_nn_call_outputs(call); }

static bool is_float(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16; }

bool cpu_nn_supports(const wgt_kernel_call *call)
{
    if ((unsigned)call->nn.kernel >= WGT_NN_KERNEL_COUNT) return false;
    if (call->n_inputs != cpu_nn_input_count(call) || call->n_outputs < cpu_nn_output_count(call)) return false;
    if (call->nn.kernel == WGT_NN_DROPOUT_ADD || call->nn.kernel == WGT_NN_DROPOUT_MASKED)
        return wgt_nn_call_shapes_valid(call); /* f32 views and an i32 mask, checked there */
    const wgt_tensor_view *x = &call->inputs[0];
    if (!is_float(x->dtype)) return false;
    for (int i = 1; i < call->n_inputs; i++) {
        wgt_dtype d = call->inputs[i].dtype;
        bool targets = (call->nn.kernel == WGT_NN_CROSS_ENTROPY || call->nn.kernel == WGT_NN_CROSS_ENTROPY_BACKWARD) &&
                       i == 1;
        if (targets ? d != WGT_I32 : !is_float(d)) return false;
    }
    for (int i = 0; i < cpu_nn_output_count(call); i++)
        if (!is_float(call->outputs[i].dtype)) return false;
    return true;
}

/* ------------------------------------------------------------ helpers */

typedef struct nn_row_view {
    const char *data; /* element 0 */
    wgt_dtype dtype;
    size_t size;
} nn_row_view;

static nn_row_view row_view(const wgt_tensor_view *v)
{
    nn_row_view r = {cpu_view_data(v), v->dtype, cpu_dtype_size(v->dtype)};
    return r;
}

static inline double at(const nn_row_view *v, int64_t i) { return cpu_load_f64(v->data + (size_t)i * v->size, v->dtype); }

static inline void put(const wgt_tensor_view *v, int64_t i, double value)
{
    cpu_store_f64(cpu_view_data(v) + (size_t)i * cpu_dtype_size(v->dtype), v->dtype, value);
}

/* Rows and row length of a [.., D] contiguous view (D = last dim). */
static void rows_of(const wgt_tensor_view *v, int64_t *rows, int64_t *d)
{
    *d = v->ndim ? v->shape[v->ndim - 1] : 1;
    *rows = *d ? cpu_numel(v->ndim, v->shape) / *d : 0;
}

static bool contiguous(const wgt_tensor_view *v)
{
    int64_t expect = 1;
    for (int k = v->ndim - 1; k >= 0; k--) {
        if (v->shape[k] != 1 && v->strides[k] != expect) return false;
        expect *= v->shape[k];
    }
    return true;
}

/* --------------------------------------------------------------- norms */

static wgt_status run_norm(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t rows, d;
    rows_of(&call->inputs[0], &rows, &d);
    nn_row_view x = row_view(&call->inputs[0]);
    int k = 1;
    nn_row_view w = call->nn.has_weight ? row_view(&call->inputs[k++]) : (nn_row_view){0};
    nn_row_view bias = call->nn.has_bias ? row_view(&call->inputs[k++]) : (nn_row_view){0};
    const wgt_tensor_view *y = &call->outputs[0], *stats = &call->outputs[1];
    bool rms = call->nn.rms, has_w = call->nn.has_weight, has_b = call->nn.has_bias;
    double eps = call->nn.eps;
    bool parallel = rows * d >= CPU_PARALLEL_THRESHOLD && rows > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * d;
        double mean = 0, sq = 0;
        if (!rms) {
            for (int64_t i = 0; i < d; i++) mean += at(&x, base + i);
            mean /= (double)d;
        }
        for (int64_t i = 0; i < d; i++) {
            double c = at(&x, base + i) - mean;
            sq += c * c;
        }
        double rstd = 1.0 / sqrt(sq / (double)d + eps);
        for (int64_t i = 0; i < d; i++) {
            double v = (at(&x, base + i) - mean) * rstd;
            if (has_w) v *= at(&w, i);
            if (has_b) v += at(&bias, i);
            put(y, base + i, v);
        }
        put(stats, 2 * r, mean);
        put(stats, 2 * r + 1, rstd);
    }
    return WGT_OK;
}

/* Partial sums per chunk of rows of dy xhat into dw [P, D] and of dy into db
 * [P, D] (db may be NULL). */
static wgt_status norm_partials(cpu_backend *b, const wgt_kernel_call *call, const wgt_tensor_view *xv,
                                const wgt_tensor_view *statsv, const wgt_tensor_view *dyv, const wgt_tensor_view *dw,
                                const wgt_tensor_view *db)
{
    int64_t rows, d;
    rows_of(xv, &rows, &d);
    nn_row_view x = row_view(xv), stats = row_view(statsv), dy = row_view(dyv);
    int64_t chunk = call->nn.chunk_rows, chunks = dw->shape[0];
    if (dw->ndim != 2 || dw->shape[1] != d || (db && (db->ndim != 2 || db->shape[0] != chunks || db->shape[1] != d)))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "weight/bias partials are not [P, %lld]", (long long)d);
    if (chunk <= 0 || (rows + chunk - 1) / chunk > chunks)
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%lld partial rows for chunks of %lld of %lld rows",
                        (long long)chunks, (long long)chunk, (long long)rows);
    double *sums = cpu_scratch(b, sizeof(double) * 2 * (size_t)d * (size_t)chunks);
    if (!sums && d * chunks > 0) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "scratch of %lld doubles", (long long)(2 * d * chunks));
    bool parallel = rows * d >= CPU_PARALLEL_THRESHOLD && chunks > 1;
#pragma omp parallel for num_threads(b->threads) schedule(dynamic, 1) if (parallel)
    for (int64_t p = 0; p < chunks; p++) {
        double *sw = sums + 2 * d * p, *sb = sw + d;
        for (int64_t i = 0; i < d; i++) sw[i] = sb[i] = 0;
        int64_t end = (p + 1) * chunk < rows ? (p + 1) * chunk : rows;
        for (int64_t r = p * chunk; r < end; r++) {
            double mean = at(&stats, 2 * r), rstd = at(&stats, 2 * r + 1);
            for (int64_t i = 0; i < d; i++) {
                double g = at(&dy, r * d + i);
                sw[i] += g * (at(&x, r * d + i) - mean) * rstd;
                sb[i] += g;
            }
        }
        for (int64_t i = 0; i < d; i++) {
            put(dw, p * d + i, sw[i]);
            if (db) put(db, p * d + i, sb[i]);
        }
    }
    return WGT_OK;
}

static wgt_status run_norm_backward(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t rows, d;
    rows_of(&call->inputs[0], &rows, &d);
    int k = 0;
    nn_row_view x = row_view(&call->inputs[k++]);
    nn_row_view w = call->nn.has_weight ? row_view(&call->inputs[k++]) : (nn_row_view){0};
    nn_row_view stats = row_view(&call->inputs[k++]);
    nn_row_view dy = row_view(&call->inputs[k++]);
    const wgt_tensor_view *dx = &call->outputs[0];
    nn_row_view dx_in = row_view(dx); /* accumulate: the gradient dx is added to (f32, in place) */
    bool rms = call->nn.rms, has_w = call->nn.has_weight, acc = call->nn.accumulate;
    bool parallel = rows * d >= CPU_PARALLEL_THRESHOLD && rows > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * d;
        double mean = at(&stats, 2 * r), rstd = at(&stats, 2 * r + 1);
        double sum_g = 0, sum_gx = 0;
        for (int64_t i = 0; i < d; i++) {
            double g = at(&dy, base + i) * (has_w ? at(&w, i) : 1.0);
            sum_g += g;
            sum_gx += g * (at(&x, base + i) - mean) * rstd;
        }
        double mean_g = rms ? 0.0 : sum_g / (double)d, mean_gx = sum_gx / (double)d;
        for (int64_t i = 0; i < d; i++) {
            double g = at(&dy, base + i) * (has_w ? at(&w, i) : 1.0);
            double xhat = (at(&x, base + i) - mean) * rstd;
            double v = rstd * (g - xhat * mean_gx - mean_g);
            /* accumulate: one f32 sum of the f32 value, as a separate add of dx would give */
            if (acc) v = (float)at(&dx_in, base + i) + (float)v;
            put(dx, base + i, v);
        }
    }
    if (call->nn.chunk_rows > 0)
        return norm_partials(b, call, &call->inputs[0], &call->inputs[k - 2], &call->inputs[k - 1], &call->outputs[1],
                             call->nn.has_bias ? &call->outputs[2] : NULL);
    return WGT_OK;
}

static wgt_status run_norm_param_grads(cpu_backend *b, const wgt_kernel_call *call)
{
    return norm_partials(b, call, &call->inputs[0], &call->inputs[1], &call->inputs[2], &call->outputs[0],
                         call->nn.has_bias ? &call->outputs[1] : NULL);
}

/* Column sums of [P, D] partials, in double, rows in order. */
static wgt_status run_partials_sum(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t chunks, d;
    rows_of(&call->inputs[0], &chunks, &d);
    for (int k = 0; k < 1 + (int)call->nn.has_bias; k++) {
        nn_row_view in = row_view(&call->inputs[k]);
        const wgt_tensor_view *out = &call->outputs[k];
        bool parallel = chunks * d >= CPU_PARALLEL_THRESHOLD && d > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
        for (int64_t i = 0; i < d; i++) {
            double sum = 0;
            for (int64_t p = 0; p < chunks; p++) sum += at(&in, p * d + i);
            put(out, i, sum);
        }
    }
    return WGT_OK;
}

/* Sums of squares per chunk of each input, each in double, chunks in order. */
static wgt_status run_sum_squares(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t chunk = call->nn.chunk_rows, first = 0;
    for (int k = 0; k < call->n_inputs; k++) {
        nn_row_view in = row_view(&call->inputs[k]);
        int64_t len = call->inputs[k].shape[0], parts = (len + chunk - 1) / chunk;
        const wgt_tensor_view *out = &call->outputs[0];
        bool parallel = len >= CPU_PARALLEL_THRESHOLD && parts > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
        for (int64_t p = 0; p < parts; p++) {
            int64_t end = (p + 1) * chunk < len ? (p + 1) * chunk : len;
            double sum = 0;
            for (int64_t i = p * chunk; i < end; i++) {
                double v = at(&in, i);
                sum += v * v;
            }
            put(out, first + p, sum);
        }
        first += parts;
    }
    return WGT_OK;
}

/* -------------------------------------------------------- cross-entropy */

static int32_t target_at(const wgt_tensor_view *t, int64_t r)
{
    int32_t v;
    memcpy(&v, cpu_view_data(t) + 4 * (size_t)(r * t->strides[0]), 4);
    return v;
}

static wgt_status run_cross_entropy(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t rows, c;
    rows_of(&call->inputs[0], &rows, &c);
    nn_row_view logits = row_view(&call->inputs[0]);
    const wgt_tensor_view *targets = &call->inputs[1], *loss = &call->outputs[0], *lse_out = &call->outputs[1];
    int64_t ignore = call->nn.ignore_index;
    bool parallel = rows * c >= CPU_PARALLEL_THRESHOLD && rows > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * c;
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < c; i++) {
            double v = at(&logits, base + i);
            if (v > m) m = v; /* a NaN is skipped here and poisons the sum below */
        }
        for (int64_t i = 0; i < c; i++) s += exp(at(&logits, base + i) - m);
        double lse = m == -INFINITY ? -INFINITY : m + log(s); /* a row of -inf: log sum = -inf, as PyTorch */
        int32_t t = target_at(targets, r);
        double l;
        if (t == ignore) l = 0;
        else if (t < 0 || t >= c) l = NAN;
        else l = lse - at(&logits, base + t);
        put(loss, r, l);
        put(lse_out, r, lse);
    }
    return WGT_OK;
}

static wgt_status run_cross_entropy_backward(cpu_backend *b, const wgt_kernel_call *call)
{
    int64_t rows, c;
    rows_of(&call->inputs[0], &rows, &c);
    nn_row_view logits = row_view(&call->inputs[0]), lse = row_view(&call->inputs[2]);
    const wgt_tensor_view *targets = &call->inputs[1], *g = &call->inputs[3], *dlogits = &call->outputs[0];
    nn_row_view gv = row_view(g);
    int64_t g_stride = g->ndim ? g->strides[0] : 0, ignore = call->nn.ignore_index;
    bool parallel = rows * c >= CPU_PARALLEL_THRESHOLD && rows > 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * c;
        int32_t t = target_at(targets, r);
        double scale = t == ignore ? 0.0 : at(&gv, r * g_stride), l = at(&lse, r);
        for (int64_t i = 0; i < c; i++) {
            double p = exp(at(&logits, base + i) - l);
            put(dlogits, base + i, t == ignore ? 0.0 : (p - (i == t)) * scale);
        }
    }
    return WGT_OK;
}

wgt_status cpu_run_nn(cpu_backend *b, const wgt_kernel_call *call)
{
    if (!wgt_nn_call_shapes_valid(call))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "NN kernel %d: views do not have the contract's shapes",
                        (int)call->nn.kernel);
    /* The front-end's promise, checked: every row-shaped view is contiguous. */
    for (int i = 0; i < call->n_inputs; i++) {
        bool row_shaped = !(call->nn.kernel == WGT_NN_CROSS_ENTROPY_BACKWARD && i == 3) &&
                          !((call->nn.kernel == WGT_NN_CROSS_ENTROPY || call->nn.kernel == WGT_NN_CROSS_ENTROPY_BACKWARD) &&
                            i == 1);
        if (row_shaped && !contiguous(&call->inputs[i]))
            return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "input %d is not contiguous", i);
    }
    for (int i = 0; i < cpu_nn_output_count(call); i++)
        if (!contiguous(&call->outputs[i]) || (!call->outputs[i].storage && cpu_numel(call->outputs[i].ndim, call->outputs[i].shape)))
            return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "output %d is not a contiguous view with storage", i);
    switch (call->nn.kernel) {
    case WGT_NN_NORM: return run_norm(b, call);
    case WGT_NN_NORM_BACKWARD: return run_norm_backward(b, call);
    case WGT_NN_NORM_PARAM_GRADS: return run_norm_param_grads(b, call);
    case WGT_NN_CROSS_ENTROPY: return run_cross_entropy(b, call);
    case WGT_NN_CROSS_ENTROPY_BACKWARD: return run_cross_entropy_backward(b, call);
    case WGT_NN_PARTIALS_SUM: return run_partials_sum(b, call);
    case WGT_NN_SUM_SQUARES: return run_sum_squares(b, call);
    case WGT_NN_DROPOUT_ADD: return cpu_run_dropout_add(b, call);
    case WGT_NN_DROPOUT_MASKED: return cpu_run_dropout_masked(b, call);
    default: return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "unknown NN kernel %d", (int)call->nn.kernel);
    }
}
