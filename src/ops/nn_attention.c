/*
 * Front-ends of the fused attention and rotary embedding ops:
 *   wgt_scaled_dot_product_attention  q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> [B, H, Tq, D]
 *   wgt_rope                          x [B, H, T, D] -> [B, H, T, D]
 * plus their internal forms for backward (src/ops/attention_internal.h).
 * Validation happens here, before anything reaches a backend; the kernels are
 * WGT_KERNEL_ATTENTION(_BACKWARD) and WGT_KERNEL_ROPE (src/core/backend.h).
 *
 * Autograd: attention saves its output and the row logsumexp, so backward
 * recomputes the probabilities without storing a [Tq, Tk] matrix. Node params:
 * ints[0] causal, ints[1] seed (bits), reals[0] dropout_p; saved[0] out,
 * saved[1] lse. rope: ints[0] position_offset, ints[1] interleaved, reals[0] theta.
 */
#include <math.h>
#include <string.h>

#include "core/checked.h"
#include "core/tape.h"
#include "ops/attention_internal.h"
#include "ops/op_common.h"

static bool check_rank4_float(wgt_context *ctx, const char *op, const char *name, const wgt_tensor *t)
{
    char s[160];
    if (t->view.ndim != 4) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %s %s must have 4 dims [B, H, T, D]", op, name,
                  wgt_shape_string(t->view.ndim, t->view.shape, s, sizeof(s)));
        return false;
    }
    if (!wgt_dtype_is_float(t->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s has dtype %s (f32 or f16)", op, name, wgt_dtype_name(t->view.dtype));
        return false;
    }
    return true;
}

/* q [B, H, Tq, D], k and v [B, Hkv, Tk, D], one float dtype, H % Hkv == 0. */
static bool check_attention_args(wgt_context *ctx, const char *op, wgt_tensor *q, wgt_tensor *k, wgt_tensor *v,
                                 double dropout_p)
{
    if (!check_rank4_float(ctx, op, "q", q) || !check_rank4_float(ctx, op, "k", k) ||
        !check_rank4_float(ctx, op, "v", v))
        return false;
    char qs[160], ks[160], vs[160];
    wgt_shape_string(4, q->view.shape, qs, sizeof(qs));
    wgt_shape_string(4, k->view.shape, ks, sizeof(ks));
    wgt_shape_string(4, v->view.shape, vs, sizeof(vs));
    if (k->view.dtype != q->view.dtype || v->view.dtype != q->view.dtype) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: q, k, v dtypes %s, %s, %s differ", op, wgt_dtype_name(q->view.dtype),
                  wgt_dtype_name(k->view.dtype), wgt_dtype_name(v->view.dtype));
        return false;
    }
    const int64_t *qd = q->view.shape, *kd = k->view.shape, *vd = v->view.shape;
    bool same_kv = memcmp(kd, vd, 4 * sizeof(int64_t)) == 0;
    if (!same_kv || kd[0] != qd[0] || kd[3] != qd[3]) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                  "%s: q %s, k %s, v %s: need q [B, H, Tq, D] and k, v of one shape [B, Hkv, Tk, D]", op, qs, ks, vs);
        return false;
    }
    if (kd[1] == 0 ? qd[1] != 0 : qd[1] % kd[1] != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: q has %lld heads, k and v %lld: a multiple is needed (q %s, k %s)",
                  op, (long long)qd[1], (long long)kd[1], qs, ks);
        return false;
    }
    if (!(dropout_p >= 0.0 && dropout_p < 1.0)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: dropout_p %g outside [0, 1)", op, dropout_p);
        return false;
    }
    /* the kernels number rows and keys in u32 (and the dropout counter); the
     * rows' product is checked: a q of D = 0 has no elements whatever its
     * other sizes (api_fuzzer found 19 x 7.9e18 wrapping) */
    int64_t rows = 0;
    if (!wgt_checked_mul(qd[0], qd[1], &rows) || !wgt_checked_mul(rows, qd[2], &rows) ||
        rows >= (int64_t)UINT32_MAX || kd[2] >= (int64_t)UINT32_MAX) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: q %s, k %s: more than 2^32 rows", op, qs, ks);
        return false;
    }
    return true;
}

