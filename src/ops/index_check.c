/* Range checks of ids through the GATHER kernel's out-of-range report (issue
 * 8): a silent zero row from one_hot of a bad id is a wrong answer in
 * training, and PyTorch raises. The check costs one small elementwise kernel
 * and one gather of a single broadcast byte per id: no read-back per call. */
#include <string.h>

#include "ops/index_check.h"

wgt_status wgt_check_ids_in_range(wgt_context *ctx, const char *op, wgt_tensor *ids, int64_t n)
{
    int64_t count = wgt_shape_numel(ids->view.ndim, ids->view.shape);
    if (count == 0) return WGT_OK;
    if (n <= 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %lld ids but no class to choose", op, (long long)count);

    /* positions: id for id >= 0; id - n for id < 0, outside GATHER's [-n, n) */
    wgt_expr e;
    wgt_expr_init(&e);
    int id = wgt_expr_input(&e, 0, WGT_EXPR_I32);
    int negative = wgt_expr_binary(&e, WGT_EXPR_LT, id, wgt_expr_const(&e, 0, WGT_EXPR_I32));
    int shifted = wgt_expr_binary(&e, WGT_EXPR_SUB, id, wgt_expr_const(&e, (double)n, WGT_EXPR_I32));
    wgt_expr_where(&e, negative, shifted, id);
    wgt_tensor *positions = wgt_tensor_alloc(ctx, WGT_I32, ids->view.ndim, ids->view.shape, op);
    wgt_tensor *source = wgt_tensor_alloc(ctx, WGT_U8, 0, NULL, op);
    wgt_tensor *sink = wgt_tensor_alloc(ctx, WGT_U8, ids->view.ndim, ids->view.shape, op);
    wgt_status s = positions && source && sink ? wgt_run_elementwise(ctx, op, &e, 1, &ids, positions)
                                                : wgt_context_status(ctx);
    if (s == WGT_OK) s = wgt_fill(source, 0);
    if (s == WGT_OK) {
        /* gather along axis 0 of a [n] view of one byte (stride 0), flattened ids */
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_GATHER;
        call.op_name = op;
        call.n_inputs = 2;
        call.inputs[0] = source->view;
        call.inputs[0].ndim = 1;
        call.inputs[0].shape[0] = n;
        call.inputs[0].strides[0] = 0;
        call.inputs[1] = positions->view;
        call.inputs[1].ndim = 1;
        call.inputs[1].shape[0] = count;
        call.inputs[1].strides[0] = 1;
        call.n_outputs = 1;
        call.outputs[0] = sink->view;
        call.outputs[0].ndim = 1;
        call.outputs[0].shape[0] = count;
        call.outputs[0].strides[0] = 1;
        s = wgt_run_kernel(ctx, &call);
    }
    wgt_tensor_release(positions);
    wgt_tensor_release(source);
    wgt_tensor_release(sink);
    return s;
}
