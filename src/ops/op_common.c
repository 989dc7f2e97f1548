/* Argument checks, broadcasting and dtype promotion shared by every op front-end. */
#include <stdlib.h>
#include <string.h>

#include "ops/op_common.h"
#include "core/tape.h"

wgt_context *wgt_op_begin(const char *op, int n, wgt_tensor *const *args)
{
    wgt_context *ctx = NULL;
    for (int i = 0; i < n; i++)
        if (args[i]) {
            ctx = args[i]->ctx;
            break;
        }
    if (!ctx) return NULL; /* nothing to record the error on */
    if (ctx->status != WGT_OK) return NULL;
    for (int i = 0; i < n; i++) {
        if (!args[i]) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: tensor argument %d is NULL", op, i);
            return NULL;
        }
        if (args[i]->ctx != ctx) {
            wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: tensor argument %d belongs to another context", op, i);
            return NULL;
        }
    }
    return ctx;
}

bool wgt_broadcast_shapes(wgt_context *ctx, int n, const wgt_tensor_view *const *views, int *ndim, int64_t *shape,
                          const char *op)
{
    int rank = 0;
    for (int i = 0; i < n; i++)
        if (views[i]->ndim > rank) rank = views[i]->ndim;
    for (int d = 0; d < rank; d++) shape[d] = 1;
    for (int i = 0; i < n; i++) {
        const wgt_tensor_view *v = views[i];
        for (int j = 0; j < v->ndim; j++) {
            int d = rank - v->ndim + j;
            int64_t size = v->shape[j];
            if (size == shape[d] || size == 1) continue;
            if (shape[d] == 1) {
                shape[d] = size;
                continue;
            }
            char msg[512];
            size_t used = 0;
            for (int k = 0; k < n; k++) {
                char buf[160];
                used += (size_t)snprintf(msg + used, sizeof(msg) - used, "%s%s", k ? " and " : "",
                                         wgt_shape_string(views[k]->ndim, views[k]->shape, buf, sizeof(buf)));
                if (used >= sizeof(msg)) break;
            }
            wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: shapes %s do not broadcast (dim %d: %lld vs %lld)", op, msg,
                      d, (long long)shape[d], (long long)size);
            return false;
        }
    }
    *ndim = rank;
    return true;
}

wgt_dtype wgt_promote_dtypes(wgt_dtype a, wgt_dtype b)
{
    static const int rank[WGT_DTYPE_COUNT] = {[WGT_BOOL] = 0, [WGT_U8] = 1, [WGT_I32] = 2, [WGT_F16] = 3,
                                              [WGT_F32] = 4};
    return rank[a] >= rank[b] ? a : b;
}

bool wgt_dtype_is_float(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16; }

wgt_expr_type wgt_expr_type_of(wgt_dtype d) { return wgt_dtype_is_float(d) ? WGT_EXPR_F32 : WGT_EXPR_I32; }

wgt_status wgt_run_elementwise(wgt_context *ctx, const char *op, const wgt_expr *expr, int n_inputs,
                               wgt_tensor *const *inputs, wgt_tensor *out)
{
    if (n_inputs > WGT_MAX_KERNEL_INPUTS)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %d inputs, at most %d", op, n_inputs,
                         WGT_MAX_KERNEL_INPUTS);
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_ELEMENTWISE;
    call.op_name = op;
    call.expr = expr;
    call.n_inputs = n_inputs;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    for (int i = 0; i < n_inputs; i++)
        if (!wgt_broadcast_view(ctx, &inputs[i]->view, out->view.ndim, out->view.shape, &call.inputs[i], op))
            return ctx->status;
    if (wgt_shape_numel(out->view.ndim, out->view.shape) == 0) return WGT_OK;
    return wgt_run_kernel(ctx, &call);
}

/* ------------------------------------------------------------ autograd */

wgt_grad_node *wgt_op_record(wgt_tensor **out, wgt_op op, int n_inputs, wgt_tensor *const *inputs)
{
    wgt_tensor *t = *out;
    if (!t || !wgt_tape_wants(t->ctx, n_inputs, inputs) || !wgt_dtype_is_float(t->view.dtype)) return NULL;
    wgt_grad_node *node = wgt_tape_record(t, op, n_inputs, inputs);
    if (!node) {
        wgt_tensor_release(t);
        *out = NULL;
    }
    return node;
}

static void free_owned_expr(void *p) { free(p); }

