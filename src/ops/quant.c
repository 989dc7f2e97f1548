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

wgt_tensor *wgt_qlinear(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits)
{
    const char *op = "wgt_qlinear";
    wgt_tensor *args[3] = {x, qweight, scales};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx || !bits_ok(ctx, bits, op)) return NULL;
    char xs[160], qs[160], ss[160];
    const int nd = x->view.ndim;
    wgt_shape_string(nd, x->view.shape, xs, sizeof(xs));
    wgt_shape_string(qweight->view.ndim, qweight->view.shape, qs, sizeof(qs));
    wgt_shape_string(scales->view.ndim, scales->view.shape, ss, sizeof(ss));
    if (x->view.dtype != WGT_F32 || qweight->view.dtype != WGT_I32 || scales->view.dtype != WGT_F32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x %s, qweight %s, scales %s (f32, i32, f32 expected)", op,
                  wgt_dtype_name(x->view.dtype), wgt_dtype_name(qweight->view.dtype), wgt_dtype_name(scales->view.dtype));
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
    if (wgt_tape_wants(ctx, 1, &x)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: x %s requires grad; quantized weights are for inference only "
                  "(run under wgt_no_grad_push)", op, xs);
        return NULL;
    }
    int64_t out_shape[WGT_MAX_DIMS];
    memcpy(out_shape, x->view.shape, sizeof(int64_t) * (size_t)nd);
    out_shape[nd - 1] = N;
    wgt_tensor *out = wgt_tensor_alloc(ctx, WGT_F32, nd, out_shape, op);
    const int64_t M = K ? wgt_shape_numel(nd, x->view.shape) / K : 0;
    if (!out || M == 0 || N == 0) return out;
    /* the kernels read x, qweight and scales as rows from offsets that are multiples of 4 */
    wgt_tensor *in[3] = {NULL, NULL, NULL};
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++) {
        in[i] = wgt_contiguous(args[i]);
        if (in[i] && in[i]->view.offset % 4 != 0) {
            wgt_tensor *c = wgt_copy(in[i]);
            wgt_tensor_release(in[i]);
            in[i] = c;
        }
        ok = in[i] != NULL;
    }
    if (ok) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_QMATMUL;
        call.op_name = op;
        call.quant.bits = bits;
        call.n_inputs = 3;
        for (int i = 0; i < 3; i++) call.inputs[i] = in[i]->view;
        call.inputs[0].ndim = 2;
        call.inputs[0].shape[0] = M, call.inputs[0].shape[1] = K;
        call.inputs[0].strides[0] = K, call.inputs[0].strides[1] = 1;
        call.n_outputs = 1;
        call.outputs[0] = out->view;
        call.outputs[0].ndim = 2;
        call.outputs[0].shape[0] = M, call.outputs[0].shape[1] = N;
        call.outputs[0].strides[0] = N, call.outputs[0].strides[1] = 1;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    for (int i = 0; i < 3; i++) wgt_tensor_release(in[i]);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}
