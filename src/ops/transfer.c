/* Host I/O: wgt_tensor_from_host, wgt_tensor_read and wgt_tensor_write. Contiguous word-aligned
 * ranges go straight to the backend's storage; strided views go through a
 * contiguous copy made with the ops (which is why this lives on the ops floor). */
#include <stdlib.h>
#include <string.h>

#include "ops/op_common.h"

/* Byte range [first, first+bytes) of a contiguous view, widened to 4-byte words. */
static void word_range(const wgt_tensor_view *v, size_t bytes, size_t *first, size_t *aligned_first, size_t *aligned_bytes)
{
    *first = (size_t)v->offset * wgt_dtype_size(v->dtype);
    *aligned_first = *first & ~(size_t)3;
    size_t end = (*first + bytes + 3) & ~(size_t)3;
    *aligned_bytes = end - *aligned_first;
}

wgt_status wgt_tensor_read(wgt_tensor *t, void *data, size_t bytes)
{
    if (!t) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = t->ctx;
    if (ctx->status != WGT_OK) return ctx->status;
    size_t need = (size_t)wgt_shape_numel(t->view.ndim, t->view.shape) * wgt_dtype_size(t->view.dtype);
    if (!data && need > 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_read: data is NULL");
    if (bytes < need)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_read: buffer of %zu bytes, tensor needs %zu",
                         bytes, need);
    if (need == 0) return WGT_OK;
    if (!wgt_view_is_contiguous(&t->view)) {
        wgt_tensor *c = wgt_contiguous(t);
        if (!c) return ctx->status;
        wgt_status s = wgt_tensor_read(c, data, bytes);
        wgt_tensor_release(c);
        return s;
    }
    size_t first, aligned_first, aligned_bytes;
    word_range(&t->view, need, &first, &aligned_first, &aligned_bytes);
    if (aligned_first == first && aligned_bytes == need)
        return ctx->backend->vt->storage_read(ctx->backend, t->view.storage->handle, first, data, need);
    unsigned char *tmp = malloc(aligned_bytes);
    if (!tmp) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_read: out of host memory");
    wgt_status s = ctx->backend->vt->storage_read(ctx->backend, t->view.storage->handle, aligned_first, tmp,
                                                  aligned_bytes);
    if (s == WGT_OK) memcpy(data, tmp + (first - aligned_first), need);
    free(tmp);
    return s;
}

static void read_unlink(wgt_read *r)
{
    if (r->prev) r->prev->next = r->next;
    else r->ctx->reads = r->next;
    if (r->next) r->next->prev = r->prev;
}

wgt_read *wgt_tensor_read_start(wgt_tensor *t)
{
    if (!t) return NULL;
    wgt_context *ctx = t->ctx;
    if (ctx->status != WGT_OK) return NULL;
    if (!wgt_view_is_contiguous(&t->view)) {
        /* the copy to the staging buffer is queued now, so the temporary can go */
        wgt_tensor *c = wgt_contiguous(t);
        if (!c) return NULL;
        wgt_read *r = wgt_tensor_read_start(c);
        wgt_tensor_release(c);
        return r;
    }
    wgt_read *r = calloc(1, sizeof(*r));
    if (!r) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_read_start: out of host memory");
        return NULL;
    }
    r->ctx = ctx;
    r->need = (size_t)wgt_shape_numel(t->view.ndim, t->view.shape) * wgt_dtype_size(t->view.dtype);
    size_t first, aligned_first;
    word_range(&t->view, r->need, &first, &aligned_first, &r->aligned_bytes);
    r->skip = first - aligned_first;
    const wgt_backend_vtable *vt = ctx->backend->vt;
    wgt_status s = WGT_OK;
    if (r->need == 0) {
        /* nothing to copy */
    } else if (vt->storage_read_start && vt->storage_read_finish) {
        s = vt->storage_read_start(ctx->backend, t->view.storage->handle, aligned_first, r->aligned_bytes,
                                   &r->pending);
    } else {
        r->host = malloc(r->aligned_bytes);
        s = r->host ? vt->storage_read(ctx->backend, t->view.storage->handle, aligned_first, r->host, r->aligned_bytes)
                    : wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_read_start: out of host memory");
    }
    if (s != WGT_OK) {
        free(r->host);
        free(r);
        return NULL;
    }
    r->next = ctx->reads;
    if (r->next) r->next->prev = r;
    ctx->reads = r;
    return r;
}

bool wgt_read_ready(wgt_read *r)
{
    if (!r || !r->pending) return true; /* nothing in flight: read at start, or nothing to read */
    const wgt_backend_vtable *vt = r->ctx->backend->vt;
    return !vt->storage_read_ready || vt->storage_read_ready(r->ctx->backend, r->pending);
}

