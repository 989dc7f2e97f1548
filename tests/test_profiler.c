/* The GPU profiler: per-op report and a trace file, from timestamp queries. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static char *slurp(FILE *f)
{
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
    return s;
}

int main(void)
{
    wgt_context *ctx = test_webgpu_context();
    if (!ctx) return test_summary();
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    if (!info.timestamp_query) {
        CHECK(wgt_profiler_enable(ctx, true) == WGT_ERR_UNSUPPORTED, "no timestamps: UNSUPPORTED");
        wgt_context_destroy(ctx);
        return test_summary();
    }
    CHECK(wgt_profiler_report(ctx, stdout) == WGT_ERR_INVALID_ARGUMENT, "report before enable");
    wgt_context_clear_error(ctx);
    CHECK(wgt_profiler_enable(ctx, true) == WGT_OK, "enable: %s", wgt_context_error_message(ctx));
    int64_t shape[2] = {64, 96};
    wgt_tensor *a = wgt_rand(ctx, WGT_F32, 2, shape, 1);
    for (int i = 0; i < 3; i++) {
        wgt_tensor *b = wgt_exp(a);
        wgt_tensor *c = wgt_softmax(b, -1);
        wgt_tensor_release(b);
        wgt_tensor_release(c);
    }
    FILE *report = tmpfile();
    CHECK(wgt_profiler_report(ctx, report) == WGT_OK, "report: %s", wgt_context_error_message(ctx));
    char *text = slurp(report);
    fclose(report);
    printf("%s", text);
    CHECK(strstr(text, "wgt_exp") && strstr(text, "wgt_softmax") && strstr(text, "wgt_rand"), "ops in the report");
    const char *line = strstr(text, "wgt_exp");
    unsigned long calls = 0;
    double total = -1;
    CHECK(line && sscanf(line, "wgt_exp %lu %lf", &calls, &total) == 2 && calls == 3 && total > 0,
          "wgt_exp: 3 calls with GPU time, got %lu calls, %g ms", calls, total);
    free(text);
    const char *path = "test_profiler_trace.json";
    CHECK(wgt_profiler_write_trace(ctx, path) == WGT_OK, "trace: %s", wgt_context_error_message(ctx));
    FILE *f = fopen(path, "r");
    char *trace = f ? slurp(f) : NULL;
    if (f) fclose(f);
    CHECK(trace && strstr(trace, "\"traceEvents\"") && strstr(trace, "\"ph\": \"X\"") && strstr(trace, "wgt_softmax"),
          "trace content");
    free(trace);
    remove(path);
    CHECK(wgt_profiler_enable(ctx, false) == WGT_OK, "disable");
    CHECK(wgt_profiler_report(ctx, stdout) == WGT_ERR_INVALID_ARGUMENT, "report after disable");
    wgt_context_clear_error(ctx);
    wgt_tensor_release(a);
    wgt_context_destroy(ctx);
    return test_summary();
}
