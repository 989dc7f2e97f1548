/* Tensors: storage ownership, creation from and reading back to the host, accessors. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/internal.h"
#include "core/tape.h"

static bool scope_add(wgt_context *ctx, wgt_tensor *t);


/* ------------------------------------------------------------ shape helpers */

/* Tensors always hold checked shapes (check_shape, wgt_view_check), so this
 * only saturates for shapes nobody validated yet: INT64_MAX when the count is
 * too large, -1 when a size is negative; never a wrapped small count. */
int64_t wgt_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n;
    if (wgt_checked_numel(ndim, shape, &n)) return n;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return -1;
    return INT64_MAX;
}

/* The outer strides of a shape with a 0 size can exceed int64 ({0, 2^40, 2^40});
 * such a tensor addresses nothing, so a stride that would overflow becomes 0. */
void wgt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = stride;
        if (!wgt_checked_mul(stride, shape[i] > 0 ? shape[i] : 1, &stride)) stride = 0;
    }
}

bool wgt_view_is_contiguous(const wgt_tensor_view *v)
{
    for (int i = 0; i < v->ndim; i++)
        if (v->shape[i] == 0) return true; /* before any product: the others may overflow */
    int64_t expected = 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        if (v->shape[i] == 1) continue; /* stride of a size-1 dim never matters */
        if (v->strides[i] != expected) return false;
        if (!wgt_checked_mul(expected, v->shape[i], &expected)) return false;
    }
    return true;
}

bool wgt_view_extent(const wgt_tensor_view *v, int64_t *lo, int64_t *hi)
{
    *lo = *hi = v->offset;
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] <= 0) return v->shape[d] == 0; /* empty: addresses nothing */
    for (int d = 0; d < v->ndim; d++) {
        int64_t reach;
        if (!wgt_checked_mul(v->shape[d] - 1, v->strides[d], &reach)) return false;
        if (!wgt_checked_add(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return false;
    }
    return true;
}

bool wgt_view_check(wgt_context *ctx, const wgt_tensor_view *v, const char *op)
{
    char shape[160], strides[160];
    int64_t numel, lo, hi;
    if (v->ndim < 0 || v->ndim > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: ndim %d outside [0, %d]", op, v->ndim, WGT_MAX_DIMS);
        return false;
    }
    if (!wgt_checked_numel(v->ndim, v->shape, &numel)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: shape %s is negative or has more than 2^60 elements", op,
                  wgt_shape_string(v->ndim, v->shape, shape, sizeof(shape)));
        return false;
    }
    if (numel == 0) return true;
    size_t elem = wgt_dtype_size(v->dtype);
    if (!wgt_view_extent(v, &lo, &hi) || lo < 0 || !v->storage || elem == 0 ||
        (uint64_t)hi >= v->storage->bytes / elem) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: view %s with strides %s at offset %lld lies outside its storage",
                  op, wgt_shape_string(v->ndim, v->shape, shape, sizeof(shape)),
                  wgt_shape_string(v->ndim, v->strides, strides, sizeof(strides)), (long long)v->offset);
        return false;
    }
    return true;
}

/* ----------------------------------------------------------------- storage */

wgt_storage *wgt_storage_create(wgt_context *ctx, size_t bytes, const char *op)
{
    wgt_storage *s = calloc(1, sizeof(*s));
    if (!s) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        return NULL;
    }
    /* Backends work in 4-byte words (WebGPU copies need it); never allocate 0. */
    s->requested = bytes;
    s->bytes = bytes < 4 ? 4 : (bytes + 3) & ~(size_t)3;
    s->refcount = 1;
    if (ctx->backend->vt->storage_alloc(ctx->backend, s->bytes, &s->handle) != WGT_OK) {
        free(s);
        return NULL;
    }
    if (ctx->memory_trace) wgt_memory_trace_alloc(ctx, s, op);
    return s;
}

void wgt_storage_retain(wgt_storage *s) { s->refcount++; }

void wgt_storage_release(wgt_context *ctx, wgt_storage *s)
{
    if (!s || --s->refcount > 0) return;
    if (s->trace) wgt_memory_trace_free(ctx, s);
    ctx->backend->vt->storage_free(ctx->backend, s->handle);
    free(s);
}

/* ------------------------------------------------------------------ tensors */

