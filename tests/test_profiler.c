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

/* Events of a trace (start and duration in us, as written) in order; -1 when
 * it does not parse. */
static int trace_events(const char *trace, double *ts, double *dur, int cap)
{
    int n = 0;
    for (const char *at = strstr(trace, "\"ts\": "); at && n < cap; at = strstr(at + 1, "\"ts\": ")) {
        if (sscanf(at, "\"ts\": %lf, \"dur\": %lf", &ts[n], &dur[n]) != 2) return -1;
        n++;
    }
    return n;
}

/* The report and the trace of three rounds of exp and softmax. in_pass: the
 * context was made with WGT_PROFILE_IN_PASS=1 (timestamps between the
 * dispatches of the shared pass): its events follow one another without
 * overlap, as a chain's dispatches run. */
static void check_profile(wgt_context *ctx, const char *mode, bool in_pass)
{
    CHECK(wgt_profiler_report(ctx, stdout) == WGT_ERR_INVALID_ARGUMENT, "%s: report before enable", mode);
    wgt_context_clear_error(ctx);
    CHECK(wgt_profiler_enable(ctx, true) == WGT_OK, "%s: enable: %s", mode, wgt_context_error_message(ctx));
    int64_t shape[2] = {64, 96};
    wgt_tensor *a = wgt_rand(ctx, WGT_F32, 2, shape, 1);
    for (int i = 0; i < 3; i++) {
        wgt_tensor *b = wgt_exp(a);
        wgt_tensor *c = wgt_softmax(b, -1);
        wgt_tensor_release(b);
        wgt_tensor_release(c);
    }
    FILE *report = tmpfile();
    CHECK(wgt_profiler_report(ctx, report) == WGT_OK, "%s: report: %s", mode, wgt_context_error_message(ctx));
    char *text = slurp(report);
    fclose(report);
    printf("%s\n%s", mode, text);
    CHECK(strstr(text, "wgt_exp") && strstr(text, "wgt_softmax") && strstr(text, "wgt_rand"), "%s: ops in the report",
          mode);
    const char *line = strstr(text, "wgt_exp");
    unsigned long calls = 0;
    double total = -1;
    CHECK(line && sscanf(line, "wgt_exp %lu %lf", &calls, &total) == 2 && calls == 3 && total > 0,
          "%s: wgt_exp: 3 calls with GPU time, got %lu calls, %g ms", mode, calls, total);
    free(text);
    const char *path = "test_profiler_trace.json";
    CHECK(wgt_profiler_write_trace(ctx, path) == WGT_OK, "%s: trace: %s", mode, wgt_context_error_message(ctx));
    FILE *f = fopen(path, "r");
    char *trace = f ? slurp(f) : NULL;
    if (f) fclose(f);
    CHECK(trace && strstr(trace, "\"traceEvents\"") && strstr(trace, "\"ph\": \"X\"") && strstr(trace, "wgt_softmax"),
          "%s: trace content", mode);
    double ts[64], dur[64];
    const int n = trace ? trace_events(trace, ts, dur, 64) : -1;
    int overlaps = 0;
    for (int i = 1; i < n; i++) overlaps += ts[i] + 1e-3 < ts[i - 1] + dur[i - 1];
    CHECK(n >= 7 && (!in_pass || overlaps == 0), "%s: %d events, %d starting before the one before ends", mode, n,
          overlaps);
    free(trace);
    remove(path);
    CHECK(wgt_profiler_enable(ctx, false) == WGT_OK, "%s: disable", mode);
    CHECK(wgt_profiler_report(ctx, stdout) == WGT_ERR_INVALID_ARGUMENT, "%s: report after disable", mode);
    wgt_context_clear_error(ctx);
    wgt_tensor_release(a);
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
    check_profile(ctx, "a pass a dispatch", false);
    wgt_context_destroy(ctx);
    /* timestamps inside the shared pass (wgpu-native offers them on Vulkan: lavapipe, NVIDIA) */
    ctx = test_context_env(NULL, (const char *const[]){"WGT_PROFILE_IN_PASS", "1", NULL});
    CHECK(ctx != NULL, "webgpu context with WGT_PROFILE_IN_PASS=1");
    if (ctx) check_profile(ctx, "WGT_PROFILE_IN_PASS=1", true);
    wgt_context_destroy(ctx);
    return test_summary();
}
