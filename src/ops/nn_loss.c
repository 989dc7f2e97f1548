/*
 * Loss and dropout front-ends, forward and backward.
 *
 *   cross_entropy: logits [..., C], targets i32 [...] -> [] or [...] (f32)
 *   mse_loss:      input [...], target [...]           -> [] or [...]
 *   dropout:       x [...]                             -> [...]
 *
 * cross_entropy is one fused NN kernel (log-softmax + NLL, writing the per-row
 * loss and logsumexp) and one for dlogits = (softmax - onehot) g in a single
 * pass. mse_loss and dropout are single fused expression kernels (the
 * ELEMENTWISE kind generates them on each backend), mse_loss followed by a
 * REDUCE for MEAN/SUM. Dropout's mask is Philox(seed) at the element's linear
 * index (the RAND_UNIFORM node of src/core/expr.h): backward regenerates it.
 */
#include <math.h>
#include <string.h>

#include "core/tape.h"
#include "ops/nn_internal.h"
#include "ops/op_common.h"

static void grad_off(wgt_context *ctx) { ctx->no_grad_depth++; }
static void grad_on(wgt_context *ctx) { ctx->no_grad_depth--; }

static bool check_reduction(wgt_context *ctx, wgt_reduction r, const char *op)
{
    if ((unsigned)r <= WGT_REDUCTION_NONE) return true;
    wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: unknown reduction %d", op, (int)r);
    return false;
}

/* ------------------------------------------------------- cross-entropy */

/* The contiguous [rows, c] view of t's elements. */
static wgt_tensor_view rows_view(const wgt_tensor *t, int64_t rows, int64_t c)
{
    wgt_tensor_view v = t->view;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = c;
    v.strides[0] = c;
    v.strides[1] = 1;
    return v;
}

/* targets (any strides) as a rank-1 [rows] view: contiguous, or one dim that
 * moves (a strided slice); false when neither (the caller copies it first). */
static bool flat_view(const wgt_tensor_view *t, int64_t rows, wgt_tensor_view *out)
{
    *out = *t;
    out->ndim = 1;
    out->shape[0] = rows;
    out->strides[0] = 1;
    if (wgt_view_is_contiguous(t)) return true;
    int moving = -1;
    for (int k = 0; k < t->ndim; k++) {
        if (t->shape[k] == 1) continue;
        if (moving >= 0) return false;
        moving = k;
    }
    if (moving >= 0) {
        if (t->strides[moving] < 0) return false; /* kernels step forward only */
        out->strides[0] = t->strides[moving];
    }
    return true;
}

static bool check_targets(wgt_context *ctx, wgt_tensor *logits, wgt_tensor *targets, const char *op)
{
    char b1[128], b2[128];
    if (!wgt_dtype_is_float(logits->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: logits have dtype %s, expected f32 or f16", op,
                  wgt_dtype_name(logits->view.dtype));
        return false;
    }
    if (targets->view.dtype != WGT_I32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: targets have dtype %s, expected i32 class indices", op,
                  wgt_dtype_name(targets->view.dtype));
        return false;
    }
    int nd = logits->view.ndim;
    if (nd < 1 || targets->view.ndim != nd - 1 ||
        memcmp(targets->view.shape, logits->view.shape, sizeof(int64_t) * (size_t)(nd - 1)) != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: logits %s and targets %s: targets must be the logits' shape without the class dim", op,
                  wgt_shape_string(nd, logits->view.shape, b1, sizeof(b1)),
                  wgt_shape_string(targets->view.ndim, targets->view.shape, b2, sizeof(b2)));
        return false;
    }
    if (logits->view.shape[nd - 1] < 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: logits %s have no classes", op,
                  wgt_shape_string(nd, logits->view.shape, b1, sizeof(b1)));
        return false;
    }
    return true;
}

