/*
 * MATMUL: batched matrix product.
 *
 *   a: [B.., M, K], b: [B.., K, N] -> out: [B.., M, N]
 *   (batch dims already broadcast: equal shapes, stride 0 where broadcast)
 *
 * f32 goes straight to OpenBLAS sgemm on the strided views whenever a matrix
 * has unit stride in one of its last two dims (transposed views are passed as
 * CblasTrans, never copied); other layouts are packed into a contiguous temp.
 * A matrix-vector product (M or N of 1) goes to sgemv instead.
 * f16 is widened to f32, multiplied by sgemm and rounded back to nearest even.
 * i32 is a plain loop whose sums wrap to int32, as integer arithmetic does.
 * An optional bias [N] (inputs[2], linear's) is added to each output row after
 * the product, before any rounding to f16; f16 operands may write an f32 out.
 * f32 x f16 (wgt_matmul_ex, either order): the f16 operand is widened into
 * the packing temp, the f32 one read in place, f32 or f16 out.
 * Batches run one after the other, each product split over the backend's
 * OpenMP threads (see blas_product). The SwiGLU epilogue (call->matmul.swiglu)
 * is the product into a temporary, then the elementwise SwiGLU (matmul_swiglu);
 * the RMSNorm prologue (norm) the NN NORM kernel into a temporary first; the
 * GELU-gradient epilogue (gelu_grad) the product, then its elementwise call.
 */
#include <limits.h>
#include <stdlib.h>

#include <cblas.h>
#include <omp.h>

#include "cpu/cpu_internal.h"

typedef struct matrix {
    const char *data;         /* element (0, 0) of batch 0 */
    int64_t rows, cols;
    int64_t row_stride, col_stride;
} matrix;

/* How sgemm can read a rows x cols matrix in place: row-major as is (NoTrans,
 * element (r, c) at r * ld + c) or as the transpose of a row-major matrix
 * (Trans, element (r, c) at c * ld + r). A dim of size 1 may have any stride.
 * False when neither fits (no unit stride, or rows that overlap). */
static bool blas_layout(const matrix *m, CBLAS_TRANSPOSE *trans, int64_t *ld)
{
    int64_t min_cols = m->cols > 1 ? m->cols : 1, min_rows = m->rows > 1 ? m->rows : 1;
    if (m->cols <= 1 || m->col_stride == 1) {
        int64_t l = m->rows <= 1 ? min_cols : m->row_stride;
        if (l >= min_cols && l <= INT_MAX) { *trans = CblasNoTrans; *ld = l; return true; }
    }
    if (m->rows <= 1 || m->row_stride == 1) {
        int64_t l = m->cols <= 1 ? min_rows : m->col_stride;
        if (l >= min_rows && l <= INT_MAX) { *trans = CblasTrans; *ld = l; return true; }
    }
    return false;
}

/* Packs a f32 or f16 matrix (one batch, starting at src) into dst row-major. */
static void pack_as_float(const char *src, wgt_dtype dtype, const matrix *m, float *dst)
{
    for (int64_t r = 0; r < m->rows; r++) {
        for (int64_t c = 0; c < m->cols; c++) {
            int64_t at = r * m->row_stride + c * m->col_stride;
            dst[r * m->cols + c] = dtype == WGT_F16 ? cpu_f16_to_f32(((const uint16_t *)src)[at]) : ((const float *)src)[at];
        }
    }
}

typedef struct matmul_plan {
    matrix a, b, out;
    wgt_dtype a_dtype, b_dtype, out_dtype; /* one dtype, or f32 and f16 mixed */
    wgt_dtype bias_dtype;
    const char *bias;         /* NULL, or element 0 of bias [N] (bias_dtype) */
    int64_t bias_stride;
    cpu_walk batch;           /* views: a, b, out */
    int64_t n_batches;
    /* sgemm's view of each operand, the same for every batch; pack_* when an
     * operand goes through a contiguous f32 temp instead */
    CBLAS_TRANSPOSE trans_a, trans_b;
    int64_t lda, ldb, ldc;
    bool pack_a, pack_b, pack_c;
} matmul_plan;

