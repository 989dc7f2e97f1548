/*
 * Gradients of the elementwise ops. Every elementwise op runs as an expression
 * program (src/core/expr.h), and the node keeps a copy of it, so one rule
 * serves them all (binary, unary, where, leaky_relu, elu, wgt_fused, copy,
 * cast): the program is differentiated symbolically, in reverse mode, into a
 * new program over the same inputs plus the output gradient, and that program
 * runs as ONE fused kernel per input that needs a gradient. So the backward of
 * a fused expression is fused too.
 *
 * Derivative conventions (PyTorch's where they differ from textbook):
 *   maximum/minimum: ties split the gradient evenly between the operands;
 *   relu, abs, sign at 0: gradient 0; floor, ceil, round: 0 everywhere;
 *   pow(a, b): d/da is 0 where b == 0; d/db is 0 where a == 0 and b >= 0;
 *   integer-valued nodes (comparisons, logic, casts to I32) stop the gradient.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/rules.h"
#include "ops/op_common.h"

/* Builder shorthands on the derivative program d; each returns -1 once the
 * program is full, and -1 propagates through every builder. */
#define C(v) wgt_expr_const(d, (v), WGT_EXPR_F32)
#define U(op, a) wgt_expr_unary(d, (op), (a))
#define B(op, a, b) wgt_expr_binary(d, (op), (a), (b))
#define MUL(a, b) B(WGT_EXPR_MUL, a, b)
#define WHERE(c, a, b) wgt_expr_where(d, (c), (a), (b))

static bool is_float_node(const wgt_expr *e, int i) { return i >= 0 && e->nodes[i].type == WGT_EXPR_F32; }

/* adj[a] += g in program d. */
static int add_adjoint(wgt_expr *d, int *adj, int a, int g)
{
    if (g < 0) return -1;
    adj[a] = adj[a] < 0 ? g : B(WGT_EXPR_ADD, adj[a], g);
    return adj[a];
}

/* Appends to d the contributions of node i (value y, adjoint g) to the adjoints
 * of its arguments. Returns false when d is full. */
