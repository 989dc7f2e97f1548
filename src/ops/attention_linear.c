/*
 * A decode step's attention and its output projection as one op (llama's
 * decode layer, src/models/llama_forward.c):
 *   wgt_attention_linear_ex   q [B, H, Tq, D], k, v [B, Hkv, Tk, D], weight [N, H D] -> [B Tq, N]
 *   wgt_attention_qlinear_ex  the same with wgt_qlinear's 8- or 4-bit weight (f32 out)
 * The values are those of the composition, by definition:
 *   a = wgt_scaled_dot_product_attention(q, k, v, causal, 0, 0)   [B, H, Tq, D], q's dtype
 *   a = its heads merged: permute to [B, Tq, H, D], reshape to [B Tq, H D]
 *   y = wgt_linear_ex(a, weight, bias, out_dtype), or wgt_qlinear_ex(a, qweight, scales,
 *       bits, {.bias = bias})
 * Why one op: on WebGPU the decode attention is two dispatches, a first pass
 * over chunks of keys and a combine of their partial sums; measured on an H200
 * (bench/results/h200-2026-11-29k/p1), leaving the combine out of Llama-3.2-1B's
 * decode chain saved 4.0-4.6 us a layer with f16 weights, 6.8-7.9 with 4-bit
 * ones, most of it the dispatch boundary, not the combine's work. Here the
 * combine moves into the projection's GEMV: each of its workgroups merges the
 * partials of the whole row as it stages its vector (MATMUL's and QMATMUL's
 * attention prologue, backend.h). One query row (B = Tq = 1) whose call the
 * backend runs (supports()) takes that call; anything else is the composition,
 * which also reports what is wrong with the arguments (its calls' errors with
 * this op's name in front).
 * No gradient rule: an argument that requires grad is refused by name.
 */
#include <math.h>
#include <string.h>

#include "core/tape.h"
#include "ops/op_common.h"

/* The composition that defines the op: attention, heads merged, the
 * projection. Its intermediates live in a scope of their own, released here
 * whether or not the caller has one. */
static wgt_tensor *composed(wgt_context *ctx, wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal,
                            wgt_tensor *weight, wgt_tensor *scales, int bits, wgt_tensor *bias, wgt_dtype out_dtype)
{
    wgt_scope_push(ctx);
    wgt_tensor *y = NULL, *a = wgt_scaled_dot_product_attention(q, k, v, causal, 0.0, 0);
    if (a) {
        const int64_t B = a->view.shape[0], H = a->view.shape[1], Tq = a->view.shape[2], D = a->view.shape[3];
        wgt_tensor *merged = wgt_reshape(wgt_permute(a, (int[]){0, 2, 1, 3}), 2, (int64_t[]){B * Tq, H * D});
        if (merged && scales) y = wgt_qlinear_ex(merged, weight, scales, bits, &(wgt_qlinear_fusion){.bias = bias});
        else if (merged) y = wgt_linear_ex(merged, weight, bias, out_dtype);
    }
    wgt_scope_keep(y);
    wgt_scope_pop(ctx);
    if (!y) wgt_error_name_op(ctx, scales ? "wgt_attention_qlinear_ex" : "wgt_attention_linear_ex");
    return y;
}

/* One query row of a float q against keys and values of its dtype, with
 * shapes the attention accepts, and a weight of H D columns: the fused call's
 * case (supports() decides the rest). */
static bool one_row(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *weight,
                    const wgt_tensor *bias, int64_t columns)
{
    const wgt_tensor_view *vq = &q->view, *vk = &k->view, *vv = &v->view;
    if (vq->ndim != 4 || vk->ndim != 4 || vv->ndim != 4 || (vq->dtype != WGT_F32 && vq->dtype != WGT_F16) ||
        vk->dtype != vq->dtype || vv->dtype != vq->dtype)
        return false;
    const int64_t *qd = vq->shape, *kd = vk->shape;
    if (qd[0] != 1 || qd[2] != 1 || qd[1] < 1 || qd[3] < 1 || kd[0] != 1 || kd[1] < 1 || qd[1] % kd[1] ||
        kd[2] < 1 || kd[3] != qd[3] || memcmp(kd, vv->shape, 4 * sizeof(int64_t)) != 0)
        return false;
    if (weight->view.ndim != 2 || columns != qd[1] * qd[3]) return false;
    const int64_t N = weight->view.shape[0];
    return !bias || (bias->view.ndim == 1 && bias->view.shape[0] == N && bias->view.dtype == WGT_F32);
}

