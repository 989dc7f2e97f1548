/*
 * Quantized inference ops (group-wise 8/4-bit weights, 32 weights per scale):
 *   wgt_quantize_weight   w [N, K] f32/f16 -> qweight i32 [N, K * bits / 32], scales f32 [N, K / 32]
 *   wgt_qlinear           x [..., K] f32, qweight, scales -> [..., N] f32 (kernel QMATMUL)
 * Layout and rounding: wgtensor.h. Quantization runs on the host once, at
 * model load; the kernels dequantize in registers, so no float copy of the
 * weights ever exists on the device. Inference only: no autograd rule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/tape.h"
#include "ops/op_common.h"

#define QGROUP 32

static bool bits_ok(wgt_context *ctx, int bits, const char *op)
{
    if (bits == 8 || bits == 4) return true;
    wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: bits %d (8 or 4)", op, bits);
    return false;
}

/* One row of K weights into codes and K / 32 scales. */
static void quantize_row(const float *w, int64_t K, int bits, uint32_t *codes, float *scales)
{
    const int qmax = bits == 8 ? 127 : 7, qmin = bits == 8 ? -127 : -8;
    const int per_word = 32 / bits;
    memset(codes, 0, (size_t)(K / per_word) * sizeof(uint32_t));
    for (int64_t g = 0; g < K / QGROUP; g++) {
        float amax = 0.0f;
        for (int j = 0; j < QGROUP; j++) amax = fmaxf(amax, fabsf(w[g * QGROUP + j]));
        const float scale = amax / (float)qmax, inv = scale > 0.0f ? 1.0f / scale : 0.0f;
        scales[g] = scale;
        for (int j = 0; j < QGROUP; j++) {
            const int64_t k = g * QGROUP + j;
            long c = lrintf(w[k] * inv);
            c = c < qmin ? qmin : c > qmax ? qmax : c;
            const uint32_t bitsval = bits == 8 ? (uint32_t)(uint8_t)(int8_t)c : (uint32_t)(c + 8);
            codes[k / per_word] |= bitsval << (bits * (k % per_word));
        }
    }
}

wgt_status wgt_quantize_weight(wgt_tensor *w, int bits, wgt_tensor **qweight, wgt_tensor **scales)
{
    const char *op = "wgt_quantize_weight";
    if (qweight) *qweight = NULL;
    if (scales) *scales = NULL;
    wgt_context *ctx = wgt_op_begin(op, 1, &w);
    if (!ctx) return w ? wgt_context_status(w->ctx) : WGT_ERR_INVALID_ARGUMENT;
    char s[160];
    if (!qweight || !scales) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL output pointer", op);
    if (!bits_ok(ctx, bits, op)) return WGT_ERR_INVALID_ARGUMENT;
    if (w->view.ndim != 2 || w->view.shape[1] % QGROUP != 0 || !wgt_dtype_is_float(w->view.dtype))
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: w %s %s must be f32/f16 [N, K] with K a multiple of 32", op,
                         wgt_dtype_name(w->view.dtype), wgt_shape_string(w->view.ndim, w->view.shape, s, sizeof(s)));
    const int64_t N = w->view.shape[0], K = w->view.shape[1];
    /* one row block at a time on the host: a big weight never needs a second full float copy */
    const int64_t block = N < 256 ? (N > 0 ? N : 1) : 256;
    float *rows = malloc((size_t)(block * K) * sizeof(float));
    uint32_t *codes = malloc((size_t)(N * K / (32 / bits) + 1) * sizeof(uint32_t));
    float *sc = malloc((size_t)(N * K / QGROUP + 1) * sizeof(float));
    wgt_status st = rows && codes && sc ? WGT_OK : wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: host buffers for %s", op,
                                                             wgt_shape_string(2, w->view.shape, s, sizeof(s)));
    wgt_no_grad_push(ctx);
    for (int64_t r0 = 0; st == WGT_OK && r0 < N; r0 += block) {
        const int64_t nr = N - r0 < block ? N - r0 : block;
        wgt_scope_push(ctx);
        wgt_tensor *part = wgt_slice(w, 0, r0, r0 + nr, 1);
        if (part && part->view.dtype != WGT_F32) part = wgt_cast(part, WGT_F32);
        st = part ? wgt_tensor_read(part, rows, (size_t)(nr * K) * sizeof(float)) : wgt_context_status(ctx);
        wgt_scope_pop(ctx);
        for (int64_t r = 0; st == WGT_OK && r < nr; r++)
            quantize_row(rows + r * K, K, bits, codes + (r0 + r) * (K * bits / 32), sc + (r0 + r) * (K / QGROUP));
    }
    wgt_no_grad_pop(ctx);
    if (st == WGT_OK) {
        *qweight = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){N, K * bits / 32}, codes);
        *scales = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K / QGROUP}, sc);
        if (!*qweight || !*scales) {
            wgt_tensor_release(*qweight), wgt_tensor_release(*scales);
            *qweight = *scales = NULL;
            st = wgt_context_status(ctx);
        }
    }
    free(rows), free(codes), free(sc);
    return st;
}

