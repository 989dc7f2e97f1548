/*
 * wgt_sum_squares: sum over tensors of the sum of their squared elements, the
 * squared global norm of gradient clipping (src/nn/grad_clip.c).
 *
 *   tensors[0..n) any shapes, f32 or f16  ->  f32 []
 *
 * The SUM_SQUARES kernel (WGT_KERNEL_NN, contract in src/core/backend.h) takes
 * up to 7 tensors per call and writes one partial per chunk of 8192 elements
 * into one [P] tensor; a REDUCE sums the P partials. 39 GPT gradients are 6
 * kernels and a sum, where a multiply and a sum per tensor and a fused add of
 * the partial norms were 85. Non-contiguous tensors are copied first (a
 * dispatch each; gradients are contiguous); empty ones are skipped. The order
 * of every addition is fixed: the same bits every run.
 *
 * Not differentiable (no rule): a tensor that requires grad while the tape
 * records is an error, so a caller cannot silently lose a gradient path.
 */
#include <string.h>

#include "ops/op_common.h"
#include "core/tape.h"

#define SUM_SQUARES_CHUNK 8192 /* elements per partial: 256 invocations x 32 */

wgt_tensor *wgt_sum_squares(wgt_context *ctx, wgt_tensor *const *tensors, int n)
{
    const char *op = "wgt_sum_squares";
    if (!ctx || ctx->status != WGT_OK) return NULL;
    if (n < 0 || (n > 0 && !tensors)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %d tensors at %p", op, n, (const void *)tensors);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: tensor %d is NULL", op, i);
            return NULL;
        }
        if (tensors[i]->ctx != ctx) {
            wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: tensor %d belongs to another context", op, i);
            return NULL;
        }
        wgt_dtype d = tensors[i]->view.dtype;
        if (d != WGT_F32 && d != WGT_F16) {
            wgt_error(ctx, WGT_ERR_DTYPE, "%s: tensor %d is %s (f32 or f16 expected)", op, i, wgt_dtype_name(d));
            return NULL;
        }
    }
    if (n > 0 && wgt_tape_wants(ctx, n, tensors)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: a tensor requires grad; the op is not differentiable "
                  "(run under wgt_no_grad_push, or pass gradients)", op);
        return NULL;
    }
    int64_t parts = 0;
    for (int i = 0; i < n; i++) {
        int64_t len = wgt_shape_numel(tensors[i]->view.ndim, tensors[i]->view.shape);
        parts += (len + SUM_SQUARES_CHUNK - 1) / SUM_SQUARES_CHUNK;
    }
    if (parts == 0) return wgt_zeros(ctx, WGT_F32, 0, NULL);
    wgt_tensor *partials = wgt_tensor_alloc(ctx, WGT_F32, 1, &parts, op);
    if (!partials) return NULL;
    int64_t written = 0;
    for (int i = 0; i < n && ctx->status == WGT_OK;) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_SUM_SQUARES;
        call.nn.chunk_rows = SUM_SQUARES_CHUNK;
        wgt_tensor *held[WGT_NN_SUM_SQUARES_MAX_INPUTS] = {NULL};
        int64_t call_parts = 0;
        for (; i < n && call.n_inputs < WGT_NN_SUM_SQUARES_MAX_INPUTS; i++) {
            int64_t len = wgt_shape_numel(tensors[i]->view.ndim, tensors[i]->view.shape);
            if (len == 0) continue;
            wgt_tensor *c = wgt_contiguous(tensors[i]);
            if (!c) break;
            held[call.n_inputs] = c;
            wgt_tensor_view *v = &call.inputs[call.n_inputs++];
            *v = c->view;
            v->ndim = 1;
            v->shape[0] = len;
            v->strides[0] = 1;
            call_parts += (len + SUM_SQUARES_CHUNK - 1) / SUM_SQUARES_CHUNK;
        }
        if (call.n_inputs > 0 && ctx->status == WGT_OK) {
            wgt_tensor_view *out = &call.outputs[call.n_outputs++];
            *out = partials->view;
            out->shape[0] = call_parts;
            out->offset += written;
            written += call_parts;
            wgt_run_kernel(ctx, &call);
        }
        for (int k = 0; k < WGT_NN_SUM_SQUARES_MAX_INPUTS; k++) wgt_tensor_release(held[k]);
    }
    /* one partial is the total already: a view, no kernel */
    wgt_tensor *total = ctx->status != WGT_OK ? NULL
                        : parts == 1           ? wgt_reshape(partials, 0, NULL)
                                               : wgt_sum(partials, NULL, 0, false);
    wgt_tensor_release(partials);
    return total;
}