wgt_tensor *wgt_tensor_wrap(wgt_context *ctx, const wgt_tensor_view *view)
{
    wgt_tensor *t = calloc(1, sizeof(*t));
    if (!t) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor: out of host memory");
        return NULL;
    }
    t->ctx = ctx;
    t->refcount = 1;
    t->view = *view;
    wgt_storage_retain(view->storage);
    if (view->storage->trace) wgt_memory_trace_wrap(ctx, view->storage, view);
    if (!scope_add(ctx, t)) {
        wgt_storage_release(ctx, view->storage);
        free(t);
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor: out of host memory");
        return NULL;
    }
    ctx->live_tensors++;
    return t;
}

static bool check_shape(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const char *op)
{
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
        return false;
    }
    if (ndim < 0 || ndim > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: ndim %d outside [0, %d]", op, ndim, WGT_MAX_DIMS);
        return false;
    }
    if (ndim > 0 && !shape) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: shape is NULL with ndim %d", op, ndim);
        return false;
    }
    char buf[160];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: negative size in shape %s", op,
                      wgt_shape_string(ndim, shape, buf, sizeof(buf)));
            return false;
        }
    }
    int64_t numel;
    if (!wgt_checked_numel(ndim, shape, &numel)) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: shape %s is too large to address", op,
                  wgt_shape_string(ndim, shape, buf, sizeof(buf)));
        return false;
    }
    return true;
}

/* Debug guards: WGT_GUARD_BYTES of WGT_GUARD_PATTERN before and after the
 * elements (the view starts after the first guard), checked by
 * wgt_tensor_check_guards. 256 bytes keep vec4 and word alignment. */
#define WGT_GUARD_BYTES 256
#define WGT_GUARD_PATTERN 0xA5

static wgt_status write_guards(wgt_context *ctx, wgt_storage *s, size_t bytes)
{
    unsigned char pattern[WGT_GUARD_BYTES + 4];
    memset(pattern, WGT_GUARD_PATTERN, sizeof(pattern));
    size_t tail = WGT_GUARD_BYTES + ((bytes + 3) & ~(size_t)3);
    wgt_status st = ctx->backend->vt->storage_write(ctx->backend, s->handle, 0, pattern, WGT_GUARD_BYTES);
    if (st == WGT_OK)
        st = ctx->backend->vt->storage_write(ctx->backend, s->handle, tail, pattern, s->bytes - tail);
    return st;
}

wgt_status wgt_tensor_check_guards(wgt_tensor *t)
{
    if (!t) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = t->ctx;
    if (ctx->status != WGT_OK) return ctx->status;
    if (!ctx->options.debug_guards || !t->view.storage->guarded) return WGT_OK;
    wgt_storage *s = t->view.storage;
    unsigned char *bytes = malloc(s->bytes);
    if (!bytes) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_check_guards: out of host memory");
    wgt_status st = ctx->backend->vt->storage_read(ctx->backend, s->handle, 0, bytes, s->bytes);
    /* Spare bytes of the last element word are padding kernels may write. */
    size_t end = WGT_GUARD_BYTES + ((s->requested - 2 * WGT_GUARD_BYTES + 3) & ~(size_t)3);
    for (size_t i = 0; st == WGT_OK && i < s->bytes; i++) {
        if (i >= WGT_GUARD_BYTES && i < end) continue;
        if (bytes[i] != WGT_GUARD_PATTERN)
            st = wgt_error(ctx, WGT_ERR_INTERNAL,
                           "wgt_tensor_check_guards: guard byte %zu %s the elements was overwritten (0x%02x)",
                           i < WGT_GUARD_BYTES ? WGT_GUARD_BYTES - i : i - end + 1,
                           i < WGT_GUARD_BYTES ? "before" : "after", bytes[i]);
    }
    free(bytes);
    return st;
}

static wgt_tensor *alloc_tensor(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const char *op,
                                bool guarded)
{
    if (!check_shape(ctx, dtype, ndim, shape, op)) return NULL;
    wgt_tensor_view view = {0};
    view.dtype = dtype;
    view.ndim = ndim;
    for (int i = 0; i < ndim; i++) view.shape[i] = shape[i];
    wgt_contiguous_strides(ndim, shape, view.strides);
    size_t bytes = (size_t)wgt_shape_numel(ndim, shape) * wgt_dtype_size(dtype);
    view.storage = wgt_storage_create(ctx, guarded ? bytes + 2 * WGT_GUARD_BYTES + 4 : bytes, op);
    if (!view.storage) return NULL;
    if (guarded) {
        view.storage->guarded = true;
        view.storage->requested = bytes + 2 * WGT_GUARD_BYTES;
        view.offset = WGT_GUARD_BYTES / (int64_t)wgt_dtype_size(dtype);
        if (write_guards(ctx, view.storage, bytes) != WGT_OK) {
            wgt_storage_release(ctx, view.storage);
            return NULL;
        }
    }
    wgt_tensor *t = wgt_tensor_wrap(ctx, &view);
    wgt_storage_release(ctx, view.storage); /* the tensor holds the only reference */
    return t;
}

