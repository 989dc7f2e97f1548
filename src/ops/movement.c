/* Data movement front-ends: concat, stack, split, gather, index_select,
 * scatter_add, embedding, pad, tril/triu, one_hot, topk. Most are compositions
 * of views, wgt_assign and expression programs; gather, scatter_add and topk
 * are kernels of their own. Shapes are given per function. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "ops/op_common.h"
#include "core/tape.h"
#include "ops/index_check.h"

static wgt_kernel_call make_call(wgt_kernel_kind kind, const char *op)
{
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = kind;
    call.op_name = op;
    return call;
}

/* tensors[n] equal but along axis -> out: sizes add up along axis. */
wgt_tensor *wgt_concat(wgt_tensor *const *tensors, int n, int axis)
{
    const char *op = "wgt_concat";
    if (!tensors || n < 1) return NULL; /* no tensor, no context to report on */
    wgt_context *ctx = wgt_op_begin(op, n, tensors);
    if (!ctx) return NULL;
    const wgt_tensor_view *first = &tensors[0]->view;
    if (first->ndim == 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: cannot concatenate scalars (use wgt_stack)", op);
        return NULL;
    }
    if (!wgt_normalize_axis(ctx, &axis, first->ndim, op)) return NULL;
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, first->shape, sizeof(shape));
    shape[axis] = 0;
    wgt_dtype dtype = first->dtype;
    for (int i = 0; i < n; i++) {
        const wgt_tensor_view *v = &tensors[i]->view;
        bool same = v->ndim == first->ndim;
        for (int d = 0; same && d < v->ndim; d++)
            if (d != axis && v->shape[d] != first->shape[d]) same = false;
        if (!same) {
            char a[160], b[160];
            wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: tensor %d has shape %s, tensor 0 has %s (only axis %d may differ)",
                      op, i, wgt_shape_string(v->ndim, v->shape, a, sizeof(a)),
                      wgt_shape_string(first->ndim, first->shape, b, sizeof(b)), axis);
            return NULL;
        }
        if (!wgt_checked_add(shape[axis], v->shape[axis], &shape[axis])) {
            char a[160];
            wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: sizes along axis %d add up past 2^63 at tensor %d (%s)", op,
                      axis, i, wgt_shape_string(v->ndim, v->shape, a, sizeof(a)));
            return NULL;
        }
        dtype = wgt_promote_dtypes(dtype, v->dtype);
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, first->ndim, shape, op);
    if (!out) return NULL;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t size = tensors[i]->view.shape[axis];
        wgt_tensor *part = wgt_slice(out, axis, at, at + size, 1);
        wgt_status s = part ? wgt_assign(part, tensors[i]) : ctx->status;
        wgt_tensor_release(part);
        if (s != WGT_OK) {
            wgt_tensor_release(out);
            return NULL;
        }
        at += size;
    }
    struct wgt_grad_node *node = wgt_op_record(&out, WGT_OP_CONCAT, n, tensors);
    if (node) node->params.ints[0] = axis;
    return out;
}

/* tensors[n] all [...] -> [..., n at axis, ...] */
wgt_tensor *wgt_stack(wgt_tensor *const *tensors, int n, int axis)
{
    const char *op = "wgt_stack";
    if (!tensors || n < 1) return NULL; /* no tensor, no context to report on */
    wgt_context *ctx = wgt_op_begin(op, n, tensors);
    if (!ctx) return NULL;
    int ndim = tensors[0]->view.ndim;
    if (axis < -(ndim + 1) || axis > ndim) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: axis %d out of range for %d dims", op, axis, ndim);
        return NULL;
    }
    if (axis < 0) axis += ndim + 1;
    wgt_tensor **expanded = malloc(sizeof(*expanded) * (size_t)n);
    if (!expanded) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d inputs", op, n);
        return NULL;
    }
    int made = 0;
    wgt_tensor *out = NULL;
    for (; made < n; made++) {
        const wgt_tensor_view *v = &tensors[made]->view;
        if (v->ndim != ndim || memcmp(v->shape, tensors[0]->view.shape, sizeof(int64_t) * (size_t)ndim) != 0) {
            char a[160], b[160];
            wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: tensor %d has shape %s, tensor 0 has %s", op, made,
                      wgt_shape_string(v->ndim, v->shape, a, sizeof(a)),
                      wgt_shape_string(ndim, tensors[0]->view.shape, b, sizeof(b)));
            break;
        }
        expanded[made] = wgt_unsqueeze(tensors[made], axis);
        if (!expanded[made]) break;
    }
    if (made == n) out = wgt_concat(expanded, n, axis);
    for (int i = 0; i < made; i++) wgt_tensor_release(expanded[i]);
    free(expanded);
    return out;
}

