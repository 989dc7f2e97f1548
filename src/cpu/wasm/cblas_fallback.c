/* WebAssembly build only (docs/web.md): a plain C GEMM/GEMV for the CPU
 * backend where OpenBLAS is absent. Row-major only (all the backend uses).
 * The GEMM walks i, p, j so the innermost loop runs along contiguous rows of
 * B and C, which the compiler vectorizes with wasm SIMD (-msimd128); it is
 * the page's CPU fallback, not a tuned kernel. */
#include <stddef.h>

#include "cblas.h"

static float at(const float *m, int ld, int r, int c, int trans) { return trans ? m[(size_t)c * ld + r] : m[(size_t)r * ld + c]; }

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b, int M, int N,
                 int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)order; /* CblasRowMajor */
    int ta = trans_a != CblasNoTrans, tb = trans_b != CblasNoTrans;
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < N; j++) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
        for (int p = 0; p < K; p++) {
            float a = alpha * at(A, lda, i, p, ta);
            if (!tb) {
                const float *b = B + (size_t)p * ldb;
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            } else {
                for (int j = 0; j < N; j++) c[j] += a * B[(size_t)j * ldb + p];
            }
        }
    }
}

void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, int M, int N, float alpha, const float *A,
                 int lda, const float *x, int incx, float beta, float *y, int incy)
{
    (void)order; /* CblasRowMajor: A is M x N */
    int rows = trans == CblasNoTrans ? M : N, cols = trans == CblasNoTrans ? N : M;
    for (int r = 0; r < rows; r++) {
        float sum = 0.0f;
        for (int k = 0; k < cols; k++) sum += at(A, lda, r, k, trans != CblasNoTrans) * x[(ptrdiff_t)k * incx];
        float *out = y + (ptrdiff_t)r * incy;
        *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
    }
}

static char config[] = "plain C GEMM (wasm build, no BLAS)";
char *openblas_get_config(void) { return config; }
void openblas_set_num_threads(int threads) { (void)threads; }
