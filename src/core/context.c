/* Contexts: the sticky error, scopes, statistics (opening one: src/runtime). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

void wgt_context_options_init(wgt_context_options *options)
{
    if (!options) return;
    memset(options, 0, sizeof(*options));
    options->backend = WGT_BACKEND_AUTO;
    options->adapter_index = -1;
    options->wait_timeout_ms = 0; /* the backend's default: see wgtensor.h */
}

/* For the optional GPU-only entry points (profiler, tuner). */
static bool backend_entry_ready(wgt_context *ctx, const char *op, bool need_backend_member)
{
    if (!ctx) return false;
    if (ctx->status != WGT_OK || !ctx->backend) return false;
    if (!need_backend_member) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: the %s backend does not offer this", op, ctx->backend->vt->name);
        return false;
    }
    return true;
}

wgt_status wgt_profiler_enable(wgt_context *ctx, bool enable)
{
    if (!backend_entry_ready(ctx, "wgt_profiler_enable", ctx && ctx->backend && ctx->backend->vt->profiler_enable))
        return ctx ? ctx->status : WGT_ERR_INVALID_ARGUMENT;
    wgt_status s = ctx->backend->vt->profiler_enable(ctx->backend, enable);
    ctx->profiling = s == WGT_OK && enable;
    return s;
}

wgt_status wgt_profiler_report(wgt_context *ctx, FILE *out)
{
    if (!backend_entry_ready(ctx, "wgt_profiler_report", ctx && ctx->backend && ctx->backend->vt->profiler_report))
        return ctx ? ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!out) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_profiler_report: out is NULL");
    return ctx->backend->vt->profiler_report(ctx->backend, out);
}

wgt_status wgt_tune(wgt_context *ctx, bool quick, const char *cache_path, FILE *log)
{
    if (!backend_entry_ready(ctx, "wgt_tune", ctx && ctx->backend && ctx->backend->vt->tune))
        return ctx ? ctx->status : WGT_ERR_INVALID_ARGUMENT;
    return ctx->backend->vt->tune(ctx->backend, quick, cache_path, log);
}

wgt_status wgt_profiler_write_trace(wgt_context *ctx, const char *path)
{
    if (!backend_entry_ready(ctx, "wgt_profiler_write_trace", ctx && ctx->backend && ctx->backend->vt->profiler_write_trace))
        return ctx ? ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!path) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_profiler_write_trace: path is NULL");
    return ctx->backend->vt->profiler_write_trace(ctx->backend, path);
}

void wgt_reads_discard_all(wgt_context *ctx)
{
    while (ctx->reads) {
        struct wgt_read *r = ctx->reads;
        ctx->reads = r->next;
        if (r->pending) ctx->backend->vt->storage_read_finish(ctx->backend, r->pending, NULL);
        free(r->host);
        free(r);
    }
}

void wgt_context_destroy(wgt_context *ctx)
{
    if (!ctx) return;
    if (ctx->backend) wgt_reads_discard_all(ctx);
    /* Release what scopes still hold, innermost first. */
    while (ctx->n_scopes > 0) {
        ctx->status = WGT_OK; /* let pop run even on an errored context */
        wgt_scope_pop(ctx);
    }
    free(ctx->scopes);
    if (ctx->profiling && ctx->status == WGT_OK) {
        const char *trace = getenv("WGT_PROFILE_TRACE");
        if (trace) wgt_profiler_write_trace(ctx, trace);
        if (getenv("WGT_PROFILE")) wgt_profiler_report(ctx, stderr);
    }
    wgt_memory_trace_peak(ctx, false);
    if (ctx->backend) ctx->backend->vt->destroy(ctx->backend);
    free(ctx);
}

wgt_status wgt_context_status(const wgt_context *ctx)
{
    return ctx ? ctx->status : WGT_ERR_INVALID_ARGUMENT;
}

const char *wgt_context_error_message(const wgt_context *ctx)
{
    if (!ctx) return "wgt_context_error_message: ctx is NULL";
    return ctx->message;
}

wgt_status wgt_context_clear_error(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!ctx->fatal) {
        ctx->status = WGT_OK;
        ctx->message[0] = '\0';
    }
    return ctx->status;
}

wgt_backend_kind wgt_context_backend(const wgt_context *ctx)
{
    return ctx ? ctx->backend_kind : WGT_BACKEND_AUTO;
}

/* Common entry check for calls that take only a context. */
static bool context_ready(wgt_context *ctx)
{
    return ctx && ctx->status == WGT_OK && ctx->backend;
}

wgt_matmul_precision wgt_set_matmul_precision(wgt_context *ctx, wgt_matmul_precision precision)
{
    if (!ctx) return WGT_MATMUL_PRECISION_HIGHEST;
    wgt_matmul_precision old = ctx->matmul_precision;
    if (precision == WGT_MATMUL_PRECISION_HIGHEST || precision == WGT_MATMUL_PRECISION_MEDIUM)
        ctx->matmul_precision = precision;
    return old;
}

wgt_status wgt_context_adapter_info(wgt_context *ctx, wgt_adapter_info *info)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!context_ready(ctx)) return ctx->status;
    if (!info) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_context_adapter_info: info is NULL");
    return ctx->backend->vt->adapter_info(ctx->backend, info);
}

wgt_status wgt_synchronize(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!context_ready(ctx)) return ctx->status;
    return ctx->backend->vt->synchronize(ctx->backend);
}

#define STATS_GETTER(fn, type, member)                                                      \
    wgt_status fn(wgt_context *ctx, type *stats)                                            \
    {                                                                                       \
        if (!ctx) return WGT_ERR_INVALID_ARGUMENT;                                          \
        if (!context_ready(ctx)) return ctx->status;                                        \
        if (!stats) return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, #fn ": stats is NULL"); \
        memset(stats, 0, sizeof(*stats));                                                   \
        if (!ctx->backend->vt->member) return WGT_OK;                                       \
        return ctx->backend->vt->member(ctx->backend, stats);                               \
    }
STATS_GETTER(wgt_memory_stats_get, wgt_memory_stats, memory_stats)
STATS_GETTER(wgt_pipeline_stats_get, wgt_pipeline_stats, pipeline_stats)
STATS_GETTER(wgt_execution_stats_get, wgt_execution_stats, execution_stats)

wgt_status wgt_memory_trim(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!context_ready(ctx)) return ctx->status;
    return ctx->backend->vt->memory_trim ? ctx->backend->vt->memory_trim(ctx->backend) : WGT_OK;
}

wgt_status wgt_memory_set_budget(wgt_context *ctx, uint64_t budget_bytes)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!context_ready(ctx)) return ctx->status;
    if (!ctx->backend->vt->memory_set_budget)
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "wgt_memory_set_budget: the %s backend has no budget",
                         ctx->backend->vt->name);
    return ctx->backend->vt->memory_set_budget(ctx->backend, budget_bytes);
}