/* The composition wgt_qlinear_ex stands for, where no fused kernel runs it. */
static wgt_tensor *qlinear_composed(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                                    const wgt_qlinear_fusion *f)
{
    wgt_context *ctx = x->ctx;
    wgt_scope_push(ctx);
    wgt_tensor *h = f->norm_weight ? wgt_rms_norm(x, f->norm_weight, f->norm_eps) : x;
    if (h && h->view.dtype != WGT_F32) h = wgt_cast(h, WGT_F32);
    wgt_tensor *y = wgt_qlinear(h, qweight, scales, bits);
    if (y && f->bias) y = wgt_add(y, f->bias);
    if (y && f->swiglu) {
        const int nd = y->view.ndim;
        const int64_t N = y->view.shape[nd - 1];
        wgt_tensor *in[2] = {wgt_slice(y, nd - 1, 0, N, 2), wgt_slice(y, nd - 1, 1, N, 2)};
        y = in[0] && in[1] ? wgt_fused(ctx, "a / (1 + exp(-a)) * b", in, 2) : NULL;
    }
    y = wgt_scope_keep(y);
    wgt_scope_pop(ctx);
    return y;
}

/* in[i]: args[i] contiguous from an offset that is a multiple of 4 (the
 * kernels read rows as vec4s), a new reference; false when one failed (the
 * ones made are in in[] for the caller to release). */
static bool rows_aligned(wgt_tensor *const *args, int n, wgt_tensor **in)
{
    for (int i = 0; i < n; i++) {
        in[i] = wgt_contiguous(args[i]);
        if (in[i] && in[i]->view.offset % 4 != 0) {
            wgt_tensor *c = wgt_copy(in[i]);
            wgt_tensor_release(in[i]);
            in[i] = c;
        }
        if (!in[i]) return false;
    }
    return true;
}