wgt_grad_node *wgt_op_record_expr(wgt_tensor **out, wgt_op op, int n_inputs, wgt_tensor *const *inputs,
                                  const wgt_expr *expr)
{
    wgt_grad_node *node = wgt_op_record(out, op, n_inputs, inputs);
    if (!node) return NULL;
    wgt_expr *copy = malloc(sizeof(*copy));
    if (!copy) {
        wgt_error((*out)->ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory recording the autograd node",
                  wgt_op_name(op));
        wgt_tensor_release(*out);
        *out = NULL;
        return NULL;
    }
    *copy = *expr;
    node->owned = copy;
    node->free_owned = free_owned_expr;
    wgt_tape_drop_unread_expr_inputs(node, copy);
    return node;
}

bool wgt_op_check_inplace(wgt_context *ctx, const wgt_tensor *dst, const char *op)
{
    if (ctx->no_grad_depth > 0 || (!dst->requires_grad && !dst->grad_node)) return true;
    wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
              "%s: the destination is on the autograd tape (it requires grad or was computed from a tensor that "
              "does); in-place writes would corrupt its gradient: write under wgt_no_grad_push or into a copy",
              op);
    return false;
}

/* in viewed as shape (numpy broadcasting: size-1 and missing axes get stride
 * 0); here, beside the dispatch that broadcasts every input, not in views.c,
 * so the op plumbing does not call up into the view ops. */
bool wgt_broadcast_view(wgt_context *ctx, const wgt_tensor_view *in, int ndim, const int64_t *shape, wgt_tensor_view *out,
                        const char *op)
{
    if (in->ndim > ndim) goto mismatch;
    *out = *in;
    out->ndim = ndim;
    for (int i = ndim - 1, j = in->ndim - 1; i >= 0; i--, j--) {
        int64_t size = j >= 0 ? in->shape[j] : 1;
        int64_t stride = j >= 0 ? in->strides[j] : 0;
        if (size == shape[i]) {
            out->strides[i] = shape[i] == 1 ? 0 : stride;
        } else if (size == 1) {
            out->strides[i] = 0;
        } else {
            goto mismatch;
        }
        out->shape[i] = shape[i];
    }
    return true;
mismatch : {
    char a[160], b[160];
    wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: cannot broadcast %s to %s", op,
              wgt_shape_string(in->ndim, in->shape, a, sizeof(a)), wgt_shape_string(ndim, shape, b, sizeof(b)));
    return false;
}
}

bool wgt_op_check_rope_into(wgt_context *ctx, const char *op, wgt_tensor *dst, wgt_tensor *table, int64_t N,
                            int64_t pass_begin, int64_t pass_end, wgt_tensor *const *inputs, int n_inputs)
{
    const wgt_tensor_view *vt = &table->view;
    char ts[160], ds[160];
    wgt_shape_string(vt->ndim, vt->shape, ts, sizeof(ts));
    wgt_shape_string(dst->view.ndim, dst->view.shape, ds, sizeof(ds));
    if (!wgt_op_check_inplace(ctx, dst, op)) return false;
    if (dst->view.dtype != WGT_F32 && dst->view.dtype != WGT_F16) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dst %s: need f32 or f16", op, wgt_dtype_name(dst->view.dtype));
        return false;
    }
    if ((vt->dtype != WGT_F32 && vt->dtype != WGT_F16) || vt->ndim != 2 || vt->shape[0] != 4 || vt->shape[1] < 1 ||
        vt->strides[1] != 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: table %s %s: need f32 or f16 [4, D/2] with unit row stride", op,
                  wgt_dtype_name(vt->dtype), ts);
        return false;
    }
    const int64_t D = 2 * vt->shape[1], heads = N / D;
    if (N % D != 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %lld output rows and table %s: not whole heads of %lld", op,
                  (long long)N, ts, (long long)D);
        return false;
    }
    if (pass_begin < 0 || pass_begin > pass_end || pass_end > heads) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: pass range [%lld, %lld) outside the %lld heads", op,
                  (long long)pass_begin, (long long)pass_end, (long long)heads);
        return false;
    }
    if (wgt_shape_numel(dst->view.ndim, dst->view.shape) != N || !wgt_view_is_contiguous(&dst->view)) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: dst %s: need %lld contiguous elements", op, ds, (long long)N);
        return false;
    }
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i]->view.storage == dst->view.storage) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: dst shares an input's storage", op);
            return false;
        }
    return true;
}

wgt_tensor_view wgt_view_transposed(const wgt_tensor_view *v)
{
    wgt_tensor_view t = *v;
    t.shape[0] = v->shape[1], t.shape[1] = v->shape[0];
    t.strides[0] = v->strides[1], t.strides[1] = v->strides[0];
    return t;
}
