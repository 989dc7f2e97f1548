/*
 * Private to the CPU backend: the backend object, dtype conversions (f16 with
 * round-to-nearest-even, the saturating float -> int cast of src/core/expr.h),
 * scalar loads/stores by dtype, and the strided walk every kernel uses to visit
 * a view (or several views of one shape) in row-major order.
 *
 * Conversions here are the library's single definition of the store rules on
 * the CPU; the WebGPU backend must match them bit for bit.
 */
#ifndef WGT_CPU_INTERNAL_H
#define WGT_CPU_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/backend.h"
#include "core/internal.h"
#include "cpu/cpu_math.h" /* also cpu_f32_bits and friends */

/* Before a loop without loop-carried dependencies: vectorize it. gcc -O2 alone
 * vectorizes almost nothing (its very-cheap cost model); this does not relax
 * IEEE semantics (no reassociation, NaN rules kept). */
#define CPU_SIMD _Pragma("omp simd")

/* Before a compute-bound function: one clone per x86-64 level (baseline SSE2,
 * AVX2, AVX-512), picked when the library loads. The build targets baseline
 * x86-64; wider vectors pay where a loop computes (exp, softmax, sums of
 * floats in double) rather than waits on memory. Every clone gives the same
 * bits: C11 mode compiles without FMA contraction, and these loops vectorize
 * without reordering any arithmetic. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define CPU_MULTIVERSION __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define CPU_MULTIVERSION
#endif

/* Work below this many elements runs on one thread: starting a parallel region
 * costs more than the work saves. */
#define CPU_PARALLEL_THRESHOLD 32768

/* Size classes of the storage cache: 256 bytes, then four per power of two. */
#define CPU_SIZE_CLASSES 400 /* size_class in cpu_backend.c: 1 + 12 * 4 + 43 * 8 */

typedef struct cpu_block cpu_block; /* header in front of every storage (cpu_backend.c) */

/* Shared cores: fewer threads while the calling thread keeps being preempted
 * (cpu_backend.c, cpu_adapt_threads). */
typedef struct cpu_contention {
    bool enabled;             /* thread count chosen by wgtensor, not the user */
    int max_threads;
    double window_start_ms, hold_until_ms, hold_ms;
    bool probing;             /* threads were just raised: is it still busy? */
    long window_switches;     /* involuntary context switches at window start */
} cpu_contention;

typedef struct cpu_backend {
    wgt_backend base;         /* first, so a wgt_backend * is a cpu_backend * */
    int threads;              /* OpenMP threads for kernels (now; see contention) */
    cpu_contention contention;
    uint64_t budget_bytes;    /* 0: no budget */
    uint64_t cache_limit;     /* most bytes of freed storage kept for reuse */
    cpu_block *free_lists[CPU_SIZE_CLASSES];
    void *scratch;            /* kernel scratch, kept between calls (cpu_scratch) */
    size_t scratch_bytes;
    wgt_memory_stats memory;
    wgt_execution_stats execution;
} cpu_backend;

/* A 64-byte aligned scratch buffer of at least bytes, owned by the backend and
 * valid until the next call (kernels run one at a time, so one buffer serves
 * them all, without a malloc, page faults and a free per call). NULL when out
 * of memory. */
void *cpu_scratch(cpu_backend *b, size_t bytes);

/* ------------------------------------------------------------- dtypes */

static inline size_t cpu_dtype_size(wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F32: case WGT_I32: return 4;
    case WGT_F16: return 2;
    case WGT_U8: case WGT_BOOL: return 1;
    default: return 0;
    }
}

static inline bool cpu_dtype_is_float(wgt_dtype dtype) { return dtype == WGT_F32 || dtype == WGT_F16; }

/* IEEE half -> float, exact (subnormals, inf and NaN included). */
static inline float cpu_f16_to_f32(uint16_t h)
{
    uint32_t magnitude = (uint32_t)(h & 0x7fffu) << 13; /* exponent and mantissa in float position */
    uint32_t exponent = magnitude & 0x0f800000u;
    magnitude += (uint32_t)(127 - 15) << 23;            /* rebias */
    float f;
    if (exponent == 0x0f800000u) {                      /* inf / NaN: exponent all ones */
        f = cpu_bits_f32(magnitude + ((uint32_t)(128 - 16) << 23));
    } else if (exponent == 0) {                         /* zero / subnormal: renormalize by subtraction */
        f = cpu_bits_f32(magnitude + (1u << 23)) - cpu_bits_f32(113u << 23);
    } else {
        f = cpu_bits_f32(magnitude);
    }
    return cpu_bits_f32(cpu_f32_bits(f) | ((uint32_t)(h & 0x8000u) << 16));
}