/* wgt_qlinear (f == NULL) and wgt_qlinear_ex */
static wgt_tensor *qlinear(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                           const wgt_qlinear_fusion *f, const char *op)
{
    /* x, qweight, scales, then the fusion's tensors that are set (the kernel's
     * fourth input, when there is one, is args[3]) */
    wgt_tensor *args[5] = {x, qweight, scales, NULL, NULL};
    int n_args = 3;
    if (f && f->norm_weight) args[n_args++] = f->norm_weight;
    if (f && f->bias) args[n_args++] = f->bias;
    wgt_context *ctx = wgt_op_begin(op, n_args, args);
    if (!ctx || !bits_ok(ctx, bits, op)) return NULL;
    char xs[160], qs[160], ss[160];
    const int nd = x->view.ndim;
    wgt_shape_string(nd, x->view.shape, xs, sizeof(xs));
    wgt_shape_string(qweight->view.ndim, qweight->view.shape, qs, sizeof(qs));
    wgt_shape_string(scales->view.ndim, scales->view.shape, ss, sizeof(ss));
    const bool x_ok = x->view.dtype == WGT_F32 || (f && x->view.dtype == WGT_F16);
    if (!x_ok || qweight->view.dtype != WGT_I32 || scales->view.dtype != WGT_F32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x %s, qweight %s, scales %s (%s, i32, f32 expected)", op,
                  wgt_dtype_name(x->view.dtype), wgt_dtype_name(qweight->view.dtype), wgt_dtype_name(scales->view.dtype),
                  f ? "f32 or f16" : "f32");
        return NULL;
    }
    const int64_t K = nd >= 1 ? x->view.shape[nd - 1] : 0;
    const int64_t N = qweight->view.ndim == 2 ? qweight->view.shape[0] : -1;
    if (nd < 1 || K % QGROUP != 0 || K == 0 || qweight->view.ndim != 2 || qweight->view.shape[1] != K * bits / 32 ||
        scales->view.ndim != 2 || scales->view.shape[0] != N || scales->view.shape[1] != K / QGROUP) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                  "%s: x %s, qweight %s, scales %s at %d bits: x [..., K] with K a positive multiple of 32, qweight "
                  "[N, K * %d / 32], scales [N, K / 32] expected", op, xs, qs, ss, bits, bits);
        return NULL;
    }
    if (f) {
        char ns[160] = "none", bs[160] = "none";
        if (f->norm_weight) wgt_shape_string(f->norm_weight->view.ndim, f->norm_weight->view.shape, ns, sizeof(ns));
        if (f->bias) wgt_shape_string(f->bias->view.ndim, f->bias->view.shape, bs, sizeof(bs));
        const wgt_tensor_view *nw = f->norm_weight ? &f->norm_weight->view : NULL, *b = f->bias ? &f->bias->view : NULL;
        if ((nw && (nw->dtype != WGT_F32 || nw->ndim != 1 || nw->shape[0] != K)) ||
            (b && (b->dtype != WGT_F32 || b->ndim != 1 || b->shape[0] != N)) || (f->swiglu && N % 2) ||
            (nw && !(f->norm_eps >= 0 && isfinite(f->norm_eps)))) {
            wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                      "%s: x %s, qweight %s: norm weight %s (f32 [K] expected, eps %g >= 0), bias %s (f32 [N]), "
                      "swiglu %s (needs N even)", op, xs, qs, ns, f->norm_eps, bs, f->swiglu ? "on" : "off");
            return NULL;
        }
    }
    if (wgt_tape_wants(ctx, 1, &x)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: x %s requires grad; quantized weights are for inference only "
                  "(run under wgt_no_grad_push)", op, xs);
        return NULL;
    }
    const int64_t M = K ? wgt_shape_numel(nd, x->view.shape) / K : 0;
    /* the fused kernel holds one extra input (norm weight or bias) */
    if (f && (f->norm_weight && f->bias)) return qlinear_composed(x, qweight, scales, bits, f);
    int64_t out_shape[WGT_MAX_DIMS];
    memcpy(out_shape, x->view.shape, sizeof(int64_t) * (size_t)nd);
    out_shape[nd - 1] = f && f->swiglu ? N / 2 : N;
    /* the kernels read x, qweight and scales (and a norm weight or bias) as
     * rows from offsets that are multiples of 4 */
    const int n_in = f && (f->norm_weight || f->bias) ? 4 : 3;
    wgt_tensor *in[4] = {NULL, NULL, NULL, NULL};
    bool ok = rows_aligned(args, n_in, in);
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_QMATMUL;
    call.op_name = op;
    call.quant.bits = bits;
    if (f) {
        call.quant.norm = f->norm_weight != NULL, call.quant.bias = f->bias != NULL;
        call.quant.swiglu = f->swiglu, call.quant.eps = (float)f->norm_eps;
    }
    /* MEDIUM: x (its normalized rows in a fused call) quantized like the weights, any M */
    call.quant.int8_x = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
    call.n_inputs = n_in;
    for (int i = 0; ok && i < n_in; i++) call.inputs[i] = in[i]->view;
    call.inputs[0].ndim = 2;
    call.inputs[0].shape[0] = M, call.inputs[0].shape[1] = K;
    call.inputs[0].strides[0] = K, call.inputs[0].strides[1] = 1;
    call.n_outputs = 1;
    call.outputs[0].dtype = WGT_F32;
    call.outputs[0].ndim = 2;
    call.outputs[0].shape[0] = M, call.outputs[0].shape[1] = out_shape[nd - 1];
    call.outputs[0].strides[0] = out_shape[nd - 1], call.outputs[0].strides[1] = 1;
    /* a fused call the backend cannot run (the CPU's always can; WebGPU's
     * only for one row whose x fits its workgroup memory) is the composition */
    if (ok && f && (f->norm_weight || f->bias || f->swiglu || x->view.dtype != WGT_F32) &&
        !ctx->backend->vt->supports(ctx->backend, &call)) {
        for (int i = 0; i < n_in; i++) wgt_tensor_release(in[i]);
        return qlinear_composed(x, qweight, scales, bits, f);
    }
    wgt_tensor *out = ok ? wgt_tensor_alloc(ctx, WGT_F32, nd, out_shape, op) : NULL;
    if (out && M > 0 && N > 0) {
        call.outputs[0].storage = out->view.storage;
        call.outputs[0].offset = out->view.offset;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    for (int i = 0; i < n_in; i++) wgt_tensor_release(in[i]);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_qlinear(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits)
{
    return qlinear(x, qweight, scales, bits, NULL, "wgt_qlinear");
}

wgt_tensor *wgt_qlinear_ex(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                           const wgt_qlinear_fusion *fusion)
{
    static const wgt_qlinear_fusion none = {0};
    return qlinear(x, qweight, scales, bits, fusion ? fusion : &none, "wgt_qlinear_ex");
}

/* wgt_qlinear_rope_into where the backend has no fused call (WebGPU: an x
 * past its workgroup memory): wgt_qlinear_ex with the norm, then the
 * ELEMENTWISE calls of the rotation (backend.h), into out (dst's view). */
static wgt_status qlinear_rope_composed(wgt_context *ctx, wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales,
                                        int bits, wgt_tensor *norm_weight, double eps, const wgt_tensor_view *table,
                                        int64_t pass_begin, int64_t pass_end, const wgt_tensor_view *out,
                                        const char *op)
{
    wgt_qlinear_fusion f = {.norm_weight = norm_weight, .norm_eps = eps};
    wgt_tensor *y = wgt_qlinear_ex(x, qweight, scales, bits, &f);
    if (!y) return wgt_context_status(ctx);
    wgt_scope_remove(y);
    wgt_expr rot, copy;
    wgt_kernel_call ew[3];
    int n = 0;
    char err[160];
    wgt_status s = WGT_OK;
    if (wgt_rope_rows_elementwise_calls(op, table, pass_begin, pass_end, &y->view, out, &rot, &copy, ew, &n, err,
                                        (int)sizeof(err)))
        s = wgt_error(ctx, WGT_ERR_INTERNAL, "%s: rope expression: %s", op, err);
    for (int i = 0; s == WGT_OK && i < n; i++) s = wgt_run_kernel(ctx, &ew[i]);
    wgt_tensor_release(y);
    return s;
}

/* The quantized form of wgt_rms_norm_linear_rope_into (llama_forward.c's
 * quantized decode): QMATMUL with the norm and the rope epilogue, into dst. */
wgt_status wgt_qlinear_rope_into(wgt_tensor *dst, wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                                 wgt_tensor *norm_weight, double eps, wgt_tensor *table, int64_t pass_begin,
                                 int64_t pass_end)
{
    const char *op = "wgt_qlinear_rope_into";
    wgt_tensor *args[6] = {x, qweight, scales, norm_weight, table, dst};
    if (!dst) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = wgt_op_begin(op, 6, args);
    if (!ctx) return dst->ctx ? dst->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!bits_ok(ctx, bits, op)) return ctx->status;
    if (wgt_tape_wants(ctx, 5, args))
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under "
                         "wgt_no_grad_push)", op);
    const wgt_tensor_view *vx = &x->view, *vq = &qweight->view, *vs = &scales->view, *vg = &norm_weight->view;
    char xs[160], qs[160];
    wgt_shape_string(vx->ndim, vx->shape, xs, sizeof(xs));
    wgt_shape_string(vq->ndim, vq->shape, qs, sizeof(qs));
    const int64_t K = vx->ndim == 2 ? vx->shape[1] : 0, N = vq->ndim == 2 ? vq->shape[0] : 0;
    if (vx->dtype != WGT_F32 || vx->ndim != 2 || vx->shape[0] != 1 || K % QGROUP || K == 0 || vq->dtype != WGT_I32 ||
        vq->ndim != 2 || vq->shape[1] != K * bits / 32 || vs->dtype != WGT_F32 || vs->ndim != 2 || vs->shape[0] != N ||
        vs->shape[1] != K / QGROUP)
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s %s, qweight %s %s at %d bits: need one f32 row [1, K] "
                         "(K a positive multiple of 32), qweight i32 [N, K * %d / 32], scales f32 [N, K / 32]", op,
                         wgt_dtype_name(vx->dtype), xs, wgt_dtype_name(vq->dtype), qs, bits, bits);
    if (vg->dtype != WGT_F32 || vg->ndim != 1 || vg->shape[0] != K)
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: norm weight %s: need f32 [%lld]", op,
                         wgt_dtype_name(vg->dtype), (long long)K);
    if (!(eps >= 0) || !isfinite(eps))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g: need a finite eps >= 0", op, eps);
    if (!wgt_op_check_rope_into(ctx, op, dst, table, N, pass_begin, pass_end, args, 5)) return ctx->status;
    /* the kernels read x, qweight, scales and the norm weight as rows from offsets that are multiples of 4 */
    wgt_tensor *in[4] = {NULL, NULL, NULL, NULL};
    bool ok = rows_aligned(args, 4, in);
    wgt_status s = ok ? WGT_OK : wgt_context_status(ctx);
    if (ok) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_QMATMUL;
        call.op_name = op;
        call.quant.bits = bits;
        call.quant.norm = true;
        call.quant.eps = (float)eps;
        call.quant.rope = true;
        call.quant.rope_pass_begin = pass_begin;
        call.quant.rope_pass_end = pass_end;
        call.quant.int8_x = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
        call.n_inputs = 5;
        for (int i = 0; i < 4; i++) call.inputs[i] = in[i]->view;
        call.inputs[4] = table->view;
        call.n_outputs = 1;
        wgt_tensor_view o = dst->view;
        o.ndim = 2;
        o.shape[0] = 1, o.shape[1] = N;
        o.strides[0] = N, o.strides[1] = 1;
        call.outputs[0] = o;
        if (ctx->backend->vt->supports(ctx->backend, &call)) s = wgt_run_kernel(ctx, &call);
        else s = qlinear_rope_composed(ctx, x, qweight, scales, bits, norm_weight, eps, &table->view, pass_begin,
                                       pass_end, &o, op);
    }
    for (int i = 0; i < 4; i++) wgt_tensor_release(in[i]);
    return s;
}