static void plan_gemm(matmul_plan *p)
{
    int64_t K = p->a.cols, N = p->b.cols;
    CBLAS_TRANSPOSE trans_c = CblasNoTrans;
    p->pack_a = !(p->a_dtype == WGT_F32 && blas_layout(&p->a, &p->trans_a, &p->lda));
    p->pack_b = !(p->b_dtype == WGT_F32 && blas_layout(&p->b, &p->trans_b, &p->ldb));
    p->pack_c = !(p->out_dtype == WGT_F32 && blas_layout(&p->out, &trans_c, &p->ldc) && trans_c == CblasNoTrans);
    if (p->pack_a) { p->trans_a = CblasNoTrans; p->lda = K > 1 ? K : 1; }
    if (p->pack_b) { p->trans_b = CblasNoTrans; p->ldb = N > 1 ? N : 1; }
    if (p->pack_c) p->ldc = N > 1 ? N : 1;
}

/*
 * BLAS runs on the backend's OpenMP threads, OpenBLAS itself on one: each
 * thread multiplies one band of output rows (or columns) with a one-thread
 * BLAS call. Two thread pools on one machine fight: OpenMP's threads spin for a
 * while after every elementwise kernel, OpenBLAS's after every product, and a
 * product right after an elementwise op (or the reverse) ran several times
 * slower than alone. Each output element is still computed by the same BLAS
 * kernel over the same K order, so the bands change no result.
 *
 * A product with one row or one column (a matrix times a vector) goes to
 * sgemv: sgemm would first copy the whole matrix into its packed layout, as
 * much memory traffic as the product itself.
 */

/* Bands are whole multiples of this many rows or columns (cache lines of the
 * output, and the same row groups for the kernels as without bands). */
#define BAND_UNIT 64
/* Products below this many multiply-adds run on one thread. */
#define BLAS_PARALLEL_WORK (1 << 18)

/* Output rows [first, first + count) of a x b: rows of a and of out. a, b and
 * out are the batch's operands after packing. */
static void product_rows(const matmul_plan *p, const float *a, const float *b, float *out, int64_t first, int64_t count)
{
    int64_t K = p->a.cols, N = p->b.cols;
    /* row i of a: stored row i (NoTrans) or stored column i (Trans) */
    const float *a_band = a + (p->trans_a == CblasNoTrans ? first * p->lda : first);
    if (N == 1) { /* out column = A x (b column) */
        int incx = K == 1 || p->pack_b ? 1 : (int)p->b.row_stride;
        int incy = p->a.rows == 1 || p->pack_c ? 1 : (int)p->out.row_stride;
        float *y = out + first * incy;
        if (p->trans_a == CblasNoTrans) cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)count, (int)K, 1.0f, a_band, (int)p->lda, b, incx, 0.0f, y, incy);
        else cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)count, 1.0f, a_band, (int)p->lda, b, incx, 0.0f, y, incy);
        return;
    }
    cblas_sgemm(CblasRowMajor, p->trans_a, p->trans_b, (int)count, (int)N, (int)K, 1.0f, a_band, (int)p->lda, b,
                (int)p->ldb, 0.0f, out + first * p->ldc, (int)p->ldc);
}

/* Output columns [first, first + count): columns of b and of out. */
static void product_columns(const matmul_plan *p, const float *a, const float *b, float *out, int64_t first, int64_t count)
{
    int64_t M = p->a.rows, K = p->a.cols;
    const float *b_band = b + (p->trans_b == CblasNoTrans ? first : first * p->ldb);
    if (M == 1) { /* out row = (a row) x B = B^T x (a row) */
        int incx = K == 1 || p->pack_a ? 1 : (int)p->a.col_stride;
        int incy = p->pack_c ? 1 : (int)p->out.col_stride;
        float *y = out + first * incy;
        if (p->trans_b == CblasNoTrans) cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)count, 1.0f, b_band, (int)p->ldb, a, incx, 0.0f, y, incy);
        else cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)count, (int)K, 1.0f, b_band, (int)p->ldb, a, incx, 0.0f, y, incy);
        return;
    }
    cblas_sgemm(CblasRowMajor, p->trans_a, p->trans_b, (int)M, (int)count, (int)K, 1.0f, a, (int)p->lda, b_band,
                (int)p->ldb, 0.0f, out + first, (int)p->ldc);
}