/* x split along axis into views of sizes[n] (summing to the axis size). */
wgt_status wgt_split(wgt_tensor *x, int axis, const int64_t *sizes, int n, wgt_tensor **out)
{
    const char *op = "wgt_split";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return x ? x->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!sizes || !out || n < 1)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: sizes/out NULL or n %d < 1", op, n);
    if (x->view.ndim == 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: cannot split a scalar", op);
    if (!wgt_normalize_axis(ctx, &axis, x->view.ndim, op)) return ctx->status;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: sizes[%d] = %lld < 0", op, i, (long long)sizes[i]);
        /* Checked: {INT64_MAX, INT64_MAX, d + 2} would wrap to d and pass. */
        if (!wgt_checked_add(total, sizes[i], &total))
            return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: sizes up to sizes[%d] = %lld add up past 2^63, axis %d has %lld",
                             op, i, (long long)sizes[i], axis, (long long)x->view.shape[axis]);
    }
    if (total != x->view.shape[axis])
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: sizes add up to %lld, axis %d has %lld", op,
                         (long long)total, axis, (long long)x->view.shape[axis]);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i] = wgt_slice(x, axis, at, at + sizes[i], 1);
        if (!out[i]) {
            for (int k = 0; k < i; k++) wgt_tensor_release(out[k]);
            return ctx->status;
        }
        at += sizes[i];
    }
    return WGT_OK;
}

static bool check_index_dtype(wgt_context *ctx, const wgt_tensor *index, const char *op)
{
    if (index->view.dtype == WGT_I32) return true;
    wgt_error(ctx, WGT_ERR_DTYPE, "%s: index dtype %s, expected i32", op, wgt_dtype_name(index->view.dtype));
    return false;
}

/* Runs GATHER of x along axis with an index view shaped like the output. */
static wgt_tensor *gather_view(wgt_context *ctx, wgt_tensor *x, int axis, const wgt_tensor_view *index, const char *op)
{
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, index->ndim, index->shape, op);
    if (!out || wgt_shape_numel(index->ndim, index->shape) == 0) return out;
    wgt_kernel_call call = make_call(WGT_KERNEL_GATHER, op);
    call.n_inputs = 2;
    call.inputs[0] = x->view;
    call.inputs[1] = *index;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    call.axis = axis;
    if (wgt_run_kernel(ctx, &call) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

/* x [...], index i32 (same ndim, index.shape[d] <= x.shape[d] for d != axis) -> [index shape] */
wgt_tensor *wgt_gather(wgt_tensor *x, int axis, wgt_tensor *index)
{
    const char *op = "wgt_gather";
    wgt_tensor *args[2] = {x, index};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !check_index_dtype(ctx, index, op)) return NULL;
    if (x->view.ndim == 0 || !wgt_normalize_axis(ctx, &axis, x->view.ndim, op)) {
        if (x->view.ndim == 0) wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: x is a scalar", op);
        return NULL;
    }
    bool fits = index->view.ndim == x->view.ndim;
    for (int d = 0; fits && d < x->view.ndim; d++)
        if (d != axis && index->view.shape[d] > x->view.shape[d]) fits = false;
    if (!fits) {
        char a[160], b[160];
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: index %s does not fit x %s outside axis %d", op,
                  wgt_shape_string(index->view.ndim, index->view.shape, a, sizeof(a)),
                  wgt_shape_string(x->view.ndim, x->view.shape, b, sizeof(b)), axis);
        return NULL;
    }
    wgt_tensor *out = gather_view(ctx, x, axis, &index->view, op);
    struct wgt_grad_node *node = wgt_op_record(&out, WGT_OP_GATHER, 2, args);
    if (node) node->params.ints[0] = axis;
    return out;
}

