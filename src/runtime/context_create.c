/*
 * Opening a context: the environment overrides, then the backend (WebGPU when
 * an adapter is usable, else the CPU under AUTO). This is the one place that
 * knows every backend, so it sits on its own floor above them; core only sees
 * the backend table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

/* WGT_BACKEND=cpu|webgpu and WGT_ADAPTER=<index|name substring> override AUTO
 * and an unset adapter choice, and WGT_WAIT_TIMEOUT_MS any deadline, so a user
 * can steer any program without a rebuild. */
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
    /* Any program's deadline can be raised (a slow device) or lowered (tests)
     * without a rebuild; 0 leaves the backend's default. */
    const char *timeout = getenv("WGT_WAIT_TIMEOUT_MS");
    if (timeout && *timeout) {
        char *end = NULL;
        unsigned long long ms = strtoull(timeout, &end, 10);
        if (end && *end == '\0' && ms > 0) o->wait_timeout_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
        else fprintf(stderr, "wgtensor: WGT_WAIT_TIMEOUT_MS=\"%s\" ignored (a number of milliseconds > 0)\n", timeout);
    }
}

/* The ops and autograd floors' knobs (wgt_context's last fields), read once
 * here rather than on every op call. */
static void read_op_knobs(wgt_context *ctx)
{
    const char *conv_splitk = getenv("WGT_CONV_SPLITK");
    ctx->conv_frontend_splits = conv_splitk && strcmp(conv_splitk, "0") == 0;
    const char *window_dest = getenv("WGT_AUTOGRAD_WINDOW_DEST");
    ctx->no_window_dest = window_dest && strcmp(window_dest, "0") == 0;
    const char *chunks = getenv("WGT_NORM_FUSED_CHUNKS");
    long n = chunks ? strtol(chunks, NULL, 10) : 0;
    ctx->norm_fused_chunks = n >= 16 && n <= 65536 ? (int)n : 0;
    const char *fold = getenv("WGT_AUTOGRAD_FOLD");
    ctx->no_grad_fold = fold && strcmp(fold, "0") == 0;
    const char *mask = getenv("WGT_DROPOUT_MASK");
    ctx->no_dropout_mask = mask && strcmp(mask, "0") == 0;
}

wgt_context *wgt_context_create(const wgt_context_options *options)
{
    wgt_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) return NULL;
    if (options) ctx->options = *options;
    else wgt_context_options_init(&ctx->options);
    apply_environment(&ctx->options);
    read_op_knobs(ctx);

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