wgt_tensor *wgt_cross_entropy(wgt_tensor *logits, wgt_tensor *targets, wgt_reduction reduction, int64_t ignore_index)
{
    const char *op = "wgt_cross_entropy";
    wgt_tensor *args[2] = {logits, targets};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !check_targets(ctx, logits, targets, op) || !check_reduction(ctx, reduction, op)) return NULL;
    int nd = logits->view.ndim;
    int64_t c = logits->view.shape[nd - 1], rows = wgt_shape_numel(nd - 1, logits->view.shape);
    int64_t rshape[1] = {rows};
    wgt_tensor *loss = wgt_tensor_alloc(ctx, WGT_F32, 1, rshape, op);
    wgt_tensor *lse = wgt_tensor_alloc(ctx, WGT_F32, 1, rshape, op);
    grad_off(ctx);
    wgt_tensor *lc = loss && lse ? wgt_contiguous(logits) : NULL;
    wgt_tensor_view tv;
    wgt_tensor *tc = NULL;
    if (lc && !flat_view(&targets->view, rows, &tv)) {
        tc = wgt_contiguous(targets);
        if (tc) flat_view(&tc->view, rows, &tv);
    }
    bool ok = lc && (tc || flat_view(&targets->view, rows, &tv));
    if (ok && rows > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_CROSS_ENTROPY;
        call.nn.ignore_index = ignore_index;
        call.n_inputs = 2;
        call.inputs[0] = rows_view(lc, rows, c);
        call.inputs[1] = tv;
        call.n_outputs = 2;
        call.outputs[0] = loss->view;
        call.outputs[1] = lse->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(lc);
    wgt_tensor_release(tc);

    /* MEAN divides by the number of targets that are not ignore_index (a
     * device-side count: no host round trip). */
    wgt_tensor *out = NULL, *count = NULL;
    if (ok && reduction == WGT_REDUCTION_NONE) {
        out = wgt_view(loss, nd - 1, logits->view.shape);
    } else if (ok) {
        wgt_tensor *total = wgt_sum(loss, NULL, 0, false);
        if (reduction == WGT_REDUCTION_SUM) {
            out = total;
            total = NULL;
        } else {
            wgt_tensor *valid = wgt_binary_scalar(WGT_OP_NE, targets, (double)ignore_index);
            count = valid ? wgt_sum(valid, NULL, 0, false) : NULL;
            wgt_tensor *count_f = count && count->view.dtype != WGT_F32 ? wgt_cast(count, WGT_F32) : NULL;
            if (count_f) {
                wgt_tensor_release(count);
                count = count_f;
            }
            out = total && count ? wgt_div(total, count) : NULL;
            wgt_tensor_release(valid);
        }
        wgt_tensor_release(total);
    }
    grad_on(ctx);
    ok = out != NULL;
    if (ok && wgt_tape_wants(ctx, 2, args)) {
        /* temporaries the node keeps: a scope pop must not release them a second time */
        wgt_scope_remove(lse);
        if (count) wgt_scope_remove(count);
        wgt_grad_node *node = wgt_tape_record(out, WGT_OP_CROSS_ENTROPY, 2, args);
        ok = node && wgt_tape_save(node, lse) && (!count || wgt_tape_save(node, count));
        if (node) {
            node->params.ints[0] = reduction;
            node->params.ints[1] = ignore_index;
            node->params.n_ints = 2;
        }
    }
    wgt_tensor_release(loss);
    wgt_tensor_release(lse);
    wgt_tensor_release(count);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_cross_entropy_backward(wgt_tensor *logits, wgt_tensor *targets, wgt_tensor *lse, wgt_tensor *g,
                                       int64_t ignore_index)
{
    const char *op = "wgt_cross_entropy backward";
    wgt_tensor *args[4] = {logits, targets, lse, g};
    wgt_context *ctx = wgt_op_begin(op, 4, args);
    if (!ctx || !check_targets(ctx, logits, targets, op)) return NULL;
    int nd = logits->view.ndim;
    int64_t c = logits->view.shape[nd - 1], rows = wgt_shape_numel(nd - 1, logits->view.shape);
    int64_t gn = wgt_shape_numel(g->view.ndim, g->view.shape);
    if (lse->view.dtype != WGT_F32 || wgt_shape_numel(lse->view.ndim, lse->view.shape) != rows ||
        !wgt_dtype_is_float(g->view.dtype) || (gn != 1 && gn != rows)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: lse must be f32 [%lld] and g [] or [%lld] floating", op,
                  (long long)rows, (long long)rows);
        return NULL;
    }
    wgt_tensor *dl = wgt_tensor_alloc(ctx, logits->view.dtype, nd, logits->view.shape, op);
    wgt_tensor *lc = dl ? wgt_contiguous(logits) : NULL;
    wgt_tensor *tc = lc ? wgt_contiguous(targets) : NULL;
    wgt_tensor *lsec = tc ? wgt_contiguous(lse) : NULL;
    wgt_tensor *gf = lsec ? (g->view.dtype == WGT_F32 ? wgt_contiguous(g) : wgt_cast(g, WGT_F32)) : NULL;
    bool ok = gf != NULL;
    if (ok && rows > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_CROSS_ENTROPY_BACKWARD;
        call.nn.ignore_index = ignore_index;
        call.n_inputs = 4;
        call.inputs[0] = rows_view(lc, rows, c);
        flat_view(&tc->view, rows, &call.inputs[1]);
        flat_view(&lsec->view, rows, &call.inputs[2]);
        call.inputs[3] = gf->view;
        call.inputs[3].ndim = 1;
        call.inputs[3].shape[0] = rows;
        call.inputs[3].strides[0] = gn == 1 ? 0 : 1; /* one scale broadcast to every row */
        call.n_outputs = 1;
        call.outputs[0] = rows_view(dl, rows, c);
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(lc);
    wgt_tensor_release(tc);
    wgt_tensor_release(lsec);
    wgt_tensor_release(gf);
    if (!ok) {
        wgt_tensor_release(dl);
        return NULL;
    }
    return dl;
}

/* ------------------------------------------------------------ mse_loss */

static bool same_shape(const wgt_tensor *a, const wgt_tensor *b)
{
    return a->view.ndim == b->view.ndim &&
           memcmp(a->view.shape, b->view.shape, sizeof(int64_t) * (size_t)a->view.ndim) == 0;
}

wgt_tensor *wgt_mse_loss(wgt_tensor *input, wgt_tensor *target, wgt_reduction reduction)
{
    const char *op = "wgt_mse_loss";
    wgt_tensor *args[2] = {input, target};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !check_reduction(ctx, reduction, op)) return NULL;
    char b1[128], b2[128];
    if (!wgt_dtype_is_float(input->view.dtype) || !wgt_dtype_is_float(target->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: input %s and target %s must be f32 or f16", op,
                  wgt_dtype_name(input->view.dtype), wgt_dtype_name(target->view.dtype));
        return NULL;
    }
    if (!same_shape(input, target)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: input %s and target %s must have one shape", op,
                  wgt_shape_string(input->view.ndim, input->view.shape, b1, sizeof(b1)),
                  wgt_shape_string(target->view.ndim, target->view.shape, b2, sizeof(b2)));
        return NULL;
    }
    /* (input - target)^2, in input's dtype for NONE, in f32 when it is summed */
    wgt_expr e;
    wgt_expr_init(&e);
    int diff = wgt_expr_binary(&e, WGT_EXPR_SUB, wgt_expr_input(&e, 0, WGT_EXPR_F32), wgt_expr_input(&e, 1, WGT_EXPR_F32));
    wgt_expr_binary(&e, WGT_EXPR_MUL, diff, diff);
    wgt_dtype sq_dtype = reduction == WGT_REDUCTION_NONE ? wgt_promote_dtypes(input->view.dtype, target->view.dtype)
                                                         : WGT_F32;
    wgt_tensor *sq = wgt_tensor_alloc(ctx, sq_dtype, input->view.ndim, input->view.shape, op);
    grad_off(ctx);
    wgt_tensor *out = NULL;
    if (sq && wgt_run_elementwise(ctx, op, &e, 2, args, sq) == WGT_OK) {
        if (reduction == WGT_REDUCTION_NONE) out = sq, sq = NULL; /* handed over, still in the caller's scope */
        else if (reduction == WGT_REDUCTION_SUM) out = wgt_sum(sq, NULL, 0, false);
        else out = wgt_mean(sq, NULL, 0, false);
    }
    grad_on(ctx);
    wgt_tensor_release(sq);
    if (out && wgt_tape_wants(ctx, 2, args)) {
        wgt_grad_node *node = wgt_tape_record(out, WGT_OP_MSE_LOSS, 2, args);
        if (!node) {
            wgt_tensor_release(out);
            return NULL;
        }
        node->params.ints[0] = reduction;
        node->params.n_ints = 1;
    }
    return out;
}

