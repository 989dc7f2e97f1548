/*
 * Inputs, outputs and shapes of each WGT_KERNEL_NN kernel (contracts in
 * src/core/backend.h), shared by both backends so they agree on the order and
 * refuse a malformed call before reading anything: the WebGPU kernels run
 * without implementation bounds checks, so every extent they index must be
 * right.
 */
#ifndef WGT_CORE_NN_CALL_H
#define WGT_CORE_NN_CALL_H

#include "core/backend.h"

static inline int wgt_nn_call_inputs(const wgt_kernel_call *call)
{
    int w = call->nn.has_weight, b = call->nn.has_bias;
    switch (call->nn.kernel) {
    case WGT_NN_NORM: return 1 + w + b;                   /* x, w, b */
    case WGT_NN_NORM_BACKWARD: return 3 + w;              /* x, w, stats, dy */
    case WGT_NN_NORM_PARAM_GRADS: return 3;               /* x, stats, dy */
    case WGT_NN_CROSS_ENTROPY: return 2;                  /* logits, targets */
    case WGT_NN_CROSS_ENTROPY_BACKWARD: return 4;         /* logits, targets, lse, g */
    case WGT_NN_PARTIALS_SUM: return 1 + b;               /* dw partials, db partials */
    case WGT_NN_DROPOUT_ADD: return 2;                    /* x, h */
    case WGT_NN_DROPOUT_MASKED: return 2;                 /* g, mask */
    case WGT_NN_SUM_SQUARES:                              /* x_0 .. x_{n-1} */
        return call->n_inputs >= 1 && call->n_inputs <= WGT_NN_SUM_SQUARES_MAX_INPUTS ? call->n_inputs : -1;
    default: return -1;
    }
}

static inline int wgt_nn_call_outputs(const wgt_kernel_call *call)
{
    switch (call->nn.kernel) {
    case WGT_NN_NORM: return 2;                                            /* y, stats */
    case WGT_NN_NORM_BACKWARD: return call->nn.chunk_rows > 0 ? 2 + call->nn.has_bias : 1; /* dx, dw, db */
    case WGT_NN_NORM_PARAM_GRADS: return 1 + call->nn.has_bias;            /* dw, db */
    case WGT_NN_CROSS_ENTROPY: return 2;                                   /* loss, lse */
    case WGT_NN_PARTIALS_SUM: return 1 + call->nn.has_bias;                /* dw, db */
    case WGT_NN_SUM_SQUARES: return 1;                                     /* partials */
    case WGT_NN_DROPOUT_ADD: return 2;                                     /* out, mask */
    case WGT_NN_DROPOUT_MASKED: return 1;                                  /* dh */
    default: return 1;                                                     /* dlogits */
    }
}