static bool backprop_node(const wgt_expr *e, wgt_expr *d, int *adj, int i, int g)
{
    const wgt_expr_node *n = &e->nodes[i];
    int a = n->args[0], b = n->args[1], y = i;
    bool fa = is_float_node(e, a), fb = is_float_node(e, b);
    int ok = 0;
    switch ((wgt_expr_opcode)n->opcode) {
    case WGT_EXPR_CAST: /* F32 -> F32 only; a cast to I32 stops the gradient */
        if (n->type == WGT_EXPR_F32 && fa) ok = add_adjoint(d, adj, a, g);
        break;
    case WGT_EXPR_NEG: ok = add_adjoint(d, adj, a, U(WGT_EXPR_NEG, g)); break;
    case WGT_EXPR_ABS: ok = add_adjoint(d, adj, a, MUL(g, U(WGT_EXPR_SIGN, a))); break;
    case WGT_EXPR_EXP: ok = add_adjoint(d, adj, a, MUL(g, y)); break;
    case WGT_EXPR_LOG: ok = add_adjoint(d, adj, a, B(WGT_EXPR_DIV, g, a)); break;
    case WGT_EXPR_LOG1P: ok = add_adjoint(d, adj, a, B(WGT_EXPR_DIV, g, B(WGT_EXPR_ADD, a, C(1)))); break;
    case WGT_EXPR_SQRT: ok = add_adjoint(d, adj, a, B(WGT_EXPR_DIV, MUL(g, C(0.5)), y)); break;
    case WGT_EXPR_RSQRT: /* -0.5 a^-1.5 = -0.5 y^3 */
        ok = add_adjoint(d, adj, a, MUL(MUL(g, C(-0.5)), MUL(y, MUL(y, y))));
        break;
    case WGT_EXPR_RECIPROCAL: ok = add_adjoint(d, adj, a, U(WGT_EXPR_NEG, MUL(g, MUL(y, y)))); break;
    case WGT_EXPR_SIN: ok = add_adjoint(d, adj, a, MUL(g, U(WGT_EXPR_COS, a))); break;
    case WGT_EXPR_COS: ok = add_adjoint(d, adj, a, U(WGT_EXPR_NEG, MUL(g, U(WGT_EXPR_SIN, a)))); break;
    case WGT_EXPR_TANH: ok = add_adjoint(d, adj, a, MUL(g, B(WGT_EXPR_SUB, C(1), MUL(y, y)))); break;
    case WGT_EXPR_SIGMOID: ok = add_adjoint(d, adj, a, MUL(g, MUL(y, B(WGT_EXPR_SUB, C(1), y)))); break;
    case WGT_EXPR_RELU: ok = add_adjoint(d, adj, a, WHERE(B(WGT_EXPR_GT, a, C(0)), g, C(0))); break;
    case WGT_EXPR_GELU: {
        /* Phi(a) + a phi(a) with Phi(a) = 0.5 (1 + erf(a / sqrt 2)), PyTorch's
         * formula: y itself is dead (gelu(a) / a, the form before the erf
         * opcode, cost a division and a select; GELU's backward ran 99 us for
         * a GPT's [16384, 1536] on an H200, compute-bound) */
        int phi = MUL(U(WGT_EXPR_EXP, MUL(MUL(a, a), C(-0.5))), C(0.3989422804014327));
        int cdf = MUL(C(0.5), B(WGT_EXPR_ADD, C(1), U(WGT_EXPR_ERF, MUL(a, C(0.7071067811865476)))));
        ok = add_adjoint(d, adj, a, MUL(g, B(WGT_EXPR_ADD, cdf, MUL(a, phi))));
        break;
    }
    case WGT_EXPR_ERF: /* 2 / sqrt(pi) exp(-a^2) */
        ok = add_adjoint(d, adj, a, MUL(g, MUL(U(WGT_EXPR_EXP, U(WGT_EXPR_NEG, MUL(a, a))), C(1.1283791670955126))));
        break;
    case WGT_EXPR_GELU_TANH: {
        /* t = tanh(k (a + c a^3)); d = 0.5 (1 + t) + 0.5 a (1 - t^2) k (1 + 3 c a^2) */
        const double k = 0.7978845608028654, c = 0.044715;
        int a2 = MUL(a, a);
        int t = U(WGT_EXPR_TANH, MUL(C(k), MUL(a, B(WGT_EXPR_ADD, C(1), MUL(C(c), a2)))));
        int left = MUL(C(0.5), B(WGT_EXPR_ADD, C(1), t));
        int sech2 = B(WGT_EXPR_SUB, C(1), MUL(t, t));
        int right = MUL(MUL(C(0.5 * k), a), MUL(sech2, B(WGT_EXPR_ADD, C(1), MUL(C(3 * c), a2))));
        ok = add_adjoint(d, adj, a, MUL(g, B(WGT_EXPR_ADD, left, right)));
        break;
    }
    case WGT_EXPR_SILU: { /* s (1 + a (1 - s)) */
        int s = U(WGT_EXPR_SIGMOID, a);
        ok = add_adjoint(d, adj, a, MUL(g, MUL(s, B(WGT_EXPR_ADD, C(1), MUL(a, B(WGT_EXPR_SUB, C(1), s))))));
        break;
    }
    case WGT_EXPR_SOFTPLUS: ok = add_adjoint(d, adj, a, MUL(g, U(WGT_EXPR_SIGMOID, a))); break;
    case WGT_EXPR_SIGN: case WGT_EXPR_FLOOR: case WGT_EXPR_CEIL: case WGT_EXPR_ROUND:
        ok = fa ? add_adjoint(d, adj, a, MUL(g, C(0))) : 0; /* zero, but NaN-propagating like PyTorch's g * 0 */
        break;
    case WGT_EXPR_ADD:
        if (fa) ok = add_adjoint(d, adj, a, g);
        if (fb && ok >= 0) ok = add_adjoint(d, adj, b, g);
        break;
    case WGT_EXPR_SUB:
        if (fa) ok = add_adjoint(d, adj, a, g);
        if (fb && ok >= 0) ok = add_adjoint(d, adj, b, U(WGT_EXPR_NEG, g));
        break;
    case WGT_EXPR_MUL:
        if (fa) ok = add_adjoint(d, adj, a, MUL(g, b));
        if (fb && ok >= 0) ok = add_adjoint(d, adj, b, MUL(g, a));
        break;
    case WGT_EXPR_DIV:
        if (fa) ok = add_adjoint(d, adj, a, B(WGT_EXPR_DIV, g, b));
        if (fb && ok >= 0) ok = add_adjoint(d, adj, b, U(WGT_EXPR_NEG, B(WGT_EXPR_DIV, MUL(g, y), b)));
        break;
    case WGT_EXPR_POW:
        if (fa) {
            int da = MUL(MUL(g, b), B(WGT_EXPR_POW, a, B(WGT_EXPR_SUB, b, C(1))));
            ok = add_adjoint(d, adj, a, WHERE(B(WGT_EXPR_EQ, b, C(0)), C(0), da));
        }
        if (fb && ok >= 0) {
            int db = MUL(MUL(g, y), U(WGT_EXPR_LOG, a));
            int masked = B(WGT_EXPR_AND, B(WGT_EXPR_EQ, a, C(0)), B(WGT_EXPR_GE, b, C(0)));
            ok = add_adjoint(d, adj, b, WHERE(masked, C(0), db));
        }
        break;
    case WGT_EXPR_MAX: case WGT_EXPR_MIN: {
        /* the winner takes g, a tie gives each half */
        wgt_expr_opcode wins = n->opcode == WGT_EXPR_MAX ? WGT_EXPR_GT : WGT_EXPR_LT;
        int half = MUL(g, C(0.5));
        if (fa) ok = add_adjoint(d, adj, a, WHERE(B(wins, a, b), g, WHERE(B(WGT_EXPR_EQ, a, b), half, C(0))));
        if (fb && ok >= 0)
            ok = add_adjoint(d, adj, b, WHERE(B(wins, b, a), g, WHERE(B(WGT_EXPR_EQ, a, b), half, C(0))));
        break;
    }
    case WGT_EXPR_WHERE: {
        int c = n->args[0], x = n->args[1], z = n->args[2];
        if (is_float_node(e, x)) ok = add_adjoint(d, adj, x, WHERE(c, g, C(0)));
        if (is_float_node(e, z) && ok >= 0) ok = add_adjoint(d, adj, z, WHERE(c, C(0), g));
        break;
    }
    default: break; /* leaves, comparisons, logic: no gradient to pass on */
    }
    return ok >= 0;
}