/* One fused kernel: out = sign * 2 (a - b) g * scale, g broadcast from []. */
static wgt_tensor *mse_grad(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b, wgt_tensor *g, double factor,
                            wgt_dtype dtype, const char *op)
{
    wgt_expr e;
    wgt_expr_init(&e);
    int diff = wgt_expr_binary(&e, WGT_EXPR_SUB, wgt_expr_input(&e, 0, WGT_EXPR_F32), wgt_expr_input(&e, 1, WGT_EXPR_F32));
    int scaled = wgt_expr_binary(&e, WGT_EXPR_MUL, diff, wgt_expr_const(&e, factor, WGT_EXPR_F32));
    wgt_expr_binary(&e, WGT_EXPR_MUL, scaled, wgt_expr_input(&e, 2, WGT_EXPR_F32));
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, a->view.ndim, a->view.shape, op);
    wgt_tensor *in[3] = {a, b, g};
    if (out && wgt_run_elementwise(ctx, op, &e, 3, in, out) != WGT_OK) {
        wgt_tensor_release(out);
        out = NULL;
    }
    return out;
}

wgt_status wgt_mse_loss_backward(wgt_tensor *input, wgt_tensor *target, wgt_tensor *g, wgt_reduction reduction,
                                 wgt_tensor **d_input, wgt_tensor **d_target)
{
    const char *op = "wgt_mse_loss backward";
    wgt_tensor *args[3] = {input, target, g};
    if (d_input) *d_input = NULL;
    if (d_target) *d_target = NULL;
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx) return input && input->ctx ? wgt_context_status(input->ctx) : WGT_ERR_INVALID_ARGUMENT;
    if (!same_shape(input, target) || !wgt_dtype_is_float(g->view.dtype) ||
        (reduction == WGT_REDUCTION_NONE ? !same_shape(g, input) : wgt_shape_numel(g->view.ndim, g->view.shape) != 1))
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: input, target and upstream gradient shapes disagree", op);
    int64_t n = wgt_shape_numel(input->view.ndim, input->view.shape);
    double factor = reduction == WGT_REDUCTION_MEAN ? 2.0 / (double)(n ? n : 1) : 2.0;
    /* g as a [] view when it is a one-element tensor of another rank; g itself
     * is the caller's (released here only if made here) */
    wgt_tensor *made = NULL;
    if (g->view.ndim != 0 && reduction != WGT_REDUCTION_NONE && !(made = wgt_view(g, 0, NULL)))
        return wgt_context_status(ctx);
    wgt_tensor *gs = made ? made : g;
    if (d_input && !(*d_input = mse_grad(ctx, input, target, gs, factor, input->view.dtype, op))) goto fail;
    if (d_target && !(*d_target = mse_grad(ctx, input, target, gs, -factor, target->view.dtype, op))) goto fail;
    wgt_tensor_release(made);
    return WGT_OK;
