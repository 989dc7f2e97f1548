/* Views: new shape/strides/offset over the same storage, never a copy. */
#include <string.h>

#include "core/checked.h"
#include "core/internal.h"
#include "ops/op_common.h"
#include "core/tape.h"

/* Every view is checked before it is handed out (element count in range, every
 * element inside the storage), so the backends and later views can do their
 * shape arithmetic without overflow. */
static wgt_tensor *make_view(wgt_tensor *t, const wgt_tensor_view *v, const char *op)
{
    if (!wgt_view_check(t->ctx, v, op)) return NULL;
    return wgt_tensor_wrap(t->ctx, v);
}

/* Records view r of t for autograd as op with n integer parameters (the
 * permutation; axis, start, step for a slice). Returns r (NULL on failure). */
static wgt_tensor *record_view(wgt_tensor *r, wgt_op op, wgt_tensor *t, int n, const int64_t *ints)
{
    struct wgt_grad_node *node = wgt_op_record(&r, op, 1, &t);
    if (node) {
        for (int i = 0; i < n; i++) node->params.ints[i] = ints[i];
        node->params.n_ints = n;
    }
    return r;
}

/* Tries to express shape as a view of v's strides. Input dims are walked from
 * the innermost out in "chunks" of dims that are contiguous among themselves;
 * each chunk must be covered exactly by a run of output dims. */
static bool compute_view_strides(const wgt_tensor_view *v, int ndim, const int64_t *shape, int64_t *strides)
{
    if (v->ndim == 0 || wgt_shape_numel(v->ndim, v->shape) == 0) {
        wgt_contiguous_strides(ndim, shape, strides);
        return true;
    }
    int out = ndim - 1;
    int64_t chunk_stride = v->strides[v->ndim - 1];
    int64_t in_numel = 1, out_numel = 1, next;
    /* Checked products: a size-1 dim may carry any stride. Overflow means "not
     * expressible as a view" and wgt_reshape copies instead. */
    for (int in = v->ndim - 1; in >= 0; in--) {
        in_numel *= v->shape[in]; /* a suffix of a checked shape: cannot overflow */
        bool chunk_ends = in == 0 || (v->shape[in - 1] != 1 && (!wgt_checked_mul(in_numel, chunk_stride, &next) ||
                                                                 v->strides[in - 1] != next));
        if (!chunk_ends) continue;
        while (out >= 0 && (out_numel < in_numel || shape[out] == 1)) {
            if (!wgt_checked_mul(out_numel, chunk_stride, &strides[out])) return false;
            out_numel *= shape[out]; /* <= in_numel * shape[out], both checked shapes */
            out--;
        }
        if (out_numel != in_numel) return false;
        if (in > 0) {
            chunk_stride = v->strides[in - 1];
            in_numel = 1;
            out_numel = 1;
        }
    }
    return out == -1;
}

static bool resolve_shape(wgt_tensor *t, int ndim, const int64_t *shape, int64_t *resolved, const char *op)
{
    wgt_context *ctx = t->ctx;
    if (ndim < 0 || ndim > WGT_MAX_DIMS || (ndim > 0 && !shape)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: bad ndim %d or NULL shape", op, ndim);
        return false;
    }
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1 && infer < 0) {
            infer = i;
            resolved[i] = 1;
            continue;
        }
        if (shape[i] < 0) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: bad size %lld at dim %d", op, (long long)shape[i], i);
            return false;
        }
        resolved[i] = shape[i];
    }
    /* The known sizes' product, checked: it can only match numel (<= 2^60) if
     * it fits; a 0 among them makes it 0 whatever the others are. */
    int64_t known;
    int64_t numel = wgt_shape_numel(t->view.ndim, t->view.shape);
    if (!wgt_checked_numel(ndim, resolved, &known)) goto mismatch;
    if (infer >= 0) {
        if (known == 0 || numel % known != 0) goto mismatch;
        resolved[infer] = numel / known;
        known = numel;
    }
    if (known != numel) goto mismatch;
    return true;
mismatch : {
    char a[160], b[160];
    wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: cannot view %s (%lld elements) as %s", op,
              wgt_shape_string(t->view.ndim, t->view.shape, a, sizeof(a)), (long long)numel,
              wgt_shape_string(ndim, shape, b, sizeof(b)));
    return false;
}
}

