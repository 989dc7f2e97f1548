/* Autograd state on tensors: requires_grad, .grad, detach. Grad mode (a
 * context flag the tape reads, and ops switch off) is in core/tape.c; the
 * backward pass itself is in backward.c. */
#include <string.h>

#include "autograd/rules.h"
#include "ops/op_common.h"

wgt_status wgt_tensor_set_requires_grad(wgt_tensor *t, bool requires_grad)
{
    if (!wgt_op_begin("wgt_tensor_set_requires_grad", 1, &t)) return t ? t->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (requires_grad && !wgt_dtype_is_float(t->view.dtype))
        return wgt_error(t->ctx, WGT_ERR_DTYPE, "wgt_tensor_set_requires_grad: only f32 and f16 tensors can require "
                                                "grad, not %s",
                         wgt_dtype_name(t->view.dtype));
    if (t->grad_node)
        return wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT,
                         "wgt_tensor_set_requires_grad: the tensor was made by %s with autograd recording; only "
                         "leaves (tensors not computed from a tensor that requires grad) can be marked; use "
                         "wgt_detach first",
                         wgt_op_name(t->grad_node->op));
    t->requires_grad = requires_grad;
    return WGT_OK;
}

bool wgt_tensor_requires_grad(const wgt_tensor *t) { return t && (t->requires_grad || t->grad_node); }

wgt_tensor *wgt_tensor_grad(const wgt_tensor *t) { return t ? t->grad : NULL; }

wgt_status wgt_tensor_set_grad(wgt_tensor *t, wgt_tensor *g)
{
    if (!t) return WGT_ERR_INVALID_ARGUMENT;
    if (g) {
        wgt_tensor *args[2] = {t, g};
        if (!wgt_op_begin("wgt_tensor_set_grad", 2, args)) return t->ctx->status;
        if (g->view.ndim != t->view.ndim ||
            memcmp(g->view.shape, t->view.shape, sizeof(int64_t) * (size_t)t->view.ndim) != 0) {
            char a[128], b[128];
            return wgt_error(t->ctx, WGT_ERR_SHAPE_MISMATCH, "wgt_tensor_set_grad: gradient %s does not match tensor %s",
                             wgt_shape_string(g->view.ndim, g->view.shape, a, sizeof(a)),
                             wgt_shape_string(t->view.ndim, t->view.shape, b, sizeof(b)));
        }
        /* t owns an alias of g (same storage): g itself stays in the caller's scope */
        g = wgt_tensor_wrap(t->ctx, &g->view);
        if (!g) return t->ctx->status;
        wgt_scope_remove(g);
    }
    wgt_tensor_unref(t->grad);
    t->grad = g;
    return WGT_OK;
}

wgt_status wgt_zero_grad(wgt_tensor *const *tensors, int n)
{
    if (!tensors || n < 0) return WGT_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) continue;
        wgt_tensor_unref(tensors[i]->grad);
        tensors[i]->grad = NULL;
    }
    return WGT_OK;
}

wgt_tensor *wgt_detach(wgt_tensor *t)
{
    if (!wgt_op_begin("wgt_detach", 1, &t)) return NULL;
    return wgt_tensor_wrap(t->ctx, &t->view);
}