fail:
    wgt_tensor_release(made);
    if (d_input) wgt_tensor_release(*d_input), *d_input = NULL;
    return wgt_context_status(ctx);
}

/* ------------------------------------------------------------- dropout */

/* value's dropped form in e: where(u >= p, value * 1/(1-p), 0), u the output
 * element's Philox uniform (e->seed). p and the scale are f32 constants on
 * both backends, so mask and products are bit-identical; p = 0 keeps value. */
static int dropout_expr(wgt_expr *e, int value, double p)
{
    if (p <= 0) return value;
    int keep = wgt_expr_binary(e, WGT_EXPR_GE, wgt_expr_rand(e, WGT_EXPR_RAND_UNIFORM), wgt_expr_const(e, p, WGT_EXPR_F32));
    int scaled = wgt_expr_binary(e, WGT_EXPR_MUL, value, wgt_expr_const(e, 1.0 / (1.0 - p), WGT_EXPR_F32));
    return wgt_expr_where(e, keep, scaled, wgt_expr_const(e, 0.0, WGT_EXPR_F32));
}

wgt_tensor *wgt_dropout_apply(wgt_tensor *x, double p, uint64_t seed, const char *op)
{
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if (!wgt_dtype_is_float(x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x has dtype %s, expected f32 or f16", op, wgt_dtype_name(x->view.dtype));
        return NULL;
    }
    if (!(p >= 0.0 && p < 1.0)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: p = %g is outside [0, 1)", op, p);
        return NULL;
    }
    wgt_expr e; /* p = 0: a plain copy */
    wgt_expr_init(&e);
    e.seed = seed;
    dropout_expr(&e, wgt_expr_input(&e, 0, WGT_EXPR_F32), p);
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, op);
    if (out && wgt_run_elementwise(ctx, op, &e, 1, &x, out) != WGT_OK) {
        wgt_tensor_release(out);
        out = NULL;
    }
    return out;
}