/* The fused call (kind MATMUL or QMATMUL, its attention prologue) if the
 * backend runs it, into a new [1, N]; NULL with no error recorded where it
 * does not (the caller composes). */
static wgt_tensor *fused(wgt_context *ctx, const char *op, wgt_kernel_call *call, wgt_tensor *q, wgt_tensor *k,
                         wgt_tensor *v, bool causal, int64_t N, wgt_dtype out_dtype)
{
    call->op_name = op;
    call->attention.scale = 1.0 / sqrt((double)q->view.shape[3]);
    call->attention.causal = causal;
    call->inputs[0] = q->view;
    call->inputs[call->n_inputs++] = k->view;
    call->inputs[call->n_inputs++] = v->view;
    call->n_outputs = 1;
    wgt_tensor_view *o = &call->outputs[0];
    o->dtype = out_dtype;
    o->ndim = 2;
    o->shape[0] = 1, o->shape[1] = N;
    o->strides[0] = N, o->strides[1] = 1;
    if (!ctx->backend->vt->supports(ctx->backend, call)) return NULL;
    wgt_tensor *out = wgt_tensor_alloc(ctx, out_dtype, 2, (int64_t[]){1, N}, op);
    if (!out) return NULL;
    call->outputs[0] = out->view;
    if (wgt_run_kernel(ctx, call) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

static bool refuse_grad(wgt_context *ctx, const char *op, int n, wgt_tensor **args)
{
    if (!wgt_tape_wants(ctx, n, args)) return false;
    wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under wgt_no_grad_push)",
              op);
    return true;
}

wgt_tensor *wgt_attention_linear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *weight,
                                    wgt_tensor *bias, wgt_dtype out_dtype)
{
    const char *op = "wgt_attention_linear_ex";
    wgt_tensor *args[5] = {q, k, v, weight, bias};
    wgt_context *ctx = wgt_op_begin(op, bias ? 5 : 4, args);
    if (!ctx || refuse_grad(ctx, op, bias ? 5 : 4, args)) return NULL;
    const wgt_tensor_view *vw = &weight->view;
    /* f16 weights (the GEMV that stages its vector) into f32 sums */
    if (vw->dtype == WGT_F16 && out_dtype == WGT_F32 && vw->ndim == 2 && one_row(q, k, v, weight, bias, vw->shape[1])) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.matmul.attention = true;
        call.matmul.f16_reduced = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
        call.inputs[1] = wgt_view_transposed(vw); /* weight^T [in, out] */
        call.n_inputs = 2;
        if (bias) call.inputs[call.n_inputs++] = bias->view;
        wgt_tensor *y = fused(ctx, op, &call, q, k, v, causal, vw->shape[0], out_dtype);
        if (y || wgt_context_status(ctx) != WGT_OK) return y;
    }
    return composed(ctx, q, k, v, causal, weight, NULL, 0, bias, out_dtype);
}

wgt_tensor *wgt_attention_qlinear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *qweight,
                                     wgt_tensor *scales, int bits, wgt_tensor *bias)
{
    const char *op = "wgt_attention_qlinear_ex";
    wgt_tensor *args[6] = {q, k, v, qweight, scales, bias};
    wgt_context *ctx = wgt_op_begin(op, bias ? 6 : 5, args);
    if (!ctx || refuse_grad(ctx, op, bias ? 6 : 5, args)) return NULL;
    const wgt_tensor_view *vw = &qweight->view, *vs = &scales->view;
    const int64_t K = q->view.ndim == 4 ? q->view.shape[1] * q->view.shape[3] : -1;
    /* qweight [N, K bits / 32] i32 and scales [N, K / 32] f32 as wgt_qlinear reads them */
    if ((bits == 4 || bits == 8) && vw->dtype == WGT_I32 && vs->dtype == WGT_F32 && vw->ndim == 2 && vs->ndim == 2 &&
        K > 0 && K % 32 == 0 && vw->shape[1] == K * bits / 32 && vs->shape[0] == vw->shape[0] &&
        vs->shape[1] == K / 32 && one_row(q, k, v, qweight, bias, K)) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_QMATMUL;
        call.quant.bits = bits;
        call.quant.attention = true;
        call.quant.bias = bias != NULL;
        call.inputs[1] = *vw;
        call.inputs[2] = *vs;
        call.n_inputs = 3;
        if (bias) call.inputs[call.n_inputs++] = bias->view;
        wgt_tensor *y = fused(ctx, op, &call, q, k, v, causal, vw->shape[0], WGT_F32);
        if (y || wgt_context_status(ctx) != WGT_OK) return y;
    }
    return composed(ctx, q, k, v, causal, qweight, scales, bits, bias, WGT_F32);
}
