/*
 * ELEMENTWISE: out = expr(inputs), an interpreter for the expression programs
 * of src/core/expr.h, whose semantics comment this file follows to the letter.
 *
 *   inputs[k]: [d0, .., dn) (broadcast by stride 0), any dtype and strides
 *   -> out:    [d0, .., dn) any view (slice assignment stores through strides)
 *
 * The output is cut into blocks of CPU_BLOCK elements. For each block every input
 * is loaded once into a buffer of its value type (F32 for f32/f16, I32 for the
 * rest; contiguous 4-byte inputs are read in place), then each node runs as one
 * plain loop over the block (vectorized where marked CPU_SIMD), and the last
 * node is stored. F32 nodes compute in float, never double, so + - * / match an
 * IEEE f32 GPU bit for bit. A block is a run of consecutive output elements, or
 * a 2-D tile when some view is transposed. Blocks are independent and run in
 * parallel for large outputs.
 *
 * An output that overlaps an input at different elements (x[1:] = x[:-1]) is
 * the front-end's to copy first: blocks read and write in an unspecified order.
 */
#include <stdlib.h>

#include <omp.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/philox.h"
#include "cpu/cpu_internal.h"

#define CPU_BLOCK 512
/* Most blocks a thread takes at a time: 64K elements, few enough claims to
 * cost nothing, small enough to even out threads that the system slows down. */
#define RUN_BLOCKS 128

/* Scratch blocks per thread beyond one per input and one per node: up to three
 * converted arguments and one result before its conversion to the node type. */
#define EXTRA_BLOCKS 4

typedef struct elementwise_plan {
    const wgt_expr *expr;
    cpu_walk walk;              /* view 0 = output, view k+1 = input k */
    char *data[WGT_MAX_KERNEL_INPUTS + 1];
    wgt_dtype dtype[WGT_MAX_KERNEL_INPUTS + 1];
    int n_inputs;
    int64_t numel;
    int64_t index_inner[WGT_EXPR_MAX_NODES]; /* INDEX: elements per step of its axis */
    int64_t index_dim[WGT_EXPR_MAX_NODES];   /* INDEX: size of its axis */
    int64_t tile_rows, tile_cols;            /* 0: linear blocks */
    bool stream;                             /* output large enough for streaming stores */
} elementwise_plan;

/* -------------------------------------------------------- program checks */

/* Follows the grouping of wgt_expr_opcode: leaves, unary, binary, WHERE. */
static int opcode_arity(int op)
{
    if (op <= WGT_EXPR_RAND_NORMAL) return 0;
    if (op <= WGT_EXPR_NOT) return 1;
    if (op <= WGT_EXPR_OR) return 2;
    if (op == WGT_EXPR_WHERE) return 3;
    return -1;
}

bool cpu_expr_is_valid(const wgt_expr *e, int n_inputs, int out_ndim)
{
    if (!e || e->n_nodes < 1 || e->n_nodes > WGT_EXPR_MAX_NODES) return false;
    for (int j = 0; j < e->n_nodes; j++) {
        const wgt_expr_node *node = &e->nodes[j];
        int arity = opcode_arity(node->opcode);
        if (arity < 0 || node->type > WGT_EXPR_I32) return false;
        for (int a = 0; a < arity; a++) {
            if (node->args[a] < 0 || node->args[a] >= j) return false;
        }
        if (node->opcode == WGT_EXPR_INPUT && (node->input_index < 0 || node->input_index >= n_inputs)) return false;
        if (node->opcode == WGT_EXPR_INDEX && (node->axis < 0 || node->axis >= (out_ndim > 0 ? out_ndim : 1))) return false;
    }
    return true;
}

/* ------------------------------------------------------------ loads/stores */

/* n elements at p with stride (elements) into the block, widened to the value
 * type of dtype: float for f32/f16, int32 for i32/u8/bool. */
static void load_run(const char *p, wgt_dtype dtype, int64_t stride, int64_t n, void *block)
{
    float *f = block;
    int32_t *i32 = block;
    switch (dtype) {
    case WGT_F32: case WGT_I32: {
        const uint32_t *src = (const uint32_t *)p;
        uint32_t *dst = block;
        if (stride == 1) memcpy(dst, src, (size_t)n * 4);
        else if (stride == 0) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i] = src[0];
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i] = src[i * stride];
        break;
    }
    case WGT_F16: {
        const uint16_t *src = (const uint16_t *)p;
        if (stride == 0) { float v = cpu_f16_to_f32(src[0]); CPU_SIMD for (int64_t i = 0; i < n; i++) f[i] = v; }
        else CPU_SIMD for (int64_t i = 0; i < n; i++) f[i] = cpu_f16_to_f32(src[i * stride]);
        break;
    }
    default: {
        const uint8_t *src = (const uint8_t *)p;
        if (stride == 1) CPU_SIMD for (int64_t i = 0; i < n; i++) i32[i] = src[i];
        else CPU_SIMD for (int64_t i = 0; i < n; i++) i32[i] = src[i * stride];
        break;
    }
    }
}

