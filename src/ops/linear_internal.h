/*
 * The linear family's kernel calls that backward rules run (src/autograd
 * uses them; not public API).
 */
#ifndef WGT_OPS_LINEAR_INTERNAL_H
#define WGT_OPS_LINEAR_INTERNAL_H

#include "wgtensor.h"

/* wgt_gelu_linear's gradient with respect to h: dh = (dy @ weight) * gelu'(h)
 *   dy [..., out], weight [out, in], h [..., in] -> dh [..., in] f32
 * One MATMUL with the GELU-gradient epilogue (backend.h) when all three are
 * f32 and the leading dims of dy and h fold into rows; else the product and
 * the elementwise WGT_GELU_GRAD_EXPR. Never recorded (rules run under no-grad
 * unless a second derivative is asked for, which this op does not have). */
wgt_tensor *wgt_gelu_linear_input_grad(wgt_tensor *dy, wgt_tensor *weight, wgt_tensor *h);

#endif /* WGT_OPS_LINEAR_INTERNAL_H */
