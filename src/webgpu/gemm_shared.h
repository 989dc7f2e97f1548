/*
 * Private to the MATMUL implementation on WebGPU (webgpu_matmul.c: split-K,
 * the tiled GEMM, f16 emulation, decode's fused calls; webgpu_matmul_gemv.c: the
 * matrix-vector kernels; webgpu_matmul_plan.c: configs, problems, pipelines
 * and dispatch, which both use). The types mirror the kernels' Params.
 */
#ifndef WGT_WEBGPU_GEMM_SHARED_H
#define WGT_WEBGPU_GEMM_SHARED_H

#include "webgpu/webgpu_internal.h"

#define MATMUL_MAX_BATCH_DIMS 8      /* slots in Params (collapsed batch dims) */

typedef enum matmul_kernel { KERNEL_TILED, KERNEL_GEMV_ROWS, KERNEL_GEMV_COLS } matmul_kernel;

typedef struct matmul_config {
    const char *name;
    matmul_kernel kernel;
    int bm, bn, bk, tm, tn; /* TILED: block tile and outputs per invocation */
    int group_m;            /* TILED: tile rows walked together (L2 reuse) */
    int threads, k_split;   /* GEMV_ROWS: invocations per row; GEMV_COLS: invocations along i and along k */
    int blocks;             /* TILED: fetch operands whose aligned quads run along k in 4x4 blocks (A_BLOCK) */
    int transpose;          /* TILED: large products copy operands read along k transposed first (run_transposed) */
    int warp_tx;            /* TILED: 0, or a warp's invocations cover warp_tx tile columns x 32 / warp_tx
                               rows (fewer distinct shared vec4s per load than 16 x 2) */
} matmul_config;

/* Mirrors struct Params of matmul_common.wgsl. */
typedef struct matmul_params {
    uint32_t M, N, K, batches;
    uint32_t a_offset, a_row, a_col, tiles_m;
    uint32_t b_offset, b_row, b_col, tiles_n;
    uint32_t out_offset, batch_ndim, group_m, split_k;
    uint32_t batch_shape[MATMUL_MAX_BATCH_DIMS];
    uint32_t a_batch[MATMUL_MAX_BATCH_DIMS];
    uint32_t b_batch[MATMUL_MAX_BATCH_DIMS];
    uint32_t bias_offset, bias_row, bias_col, split_stride;
    float norm_eps;
    uint32_t norm_offset, rope_offset, rope_row;
    uint32_t rope_pass_begin, rope_pass_end, rope_pad0, rope_pad1;
} matmul_params;

/* One product as the kernels see it: batch dims collapsed, sizes checked to fit u32. */
typedef struct matmul_problem {
    const wgt_tensor_view *a, *b, *out;
    const wgt_tensor_view *bias;   /* NULL, or bias [N] */
    int64_t M, N, K, batches;
    int batch_ndim;
    int64_t batch_shape[MATMUL_MAX_BATCH_DIMS], a_batch[MATMUL_MAX_BATCH_DIMS], b_batch[MATMUL_MAX_BATCH_DIMS];
    wgt_tensor_view folded[3];     /* 2-D a, b, out when a broadcast batch was folded into M (make_problem) */
    bool swiglu;                   /* run_gemv_half's SwiGLU epilogue (run_swiglu): out holds N / 2 */
    const wgt_tensor_view *norm;   /* run_gemv_half's RMSNorm prologue (run_norm): its weight [K] f32 */
    double norm_eps;
    const wgt_tensor_view *rope;   /* run_gemv_half's rope epilogue (run_rope): its table [4, D/2] */
    int64_t rope_pass_begin, rope_pass_end;
    bool half_math;                /* run_tiled: f16 operands multiplied in f16 (HALF_MATH of matmul_tiled.wgsl) */
    const wgt_tensor_view *gelu_h; /* run_tiled's GELU-gradient epilogue (run_gelu_grad): h [M, N] f32, contiguous */
    /* run_gemv_half's attention prologue (wgt_attention_linear_ex): the vector is
     * the decode attention's row, merged from these partials (a is a placeholder
     * view of part_o); combine_f16: the attention's output dtype is f16 */
    const webgpu_decode_partials *combine;
    bool combine_f16;
} matmul_problem;

