/*
 * 8-bit rows: an LLM's 8-bit KV cache (kernels QROWS and ATTENTION with 5
 * inputs, src/core/backend.h):
 *   wgt_quantize_rows_into  x [.., D] f32/f16 -> codes i32 [.., D/4], scales f32 [.., D/32] (views, written)
 *   wgt_dequantize_rows     codes, scales -> [.., D] f32/f16
 *   wgt_attention_q8        q [B, H, Tq, D] against 8-bit k, v -> [B, H, Tq, D]
 * The layout is wgt_qlinear's 8-bit one (a row of D is a weight row of K = D),
 * the rounding that of its int8_x (wgtensor.h). Inference only: no autograd
 * rule (an argument that requires grad is refused). Where the backend has no
 * kernel for an attention call (WebGPU: more than a few query rows, i.e. a
 * prefill), the keys and values are dequantized into temporaries and
 * wgt_scaled_dot_product_attention runs: the same values up to the order of
 * f32 sums.
 */
#include <math.h>
#include <string.h>

#include "core/checked.h"
#include "core/tape.h"
#include "ops/op_common.h"

#define QGROUP 32

static bool no_grad_args(wgt_context *ctx, const char *op, int n, wgt_tensor *const *args)
{
    if (!wgt_tape_wants(ctx, n, args)) return true;
    wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under wgt_no_grad_push)",
              op);
    return false;
}

/* x [.., D] (f32/f16, 1-4 dims, D a multiple of 32, unit last stride), codes
 * i32 [.., D/4] and scales f32 [.., D/32] (x's leading dims, unit last
 * strides), three storages. false + an error naming op, the shapes and the cause. */
static bool check_rows(wgt_context *ctx, const char *op, const wgt_tensor *codes, const wgt_tensor *scales,
                       const wgt_tensor_view *x)
{
    const wgt_tensor_view *c = &codes->view, *s = &scales->view;
    char xs[160], cs[160], ss[160];
    wgt_shape_string(x->ndim, x->shape, xs, sizeof(xs));
    wgt_shape_string(c->ndim, c->shape, cs, sizeof(cs));
    wgt_shape_string(s->ndim, s->shape, ss, sizeof(ss));
    if (!wgt_dtype_is_float(x->dtype) || c->dtype != WGT_I32 || s->dtype != WGT_F32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x %s, codes %s, scales %s: need f32 or f16, i32, f32", op,
                  wgt_dtype_name(x->dtype), wgt_dtype_name(c->dtype), wgt_dtype_name(s->dtype));
        return false;
    }
    const int nd = x->ndim;
    bool ok = nd >= 1 && nd <= 4 && c->ndim == nd && s->ndim == nd;
    const int64_t D = ok ? x->shape[nd - 1] : 0;
    ok = ok && D % QGROUP == 0 && c->shape[nd - 1] == D / 4 && s->shape[nd - 1] == D / QGROUP;
    for (int d = 0; ok && d < nd - 1; d++) ok = c->shape[d] == x->shape[d] && s->shape[d] == x->shape[d];
    if (!ok) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s, codes %s, scales %s: need x [.., D] (1 to 4 dims, D a "
                  "multiple of 32), codes [.., D/4], scales [.., D/32]", op, xs, cs, ss);
        return false;
    }
    if ((D > 0 && x->strides[nd - 1] != 1) || c->strides[nd - 1] != 1 || s->strides[nd - 1] != 1) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: x %s, codes %s, scales %s: the last dim of each must be contiguous",
                  op, xs, cs, ss);
        return false;
    }
    if (c->storage == s->storage || c->storage == x->storage || s->storage == x->storage) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: x, codes and scales must lie in three storages", op);
        return false;
    }
    return true;
}

static void rows_call(wgt_kernel_call *call, const char *op, bool dequantize, const wgt_tensor_view *x,
                      const wgt_tensor_view *codes, const wgt_tensor_view *scales)
{
    memset(call, 0, sizeof(*call));
    call->kind = WGT_KERNEL_QROWS;
    call->op_name = op;
    call->quant.dequantize = dequantize;
    if (dequantize) {
        call->n_inputs = 2, call->n_outputs = 1;
        call->inputs[0] = *codes, call->inputs[1] = *scales, call->outputs[0] = *x;
    } else {
        call->n_inputs = 1, call->n_outputs = 2;
        call->inputs[0] = *x, call->outputs[0] = *codes, call->outputs[1] = *scales;
    }
}