wgt_tensor *wgt_dropout(wgt_tensor *x, double p, uint64_t seed)
{
    wgt_tensor *out = wgt_dropout_apply(x, p, seed, "wgt_dropout");
    if (out && wgt_tape_wants(out->ctx, 1, &x)) {
        wgt_grad_node *node = wgt_tape_record(out, WGT_OP_DROPOUT, 1, &x);
        if (!node) {
            wgt_tensor_release(out);
            return NULL;
        }
        node->params.reals[0] = p;
        node->params.ints[0] = (int64_t)seed;
        node->params.n_ints = 1;
    }
    return out;
}

/* The [n] view of a contiguous tensor's elements. */
static wgt_tensor_view elements_view(const wgt_tensor *t)
{
    wgt_tensor_view v = t->view;
    v.ndim = 1;
    v.shape[0] = wgt_shape_numel(t->view.ndim, t->view.shape);
    v.strides[0] = 1;
    return v;
}

/* The NN call of DROPOUT_ADD / DROPOUT_MASKED with two inputs (the caller adds views and outputs). */
static void dropout_call(wgt_kernel_call *call, wgt_nn_kernel kernel, double p, const char *op)
{
    memset(call, 0, sizeof(*call));
    call->kind = WGT_KERNEL_NN;
    call->op_name = op;
    call->nn.kernel = kernel;
    call->nn.dropout_p = p;
    call->n_inputs = 2;
}

/* Whether a recorded wgt_dropout_add keeps its mask as bits (DROPOUT_ADD):
 * f32 x and h, contiguous, of a multiple of 4 elements at offsets that are
 * multiples of 4 (the WebGPU kernels move vec4s). */
static bool mask_kept(wgt_context *ctx, wgt_tensor *x, wgt_tensor *h, double p)
{
    int64_t n = wgt_shape_numel(x->view.ndim, x->view.shape);
    return !ctx->no_dropout_mask && p > 0 && n > 0 && n % 4 == 0 && x->view.dtype == WGT_F32 &&
           h->view.dtype == WGT_F32 && wgt_view_is_contiguous(&x->view) && wgt_view_is_contiguous(&h->view) &&
           x->view.offset % 4 == 0 && h->view.offset % 4 == 0;
}

/* wgt_dropout_add's recorded form: one DROPOUT_ADD kernel writes out and the
 * mask's bits, which the node saves, so the backward reads 1/32 of the
 * gradient's bytes instead of drawing the mask again (Philox). The same out,
 * bit for bit. */
