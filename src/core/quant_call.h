/*
 * The views of a WGT_KERNEL_QROWS call and the shapes its contract allows
 * (src/core/backend.h), shared by both backends so the two agree on the order
 * and the rule; each adds only what its kernel needs beyond it.
 */
#ifndef WGT_CORE_QUANT_CALL_H
#define WGT_CORE_QUANT_CALL_H

#include "core/backend.h"

/* x (the float rows), codes and scales, whichever direction the call runs */
static inline void wgt_qrows_views(const wgt_kernel_call *call, const wgt_tensor_view **x,
                                   const wgt_tensor_view **codes, const wgt_tensor_view **scales)
{
    const bool deq = call->quant.dequantize;
    *x = deq ? &call->outputs[0] : &call->inputs[0];
    *codes = deq ? &call->inputs[0] : &call->outputs[0];
    *scales = deq ? &call->inputs[1] : &call->outputs[1];
}

/* The contract: inputs and outputs counted, x f32/f16 [.., D] (1-4 dims, D a
 * multiple of 32), codes i32 [.., D/4] and scales f32 [.., D/32] of x's
 * leading shape, unit stride along the last dim of each. */
static inline bool wgt_qrows_call_ok(const wgt_kernel_call *call)
{
    const bool deq = call->quant.dequantize;
    if (call->n_inputs != (deq ? 2 : 1) || call->n_outputs < (deq ? 1 : 2)) return false;
    const wgt_tensor_view *x, *codes, *scales;
    wgt_qrows_views(call, &x, &codes, &scales);
    if ((x->dtype != WGT_F32 && x->dtype != WGT_F16) || codes->dtype != WGT_I32 || scales->dtype != WGT_F32)
        return false;
    const int nd = x->ndim;
    if (nd < 1 || nd > 4 || codes->ndim != nd || scales->ndim != nd) return false;
    const int64_t D = x->shape[nd - 1];
    if (D % 32 != 0 || codes->shape[nd - 1] != D / 4 || scales->shape[nd - 1] != D / 32) return false;
    if ((D > 0 && x->strides[nd - 1] != 1) || codes->strides[nd - 1] != 1 || scales->strides[nd - 1] != 1) return false;
    for (int d = 0; d < nd - 1; d++)
        if (codes->shape[d] != x->shape[d] || scales->shape[d] != x->shape[d]) return false;
    return true;
}

#endif /* WGT_CORE_QUANT_CALL_H */