/* n results (float if is_float, else int32) to p with stride, converted to dtype
 * by the store rules: F32 -> f16 rounds to nearest even, to integers CASTs
 * (saturating), u8 keeps the low 8 bits, bool is value != 0 (NaN -> 1).
 * stream: a large output, 4-byte runs go out with streaming stores. */
static void store_run(const void *block, bool is_float, char *p, wgt_dtype dtype, int64_t stride, int64_t n, bool stream)
{
    const float *f = block;
    const int32_t *v = block;
    switch (dtype) {
    case WGT_F32: {
        float *dst = (float *)p;
        if (is_float && stride == 1) cpu_copy_out(dst, f, (size_t)n * 4, stream);
        else if (is_float) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = f[i];
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = (float)v[i];
        break;
    }
    case WGT_F16: {
        uint16_t *dst = (uint16_t *)p;
        if (is_float) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = cpu_f32_to_f16(f[i]);
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = cpu_f32_to_f16((float)v[i]);
        break;
    }
    case WGT_I32: {
        int32_t *dst = (int32_t *)p;
        if (!is_float && stride == 1) cpu_copy_out(dst, v, (size_t)n * 4, stream);
        else if (!is_float) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = v[i];
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = cpu_f32_to_i32(f[i]);
        break;
    }
    case WGT_U8: {
        uint8_t *dst = (uint8_t *)p;
        if (is_float) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = (uint8_t)(uint32_t)cpu_f32_to_i32(f[i]);
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = (uint8_t)(uint32_t)v[i];
        break;
    }
    default: { /* bool */
        uint8_t *dst = (uint8_t *)p;
        if (is_float) CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = f[i] != 0;
        else CPU_SIMD for (int64_t i = 0; i < n; i++) dst[i * stride] = v[i] != 0;
        break;
    }
    }
}

/* CAST between value types, n elements, src and dst distinct. */
static void cast_block(const void *src, bool src_is_float, void *dst, int64_t n)
{
    if (src_is_float) {
        const float *restrict f = src;
        int32_t *restrict r = dst;
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = cpu_f32_to_i32(f[i]);
    } else {
        const int32_t *restrict v = src;
        float *restrict r = dst;
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (float)v[i];
    }
}

/* ---------------------------------------------------------- node loops */

/* r = sqrt(a), correctly rounded, NaN for a < 0. sqrtf itself does not
 * vectorize: it must set errno for a < 0, so the compiler emits a check and a
 * call per element. The SSE instruction computes the same IEEE square root. */
static void sqrt_block(const float *restrict a, float *restrict r, int64_t n)
{
    int64_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(r + i, _mm_sqrt_ps(_mm_loadu_ps(a + i)));
    for (; i < n; i++) _mm_store_ss(r + i, _mm_sqrt_ss(_mm_load_ss(a + i)));
#endif
    for (; i < n; i++) r[i] = sqrtf(a[i]);
}

/* exp and the functions built on it use cpu_expf (src/cpu/cpu_math.h), which
 * vectorizes where libm's expf does not. */
