/* The host path of data-parallel training, measured alone (issue 15,
 * bench/results/h200x4-2026-11-27): wgt_tensor_write (+ wgt_synchronize) and
 * wgt_tensor_read of an f32 tensor of each size in MB, best of 5.
 *   cc -O2 -Iinclude bench/host_path_bench.c -Lbuild/lib -lwgtensor -Wl,-rpath,build/lib -o host_path_bench
 *   ./host_path_bench 43 340 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <wgtensor.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    wgt_context *ctx = wgt_context_create(NULL);
    for (int a = 1; a < argc && wgt_context_status(ctx) == WGT_OK; a++) {
        int64_t mb = atoll(argv[a]), n = mb * 262144;
        float *host = malloc((size_t)n * sizeof(float));
        if (!host) return 1;
        for (int64_t i = 0; i < n; i++) host[i] = (float)i;
        wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
        wgt_synchronize(ctx);
        double best_write = 1e9, best_read = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now_s();
            wgt_tensor_write(t, host, (size_t)n * sizeof(float));
            wgt_synchronize(ctx);
            double t1 = now_s();
            wgt_tensor_read(t, host, (size_t)n * sizeof(float));
            double t2 = now_s();
            if (t1 - t0 < best_write) best_write = t1 - t0;
            if (t2 - t1 < best_read) best_read = t2 - t1;
        }
        printf("%4lld MB: write %.2f ms (%.1f GB/s), read %.2f ms (%.1f GB/s)\n", (long long)mb, best_write * 1e3,
               (double)mb / 1024.0 / best_write, best_read * 1e3, (double)mb / 1024.0 / best_read);
        wgt_tensor_release(t);
        free(host);
    }
    int failed = wgt_context_status(ctx) != WGT_OK;
    if (failed) fprintf(stderr, "%s\n", wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);
    return failed;
}
