/*
 * ATTENTION forward for decoding: a few query rows against a long K/V cache,
 * split over the keys ("flash decoding").
 *
 *   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out [B, H, Tq, D], lse f32 [B, H, Tq]
 *
 * Two dispatches (src/webgpu/kernels/):
 *   attention_decode          one workgroup per (b, kv head, block of <= 4 query
 *                             rows of its grouped heads, chunk of 64 keys):
 *                             partial max, sum and p V of the chunk
 *   attention_decode_combine  merges the chunks per row into out and lse
 *                             (past DECODE_SPLIT_CHUNKS chunks a row:
 *                             attention_decode_combine_split, a workgroup a row)
 * Why: with Tq = 1 the general forward kernel (webgpu_attention.c) has B H
 * workgroups that each walk all Tk keys alone, and f16 inputs first go through
 * f32 copies of the whole cache (5 dispatches): on an H100 in `wgt generate`
 * (Llama-3.2-1B shape, ~560 keys) that was 38 us per layer, 6.5 GB/s. Here
 * the keys are spread over ceil(Tk / 64) chunks, the grouped-query heads of a
 * kv head share its K/V reads, and f16 q, k, v and out are read and written as
 * they are (unpack2x16float: no shader-f16 needed).
 *
 * 8-bit k and v (5 inputs, wgt_attention_q8: codes and group scales) take
 * only this kernel (Tq <= 4, D % 32 == 0): a key row is D + D/8 bytes, against
 * 2 D for an f16 cache.
 * Taken for Tq <= 4 (f32: and Tk >= DECODE_MIN_KEYS), no dropout, D % 8 == 0 and
 * D <= 256, k and v with unit d stride and rows on 16-byte words, out (and lse)
 * contiguous. WGT_DECODE_ATTN=0 turns it off (the general kernels run),
 * =1 takes it for any Tk (tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#define DECODE_MAX_TQ 4
#define DECODE_MIN_KEYS 128   /* f32, below: one workgroup per (b, h) walks few keys anyway */
#define DECODE_CHUNK 64       /* CH of attention_decode.wgsl */
#define DECODE_ROWS 4         /* R of attention_decode.wgsl */
#define DECODE_PREFETCH_WORDS 32 /* 16-byte words an invocation may load up front (128 registers) */
/* Rows of more chunks than this are merged by attention_decode_combine_split
 * (its sums in another order; a projection's GEMV never folds those, see
 * webgpu_attention_prologue_keys_ok). WGT_DECODE_COMBINE_SPLIT=0: never. */
#define DECODE_SPLIT_CHUNKS 32

/* Mirrors struct Params of attention_decode.wgsl and attention_decode_combine_common.wgsl. */
typedef struct decode_params {
    uint32_t B, H, Hkv, group;
    uint32_t Tq, Tk, D, causal;
    uint32_t q_st[4], k_st[4], v_st[4];
    uint32_t q_off, k_off, v_off, out_off;
    uint32_t o_off, ml_off, lse_off, chunks;
    float scale_log2;
    uint32_t hb, hblocks, rows;
    uint32_t ks_st[4], vs_st[4]; /* 8-bit k, v: their scales' strides b, h, t and offset */
} decode_params;

/* Highest element index + 1 of v (its strides are non-negative). */
static int64_t view_end(const wgt_tensor_view *v)
{
    int64_t end = v->offset + 1;
    for (int d = 0; d < v->ndim; d++) {
        if (v->strides[d] < 0) return INT64_MAX;
        end += (v->shape[d] - 1) * v->strides[d];
    }
    return end;
}

/* k or v as attention_decode reads it: 8-element groups as 16-byte words
 * (f16: 8 halves per word, so every row start a multiple of 8; f32: two
 * words, multiples of 4) along a unit d stride. */
static bool kv_readable(const wgt_tensor_view *x)
{
    int64_t align = x->dtype == WGT_F16 ? 8 : 4;
    if (x->strides[3] != 1 || x->offset % align) return false;
    for (int d = 0; d < 3; d++)
        if (x->shape[d] > 1 && x->strides[d] % align) return false;
    return view_end(x) < (int64_t)UINT32_MAX;
}

/* 8-bit k or v codes [B, Hkv, Tk, D/4] (i32) and scales [B, Hkv, Tk, D/32]:
 * code rows on 16-byte words (offsets and strides multiples of 4 words), and
 * every index below 2^32 counted in codes (4 a word) */