wgt_tensor *wgt_view(wgt_tensor *t, int ndim, const int64_t *shape)
{
    if (!wgt_op_begin("wgt_view", 1, &t)) return NULL;
    wgt_tensor_view v = t->view;
    int64_t resolved[WGT_MAX_DIMS];
    if (!resolve_shape(t, ndim, shape, resolved, "wgt_view")) return NULL;
    int64_t strides[WGT_MAX_DIMS];
    if (!compute_view_strides(&t->view, ndim, resolved, strides)) {
        char a[160], b[160];
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT,
                  "wgt_view: %s with these strides cannot be viewed as %s without a copy (use wgt_reshape)",
                  wgt_shape_string(t->view.ndim, t->view.shape, a, sizeof(a)),
                  wgt_shape_string(ndim, resolved, b, sizeof(b)));
        return NULL;
    }
    v.ndim = ndim;
    memcpy(v.shape, resolved, sizeof(int64_t) * (size_t)ndim);
    memcpy(v.strides, strides, sizeof(int64_t) * (size_t)ndim);
    return record_view(make_view(t, &v, "wgt_view"), WGT_OP_VIEW, t, 0, NULL);
}

wgt_tensor *wgt_reshape(wgt_tensor *t, int ndim, const int64_t *shape)
{
    if (!wgt_op_begin("wgt_reshape", 1, &t)) return NULL;
    int64_t resolved[WGT_MAX_DIMS], strides[WGT_MAX_DIMS];
    if (!resolve_shape(t, ndim, shape, resolved, "wgt_reshape")) return NULL;
    if (compute_view_strides(&t->view, ndim, resolved, strides)) return wgt_view(t, ndim, resolved);
    wgt_tensor *c = wgt_copy(t);
    if (!c) return NULL;
    wgt_scope_remove(c); /* a temporary: a scope pop must not release it again while the view's tape node holds it */
    wgt_tensor *r = wgt_view(c, ndim, resolved);
    wgt_tensor_release(c);
    return r;
}

wgt_tensor *wgt_permute(wgt_tensor *t, const int *perm)
{
    if (!wgt_op_begin("wgt_permute", 1, &t)) return NULL;
    int n = t->view.ndim;
    if (!perm && n > 0) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_permute: perm is NULL");
        return NULL;
    }
    bool seen[WGT_MAX_DIMS] = {false};
    wgt_tensor_view v = t->view;
    for (int i = 0; i < n; i++) {
        int p = perm[i];
        if (p < 0) p += n;
        if (p < 0 || p >= n || seen[p]) {
            wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT,
                      "wgt_permute: perm[%d] = %d is out of range or repeated for %d dims", i, perm[i], n);
            return NULL;
        }
        seen[p] = true;
        v.shape[i] = t->view.shape[p];
        v.strides[i] = t->view.strides[p];
    }
    int64_t order[WGT_MAX_DIMS];
    for (int i = 0; i < n; i++) order[i] = perm[i] < 0 ? perm[i] + n : perm[i];
    return record_view(make_view(t, &v, "wgt_permute"), WGT_OP_PERMUTE, t, n, order);
}

wgt_tensor *wgt_transpose(wgt_tensor *t, int axis0, int axis1)
{
    if (!wgt_op_begin("wgt_transpose", 1, &t)) return NULL;
    int n = t->view.ndim;
    if (!wgt_normalize_axis(t->ctx, &axis0, n, "wgt_transpose") ||
        !wgt_normalize_axis(t->ctx, &axis1, n, "wgt_transpose"))
        return NULL;
    wgt_tensor_view v = t->view;
    v.shape[axis0] = t->view.shape[axis1];
    v.strides[axis0] = t->view.strides[axis1];
    v.shape[axis1] = t->view.shape[axis0];
    v.strides[axis1] = t->view.strides[axis0];
    int64_t order[WGT_MAX_DIMS];
    for (int i = 0; i < n; i++) order[i] = i;
    order[axis0] = axis1;
    order[axis1] = axis0;
    return record_view(make_view(t, &v, "wgt_transpose"), WGT_OP_PERMUTE, t, n, order);
}

wgt_tensor *wgt_slice(wgt_tensor *t, int axis, int64_t start, int64_t stop, int64_t step)
{
    if (!wgt_op_begin("wgt_slice", 1, &t)) return NULL;
    if (t->view.ndim == 0) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_slice: cannot slice a scalar");
        return NULL;
    }
    if (!wgt_normalize_axis(t->ctx, &axis, t->view.ndim, "wgt_slice")) return NULL;
    if (step < 1) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_slice: step %lld must be >= 1", (long long)step);
        return NULL;
    }
    int64_t d = t->view.shape[axis];
    /* Python clamping */
    if (start < 0) start += d;
    if (stop < 0) stop += d;
    if (start < 0) start = 0;
    if (start > d) start = d;
    if (stop < start) stop = start;
    if (stop > d) stop = d;
    wgt_tensor_view v = t->view;
    int64_t length = stop - start; /* both in [0, d] now: no overflow */
    v.shape[axis] = length == 0 ? 0 : (length - 1) / step + 1; /* not length + step - 1: step may be INT64_MAX */
    /* An empty result addresses nothing (its offset and strides never matter,
     * and may not fit: t can be empty in another dim with huge strides), and a
     * size-1 dim's stride never matters (step * stride may not fit). */
    int64_t where[3] = {axis, start, step};
    if (wgt_shape_numel(v.ndim, v.shape) == 0)
        return record_view(make_view(t, &v, "wgt_slice"), WGT_OP_SLICE, t, 3, where);
    int64_t move;
    if (!wgt_checked_mul(start, t->view.strides[axis], &move) || !wgt_checked_add(v.offset, move, &v.offset) ||
        (v.shape[axis] > 1 && !wgt_checked_mul(v.strides[axis], step, &v.strides[axis]))) {
        char a[160];
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_slice: [%lld:%lld:%lld] on axis %d of %s overflows its offset or stride",
                  (long long)start, (long long)stop, (long long)step, axis,
                  wgt_shape_string(t->view.ndim, t->view.shape, a, sizeof(a)));
        return NULL;
    }
    return record_view(make_view(t, &v, "wgt_slice"), WGT_OP_SLICE, t, 3, where);
}

