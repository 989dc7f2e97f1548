/*
 * Gradients of reductions, cumsum, softmax / log_softmax and matmul. Each rule
 * is a few public ops, with the elementwise parts fused into one kernel.
 *
 * A reduction's node sees its keepdim result (the squeeze to the caller's
 * shape is a view with its own node), so grad_out has x's rank with the
 * reduced dims 1 and broadcasts back over x.
 */
#include "autograd/rules.h"
#include "ops/op_common.h"

/* The reduced dims of a reduction node as an axes list; returns the count. */
static int reduced_axes(const wgt_grad_node *node, int *axes, int64_t *count)
{
    const wgt_tensor *x = node->inputs[0];
    int n = 0;
    *count = 1;
    for (int d = 0; d < x->view.ndim; d++) {
        if (!(node->params.ints[0] & (1 << d))) continue;
        axes[n++] = d;
        *count *= x->view.shape[d];
    }
    return n;
}

static wgt_status result(wgt_tensor **slot, wgt_tensor *t, wgt_context *ctx)
{
    *slot = t;
    return t ? WGT_OK : ctx->status;
}

wgt_status wgt_backward_reduce(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    wgt_context *ctx = g->ctx;
    wgt_tensor *x = node->inputs[0];
    const int nd = x->view.ndim;
    const int64_t *shape = x->view.shape;
    int axes[WGT_MAX_DIMS];
    int64_t count;
    int n_axes = reduced_axes(node, axes, &count);
    double correction = (double)node->params.ints[1];
    switch (node->op) {
    case WGT_OP_SUM: return result(&grads[0], wgt_expand(g, nd, shape), ctx);
    case WGT_OP_MEAN: {
        wgt_tensor *scaled = wgt_binary_scalar(WGT_OP_MUL, g, count ? 1.0 / (double)count : 0.0);
        return result(&grads[0], scaled ? wgt_expand(scaled, nd, shape) : NULL, ctx);
    }
    case WGT_OP_MAX:
    case WGT_OP_MIN: { /* ties share the gradient evenly (as PyTorch's amax/amin) */
        wgt_tensor *y = node->saved[0];
        wgt_tensor *in_eq[2] = {x, y};
        wgt_tensor *hits = wgt_fused(ctx, "where(a == b, 1.0, 0.0)", in_eq, 2);
        wgt_tensor *ties = hits ? wgt_sum(hits, axes, n_axes, true) : NULL;
        wgt_tensor *in[4] = {x, y, g, ties};
        return result(&grads[0], ties ? wgt_fused(ctx, "where(a == b, c / d, 0)", in, 4) : NULL, ctx);
    }
    case WGT_OP_PROD: {
        /* prod of the others: y / x without zeros; with one zero only that element
         * gets the product of the non-zeros; with two or more, all get 0 */
        wgt_tensor *y = node->saved[0];
        wgt_tensor *zero = wgt_fused(ctx, "where(a == 0, 1.0, 0.0)", &x, 1);
        wgt_tensor *zeros = zero ? wgt_sum(zero, axes, n_axes, true) : NULL;
        wgt_tensor *nonzero = wgt_fused(ctx, "where(a == 0, 1, a)", &x, 1);
        wgt_tensor *nz_prod = nonzero ? wgt_prod(nonzero, axes, n_axes, true) : NULL;
        wgt_tensor *in[5] = {x, y, g, zeros, nz_prod};
        return result(&grads[0],
                      zeros && nz_prod ? wgt_fused(ctx, "where(d == 0, c * b / a, where(d == 1 && a == 0, c * e, 0))",
                                                   in, 5)
                                       : NULL,
                      ctx);
    }
    case WGT_OP_VAR:
    case WGT_OP_STD: {
        wgt_tensor *mean = wgt_mean(x, axes, n_axes, true);
        if (!mean) return ctx->status;
        double dof = (double)count - correction;
        if (node->op == WGT_OP_VAR) {
            wgt_tensor *in[3] = {x, mean, g};
            double p = 2.0 / dof;
            return result(&grads[0], wgt_fused_params(ctx, "c * (a - b) * p0", in, 3, &p, 1), ctx);
        }
        wgt_tensor *in[4] = {x, mean, g, node->saved[0]};
        return result(&grads[0], wgt_fused_params(ctx, "c * (a - b) / (d * p0)", in, 4, &dof, 1), ctx);
    }
    default:
        return wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: %s is not a reduction", wgt_op_name(node->op));
    }
}

