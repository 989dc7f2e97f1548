/*
 * Elementwise expression programs: the one representation behind every
 * elementwise op, wgt_fused, casts, copies, fills, slice assignment, tril/triu,
 * one_hot, arange/linspace/eye and rand/randn.
 *
 * A program is a list of nodes in topological order; each node names its
 * arguments by earlier node indices; the last node is the result, converted to
 * the output view's dtype on store. Each node computes in one of two value types:
 * F32 (f32 and f16 data) or I32 (i32, u8 and bool data).
 *
 * The semantics below are the library's, and both backends implement exactly
 * them (the CPU backend in src/cpu/cpu_elementwise.c, the WebGPU backend by
 * generating WGSL in src/webgpu/webgpu_elementwise.c):
 *
 *  Loads (INPUT k): f32 as is; f16 widened to f32; i32 as is; u8 and bool as
 *    their unsigned value (0..255) in I32. An INPUT node's type is F32 for f32/f16
 *    inputs and I32 otherwise.
 *  CAST: F32 -> I32 truncates toward zero, saturates to [INT32_MIN, INT32_MAX],
 *    NaN -> 0. I32 -> F32 rounds to nearest.
 *  Stores: F32 -> f32 as is; F32 -> f16 rounds to nearest even (overflow -> inf);
 *    to i32/u8/bool the value is first CAST to I32 if F32, except bool, which is
 *    (value != 0) so NaN -> 1. I32 -> u8 keeps the low 8 bits; I32 -> bool is
 *    (value != 0); I32 -> f32/f16 converts.
 *  Arithmetic on I32 wraps (two's complement). DIV and POW are F32 only.
 *  MAX/MIN propagate NaN (if either argument is NaN the result is NaN).
 *  Comparisons give I32 0/1; any comparison with NaN is 0 except NE, which is 1.
 *  AND/OR/NOT treat nonzero (and NaN) as true and give I32 0/1.
 *  SIGN: -1, 0, +1 (NaN -> NaN for F32). ROUND: half to even.
 *  RELU: x > 0 ? x : 0, with NaN -> NaN. SIGMOID: 1 / (1 + exp(-x)).
 *  GELU: 0.5 x (1 + erf(x / sqrt 2)); GELU_TANH: 0.5 x (1 + tanh(sqrt(2/pi)
 *    (x + 0.044715 x^3))). SILU: x * sigmoid(x). SOFTPLUS: log1p(exp(-|x|)) + max(x, 0).
 *  ERF: the error function (GELU's backward: Phi(x) = 0.5 (1 + erf(x / sqrt 2))).
 *  WHERE(c, a, b): c != 0 ? a : b (NaN condition counts as true).
 *  INDEX(axis): the output coordinate along axis, I32.
 *  RAND_UNIFORM / RAND_NORMAL: Philox-4x32-10 keyed by (seed lo, seed hi) — see
 *    src/core/philox.h. Uniform element i: word i % 4 of counter (i / 4, 0, 0, 0)
 *    (lo, hi of i / 4 in the first two words), >> 8, times 2^-24, in [0, 1).
 *    Normal element i: Box–Muller on words 2 (i % 2), 2 (i % 2) + 1 = (w0, w1) of
 *    counter (i / 2, 0, 0, 0): u1 = (w0 >> 8 + 1) * 2^-24 in (0, 1], u2 = (w1 >> 8)
 *    * 2^-24, sqrt(-2 log u1) * cos(2 pi u2). One call serves four uniforms or two
 *    normals (cpu_elementwise.c's fill_random, kernels/elementwise_philox.wgsl).
 */
#ifndef WGT_EXPR_H
#define WGT_EXPR_H

#include <stdint.h>

#define WGT_EXPR_MAX_NODES 64
#define WGT_EXPR_MAX_PARAMS 16      /* p0 .. p15 in wgt_fused_params */
#define WGT_EXPR_MAX_PARAMS_TEXT "16"
#define WGT_EXPR_MAX_DEPTH 200      /* nesting levels the parser accepts */
#define WGT_EXPR_MAX_DEPTH_TEXT "200"

typedef enum wgt_expr_type { WGT_EXPR_F32 = 0, WGT_EXPR_I32 = 1 } wgt_expr_type;