static bool q8_readable(const wgt_tensor_view *codes, const wgt_tensor_view *scales, int64_t D)
{
    if (codes->dtype != WGT_I32 || scales->dtype != WGT_F32 || codes->ndim != 4 || scales->ndim != 4 ||
        codes->shape[3] * 4 != D || scales->shape[3] * 32 != D || codes->strides[3] != 1 || scales->strides[3] != 1 ||
        codes->offset % 4)
        return false;
    for (int d = 0; d < 3; d++)
        if ((codes->shape[d] > 1 && codes->strides[d] % 4) || scales->shape[d] != codes->shape[d]) return false;
    return view_end(codes) < (int64_t)UINT32_MAX / 4 && view_end(scales) < (int64_t)UINT32_MAX;
}

bool webgpu_attention_decode_wanted(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->kind == WGT_KERNEL_ATTENTION && call->n_inputs == 5) { /* 8-bit k, v: this kernel or none */
        const wgt_tensor_view *q = &call->inputs[0], *out = &call->outputs[0], *lse = &call->outputs[1];
        const int64_t D = q->shape[3];
        return call->n_outputs == 2 && q->shape[2] >= 1 && q->shape[2] <= DECODE_MAX_TQ && D % 32 == 0 &&
               D <= 256 && call->attention.dropout_p == 0.0 && (q->dtype == WGT_F16 || q->dtype == WGT_F32) &&
               out->dtype == q->dtype && q8_readable(&call->inputs[1], &call->inputs[3], D) &&
               q8_readable(&call->inputs[2], &call->inputs[4], D) && view_end(q) < (int64_t)UINT32_MAX &&
               wgt_view_is_contiguous(out) && wgt_view_is_contiguous(lse) && lse->dtype == WGT_F32 &&
               !(out->dtype == WGT_F16 && out->offset % 2) && view_end(out) < (int64_t)UINT32_MAX &&
               view_end(lse) < (int64_t)UINT32_MAX;
    }
    if (wg->knobs.decode_attn == WEBGPU_DECODE_ATTN_OFF) return false;
    bool forced = wg->knobs.decode_attn == WEBGPU_DECODE_ATTN_FORCED;
    if (call->kind != WGT_KERNEL_ATTENTION || call->n_inputs != 3 || call->n_outputs != 2) return false;
    const wgt_tensor_view *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    const wgt_tensor_view *out = &call->outputs[0], *lse = &call->outputs[1];
    int64_t Tq = q->shape[2], Tk = k->shape[2], D = q->shape[3];
    /* f16 inputs: always (the general kernels first copy q, k, v to f32 and
     * convert out back: 5 dispatches); f32: once the keys are many */
    bool any_f16 = q->dtype == WGT_F16 || k->dtype == WGT_F16;
    if (Tq < 1 || Tq > DECODE_MAX_TQ || (!forced && !any_f16 && Tk < DECODE_MIN_KEYS)) return false;
    if (call->attention.dropout_p != 0.0 || D % 8 != 0 || D > 256) return false;
    if (k->dtype != v->dtype || (k->dtype != WGT_F16 && k->dtype != WGT_F32)) return false;
    if ((q->dtype != WGT_F16 && q->dtype != WGT_F32) || (out->dtype != WGT_F16 && out->dtype != WGT_F32)) return false;
    if (!kv_readable(k) || !kv_readable(v) || view_end(q) >= (int64_t)UINT32_MAX) return false;
    if (!wgt_view_is_contiguous(out) || !wgt_view_is_contiguous(lse) || lse->dtype != WGT_F32) return false;
    if (out->dtype == WGT_F16 && out->offset % 2) return false;
    return view_end(out) < (int64_t)UINT32_MAX && view_end(lse) < (int64_t)UINT32_MAX;
}