CPU_MULTIVERSION
static void eval_float_unary(int op, const float *restrict a, float *restrict r, int64_t n)
{
    switch (op) {
    case WGT_EXPR_NEG: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = -a[i]; break;
    case WGT_EXPR_ABS: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = fabsf(a[i]); break;
    case WGT_EXPR_SIGN:
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] > 0 ? 1.0f : a[i] < 0 ? -1.0f : a[i] == 0 ? 0.0f : a[i];
        break;
    case WGT_EXPR_EXP: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = cpu_expf(a[i]); break;
    case WGT_EXPR_LOG: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = logf(a[i]); break;
    case WGT_EXPR_LOG1P: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = log1pf(a[i]); break;
    case WGT_EXPR_SQRT: sqrt_block(a, r, n); break;
    case WGT_EXPR_RSQRT:
        sqrt_block(a, r, n);
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = 1.0f / r[i];
        break;
    case WGT_EXPR_RECIPROCAL: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = 1.0f / a[i]; break;
    case WGT_EXPR_SIN: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = sinf(a[i]); break;
    case WGT_EXPR_COS: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = cosf(a[i]); break;
    case WGT_EXPR_TANH: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = tanhf(a[i]); break;
    case WGT_EXPR_SIGMOID: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = 1.0f / (1.0f + cpu_expf(-a[i])); break;
    case WGT_EXPR_RELU: /* a > 0 ? a : 0, but NaN stays NaN */
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] > 0 ? a[i] : a[i] != a[i] ? a[i] : 0.0f;
        break;
    case WGT_EXPR_GELU:
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = 0.5f * a[i] * (1.0f + erff(a[i] * 0.70710678118654752f));
        break;
    case WGT_EXPR_GELU_TANH:
        CPU_SIMD for (int64_t i = 0; i < n; i++) {
            float x = a[i];
            r[i] = 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
        }
        break;
    case WGT_EXPR_SILU: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] * (1.0f / (1.0f + cpu_expf(-a[i]))); break;
    case WGT_EXPR_SOFTPLUS: /* stable for large |x|: log1p(exp(-|x|)) + max(x, 0) */
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = log1pf(cpu_expf(-fabsf(a[i]))) + (a[i] > 0 ? a[i] : 0.0f);
        break;
    case WGT_EXPR_ERF: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = erff(a[i]); break;
    case WGT_EXPR_FLOOR: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = floorf(a[i]); break;
    case WGT_EXPR_CEIL: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = ceilf(a[i]); break;
    case WGT_EXPR_ROUND: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = nearbyintf(a[i]); break; /* half to even */
    default: break;
    }
}

static void eval_int_unary(int op, const int32_t *restrict a, int32_t *restrict r, int64_t n)
{
    switch (op) {
    case WGT_EXPR_NEG: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (int32_t)(0u - (uint32_t)a[i]); break;
    case WGT_EXPR_ABS:
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] < 0 ? (int32_t)(0u - (uint32_t)a[i]) : a[i];
        break;
    case WGT_EXPR_SIGN: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (a[i] > 0) - (a[i] < 0); break;
    case WGT_EXPR_RELU: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] > 0 ? a[i] : 0; break;
    default: /* FLOOR, CEIL, ROUND of an integer */
        memcpy(r, a, (size_t)n * 4);
        break;
    }
}

CPU_MULTIVERSION
static void eval_float_binary(int op, const float *restrict a, const float *restrict b, float *restrict r, int64_t n)
{
    switch (op) {
    case WGT_EXPR_ADD: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] + b[i]; break;
    case WGT_EXPR_SUB: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] - b[i]; break;
    case WGT_EXPR_MUL: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] * b[i]; break;
    case WGT_EXPR_DIV: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] / b[i]; break;
    case WGT_EXPR_POW: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = powf(a[i], b[i]); break;
    case WGT_EXPR_MAX: /* NaN in either argument wins: a NaN b fails a > b and gives b */
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] != a[i] ? a[i] : a[i] > b[i] ? a[i] : b[i];
        break;
    case WGT_EXPR_MIN:
        CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] != a[i] ? a[i] : a[i] < b[i] ? a[i] : b[i];
        break;
    default: break;
    }
}

static void eval_int_binary(int op, const int32_t *restrict a, const int32_t *restrict b, int32_t *restrict r, int64_t n)
{
    switch (op) { /* two's complement wrapping through uint32 */
    case WGT_EXPR_ADD: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]); break;
    case WGT_EXPR_SUB: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (int32_t)((uint32_t)a[i] - (uint32_t)b[i]); break;
    case WGT_EXPR_MUL: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = (int32_t)((uint32_t)a[i] * (uint32_t)b[i]); break;
    case WGT_EXPR_MAX: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] > b[i] ? a[i] : b[i]; break;
    case WGT_EXPR_MIN: CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = a[i] < b[i] ? a[i] : b[i]; break;
    default: break;
    }
}

/* C comparisons already give IEEE NaN semantics: false except !=. */
#define COMPARE_LOOP(a, b, r, n, OP) CPU_SIMD for (int64_t i = 0; i < (n); i++) (r)[i] = (a)[i] OP (b)[i]