/* out = a x b on up to `threads` threads, one band each. */
static void blas_product(const matmul_plan *p, int threads, const float *a, const float *b, float *out)
{
    int64_t M = p->a.rows, K = p->a.cols, N = p->b.cols;
    /* matrix x vector: bands of rows; vector x matrix: of columns; else of the longer side */
    bool by_rows = N == 1 || (M > 1 && M >= N);
    int64_t total = by_rows ? M : N, units = (total + BAND_UNIT - 1) / BAND_UNIT;
    int parts = (double)M * (double)N * (double)K < BLAS_PARALLEL_WORK ? 1 : threads;
    if (parts > units) parts = (int)units;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
    for (int part = 0; part < parts; part++) {
        int64_t first = units * part / parts * BAND_UNIT, last = units * (part + 1) / parts * BAND_UNIT;
        if (last > total) last = total;
        if (by_rows) product_rows(p, a, b, out, first, last - first);
        else product_columns(p, a, b, out, first, last - first);
    }
}

/* One batch of f32/f16 through BLAS; the temps hold the packed operands. */
static void gemm_batch(const matmul_plan *p, int threads, const cpu_walk_position *pos, float *temp_a, float *temp_b,
                       float *temp_c)
{
    const char *a = p->a.data + pos->offsets[0] * (int64_t)cpu_dtype_size(p->a_dtype);
    const char *b = p->b.data + pos->offsets[1] * (int64_t)cpu_dtype_size(p->b_dtype);
    char *out = (char *)p->out.data + pos->offsets[2] * (int64_t)cpu_dtype_size(p->out_dtype);
    int64_t M = p->a.rows, N = p->b.cols;
    if (p->pack_a) pack_as_float(a, p->a_dtype, &p->a, temp_a);
    if (p->pack_b) pack_as_float(b, p->b_dtype, &p->b, temp_b);
    const float *a_f32 = p->pack_a ? temp_a : (const float *)a, *b_f32 = p->pack_b ? temp_b : (const float *)b;
    float *out_f32 = p->pack_c ? temp_c : (float *)out;
    int64_t ldc = p->pack_c ? N : p->ldc;
    blas_product(p, threads, a_f32, b_f32, out_f32);
    if (p->bias) {
        for (int64_t j = 0; j < N; j++) {
            float bj = (float)cpu_load_f64(p->bias + j * p->bias_stride * (int64_t)cpu_dtype_size(p->bias_dtype),
                                           p->bias_dtype);
            for (int64_t i = 0; i < M; i++) out_f32[i * ldc + j] += bj;
        }
    }
    if (!p->pack_c) return;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            int64_t at = i * p->out.row_stride + j * p->out.col_stride;
            float v = temp_c[i * N + j];
            if (p->out_dtype == WGT_F16) ((uint16_t *)out)[at] = cpu_f32_to_f16(v); /* nearest even */
            else ((float *)out)[at] = v;
        }
    }
}

/* out[i, j] = sum_k a[i, k] * b[k, j] in uint32, i.e. wrapping int32. */
static bool matmul_i32(const matmul_plan *p, int threads)
{
    int64_t M = p->a.rows, K = p->a.cols, N = p->b.cols, rows = p->n_batches * M;
    bool failed = false;
    bool parallel = threads > 1 && rows > 1 && rows * N * (K > 0 ? K : 1) > CPU_PARALLEL_THRESHOLD;
#pragma omp parallel num_threads(threads) if (parallel)
    {
        uint32_t *acc = malloc((size_t)N * sizeof *acc);
        if (!acc) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(static)
        for (int64_t item = 0; item < rows; item++) {
            if (!acc) continue;
            int64_t i = item % M;
            cpu_walk_position pos;
            cpu_walk_seek(&p->batch, item / M, &pos);
            const int32_t *a = (const int32_t *)p->a.data + pos.offsets[0] + i * p->a.row_stride;
            const int32_t *b = (const int32_t *)p->b.data + pos.offsets[1];
            int32_t *out = (int32_t *)p->out.data + pos.offsets[2] + i * p->out.row_stride;
            memset(acc, 0, (size_t)N * sizeof *acc);
            for (int64_t k = 0; k < K; k++) {
                uint32_t aik = (uint32_t)a[k * p->a.col_stride];
                const int32_t *b_row = b + k * p->b.row_stride;
                if (p->b.col_stride == 1) for (int64_t j = 0; j < N; j++) acc[j] += aik * (uint32_t)b_row[j];
                else for (int64_t j = 0; j < N; j++) acc[j] += aik * (uint32_t)b_row[j * p->b.col_stride];
            }
            for (int64_t j = 0; j < N; j++) out[j * p->out.col_stride] = (int32_t)acc[j];
        }
        free(acc);
    }
    return !failed;
}