static void attention_fields(wgt_kernel_call *call, const char *op, int64_t D, bool causal, double dropout_p,
                             uint64_t seed)
{
    call->op_name = op;
    call->attention.scale = 1.0 / sqrt((double)D);
    call->attention.causal = causal;
    call->attention.dropout_p = dropout_p;
    call->attention.seed = seed;
}

/* The output [B, H, Tq, D]: contiguous, or (heads_inner) a [B, Tq, H, D]
 * buffer seen through a permute, the layout in which the caller's
 * transpose(1, 2) + reshape to [B, Tq, H D] (merging the heads for the output
 * projection) is a view, not a copy. */
static wgt_tensor *alloc_output(wgt_context *ctx, const wgt_tensor *q, bool heads_inner, const char *op)
{
    const int64_t *qd = q->view.shape;
    if (!heads_inner) return wgt_tensor_alloc(ctx, q->view.dtype, 4, qd, op);
    wgt_tensor *buf = wgt_tensor_alloc(ctx, q->view.dtype, 4, (int64_t[]){qd[0], qd[2], qd[1], qd[3]}, op);
    if (!buf) return NULL;
    wgt_tensor_view view = buf->view; /* the permute as a plain view: no node, no scope juggling */
    view.shape[1] = qd[1], view.shape[2] = qd[2];
    view.strides[1] = buf->view.strides[2], view.strides[2] = buf->view.strides[1];
    wgt_tensor *out = wgt_tensor_wrap(ctx, &view);
    wgt_tensor_release(buf); /* out keeps the storage */
    return out;
}

static wgt_tensor *attention_forward(const char *op, wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal,
                                     double dropout_p, uint64_t seed, wgt_tensor **lse_out, bool heads_inner)
{
    if (lse_out) *lse_out = NULL;
    wgt_tensor *args[3] = {q, k, v};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx || !check_attention_args(ctx, op, q, k, v, dropout_p)) return NULL;
    const int64_t *qd = q->view.shape;
    wgt_tensor *out = alloc_output(ctx, q, heads_inner, op);
    wgt_tensor *lse = out ? wgt_tensor_alloc(ctx, WGT_F32, 3, qd, op) : NULL;
    if (!lse) {
        wgt_tensor_release(out);
        return NULL;
    }
    wgt_status s = WGT_OK;
    if (wgt_shape_numel(4, qd) > 0 && k->view.shape[2] == 0) { /* no keys: empty sums */
        s = wgt_fill(out, 0.0);
        if (s == WGT_OK) s = wgt_fill(lse, -INFINITY);
    } else if (wgt_shape_numel(4, qd) > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_ATTENTION;
        attention_fields(&call, op, qd[3], causal, dropout_p, seed);
        call.n_inputs = 3;
        for (int i = 0; i < 3; i++) call.inputs[i] = args[i]->view;
        call.n_outputs = 2;
        call.outputs[0] = out->view;
        call.outputs[1] = lse->view;
        s = wgt_run_kernel(ctx, &call);
    }
    if (s != WGT_OK) {
        wgt_tensor_release(out);
        wgt_tensor_release(lse);
        return NULL;
    }
    if (lse_out) *lse_out = lse;
    else wgt_tensor_release(lse);
    return out;
}

wgt_tensor *wgt_attention_forward(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, double dropout_p,
                                  uint64_t seed, wgt_tensor **lse)
{
    return attention_forward("wgt_attention_forward", q, k, v, causal, dropout_p, seed, lse, false);
}

wgt_tensor *wgt_scaled_dot_product_attention(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal,
                                             double dropout_p, uint64_t seed)
{
    const char *op = "wgt_scaled_dot_product_attention";
    wgt_tensor *in[3] = {q, k, v};
    bool record = q && wgt_tape_wants(q->ctx, 3, in);
    wgt_tensor *lse = NULL;
    /* On the tape the output is saved for backward, and a model merging the
     * heads for its output projection (transpose(1, 2) + reshape) would keep a
     * second, contiguous copy for that projection's backward: with the heads
     * innermost the merge is a view and the two share one buffer. */
    wgt_tensor *out = attention_forward(op, q, k, v, causal, dropout_p, seed, record ? &lse : NULL, record);
    if (!out || !record) return out;
    wgt_scope_remove(lse); /* a temporary the node keeps: a scope pop must not release it a second time */
    wgt_grad_node *node = wgt_tape_record(out, WGT_OP_ATTENTION, 3, in);
    bool ok = node && wgt_tape_save_output(node, out) && wgt_tape_save(node, lse);
    wgt_tensor_release(lse);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    node->params.ints[0] = causal;
    node->params.ints[1] = (int64_t)seed;
    node->params.n_ints = 2;
    node->params.reals[0] = dropout_p;
    return out;
}