static void eval_float_compare(int op, const float *restrict a, const float *restrict b, int32_t *restrict r, int64_t n)
{
    switch (op) {
    case WGT_EXPR_EQ: COMPARE_LOOP(a, b, r, n, ==); break;
    case WGT_EXPR_NE: COMPARE_LOOP(a, b, r, n, !=); break;
    case WGT_EXPR_LT: COMPARE_LOOP(a, b, r, n, <); break;
    case WGT_EXPR_LE: COMPARE_LOOP(a, b, r, n, <=); break;
    case WGT_EXPR_GT: COMPARE_LOOP(a, b, r, n, >); break;
    default: COMPARE_LOOP(a, b, r, n, >=); break;
    }
}

static void eval_int_compare(int op, const int32_t *restrict a, const int32_t *restrict b, int32_t *restrict r, int64_t n)
{
    switch (op) {
    case WGT_EXPR_EQ: COMPARE_LOOP(a, b, r, n, ==); break;
    case WGT_EXPR_NE: COMPARE_LOOP(a, b, r, n, !=); break;
    case WGT_EXPR_LT: COMPARE_LOOP(a, b, r, n, <); break;
    case WGT_EXPR_LE: COMPARE_LOOP(a, b, r, n, <=); break;
    case WGT_EXPR_GT: COMPARE_LOOP(a, b, r, n, >); break;
    default: COMPARE_LOOP(a, b, r, n, >=); break;
    }
}

/* Truth value 0/1 of a block: nonzero is true, and so is NaN (NaN != 0). */
static void truth_block(const void *src, bool is_float, int32_t *restrict r, int64_t n)
{
    if (is_float) { const float *restrict f = src; CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = f[i] != 0; }
    else { const int32_t *restrict v = src; CPU_SIMD for (int64_t i = 0; i < n; i++) r[i] = v[i] != 0; }
}

/* --------------------------------------------------------------- leaves */

static void fill_constant(const wgt_expr_node *node, void *slot)
{
    if (node->type == WGT_EXPR_F32) {
        float *r = slot, v = (float)node->constant;
        for (int i = 0; i < CPU_BLOCK; i++) r[i] = v;
    } else {
        int32_t *r = slot, v = cpu_f64_to_i32(node->constant); /* saturating, like CAST */
        for (int i = 0; i < CPU_BLOCK; i++) r[i] = v;
    }
}

/* INDEX(axis): the output coordinate along axis of each element of the block. */
static void fill_index(int64_t inner, int64_t dim, int64_t start, int32_t *r, int64_t n)
{
    int64_t c = (start / inner) % dim, within = start % inner;
    for (int64_t i = 0; i < n; i++) {
        r[i] = (int32_t)c;
        if (++within == inner) {
            within = 0;
            if (++c == dim) c = 0;
        }
    }
}

/* Philox keyed by the seed (src/core/philox.h): uniform element i is word
 * i % 4 of counter (i / 4 lo, hi, 0, 0); normal element i is Box-Muller on
 * words 2 (i % 2), 2 (i % 2) + 1 of counter (i / 2 lo, hi, 0, 0). One call
 * serves four uniforms or two normals (the WGSL twin,
 * kernels/elementwise_philox.wgsl, draws the same values). */
static void fill_random(int op, uint64_t seed, int64_t start, float *r, int64_t n)
{
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    int shift = op == WGT_EXPR_RAND_UNIFORM ? 2 : 1;
    uint64_t have = UINT64_MAX; /* the counter w holds */
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++) {
        uint64_t index = (uint64_t)(start + i), counter = index >> shift;
        if (counter != have) {
            wgt_philox4x32_10(key0, key1, (uint32_t)counter, (uint32_t)(counter >> 32), 0, 0, w);
            have = counter;
        }
        if (op == WGT_EXPR_RAND_UNIFORM) {
            r[i] = (float)(w[index & 3] >> 8) * 0x1p-24f;
        } else { /* Box-Muller; u1 in (0, 1] keeps the log finite */
            const uint32_t *pair = w + 2 * (index & 1);
            float u1 = (float)((pair[0] >> 8) + 1u) * 0x1p-24f;
            float u2 = (float)(pair[1] >> 8) * 0x1p-24f;
            r[i] = sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
        }
    }
}

/* ------------------------------------------------------------------ block */

typedef struct thread_scratch {
    void *input[WGT_MAX_KERNEL_INPUTS]; /* loaded inputs, in their value type */
    void *slot[WGT_EXPR_MAX_NODES];     /* node results */
    void *extra[EXTRA_BLOCKS];
} thread_scratch;