/* One operand as a tile loader sees it: an outer dim (m for a, n for b) and k. */
typedef struct matmul_operand {
    int64_t offset, outer, outer_stride, k, k_stride;
    const int64_t *batch_strides;
} matmul_operand;

static inline int64_t matmul_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- webgpu_matmul_plan.c */
const matmul_config *matmul_find_config(const char *name);
int64_t matmul_config_threads(const matmul_config *c);
/* Whether config c fits the device's limits (and the tiled kernel's index logic). */
bool matmul_config_fits(const webgpu_backend *wg, const matmul_config *c);
/* The config WGT_MATMUL_CONFIG names, if it is of this kernel kind and fits. */
const matmul_config *matmul_forced_config(const webgpu_backend *wg, matmul_kernel kernel);
/* The matrix-vector config for kernel and K (WGT_MATMUL_CONFIG where it names one). */
const matmul_config *matmul_choose_gemv(const webgpu_backend *wg, matmul_kernel kernel, int64_t K);
/* Whether operand o's quads of 4 (along k, or along its outer dim) are aligned vec4s. */
bool matmul_quads_aligned(const matmul_problem *p, const matmul_operand *o, bool along_k);
/* "f32", "f16" or "i32": the WGSL type of a bias or an operand. */
const char *matmul_wgsl_type(wgt_dtype d);
const char *matmul_dtype_key(wgt_dtype dtype);
/* The pipeline of kernel file for problem p with its prelude (consts), cached
 * under key; _ex names the two operands' types (matrix-vector kernels bind the
 * matrix as a). */
wgt_status matmul_get_pipeline_ex(webgpu_backend *wg, const matmul_problem *p, const char *key, const char *file,
                                  wgt_dtype t, wgt_dtype ta, wgt_dtype tb, const char *consts, const char *op,
                                  webgpu_pipeline **out);
wgt_status matmul_get_pipeline(webgpu_backend *wg, const matmul_problem *p, const char *key, const char *file,
                               wgt_dtype t, const char *consts, const char *op, webgpu_pipeline **out);
void matmul_fill_batches(const matmul_problem *p, const int64_t *a_batch, const int64_t *b_batch, matmul_params *q);
/* Binds first, second (a and b as the kernel names them), p's out and bias, and dispatches groups workgroups. */
wgt_status matmul_dispatch(webgpu_backend *wg, webgpu_pipeline *pipe, const wgt_tensor_view *first,
                           const wgt_tensor_view *second, const matmul_problem *p, const matmul_params *q, int64_t groups,
                           const char *op);
/* Collapses the batch dims and checks that every size fits the kernels' u32s. */
wgt_status matmul_make_problem(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                               const wgt_tensor_view *bias, const wgt_tensor_view *out, const char *op,
                               matmul_problem *p);

/* ---- webgpu_matmul_gemv.c */
/* M == 1 or N == 1: y[i] = sum_k mat[i, k] * x[k] with mat = a (N == 1) or b
 * transposed (M == 1, N > 1). */
/* How run_gemv sees a matrix-vector problem: which operand is the matrix, the
 * operands, the kernel and its config (NULL when none fits). */
typedef struct gemv_plan {
    bool mat_is_a;
    const wgt_tensor_view *mat, *vec;
    matmul_operand om, ov;
    matmul_kernel kernel;
    const matmul_config *c;
    bool half;                     /* matmul_gemv_half */
} gemv_plan;
void matmul_plan_gemv(const webgpu_backend *wg, const matmul_problem *p, gemv_plan *g);
/* M == 1 or N == 1: the matrix-vector kernels. */
wgt_status matmul_run_gemv(webgpu_backend *wg, const matmul_problem *p, const char *op);
/* matmul_gemv_half with p's bias, SwiGLU (p->swiglu) or RMSNorm (p->norm). */
wgt_status matmul_run_gemv_half(webgpu_backend *wg, const matmul_problem *p, const matmul_config *c,
                                const matmul_operand *om, const matmul_operand *ov, bool mat_is_a, const char *op);

#endif
