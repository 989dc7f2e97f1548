/*
 * A decode step's attention and its output projection as one op (llama's
 * decode layer, src/models/llama_forward.c):
 *   wgt_attention_linear_ex   q [B, H, Tq, D], k, v [B, Hkv, Tk, D], weight [N, H D] -> [B Tq, N]
 *   wgt_attention_qlinear_ex  the same with wgt_qlinear's 8- or 4-bit weight (f32 out)
 *   wgt_attention_q8_linear_ex, wgt_attention_q8_qlinear_ex
 *                             the same over an 8-bit KV cache (wgt_attention_q8's
 *                             codes [B, Hkv, Tk, D/4] and scales [B, Hkv, Tk, D/32])
 * The values are those of the composition, by definition:
 *   a = wgt_scaled_dot_product_attention(q, k, v, causal, 0, 0)   [B, H, Tq, D], q's dtype
 *       (8-bit cache: wgt_attention_q8(q, k codes, k scales, v codes, v scales, causal))
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

#include "core/checked.h"
#include "core/tape.h"
#include "ops/op_common.h"

/* Keys and values: float k, v, or (q8) an 8-bit cache's codes in k, v and
 * their group scales. */
typedef struct kv_source {
    wgt_tensor *k, *v, *k_scales, *v_scales;
    bool q8;
} kv_source;

/* The composition that defines the op: attention, heads merged, the
 * projection. Its intermediates live in a scope of their own, released here
 * whether or not the caller has one; an error of its calls gets op's name. */
static wgt_tensor *composed(wgt_context *ctx, const char *op, wgt_tensor *q, const kv_source *kv, bool causal,
                            wgt_tensor *weight, wgt_tensor *scales, int bits, wgt_tensor *bias, wgt_dtype out_dtype)
{
    wgt_scope_push(ctx);
    wgt_tensor *y = NULL;
    wgt_tensor *a = kv->q8 ? wgt_attention_q8(q, kv->k, kv->k_scales, kv->v, kv->v_scales, causal)
                           : wgt_scaled_dot_product_attention(q, kv->k, kv->v, causal, 0.0, 0);
    const int64_t *as = a ? a->view.shape : NULL;
    int64_t rows = 0, cols = 0;
    /* [B Tq, H D], checked: an output with no elements may have any other sizes */
    if (a && (!wgt_checked_mul(as[0], as[2], &rows) || !wgt_checked_mul(as[1], as[3], &cols))) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: attention output [%lld, %lld, %lld, %lld]: its heads merged "
                  "[B Tq, H D] overflow int64", op, (long long)as[0], (long long)as[1], (long long)as[2],
                  (long long)as[3]);
        a = NULL;
    }
    if (a) {
        wgt_tensor *merged = wgt_reshape(wgt_permute(a, (int[]){0, 2, 1, 3}), 2, (int64_t[]){rows, cols});
        if (merged && scales) y = wgt_qlinear_ex(merged, weight, scales, bits, &(wgt_qlinear_fusion){.bias = bias});
        else if (merged) y = wgt_linear_ex(merged, weight, bias, out_dtype);
    }
    wgt_scope_keep(y);
    wgt_scope_pop(ctx);
    if (!y) wgt_error_name_op(ctx, op);
    return y;
}

/* t [1, Hkv, Tk, last] of dtype */
static bool cache_shaped(const wgt_tensor *t, wgt_dtype dtype, int64_t Hkv, int64_t Tk, int64_t last)
{
    const wgt_tensor_view *v = &t->view;
    return v->dtype == dtype && v->ndim == 4 && v->shape[0] == 1 && v->shape[1] == Hkv && v->shape[2] == Tk &&
           v->shape[3] == last;
}

/* One query row of a float q against keys and values of its dtype (8-bit:
 * codes and scales of D / 4 and D / 32 a row), shapes the attention accepts,
 * and a weight of H D columns: the fused call's case (supports() decides the
 * rest). */