/* x [..., D, ...], index i32 [n] -> [..., n, ...] */
wgt_tensor *wgt_index_select(wgt_tensor *x, int axis, wgt_tensor *index)
{
    const char *op = "wgt_index_select";
    wgt_tensor *args[2] = {x, index};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !check_index_dtype(ctx, index, op)) return NULL;
    if (index->view.ndim != 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: index must be 1-D, has %d dims", op, index->view.ndim);
        return NULL;
    }
    if (x->view.ndim == 0 || !wgt_normalize_axis(ctx, &axis, x->view.ndim, op)) {
        if (x->view.ndim == 0) wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: x is a scalar", op);
        return NULL;
    }
    /* The index, broadcast along every other dim (stride 0): no copy. */
    wgt_tensor_view iv = index->view;
    iv.ndim = x->view.ndim;
    for (int d = 0; d < iv.ndim; d++) {
        iv.shape[d] = d == axis ? index->view.shape[0] : x->view.shape[d];
        iv.strides[d] = d == axis ? index->view.strides[0] : 0;
    }
    wgt_tensor *out = gather_view(ctx, x, axis, &iv, op);
    struct wgt_grad_node *node = wgt_op_record(&out, WGT_OP_INDEX_SELECT, 2, args);
    if (node) node->params.ints[0] = axis;
    return out;
}

/* weight [V, D], ids i32 [...] -> [..., D] */
wgt_tensor *wgt_embedding(wgt_tensor *weight, wgt_tensor *ids)
{
    const char *op = "wgt_embedding";
    wgt_tensor *args[2] = {weight, ids};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx || !check_index_dtype(ctx, ids, op)) return NULL;
    if (weight->view.ndim != 2 || ids->view.ndim + 1 > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: weight must be [V, D] (has %d dims), ids at most %d dims", op,
                  weight->view.ndim, WGT_MAX_DIMS - 1);
        return NULL;
    }
    int64_t count = wgt_shape_numel(ids->view.ndim, ids->view.shape);
    int64_t D = weight->view.shape[1];
    /* flat and rows are this call's temporaries: out of the caller's scope
     * before they are released, else a scope pop would release them a second
     * time while the tape nodes of a weight that requires grad still hold them */
    wgt_tensor *flat = wgt_reshape(ids, 1, &count);
    if (!flat) return NULL;
    wgt_scope_remove(flat);
    wgt_tensor *rows = wgt_index_select(weight, 0, flat);
    wgt_tensor_release(flat);
    if (!rows) return NULL;
    wgt_scope_remove(rows);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, ids->view.shape, sizeof(int64_t) * (size_t)ids->view.ndim);
    shape[ids->view.ndim] = D;
    wgt_tensor *out = wgt_view(rows, ids->view.ndim + 1, shape);
    wgt_tensor_release(rows);
    return out;
}

/* Checks scatter_add's arguments (dst gives the dtype and shape) and
 * normalizes *axis; false + error when they do not fit. */