static matrix last_two_dims(const wgt_tensor_view *v)
{
    int n = v->ndim;
    return (matrix){.data = cpu_view_data(v), .rows = v->shape[n - 2], .cols = v->shape[n - 1],
                    .row_stride = v->strides[n - 2], .col_stride = v->strides[n - 1]};
}

/* MATMUL with the SwiGLU epilogue (wgt_linear_swiglu_ex): the product into a
 * temporary [.., M, N] of out's dtype, then the ELEMENTWISE kernel of
 * WGT_SWIGLU_EXPR over its even and odd columns into out: by definition the
 * values of the two calls, the reference the WebGPU backend's fused GEMV
 * epilogue is held to. */
static wgt_status matmul_swiglu(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *out = &call->outputs[0], *bv = &call->inputs[1];
    const int n = out->ndim;
    wgt_expr e;
    wgt_kernel_call ew;
    char err[160];
    if ((out->dtype != WGT_F32 && out->dtype != WGT_F16) || n < 2 || bv->ndim != n ||
        bv->shape[n - 1] != 2 * out->shape[n - 1])
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "SwiGLU epilogue: %s out of %lld columns for %lld products",
                        wgt_dtype_name(out->dtype), (long long)out->shape[n - 1], (long long)bv->shape[bv->ndim - 1]);
    wgt_tensor_view gu = *out;
    gu.shape[n - 1] = bv->shape[n - 1];
    wgt_contiguous_strides(n, gu.shape, gu.strides);
    gu.offset = 0;
    gu.storage = wgt_storage_create(b->base.ctx, (size_t)cpu_numel(n, gu.shape) * cpu_dtype_size(gu.dtype) + 4,
                                    call->op_name);
    if (!gu.storage) return wgt_context_status(b->base.ctx);
    wgt_kernel_call mm = *call;
    mm.outputs[0] = gu;
    mm.matmul.swiglu = false;
    wgt_status s = cpu_run_matmul(b, &mm);
    if (s == WGT_OK && wgt_swiglu_elementwise_call(call->op_name, &gu, out, &e, &ew, err, (int)sizeof(err)))
        s = cpu_fail(b, call, WGT_ERR_INTERNAL, "SwiGLU expression: %s", err);
    else if (s == WGT_OK)
        s = cpu_run_elementwise(b, &ew);
    wgt_storage_release(b->base.ctx, gu.storage);
    return s;
}

/* MATMUL with the GELU-gradient epilogue (wgt_gelu_linear's backward): the
 * product into out, then the ELEMENTWISE call of WGT_GELU_GRAD_EXPR over it
 * and h (inputs[2]) into out again (each element read before it is written:
 * no temporary, so a training step's peak holds no extra [M, N]): the
 * reference WebGPU's fused GEMM epilogue is held to. */
static wgt_status matmul_gelu_grad(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *out = &call->outputs[0], *h = &call->inputs[2];
    if (!wgt_matmul_gelu_grad_call_valid(call))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "GELU-gradient epilogue: %d inputs, %s out, %s h (3, f32 "
                        "[M, N] both)", call->n_inputs, wgt_dtype_name(out->dtype), wgt_dtype_name(h->dtype));
    wgt_kernel_call mm = *call;
    mm.n_inputs = 2;
    mm.matmul.gelu_grad = false;
    wgt_status s = cpu_run_matmul(b, &mm);
    wgt_expr e;
    wgt_kernel_call ew;
    char err[160];
    if (s == WGT_OK && wgt_gelu_grad_elementwise_call(call->op_name, out, h, out, &e, &ew, err, (int)sizeof(err)))
        s = cpu_fail(b, call, WGT_ERR_INTERNAL, "GELU-gradient expression: %s", err);
    else if (s == WGT_OK)
        s = cpu_run_elementwise(b, &ew);
    return s;
}

