/* Peak memory accounting (wgt_memory_trace_peak / wgt_memory_peak_report in
 * wgtensor.h): while on, every storage carries a record of who made it (the
 * op's name, the backward rule running at the time, the first tensor's shape
 * and dtype), and every allocation that lifts the backend's bytes_in_use above
 * the highest value seen so far copies the records of all live storages. The
 * report groups that copy. Off, the storage paths test one pointer. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct wgt_storage_trace {
    struct wgt_storage_trace *prev, *next; /* the live list */
    wgt_storage *storage;
    const char *op;    /* the op string the storage was allocated under (static) */
    const char *where; /* NULL: outside backward; else a static phase name */
    int rule;          /* the wgt_op whose backward rule ran, or -1 */
    uint64_t serial;   /* allocation order */
    size_t requested;
    wgt_dtype dtype;
    int ndim;          /* -1 until a tensor wraps the storage */
    int64_t shape[WGT_MAX_DIMS];
} wgt_storage_trace;

struct wgt_memory_trace {
    wgt_storage_trace head; /* sentinel of the live list */
    uint64_t serial;
    uint64_t peak;          /* highest bytes_in_use seen while tracing */
    uint64_t peak_requested;
    uint64_t peak_serial;   /* the allocation that reached it */
    wgt_storage_trace *snapshot; /* copies of the live records at the peak */
    size_t n_snapshot, snapshot_capacity;
    size_t n_live;
};

static void unlink_record(wgt_storage_trace *r)
{
    r->prev->next = r->next;
    r->next->prev = r->prev;
}

wgt_status wgt_memory_trace_peak(wgt_context *ctx, bool on)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    wgt_memory_trace *t = ctx->memory_trace;
    if (on) {
        if (t) { /* restart the peak, keep the live records */
            t->peak = 0;
            t->n_snapshot = 0;
            return WGT_OK;
        }
        t = calloc(1, sizeof(*t));
        if (!t) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_memory_trace_peak: out of host memory");
        t->head.prev = t->head.next = &t->head;
        ctx->memory_trace = t;
        return WGT_OK;
    }
    if (!t) return WGT_OK;
    while (t->head.next != &t->head) {
        wgt_storage_trace *r = t->head.next;
        unlink_record(r);
        r->storage->trace = NULL;
        free(r);
    }
    free(t->snapshot);
    free(t);
    ctx->memory_trace = NULL;
    return WGT_OK;
}

static void take_snapshot(wgt_memory_trace *t)
{
    if (t->n_live > t->snapshot_capacity) {
        size_t capacity = t->n_live * 2;
        wgt_storage_trace *grown = realloc(t->snapshot, capacity * sizeof(*grown));
        if (!grown) return; /* keep the older peak's copy */
        t->snapshot = grown;
        t->snapshot_capacity = capacity;
    }
    size_t n = 0;
    uint64_t requested = 0;
    for (wgt_storage_trace *r = t->head.next; r != &t->head; r = r->next) {
        t->snapshot[n++] = *r;
        requested += r->requested;
    }
    t->n_snapshot = n;
    t->peak_requested = requested;
}

void wgt_memory_trace_alloc(wgt_context *ctx, wgt_storage *s, const char *op)
{
    wgt_memory_trace *t = ctx->memory_trace;
    wgt_storage_trace *r = calloc(1, sizeof(*r));
    if (!r) return; /* tracing is best effort */
    r->storage = s;
    r->op = op;
    r->where = ctx->trace_where;
    r->rule = ctx->trace_rule1 - 1;
    r->serial = ++t->serial;
    r->requested = s->requested;
    r->ndim = -1;
    r->prev = t->head.prev;
    r->next = &t->head;
    r->prev->next = r;
    t->head.prev = r;
    t->n_live++;
    s->trace = r;
    wgt_memory_stats m = {0};
    if (ctx->backend->vt->memory_stats && ctx->backend->vt->memory_stats(ctx->backend, &m) == WGT_OK &&
        m.bytes_in_use > t->peak) {
        t->peak = m.bytes_in_use;
        t->peak_serial = r->serial;
        take_snapshot(t);
    }
}