wgt_tensor *wgt_tensor_alloc(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const char *op)
{
    return alloc_tensor(ctx, dtype, ndim, shape, op, ctx->options.debug_guards);
}

wgt_tensor *wgt_tensor_alloc_unguarded(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape,
                                       const char *op)
{
    return alloc_tensor(ctx, dtype, ndim, shape, op, false);
}

wgt_tensor *wgt_tensor_empty(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape)
{
    if (!ctx || ctx->status != WGT_OK) return NULL;
    return wgt_tensor_alloc(ctx, dtype, ndim, shape, "wgt_tensor_empty");
}

wgt_tensor *wgt_tensor_retain(wgt_tensor *t)
{
    if (t) t->refcount++;
    return t;
}

void wgt_tensor_unref(wgt_tensor *t)
{
    if (!t || --t->refcount > 0) return;
    wgt_scope_remove(t);
    t->ctx->live_tensors--;
    wgt_tensor_unref(t->grad);
    wgt_tape_node_release(t->grad_node);
    wgt_storage_release(t->ctx, t->view.storage);
    free(t);
}

/* A tensor made inside a scope has one reference, which both its creator and
 * the scope think of as theirs. An explicit release is the creator giving it
 * up early, so the tensor also leaves the scope: otherwise, when someone else
 * holds it too (a tape node keeps the inputs of the op that consumed it), the
 * scope's pop would drop that holder's reference a second time. Holders
 * inside the library take and drop theirs with wgt_tensor_ref/unref. */
void wgt_tensor_release(wgt_tensor *t)
{
    if (!t) return;
    wgt_scope_remove(t);
    wgt_tensor_unref(t);
}

/* ------------------------------------------------------ grad node lifetime */
/* A tensor holds the node that made it and a node holds its input and saved
 * tensors, so releasing either can release the other: one mutually recursive
 * unit, kept in this file so that tape.c (recording) only calls down into it. */

void wgt_tape_node_release_inputs(wgt_grad_node *node)
{
    for (int i = 0; i < node->n_inputs; i++) {
        wgt_tensor_unref(node->inputs[i]);
        node->inputs[i] = NULL;
    }
    for (int i = 0; i < node->n_saved; i++) {
        wgt_tensor_unref(node->saved[i]);
        node->saved[i] = NULL;
    }
    node->n_saved = 0;
    node->released = true;
}

void wgt_tape_node_retain(wgt_grad_node *node) { node->refcount++; }

void wgt_tape_node_release(wgt_grad_node *node)
{
    if (!node || --node->refcount > 0) return;
    wgt_tape_node_release_inputs(node);
    wgt_tensor_unref(node->grad);
    if (node->free_owned) node->free_owned(node->owned);
    free(node->inputs);
    free(node);
}

/* ------------------------------------------------------------- checks */

bool wgt_normalize_axis(wgt_context *ctx, int *axis, int ndim, const char *op)
{
    int rank = ndim > 0 ? ndim : 1;
    if (*axis < -rank || *axis >= rank) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: axis %d out of range for %d dims", op, *axis, ndim);
        return false;
    }
    if (*axis < 0) *axis += rank;
    return true;
}

wgt_status wgt_run_kernel(wgt_context *ctx, const wgt_kernel_call *call)
{
    /* run() refuses unsupported calls itself (see backend.h). */
    return ctx->backend->vt->run(ctx->backend, call);
}

/* ------------------------------------------------------------------ scopes */

int64_t wgt_context_live_tensors(const wgt_context *ctx) { return ctx ? ctx->live_tensors : 0; }

wgt_status wgt_scope_push(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->status != WGT_OK) return ctx->status;
    if (ctx->n_scopes == ctx->scopes_capacity) {
        int capacity = ctx->scopes_capacity ? ctx->scopes_capacity * 2 : 8;
        wgt_scope *grown = realloc(ctx->scopes, (size_t)capacity * sizeof(*grown));
        if (!grown) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_scope_push: out of host memory");
        ctx->scopes = grown;
        ctx->scopes_capacity = capacity;
    }
    ctx->scopes[ctx->n_scopes++] = (wgt_scope){0};
    return WGT_OK;
}

