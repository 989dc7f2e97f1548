/*
 * Private to the ELEMENTWISE kernel: the plan that webgpu_elementwise.c builds
 * from a kernel call and webgpu_elementwise_codegen.c turns into WGSL.
 *
 * Shapes: every view (view 0 = the output, view k + 1 = input k) has the
 * output's shape [d0, .., dn). The host drops size-1 dims and merges dims that
 * are contiguous in every view, then classifies each view (ew_mode). Everything
 * that changes the generated WGSL is in the pipeline key (ew_plan_key); shapes,
 * strides, offsets, the element count, the seed and the values of CONST nodes
 * are in Params. Constants are uniforms, not WGSL literals, for two reasons:
 * the shader compiler folds literal operands as if NaN and inf did not exist
 * (x * 0 -> 0, 0 / x -> 0), and a new scalar value (wgt_binary_scalar,
 * wgt_fused_params) must not compile a new pipeline.
 *
 * Work split: invocation t owns the chunk of C consecutive positions
 * [C t, C t + C) of "position = linear index + shift", where C (plan.chunk) is
 * 16 bytes of the narrowest dtype among the views (4, 8 or 16 elements) and
 * shift = (output offset) % C for a contiguous output (0 for a strided one).
 * A chunk of a contiguous view whose offset is aligned the same way is then
 * one or more whole vec4<u32> loads/stores, and a chunk of a contiguous
 * sub-word output (f16, u8, bool) is whole 32-bit words that no other
 * invocation touches. With plan.inner_contiguous, a full chunk of a strided
 * view is one row's 4 consecutive, 16-byte aligned elements: one vec4 too.
 */
#ifndef WGT_WEBGPU_ELEMENTWISE_H
#define WGT_WEBGPU_ELEMENTWISE_H

#include "webgpu/webgpu_internal.h"

#define EW_CHUNK_BYTES 16        /* bytes of the narrowest dtype per invocation */
#define EW_WORKGROUP 256        /* invocations per workgroup */
#define EW_MAX_VIEWS (1 + WGT_MAX_KERNEL_INPUTS)

/* How a view's elements are reached. */
typedef enum ew_mode {
    EW_MODE_VECTOR = 'v',   /* contiguous; every full chunk is whole aligned vec4 loads/stores */
    EW_MODE_LINEAR = 'l',   /* contiguous, not aligned to chunks: offset + i */
    EW_MODE_SCALAR = 's',   /* every stride 0: one element */
    EW_MODE_STRIDED = 't',  /* through shape and strides */
} ew_mode;

/* How the output is written (sub-word dtypes must never lose a neighbour's write). */
typedef enum ew_store {
    EW_STORE_CHUNK = 'c',   /* contiguous: the invocation owns its chunk's words */
    EW_STORE_WORD = 'w',    /* strided 4-byte elements: plain stores */
    EW_STORE_ATOMIC = 'a',  /* strided f16/u8/bool: atomicAnd + atomicOr on the word */
    EW_STORE_HALF = 'h',    /* strided f16 on a shader-f16 device: array<f16> stores */
} ew_store;

/* Params words (u32), fixed positions; the host uploads only the prefix used. */
enum {
    EW_P_NUMEL = 0, EW_P_SEED_LO = 1, EW_P_SEED_HI = 2, EW_P_SHIFT = 3,
    EW_P_ZERO = 4,          /* always 0: ew_opaque() ORs it in */
    EW_P_CHUNKS = 5,        /* invocations with work */
    EW_P_ZERO2 = 6,         /* always 0: ew_opaque2() ORs it in (a second opaque copy of a value) */
    EW_P_OFFSET = 8,        /* [EW_MAX_VIEWS] element offsets */
    EW_P_SHAPE = 20,        /* [WGT_MAX_DIMS] collapsed shape */
    EW_P_STRIDES = 28,      /* [EW_MAX_VIEWS][WGT_MAX_DIMS] collapsed strides */
    EW_P_INDEX = 100,       /* [WGT_MAX_DIMS] (inner, size) of each output axis, for INDEX */
    EW_P_CONST = 116,       /* [WGT_EXPR_MAX_NODES] bits of CONST node j at EW_P_CONST + j */
    EW_P_WORDS = EW_P_CONST + WGT_EXPR_MAX_NODES
};

typedef struct ew_plan {
    const wgt_expr *expr;
    int n_views;                        /* 1 + inputs */
    wgt_dtype dtype[EW_MAX_VIEWS];
    ew_mode mode[EW_MAX_VIEWS];
    int binding[EW_MAX_VIEWS];          /* storage binding of each view (inputs share by storage) */
    int n_bindings;                     /* output is the last */
    bool vec4_binding[EW_MAX_VIEWS];    /* per binding: array<vec4<u32>> (else array<u32>) */
    ew_store store;
    /* Strided output, every strided view inner-contiguous (stride 1 on the
     * innermost collapsed dim, C = 4 elements of 4 bytes never crossing a row,
     * each chunk 16-byte aligned): a full chunk is one vec4 per strided view
     * (see plan_call in webgpu_elementwise.c); the output binding is then
     * array<vec4<u32>>. */
    bool inner_contiguous;
    /* Every full chunk lies inside one innermost row (no shift, the innermost
     * collapsed dim a multiple of C): the walk from element to element is an
     * add per strided view, no branch (ew_step), so the compiler can issue the
     * chunk's loads together. With ew_next's branch each element's loads
     * waited for the previous element's: an H100 took 14.6 us for the 3072
     * f16 values of llama's decode rotation (7 strided inputs). */
    bool chunk_in_row;
    int chunk;                          /* C: elements per invocation */
    int ndim;                           /* collapsed dims (strided views use them) */
    bool f16_hw_widen, f16_hw_narrow;   /* unpack2x16float / pack2x16float are exact here */
    bool philox_mul64;                  /* the device has 64-bit integers: rand draws take philox_mul64.wgsl
                                         * (as webgpu_philox_mul_file), else philox_mul16.wgsl */
} ew_plan;

/* Writes the key of plan into buf (size bytes); false if it does not fit. */
bool ew_plan_key(const ew_plan *plan, char *buf, size_t size);

/* Returns malloc'ed WGSL for plan (NULL if out of memory). */
char *ew_generate_wgsl(const ew_plan *plan);

/* ELEMENTWISE dispatches with plan.inner_contiguous recorded by this process
 * (all contexts): tests check that the path is taken, or just missed. */
uint64_t webgpu_elementwise_inner_contiguous_count(void);

#endif /* WGT_WEBGPU_ELEMENTWISE_H */