/* A contiguous f32 tensor of shape like t's (backward's outputs). */
static wgt_tensor *f32_like(wgt_context *ctx, const wgt_tensor *t, const char *op)
{
    return wgt_tensor_alloc(ctx, WGT_F32, t->view.ndim, t->view.shape, op);
}

static bool same_shape4(const wgt_tensor *t, const int64_t *shape)
{
    return t->view.ndim == 4 && memcmp(t->view.shape, shape, 4 * sizeof(int64_t)) == 0;
}

/* g (f32) in dtype: g itself for f32, else a cast copy (g released). */
static wgt_tensor *as_dtype(wgt_tensor *g, wgt_dtype dtype)
{
    if (!g || g->view.dtype == dtype) return g;
    wgt_tensor *c = wgt_cast(g, dtype);
    wgt_tensor_release(g);
    return c;
}

wgt_status wgt_attention_backward(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, wgt_tensor *out, wgt_tensor *lse,
                                  wgt_tensor *dout, bool causal, double dropout_p, uint64_t seed, wgt_tensor **dq,
                                  wgt_tensor **dk, wgt_tensor **dv)
{
    wgt_tensor *const none[3] = {NULL, NULL, NULL};
    return wgt_attention_backward_into(q, k, v, out, lse, dout, causal, dropout_p, seed, none, dq, dk, dv);
}

wgt_status wgt_attention_backward_into(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, wgt_tensor *out, wgt_tensor *lse,
                                       wgt_tensor *dout, bool causal, double dropout_p, uint64_t seed,
                                       wgt_tensor *const into[3], wgt_tensor **dq, wgt_tensor **dk, wgt_tensor **dv)
{
    const char *op = "wgt_attention_backward";
    if (dq) *dq = NULL;
    if (dk) *dk = NULL;
    if (dv) *dv = NULL;
    wgt_tensor *args[6] = {q, k, v, out, dout, lse};
    wgt_context *ctx = wgt_op_begin(op, 6, args);
    if (!ctx) return q && q->ctx ? q->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!check_attention_args(ctx, op, q, k, v, dropout_p)) return ctx->status;
    char qs[160], os[160], ds[160], ls[160];
    const int64_t *qd = q->view.shape;
    bool shapes_ok = out->view.ndim == 4 && dout->view.ndim == 4 && lse->view.ndim == 3 &&
                     memcmp(out->view.shape, qd, 4 * sizeof(int64_t)) == 0 &&
                     memcmp(dout->view.shape, qd, 4 * sizeof(int64_t)) == 0 &&
                     memcmp(lse->view.shape, qd, 3 * sizeof(int64_t)) == 0;
    if (!shapes_ok || out->view.dtype != q->view.dtype || dout->view.dtype != q->view.dtype ||
        lse->view.dtype != WGT_F32)
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                         "%s: q %s, out %s (%s), dout %s (%s), lse %s (%s): need out and dout of q's shape and dtype, "
                         "lse f32 [B, H, Tq]",
                         op, wgt_shape_string(4, qd, qs, sizeof(qs)),
                         wgt_shape_string(out->view.ndim, out->view.shape, os, sizeof(os)),
                         wgt_dtype_name(out->view.dtype),
                         wgt_shape_string(dout->view.ndim, dout->view.shape, ds, sizeof(ds)),
                         wgt_dtype_name(dout->view.dtype),
                         wgt_shape_string(lse->view.ndim, lse->view.shape, ls, sizeof(ls)),
                         wgt_dtype_name(lse->view.dtype));
    wgt_tensor *like[3] = {q, k, v}, *g[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        wgt_tensor *t = into[i];
        if (!t) continue;
        if (t->ctx != ctx || t->view.dtype != WGT_F32 || q->view.dtype != WGT_F32 ||
            !same_shape4(t, like[i]->view.shape)) {
            char ts[160], ws[160];
            return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                             "%s: gradient %d goes into a %s %s tensor; need f32 %s of this context, for f32 inputs", op,
                             i, wgt_shape_string(t->view.ndim, t->view.shape, ts, sizeof(ts)),
                             wgt_dtype_name(t->view.dtype),
                             wgt_shape_string(like[i]->view.ndim, like[i]->view.shape, ws, sizeof(ws)));
        }
    }
    for (int i = 0; i < 3; i++) g[i] = into[i] ? wgt_tensor_ref(into[i]) : f32_like(ctx, like[i], op);
    wgt_status s = g[0] && g[1] && g[2] ? WGT_OK : ctx->status;
    bool empty = wgt_shape_numel(4, qd) == 0 || k->view.shape[2] == 0;
    if (s == WGT_OK && empty) { /* nothing attends: zero gradients */
        for (int i = 0; i < 3 && s == WGT_OK; i++) s = wgt_fill(g[i], 0.0);
    } else if (s == WGT_OK) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_ATTENTION_BACKWARD;
        attention_fields(&call, op, qd[3], causal, dropout_p, seed);
        call.n_inputs = 6;
        for (int i = 0; i < 6; i++) call.inputs[i] = args[i]->view;
        call.n_outputs = 3;
        for (int i = 0; i < 3; i++) call.outputs[i] = g[i]->view;
        s = wgt_run_kernel(ctx, &call);
    }
    wgt_tensor **dst[3] = {dq, dk, dv};
    for (int i = 0; i < 3; i++) {
        if (s == WGT_OK && dst[i]) {
            *dst[i] = as_dtype(g[i], q->view.dtype);
            if (!*dst[i]) s = ctx->status;
        } else {
            wgt_tensor_release(g[i]);
        }
    }
    if (s != WGT_OK)
        for (int i = 0; i < 3; i++)
            if (dst[i]) {
                wgt_tensor_release(*dst[i]);
                *dst[i] = NULL;
            }
    return s;
}