/* Keeps only the nodes the last one depends on (the forward result is usually
 * dead in a derivative), renumbering arguments. */
static void prune(wgt_expr *d)
{
    bool live[WGT_EXPR_MAX_NODES] = {false};
    int remap[WGT_EXPR_MAX_NODES];
    live[d->n_nodes - 1] = true;
    for (int i = d->n_nodes - 1; i >= 0; i--) {
        if (!live[i]) continue;
        for (int k = 0; k < 3; k++)
            if (d->nodes[i].args[k] >= 0) live[d->nodes[i].args[k]] = true;
    }
    int n = 0;
    for (int i = 0; i < d->n_nodes; i++) {
        if (!live[i]) continue;
        remap[i] = n;
        d->nodes[n] = d->nodes[i];
        for (int k = 0; k < 3; k++)
            if (d->nodes[n].args[k] >= 0) d->nodes[n].args[k] = (int16_t)remap[d->nodes[n].args[k]];
        n++;
    }
    d->n_nodes = n;
}

/* Builds in d the gradient of e's result with respect to input k: a program
 * over e's inputs plus input n_inputs = the output gradient (F32). *identity
 * says the gradient is exactly the output gradient (k is an operand of an
 * add/sub's plus side, of a copy or an f32 cast, and nothing else). Returns
 * false when it does not fit in WGT_EXPR_MAX_NODES. */
