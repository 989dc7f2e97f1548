/* Expression programs: builders with automatic typing, cache keys, and the
 * parser behind wgt_fused. Semantics are documented in expr.h. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"

typedef struct opcode_info {
    const char *name;
    int arity;
    int float_only;
} opcode_info;

static const opcode_info opcode_table[WGT_EXPR_OPCODE_COUNT] = {
    [WGT_EXPR_INPUT] = {"input", 0, 0},
    [WGT_EXPR_CONST] = {"const", 0, 0},
    [WGT_EXPR_INDEX] = {"index", 0, 0},
    [WGT_EXPR_RAND_UNIFORM] = {"rand", 0, 0},
    [WGT_EXPR_RAND_NORMAL] = {"randn", 0, 0},
    [WGT_EXPR_CAST] = {"cast", 1, 0},
    [WGT_EXPR_NEG] = {"neg", 1, 0},
    [WGT_EXPR_ABS] = {"abs", 1, 0},
    [WGT_EXPR_SIGN] = {"sign", 1, 0},
    [WGT_EXPR_EXP] = {"exp", 1, 1},
    [WGT_EXPR_LOG] = {"log", 1, 1},
    [WGT_EXPR_LOG1P] = {"log1p", 1, 1},
    [WGT_EXPR_SQRT] = {"sqrt", 1, 1},
    [WGT_EXPR_RSQRT] = {"rsqrt", 1, 1},
    [WGT_EXPR_RECIPROCAL] = {"reciprocal", 1, 1},
    [WGT_EXPR_SIN] = {"sin", 1, 1},
    [WGT_EXPR_COS] = {"cos", 1, 1},
    [WGT_EXPR_TANH] = {"tanh", 1, 1},
    [WGT_EXPR_SIGMOID] = {"sigmoid", 1, 1},
    [WGT_EXPR_RELU] = {"relu", 1, 0},
    [WGT_EXPR_GELU] = {"gelu", 1, 1},
    [WGT_EXPR_GELU_TANH] = {"gelu_tanh", 1, 1},
    [WGT_EXPR_SILU] = {"silu", 1, 1},
    [WGT_EXPR_SOFTPLUS] = {"softplus", 1, 1},
    [WGT_EXPR_ERF] = {"erf", 1, 1},
    [WGT_EXPR_FLOOR] = {"floor", 1, 1},
    [WGT_EXPR_CEIL] = {"ceil", 1, 1},
    [WGT_EXPR_ROUND] = {"round", 1, 1},
    [WGT_EXPR_NOT] = {"logical_not", 1, 0},
    [WGT_EXPR_ADD] = {"add", 2, 0},
    [WGT_EXPR_SUB] = {"sub", 2, 0},
    [WGT_EXPR_MUL] = {"mul", 2, 0},
    [WGT_EXPR_DIV] = {"div", 2, 1},
    [WGT_EXPR_POW] = {"pow", 2, 1},
    [WGT_EXPR_MAX] = {"maximum", 2, 0},
    [WGT_EXPR_MIN] = {"minimum", 2, 0},
    [WGT_EXPR_EQ] = {"eq", 2, 0},
    [WGT_EXPR_NE] = {"ne", 2, 0},
    [WGT_EXPR_LT] = {"lt", 2, 0},
    [WGT_EXPR_LE] = {"le", 2, 0},
    [WGT_EXPR_GT] = {"gt", 2, 0},
    [WGT_EXPR_GE] = {"ge", 2, 0},
    [WGT_EXPR_AND] = {"logical_and", 2, 0},
    [WGT_EXPR_OR] = {"logical_or", 2, 0},
    [WGT_EXPR_WHERE] = {"where", 3, 0},
};

const char *wgt_expr_opcode_name(wgt_expr_opcode op)
{
    return (unsigned)op < WGT_EXPR_OPCODE_COUNT ? opcode_table[op].name : "invalid";
}
int wgt_expr_opcode_arity(wgt_expr_opcode op) { return (unsigned)op < WGT_EXPR_OPCODE_COUNT ? opcode_table[op].arity : 0; }
int wgt_expr_opcode_float_only(wgt_expr_opcode op)
{
    return (unsigned)op < WGT_EXPR_OPCODE_COUNT ? opcode_table[op].float_only : 0;
}

wgt_expr_type wgt_expr_compute_type(const wgt_expr_node *node)
{
    switch ((wgt_expr_opcode)node->opcode) {
    case WGT_EXPR_EXP: case WGT_EXPR_LOG: case WGT_EXPR_LOG1P: case WGT_EXPR_SQRT: case WGT_EXPR_RSQRT:
    case WGT_EXPR_RECIPROCAL: case WGT_EXPR_SIN: case WGT_EXPR_COS: case WGT_EXPR_TANH: case WGT_EXPR_SIGMOID:
    case WGT_EXPR_GELU: case WGT_EXPR_GELU_TANH: case WGT_EXPR_SILU: case WGT_EXPR_SOFTPLUS: case WGT_EXPR_ERF:
    case WGT_EXPR_DIV: case WGT_EXPR_POW: case WGT_EXPR_RAND_UNIFORM: case WGT_EXPR_RAND_NORMAL:
        return WGT_EXPR_F32;
    case WGT_EXPR_INDEX: case WGT_EXPR_NOT: case WGT_EXPR_EQ: case WGT_EXPR_NE: case WGT_EXPR_LT: case WGT_EXPR_LE:
    case WGT_EXPR_GT: case WGT_EXPR_GE: case WGT_EXPR_AND: case WGT_EXPR_OR:
        return WGT_EXPR_I32;
    default:
        return (wgt_expr_type)node->type;
    }
}

static int is_comparison_or_logic(wgt_expr_opcode op)
{
    return (op >= WGT_EXPR_EQ && op <= WGT_EXPR_OR) || op == WGT_EXPR_NOT;
}

void wgt_expr_init(wgt_expr *e) { memset(e, 0, sizeof(*e)); }

static int append(wgt_expr *e, wgt_expr_opcode op, wgt_expr_type type, int a, int b, int c)
{
    if (e->n_nodes >= WGT_EXPR_MAX_NODES) return -1;
    if (a < -1 || b < -1 || c < -1) return -1; /* a failed earlier build propagates */
    wgt_expr_node *n = &e->nodes[e->n_nodes];
    memset(n, 0, sizeof(*n));
    n->opcode = (uint8_t)op;
    n->type = (uint8_t)type;
    n->args[0] = (int16_t)a;
    n->args[1] = (int16_t)b;
    n->args[2] = (int16_t)c;
    return e->n_nodes++;
}