/* ------------------------------------------------------------------ rope */

static wgt_tensor *rope(const char *op, wgt_tensor *x, int64_t position_offset, double theta, bool interleaved,
                        bool inverse)
{
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx || !check_rank4_float(ctx, op, "x", x)) return NULL;
    char s[160];
    const int64_t *shape = x->view.shape;
    if (shape[3] % 2 != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s: the head dim must be even", op,
                  wgt_shape_string(4, shape, s, sizeof(s)));
        return NULL;
    }
    if (!(theta > 0.0) || !isfinite(theta)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: theta %g must be positive and finite", op, theta);
        return NULL;
    }
    /* positions are exact in f32 (both backends form the angle in f32) */
    if (position_offset < 0 || position_offset + shape[2] > (1 << 24)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: positions %lld..%lld of x %s outside [0, 2^24]", op,
                  (long long)position_offset, (long long)(position_offset + shape[2]),
                  wgt_shape_string(4, shape, s, sizeof(s)));
        return NULL;
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, 4, shape, op);
    if (!out || wgt_shape_numel(4, shape) == 0) return out;
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_ROPE;
    call.op_name = op;
    call.n_inputs = 1;
    call.inputs[0] = x->view;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    call.rope.position_offset = position_offset;
    call.rope.theta = theta;
    call.rope.interleaved = interleaved;
    call.rope.inverse = inverse;
    if (wgt_run_kernel(ctx, &call) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_rope_ex(wgt_tensor *x, int64_t position_offset, double theta, bool interleaved, bool inverse)
{
    return rope("wgt_rope", x, position_offset, theta, interleaved, inverse);
}

wgt_tensor *wgt_rope(wgt_tensor *x, int64_t position_offset, double theta, bool interleaved)
{
    wgt_tensor *out = rope("wgt_rope", x, position_offset, theta, interleaved, false);
    if (!out || !wgt_tape_wants(x->ctx, 1, &x)) return out;
    wgt_grad_node *node = wgt_tape_record(out, WGT_OP_ROPE, 1, &x);
    if (!node) {
        wgt_tensor_release(out);
        return NULL;
    }
    node->params.ints[0] = position_offset;
    node->params.ints[1] = interleaved;
    node->params.n_ints = 2;
    node->params.reals[0] = theta;
    return out;
}