/* Value of node `arg` as the requested type: its own block or a converted copy. */
static const void *argument_as(const wgt_expr *e, const void *const *value, int arg, bool want_float, void *tmp, int64_t n)
{
    bool is_float = e->nodes[arg].type == WGT_EXPR_F32;
    if (is_float == want_float) return value[arg];
    cast_block(value[arg], is_float, tmp, n);
    return tmp;
}

/* Runs every node over n elements whose inputs are loaded in input_value;
 * start is the linear output index of element 0 (for INDEX and RAND, which
 * only linear blocks contain). Returns the last node's block. */
static const void *evaluate_nodes(const elementwise_plan *plan, thread_scratch *s, const void *const *input_value,
                                  int64_t start, int64_t n)
{
    const wgt_expr *e = plan->expr;
    const void *value[WGT_EXPR_MAX_NODES];
    for (int j = 0; j < e->n_nodes; j++) {
        const wgt_expr_node *node = &e->nodes[j];
        int op = node->opcode;
        bool node_float = node->type == WGT_EXPR_F32;
        /* Type the opcode computes in; converted to the node's type if different. */
        bool compute_float = wgt_expr_compute_type(node) == WGT_EXPR_F32;
        void *r = compute_float == node_float ? s->slot[j] : s->extra[3];
        switch (op) {
        case WGT_EXPR_INPUT: {
            wgt_dtype dt = plan->dtype[node->input_index + 1];
            bool loaded_float = cpu_dtype_is_float(dt);
            if (loaded_float == node_float) { value[j] = input_value[node->input_index]; continue; }
            cast_block(input_value[node->input_index], loaded_float, s->slot[j], n);
            value[j] = s->slot[j];
            continue;
        }
        case WGT_EXPR_CONST: value[j] = s->slot[j]; continue; /* filled once per thread */
        case WGT_EXPR_INDEX: fill_index(plan->index_inner[j], plan->index_dim[j], start, r, n); break;
        case WGT_EXPR_RAND_UNIFORM: case WGT_EXPR_RAND_NORMAL: fill_random(op, e->seed, start, r, n); break;
        case WGT_EXPR_CAST: /* argument converted to the node's type */
            r = s->slot[j];
            if ((e->nodes[node->args[0]].type == WGT_EXPR_F32) == node_float) memcpy(r, value[node->args[0]], (size_t)n * 4);
            else cast_block(value[node->args[0]], !node_float, r, n);
            break;
        case WGT_EXPR_NOT: {
            int32_t *t = r;
            truth_block(value[node->args[0]], e->nodes[node->args[0]].type == WGT_EXPR_F32, t, n);
            CPU_SIMD for (int64_t i = 0; i < n; i++) t[i] = !t[i];
            break;
        }
        case WGT_EXPR_AND: case WGT_EXPR_OR: {
            int32_t *t = r, *u = s->extra[0];
            truth_block(value[node->args[0]], e->nodes[node->args[0]].type == WGT_EXPR_F32, t, n);
            truth_block(value[node->args[1]], e->nodes[node->args[1]].type == WGT_EXPR_F32, u, n);
            if (op == WGT_EXPR_AND) CPU_SIMD for (int64_t i = 0; i < n; i++) t[i] &= u[i];
            else CPU_SIMD for (int64_t i = 0; i < n; i++) t[i] |= u[i];
            break;
        }
        case WGT_EXPR_EQ: case WGT_EXPR_NE: case WGT_EXPR_LT: case WGT_EXPR_LE: case WGT_EXPR_GT: case WGT_EXPR_GE: {
            /* arguments share a type; if not, compare as F32 */
            bool as_float = e->nodes[node->args[0]].type == WGT_EXPR_F32 || e->nodes[node->args[1]].type == WGT_EXPR_F32;
            const void *a = argument_as(e, value, node->args[0], as_float, s->extra[0], n);
            const void *b = argument_as(e, value, node->args[1], as_float, s->extra[1], n);
            if (as_float) eval_float_compare(op, a, b, r, n);
            else eval_int_compare(op, a, b, r, n);
            break;
        }
        case WGT_EXPR_WHERE: {
            int32_t *c = s->extra[2];
            truth_block(value[node->args[0]], e->nodes[node->args[0]].type == WGT_EXPR_F32, c, n);
            const uint32_t *restrict a = argument_as(e, value, node->args[1], compute_float, s->extra[0], n);
            const uint32_t *restrict b = argument_as(e, value, node->args[2], compute_float, s->extra[1], n);
            uint32_t *restrict out = r; /* a select of 32-bit patterns serves both types */
            CPU_SIMD for (int64_t i = 0; i < n; i++) out[i] = c[i] ? a[i] : b[i];
            break;
        }
        default: {
            int arity = opcode_arity(op);
            const void *a = argument_as(e, value, node->args[0], compute_float, s->extra[0], n);
            if (arity == 1) {
                if (compute_float) eval_float_unary(op, a, r, n);
                else eval_int_unary(op, a, r, n);
            } else {
                const void *b = argument_as(e, value, node->args[1], compute_float, s->extra[1], n);
                if (compute_float) eval_float_binary(op, a, b, r, n);
                else eval_int_binary(op, a, b, r, n);
            }
            break;
        }
        }
        if (r != s->slot[j]) cast_block(r, compute_float, s->slot[j], n);
        value[j] = s->slot[j];
    }
    return value[e->n_nodes - 1];
}