static bool scatter_add_check(wgt_context *ctx, const char *op, wgt_tensor *dst, int *axis, wgt_tensor *index,
                              wgt_tensor *src)
{
    if (!check_index_dtype(ctx, index, op)) return false;
    if (dst->view.dtype != WGT_F32 && dst->view.dtype != WGT_I32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dst dtype %s (f32 and i32 are supported)", op, wgt_dtype_name(dst->view.dtype));
        return false;
    }
    if (src->view.dtype != dst->view.dtype) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: src dtype %s differs from dst dtype %s", op, wgt_dtype_name(src->view.dtype),
                  wgt_dtype_name(dst->view.dtype));
        return false;
    }
    if (dst->view.ndim == 0 || !wgt_normalize_axis(ctx, axis, dst->view.ndim, op)) {
        if (dst->view.ndim == 0) wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: dst is a scalar", op);
        return false;
    }
    bool fits = index->view.ndim == dst->view.ndim && src->view.ndim == dst->view.ndim;
    for (int d = 0; fits && d < dst->view.ndim; d++) {
        if (index->view.shape[d] != src->view.shape[d]) fits = false;
        if (d != *axis && index->view.shape[d] > dst->view.shape[d]) fits = false;
    }
    if (!fits) {
        char a[160], b[160], c[160];
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: index %s and src %s must match and fit dst %s outside axis %d", op,
                  wgt_shape_string(index->view.ndim, index->view.shape, a, sizeof(a)),
                  wgt_shape_string(src->view.ndim, src->view.shape, b, sizeof(b)),
                  wgt_shape_string(dst->view.ndim, dst->view.shape, c, sizeof(c)), *axis);
        return false;
    }
    return true;
}

/* out[c with c[axis] = index[c]] += src[c], in place. */
static wgt_status scatter_add_run(wgt_context *ctx, const char *op, wgt_tensor *out, int axis, wgt_tensor *index,
                                  wgt_tensor *src)
{
    if (wgt_shape_numel(index->view.ndim, index->view.shape) == 0) return WGT_OK;
    wgt_kernel_call call = make_call(WGT_KERNEL_SCATTER_ADD, op);
    call.n_inputs = 2;
    call.inputs[0] = index->view;
    call.inputs[1] = src->view;
    call.n_outputs = 1;
    call.outputs[0] = out->view;
    call.axis = axis;
    return wgt_run_kernel(ctx, &call);
}

/* dst [...], index i32 and src [same shape, fitting dst outside axis] -> copy of dst
 * with out[c with c[axis] = index[c]] += src[c] */
wgt_tensor *wgt_scatter_add(wgt_tensor *dst, int axis, wgt_tensor *index, wgt_tensor *src)
{
    const char *op = "wgt_scatter_add";
    wgt_tensor *args[3] = {dst, index, src};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx || !scatter_add_check(ctx, op, dst, &axis, index, src)) return NULL;
    wgt_tensor *out = wgt_copy(dst);
    if (!out) return NULL;
    if (scatter_add_run(ctx, op, out, axis, index, src) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    struct wgt_grad_node *node = wgt_op_record(&out, WGT_OP_SCATTER_ADD, 3, args);
    if (node) node->params.ints[0] = axis;
    return out;
}

/* The gradient of a gather (embedding rows, index_select, topk): src
 * scatter-added into zeros of like's shape (f32), written in place into the
 * zeros instead of into a copy of them (wgt_scatter_add's copy of dst is a
 * full read and write of the table: 300 MB for GPT-2's 50257 x 768
 * embedding). Not recorded: backward rules run with grad mode off. */