wgt_status wgt_scope_pop(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->n_scopes == 0)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_scope_pop: no scope is open");
    wgt_scope *scope = &ctx->scopes[ctx->n_scopes - 1];
    /* Detach first so release does not edit the array we walk. Release in
     * the reverse order of creation: the device pool's free lists are LIFO,
     * so the next pass of the same code (a training step, a decoded token)
     * gets every buffer back in the same role, and its dispatches find their
     * bind groups cached (in creation order, the roles rotate each pass). */
    for (size_t i = 0; i < scope->count; i++) scope->tensors[i]->scope_level = -1;
    for (size_t i = scope->count; i-- > 0;) wgt_tensor_unref(scope->tensors[i]);
    free(scope->tensors);
    ctx->n_scopes--;
    return ctx->status;
}

/* Adds t to the innermost scope. */
static bool scope_add(wgt_context *ctx, wgt_tensor *t)
{
    t->scope_level = -1;
    if (ctx->n_scopes == 0) return true;
    wgt_scope *scope = &ctx->scopes[ctx->n_scopes - 1];
    if (scope->count == scope->capacity) {
        size_t capacity = scope->capacity ? scope->capacity * 2 : 64;
        wgt_tensor **grown = realloc(scope->tensors, capacity * sizeof(*grown));
        if (!grown) return false;
        scope->tensors = grown;
        scope->capacity = capacity;
    }
    t->scope_level = ctx->n_scopes - 1;
    t->scope_slot = scope->count;
    scope->tensors[scope->count++] = t;
    return true;
}

/* Removes t from its scope (swap with the last entry). */
void wgt_scope_remove(wgt_tensor *t)
{
    if (t->scope_level < 0) return;
    wgt_scope *scope = &t->ctx->scopes[t->scope_level];
    wgt_tensor *last = scope->tensors[--scope->count];
    scope->tensors[t->scope_slot] = last;
    last->scope_slot = t->scope_slot;
    t->scope_level = -1;
}

wgt_tensor *wgt_scope_keep(wgt_tensor *t)
{
    if (!t || t->scope_level < 0) return t;
    wgt_context *ctx = t->ctx;
    int level = t->scope_level;
    wgt_scope_remove(t);
    if (level > 0) {
        /* Hand it to the enclosing scope. */
        int saved = ctx->n_scopes;
        ctx->n_scopes = level;
        if (!scope_add(ctx, t))
            wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_scope_keep: out of host memory");
        ctx->n_scopes = saved;
    }
    return t;
}

/* --------------------------------------------------------------- accessors */

wgt_context *wgt_tensor_context(const wgt_tensor *t) { return t ? t->ctx : NULL; }
wgt_dtype wgt_tensor_dtype(const wgt_tensor *t) { return t ? t->view.dtype : WGT_DTYPE_COUNT; }
int wgt_tensor_ndim(const wgt_tensor *t) { return t ? t->view.ndim : -1; }
const int64_t *wgt_tensor_shape(const wgt_tensor *t) { return t ? t->view.shape : NULL; }
const int64_t *wgt_tensor_strides(const wgt_tensor *t) { return t ? t->view.strides : NULL; }
int64_t wgt_tensor_offset(const wgt_tensor *t) { return t ? t->view.offset : 0; }
int64_t wgt_tensor_numel(const wgt_tensor *t) { return t ? wgt_shape_numel(t->view.ndim, t->view.shape) : 0; }
bool wgt_tensor_is_contiguous(const wgt_tensor *t) { return t && wgt_view_is_contiguous(&t->view); }

int64_t wgt_tensor_dim(const wgt_tensor *t, int axis)
{
    if (!t) return -1;
    if (axis < 0) axis += t->view.ndim;
    if (axis < 0 || axis >= t->view.ndim) return -1;
    return t->view.shape[axis];
}

const char *wgt_tensor_describe(const wgt_tensor *t, char *buf, size_t size)
{
    if (!buf || size == 0) return buf;
    if (!t) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    char shape[160];
    snprintf(buf, size, "%s %s", wgt_shape_string(t->view.ndim, t->view.shape, shape, sizeof(shape)),
             wgt_dtype_name(t->view.dtype));
    return buf;
}
