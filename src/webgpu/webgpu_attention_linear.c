/*
 * MATMUL with the attention prologue on WebGPU (wgt_attention_linear_ex; see
 * backend.h): LLM decode's attention and output projection in two dispatches
 * where they took three. The decode attention's first pass
 * (attention_decode.wgsl, webgpu_attention_decode.c) writes its partial sums
 * over chunks of keys; matmul_gemv_half then merges them into its vector as
 * each workgroup stages it (COMBINE, attention_combine_x.wgsl) instead of a
 * combine dispatch writing the attention's output for the GEMV to read. The
 * merge is the combine kernel's arithmetic, rounded to the attention's dtype,
 * so the product reads the values the two calls pass between them.
 * Why: in Llama-3.2-1B decode on an H200 the combine dispatch cost 4.0-4.6 us
 * a layer (leaving it out, bench/results/h200-2026-11-29k/p1), almost all of it
 * the dispatch boundary: its work is a few KiB. Each of the projection's
 * workgroups rereads the partials (H chunks (D + 2) floats, ~76 KiB at 560
 * keys, from L2) while its weight words, loaded first (PRE), are in flight.
 * Taken where the call is the decode attention's (webgpu_attention_decode_wanted)
 * and the product matmul_gemv_half's, with the row in workgroup memory;
 * supports() says no elsewhere and the op composes the two calls.
 * QMATMUL's attention prologue is in webgpu_quant.c (quant_gemv_rows).
 */
#include <string.h>

#include "webgpu/gemm_shared.h"

int webgpu_attention_prologue_kv(const wgt_kernel_call *call) { return call->attention.kv_q8 ? 4 : 2; }

/* Every workgroup of the projection rereads all the partials (H chunks (D +
 * 2) floats), which grow with the keys while the dispatch saved stays one: on
 * an H200 (Llama-3.2-1B shape, bench/results/h200-2026-11-29l/p1, level 5
 * against 4) f16 weights gained at 512 keys (+1.6%) and lost from 1024 on
 * (-2.8% at 1024, -9.5% at 2048, -28% at 8192); 4-bit weights, whose GEMV
 * has fewer workgroups to reread them, gained up to 2048 (+6.6%) and lost
 * from 4096 (-2.2%, -14% at 8192). Past the bound the op composes; so it
 * does where the composed combine would split (its sums in another order
 * than the fold's), whatever WGT_ATTENTION_FOLD_KEYS says. */
bool webgpu_attention_prologue_keys_ok(const webgpu_backend *wg, const wgt_kernel_call *attn, bool quantized)
{
    const int64_t cap = wg->knobs.attention_fold_keys >= 0 ? wg->knobs.attention_fold_keys : quantized ? 2048 : 768;
    const int64_t keys = attn->inputs[1].shape[2];
    return keys <= cap && !webgpu_attention_decode_splits(wg, keys);
}

void webgpu_attention_prologue_call(const wgt_kernel_call *call, wgt_kernel_call *attn)
{
    memset(attn, 0, sizeof(*attn));
    attn->kind = WGT_KERNEL_ATTENTION;
    attn->op_name = call->op_name;
    attn->attention = call->attention;
    attn->attention.dropout_p = 0.0;
    attn->attention.kv_q8 = false;
    const int kv = webgpu_attention_prologue_kv(call);
    attn->n_inputs = 1 + kv;
    attn->inputs[0] = call->inputs[0];
    for (int i = 0; i < kv; i++) attn->inputs[1 + i] = call->inputs[call->n_inputs - kv + i];
    attn->n_outputs = 2;
    const wgt_tensor_view *q = &call->inputs[0];
    for (int i = 0; i < 2; i++) { /* out [B, H, Tq, D] in q's dtype, lse f32 [B, H, Tq]: contiguous, never written */
        wgt_tensor_view *o = &attn->outputs[i];
        o->storage = q->storage;
        o->dtype = i ? WGT_F32 : q->dtype;
        o->ndim = i ? 3 : 4;
        memcpy(o->shape, q->shape, sizeof(o->shape));
        o->offset = 0;
        wgt_contiguous_strides(o->ndim, o->shape, o->strides);
    }
}

/* The product as matmul_gemv_half would take it, its vector a [1, H D] f32
 * (a placeholder view: *a on part_o's storage once the partials exist, on
 * q's before), b = inputs[1], the bias if any, out; false where it does not. */