wgt_tensor *wgt_scatter_add_zeros(const wgt_tensor *like, int axis, wgt_tensor *index, wgt_tensor *src)
{
    const char *op = "wgt_scatter_add";
    wgt_tensor *args[2] = {index, src};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    wgt_tensor *out = wgt_zeros(ctx, WGT_F32, like->view.ndim, like->view.shape);
    if (!out) return NULL;
    if (!scatter_add_check(ctx, op, out, &axis, index, src) || scatter_add_run(ctx, op, out, axis, index, src) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

/* x [d0..], pads[2*ndim] (before, after) -> [d0 + before + after, ...] */
wgt_tensor *wgt_pad(wgt_tensor *x, const int64_t *pads, double value)
{
    const char *op = "wgt_pad";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if (!pads && x->view.ndim > 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: pads is NULL", op);
        return NULL;
    }
    int64_t shape[WGT_MAX_DIMS];
    for (int d = 0; d < x->view.ndim; d++) {
        if (pads[2 * d] < 0 || pads[2 * d + 1] < 0) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: negative padding (%lld, %lld) on dim %d", op,
                      (long long)pads[2 * d], (long long)pads[2 * d + 1], d);
            return NULL;
        }
        if (!wgt_checked_add(x->view.shape[d], pads[2 * d], &shape[d]) ||
            !wgt_checked_add(shape[d], pads[2 * d + 1], &shape[d])) {
            char a[160];
            wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: padding (%lld, %lld) on dim %d of %s overflows the size", op,
                      (long long)pads[2 * d], (long long)pads[2 * d + 1], d,
                      wgt_shape_string(x->view.ndim, x->view.shape, a, sizeof(a)));
            return NULL;
        }
    }
    /* Allocated here rather than by wgt_full so a refused shape names wgt_pad. */
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, shape, op);
    if (out && wgt_fill(out, value) != WGT_OK) {
        wgt_tensor_release(out);
        out = NULL;
    }
    if (!out) return NULL;
    /* Library-internal references (ref/unref): a wgt_tensor_release of out
     * would take it out of the caller's scope. */
    wgt_tensor *inner = wgt_tensor_ref(out);
    for (int d = 0; d < x->view.ndim && inner; d++) {
        wgt_tensor *next = wgt_slice(inner, d, pads[2 * d], pads[2 * d] + x->view.shape[d], 1);
        wgt_tensor_unref(inner);
        inner = next;
    }
    wgt_status s = inner ? wgt_assign(inner, x) : ctx->status;
    wgt_tensor_unref(inner);
    if (s != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    struct wgt_grad_node *node = wgt_op_record(&out, WGT_OP_PAD, 1, &x);
    if (node) /* ints[d]: the padding before dim d */
        for (int d = 0; d < x->view.ndim; d++) node->params.ints[d] = pads[2 * d];
    return out;
}

/* x [..., M, N] -> keep where (col - row) <= k (tril) or >= k (triu), else 0 */
static wgt_tensor *triangle(wgt_tensor *x, int64_t k, bool lower, const char *op)
{
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    int n = x->view.ndim;
    if (n < 2) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: needs at least 2 dims, has %d", op, n);
        return NULL;
    }
    if (k > INT32_MAX) k = INT32_MAX;
    if (k < -INT32_MAX) k = -INT32_MAX;
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_type t = wgt_expr_type_of(x->view.dtype);
    int value = wgt_expr_input(&e, 0, t);
    int diagonal = wgt_expr_binary(&e, WGT_EXPR_SUB, wgt_expr_index(&e, n - 1), wgt_expr_index(&e, n - 2));
    int keep = wgt_expr_binary(&e, lower ? WGT_EXPR_LE : WGT_EXPR_GE, diagonal, wgt_expr_const(&e, (double)k, WGT_EXPR_I32));
    wgt_expr_where(&e, keep, value, wgt_expr_const(&e, 0, t));
    wgt_tensor *out = wgt_tensor_alloc(ctx, x->view.dtype, n, x->view.shape, op);
    if (out && wgt_run_elementwise(ctx, op, &e, 1, &x, out) != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    wgt_op_record_expr(&out, lower ? WGT_OP_TRIL : WGT_OP_TRIU, 1, &x, &e);
    return out;
}

wgt_tensor *wgt_tril(wgt_tensor *x, int64_t k) { return triangle(x, k, true, "wgt_tril"); }
wgt_tensor *wgt_triu(wgt_tensor *x, int64_t k) { return triangle(x, k, false, "wgt_triu"); }