int wgt_expr_input(wgt_expr *e, int input_index, wgt_expr_type type)
{
    int i = append(e, WGT_EXPR_INPUT, type, -1, -1, -1);
    if (i >= 0) {
        e->nodes[i].input_index = input_index;
        if (input_index + 1 > e->n_inputs) e->n_inputs = input_index + 1;
    }
    return i;
}

int wgt_expr_const(wgt_expr *e, double value, wgt_expr_type type)
{
    int i = append(e, WGT_EXPR_CONST, type, -1, -1, -1);
    if (i >= 0) e->nodes[i].constant = value;
    return i;
}

int wgt_expr_index(wgt_expr *e, int axis)
{
    int i = append(e, WGT_EXPR_INDEX, WGT_EXPR_I32, -1, -1, -1);
    if (i >= 0) e->nodes[i].axis = axis;
    return i;
}

int wgt_expr_rand(wgt_expr *e, wgt_expr_opcode uniform_or_normal)
{
    return append(e, uniform_or_normal, WGT_EXPR_F32, -1, -1, -1);
}

int32_t wgt_expr_const_i32(double value)
{
    if (value != value) return 0;
    if (value >= 2147483647.0) return INT32_MAX;
    if (value <= -2147483648.0) return INT32_MIN;
    return (int32_t)value;
}

static wgt_expr_type type_of(const wgt_expr *e, int node) { return (wgt_expr_type)e->nodes[node].type; }

int wgt_expr_cast(wgt_expr *e, int a, wgt_expr_type type)
{
    if (a < 0) return -1;
    if (type_of(e, a) == type) return a;
    return append(e, WGT_EXPR_CAST, type, a, -1, -1);
}