/* float -> IEEE half, round to nearest even; overflow gives inf, NaN a quiet NaN
 * with the sign kept. Relies on float addition rounding to nearest (no
 * -ffast-math) for subnormal results. */
static inline uint16_t cpu_f32_to_f16(float f)
{
    const uint32_t f32_infinity = 255u << 23;
    const uint32_t f16_overflow = (127u + 16u) << 23;      /* 2^16: rounds to inf from here */
    const uint32_t denormal_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t u = cpu_f32_bits(f);
    uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint16_t out;
    if (u >= f16_overflow) {
        out = u > f32_infinity ? 0x7e00 : 0x7c00;
    } else if (u < (113u << 23)) {
        /* Result is subnormal or zero: adding 0.5 shifts the mantissa bits into
         * place and the FPU does the rounding. */
        float shifted = cpu_bits_f32(u) + cpu_bits_f32(denormal_magic);
        out = (uint16_t)(cpu_f32_bits(shifted) - denormal_magic);
    } else {
        uint32_t mantissa_odd = (u >> 13) & 1u;
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu;        /* rebias and round half up ... */
        u += mantissa_odd;                                  /* ... or half to even */
        out = (uint16_t)(u >> 13);
    }
    return (uint16_t)(out | (sign >> 16));
}

/* double -> IEEE half with a single rounding. Rounding to float first would
 * round twice; rounding to float toward zero and setting the sticky lowest bit
 * (round to odd) makes the second rounding exact, as float keeps 13 extra bits. */
static inline uint16_t cpu_f64_to_f16(double d)
{
    float f = (float)d;
    if (isfinite(d) && (double)f != d) {
        if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
        f = cpu_bits_f32(cpu_f32_bits(f) | 1u);
    }
    return cpu_f32_to_f16(f);
}

/* The CAST F32 -> I32 of src/core/expr.h: toward zero, saturating, NaN -> 0. */
static inline int32_t cpu_f32_to_i32(float f)
{
    if (f != f) return 0;
    if (f >= 2147483648.0f) return INT32_MAX;
    if (f <= -2147483648.0f) return INT32_MIN;
    return (int32_t)f;
}

static inline int32_t cpu_f64_to_i32(double d)
{
    if (d != d) return 0;
    if (d >= 2147483647.0) return INT32_MAX;
    if (d <= -2147483648.0) return INT32_MIN;
    return (int32_t)d;
}

/* Low 32 bits, two's complement: the wrapping every integer result gets. */
static inline int32_t cpu_wrap_i32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* ----------------------------------------------------- scalar load/store */
/* p points at one element of dtype. Integers load as their value (u8 and bool
 * unsigned). Stores follow the store rules of src/core/expr.h. */

static inline double cpu_load_f64(const char *p, wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F32: { float v; memcpy(&v, p, 4); return v; }
    case WGT_F16: { uint16_t v; memcpy(&v, p, 2); return cpu_f16_to_f32(v); }
    case WGT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: return (double)*(const uint8_t *)p;
    }
}

static inline int64_t cpu_load_i64(const char *p, wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F32: { float v; memcpy(&v, p, 4); return cpu_f32_to_i32(v); }
    case WGT_F16: { uint16_t v; memcpy(&v, p, 2); return cpu_f32_to_i32(cpu_f16_to_f32(v)); }
    case WGT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: return *(const uint8_t *)p;
    }
}

static inline void cpu_store_f64(char *p, wgt_dtype dtype, double v)
{
    switch (dtype) {
    case WGT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case WGT_F16: { uint16_t h = cpu_f64_to_f16(v); memcpy(p, &h, 2); break; }
    case WGT_I32: { int32_t i = cpu_f64_to_i32(v); memcpy(p, &i, 4); break; }
    case WGT_U8: *(uint8_t *)p = (uint8_t)(uint32_t)cpu_f64_to_i32(v); break;
    case WGT_BOOL: *(uint8_t *)p = v != 0; break; /* NaN -> 1 */
    default: break;
    }
}