static wgt_tensor *dropout_add_masked(wgt_context *ctx, wgt_tensor *const *args, double p, uint64_t seed,
                                      const char *op)
{
    wgt_tensor *x = args[0], *h = args[1];
    int64_t words = wgt_dropout_mask_words(wgt_shape_numel(x->view.ndim, x->view.shape));
    wgt_tensor *out = wgt_tensor_alloc(ctx, WGT_F32, x->view.ndim, x->view.shape, op);
    wgt_tensor *mask = out ? wgt_tensor_alloc(ctx, WGT_I32, 1, &words, op) : NULL;
    bool ok = out && mask;
    if (ok) {
        wgt_kernel_call call;
        dropout_call(&call, WGT_NN_DROPOUT_ADD, p, op);
        call.nn.seed = seed;
        call.inputs[0] = elements_view(x);
        call.inputs[1] = elements_view(h);
        call.n_outputs = 2;
        call.outputs[0] = elements_view(out);
        call.outputs[1] = mask->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    if (ok) {
        wgt_scope_remove(mask); /* the node's now: a scope pop must not release it a second time */
        wgt_grad_node *node = wgt_tape_record(out, WGT_OP_DROPOUT_ADD, 2, (wgt_tensor **)args);
        ok = node && wgt_tape_save(node, mask);
        if (node) {
            node->params.reals[0] = p;
            node->params.ints[0] = (int64_t)seed;
            node->params.n_ints = 1;
        }
    }
    wgt_tensor_release(mask);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_dropout_masked(wgt_tensor *g, wgt_tensor *mask, double p)
{
    const char *op = "wgt_dropout_add backward";
    wgt_tensor *args[2] = {g, mask};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    int64_t n = wgt_shape_numel(g->view.ndim, g->view.shape);
    if (mask->view.dtype != WGT_I32 || mask->view.ndim != 1 || mask->view.shape[0] != wgt_dropout_mask_words(n)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: a mask of %lld words for %lld elements", op,
                  (long long)(mask->view.ndim == 1 ? mask->view.shape[0] : -1), (long long)n);
        return NULL;
    }
    /* the kernel's form: f32, contiguous, 16-byte aligned (a fresh tensor is) */
    bool direct = g->view.dtype == WGT_F32 && wgt_view_is_contiguous(&g->view) && g->view.offset % 4 == 0;
    wgt_tensor *gc = direct ? g : wgt_cast(g, WGT_F32); /* wgt_cast: a contiguous copy at offset 0 */
    wgt_tensor *dh = gc ? wgt_tensor_alloc(ctx, WGT_F32, g->view.ndim, g->view.shape, op) : NULL;
    if (dh) {
        wgt_kernel_call call;
        dropout_call(&call, WGT_NN_DROPOUT_MASKED, p, op);
        call.inputs[0] = elements_view(gc);
        call.inputs[1] = mask->view;
        call.n_outputs = 1;
        call.outputs[0] = elements_view(dh);
        if (wgt_run_kernel(ctx, &call) != WGT_OK) {
            wgt_tensor_release(dh);
            dh = NULL;
        }
    }
    if (gc != g) wgt_tensor_release(gc);
    return dh;
}

/* x + dropout(h, p, seed), the residual add of a transformer block, as ONE
 * expression kernel: a + where(u >= p, b * 1/(1-p), 0) with u the Philox
 * uniform of output element i, the same mask and products as wgt_dropout(h)
 * on h's (= the output's) shape, so the result equals wgt_add(x,
 * wgt_dropout(h, p, seed)) without writing and re-reading the dropped tensor.
 * It is recorded as a fused expression: autograd passes the gradient on to x
 * unchanged and regenerates the mask for h's in one kernel. x, h [...] of one
 * shape (f32/f16). */
wgt_tensor *wgt_dropout_add(wgt_tensor *x, wgt_tensor *h, double p, uint64_t seed)
{
    const char *op = "wgt_dropout_add";
    wgt_tensor *args[2] = {x, h};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    if (!wgt_dtype_is_float(x->view.dtype) || !wgt_dtype_is_float(h->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x is %s and h is %s, expected f32 or f16", op,
                  wgt_dtype_name(x->view.dtype), wgt_dtype_name(h->view.dtype));
        return NULL;
    }
    if (x->view.ndim != h->view.ndim ||
        memcmp(x->view.shape, h->view.shape, sizeof(int64_t) * (size_t)x->view.ndim) != 0) {
        char a[128], b[128];
        /* the mask is numbered by h's elements: a broadcast would renumber them */
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s and h %s must have one shape", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, a, sizeof(a)),
                  wgt_shape_string(h->view.ndim, h->view.shape, b, sizeof(b)));
        return NULL;
    }
    if (!(p >= 0.0 && p < 1.0)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: p = %g is outside [0, 1)", op, p);
        return NULL;
    }
    if (wgt_tape_wants(ctx, 2, args) && mask_kept(ctx, x, h, p)) return dropout_add_masked(ctx, args, p, seed, op);
    wgt_expr e;
    wgt_expr_init(&e);
    e.seed = seed;
    int xin = wgt_expr_input(&e, 0, WGT_EXPR_F32);
    wgt_expr_binary(&e, WGT_EXPR_ADD, xin, dropout_expr(&e, wgt_expr_input(&e, 1, WGT_EXPR_F32), p));
    wgt_dtype dtype = x->view.dtype == WGT_F16 && h->view.dtype == WGT_F16 ? WGT_F16 : WGT_F32;
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, x->view.ndim, x->view.shape, op);
    if (out && wgt_run_elementwise(ctx, op, &e, 2, args, out) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    wgt_op_record_expr(&out, WGT_OP_FUSED, 2, args, &e);
    return out;
}
