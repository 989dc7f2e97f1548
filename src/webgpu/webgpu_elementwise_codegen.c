/*
 * WGSL for the ELEMENTWISE kernel: one compute shader per (expression program,
 * dtypes, view modes, collapsed rank), built from an ew_plan (see
 * webgpu_elementwise.h) around the helper snippets in
 * src/webgpu/kernels/elementwise_{common,math,philox}.wgsl (and philox.wgsl).
 *
 * Generated module, in order:
 *   struct Params { w: array<vec4<u32>, 29> }   words at the EW_P_* positions
 *   @binding(0) params; @binding(1..) inputs read-only; last: output read_write
 *   ew_opaque, the snippets, per-binding loaders, ew_value (the program),
 *   ew_encode (store conversion), ew_unravel/ew_next (strided views), main.
 *
 * main: invocation t computes positions [C t, C t + C) of "linear index +
 * shift" (C = plan.chunk). A full chunk loads whole vec4s for aligned
 * contiguous inputs and stores whole vec4s for a contiguous output; a partial
 * chunk (first or last) goes element by element and rewrites its words
 * read-modify-write (no other invocation touches them). Strided views walk
 * their offsets incrementally within a chunk and unravel the linear index
 * again when a row ends; inner-contiguous ones (plan.inner_contiguous) unravel
 * once per full chunk and load or store it as one vec4 at offset / 4.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_elementwise.h"

/* ------------------------------------------------------------ text builder */

typedef struct text {
    char *buf;
    size_t len, cap;
    bool failed;
} text;