/* MATMUL with the RMSNorm prologue (wgt_rms_norm_linear_ex): the NN NORM
 * kernel (rms, the weight in inputs[2]) writes a's rows into a temporary,
 * then the product (and its SwiGLU epilogue, if any) reads that: the values
 * of the two calls by definition. */
static wgt_status matmul_norm(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *a = &call->inputs[0];
    const int n = a->ndim;
    if (a->dtype != WGT_F32 || call->n_inputs != 3 || !wgt_view_is_contiguous(a))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "RMSNorm prologue: %s a, %d inputs (contiguous f32, 3)",
                        wgt_dtype_name(a->dtype), call->n_inputs);
    const int64_t d = a->shape[n - 1], rows = d ? cpu_numel(n, a->shape) / d : 0;
    wgt_tensor_view y = *a, stats;
    memset(&stats, 0, sizeof(stats));
    y.offset = 0;
    y.storage = wgt_storage_create(b->base.ctx, (size_t)(rows * d) * 4 + 4, call->op_name);
    stats.dtype = WGT_F32;
    stats.ndim = 2;
    stats.shape[0] = rows, stats.shape[1] = 2;
    stats.strides[0] = 2, stats.strides[1] = 1;
    stats.storage = y.storage ? wgt_storage_create(b->base.ctx, (size_t)(rows * 2) * 4 + 4, call->op_name) : NULL;
    wgt_status s = stats.storage ? WGT_OK : wgt_context_status(b->base.ctx);
    if (s == WGT_OK) {
        wgt_kernel_call nn;
        wgt_rms_norm_prologue_call(call, a, &call->inputs[2], &y, &stats, rows, d, &nn);
        s = cpu_run_nn(b, &nn);
    }
    if (s == WGT_OK) {
        wgt_kernel_call mm = *call;
        mm.inputs[0] = y;
        mm.n_inputs = 2;
        mm.matmul.norm = false;
        s = cpu_run_matmul(b, &mm);
    }
    if (stats.storage) wgt_storage_release(b->base.ctx, stats.storage);
    if (y.storage) wgt_storage_release(b->base.ctx, y.storage);
    return s;
}

/* MATMUL with the rope epilogue (wgt_rms_norm_linear_rope_into): the product
 * (and its RMSNorm prologue) into a temporary [1, N] of out's dtype, then the
 * ELEMENTWISE calls of wgt_rope_rows_elementwise_calls into out: the values of
 * those calls by definition, the reference for WebGPU's fused epilogue. */
static wgt_status matmul_rope(cpu_backend *b, const wgt_kernel_call *call)
{
    if (call->n_inputs != 4)
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "rope epilogue: %d inputs (4)", call->n_inputs);
    wgt_kernel_call mm = *call;
    mm.n_inputs = 3;
    mm.matmul.rope = false;
    return cpu_run_rope_epilogue(b, call, &mm, call->outputs[0].dtype, &call->inputs[3], call->matmul.rope_pass_begin,
                                 call->matmul.rope_pass_end, cpu_run_matmul);
}

