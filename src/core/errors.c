/* The sticky error of a context: the first error wins and stays until cleared
 * (wgt_context_clear_error); a fatal one (device lost, failed creation) never
 * clears. The lowest piece of core: everything else reports through it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

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

void wgt_error_name_op(wgt_context *ctx, const char *op)
{
    if (!ctx || ctx->status == WGT_OK || ctx->fatal) return;
    const size_t n = strlen(op), size = sizeof(ctx->message);
    if (n + 3 > size || (strncmp(ctx->message, op, n) == 0 && ctx->message[n] == ':')) return;
    size_t len = strlen(ctx->message);
    if (n + 2 + len >= size) len = size - n - 3; /* the inner message's end gives way */
    memmove(ctx->message + n + 2, ctx->message, len);
    ctx->message[n + 2 + len] = '\0';
    memcpy(ctx->message, op, n);
    ctx->message[n] = ':', ctx->message[n + 1] = ' ';
}
