/* Contexts: backend selection, the sticky error, scopes, statistics. */
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
    options->wait_timeout_ms = 10000;
}

static wgt_status record_error(wgt_context *ctx, wgt_status status, bool fatal, const char *fmt, va_list ap)
{
    if (!ctx) return status;
    if (ctx->status == WGT_OK || (fatal && !ctx->fatal)) {
        ctx->status = status;
        vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
    }
    if (fatal) ctx->fatal = true;
    return status;
}

wgt_status wgt_error(wgt_context *ctx, wgt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_error(ctx, status, false, fmt, ap);
    va_end(ap);
    return status;
}

void wgt_error_fatal(wgt_context *ctx, wgt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_error(ctx, status, true, fmt, ap);
    va_end(ap);
}

/* WGT_BACKEND=cpu|webgpu and WGT_ADAPTER=<index|name substring> override AUTO
 * and an unset adapter choice, so a user can steer any program without a rebuild. */
static void apply_environment(wgt_context_options *o)
{
    const char *backend = getenv("WGT_BACKEND");
    if (backend && o->backend == WGT_BACKEND_AUTO) {
        if (strcasecmp(backend, "cpu") == 0) o->backend = WGT_BACKEND_CPU;
        else if (strcasecmp(backend, "webgpu") == 0 || strcasecmp(backend, "gpu") == 0) o->backend = WGT_BACKEND_WEBGPU;
    }
    const char *adapter = getenv("WGT_ADAPTER");
    if (adapter && *adapter && o->adapter_index < 0 && !o->adapter_name) {
        char *end = NULL;
        long index = strtol(adapter, &end, 10);
        if (end && *end == '\0') o->adapter_index = (int)index;
        else o->adapter_name = adapter; /* getenv storage lives for the process */
    }
    if (o->wait_timeout_ms == 0) o->wait_timeout_ms = 10000;
}

wgt_context *wgt_context_create(const wgt_context_options *options)
{
    wgt_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) return NULL;
    if (options) ctx->options = *options;
    else wgt_context_options_init(&ctx->options);
    apply_environment(&ctx->options);

    wgt_backend_kind kind = ctx->options.backend;
    if (kind == WGT_BACKEND_WEBGPU || kind == WGT_BACKEND_AUTO) {
        ctx->backend = wgt_webgpu_backend_create(ctx, &ctx->options);
        if (ctx->backend) {
            ctx->backend_kind = WGT_BACKEND_WEBGPU;
        } else if (kind == WGT_BACKEND_AUTO) {
            /* AUTO falls back to the CPU when there is no usable adapter. */
            ctx->status = WGT_OK;
            ctx->fatal = false;
            ctx->message[0] = '\0';
        }
    }
    if (!ctx->backend && kind != WGT_BACKEND_WEBGPU) {
        ctx->backend = wgt_cpu_backend_create(ctx, &ctx->options);
        ctx->backend_kind = WGT_BACKEND_CPU;
    }
    if (!ctx->backend) {
        if (ctx->status == WGT_OK)
            wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_context_create: backend creation failed");
        ctx->fatal = true;
    } else if ((getenv("WGT_PROFILE") && strcmp(getenv("WGT_PROFILE"), "0") != 0) || getenv("WGT_PROFILE_TRACE")) {
        if (wgt_profiler_enable(ctx, true) != WGT_OK) {
            fprintf(stderr, "wgtensor: WGT_PROFILE ignored: %s\n", ctx->message);
            wgt_context_clear_error(ctx);
        }
    }
    return ctx;
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

void wgt_context_destroy(wgt_context *ctx)
{
    if (!ctx) return;
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

/* ------------------------------------------------------------------ scopes */

int64_t wgt_context_live_tensors(const wgt_context *ctx) { return ctx ? ctx->live_tensors : 0; }

wgt_status wgt_scope_push(wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (!context_ready(ctx)) return ctx->status;
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
    /* Detach first so release does not edit the array we walk. */
    for (size_t i = 0; i < scope->count; i++) scope->tensors[i]->scope_level = -1;
    for (size_t i = 0; i < scope->count; i++) wgt_tensor_release(scope->tensors[i]);
    free(scope->tensors);
    ctx->n_scopes--;
    return ctx->status;
}

/* Registration used by tensor.c: adds t to the innermost scope. */
bool wgt_scope_add(wgt_context *ctx, wgt_tensor *t);
bool wgt_scope_add(wgt_context *ctx, wgt_tensor *t)
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
void wgt_scope_remove(wgt_tensor *t);
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
        if (!wgt_scope_add(ctx, t))
            wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_scope_keep: out of host memory");
        ctx->n_scopes = saved;
    }
    return t;
}