wgt_status cpu_run_matmul(cpu_backend *b, const wgt_kernel_call *call)
{
    if (call->matmul.rope) return matmul_rope(b, call);
    if (call->matmul.norm) return matmul_norm(b, call);
    if (call->matmul.swiglu) return matmul_swiglu(b, call);
    if (call->matmul.gelu_grad) return matmul_gelu_grad(b, call);
    const wgt_tensor_view *a = &call->inputs[0], *bv = &call->inputs[1], *out = &call->outputs[0];
    char as[96], bs[96], os[96];
    int n = a->ndim;
    bool shapes_agree = n >= 2 && bv->ndim == n && out->ndim == n;
    for (int d = 0; shapes_agree && d < n - 2; d++) {
        shapes_agree = bv->shape[d] == a->shape[d] && out->shape[d] == a->shape[d];
    }
    shapes_agree = shapes_agree && a->shape[n - 1] == bv->shape[n - 2] && out->shape[n - 2] == a->shape[n - 2] &&
                   out->shape[n - 1] == bv->shape[n - 1];
    if (!shapes_agree) {
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "a %s, b %s, out %s: need [B.., M, K] x [B.., K, N] -> [B.., M, N]",
                        cpu_shape_string(a->ndim, a->shape, as, sizeof as), cpu_shape_string(bv->ndim, bv->shape, bs, sizeof bs),
                        cpu_shape_string(out->ndim, out->shape, os, sizeof os));
    }
    if (call->n_inputs == 3 && (call->inputs[2].ndim != 1 || call->inputs[2].shape[0] != bv->shape[n - 1]))
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "bias %s for %lld output columns",
                        cpu_shape_string(call->inputs[2].ndim, call->inputs[2].shape, as, sizeof as),
                        (long long)bv->shape[n - 1]);
    matmul_plan p = {.a = last_two_dims(a), .b = last_two_dims(bv), .out = last_two_dims(out), .a_dtype = a->dtype,
                     .b_dtype = bv->dtype, .out_dtype = out->dtype, .bias_dtype = a->dtype};
    if (call->n_inputs == 3) {
        p.bias_dtype = call->inputs[2].dtype;
        p.bias = cpu_view_data(&call->inputs[2]);
        p.bias_stride = call->inputs[2].strides[0];
    }
    int64_t M = p.a.rows, K = p.a.cols, N = p.b.cols;
    p.n_batches = cpu_numel(n - 2, a->shape);
    if (p.n_batches == 0 || M == 0 || N == 0) return WGT_OK;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX) {
        return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "dims M=%lld N=%lld K=%lld exceed the BLAS int range",
                        (long long)M, (long long)N, (long long)K);
    }
    const int64_t *strides[3] = {a->strides, bv->strides, out->strides};
    cpu_walk_init(&p.batch, n - 2, a->shape, 3, strides);

    if (p.a_dtype == WGT_I32) {
        if (!matmul_i32(&p, b->threads)) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate a row of %lld sums", (long long)N);
        return WGT_OK;
    }
    if (K == 0) { /* an empty sum: zeros (plus the bias), without asking BLAS about k = 0 */
        size_t size = cpu_dtype_size(p.out_dtype), in_size = cpu_dtype_size(p.bias_dtype);
        cpu_walk_position pos;
        cpu_walk_seek(&p.batch, 0, &pos);
        for (int64_t batch = 0; batch < p.n_batches; batch++) {
            char *o = (char *)p.out.data + pos.offsets[2] * (int64_t)size;
            for (int64_t i = 0; i < M; i++) {
                for (int64_t j = 0; j < N; j++) {
                    double v = p.bias ? cpu_load_f64(p.bias + j * p.bias_stride * (int64_t)in_size, p.bias_dtype) : 0.0;
                    cpu_store_f64(o + (i * p.out.row_stride + j * p.out.col_stride) * (int64_t)size, p.out_dtype, v);
                }
            }
            if (batch + 1 < p.n_batches) cpu_walk_advance(&p.batch, &pos, 1);
        }
        return WGT_OK;
    }
    plan_gemm(&p);
    size_t size_a = p.pack_a ? (size_t)(M * K) : 0, size_b = p.pack_b ? (size_t)(K * N) : 0, size_c = p.pack_c ? (size_t)(M * N) : 0;
    size_t temp_floats = size_a + size_b + size_c;
    float *temp = temp_floats ? malloc(temp_floats * sizeof(float)) : NULL;
    if (temp_floats && !temp) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packing space", temp_floats * sizeof(float));
    cpu_walk_position pos;
    cpu_walk_seek(&p.batch, 0, &pos);
    for (int64_t batch = 0; batch < p.n_batches; batch++) {
        gemm_batch(&p, b->threads, &pos, temp, temp ? temp + size_a : NULL, temp ? temp + size_a + size_b : NULL);
        if (batch + 1 < p.n_batches) cpu_walk_advance(&p.batch, &pos, 1);
    }
    free(temp);
    return WGT_OK;
}