/* A linear block: output elements [start, start + n) in row-major order, from
 * walk position pos, which moves on to the element after the block. */
static void run_linear_block(const elementwise_plan *plan, thread_scratch *s, int64_t start, int64_t n,
                             cpu_walk_position *pos)
{
    const cpu_walk *w = &plan->walk;
    int last = w->ndim - 1;
    const void *input_value[WGT_MAX_KERNEL_INPUTS];
    const cpu_walk_position start_pos = *pos;

    /* Inputs: read in place when the whole block is one unit-stride run of
     * 4-byte data, else gather run by run. */
    bool one_run = cpu_walk_run(w, &start_pos) >= n;
    for (int k = 0; k < plan->n_inputs; k++) {
        wgt_dtype dt = plan->dtype[k + 1];
        size_t size = cpu_dtype_size(dt);
        if (one_run && w->strides[k + 1][last] == 1 && (dt == WGT_F32 || dt == WGT_I32)) {
            input_value[k] = plan->data[k + 1] + start_pos.offsets[k + 1] * (int64_t)size;
            continue;
        }
        *pos = start_pos;
        for (int64_t done = 0; done < n;) {
            int64_t run = cpu_walk_run(w, pos);
            if (run > n - done) run = n - done;
            load_run(plan->data[k + 1] + pos->offsets[k + 1] * (int64_t)size, dt, w->strides[k + 1][last], run,
                     (char *)s->input[k] + done * 4);
            cpu_walk_advance(w, pos, run);
            done += run;
        }
        input_value[k] = s->input[k];
    }

    const void *result = evaluate_nodes(plan, s, input_value, start, n);
    bool result_float = plan->expr->nodes[plan->expr->n_nodes - 1].type == WGT_EXPR_F32;
    size_t out_size = cpu_dtype_size(plan->dtype[0]);
    *pos = start_pos;
    for (int64_t done = 0; done < n;) {
        int64_t run = cpu_walk_run(w, pos);
        if (run > n - done) run = n - done;
        store_run((const char *)result + done * 4, result_float, plan->data[0] + pos->offsets[0] * (int64_t)out_size,
                  plan->dtype[0], w->strides[0][last], run, plan->stream);
        cpu_walk_advance(w, pos, run);
        done += run;
    }
}

/* A tile: rows [r0, r0 + rows) x columns [c0, c0 + cols) of the last two walk
 * dims at one outer position, held row by row in the block. A transposed view
 * then reads whole cache lines and few pages per tile instead of one line and
 * one page per element. */
static void run_tile(const elementwise_plan *plan, thread_scratch *s, int64_t tile)
{
    const cpu_walk *w = &plan->walk;
    int row_dim = w->ndim - 2, col_dim = w->ndim - 1;
    int64_t R = w->shape[row_dim], C = w->shape[col_dim];
    int64_t row_tiles = (R + plan->tile_rows - 1) / plan->tile_rows, col_tiles = (C + plan->tile_cols - 1) / plan->tile_cols;
    int64_t outer = tile / (row_tiles * col_tiles), within = tile % (row_tiles * col_tiles);
    int64_t r0 = (within / col_tiles) * plan->tile_rows, c0 = (within % col_tiles) * plan->tile_cols;
    int64_t rows = R - r0 < plan->tile_rows ? R - r0 : plan->tile_rows;
    int64_t cols = C - c0 < plan->tile_cols ? C - c0 : plan->tile_cols;
    cpu_walk_position pos;
    cpu_walk_seek(w, (outer * R + r0) * C + c0, &pos);

    const void *input_value[WGT_MAX_KERNEL_INPUTS];
    for (int k = 0; k < plan->n_inputs; k++) {
        wgt_dtype dt = plan->dtype[k + 1];
        int64_t size = (int64_t)cpu_dtype_size(dt);
        for (int64_t r = 0; r < rows; r++) {
            load_run(plan->data[k + 1] + (pos.offsets[k + 1] + r * w->strides[k + 1][row_dim]) * size, dt,
                     w->strides[k + 1][col_dim], cols, (char *)s->input[k] + r * cols * 4);
        }
        input_value[k] = s->input[k];
    }
    const char *result = evaluate_nodes(plan, s, input_value, 0, rows * cols);
    bool result_float = plan->expr->nodes[plan->expr->n_nodes - 1].type == WGT_EXPR_F32;
    int64_t out_size = (int64_t)cpu_dtype_size(plan->dtype[0]);
    for (int64_t r = 0; r < rows; r++) {
        store_run(result + r * cols * 4, result_float, plan->data[0] + (pos.offsets[0] + r * w->strides[0][row_dim]) * out_size,
                  plan->dtype[0], w->strides[0][col_dim], cols, plan->stream);
    }
}

