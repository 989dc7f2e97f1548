/* wgt_matmul front-end (NumPy matmul semantics).
 *   a [..., M, K] x b [..., K, N] -> [..., M, N], batch dims broadcast
 *   a [K] is a row vector ([1, K], the 1 dropped from the result),
 *   b [K] a column vector ([K, 1], the 1 dropped): matrix-vector products.
 * Operands are passed to the kernel as views, so transposes are never copied. */
#include <string.h>

#include "ops/op_common.h"

wgt_tensor *wgt_matmul(wgt_tensor *a, wgt_tensor *b)
{
    const char *op = "wgt_matmul";
    wgt_tensor *args[2] = {a, b};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    char sa[160], sb[160];
    wgt_tensor_view va = a->view, vb = b->view;
    if (va.ndim == 0 || vb.ndim == 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: operands %s and %s must have at least 1 dim", op,
                  wgt_shape_string(va.ndim, va.shape, sa, sizeof(sa)), wgt_shape_string(vb.ndim, vb.shape, sb, sizeof(sb)));
        return NULL;
    }
    if (va.dtype != vb.dtype) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtypes %s and %s differ (cast one first)", op, wgt_dtype_name(va.dtype),
                  wgt_dtype_name(vb.dtype));
        return NULL;
    }
    if (va.dtype != WGT_F32 && va.dtype != WGT_F16 && va.dtype != WGT_I32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtype %s (f32, f16 and i32 are supported)", op, wgt_dtype_name(va.dtype));
        return NULL;
    }
    bool a_vector = va.ndim == 1, b_vector = vb.ndim == 1;
    if (a_vector) { /* [K] -> [1, K] */
        va.shape[1] = va.shape[0];
        va.strides[1] = va.strides[0];
        va.shape[0] = 1;
        va.strides[0] = 0;
        va.ndim = 2;
    }
    if (b_vector) { /* [K] -> [K, 1] */
        vb.shape[1] = 1;
        vb.strides[1] = 0;
        vb.ndim = 2;
    }
    int64_t M = va.shape[va.ndim - 2], K = va.shape[va.ndim - 1];
    int64_t K2 = vb.shape[vb.ndim - 2], N = vb.shape[vb.ndim - 1];
    if (K != K2) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: inner dims differ: %s x %s (K %lld vs %lld)", op,
                  wgt_shape_string(a->view.ndim, a->view.shape, sa, sizeof(sa)),
                  wgt_shape_string(b->view.ndim, b->view.shape, sb, sizeof(sb)), (long long)K, (long long)K2);
        return NULL;
    }
    /* Broadcast the batch dims. */
    wgt_tensor_view batch_a = va, batch_b = vb;
    batch_a.ndim -= 2;
    batch_b.ndim -= 2;
    const wgt_tensor_view *batches[2] = {&batch_a, &batch_b};
    int batch_ndim;
    int64_t shape[WGT_MAX_DIMS];
    if (!wgt_broadcast_shapes(ctx, 2, batches, &batch_ndim, shape, op)) return NULL;
    if (batch_ndim + 2 > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: result would have more than %d dims", op, WGT_MAX_DIMS);
        return NULL;
    }
    wgt_tensor_view ea, eb;
    shape[batch_ndim] = M;
    shape[batch_ndim + 1] = K;
    if (!wgt_broadcast_view(ctx, &va, batch_ndim + 2, shape, &ea, op)) return NULL;
    shape[batch_ndim] = K;
    shape[batch_ndim + 1] = N;
    if (!wgt_broadcast_view(ctx, &vb, batch_ndim + 2, shape, &eb, op)) return NULL;
    shape[batch_ndim] = M;
    shape[batch_ndim + 1] = N;
    wgt_tensor *out = wgt_tensor_alloc(ctx, va.dtype, batch_ndim + 2, shape, op);
    if (!out) return NULL;
    if (wgt_shape_numel(batch_ndim + 2, shape) > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.op_name = op;
        call.n_inputs = 2;
        call.inputs[0] = ea;
        call.inputs[1] = eb;
        call.n_outputs = 1;
        call.outputs[0] = out->view;
        wgt_status s;
        if (K == 0) s = wgt_fill(out, 0.0); /* an empty sum */
        else s = wgt_run_kernel(ctx, &call);
        if (s != WGT_OK) {
            wgt_tensor_release(out);
            return NULL;
        }
    }
    if (!a_vector && !b_vector) return out;
    /* Drop the dims that the 1-D operands added. */
    int64_t final_shape[WGT_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < batch_ndim; d++) final_shape[n++] = shape[d];
    if (!a_vector) final_shape[n++] = M;
    if (!b_vector) final_shape[n++] = N;
    wgt_tensor *r = wgt_view(out, n, final_shape);
    wgt_tensor_release(out);
    return r;
}