/* The pipeline of files (the kernel last, its name the cache key's) with consts. */
static wgt_status get_pipeline(webgpu_backend *wg, const char *const *files, int n_files, const char *consts,
                               int n_read_only, int n_read_write, const char *op, webgpu_pipeline **out)
{
    char key[400]; /* file name, ":" and consts (under 300) */
    snprintf(key, sizeof(key), "%s:%s", files[n_files - 1], consts);
    /* unchecked: both kernels bound their reads (j < Tk, whole rows of D) */
    return webgpu_pipeline_assemble(wg, key, consts, files, n_files, n_read_only, n_read_write, false, op, out);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool webgpu_attention_decode_splits(const webgpu_backend *wg, int64_t keys)
{
    return ceil_div(keys, DECODE_CHUNK) > DECODE_SPLIT_CHUNKS && wg->knobs.decode_combine_split;
}

/* The first pass's parameters, pipeline and temporaries, and its dispatch;
 * *combine (if not NULL) gets the combine pass's pipeline, *params the
 * parameters both passes read. */
static wgt_status first_pass(webgpu_backend *wg, const wgt_kernel_call *call, webgpu_decode_partials *dp,
                             webgpu_pipeline **combine, decode_params *params)
{
    const char *op = call->op_name;
    const wgt_tensor_view *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    const wgt_tensor_view *out = &call->outputs[0], *lse = &call->outputs[1];
    const bool q8 = call->n_inputs == 5;
    /* 8-bit: the codes' strides and offsets in codes (4 a word), as the kernel counts elements */
    const int64_t unit = q8 ? 4 : 1;
    decode_params p;
    memset(&p, 0, sizeof(p));
    p.B = (uint32_t)q->shape[0];
    p.H = (uint32_t)q->shape[1];
    p.Tq = (uint32_t)q->shape[2];
    p.D = (uint32_t)q->shape[3];
    p.Hkv = (uint32_t)k->shape[1];
    const wgt_tensor_view *ksc = q8 ? &call->inputs[3] : NULL, *vsc = q8 ? &call->inputs[4] : NULL;
    for (int d = 0; q8 && d < 3; d++) {
        p.ks_st[d] = (uint32_t)ksc->strides[d];
        p.vs_st[d] = (uint32_t)vsc->strides[d];
    }
    if (q8) p.ks_st[3] = (uint32_t)ksc->offset, p.vs_st[3] = (uint32_t)vsc->offset;
    p.Tk = (uint32_t)k->shape[2];
    p.group = p.H / p.Hkv;
    p.causal = call->attention.causal;
    for (int d = 0; d < 4; d++) {
        p.q_st[d] = (uint32_t)q->strides[d];
        p.k_st[d] = (uint32_t)(k->strides[d] * unit);
        p.v_st[d] = (uint32_t)(v->strides[d] * unit);
    }
    p.q_off = (uint32_t)q->offset;
    p.k_off = (uint32_t)(k->offset * unit);
    p.v_off = (uint32_t)(v->offset * unit);
    p.out_off = (uint32_t)out->offset;
    p.lse_off = (uint32_t)lse->offset;
    p.scale_log2 = (float)(call->attention.scale * 1.4426950408889634);
    /* rows per workgroup: as many grouped heads x queries as fit in 4 */
    p.hb = DECODE_ROWS / p.Tq < p.group ? DECODE_ROWS / p.Tq : p.group;
    p.hblocks = (uint32_t)ceil_div(p.group, p.hb);
    p.rows = p.hb * p.Tq;
    p.chunks = (uint32_t)ceil_div(p.Tk, DECODE_CHUNK);
    uint64_t rows = (uint64_t)p.B * p.H * p.Tq, slots = rows * p.chunks;
    if (slots * p.D >= UINT32_MAX / 2)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %llu partial sums exceed 2^31", op,
                         (unsigned long long)(slots * p.D));

    /* PREFETCH: an invocation's K words (D8 W8) and V words (the keys of its
     * slice, W8 each) loaded before anything else, when they fit in
     * DECODE_PREFETCH_WORDS registers of 16 bytes (D <= 128 f16, 64 f32) */
    const unsigned w8 = k->dtype == WGT_F32 ? 2 : 1, d8 = p.D / 8, slices = DECODE_CHUNK / d8;
    const unsigned kws = d8 * w8, vws = (DECODE_CHUNK + slices - 1) / slices * w8;
    const bool prefetch = kws + vws <= DECODE_PREFETCH_WORDS;
    char consts[300];
    snprintf(consts, sizeof(consts),
             "const D8: u32 = %uu;\nconst KV_F16: bool = %s;\nconst KV_Q8: bool = %s;\nconst Q_F16: bool = %s;\n"
             "const W8: u32 = %uu;\nconst PREFETCH: bool = %s;\nconst KWS: u32 = %uu;\nconst VWS: u32 = %uu;\n",
             p.D / 8, k->dtype == WGT_F16 ? "true" : "false", q8 ? "true" : "false", q->dtype == WGT_F16 ? "true" : "false", w8,
             prefetch ? "true" : "false", prefetch ? kws : 1, prefetch ? vws : 1);
    webgpu_pipeline *first;
    /* the first pass takes quant_codes' bytes4 for 8-bit k and v */
    static const char *const first_files[2] = {"quant_codes", "attention_decode"};
    const bool split = webgpu_attention_decode_splits(wg, p.Tk);
    const char *const combine_files[2] = {"attention_decode_combine_common",
                                          split ? "attention_decode_combine_split" : "attention_decode_combine"};
    wgt_status s = get_pipeline(wg, first_files, 2, consts, 5, 2, op, &first);
    if (s != WGT_OK) return s;
    snprintf(consts, sizeof(consts), "const OUT_F16: bool = %s;\n", out->dtype == WGT_F16 ? "true" : "false");
    if (combine && (s = get_pipeline(wg, combine_files, 2, consts, 2, 2, op, combine)) != WGT_OK) return s;

    /* partials: o [rows, chunks, D] f32, (m, l) [rows, chunks] as f32 pairs */
    s = webgpu_temp_alloc(wg, WGT_F32, 1, (int64_t[]){(int64_t)(slots * p.D)}, &dp->part_o);
    if (s != WGT_OK) return s;
    s = webgpu_temp_alloc(wg, WGT_F32, 1, (int64_t[]){(int64_t)(2 * slots)}, &dp->part_ml);
    /* fresh temporaries start at element 0; the kernels index them in vec4 / vec2 units */
    if (s == WGT_OK && (dp->part_o.offset % 4 || dp->part_ml.offset % 2))
        s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: unaligned temporaries", op);
    p.o_off = dp->o_off = (uint32_t)(dp->part_o.offset / 4);
    p.ml_off = dp->ml_off = (uint32_t)(dp->part_ml.offset / 2);
    dp->chunks = p.chunks;
    dp->D = p.D;
    dp->split = split;
    uint32_t gx, gy;
    if (s == WGT_OK) s = webgpu_grid(wg, (uint64_t)p.B * p.Hkv * p.hblocks * p.chunks, &gx, &gy, op);
    if (s == WGT_OK) {
        /* without 8-bit k, v the scale bindings repeat k and v (read-only, never read) */
        WGPUBuffer b[7] = {webgpu_view_buffer(q), webgpu_view_buffer(k), webgpu_view_buffer(v),
                           webgpu_view_buffer(q8 ? ksc : k), webgpu_view_buffer(q8 ? vsc : v),
                           webgpu_view_buffer(&dp->part_o), webgpu_view_buffer(&dp->part_ml)};
        s = webgpu_dispatch(wg, first, b, 7, &p, sizeof(p), gx, gy, 1, op);
    }
    *params = p;
    return s;
}