static void emit(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(text *t, const char *fmt, ...)
{
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n + 1;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
}

/* "params.w[2].x": the uniform word at position word. */
static const char *param(int word, char *buf)
{
    snprintf(buf, 32, "params.w[%d].%c", word / 4, "xyzw"[word % 4]);
    return buf;
}
#define P(word) param((word), (char[32]){0})

/* ------------------------------------------------------- program analysis */

static bool needs_math(int op)
{
    switch (op) {
    case WGT_EXPR_EXP: case WGT_EXPR_LOG: case WGT_EXPR_LOG1P: case WGT_EXPR_SIN: case WGT_EXPR_COS:
    case WGT_EXPR_TANH: case WGT_EXPR_SIGMOID: case WGT_EXPR_GELU: case WGT_EXPR_GELU_TANH: case WGT_EXPR_SILU:
    case WGT_EXPR_SOFTPLUS: case WGT_EXPR_ERF: case WGT_EXPR_POW: case WGT_EXPR_RAND_NORMAL:
        return true;
    default:
        return false;
    }
}

static bool is_float_dtype(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16; }

/* ------------------------------------------------------------------- nodes */

/* Node a's value as the wanted type, into buf. */
static const char *value_as(const wgt_expr *e, int a, bool want_float, char *buf)
{
    bool is_float = e->nodes[a].type == WGT_EXPR_F32;
    if (is_float == want_float) snprintf(buf, 48, "v%d", a);
    else snprintf(buf, 48, is_float ? "ew_f2i(v%d)" : "ew_i2f(v%d)", a);
    return buf;
}
#define ARG(a, want_float) value_as(e, (a), (want_float), (char[48]){0})

static const char *truth_of(const wgt_expr *e, int a, char *buf)
{
    if (e->nodes[a].type == WGT_EXPR_F32) snprintf(buf, 48, "ew_truth(v%d)", a);
    else snprintf(buf, 48, "(v%d != 0)", a);
    return buf;
}
#define TRUTH(a) truth_of(e, (a), (char[48]){0})

static const char *float_unary_name(int op)
{
    switch (op) {
    case WGT_EXPR_NEG: return "ew_neg";
    case WGT_EXPR_ABS: return "ew_abs";
    case WGT_EXPR_SIGN: return "ew_sign";
    case WGT_EXPR_EXP: return "ew_exp";
    case WGT_EXPR_LOG: return "ew_log";
    case WGT_EXPR_LOG1P: return "ew_log1p";
    case WGT_EXPR_SQRT: return "sqrt";
    case WGT_EXPR_SIN: return "ew_sin";
    case WGT_EXPR_COS: return "ew_cos";
    case WGT_EXPR_TANH: return "ew_tanh";
    case WGT_EXPR_SIGMOID: return "ew_sigmoid";
    case WGT_EXPR_RELU: return "ew_relu";
    case WGT_EXPR_GELU: return "ew_gelu";
    case WGT_EXPR_GELU_TANH: return "ew_gelu_tanh";
    case WGT_EXPR_SILU: return "ew_silu";
    case WGT_EXPR_SOFTPLUS: return "ew_softplus";
    case WGT_EXPR_ERF: return "ew_erf";
    case WGT_EXPR_FLOOR: return "ew_floor";
    case WGT_EXPR_CEIL: return "ew_ceil";
    case WGT_EXPR_ROUND: return "ew_round";
    default: return NULL;
    }
}

/* "let vJ: T = ...;" for node j. loaded_float[k]: input k loads as F32. */
static void emit_node(text *t, const wgt_expr *e, int j, const bool *loaded_float)
{
    const wgt_expr_node *n = &e->nodes[j];
    int op = n->opcode;
    bool node_float = n->type == WGT_EXPR_F32;
    bool compute_float = wgt_expr_compute_type(n) == WGT_EXPR_F32;
    const int16_t *a = n->args;
    char value[512];
    value[0] = 0;

    switch (op) {
    case WGT_EXPR_INPUT: {
        bool lf = loaded_float[n->input_index];
        if (lf == node_float) snprintf(value, sizeof value, "x%d", n->input_index);
        else snprintf(value, sizeof value, lf ? "ew_f2i(x%d)" : "ew_i2f(x%d)", n->input_index);
        emit(t, "    let v%d = %s;\n", j, value);
        return;
    }
    case WGT_EXPR_CONST: /* a uniform, never a literal: see webgpu_elementwise.h */
        emit(t, "    let v%d = bitcast<%s>(%s);\n", j, node_float ? "f32" : "i32", P(EW_P_CONST + j));
        return;
    case WGT_EXPR_INDEX:
        snprintf(value, sizeof value, "bitcast<i32>((i / %s) %% %s)", P(EW_P_INDEX + 2 * n->axis),
                 P(EW_P_INDEX + 2 * n->axis + 1));
        break;
    case WGT_EXPR_RAND_UNIFORM: case WGT_EXPR_RAND_NORMAL:
        snprintf(value, sizeof value, "%s(vec2<u32>(%s, %s), i)",
                 op == WGT_EXPR_RAND_UNIFORM ? "ew_rand_uniform" : "ew_rand_normal", P(EW_P_SEED_LO), P(EW_P_SEED_HI));
        break;
    case WGT_EXPR_CAST: /* converted to the node's type below */
        compute_float = e->nodes[a[0]].type == WGT_EXPR_F32;
        snprintf(value, sizeof value, "v%d", a[0]);
        break;
    case WGT_EXPR_NOT:
        snprintf(value, sizeof value, "ew_b2i(!%s)", TRUTH(a[0]));
        break;
    case WGT_EXPR_AND: case WGT_EXPR_OR:
        snprintf(value, sizeof value, "ew_b2i(%s %s %s)", TRUTH(a[0]), op == WGT_EXPR_AND ? "&&" : "||", TRUTH(a[1]));
        break;
    case WGT_EXPR_EQ: case WGT_EXPR_NE: case WGT_EXPR_LT: case WGT_EXPR_LE: case WGT_EXPR_GT: case WGT_EXPR_GE: {
        bool as_float = e->nodes[a[0]].type == WGT_EXPR_F32 || e->nodes[a[1]].type == WGT_EXPR_F32;
        char x[48], y[48];
        snprintf(x, sizeof x, "%s", ARG(a[0], as_float));
        snprintf(y, sizeof y, "%s", ARG(a[1], as_float));
        if (as_float) {
            static const char *fmt[] = {"ew_eq(%s, %s)", "!ew_eq(%s, %s)", "ew_lt(%s, %s)",
                                        "ew_le(%s, %s)", "ew_lt(%2$s, %1$s)", "ew_le(%2$s, %1$s)"};
            char cmp[160];
            snprintf(cmp, sizeof cmp, fmt[op - WGT_EXPR_EQ], x, y);
            snprintf(value, sizeof value, "ew_b2i(%s)", cmp);
        } else {
            static const char *sym[] = {"==", "!=", "<", "<=", ">", ">="};
            snprintf(value, sizeof value, "ew_b2i(%s %s %s)", x, sym[op - WGT_EXPR_EQ], y);
        }
        break;
    }
    case WGT_EXPR_WHERE: {
        char x[48], y[48];
        snprintf(x, sizeof x, "%s", ARG(a[1], compute_float));
        snprintf(y, sizeof y, "%s", ARG(a[2], compute_float));
        snprintf(value, sizeof value, "select(%s, %s, %s)", y, x, TRUTH(a[0]));
        break;
    }
    default: {
        int arity = wgt_expr_opcode_arity((wgt_expr_opcode)op);
        char x[48], y[64] = "";
        snprintf(x, sizeof x, "%s", ARG(a[0], compute_float));
        if (arity == 2) snprintf(y, sizeof y, "%s", ARG(a[1], compute_float));
        /* x - x, x / x: the compiler would fold them to 0 and 1, wrong for inf and
         * NaN, unless the second operand is a value it cannot prove equal */
        if (arity == 2 && compute_float && a[0] == a[1]) {
            char z[80]; /* y holds at most 63 characters (sizes for gcc -O0's truncation check) */
            snprintf(z, sizeof z, "ew_opaque2(%s)", y);
            snprintf(y, sizeof y, "%.63s", z);
        }
        if (arity == 1 && compute_float) {
            if (op == WGT_EXPR_RSQRT) snprintf(value, sizeof value, "(1.0 / sqrt(%s))", x);
            else if (op == WGT_EXPR_RECIPROCAL) snprintf(value, sizeof value, "(1.0 / %s)", x);
            else snprintf(value, sizeof value, "%s(%s)", float_unary_name(op), x);
        } else if (arity == 1) {
            switch (op) {
            case WGT_EXPR_NEG: snprintf(value, sizeof value, "ew_ineg(%s)", x); break;
            case WGT_EXPR_ABS: snprintf(value, sizeof value, "ew_iabs(%s)", x); break;
            case WGT_EXPR_SIGN: snprintf(value, sizeof value, "ew_isign(%s)", x); break;
            case WGT_EXPR_RELU: snprintf(value, sizeof value, "max(%s, 0)", x); break;
            default: snprintf(value, sizeof value, "%s", x); break; /* FLOOR, CEIL, ROUND of an integer */
            }
        } else if (compute_float) {
            switch (op) {
            /* ew_opaque: each result keeps its own rounding (no fma, no reassociation) */
            case WGT_EXPR_ADD: snprintf(value, sizeof value, "ew_opaque(%s + %s)", x, y); break;
            case WGT_EXPR_SUB: snprintf(value, sizeof value, "ew_opaque(%s - %s)", x, y); break;
            case WGT_EXPR_MUL: snprintf(value, sizeof value, "ew_opaque(%s * %s)", x, y); break;
            case WGT_EXPR_DIV: snprintf(value, sizeof value, "ew_opaque(%s / %s)", x, y); break;
            case WGT_EXPR_POW: snprintf(value, sizeof value, "ew_pow(%s, %s)", x, y); break;
            case WGT_EXPR_MAX: snprintf(value, sizeof value, "ew_max(%s, %s)", x, y); break;
            default: snprintf(value, sizeof value, "ew_min(%s, %s)", x, y); break;
            }
        } else {
            switch (op) { /* i32 + - * wrap in WGSL */
            case WGT_EXPR_ADD: snprintf(value, sizeof value, "(%s + %s)", x, y); break;
            case WGT_EXPR_SUB: snprintf(value, sizeof value, "(%s - %s)", x, y); break;
            case WGT_EXPR_MUL: snprintf(value, sizeof value, "(%s * %s)", x, y); break;
            case WGT_EXPR_MAX: snprintf(value, sizeof value, "max(%s, %s)", x, y); break;
            default: snprintf(value, sizeof value, "min(%s, %s)", x, y); break;
            }
        }
        break;
    }
    }
    if (compute_float == node_float) emit(t, "    let v%d = %s;\n", j, value);
    else emit(t, "    let v%d = %s(%s);\n", j, compute_float ? "ew_f2i" : "ew_i2f", value);
}

/* --------------------------------------------------------------- bindings */

static const char *xyzw(int c) { return (const char *[]){"x", "y", "z", "w"}[c & 3]; }

/* Binding b's u32 word w (an expression) as an expression. */
static const char *word_at(const ew_plan *plan, int b, const char *w, char *buf)
{
    if (plan->vec4_binding[b]) snprintf(buf, 96, "b%d[(%s) >> 2u][(%s) & 3u]", b, w, w);
    else snprintf(buf, 96, "b%d[%s]", b, w);
    return buf;
}

static void emit_bindings(text *t, const ew_plan *plan)
{
    int out = plan->n_bindings - 1;
    for (int b = 0; b < out; b++)
        emit(t, "@group(0) @binding(%d) var<storage, read> b%d: array<%s>;\n", b + 1, b,
             plan->vec4_binding[b] ? "vec4<u32>" : "u32");
    const char *type = plan->store == EW_STORE_ATOMIC ? "atomic<u32>"
                       : plan->store == EW_STORE_HALF ? "f16"
                       : plan->vec4_binding[out]      ? "vec4<u32>"
                                                      : "u32";
    emit(t, "@group(0) @binding(%d) var<storage, read_write> b%d: array<%s>;\n\n", out + 1, out, type);

    /* f16 conversions: hardware where the device check found it exact */
    emit(t, "fn ew_f16_to_f32(h: u32) -> f32 { return %s; }\n",
         plan->f16_hw_widen ? "unpack2x16float(h).x" : "ew_f16_to_f32_exact(h)");
    emit(t, "fn ew_f32_to_f16(f: f32) -> u32 { return %s; }\n\n",
         plan->f16_hw_narrow ? "pack2x16float(vec2<f32>(f, 0.0)) & 0xffffu" : "ew_f32_to_f16_exact(f)");

    /* element loaders of input bindings: ew_load<b>(element index) in the value type */
    for (int b = 0; b < out; b++) {
        wgt_dtype dt = WGT_F32;
        for (int v = 1; v < plan->n_views; v++)
            if (plan->binding[v] == b) dt = plan->dtype[v];
        char w[96];
        switch (dt) {
        case WGT_F32: emit(t, "fn ew_load%d(e: u32) -> f32 { return bitcast<f32>(%s); }\n", b, word_at(plan, b, "e", w)); break;
        case WGT_I32: emit(t, "fn ew_load%d(e: u32) -> i32 { return bitcast<i32>(%s); }\n", b, word_at(plan, b, "e", w)); break;
        case WGT_F16:
            emit(t, "fn ew_load%d(e: u32) -> f32 { return ew_f16_to_f32((%s >> ((e & 1u) * 16u)) & 0xffffu); }\n", b,
                 word_at(plan, b, "e >> 1u", w));
            break;
        default:
            emit(t, "fn ew_load%d(e: u32) -> i32 { return i32((%s >> ((e & 3u) * 8u)) & 0xffu); }\n", b,
                 word_at(plan, b, "e >> 2u", w));
            break;
        }
    }

    /* output stores: whole vec4s for full chunks (contiguous or inner-contiguous), words or elements else */
    wgt_dtype odt = plan->dtype[0];
    char w[96];
    if (plan->vec4_binding[out]) emit(t, "fn ew_store_vec4(q: u32, v: vec4<u32>) { b%d[q] = v; }\n", out);
    switch (plan->store) {
    case EW_STORE_CHUNK:
        emit(t, "fn ew_load_word(w: u32) -> u32 { return %s; }\n", word_at(plan, out, "w", w));
        emit(t, "fn ew_store_word(w: u32, r: u32) { %s = r; }\n", word_at(plan, out, "w", w));
        emit(t, "fn ew_out_words() -> u32 { return arrayLength(&b%d) * 4u; }\n", out);
        break;
    case EW_STORE_WORD: emit(t, "fn ew_store_elem(e: u32, r: u32) { %s = r; }\n", word_at(plan, out, "e", w)); break;
    case EW_STORE_HALF: /* r is already rounded: its f32 value converts to f16 exactly */
        emit(t, "fn ew_store_elem(e: u32, r: u32) { b%d[e] = f16(ew_f16_to_f32(r)); }\n", out);
        break;
    case EW_STORE_ATOMIC: {
        bool half = odt == WGT_F16;
        emit(t,
             "fn ew_store_elem(e: u32, r: u32) {\n"
             "    let w = e >> %du;\n"
             "    let shift = (e & %du) * %du;\n"
             "    atomicAnd(&b%d[w], ~(0x%xu << shift));\n"
             "    atomicOr(&b%d[w], r << shift);\n"
             "}\n",
             half ? 1 : 2, half ? 1 : 3, half ? 16 : 8, out, half ? 0xffffu : 0xffu, out);
        break;
    }
    }
    emit(t, "\n");
}

/* ------------------------------------------------------------ value / store */

static void emit_value_function(text *t, const ew_plan *plan, const bool *used, const bool *loaded_float)
{
    const wgt_expr *e = plan->expr;
    bool result_float = e->nodes[e->n_nodes - 1].type == WGT_EXPR_F32;
    emit(t, "fn ew_value(i: u32");
    for (int k = 0; k < plan->n_views - 1; k++)
        if (used[k]) emit(t, ", x%d: %s", k, loaded_float[k] ? "f32" : "i32");
    emit(t, ") -> %s {\n", result_float ? "f32" : "i32");
    for (int j = 0; j < e->n_nodes; j++) emit_node(t, e, j, loaded_float);
    emit(t, "    return v%d;\n}\n\n", e->n_nodes - 1);

    const char *in = result_float ? "f32" : "i32";
    const char *body;
    switch (plan->dtype[0]) {
    case WGT_F32: body = result_float ? "bitcast<u32>(v)" : "bitcast<u32>(ew_i2f(v))"; break;
    case WGT_F16: body = result_float ? "ew_f32_to_f16(v)" : "ew_f32_to_f16(ew_i2f(v))"; break;
    case WGT_I32: body = result_float ? "bitcast<u32>(ew_f2i(v))" : "bitcast<u32>(v)"; break;
    case WGT_U8: body = result_float ? "bitcast<u32>(ew_f2i(v)) & 0xffu" : "bitcast<u32>(v) & 0xffu"; break;
    default: body = result_float ? "select(0u, 1u, ew_truth(v))" : "select(0u, 1u, v != 0)"; break;
    }
    emit(t, "// the result as the output dtype's bits (the store rules of expr.h)\n");
    emit(t, "fn ew_encode(v: %s) -> u32 { return %s; }\n\n", in, body);
}

/* EwPos: the inner coordinate and the element offset of every strided view. */
static void emit_strided(text *t, const ew_plan *plan)
{
    int nd = plan->ndim;
    emit(t, "struct EwPos {\n    c: u32,\n");
    for (int v = 0; v < plan->n_views; v++)
        if (plan->mode[v] == EW_MODE_STRIDED) emit(t, "    o%d: u32,\n", v);
    emit(t, "}\n\nfn ew_unravel(i: u32) -> EwPos {\n    var r = i;\n");
    for (int d = nd - 1; d >= 1; d--) {
        emit(t, "    let c%d = r %% %s;\n", d, P(EW_P_SHAPE + d));
        emit(t, "    r = r / %s;\n", P(EW_P_SHAPE + d));
    }
    emit(t, "    let c0 = r;\n    var p: EwPos;\n    p.c = c%d;\n", nd - 1);
    for (int v = 0; v < plan->n_views; v++) {
        if (plan->mode[v] != EW_MODE_STRIDED) continue;
        emit(t, "    p.o%d = %s", v, P(EW_P_OFFSET + v));
        for (int d = 0; d < nd; d++) emit(t, " + c%d * %s", d, P(EW_P_STRIDES + v * WGT_MAX_DIMS + d));
        emit(t, ";\n");
    }
    emit(t, "    return p;\n}\n\n");
    emit(t, "// position of linear index i, the successor of p's\n");
    emit(t, "fn ew_next(p: EwPos, i: u32) -> EwPos {\n");
    emit(t, "    if (p.c + 1u < %s) {\n        var q = p;\n        q.c = p.c + 1u;\n", P(EW_P_SHAPE + nd - 1));
    for (int v = 0; v < plan->n_views; v++)
        if (plan->mode[v] == EW_MODE_STRIDED)
            emit(t, "        q.o%d = p.o%d + %s;\n", v, v, P(EW_P_STRIDES + v * WGT_MAX_DIMS + nd - 1));
    emit(t, "        return q;\n    }\n    return ew_unravel(i);\n}\n\n");
    if (!plan->chunk_in_row) return;
    emit(t, "// the next element's position inside a chunk, which never leaves its row\n");
    emit(t, "fn ew_step(p: EwPos) -> EwPos {\n    var q = p;\n    q.c = p.c + 1u;\n");
    for (int v = 0; v < plan->n_views; v++)
        if (plan->mode[v] == EW_MODE_STRIDED)
            emit(t, "    q.o%d = p.o%d + %s;\n", v, v, P(EW_P_STRIDES + v * WGT_MAX_DIMS + nd - 1));
    emit(t, "    return q;\n}\n\n");
}

/* ------------------------------------------------------------------- main */

static int log2_int(int x) { int l = 0; while ((1 << l) < x) l++; return l; }

/* Whether view v's full chunks are whole vec4s: an aligned contiguous view,
 * or a strided one of an inner-contiguous plan (the output: its stores). */
static bool vec4_chunks(const ew_plan *plan, int v)
{
    if (v == 0) return plan->store == EW_STORE_CHUNK || plan->inner_contiguous;
    return plan->mode[v] == EW_MODE_VECTOR || (plan->inner_contiguous && plan->mode[v] == EW_MODE_STRIDED);
}

/* Input k's value for chunk element j (constant) or runtime index expression i. */
static void input_value(const ew_plan *plan, int k, int j, const char *i, bool full, char *buf, size_t size)
{
    int v = k + 1, b = plan->binding[v];
    wgt_dtype dt = plan->dtype[v];
    char off[32];
    param(EW_P_OFFSET + v, off);
    if (full && vec4_chunks(plan, v)) { /* word w of the chunk is u<k>_<w / 4>.<w % 4> */
        int w = j * (int)wgt_dtype_size(dt) / 4;
        switch (dt) {
        case WGT_F32: snprintf(buf, size, "bitcast<f32>(u%d_%d.%s)", k, w / 4, xyzw(w)); break;
        case WGT_I32: snprintf(buf, size, "bitcast<i32>(u%d_%d.%s)", k, w / 4, xyzw(w)); break;
        case WGT_F16:
            if (plan->f16_hw_widen) snprintf(buf, size, "h%d_%d.%s", k, w, xyzw(j % 2));
            else snprintf(buf, size, "ew_f16_to_f32_exact((u%d_%d.%s >> %du) & 0xffffu)", k, w / 4, xyzw(w), 16 * (j % 2));
            break;
        default: snprintf(buf, size, "i32((u%d_%d.%s >> %du) & 0xffu)", k, w / 4, xyzw(w), 8 * (j % 4)); break;
        }
        return;
    }
    switch (plan->mode[v]) { /* element by element: partial chunks, views of other modes */
    case EW_MODE_VECTOR:
    case EW_MODE_LINEAR: snprintf(buf, size, "ew_load%d(%s + %s)", b, off, i); return;
    case EW_MODE_SCALAR: snprintf(buf, size, "s%d", k); return;
    case EW_MODE_STRIDED: snprintf(buf, size, "ew_load%d(p.o%d)", b, v); return;
    }
}

static void emit_call(text *t, const ew_plan *plan, const bool *used, int j, const char *i, bool full,
                      const char *result)
{
    emit(t, "        let %s = ew_encode(ew_value(%s", result, i);
    for (int k = 0; k < plan->n_views - 1; k++) {
        if (!used[k]) continue;
        char buf[160];
        input_value(plan, k, j, i, full, buf, sizeof buf);
        emit(t, ", %s", buf);
    }
    emit(t, "));\n");
}

/* A copy between views of one dtype whose full chunks are whole vectors on
 * both sides: the chunk's bits move unchanged (a NaN keeps its payload). */
static bool raw_copy(const ew_plan *plan)
{
    const wgt_expr *e = plan->expr;
    return e->n_nodes == 1 && e->nodes[0].opcode == WGT_EXPR_INPUT && plan->n_views == 2 &&
           plan->dtype[1] == plan->dtype[0] && plan->dtype[0] != WGT_BOOL && vec4_chunks(plan, 0) &&
           vec4_chunks(plan, 1) &&
           (e->nodes[0].type == WGT_EXPR_F32) == (plan->dtype[0] == WGT_F32 || plan->dtype[0] == WGT_F16);
}

static bool has_strided(const ew_plan *plan)
{
    for (int v = 0; v < plan->n_views; v++)
        if (plan->mode[v] == EW_MODE_STRIDED) return true;
    return false;
}

/* vec4s in a chunk of view v, and the shift from element to vec4 index */
static int chunk_vec4s(const ew_plan *plan, int v) { return plan->chunk * (int)wgt_dtype_size(plan->dtype[v]) / 16; }
static int vec4_shift(const ew_plan *plan, int v) { return log2_int(16 / (int)wgt_dtype_size(plan->dtype[v])); }

/* "let name = ...;": the first vec4 of view v's full chunk (vec4_chunks(v)):
 * from the linear index for a contiguous view, from the element offset of
 * position p for an inner-contiguous strided one. */
static void emit_chunk_vec4(text *t, const ew_plan *plan, int v, const char *name)
{
    if (plan->mode[v] == EW_MODE_STRIDED) emit(t, "        let %s = p.o%d >> %du;\n", name, v, vec4_shift(plan, v));
    else emit(t, "        let %s = (%s + i0) >> %du;\n", name, P(EW_P_OFFSET + v), vec4_shift(plan, v));
}

/* Full chunk: elements i0 .. i0 + C - 1, aligned for every vector view. An
 * inner-contiguous plan's strided views take position p once: the chunk is
 * one row's consecutive elements. */
static void emit_full_chunk(text *t, const ew_plan *plan, const bool *used)
{
    int C = plan->chunk;
    bool strided = has_strided(plan), vec4_out = vec4_chunks(plan, 0), walk = strided && !plan->inner_contiguous;
    int osize = (int)wgt_dtype_size(plan->dtype[0]);
    emit(t, "    if (start >= shift && end - start >= %du) {\n", C);
    emit(t, "        let i0 = start - shift;\n");
    if (strided) emit(t, "        %s p = ew_unravel(i0);\n", walk ? "var" : "let");
    if (vec4_out) emit_chunk_vec4(t, plan, 0, "q");
    if (raw_copy(plan)) { /* same dtype in and out: move the bits */
        emit_chunk_vec4(t, plan, 1, "qi");
        for (int m = 0; m < chunk_vec4s(plan, 0); m++)
            emit(t, "        ew_store_vec4(q + %du, b%d[qi + %du]);\n", m, plan->binding[1], m);
        emit(t, "        return;\n    }\n\n");
        return;
    }
    for (int k = 0; k < plan->n_views - 1; k++) {
        int v = k + 1;
        if (!used[k] || !vec4_chunks(plan, v)) continue;
        char name[16];
        snprintf(name, sizeof name, "q%d", k);
        emit_chunk_vec4(t, plan, v, name);
        for (int m = 0; m < chunk_vec4s(plan, v); m++) emit(t, "        let u%d_%d = b%d[q%d + %du];\n", k, m, plan->binding[v], k, m);
        if (plan->dtype[v] == WGT_F16 && plan->f16_hw_widen) /* two halves per word, widened together */
            for (int w = 0; w < C / 2; w++) emit(t, "        let h%d_%d = unpack2x16float(u%d_%d.%s);\n", k, w, k, w / 4, xyzw(w));
    }
    for (int j = 0; j < C; j++) {
        char i[24], r[16];
        snprintf(i, sizeof i, "i0 + %du", j);
        snprintf(r, sizeof r, "r%d", j);
        emit_call(t, plan, used, j, i, true, r);
        if (!vec4_out) emit(t, "        ew_store_elem(p.o0, r%d);\n", j);
        if (walk && j + 1 < C && plan->chunk_in_row) emit(t, "        p = ew_step(p);\n");
        else if (walk && j + 1 < C) emit(t, "        p = ew_next(p, i0 + %du);\n", j + 1);
    }
    if (vec4_out) { /* word w of the output chunk, four words per vec4 */
        int per_word = 4 / osize, words = C / per_word;
        for (int m = 0; m < words / 4; m++) {
            emit(t, "        ew_store_vec4(q + %du, vec4<u32>(", m);
            for (int c = 0; c < 4; c++) {
                int w = 4 * m + c;
                emit(t, "%s", c ? ", " : "");
                for (int e = 0; e < per_word; e++)
                    emit(t, e == 0 ? "r%d" : " | (r%d << %du)", w * per_word + e, 32 / per_word * e);
            }
            emit(t, "));\n");
        }
    }
    emit(t, "        return;\n    }\n\n");
}

/* Partial chunk (the first or last): element by element; a contiguous
 * sub-word output is merged into its words, which no other invocation
 * touches, and written back whole. */
static void emit_partial_chunk(text *t, const ew_plan *plan, const bool *used)
{
    int C = plan->chunk;
    bool chunk_out = plan->store == EW_STORE_CHUNK;
    int osize = (int)wgt_dtype_size(plan->dtype[0]);
    int words = C * osize / 4;
    bool merge = chunk_out && osize < 4;
    if (merge) {
        emit(t, "    let w0 = ((%s - shift + start) * %du) >> 2u;\n", P(EW_P_OFFSET), osize);
        emit(t, "    var acc: array<u32, %d>;\n", words);
        /* a chunk may reach past a buffer that holds whole vec4s but not whole chunks */
        emit(t, "    for (var m = 0u; m < %du; m = m + 1u) { if (w0 + m < ew_out_words()) { acc[m] = ew_load_word(w0 + m); } }\n",
             words);
    }
    emit(t, "    for (var j = 0u; j < %du; j = j + 1u) {\n", C);
    emit(t, "        let pos = start + j;\n");
    emit(t, "        if (pos < shift || pos >= end) { continue; }\n");
    emit(t, "        let i = pos - shift;\n");
    if (has_strided(plan)) emit(t, "        let p = ew_unravel(i);\n");
    emit_call(t, plan, used, 0, "i", false, "r");
    if (!chunk_out) emit(t, "        ew_store_elem(p.o0, r);\n");
    else if (osize == 4) emit(t, "        ew_store_word(%s + i, r);\n", P(EW_P_OFFSET));
    else if (osize == 2)
        emit(t, "        acc[j >> 1u] = (acc[j >> 1u] & ~(0xffffu << ((j & 1u) * 16u))) | (r << ((j & 1u) * 16u));\n");
    else emit(t, "        acc[j >> 2u] = (acc[j >> 2u] & ~(0xffu << ((j & 3u) * 8u))) | (r << ((j & 3u) * 8u));\n");
    emit(t, "    }\n");
    if (merge)
        emit(t, "    for (var m = 0u; m < %du; m = m + 1u) { if (w0 + m < ew_out_words()) { ew_store_word(w0 + m, acc[m]); } }\n",
             words);
}

static void emit_main(text *t, const ew_plan *plan, const bool *used)
{
    emit(t, "@compute @workgroup_size(%d)\n", EW_WORKGROUP);
    emit(t, "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,\n"
            "        @builtin(local_invocation_index) lid: u32) {\n");
    emit(t, "    let t = (wid.x + wid.y * groups.x) * %du + lid;\n", EW_WORKGROUP);
    emit(t, "    if (t >= %s) { return; }\n", P(EW_P_CHUNKS));
    emit(t, "    let shift = %s;\n", P(EW_P_SHIFT));
    emit(t, "    let start = t * %du;\n", plan->chunk);
    emit(t, "    let end = %s + shift;\n", P(EW_P_NUMEL));
    for (int k = 0; k < plan->n_views - 1; k++)
        if (used[k] && plan->mode[k + 1] == EW_MODE_SCALAR)
            emit(t, "    let s%d = ew_load%d(%s);\n", k, plan->binding[k + 1], P(EW_P_OFFSET + k + 1));
    emit_full_chunk(t, plan, used);
    emit_partial_chunk(t, plan, used);
    emit(t, "}\n");
}

/* ------------------------------------------------------------------ entry */

char *ew_generate_wgsl(const ew_plan *plan)
{
    const wgt_expr *e = plan->expr;
    text t = {malloc(16384), 0, 16384, false};
    if (!t.buf) return NULL;
    t.buf[0] = 0;

    bool used[WGT_MAX_KERNEL_INPUTS] = {false}, loaded_float[WGT_MAX_KERNEL_INPUTS];
    bool math = false, random = false;
    for (int k = 0; k < plan->n_views - 1; k++) loaded_float[k] = is_float_dtype(plan->dtype[k + 1]);
    for (int j = 0; j < e->n_nodes; j++) {
        int op = e->nodes[j].opcode;
        if (op == WGT_EXPR_INPUT) used[e->nodes[j].input_index] = true;
        math |= needs_math(op);
        random |= op == WGT_EXPR_RAND_UNIFORM || op == WGT_EXPR_RAND_NORMAL;
    }

    math |= random; /* the philox snippet's normal draw uses ew_log and ew_cos */
    emit(&t, "// ELEMENTWISE kernel generated by webgpu_elementwise_codegen.c\n");
    if (plan->store == EW_STORE_HALF) emit(&t, "enable f16;\n");
    emit(&t, "\n// Params words: numel, seed lo, seed hi, shift | zero, chunks, zero2 | offsets[9] | shape[8] |\n"
             "// strides[9][8] | index (inner, size)[8] | constants[64]  (see webgpu_elementwise.h)\n");
    emit(&t, "struct Params { w: array<vec4<u32>, %d> }\n", EW_P_WORDS / 4);
    emit(&t, "@group(0) @binding(0) var<uniform> params: Params;\n");
    emit_bindings(&t, plan);
    emit(&t, "fn ew_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | %s); }\n", P(EW_P_ZERO));
    emit(&t, "fn ew_opaque2(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | %s); }\n\n", P(EW_P_ZERO2));
    const char *snippets[5] = {"elementwise_common", math ? "elementwise_math" : NULL, random ? "philox" : NULL,
                               !random ? NULL : plan->philox_mul64 ? "philox_mul64" : "philox_mul16",
                               random ? "elementwise_philox" : NULL};
    for (int s = 0; s < 5; s++) {
        if (!snippets[s]) continue;
        const char *src = webgpu_kernel_source(snippets[s]);
        if (!src) {
            free(t.buf);
            return NULL;
        }
        emit(&t, "%s\n", src);
    }
    emit_value_function(&t, plan, used, loaded_float);
    if (has_strided(plan)) emit_strided(&t, plan);
    emit_main(&t, plan, used);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}

bool ew_plan_key(const ew_plan *plan, char *buf, size_t size)
{
    int used = snprintf(buf, size, "elementwise;nd%d;c%d;%c%s%s%s%s%s;", plan->ndim, plan->chunk, (char)plan->store,
                        plan->f16_hw_widen ? "W" : "", plan->f16_hw_narrow ? "N" : "",
                        plan->inner_contiguous ? "I" : "", plan->chunk_in_row ? "R" : "",
                        plan->philox_mul64 ? "L" : "");
    for (int v = 0; v < plan->n_views && used > 0 && (size_t)used < size; v++)
        used += snprintf(buf + used, size - (size_t)used, "%d%c%d,", (int)plan->dtype[v], (char)plan->mode[v],
                         plan->binding[v]);
    for (int b = 0; b < plan->n_bindings && (size_t)used < size; b++)
        used += snprintf(buf + used, size - (size_t)used, "%c", plan->vec4_binding[b] ? '4' : '1');
    if (used < 0 || (size_t)used + 2 >= size) return false;
    buf[used++] = ';';
    int n = wgt_expr_key(plan->expr, buf + used, (int)(size - (size_t)used));
    return (size_t)(used + n) + 1 < size;
}