/* ids (integer) [...] -> dtype [..., num_classes] */
wgt_tensor *wgt_one_hot(wgt_tensor *ids, int64_t num_classes, wgt_dtype dtype)
{
    const char *op = "wgt_one_hot";
    wgt_context *ctx = wgt_op_begin(op, 1, &ids);
    if (!ctx) return NULL;
    if (wgt_dtype_is_float(ids->view.dtype) || (unsigned)dtype >= WGT_DTYPE_COUNT) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: ids dtype %s must be integral; output dtype %d", op,
                  wgt_dtype_name(ids->view.dtype), (int)dtype);
        return NULL;
    }
    if (num_classes < 0 || num_classes > INT32_MAX || ids->view.ndim + 1 > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: num_classes %lld or %d dims out of range", op,
                  (long long)num_classes, ids->view.ndim);
        return NULL;
    }
    int n = ids->view.ndim + 1;
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, ids->view.shape, sizeof(int64_t) * (size_t)ids->view.ndim);
    shape[n - 1] = num_classes;
    wgt_tensor *column = wgt_unsqueeze(ids, -1); /* [..., 1] broadcasts over classes */
    if (!column) return NULL;
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_binary(&e, WGT_EXPR_EQ, wgt_expr_input(&e, 0, WGT_EXPR_I32), wgt_expr_index(&e, n - 1));
    wgt_tensor *out = wgt_tensor_alloc(ctx, dtype, n, shape, op);
    if (out && (wgt_run_elementwise(ctx, op, &e, 1, &column, out) != WGT_OK ||
                wgt_check_ids_in_range(ctx, op, ids, num_classes) != WGT_OK)) { /* ids outside [0, n): error */
        wgt_tensor_release(out);
        out = NULL;
    }
    wgt_tensor_release(column);
    return out;
}

/* x [..., N] -> values [..., k], indices i32 [..., k] */
wgt_status wgt_topk(wgt_tensor *x, int64_t k, bool largest, wgt_tensor **values, wgt_tensor **indices)
{
    const char *op = "wgt_topk";
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return x ? x->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!values || !indices) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: values or indices is NULL", op);
    *values = *indices = NULL;
    int n = x->view.ndim;
    if (n == 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: x is a scalar", op);
    if (x->view.dtype == WGT_BOOL) return wgt_error(ctx, WGT_ERR_DTYPE, "%s: bool input", op);
    if (k < 0 || k > x->view.shape[n - 1])
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: k %lld outside [0, %lld]", op, (long long)k,
                         (long long)x->view.shape[n - 1]);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)n);
    shape[n - 1] = k;
    wgt_tensor *v = wgt_tensor_alloc(ctx, x->view.dtype, n, shape, op);
    wgt_tensor *i = v ? wgt_tensor_alloc(ctx, WGT_I32, n, shape, op) : NULL;
    wgt_status s = i ? WGT_OK : ctx->status;
    if (s == WGT_OK && wgt_shape_numel(n, shape) > 0) {
        wgt_kernel_call call = make_call(WGT_KERNEL_TOPK, op);
        call.n_inputs = 1;
        call.inputs[0] = x->view;
        call.n_outputs = 2;
        call.outputs[0] = v->view;
        call.outputs[1] = i->view;
        call.k = k;
        call.largest = largest;
        s = wgt_run_kernel(ctx, &call);
    }
    if (s != WGT_OK) {
        wgt_tensor_release(v);
        wgt_tensor_release(i);
        return s;
    }
    struct wgt_grad_node *node = wgt_op_record(&v, WGT_OP_TOPK, 1, &x);
    if (node && !wgt_tape_save(node, i)) s = ctx->status;
    if (!v || s != WGT_OK) {
        wgt_tensor_release(v);
        wgt_tensor_release(i);
        return ctx->status;
    }
    *values = v;
    *indices = i;
    return WGT_OK;
}
