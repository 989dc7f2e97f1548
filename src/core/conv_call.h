/*
 * Inputs and outputs of each WGT_KERNEL_CONV kernel (contracts in
 * src/core/backend.h), shared by the front-end and both backends so the three
 * agree on the order.
 */
#ifndef WGT_CORE_CONV_CALL_H
#define WGT_CORE_CONV_CALL_H

#include "core/backend.h"

static inline int wgt_conv_call_inputs(const wgt_kernel_call *call)
{
    switch (call->conv.kernel) {
    case WGT_CONV_FORWARD: return 2 + (call->conv.has_bias ? 1 : 0);  /* x, w, bias */
    case WGT_CONV_BACKWARD_INPUT: return 2;                            /* dy, w */
    case WGT_CONV_BACKWARD_WEIGHT: return 2;                           /* x, dy */
    case WGT_POOL_FORWARD: return 1;                                   /* x */
    case WGT_POOL_BACKWARD: return call->conv.pool_mode == WGT_POOL_MAX ? 2 : 1; /* dy, argmax */
    case WGT_BATCH_NORM_FORWARD: /* x, w, b, (mean, var) */
        return 1 + call->conv.has_weight + call->conv.has_bias + (call->conv.training ? 0 : 2);
    case WGT_BATCH_NORM_BACKWARD: return 4 + call->conv.has_weight;   /* x, w, mean, var, dy */
    default: return -1;
    }
}

static inline int wgt_conv_call_outputs(const wgt_kernel_call *call)
{
    switch (call->conv.kernel) {
    case WGT_POOL_FORWARD: return call->conv.pool_mode == WGT_POOL_MAX ? 2 : 1; /* y, argmax */
    case WGT_BATCH_NORM_FORWARD: return call->conv.training ? 3 : 1;            /* y, mean, var */
    case WGT_BATCH_NORM_BACKWARD: return 3;                                     /* dx, dw, db */
    default: return 1;
    }
}

#endif /* WGT_CORE_CONV_CALL_H */