/* Tiles pay off when some view steps far along the last dim but near along
 * the one before (a transpose). INDEX and RAND need linear blocks. */
static bool wants_tiles(const elementwise_plan *plan)
{
    const cpu_walk *w = &plan->walk;
    if (w->ndim < 2) return false;
    for (int j = 0; j < plan->expr->n_nodes; j++) {
        int op = plan->expr->nodes[j].opcode;
        if (op == WGT_EXPR_INDEX || op == WGT_EXPR_RAND_UNIFORM || op == WGT_EXPR_RAND_NORMAL) return false;
    }
    for (int v = 0; v < w->n_views; v++) {
        int64_t along = llabs(w->strides[v][w->ndim - 1]), across = llabs(w->strides[v][w->ndim - 2]);
        if (along > 1 && across < along) return true;
    }
    return false;
}

/* ------------------------------------------------------------------- entry */

wgt_status cpu_run_elementwise(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *out = &call->outputs[0];
    const wgt_expr *e = call->expr;
    if (!cpu_expr_is_valid(e, call->n_inputs, out->ndim)) {
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "malformed expression program (%d nodes)", e->n_nodes);
    }
    for (int k = 0; k < call->n_inputs; k++) {
        const wgt_tensor_view *in = &call->inputs[k];
        bool same = in->ndim == out->ndim;
        for (int d = 0; same && d < out->ndim; d++) same = in->shape[d] == out->shape[d];
        if (!same) {
            char a[96], o[96];
            return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "input %d has shape %s, output %s (inputs must be broadcast first)",
                            k, cpu_shape_string(in->ndim, in->shape, a, sizeof a),
                            cpu_shape_string(out->ndim, out->shape, o, sizeof o));
        }
    }
    elementwise_plan plan = {.expr = e, .n_inputs = call->n_inputs};
    plan.numel = cpu_numel(out->ndim, out->shape);
    if (plan.numel == 0) return WGT_OK;

    const int64_t *strides[WGT_MAX_KERNEL_INPUTS + 1];
    strides[0] = out->strides;
    plan.data[0] = cpu_view_data(out);
    plan.dtype[0] = out->dtype;
    for (int k = 0; k < call->n_inputs; k++) {
        strides[k + 1] = call->inputs[k].strides;
        plan.data[k + 1] = cpu_view_data(&call->inputs[k]);
        plan.dtype[k + 1] = call->inputs[k].dtype;
    }
    cpu_walk_init(&plan.walk, out->ndim, out->shape, call->n_inputs + 1, strides);
    for (int j = 0; j < e->n_nodes; j++) {
        if (e->nodes[j].opcode != WGT_EXPR_INDEX) continue;
        int axis = e->nodes[j].axis;
        plan.index_dim[j] = out->ndim ? out->shape[axis] : 1;
        plan.index_inner[j] = out->ndim ? cpu_numel(out->ndim - axis - 1, out->shape + axis + 1) : 1;
    }

    plan.stream = (size_t)plan.numel * cpu_dtype_size(out->dtype) >= CPU_STREAM_BYTES;
    bool parallel = plan.numel > CPU_PARALLEL_THRESHOLD && b->threads > 1;
    int threads = parallel ? b->threads : 1;
    size_t blocks_per_thread = (size_t)call->n_inputs + (size_t)e->n_nodes + EXTRA_BLOCKS;
    size_t bytes_per_thread = blocks_per_thread * CPU_BLOCK * 4;
    char *scratch = cpu_scratch(b, bytes_per_thread * (size_t)threads);
    if (!scratch) {
        return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of scratch", bytes_per_thread * (size_t)threads);
    }
    int64_t n_blocks = (plan.numel + CPU_BLOCK - 1) / CPU_BLOCK;
    if (wants_tiles(&plan)) {
        const cpu_walk *w = &plan.walk;
        int64_t R = w->shape[w->ndim - 2], C = w->shape[w->ndim - 1];
        plan.tile_cols = C < 16 ? C : 16;
        plan.tile_rows = CPU_BLOCK / plan.tile_cols;
        n_blocks = plan.numel / (R * C) * ((R + plan.tile_rows - 1) / plan.tile_rows) * ((C + plan.tile_cols - 1) / plan.tile_cols);
    }
    /* at least four runs per thread, so that a mid-size output splits too */
    int64_t run_blocks = n_blocks / (threads * 4) < RUN_BLOCKS ? n_blocks / (threads * 4) : RUN_BLOCKS;
    if (run_blocks < 1) run_blocks = 1;
    int64_t n_runs = (n_blocks + run_blocks - 1) / run_blocks;