int wgt_expr_unary(wgt_expr *e, wgt_expr_opcode op, int a)
{
    if (a < 0) return -1;
    if (wgt_expr_opcode_float_only(op)) a = wgt_expr_cast(e, a, WGT_EXPR_F32);
    if (a < 0) return -1; /* the cast did not fit in the node table (found by fuzz_fused) */
    wgt_expr_type t = is_comparison_or_logic(op) ? WGT_EXPR_I32 : type_of(e, a);
    return append(e, op, t, a, -1, -1);
}

int wgt_expr_binary(wgt_expr *e, wgt_expr_opcode op, int a, int b)
{
    if (a < 0 || b < 0) return -1;
    wgt_expr_type t = (type_of(e, a) == WGT_EXPR_F32 || type_of(e, b) == WGT_EXPR_F32 ||
                       wgt_expr_opcode_float_only(op))
                          ? WGT_EXPR_F32
                          : WGT_EXPR_I32;
    a = wgt_expr_cast(e, a, t);
    b = wgt_expr_cast(e, b, t);
    return append(e, op, is_comparison_or_logic(op) ? WGT_EXPR_I32 : t, a, b, -1);
}

int wgt_expr_where(wgt_expr *e, int cond, int a, int b)
{
    if (cond < 0 || a < 0 || b < 0) return -1;
    wgt_expr_type t = (type_of(e, a) == WGT_EXPR_F32 || type_of(e, b) == WGT_EXPR_F32) ? WGT_EXPR_F32 : WGT_EXPR_I32;
    a = wgt_expr_cast(e, a, t);
    b = wgt_expr_cast(e, b, t);
    return append(e, WGT_EXPR_WHERE, t, cond, a, b);
}

int wgt_expr_key(const wgt_expr *e, char *buf, int size)
{
    int used = snprintf(buf, (size_t)size, "n%d", e->n_inputs);
    for (int i = 0; i < e->n_nodes && used < size; i++) {
        const wgt_expr_node *n = &e->nodes[i];
        used += snprintf(buf + used, (size_t)(size - used), ";%s%c", wgt_expr_opcode_name(n->opcode),
                         n->type == WGT_EXPR_F32 ? 'f' : 'i');
        if (used >= size) break;
        switch (n->opcode) {
        case WGT_EXPR_INPUT: used += snprintf(buf + used, (size_t)(size - used), "%d", n->input_index); break;
        case WGT_EXPR_CONST: break; /* the value is a run-time parameter, not part of the key */
        case WGT_EXPR_INDEX: used += snprintf(buf + used, (size_t)(size - used), "%d", n->axis); break;
        default:
            for (int k = 0; k < wgt_expr_opcode_arity(n->opcode) && used < size; k++)
                used += snprintf(buf + used, (size_t)(size - used), ",%d", n->args[k]);
        }
    }
    return used < size ? used : size - 1;
}

/* ------------------------------------------------------------------ parser
 * Grammar (lowest precedence first):
 *   or     := and ('||' and)*
 *   and    := cmp ('&&' cmp)*
 *   cmp    := sum (('<'|'<='|'>'|'>='|'=='|'!=') sum)?
 *   sum    := prod (('+'|'-') prod)*
 *   prod   := unary (('*'|'/') unary)*
 *   unary  := ('-'|'!') unary | primary
 *   primary:= number | letter | 'p' digits | name '(' args ')' | '(' or ')'
 *
 * Letters a..z are the inputs; p0, p1, .. are the scalar parameters (F32
 * constants whose values come with the call). Every recursive descent (nested
 * parentheses, call arguments, unary chains) counts its depth and stops at
 * WGT_EXPR_MAX_DEPTH with an error: a hostile string must not overflow the stack.
 */
typedef struct parser {
    const char *text;
    const char *p;
    wgt_expr *e;
    int n_inputs;
    const wgt_expr_type *input_types;
    int input_nodes[26];
    const double *params;
    int n_params;
    int param_nodes[WGT_EXPR_MAX_PARAMS];
    int depth;
    char *err;
    int err_size;
    int failed;
} parser;

static int fail(parser *ps, const char *what)
{
    if (!ps->failed)
        snprintf(ps->err, (size_t)ps->err_size, "%s at column %d of \"%s\"", what, (int)(ps->p - ps->text) + 1,
                 ps->text);
    ps->failed = 1;
    return -1;
}