static inline void cpu_store_i64(char *p, wgt_dtype dtype, int64_t v)
{
    switch (dtype) {
    case WGT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case WGT_F16: { uint16_t h = cpu_f64_to_f16((double)v); memcpy(p, &h, 2); break; }
    case WGT_I32: { int32_t i = cpu_wrap_i32(v); memcpy(p, &i, 4); break; }
    case WGT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
    case WGT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
    }
}

/* Address of element 0 of a view (its offset applied); NULL for an empty view
 * without storage. */
static inline char *cpu_view_data(const wgt_tensor_view *v)
{
    if (!v->storage || !v->storage->handle) return NULL;
    return (char *)v->storage->handle + (size_t)v->offset * cpu_dtype_size(v->dtype);
}

static inline int64_t cpu_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* ------------------------------------------------------- strided walk */
/*
 * Several views of one shape visited together in row-major order. Init drops
 * size-1 dims and merges dims that are contiguous with each other in every
 * view, so a contiguous tensor walks as one dim and runs along the last dim are
 * as long as possible. Offsets are in elements, relative to each view's start.
 *
 *   cpu_walk_seek(w, start, pos);                // position of linear index start
 *   while (left > 0) {
 *       int64_t run = min(cpu_walk_run(w, pos), left);
 *       ... elements pos->offsets[v] + i * w->strides[v][w->ndim - 1], i < run ...
 *       cpu_walk_advance(w, pos, run); left -= run;
 *   }
 */
#define CPU_WALK_MAX_VIEWS 10

typedef struct cpu_walk {
    int ndim;                 /* >= 1 after init */
    int n_views;
    int64_t shape[WGT_MAX_DIMS];
    int64_t strides[CPU_WALK_MAX_VIEWS][WGT_MAX_DIMS];
} cpu_walk;

typedef struct cpu_walk_position {
    int64_t coord[WGT_MAX_DIMS];
    int64_t offsets[CPU_WALK_MAX_VIEWS];
} cpu_walk_position;

/* strides[v] are the strides of view v over shape[ndim]. */
void cpu_walk_init(cpu_walk *w, int ndim, const int64_t *shape, int n_views, const int64_t *const *strides);
void cpu_walk_seek(const cpu_walk *w, int64_t linear, cpu_walk_position *pos);

static inline int64_t cpu_walk_run(const cpu_walk *w, const cpu_walk_position *pos)
{
    return w->shape[w->ndim - 1] - pos->coord[w->ndim - 1];
}

/* Moves n elements forward; n must not pass the end of the current run. */
static inline void cpu_walk_advance(const cpu_walk *w, cpu_walk_position *pos, int64_t n)
{
    int d = w->ndim - 1;
    pos->coord[d] += n;
    for (int v = 0; v < w->n_views; v++) pos->offsets[v] += n * w->strides[v][d];
    while (d > 0 && pos->coord[d] == w->shape[d]) {
        for (int v = 0; v < w->n_views; v++) pos->offsets[v] -= w->shape[d] * w->strides[v][d];
        pos->coord[d] = 0;
        d--;
        pos->coord[d]++;
        for (int v = 0; v < w->n_views; v++) pos->offsets[v] += w->strides[v][d];
    }
}

/* ------------------------------------------------------ streaming stores */
/* An output at least this large goes to memory with streaming (non-temporal)
 * stores: it cannot stay in the caches for its reader anyway, and a plain
 * store first reads every line it writes, a third more memory traffic. */
#define CPU_STREAM_BYTES ((size_t)16 << 20)

/* memcpy, with streaming stores when stream is set (and the CPU has them).
 * A thread that streamed calls cpu_stream_fence before other threads read. */
void cpu_copy_out(void *dst, const void *src, size_t bytes, bool stream);
void cpu_stream_fence(void);

/* ------------------------------------------------------------ kernels */
/* Each returns WGT_OK or records an error on b->base.ctx. The call has passed
 * cpu_check_call (views in bounds of their storage, ranks and dtypes valid). */