/* Runs call or says that the backend has no kernel for it. */
static wgt_status run_rows(wgt_context *ctx, const wgt_kernel_call *call, const char *op)
{
    if (!ctx->backend->vt->supports(ctx->backend, call))
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: the %s backend has no kernel for these views", op,
                         ctx->backend->vt->name);
    return wgt_run_kernel(ctx, call);
}

wgt_status wgt_quantize_rows_into(wgt_tensor *codes, wgt_tensor *scales, wgt_tensor *x)
{
    const char *op = "wgt_quantize_rows_into";
    wgt_tensor *args[3] = {x, codes, scales};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx) return x && x->ctx ? x->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!no_grad_args(ctx, op, 1, args) || !wgt_op_check_inplace(ctx, codes, op) ||
        !wgt_op_check_inplace(ctx, scales, op) || !check_rows(ctx, op, codes, scales, &x->view))
        return ctx->status;
    if (wgt_shape_numel(x->view.ndim, x->view.shape) == 0) return WGT_OK;
    wgt_kernel_call call;
    rows_call(&call, op, false, &x->view, &codes->view, &scales->view);
    return run_rows(ctx, &call, op);
}

wgt_tensor *wgt_dequantize_rows(wgt_tensor *codes, wgt_tensor *scales, wgt_dtype dtype)
{
    const char *op = "wgt_dequantize_rows";
    wgt_tensor *args[2] = {codes, scales};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !no_grad_args(ctx, op, 2, args)) return NULL;
    if (dtype != WGT_F32 && dtype != WGT_F16) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtype %s: need f32 or f16", op, wgt_dtype_name(dtype));
        return NULL;
    }
    const wgt_tensor_view *c = &codes->view;
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, c->shape, sizeof(shape));
    if (c->ndim >= 1) shape[c->ndim - 1] *= 4;
    wgt_tensor *x = c->ndim >= 1 && c->ndim <= 4 ? wgt_tensor_alloc(ctx, dtype, c->ndim, shape, op) : NULL;
    if (!x) {
        char cs[160];
        if (wgt_context_status(ctx) == WGT_OK)
            wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: codes %s: need 1 to 4 dims [.., D/4]", op,
                      wgt_shape_string(c->ndim, c->shape, cs, sizeof(cs)));
        return NULL;
    }
    wgt_status s = check_rows(ctx, op, codes, scales, &x->view) ? WGT_OK : ctx->status;
    if (s == WGT_OK && wgt_shape_numel(x->view.ndim, x->view.shape) > 0) {
        wgt_kernel_call call;
        rows_call(&call, op, true, &x->view, &codes->view, &scales->view);
        s = run_rows(ctx, &call, op);
    }
    if (s != WGT_OK) {
        wgt_tensor_release(x);
        return NULL;
    }
    return x;
}

/* q [B, H, Tq, D] float; codes [B, Hkv, Tk, D/4] i32 and scales [B, Hkv, Tk,
 * D/32] f32 for k and v alike, unit last strides, H % Hkv == 0, D % 32 == 0. */