#pragma omp parallel num_threads(threads) if (parallel)
    {
        thread_scratch s;
        char *mine = scratch + bytes_per_thread * (size_t)omp_get_thread_num();
        size_t next = 0;
        for (int k = 0; k < call->n_inputs; k++) s.input[k] = mine + (next++) * CPU_BLOCK * 4;
        for (int j = 0; j < e->n_nodes; j++) {
            s.slot[j] = mine + (next++) * CPU_BLOCK * 4;
            if (e->nodes[j].opcode == WGT_EXPR_CONST) fill_constant(&e->nodes[j], s.slot[j]);
        }
        for (int x = 0; x < EXTRA_BLOCKS; x++) s.extra[x] = mine + (next++) * CPU_BLOCK * 4;

        /* Threads take runs of blocks as they become free (a thread the system
         * preempts holds up no one) and walk each run from one seek. */
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t run = 0; run < n_runs; run++) {
            int64_t first = run * run_blocks, last = first + run_blocks < n_blocks ? first + run_blocks : n_blocks;
            if (plan.tile_rows) {
                for (int64_t block = first; block < last; block++) run_tile(&plan, &s, block);
                continue;
            }
            cpu_walk_position pos;
            cpu_walk_seek(&plan.walk, first * CPU_BLOCK, &pos);
            for (int64_t block = first; block < last; block++) {
                int64_t start = block * CPU_BLOCK;
                int64_t n = plan.numel - start < CPU_BLOCK ? plan.numel - start : CPU_BLOCK;
                run_linear_block(&plan, &s, start, n, &pos);
            }
        }
        if (plan.stream) cpu_stream_fence();
    }
    return WGT_OK;
}

wgt_status cpu_run_rope_epilogue(cpu_backend *b, const wgt_kernel_call *call, wgt_kernel_call *product,
                                 wgt_dtype y_dtype, const wgt_tensor_view *table, int64_t pass_begin,
                                 int64_t pass_end, wgt_status (*run)(cpu_backend *, const wgt_kernel_call *))
{
    const wgt_tensor_view *out = &call->outputs[0];
    if (out->ndim != 2 || out->shape[0] != 1 || !wgt_view_is_contiguous(out))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "rope epilogue: a %dd out (one contiguous row)", out->ndim);
    wgt_tensor_view y = *out;
    y.dtype = y_dtype;
    y.offset = 0;
    y.storage = wgt_storage_create(b->base.ctx, (size_t)out->shape[1] * cpu_dtype_size(y_dtype) + 4, call->op_name);
    if (!y.storage) return wgt_context_status(b->base.ctx);
    product->outputs[0] = y;
    wgt_status s = run(b, product);
    wgt_expr rot, copy;
    wgt_kernel_call ew[3];
    int n = 0;
    char err[160];
    if (s == WGT_OK && wgt_rope_rows_elementwise_calls(call->op_name, table, pass_begin, pass_end, &y, out, &rot, &copy,
                                                       ew, &n, err, (int)sizeof(err)))
        s = cpu_fail(b, call, WGT_ERR_INTERNAL, "rope expression: %s", err);
    for (int i = 0; s == WGT_OK && i < n; i++) s = cpu_run_elementwise(b, &ew[i]);
    wgt_storage_release(b->base.ctx, y.storage);
    return s;
}
