/* WebAssembly build only (docs/web.md): the part of the CBLAS interface the
 * CPU backend calls, for a build without OpenBLAS. cblas_fallback.c computes
 * it with plain C loops; the native build never sees this header (it uses
 * OpenBLAS's, found by pkg-config). */
#ifndef WGT_WASM_CBLAS_H
#define WGT_WASM_CBLAS_H

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };
typedef enum CBLAS_ORDER CBLAS_ORDER;
typedef enum CBLAS_TRANSPOSE CBLAS_TRANSPOSE;

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b, int M, int N,
                 int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, int M, int N, float alpha, const float *A,
                 int lda, const float *x, int incx, float beta, float *y, int incy);
char *openblas_get_config(void);
void openblas_set_num_threads(int threads);

#endif