wgt_tensor *wgt_expand(wgt_tensor *t, int ndim, const int64_t *shape)
{
    if (!wgt_op_begin("wgt_expand", 1, &t)) return NULL;
    if (ndim < 0 || ndim > WGT_MAX_DIMS || (ndim > 0 && !shape)) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_expand: bad ndim %d or NULL shape", ndim);
        return NULL;
    }
    int64_t resolved[WGT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        int j = i - (ndim - t->view.ndim);
        resolved[i] = (shape[i] == -1 && j >= 0) ? t->view.shape[j] : shape[i];
        if (resolved[i] < 0) {
            wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_expand: bad size %lld", (long long)shape[i]);
            return NULL;
        }
    }
    wgt_tensor_view v;
    if (!wgt_broadcast_view(t->ctx, &t->view, ndim, resolved, &v, "wgt_expand")) return NULL;
    return record_view(make_view(t, &v, "wgt_expand"), WGT_OP_EXPAND, t, 0, NULL);
}

wgt_tensor *wgt_squeeze(wgt_tensor *t, int axis)
{
    if (!wgt_op_begin("wgt_squeeze", 1, &t)) return NULL;
    if (t->view.ndim == 0 || !wgt_normalize_axis(t->ctx, &axis, t->view.ndim, "wgt_squeeze")) {
        if (t->view.ndim == 0) wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_squeeze: scalar has no axis");
        return NULL;
    }
    if (t->view.shape[axis] != 1) {
        wgt_error(t->ctx, WGT_ERR_SHAPE_MISMATCH, "wgt_squeeze: axis %d has size %lld, not 1", axis,
                  (long long)t->view.shape[axis]);
        return NULL;
    }
    wgt_tensor_view v = t->view;
    for (int i = axis; i < v.ndim - 1; i++) {
        v.shape[i] = v.shape[i + 1];
        v.strides[i] = v.strides[i + 1];
    }
    v.ndim--;
    return record_view(make_view(t, &v, "wgt_squeeze"), WGT_OP_VIEW, t, 0, NULL);
}

wgt_tensor *wgt_unsqueeze(wgt_tensor *t, int axis)
{
    if (!wgt_op_begin("wgt_unsqueeze", 1, &t)) return NULL;
    int n = t->view.ndim;
    if (n >= WGT_MAX_DIMS) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_unsqueeze: already %d dims", n);
        return NULL;
    }
    if (axis < -(n + 1) || axis > n) {
        wgt_error(t->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_unsqueeze: axis %d out of range for %d dims", axis, n);
        return NULL;
    }
    if (axis < 0) axis += n + 1;
    wgt_tensor_view v = t->view;
    for (int i = n; i > axis; i--) {
        v.shape[i] = v.shape[i - 1];
        v.strides[i] = v.strides[i - 1];
    }
    v.shape[axis] = 1;
    /* Any stride is right for a size-1 dim; this one keeps the view contiguous
     * when t is, and 0 stands in where the product would not fit (t empty). */
    if (axis == n) v.strides[axis] = 1;
    else if (!wgt_checked_mul(t->view.strides[axis], t->view.shape[axis], &v.strides[axis])) v.strides[axis] = 0;
    v.ndim = n + 1;
    return record_view(make_view(t, &v, "wgt_unsqueeze"), WGT_OP_VIEW, t, 0, NULL);
}

wgt_tensor *wgt_contiguous(wgt_tensor *t)
{
    if (!wgt_op_begin("wgt_contiguous", 1, &t)) return NULL;
    /* A new handle, not a retain, so an open scope owns it like any result. */
    if (wgt_view_is_contiguous(&t->view))
        return record_view(make_view(t, &t->view, "wgt_contiguous"), WGT_OP_VIEW, t, 0, NULL);
    return wgt_copy(t);
}