static bool one_row(const wgt_tensor *q, const kv_source *kv, const wgt_tensor *weight, const wgt_tensor *bias,
                    int64_t columns)
{
    const wgt_tensor_view *vq = &q->view, *vk = &kv->k->view;
    if (vq->ndim != 4 || vk->ndim != 4 || (vq->dtype != WGT_F32 && vq->dtype != WGT_F16)) return false;
    const int64_t *qd = vq->shape, Hkv = vk->shape[1], Tk = vk->shape[2], D = qd[3];
    if (qd[0] != 1 || qd[2] != 1 || qd[1] < 1 || D < 1 || Hkv < 1 || qd[1] % Hkv || Tk < 1) return false;
    const bool kv_ok = kv->q8 ? D % 32 == 0 && cache_shaped(kv->k, WGT_I32, Hkv, Tk, D / 4) &&
                                    cache_shaped(kv->v, WGT_I32, Hkv, Tk, D / 4) &&
                                    cache_shaped(kv->k_scales, WGT_F32, Hkv, Tk, D / 32) &&
                                    cache_shaped(kv->v_scales, WGT_F32, Hkv, Tk, D / 32)
                              : cache_shaped(kv->k, vq->dtype, Hkv, Tk, D) && cache_shaped(kv->v, vq->dtype, Hkv, Tk, D);
    if (!kv_ok) return false;
    if (weight->view.ndim != 2 || columns != qd[1] * D) return false; /* q [1, H, 1, D] exists: H D is its numel */
    const int64_t N = weight->view.shape[0];
    return !bias || (bias->view.ndim == 1 && bias->view.shape[0] == N && bias->view.dtype == WGT_F32);
}

/* The fused call (kind MATMUL or QMATMUL, its attention prologue) if the
 * backend runs it, into a new [1, N]; NULL with no error recorded where it
 * does not (the caller composes). k, v (8-bit: k codes, v codes, k scales,
 * v scales) go last, as backend.h orders them. */
static wgt_tensor *fused(wgt_context *ctx, const char *op, wgt_kernel_call *call, wgt_tensor *q, const kv_source *kv,
                         bool causal, int64_t N, wgt_dtype out_dtype)
{
    call->op_name = op;
    call->attention.scale = 1.0 / sqrt((double)q->view.shape[3]);
    call->attention.causal = causal;
    call->attention.kv_q8 = kv->q8;
    call->inputs[0] = q->view;
    call->inputs[call->n_inputs++] = kv->k->view;
    call->inputs[call->n_inputs++] = kv->v->view;
    if (kv->q8) {
        call->inputs[call->n_inputs++] = kv->k_scales->view;
        call->inputs[call->n_inputs++] = kv->v_scales->view;
    }
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

/* The op's n tensors begin the call (a NULL refused by wgt_op_begin); none
 * may require grad. */
static wgt_context *begin(const char *op, int n, wgt_tensor **args)
{
    wgt_context *ctx = wgt_op_begin(op, n, args);
    if (!ctx || !wgt_tape_wants(ctx, n, args)) return ctx;
    wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under wgt_no_grad_push)",
              op);
    return NULL;
}

/* q, the cache's 2 or 4 tensors, then rest (its last, the bias, left off when NULL): their count */
static int gather_args(wgt_tensor *q, const kv_source *kv, wgt_tensor *const *rest, int n_rest, wgt_tensor **args)
{
    int n = 0;
    args[n++] = q, args[n++] = kv->k, args[n++] = kv->v;
    if (kv->q8) args[n++] = kv->k_scales, args[n++] = kv->v_scales;
    for (int i = 0; i < n_rest; i++) args[n++] = rest[i];
    return rest[n_rest - 1] ? n : n - 1;
}

static wgt_tensor *linear(const char *op, wgt_tensor *q, const kv_source *kv, bool causal, wgt_tensor *weight,
                          wgt_tensor *bias, wgt_dtype out_dtype)
{
    wgt_tensor *args[8];
    wgt_context *ctx = begin(op, gather_args(q, kv, (wgt_tensor *[]){weight, bias}, 2, args), args);
    if (!ctx) return NULL;
    const wgt_tensor_view *vw = &weight->view;
    /* f16 weights (the GEMV that stages its vector) into f32 sums */
    if (vw->dtype == WGT_F16 && out_dtype == WGT_F32 && vw->ndim == 2 && one_row(q, kv, weight, bias, vw->shape[1])) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.matmul.attention = true;
        call.matmul.f16_reduced = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
        call.inputs[1] = wgt_view_transposed(vw); /* weight^T [in, out] */
        call.n_inputs = 2;
        if (bias) call.inputs[call.n_inputs++] = bias->view;
        wgt_tensor *y = fused(ctx, op, &call, q, kv, causal, vw->shape[0], out_dtype);
        if (y || wgt_context_status(ctx) != WGT_OK) return y;
    }
    return composed(ctx, op, q, kv, causal, weight, NULL, 0, bias, out_dtype);
}

