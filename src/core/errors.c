/* The sticky error of a context: the first error wins and stays until cleared
 * (wgt_context_clear_error); a fatal one (device lost, failed creation) never
 * clears. The lowest piece of core: everything else reports through it. */
#include <stdarg.h>
#include <stdio.h>

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