static void skip_space(parser *ps)
{
    while (isspace((unsigned char)*ps->p)) ps->p++;
}

static int accept(parser *ps, const char *tok)
{
    skip_space(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

static int parse_or(parser *ps);

/* Enter/leave one level of recursion; enter fails past WGT_EXPR_MAX_DEPTH. */
static int enter(parser *ps)
{
    if (++ps->depth > WGT_EXPR_MAX_DEPTH) {
        fail(ps, "expression nested deeper than " WGT_EXPR_MAX_DEPTH_TEXT " levels");
        return 0;
    }
    return 1;
}
static int leave(parser *ps, int v)
{
    ps->depth--;
    return v;
}

static const struct {
    const char *name;
    wgt_expr_opcode op;
} function_names[] = {
    {"neg", WGT_EXPR_NEG}, {"abs", WGT_EXPR_ABS}, {"sign", WGT_EXPR_SIGN}, {"exp", WGT_EXPR_EXP},
    {"log", WGT_EXPR_LOG}, {"log1p", WGT_EXPR_LOG1P}, {"sqrt", WGT_EXPR_SQRT}, {"rsqrt", WGT_EXPR_RSQRT},
    {"reciprocal", WGT_EXPR_RECIPROCAL}, {"sin", WGT_EXPR_SIN}, {"cos", WGT_EXPR_COS}, {"tanh", WGT_EXPR_TANH},
    {"sigmoid", WGT_EXPR_SIGMOID}, {"relu", WGT_EXPR_RELU}, {"gelu", WGT_EXPR_GELU},
    {"gelu_tanh", WGT_EXPR_GELU_TANH}, {"silu", WGT_EXPR_SILU}, {"softplus", WGT_EXPR_SOFTPLUS}, {"erf", WGT_EXPR_ERF},
    {"floor", WGT_EXPR_FLOOR}, {"ceil", WGT_EXPR_CEIL}, {"round", WGT_EXPR_ROUND},
    {"logical_not", WGT_EXPR_NOT}, {"pow", WGT_EXPR_POW}, {"maximum", WGT_EXPR_MAX}, {"max", WGT_EXPR_MAX},
    {"minimum", WGT_EXPR_MIN}, {"min", WGT_EXPR_MIN}, {"where", WGT_EXPR_WHERE},
    {"clamp", WGT_EXPR_OPCODE_COUNT} /* clamp(x, lo, hi) = min(max(x, lo), hi) */,
};

static int parse_call(parser *ps, const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(function_names) / sizeof(function_names[0]); i++) {
        if (strlen(function_names[i].name) != len || strncmp(function_names[i].name, name, len) != 0) continue;
        wgt_expr_opcode op = function_names[i].op;
        int want = op == WGT_EXPR_OPCODE_COUNT ? 3 : wgt_expr_opcode_arity(op);
        int args[3] = {-1, -1, -1};
        for (int k = 0; k < want; k++) {
            if (k > 0 && !accept(ps, ",")) return fail(ps, "expected ','");
            if (!enter(ps)) return -1;
            args[k] = leave(ps, parse_or(ps));
            if (args[k] < 0) return -1;
        }
        if (!accept(ps, ")")) return fail(ps, "expected ')'");
        if (op == WGT_EXPR_OPCODE_COUNT)
            return wgt_expr_binary(ps->e, WGT_EXPR_MIN, wgt_expr_binary(ps->e, WGT_EXPR_MAX, args[0], args[1]),
                                   args[2]);
        if (want == 1) return wgt_expr_unary(ps->e, op, args[0]);
        if (want == 2) return wgt_expr_binary(ps->e, op, args[0], args[1]);
        return wgt_expr_where(ps->e, args[0], args[1], args[2]);
    }
    return fail(ps, "unknown function");
}

static int parse_primary(parser *ps)
{
    skip_space(ps);
    const char *start = ps->p;
    if (isdigit((unsigned char)*ps->p) || *ps->p == '.') {
        char *end = NULL;
        double v = strtod(ps->p, &end);
        if (end == ps->p) return fail(ps, "bad number");
        ps->p = end;
        /* A literal without '.', 'e' or 'inf' is an integer constant. */
        int integral = 1;
        for (const char *c = start; c < end; c++)
            if (*c == '.' || *c == 'e' || *c == 'E') integral = 0;
        return wgt_expr_const(ps->e, v, integral ? WGT_EXPR_I32 : WGT_EXPR_F32);
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        size_t len = (size_t)(ps->p - start);
        if (accept(ps, "(")) return parse_call(ps, start, len);
        if (len >= 2 && *start == 'p' && isdigit((unsigned char)start[1])) {
            int k = 0;
            for (const char *c = start + 1; c < start + len && k <= WGT_EXPR_MAX_PARAMS; c++)
                k = isdigit((unsigned char)*c) ? k * 10 + (*c - '0') : WGT_EXPR_MAX_PARAMS + 1;
            if (k >= ps->n_params) {
                ps->p = start;
                return fail(ps, "parameter beyond the parameters given");
            }
            if (ps->param_nodes[k] < 0) ps->param_nodes[k] = wgt_expr_const(ps->e, ps->params[k], WGT_EXPR_F32);
            return ps->param_nodes[k];
        }
        if (len == 1 && *start >= 'a' && *start <= 'z') {
            int k = *start - 'a';
            if (k >= ps->n_inputs) {
                ps->p = start;
                return fail(ps, "input letter beyond the inputs given");
            }
            if (ps->input_nodes[k] < 0) ps->input_nodes[k] = wgt_expr_input(ps->e, k, ps->input_types[k]);
            return ps->input_nodes[k];
        }
        if (len == 3 && strncmp(start, "inf", 3) == 0) return wgt_expr_const(ps->e, 1.0 / 0.0, WGT_EXPR_F32);
        if (len == 3 && strncmp(start, "nan", 3) == 0) return wgt_expr_const(ps->e, 0.0 / 0.0, WGT_EXPR_F32);
        ps->p = start;
        return fail(ps, "unknown name");
    }
    if (accept(ps, "(")) {
        if (!enter(ps)) return -1;
        int v = leave(ps, parse_or(ps));
        if (v < 0) return -1;
        if (!accept(ps, ")")) return fail(ps, "expected ')'");
        return v;
    }
    return fail(ps, *ps->p ? "unexpected character" : "unexpected end");
}

static int parse_unary(parser *ps)
{
    if (accept(ps, "-")) {
        if (!enter(ps)) return -1;
        return wgt_expr_unary(ps->e, WGT_EXPR_NEG, leave(ps, parse_unary(ps)));
    }
    skip_space(ps);
    if (ps->p[0] == '!' && ps->p[1] != '=') {
        ps->p++;
        if (!enter(ps)) return -1;
        return wgt_expr_unary(ps->e, WGT_EXPR_NOT, leave(ps, parse_unary(ps)));
    }
    return parse_primary(ps);
}

static int parse_prod(parser *ps)
{
    int v = parse_unary(ps);
    for (;;) {
        if (v < 0) return -1;
        if (accept(ps, "*")) v = wgt_expr_binary(ps->e, WGT_EXPR_MUL, v, parse_unary(ps));
        else if (accept(ps, "/")) v = wgt_expr_binary(ps->e, WGT_EXPR_DIV, v, parse_unary(ps));
        else return v;
    }
}

static int parse_sum(parser *ps)
{
    int v = parse_prod(ps);
    for (;;) {
        if (v < 0) return -1;
        if (accept(ps, "+")) v = wgt_expr_binary(ps->e, WGT_EXPR_ADD, v, parse_prod(ps));
        else if (accept(ps, "-")) v = wgt_expr_binary(ps->e, WGT_EXPR_SUB, v, parse_prod(ps));
        else return v;
    }
}

static int parse_cmp(parser *ps)
{
    int v = parse_sum(ps);
    if (v < 0) return -1;
    static const struct {
        const char *tok;
        wgt_expr_opcode op;
    } ops[] = {{"<=", WGT_EXPR_LE}, {">=", WGT_EXPR_GE}, {"==", WGT_EXPR_EQ}, {"!=", WGT_EXPR_NE},
               {"<", WGT_EXPR_LT},  {">", WGT_EXPR_GT}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (accept(ps, ops[i].tok)) return wgt_expr_binary(ps->e, ops[i].op, v, parse_sum(ps));
    return v;
}

static int parse_and(parser *ps)
{
    int v = parse_cmp(ps);
    while (v >= 0 && accept(ps, "&&")) v = wgt_expr_binary(ps->e, WGT_EXPR_AND, v, parse_cmp(ps));
    return v;
}

static int parse_or(parser *ps)
{
    int v = parse_and(ps);
    while (v >= 0 && accept(ps, "||")) v = wgt_expr_binary(ps->e, WGT_EXPR_OR, v, parse_and(ps));
    return v;
}

/* Integer literals beyond i32 (issue 8): a use as a float (the literal cast to
 * F32 by promotion, as in "x * 3000000000" with a float x) becomes an F32
 * constant of the exact value; a use in integer arithmetic is refused, as
 * PyTorch and NumPy 2 refuse a Python int that overflows the tensor's dtype.
 * Returns 0 or fails ps. */
static int resolve_wide_literals(parser *ps, int root)
{
    wgt_expr *e = ps->e;
    for (int j = 0; j < e->n_nodes; j++) {
        wgt_expr_node *c = &e->nodes[j];
        if (c->opcode != WGT_EXPR_CONST || c->type != WGT_EXPR_I32 || c->constant <= 2147483647.0) continue;
        bool refused = j == root;
        for (int u = j + 1; u < e->n_nodes && !refused; u++) {
            wgt_expr_node *n = &e->nodes[u];
            for (int a = 0; a < wgt_expr_opcode_arity((wgt_expr_opcode)n->opcode); a++) {
                if (n->args[a] != j) continue;
                if (n->opcode == WGT_EXPR_CAST && n->type == WGT_EXPR_F32) {
                    double v = c->constant;
                    memset(n, 0, sizeof(*n));
                    n->opcode = WGT_EXPR_CONST;
                    n->type = WGT_EXPR_F32;
                    n->args[0] = n->args[1] = n->args[2] = -1;
                    n->constant = v;
                } else {
                    refused = true;
                }
                break;
            }
        }
        if (refused) {
            char what[160];
            snprintf(what, sizeof what,
                     "integer literal %.17g does not fit in i32 and is used as an integer (write %.17g.0 for a float)",
                     c->constant, c->constant);
            ps->p = ps->text + strlen(ps->text);
            return fail(ps, what);
        }
    }
    return 0;
}

int wgt_expr_parse(const char *text, int n_inputs, const wgt_expr_type *input_types, wgt_expr *out, char *err,
                   int err_size)
{
    return wgt_expr_parse_params(text, n_inputs, input_types, NULL, 0, out, err, err_size);
}

int wgt_expr_parse_params(const char *text, int n_inputs, const wgt_expr_type *input_types, const double *params,
                          int n_params, wgt_expr *out, char *err, int err_size)
{
    parser ps = {.text = text, .p = text, .e = out, .n_inputs = n_inputs, .input_types = input_types,
                 .params = params, .n_params = n_params, .err = err, .err_size = err_size};
    for (int i = 0; i < 26; i++) ps.input_nodes[i] = -1;
    for (int i = 0; i < WGT_EXPR_MAX_PARAMS; i++) ps.param_nodes[i] = -1;
    wgt_expr_init(out);
    if (n_inputs > 26) return fail(&ps, "more than 26 inputs"), 1;
    if (n_params < 0 || n_params > WGT_EXPR_MAX_PARAMS || (n_params > 0 && !params))
        return fail(&ps, "bad parameter count (0.." WGT_EXPR_MAX_PARAMS_TEXT ", with values)"), 1;
    int root = parse_or(&ps);
    if (root >= 0) {
        skip_space(&ps);
        if (*ps.p) fail(&ps, "unexpected text after the expression");
    } else if (!ps.failed) {
        fail(&ps, "expression has more than 64 nodes");
    }
    if (ps.failed || resolve_wide_literals(&ps, root) != 0) return 1;
    out->n_inputs = n_inputs;
    /* The result must be the last node; a bare input or a reused node is copied. */
    if (root != out->n_nodes - 1) {
        if (wgt_expr_unary(out, WGT_EXPR_CAST, root) < 0) return fail(&ps, "expression too long"), 1;
        out->nodes[out->n_nodes - 1].type = out->nodes[root].type;
    }
    return 0;
}