static bool derive(const wgt_expr *e, int k, wgt_expr *d, bool *identity)
{
    *identity = false;
    *d = *e; /* the forward nodes keep their indices: their values are reused */
    int adj[WGT_EXPR_MAX_NODES];
    for (int i = 0; i < WGT_EXPR_MAX_NODES; i++) adj[i] = -1;
    int root = e->n_nodes - 1;
    adj[root] = wgt_expr_input(d, e->n_inputs, WGT_EXPR_F32);
    if (adj[root] < 0) return false;
    d->n_inputs = e->n_inputs + 1;
    for (int i = root; i >= 0; i--) {
        if (adj[i] < 0 || e->nodes[i].opcode == WGT_EXPR_INPUT) continue;
        if (!backprop_node(e, d, adj, i, adj[i])) return false;
    }
    int total = -1;
    for (int i = 0; i <= root; i++) {
        const wgt_expr_node *n = &e->nodes[i];
        if (n->opcode != WGT_EXPR_INPUT || n->input_index != k || adj[i] < 0) continue;
        total = total < 0 ? adj[i] : B(WGT_EXPR_ADD, total, adj[i]);
        if (total < 0) return false;
    }
    *identity = total >= 0 && total == adj[root];
    /* The result must be the last node: a fresh one even when the gradient is
     * an existing node (a + b passes the output gradient straight through). */
    int result = total < 0 ? MUL(wgt_expr_input(d, e->n_inputs, WGT_EXPR_F32), C(0))
                           : U(WGT_EXPR_NEG, U(WGT_EXPR_NEG, total));
    if (result < 0) return false;
    prune(d);
    return true;
}

static void free_expr(void *p) { free(p); }

wgt_status wgt_backward_elementwise(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    const wgt_expr *e = node->owned;
    wgt_context *ctx = grad_out->ctx;
    if (!e) return wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: %s node has no program", wgt_op_name(node->op));
    wgt_tensor *inputs[WGT_MAX_KERNEL_INPUTS + 1];
    /* an input kept without storage (core/tape.h) is one no derivative program
     * reads: grad_out, of the output's shape, fills its kernel slot */
    for (int i = 0; i < node->n_inputs; i++)
        inputs[i] = node->inputs[i] && node->inputs[i]->view.storage ? node->inputs[i] : grad_out;
    inputs[node->n_inputs] = grad_out;
    for (int k = 0; k < node->n_inputs; k++) {
        if (!wgt_autograd_input_needs_grad(node, k)) continue;
        wgt_expr *d = malloc(sizeof(*d));
        if (!d) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
        bool identity;
        if (!derive(e, k, d, &identity)) {
            free_expr(d);
            return wgt_error(ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: the gradient program of %s does not fit in %d expression nodes; split "
                             "the expression into smaller wgt_fused calls",
                             wgt_op_name(node->op), WGT_EXPR_MAX_NODES);
        }
        wgt_tensor *in = node->inputs[k];
        if (identity && in->grad_node && grad_out->view.dtype == WGT_F32) {
            /* x + h passes g on unchanged: hand on grad_out itself (summed
             * where broadcast) instead of a kernel that copies it, one full
             * read and write per residual add. Only to an intermediate: the
             * engine writes a node's gradient in place only while it holds the
             * only reference (backward.c, accumulate_dest_for), while a leaf's
             * .grad is the user's and must not alias another's. */
            free_expr(d);
            grad_inputs[k] = wgt_grad_sum_to_shape(grad_out, in->view.ndim, in->view.shape);
            if (!grad_inputs[k]) return ctx->status;
            continue;
        }
        wgt_tensor *g = wgt_tensor_alloc(ctx, WGT_F32, node->out_ndim, node->out_shape, "wgt_backward");
        wgt_status s = g ? wgt_run_elementwise(ctx, "wgt_backward", d, node->n_inputs + 1, inputs, g) : ctx->status;
        free_expr(d);
        if (s != WGT_OK) return s;
        grad_inputs[k] = wgt_grad_sum_to_shape(g, in->view.ndim, in->view.shape);
        if (!grad_inputs[k]) return ctx->status;
    }
    return WGT_OK;
}

/* clamp passes the gradient where lo <= x <= hi (inclusive, as PyTorch). */
wgt_status wgt_backward_clamp(const wgt_grad_node *node, wgt_tensor *grad_out, wgt_tensor **grad_inputs)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    wgt_tensor *in[2] = {node->inputs[0], grad_out};
    const double *r = node->params.reals; /* lo, hi (+-inf when one-sided) */
    double params[2] = {r[0], r[1]};
    grad_inputs[0] = wgt_fused_params(grad_out->ctx, "where((a >= p0) && (a <= p1), b, 0)", in, 2, params, 2);
    return grad_inputs[0] ? WGT_OK : grad_out->ctx->status;
}