/* The gradient of an inclusive prefix sum is the suffix sum: total - prefix + g. */
wgt_status wgt_backward_cumsum(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    int axis = (int)node->params.ints[0];
    if (g->view.ndim == 0) return result(&grads[0], wgt_copy(g), g->ctx);
    wgt_tensor *total = wgt_sum(g, &axis, 1, true);
    wgt_tensor *prefix = wgt_cumsum(g, axis);
    wgt_tensor *in[3] = {total, prefix, g};
    return result(&grads[0], total && prefix ? wgt_fused(g->ctx, "a - b + c", in, 3) : NULL, g->ctx);
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g). */
wgt_status wgt_backward_softmax(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    if (!wgt_autograd_input_needs_grad(node, 0)) return WGT_OK;
    wgt_context *ctx = g->ctx;
    int axis = (int)node->params.ints[0];
    wgt_tensor *y = node->saved[0];
    if (node->op == WGT_OP_SOFTMAX) {
        wgt_tensor *gy = wgt_mul(g, y);
        wgt_tensor *s = gy && g->view.ndim ? wgt_sum(gy, &axis, 1, true) : gy;
        wgt_tensor *in[3] = {y, g, s};
        return result(&grads[0], s ? wgt_fused(ctx, "a * (b - c)", in, 3) : NULL, ctx);
    }
    wgt_tensor *s = g->view.ndim ? wgt_sum(g, &axis, 1, true) : g;
    wgt_tensor *in[3] = {g, y, s};
    return result(&grads[0], s ? wgt_fused(ctx, "a - exp(b) * c", in, 3) : NULL, ctx);
}

/* a [.., M, K] @ b [.., K, N]: da = g b^T, db = a^T g, each summed over the
 * batch dims its operand was broadcast along. A 1-D operand is treated as the
 * matrix the forward made of it ([1, K] or [K, 1]); the node's grad_out has
 * those 1s. */
wgt_status wgt_backward_matmul(const wgt_grad_node *node, wgt_tensor *g, wgt_tensor **grads)
{
    wgt_context *ctx = g->ctx;
    wgt_tensor *a = node->inputs[0], *b = node->inputs[1];
    /* no new references: the node keeps a and b, the rule's scope the views */
    wgt_tensor *a2 = a->view.ndim == 1 ? wgt_unsqueeze(a, 0) : a;
    wgt_tensor *b2 = b->view.ndim == 1 ? wgt_unsqueeze(b, -1) : b;
    if (!a2 || !b2) return ctx->status;
    wgt_tensor *gf = g;
    if (a->view.dtype == WGT_F16) { /* f16 operands: multiply in f16's kernels, accumulate in f32 */
        gf = wgt_cast(g, WGT_F16);
        if (!gf) return ctx->status;
    }
    for (int i = 0; i < 2; i++) {
        if (!wgt_autograd_input_needs_grad(node, i)) continue;
        wgt_tensor *full = i == 0 ? wgt_matmul_ex(gf, wgt_transpose(b2, -1, -2), WGT_F32)
                                  : wgt_matmul_ex(wgt_transpose(a2, -1, -2), gf, WGT_F32);
        if (!full) return ctx->status;
        wgt_tensor *m = i == 0 ? a2 : b2, *in = node->inputs[i];
        wgt_tensor *summed = wgt_grad_sum_to_shape(full, m->view.ndim, m->view.shape);
        if (!summed) return ctx->status;
        grads[i] = wgt_reshape(summed, in->view.ndim, in->view.shape);
        if (!grads[i]) return ctx->status;
    }
    return WGT_OK;
}