static bool plan(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_storage *vec_storage, int64_t vec_offset,
                 wgt_tensor_view *a, matmul_problem *p, gemv_plan *g)
{
    const wgt_tensor_view *q = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    const int64_t K = q->shape[1] * q->shape[3];
    memset(a, 0, sizeof(*a));
    a->storage = (wgt_storage *)vec_storage;
    a->dtype = WGT_F32;
    a->ndim = 2;
    a->shape[0] = 1, a->shape[1] = K;
    a->strides[0] = K, a->strides[1] = 1;
    a->offset = vec_offset;
    const wgt_tensor_view *bias = call->n_inputs == 3 + webgpu_attention_prologue_kv(call) ? &call->inputs[2] : NULL;
    /* (sizes past the kernels' u32s would have matmul_make_problem record an error: supports() must not) */
    if (b->ndim != 2 || b->shape[0] != K || out->ndim != 2 || out->shape[0] != 1 || out->shape[1] != b->shape[1] ||
        (uint64_t)K * 4 + WEBGPU_GEMV_PARTIAL_BYTES > wg->limits.maxComputeWorkgroupStorageSize || K % 8 ||
        (uint64_t)K * (uint64_t)b->shape[1] >= UINT32_MAX / 2)
        return false;
    if (matmul_make_problem(wg, a, b, bias, out, call->op_name, p) != WGT_OK) return false;
    matmul_plan_gemv(wg, p, g);
    return p->M == 1 && p->batches == 1 && !g->mat_is_a && g->half;
}

/* The call's case, all but the product's plan: one query row the decode
 * attention takes, an f16 weight, f32 out, an f32 bias [N] or none. */
static bool call_ok(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *b = &call->inputs[1], *out = &call->outputs[0], *q = &call->inputs[0];
    const int kv = webgpu_attention_prologue_kv(call);
    if ((call->n_inputs != 2 + kv && call->n_inputs != 3 + kv) || call->n_outputs != 1 || call->matmul.norm ||
        call->matmul.swiglu || call->matmul.rope || call->matmul.gelu_grad || b->dtype != WGT_F16 ||
        out->dtype != WGT_F32 || !wg->has_f16 || wg->knobs.matmul_f16_emulate)
        return false;
    if (call->n_inputs == 3 + kv) {
        const wgt_tensor_view *bias = &call->inputs[2];
        if (bias->dtype != WGT_F32 || bias->ndim != 1 || bias->shape[0] != b->shape[1]) return false;
    }
    wgt_kernel_call attn;
    webgpu_attention_prologue_call(call, &attn);
    return q->ndim == 4 && q->shape[0] == 1 && q->shape[2] == 1 &&
           webgpu_attention_prologue_keys_ok(wg, &attn, false) && webgpu_attention_decode_wanted(wg, &attn);
}

bool webgpu_attention_linear_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    wgt_tensor_view a;
    matmul_problem p;
    gemv_plan g;
    return call_ok(wg, call) && plan(wg, call, call->inputs[0].storage, 0, &a, &p, &g);
}

/* The plan is made once, on the partials (fresh temporaries start at element
 * 0, so it is the plan supports() saw on its placeholder). */
wgt_status webgpu_attention_linear_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (!call_ok(wg, call))
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: an attention prologue outside the decode GEMV's case "
                         "(one query row, f16 weight, f32 out)", call->op_name);
    wgt_kernel_call attn;
    webgpu_attention_prologue_call(call, &attn);
    webgpu_decode_partials dp;
    wgt_status s = webgpu_attention_decode_partials(wg, &attn, &dp);
    wgt_tensor_view a;
    matmul_problem p;
    gemv_plan g;
    if (s == WGT_OK && !plan(wg, call, dp.part_o.storage, dp.part_o.offset, &a, &p, &g))
        s = wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: the attention prologue's product does not take "
                      "the decode GEMV", call->op_name);
    if (s == WGT_OK) {
        p.combine = &dp;
        p.combine_f16 = call->inputs[0].dtype == WGT_F16;
        s = matmul_run_gemv_half(wg, &p, g.c, &g.om, &g.ov, false, call->op_name);
    }
    webgpu_decode_partials_release(wg, &dp);
    return s;
}
