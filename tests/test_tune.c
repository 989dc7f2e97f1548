/* Autotuning: wgt_tune writes a cache entry per size bucket for this adapter,
 * keeps other adapters' entries, and a new context that loads the cache still
 * computes correct products; a malformed cache is ignored. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), f)) n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void check_matmul(wgt_context *ctx, wgt_context *cpu, int64_t n)
{
    int64_t shape[2] = {n, n};
    wgt_tensor *a = wgt_rand(ctx, WGT_F32, 2, shape, 3), *b = wgt_rand(ctx, WGT_F32, 2, shape, 4);
    wgt_tensor *ca = wgt_rand(cpu, WGT_F32, 2, shape, 3), *cb = wgt_rand(cpu, WGT_F32, 2, shape, 4);
    wgt_tensor *g = wgt_matmul(a, b), *c = wgt_matmul(ca, cb);
    float *x = malloc((size_t)(n * n) * 4), *y = malloc((size_t)(n * n) * 4);
    CHECK(g && c && wgt_tensor_read(g, x, (size_t)(n * n) * 4) == WGT_OK && wgt_tensor_read(c, y, (size_t)(n * n) * 4) == WGT_OK,
          "matmul %lld: %s", (long long)n, wgt_context_error_message(ctx));
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n * n; i++) {
        err += (x[i] - y[i]) * (double)(x[i] - y[i]);
        ref += (double)y[i] * y[i];
    }
    CHECK(sqrt(err / ref) < 1e-5, "tuned matmul %lld error %g", (long long)n, sqrt(err / ref));
    free(x);
    free(y);
    wgt_tensor *all[] = {a, b, ca, cb, g, c};
    for (int i = 0; i < 6; i++) wgt_tensor_release(all[i]);
}

int main(void)
{
    const char *path = "test_tune_cache.tsv";
    FILE *f = fopen(path, "w");
    fprintf(f, "v1\tsome other adapter\tdriver 1\t2\ttile64x64k8\t1.0\ngarbage line\nv1\tx\n");
    fclose(f);
    setenv("WGT_TUNE_CACHE", path, 1); /* the malformed lines above must be ignored */
    wgt_context *ctx = test_webgpu_context(), *cpu = test_cpu_context();
    if (!ctx || !cpu) return test_summary();
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    CHECK(wgt_tune(ctx, true, path, NULL) == WGT_OK, "tune: %s", wgt_context_error_message(ctx));
    CHECK(count_lines(path, info.name) == 2, "two buckets for this adapter, got %d", count_lines(path, info.name));
    CHECK(count_lines(path, "some other adapter") == 1, "other adapters' entries kept");
    CHECK(wgt_tune(ctx, true, path, NULL) == WGT_OK, "tune again");
    CHECK(count_lines(path, info.name) == 2, "re-tuning replaces, got %d", count_lines(path, info.name));
    wgt_context_destroy(ctx);
    /* A new context loads the cache; products stay correct. */
    ctx = test_webgpu_context();
    if (ctx) {
        check_matmul(ctx, cpu, 200);
        check_matmul(ctx, cpu, 37);
        /* a path below a regular file cannot be written */
        CHECK(wgt_tune(ctx, true, "test_tune_cache.tsv/sub/cache.tsv", NULL) == WGT_ERR_IO, "unwritable path: %s",
              wgt_status_string(wgt_context_status(ctx)));
        check_error_and_recover(ctx, WGT_ERR_IO, "unwritable tuning cache");
        wgt_context_destroy(ctx);
    }
    CHECK(wgt_tune(cpu, true, path, NULL) == WGT_ERR_UNSUPPORTED, "the CPU backend has no tuner");
    wgt_context_destroy(cpu);
    remove(path);
    return test_summary();
}