wgt_status cpu_run_elementwise(cpu_backend *b, const wgt_kernel_call *call);
/* The rope epilogue of MATMUL and QMATMUL (backend.h), the reference: the
 * call without it (product, run by run, its output replaced by a temporary y
 * [1, N] of y_dtype) then the rotation of y into call's out by table, as
 * ELEMENTWISE calls (wgt_rope_rows_elementwise_calls). */
wgt_status cpu_run_rope_epilogue(cpu_backend *b, const wgt_kernel_call *call, wgt_kernel_call *product,
                                 wgt_dtype y_dtype, const wgt_tensor_view *table, int64_t pass_begin,
                                 int64_t pass_end, wgt_status (*run)(cpu_backend *, const wgt_kernel_call *));
wgt_status cpu_run_reduce(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_cumsum(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_softmax(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_matmul(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_gather(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_scatter_add(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_topk(cpu_backend *b, const wgt_kernel_call *call);
/* cpu_nn.c: the fused NN kernels (WGT_KERNEL_NN) and their input/output counts. */
wgt_status cpu_run_nn(cpu_backend *b, const wgt_kernel_call *call);
bool cpu_nn_supports(const wgt_kernel_call *call);
int cpu_nn_input_count(const wgt_kernel_call *call);
int cpu_nn_output_count(const wgt_kernel_call *call);
/* cpu_dropout.c: NN's DROPOUT_ADD and DROPOUT_MASKED (the mask kept as bits) */
wgt_status cpu_run_dropout_add(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_dropout_masked(cpu_backend *b, const wgt_kernel_call *call);
/* cpu_conv.c: convolution, pooling and batch norm (WGT_KERNEL_CONV) */
wgt_status cpu_run_conv(cpu_backend *b, const wgt_kernel_call *call);
/* cpu_quant.c: QMATMUL (group-wise 8/4-bit weights) */
bool cpu_quant_supports(const wgt_kernel_call *call);
wgt_status cpu_run_qmatmul(cpu_backend *b, const wgt_kernel_call *call);
/* 32 values into int8 codes by QMATMUL's int8_x rule (backend.h); returns the scale (NaN: a value not finite) */
float cpu_quantize_group8(const float *x, int8_t codes[32]);
/* cpu_quant_rows.c: QROWS (rows <-> 8-bit codes and scales), and the value of
 * element (b, h, t, d) of 8-bit rows (ATTENTION's 8-bit keys and values) */
bool cpu_quant_rows_supports(const wgt_kernel_call *call);
wgt_status cpu_run_quant_rows(cpu_backend *b, const wgt_kernel_call *call);
double cpu_q8_element(const wgt_tensor_view *codes, const wgt_tensor_view *scales, int64_t b, int64_t h, int64_t t,
                      int64_t d);
bool cpu_conv_supports(const wgt_kernel_call *call);
/* cpu_attention.c: ATTENTION, ATTENTION_BACKWARD and ROPE */
bool cpu_attention_supports(const wgt_kernel_call *call);
wgt_status cpu_run_attention(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_attention_backward(cpu_backend *b, const wgt_kernel_call *call);
wgt_status cpu_run_rope(cpu_backend *b, const wgt_kernel_call *call);
/* cpu_optimizer.c: OPTIMIZER (checks its own views: called before the generic check) */
bool cpu_optimizer_supports(const wgt_kernel_call *call);
wgt_status cpu_run_optimizer(cpu_backend *b, const wgt_kernel_call *call);

/* Checks an expression program is well formed for n_inputs inputs and an
 * output of ndim dims (args refer to earlier nodes, known opcodes). */
bool cpu_expr_is_valid(const wgt_expr *e, int n_inputs, int out_ndim);

/* "[2, 3, 4]" into buf; returns buf. */
const char *cpu_shape_string(int ndim, const int64_t *shape, char *buf, size_t size);

/* "wgt_add" style name of a call for messages. */
const char *cpu_call_name(const wgt_kernel_call *call, char *buf, size_t size);

/* Error helper: records "wgt_<op>: <message>" on the context, returns status. */
wgt_status cpu_fail(cpu_backend *b, const wgt_kernel_call *call, wgt_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* WGT_CPU_INTERNAL_H */