static inline int64_t wgt_nn_numel(const wgt_tensor_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* Whether every view has the extent the contract gives it: x (or logits) is
 * [R, D]; per-row views hold R (stats 2R) elements; row-shaped views R*D;
 * weight and bias D; partials [P, D] with P >= ceil(R / chunk_rows). */
static inline bool wgt_nn_call_shapes_valid(const wgt_kernel_call *call)
{
    if (wgt_nn_call_inputs(call) != call->n_inputs || call->n_outputs < wgt_nn_call_outputs(call)) return false;
    if (call->nn.accumulate && (call->nn.kernel != WGT_NN_NORM_BACKWARD || call->outputs[0].dtype != WGT_F32))
        return false; /* dx += needs an f32 dx that holds the gradient (no f16 temporary) */
    if (call->nn.kernel == WGT_NN_SUM_SQUARES) { /* 1-D inputs, none empty; P partials */
        int64_t chunk = call->nn.chunk_rows, parts = 0;
        if (chunk <= 0) return false;
        for (int i = 0; i < call->n_inputs; i++) {
            const wgt_tensor_view *v = &call->inputs[i];
            if (v->ndim != 1 || v->shape[0] <= 0) return false;
            parts += (v->shape[0] + chunk - 1) / chunk;
        }
        return call->outputs[0].ndim == 1 && call->outputs[0].shape[0] == parts;
    }
    if (call->nn.kernel == WGT_NN_DROPOUT_ADD || call->nn.kernel == WGT_NN_DROPOUT_MASKED) {
        /* 1-D contiguous f32 views of n elements, the mask i32 [W]; p in (0, 1) */
        bool add = call->nn.kernel == WGT_NN_DROPOUT_ADD;
        const wgt_tensor_view *mask = add ? &call->outputs[1] : &call->inputs[1];
        const wgt_tensor_view *rows[3] = {&call->inputs[0], add ? &call->inputs[1] : &call->outputs[0],
                                          &call->outputs[0]};
        int64_t n = rows[0]->ndim == 1 ? rows[0]->shape[0] : -1;
        if (n < 0 || !(call->nn.dropout_p > 0 && call->nn.dropout_p < 1)) return false;
        for (int i = 0; i < 3; i++)
            if (rows[i]->ndim != 1 || rows[i]->shape[0] != n || rows[i]->strides[0] != 1 || rows[i]->dtype != WGT_F32)
                return false;
        return mask->ndim == 1 && mask->shape[0] == wgt_dropout_mask_words(n) && mask->strides[0] == 1 &&
               mask->dtype == WGT_I32;
    }
    const wgt_tensor_view *x = &call->inputs[0];
    if (x->ndim != 2 || x->shape[0] < 0 || x->shape[1] < 0) return false;
    int64_t rows = x->shape[0], d = x->shape[1], k = 1;
    bool w = call->nn.has_weight, b = call->nn.has_bias;
    const wgt_tensor_view *out = call->outputs;
    bool ok = true;
    switch (call->nn.kernel) {
    case WGT_NN_NORM:
        if (w) ok = ok && wgt_nn_numel(&call->inputs[k++]) == d;
        if (b) ok = ok && wgt_nn_numel(&call->inputs[k++]) == d;
        return ok && wgt_nn_numel(&out[0]) == rows * d && wgt_nn_numel(&out[1]) == 2 * rows;
    case WGT_NN_NORM_BACKWARD:
    case WGT_NN_NORM_PARAM_GRADS: {
        bool backward = call->nn.kernel == WGT_NN_NORM_BACKWARD;
        if (backward && w) ok = ok && wgt_nn_numel(&call->inputs[k++]) == d;
        ok = ok && wgt_nn_numel(&call->inputs[k]) == 2 * rows && wgt_nn_numel(&call->inputs[k + 1]) == rows * d;
        if (backward) ok = ok && wgt_nn_numel(&out[0]) == rows * d;
        int first = backward ? 1 : 0, n = wgt_nn_call_outputs(call);
        for (int i = first; i < n; i++) {
            int64_t chunk = call->nn.chunk_rows;
            ok = ok && chunk > 0 && out[i].ndim == 2 && out[i].shape[1] == d &&
                 out[i].shape[0] >= (rows + chunk - 1) / chunk && out[i].shape[0] == out[first].shape[0];
        }
        return ok;
    }
    case WGT_NN_CROSS_ENTROPY:
        return wgt_nn_numel(&call->inputs[1]) == rows && wgt_nn_numel(&out[0]) == rows && wgt_nn_numel(&out[1]) == rows;
    case WGT_NN_CROSS_ENTROPY_BACKWARD:
        return wgt_nn_numel(&call->inputs[1]) == rows && wgt_nn_numel(&call->inputs[2]) == rows &&
               call->inputs[3].ndim == 1 && call->inputs[3].shape[0] == rows && wgt_nn_numel(&out[0]) == rows * d;
    case WGT_NN_PARTIALS_SUM:
        ok = wgt_nn_numel(&out[0]) == d;
        if (b) ok = ok && call->inputs[1].ndim == 2 && call->inputs[1].shape[0] == rows && call->inputs[1].shape[1] == d &&
                    wgt_nn_numel(&out[1]) == d;
        return ok;
    default:
        return false;
    }
}

#endif /* WGT_CORE_NN_CALL_H */
