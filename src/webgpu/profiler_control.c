/* The profiler's calls from the user (wgt_profiler_enable, _report,
 * _write_trace): each first brings the queue to a point (flush or finish,
 * execution.c), then acts on what profiler.c recorded. Apart from profiler.c
 * because execution.c calls profiler.c at every pass and submit: with these
 * here, calls run one way, from this file down through execution.c to the
 * recording side. */
#include <stdio.h>

#include "webgpu/webgpu_internal.h"

wgt_status webgpu_profiler_enable(wgt_backend *b, bool enable)
{
    webgpu_backend *wg = webgpu_of(b);
    if (!enable) {
        webgpu_flush(wg);
        webgpu_profiler_destroy(wg);
        return WGT_OK;
    }
    if (wg->profiler) return WGT_OK;
    if (!wg->has_timestamps)
        return wgt_error(b->ctx, WGT_ERR_UNSUPPORTED, "wgt_profiler_enable: adapter \"%s\" has no timestamp queries",
                         wg->info.name);
    webgpu_flush(wg); /* earlier work is not profiled */
    return webgpu_profiler_create(wg);
}

wgt_status webgpu_profiler_report(wgt_backend *b, FILE *out)
{
    webgpu_backend *wg = webgpu_of(b);
    if (!wg->profiler)
        return wgt_error(b->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_profiler_report: the profiler is not enabled");
    wgt_status s = webgpu_finish(wg, "wgt_profiler_report");
    if (s != WGT_OK) return s;
    webgpu_profiler_print(wg, out);
    return WGT_OK;
}

wgt_status webgpu_profiler_write_trace(wgt_backend *b, const char *path)
{
    webgpu_backend *wg = webgpu_of(b);
    if (!wg->profiler)
        return wgt_error(b->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_profiler_write_trace: the profiler is not enabled");
    wgt_status s = webgpu_finish(wg, "wgt_profiler_write_trace");
    if (s != WGT_OK) return s;
    FILE *f = fopen(path, "w");
    if (!f) return wgt_error(b->ctx, WGT_ERR_IO, "wgt_profiler_write_trace: cannot write \"%s\"", path);
    webgpu_profiler_print_trace(wg, f);
    bool ok = fclose(f) == 0;
    return ok ? WGT_OK : wgt_error(b->ctx, WGT_ERR_IO, "wgt_profiler_write_trace: writing \"%s\" failed", path);
}