typedef enum wgt_expr_opcode {
    /* leaves */
    WGT_EXPR_INPUT,        /* input_index */
    WGT_EXPR_CONST,        /* constant (as F32 or I32 by node type) */
    WGT_EXPR_INDEX,        /* axis */
    WGT_EXPR_RAND_UNIFORM, /* uses wgt_expr.seed */
    WGT_EXPR_RAND_NORMAL,
    /* unary (args[0]) */
    WGT_EXPR_CAST,         /* args[0] converted to this node's type */
    WGT_EXPR_NEG, WGT_EXPR_ABS, WGT_EXPR_SIGN,
    WGT_EXPR_EXP, WGT_EXPR_LOG, WGT_EXPR_LOG1P, WGT_EXPR_SQRT, WGT_EXPR_RSQRT,
    WGT_EXPR_RECIPROCAL, WGT_EXPR_SIN, WGT_EXPR_COS, WGT_EXPR_TANH, WGT_EXPR_SIGMOID,
    WGT_EXPR_RELU, WGT_EXPR_GELU, WGT_EXPR_GELU_TANH, WGT_EXPR_SILU, WGT_EXPR_SOFTPLUS, WGT_EXPR_ERF,
    WGT_EXPR_FLOOR, WGT_EXPR_CEIL, WGT_EXPR_ROUND, WGT_EXPR_NOT,
    /* binary (args[0], args[1]); both args have the node's type except for
     * comparisons, whose args share a type and whose result is I32 */
    WGT_EXPR_ADD, WGT_EXPR_SUB, WGT_EXPR_MUL, WGT_EXPR_DIV, WGT_EXPR_POW,
    WGT_EXPR_MAX, WGT_EXPR_MIN,
    WGT_EXPR_EQ, WGT_EXPR_NE, WGT_EXPR_LT, WGT_EXPR_LE, WGT_EXPR_GT, WGT_EXPR_GE,
    WGT_EXPR_AND, WGT_EXPR_OR,
    /* ternary: WHERE(args[0] condition, args[1], args[2]) */
    WGT_EXPR_WHERE,
    WGT_EXPR_OPCODE_COUNT
} wgt_expr_opcode;

typedef struct wgt_expr_node {
    uint8_t opcode;      /* wgt_expr_opcode */
    uint8_t type;        /* wgt_expr_type of the result */
    int16_t args[3];     /* earlier node indices, -1 if unused */
    int32_t input_index; /* INPUT */
    int32_t axis;        /* INDEX */
    double constant;     /* CONST: value (an integer for I32 nodes) */
} wgt_expr_node;

typedef struct wgt_expr {
    int n_nodes;
    int n_inputs;
    uint64_t seed;       /* RAND_* */
    wgt_expr_node nodes[WGT_EXPR_MAX_NODES];
} wgt_expr;

/* Name of an opcode ("add", "exp", ...), used in generated code and keys. */
const char *wgt_expr_opcode_name(wgt_expr_opcode op);
/* Number of arguments of an opcode (0..3). */
int wgt_expr_opcode_arity(wgt_expr_opcode op);
/* True for opcodes that accept only F32 arguments. */
int wgt_expr_opcode_float_only(wgt_expr_opcode op);
/* The value type a node's opcode computes in, which both backends use: F32 for
 * transcendental functions, div, pow and random draws; I32 for INDEX, NOT,
 * comparisons and logic; otherwise the node's own type. A result computed in
 * another type than the node's is converted with CAST rules. */
wgt_expr_type wgt_expr_compute_type(const wgt_expr_node *node);

/* Builders: append a node, return its index, or -1 if the program is full. */
void wgt_expr_init(wgt_expr *e);
int wgt_expr_input(wgt_expr *e, int input_index, wgt_expr_type type);
int wgt_expr_const(wgt_expr *e, double value, wgt_expr_type type);
int wgt_expr_index(wgt_expr *e, int axis);
int wgt_expr_rand(wgt_expr *e, wgt_expr_opcode uniform_or_normal);
/* Unary/binary/ternary with automatic typing: float-only opcodes cast I32
 * arguments to F32; binary arithmetic on mixed types casts to F32; comparisons
 * and logic give I32. */
int wgt_expr_unary(wgt_expr *e, wgt_expr_opcode op, int a);
int wgt_expr_binary(wgt_expr *e, wgt_expr_opcode op, int a, int b);
int wgt_expr_where(wgt_expr *e, int cond, int a, int b);
int wgt_expr_cast(wgt_expr *e, int a, wgt_expr_type type);

/* The I32 value of an I32 CONST node's constant: toward zero, saturating,
 * NaN -> 0 (both backends read I32 constants through this). */
int32_t wgt_expr_const_i32(double value);

/* Stable text form of a program, for cache keys and debugging. Constant values
 * are left out: backends take them as run-time parameters, so programs that
 * differ only in constants share one compiled kernel. Returns length written
 * (truncated to size-1). */
int wgt_expr_key(const wgt_expr *e, char *buf, int size);

/* Parses a wgt_fused expression ("sqrt(a*b + c)") over n_inputs inputs whose
 * value types are input_types[]. On error returns nonzero and writes a message
 * naming the position into err. Integer literals are I32 constants; one beyond
 * i32 is accepted only where it is used as a float (promoted), otherwise
 * refused. Recursion is limited to WGT_EXPR_MAX_DEPTH levels. */
int wgt_expr_parse(const char *text, int n_inputs, const wgt_expr_type *input_types, wgt_expr *out,
                   char *err, int err_size);
/* The same with scalar parameters: p0 .. p<n_params - 1> in the text are F32
 * constants of params[k]. Constants are run-time values for the backends
 * (see wgt_expr_key), so new values reuse the compiled kernel. */
int wgt_expr_parse_params(const char *text, int n_inputs, const wgt_expr_type *input_types, const double *params,
                          int n_params, wgt_expr *out, char *err, int err_size);

#endif /* WGT_EXPR_H */