static wgt_tensor *qlinear(const char *op, wgt_tensor *q, const kv_source *kv, bool causal, wgt_tensor *qweight,
                           wgt_tensor *scales, int bits, wgt_tensor *bias)
{
    wgt_tensor *args[8];
    wgt_context *ctx = begin(op, gather_args(q, kv, (wgt_tensor *[]){qweight, scales, bias}, 3, args), args);
    if (!ctx) return NULL;
    const wgt_tensor_view *vw = &qweight->view, *vs = &scales->view;
    /* H D, checked: a q with a zero size elsewhere has no elements whatever H
     * and D are (the api_fuzzer's INT64_MAX x 5 under UBSan); -1 refuses */
    int64_t K = -1;
    if (q->view.ndim != 4 || !wgt_checked_mul(q->view.shape[1], q->view.shape[3], &K) || K > WGT_MAX_NUMEL) K = -1;
    /* qweight [N, K bits / 32] i32 and scales [N, K / 32] f32 as wgt_qlinear reads them */
    if ((bits == 4 || bits == 8) && vw->dtype == WGT_I32 && vs->dtype == WGT_F32 && vw->ndim == 2 && vs->ndim == 2 &&
        K > 0 && K % 32 == 0 && vw->shape[1] == K * bits / 32 && vs->shape[0] == vw->shape[0] &&
        vs->shape[1] == K / 32 && one_row(q, kv, qweight, bias, K)) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_QMATMUL;
        call.quant.bits = bits;
        call.quant.attention = true;
        call.quant.bias = bias != NULL;
        call.quant.int8_x = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM; /* as wgt_qlinear_ex's */
        call.inputs[1] = *vw;
        call.inputs[2] = *vs;
        call.n_inputs = 3;
        if (bias) call.inputs[call.n_inputs++] = bias->view;
        wgt_tensor *y = fused(ctx, op, &call, q, kv, causal, vw->shape[0], WGT_F32);
        if (y || wgt_context_status(ctx) != WGT_OK) return y;
    }
    return composed(ctx, op, q, kv, causal, qweight, scales, bits, bias, WGT_F32);
}

wgt_tensor *wgt_attention_linear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *weight,
                                    wgt_tensor *bias, wgt_dtype out_dtype)
{
    return linear("wgt_attention_linear_ex", q, &(kv_source){k, v, NULL, NULL, false}, causal, weight, bias, out_dtype);
}

wgt_tensor *wgt_attention_qlinear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *qweight,
                                     wgt_tensor *scales, int bits, wgt_tensor *bias)
{
    return qlinear("wgt_attention_qlinear_ex", q, &(kv_source){k, v, NULL, NULL, false}, causal, qweight, scales, bits,
                   bias);
}

wgt_tensor *wgt_attention_q8_linear_ex(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                                       wgt_tensor *v_scales, bool causal, wgt_tensor *weight, wgt_tensor *bias,
                                       wgt_dtype out_dtype)
{
    return linear("wgt_attention_q8_linear_ex", q, &(kv_source){k_codes, v_codes, k_scales, v_scales, true}, causal,
                  weight, bias, out_dtype);
}

wgt_tensor *wgt_attention_q8_qlinear_ex(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                                        wgt_tensor *v_scales, bool causal, wgt_tensor *qweight, wgt_tensor *scales,
                                        int bits, wgt_tensor *bias)
{
    return qlinear("wgt_attention_q8_qlinear_ex", q, &(kv_source){k_codes, v_codes, k_scales, v_scales, true}, causal,
                   qweight, scales, bits, bias);
}