wgt_status wgt_read_finish(wgt_read *r, void *data, size_t bytes)
{
    if (!r) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = r->ctx;
    read_unlink(r);
    wgt_status s = WGT_OK;
    if (data && bytes < r->need)
        s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_read_finish: buffer of %zu bytes, tensor needs %zu", bytes,
                      r->need);
    unsigned char *tmp = NULL;
    if (r->pending) {
        /* the backend frees its pending read on every path, so it is finished even when the answer is dropped */
        bool direct = s == WGT_OK && data && r->skip == 0 && r->aligned_bytes == r->need;
        tmp = s == WGT_OK && data && !direct ? malloc(r->aligned_bytes) : NULL;
        if (s == WGT_OK && data && !direct && !tmp)
            s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_read_finish: out of host memory");
        void *dst = s != WGT_OK || !data ? NULL : direct ? data : tmp;
        wgt_status f = ctx->backend->vt->storage_read_finish(ctx->backend, r->pending, dst);
        if (s == WGT_OK) s = f;
        if (s == WGT_OK && tmp) memcpy(data, tmp + r->skip, r->need);
    } else if (s == WGT_OK && data && r->need) {
        memcpy(data, r->host + r->skip, r->need);
    }
    free(tmp);
    free(r->host);
    free(r);
    return s;
}

wgt_status wgt_tensor_write(wgt_tensor *t, const void *data, size_t bytes)
{
    if (!t) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = t->ctx;
    if (ctx->status != WGT_OK) return ctx->status;
    size_t need = (size_t)wgt_shape_numel(t->view.ndim, t->view.shape) * wgt_dtype_size(t->view.dtype);
    if (!data && need > 0) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_write: data is NULL");
    if (bytes < need)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_write: %zu bytes given, tensor needs %zu",
                         bytes, need);
    if (!wgt_op_check_inplace(ctx, t, "wgt_tensor_write")) return ctx->status;
    if (need == 0) return WGT_OK;
    size_t first, aligned_first, aligned_bytes;
    word_range(&t->view, need, &first, &aligned_first, &aligned_bytes);
    bool overlaps = false;
    for (int i = 0; i < t->view.ndim; i++)
        if (t->view.strides[i] == 0 && t->view.shape[i] > 1) overlaps = true;
    if (overlaps)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "wgt_tensor_write: the tensor is a broadcast view (stride 0); its elements overlap");
    if (wgt_view_is_contiguous(&t->view) && aligned_first == first) {
        if (first + need > t->view.storage->bytes)
            return wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_tensor_write: view exceeds its storage");
        if (aligned_bytes == need)
            return ctx->backend->vt->storage_write(ctx->backend, t->view.storage->handle, first, data, need);
        if (first + need == t->view.storage->requested) {
            /* The last word's spare bytes are storage padding: write it whole. */
            unsigned char tail[4] = {0};
            size_t body = need & ~(size_t)3;
            wgt_status s = body ? ctx->backend->vt->storage_write(ctx->backend, t->view.storage->handle, first, data,
                                                                  body)
                                : WGT_OK;
            memcpy(tail, (const unsigned char *)data + body, need - body);
            if (s == WGT_OK)
                s = ctx->backend->vt->storage_write(ctx->backend, t->view.storage->handle, first + body, tail, 4);
            return s;
        }
    }
    /* Strided or sub-word-misaligned: upload to an unguarded contiguous tensor
     * (whose write takes the direct path above), then copy through the view. */
    wgt_tensor *tmp = wgt_tensor_alloc_unguarded(ctx, t->view.dtype, t->view.ndim, t->view.shape, "wgt_tensor_write");
    if (!tmp) return ctx->status;
    wgt_status s = wgt_tensor_write(tmp, data, bytes);
    if (s == WGT_OK) s = wgt_assign(t, tmp);
    wgt_tensor_release(tmp);
    return s;
}


wgt_tensor *wgt_tensor_from_host(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape,
                                 const void *data)
{
    if (!ctx || ctx->status != WGT_OK) return NULL;
    wgt_tensor *t = wgt_tensor_alloc(ctx, dtype, ndim, shape, "wgt_tensor_from_host"); /* checks the shape */
    if (!t) return NULL;
    size_t bytes = (size_t)wgt_shape_numel(ndim, shape) * wgt_dtype_size(dtype);
    if (!data && bytes > 0) {
        wgt_tensor_release(t);
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_from_host: data is NULL");
        return NULL;
    }
    if (bytes > 0 && wgt_tensor_write(t, data, bytes) != WGT_OK) {
        wgt_tensor_release(t);
        return NULL;
    }
    return t;
}