void webgpu_decode_partials_release(webgpu_backend *wg, webgpu_decode_partials *dp)
{
    if (dp->part_o.storage) webgpu_temp_release(wg, &dp->part_o);
    if (dp->part_ml.storage) webgpu_temp_release(wg, &dp->part_ml);
    memset(dp, 0, sizeof(*dp));
}

wgt_status webgpu_attention_decode_partials(webgpu_backend *wg, const wgt_kernel_call *call, webgpu_decode_partials *dp)
{
    memset(dp, 0, sizeof(*dp));
    decode_params p;
    memset(&p, 0, sizeof(p));
    return first_pass(wg, call, dp, NULL, &p);
}

wgt_status webgpu_attention_decode_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *out = &call->outputs[0], *lse = &call->outputs[1];
    webgpu_decode_partials dp;
    memset(&dp, 0, sizeof(dp));
    webgpu_pipeline *combine = NULL;
    decode_params p;
    memset(&p, 0, sizeof(p)); /* first_pass sets it once its checks pass */
    wgt_status s = first_pass(wg, call, &dp, &combine, &p);
    const uint64_t rows = (uint64_t)p.B * p.H * p.Tq;
    uint32_t gx, gy;
    if (s == WGT_OK)
        s = webgpu_grid(wg, dp.split ? rows : (uint64_t)ceil_div((int64_t)(rows * (p.D / 2)), 256), &gx, &gy,
                        call->op_name);
    if (s == WGT_OK) {
        WGPUBuffer b[4] = {webgpu_view_buffer(&dp.part_o), webgpu_view_buffer(&dp.part_ml), webgpu_view_buffer(out),
                           webgpu_view_buffer(lse)};
        s = webgpu_dispatch(wg, combine, b, 4, &p, sizeof(p), gx, gy, 1, call->op_name);
    }
    webgpu_decode_partials_release(wg, &dp);
    return s;
}