void wgt_memory_trace_wrap(wgt_context *ctx, wgt_storage *s, const wgt_tensor_view *v)
{
    wgt_storage_trace *r = s->trace;
    if (r->ndim >= 0) return; /* the first tensor names it */
    r->dtype = v->dtype;
    r->ndim = v->ndim;
    memcpy(r->shape, v->shape, sizeof(r->shape));
    wgt_memory_trace *t = ctx->memory_trace;
    if (t && t->n_snapshot > 0 && t->snapshot[t->n_snapshot - 1].serial == r->serial) /* the peak's, copied unnamed */
        t->snapshot[t->n_snapshot - 1] = *r;
}

void wgt_memory_trace_free(wgt_context *ctx, wgt_storage *s)
{
    wgt_storage_trace *r = s->trace;
    unlink_record(r);
    if (ctx->memory_trace) ctx->memory_trace->n_live--;
    free(r);
    s->trace = NULL;
}

typedef struct group {
    const char *op, *where;
    int rule, ndim;
    wgt_dtype dtype;
    int64_t shape[WGT_MAX_DIMS];
    int count;
    uint64_t bytes;
} group;

static bool same_group(const group *g, const wgt_storage_trace *r)
{
    return g->op == r->op && g->where == r->where && g->rule == r->rule && g->ndim == r->ndim &&
           (r->ndim < 0 || (g->dtype == r->dtype && !memcmp(g->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim)));
}

static int by_bytes(const void *a, const void *b)
{
    const group *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

wgt_status wgt_memory_peak_report(wgt_context *ctx, FILE *out)
{
    if (!ctx || !out) return WGT_ERR_INVALID_ARGUMENT;
    wgt_memory_trace *t = ctx->memory_trace;
    if (!t) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_memory_peak_report: wgt_memory_trace_peak is off");
    group *g = calloc(t->n_snapshot + 1, sizeof(*g));
    if (!g) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_memory_peak_report: out of host memory");
    size_t n = 0;
    for (size_t i = 0; i < t->n_snapshot; i++) {
        const wgt_storage_trace *r = &t->snapshot[i];
        size_t k = 0;
        while (k < n && !same_group(&g[k], r)) k++;
        if (k == n) {
            g[n].op = r->op;
            g[n].where = r->where;
            g[n].rule = r->rule;
            g[n].ndim = r->ndim;
            g[n].dtype = r->dtype;
            memcpy(g[n].shape, r->shape, sizeof(g[n].shape));
            n++;
        }
        g[k].count++;
        g[k].bytes += r->requested;
    }
    qsort(g, n, sizeof(*g), by_bytes);
    const wgt_storage_trace *last = NULL;
    for (size_t i = 0; i < t->n_snapshot; i++)
        if (t->snapshot[i].serial == t->peak_serial) last = &t->snapshot[i];
    fprintf(out, "peak: %.1f MiB in use (size classes), %.1f MiB requested by %zu storages\n",
            (double)t->peak / 1048576.0, (double)t->peak_requested / 1048576.0, t->n_snapshot);
    if (last) {
        char shape[160] = "?";
        if (last->ndim >= 0) wgt_shape_string(last->ndim, last->shape, shape, sizeof(shape));
        fprintf(out, "reached by %s %s (%s%s%s)\n", last->op, shape, last->where ? last->where : "forward",
                last->where && last->rule >= 0 ? " " : "",
                last->where && last->rule >= 0 ? wgt_op_name((wgt_op)last->rule) : "");
    }
    fprintf(out, "%10s %6s  %-34s %-30s %s\n", "MiB", "count", "made by", "during", "shape");
    for (size_t k = 0; k < n; k++) {
        char shape[160] = "?", during[96] = "forward";
        if (g[k].ndim >= 0) wgt_shape_string(g[k].ndim, g[k].shape, shape, sizeof(shape));
        if (g[k].where)
            snprintf(during, sizeof(during), "%s%s%s", g[k].where, g[k].rule >= 0 ? " " : "",
                     g[k].rule >= 0 ? wgt_op_name((wgt_op)g[k].rule) : "");
        fprintf(out, "%10.2f %6d  %-34s %-30s %s %s\n", (double)g[k].bytes / 1048576.0, g[k].count, g[k].op, during,
                g[k].ndim >= 0 ? wgt_dtype_name(g[k].dtype) : "", shape);
    }
    free(g);
    return WGT_OK;
}