static bool check_attention_q8(wgt_context *ctx, const char *op, wgt_tensor *const *a)
{
    static const char *const names[5] = {"q", "k codes", "k scales", "v codes", "v scales"};
    char s[5][160];
    for (int i = 0; i < 5; i++) wgt_shape_string(a[i]->view.ndim, a[i]->view.shape, s[i], sizeof(s[i]));
    const wgt_tensor_view *q = &a[0]->view;
    if (!wgt_dtype_is_float(q->dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: q has dtype %s (f32 or f16)", op, wgt_dtype_name(q->dtype));
        return false;
    }
    for (int i = 1; i < 5; i++)
        if (a[i]->view.dtype != (i % 2 ? WGT_I32 : WGT_F32)) {
            wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s has dtype %s (%s)", op, names[i], wgt_dtype_name(a[i]->view.dtype),
                      i % 2 ? "i32" : "f32");
            return false;
        }
    bool ok = q->ndim == 4 && q->shape[3] % QGROUP == 0;
    const int64_t D = ok ? q->shape[3] : 0;
    for (int i = 1; ok && i < 5; i++) {
        const wgt_tensor_view *v = &a[i]->view;
        ok = v->ndim == 4 && v->shape[0] == q->shape[0] && v->shape[1] == a[1]->view.shape[1] &&
             v->shape[2] == a[1]->view.shape[2] && v->shape[3] == (i % 2 ? D / 4 : D / QGROUP) && v->strides[3] == 1;
    }
    const int64_t Hkv = ok ? a[1]->view.shape[1] : 0;
    if (!ok || (Hkv == 0 ? q->shape[1] != 0 : q->shape[1] % Hkv != 0)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: q %s, k codes %s, k scales %s, v codes %s, v scales %s: need q [B, "
                  "H, Tq, D] (D a multiple of 32), codes [B, Hkv, Tk, D/4] and scales [B, Hkv, Tk, D/32] with unit "
                  "last strides, H a multiple of Hkv", op, s[0], s[1], s[2], s[3], s[4]);
        return false;
    }
    int64_t rows = 0; /* checked: a q of D = 0 has no elements whatever its other sizes */
    if (!wgt_checked_mul(q->shape[0], q->shape[1], &rows) || !wgt_checked_mul(rows, q->shape[2], &rows) ||
        rows >= (int64_t)UINT32_MAX || a[1]->view.shape[2] >= (int64_t)UINT32_MAX) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: q %s, k codes %s: more than 2^32 rows", op, s[0], s[1]);
        return false;
    }
    return true;
}

wgt_tensor *wgt_attention_q8(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                             wgt_tensor *v_scales, bool causal)
{
    const char *op = "wgt_attention_q8";
    wgt_tensor *args[5] = {q, k_codes, k_scales, v_codes, v_scales};
    wgt_context *ctx = wgt_op_begin(op, 5, args);
    if (!ctx || !no_grad_args(ctx, op, 5, args) || !check_attention_q8(ctx, op, args)) return NULL;
    const int64_t *qd = q->view.shape, Tk = k_codes->view.shape[2];
    if (wgt_shape_numel(4, qd) == 0 || Tk == 0) { /* nothing to attend to: as wgt_scaled_dot_product_attention */
        wgt_tensor *out = wgt_tensor_alloc(ctx, q->view.dtype, 4, qd, op);
        if (out && wgt_shape_numel(4, qd) > 0 && wgt_fill(out, 0.0) != WGT_OK) wgt_tensor_release(out), out = NULL;
        return out;
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, q->view.dtype, 4, qd, op);
    wgt_tensor *lse = out ? wgt_tensor_alloc(ctx, WGT_F32, 3, qd, op) : NULL;
    if (!lse) {
        wgt_tensor_release(out);
        return NULL;
    }
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_ATTENTION;
    call.op_name = op;
    call.attention.scale = 1.0 / sqrt((double)qd[3]);
    call.attention.causal = causal;
    call.n_inputs = 5;
    call.inputs[0] = q->view;
    call.inputs[1] = k_codes->view, call.inputs[2] = v_codes->view;
    call.inputs[3] = k_scales->view, call.inputs[4] = v_scales->view;
    call.n_outputs = 2;
    call.outputs[0] = out->view, call.outputs[1] = lse->view;
    wgt_status s;
    if (ctx->backend->vt->supports(ctx->backend, &call)) {
        s = wgt_run_kernel(ctx, &call);
    } else { /* dequantized copies of k and v in q's dtype, then the float kernels */
        wgt_tensor_release(out), out = NULL;
        wgt_scope_push(ctx);
        wgt_tensor *k = wgt_dequantize_rows(k_codes, k_scales, q->view.dtype);
        wgt_tensor *v = k ? wgt_dequantize_rows(v_codes, v_scales, q->view.dtype) : NULL;
        out = v ? wgt_scope_keep(wgt_scaled_dot_product_attention(q, k, v, causal, 0.0, 0)) : NULL;
        wgt_scope_pop(ctx);
        s = out ? WGT_OK : wgt_context_status(ctx);
    }
    wgt_tensor_release(lse);
    if (s != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}
