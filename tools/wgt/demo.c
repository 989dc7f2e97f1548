/* wgt demo: picks the best adapter, prints it, runs a few kernels on it and on
 * the CPU backend, compares the results and prints timings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "wgt_commands.h"
#include "wgtensor.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef wgt_tensor *(*demo_fn)(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b);

static wgt_tensor *run_add(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b) { (void)ctx; return wgt_add(a, b); }
static wgt_tensor *run_fused(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b)
{
    wgt_tensor *in[3] = {a, b, a};
    return wgt_fused(ctx, "sqrt(a*b + c*c)", in, 3);
}
static wgt_tensor *run_matmul(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b) { (void)ctx; return wgt_matmul(a, b); }
static wgt_tensor *run_softmax(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b) { (void)ctx; (void)b; return wgt_softmax(a, -1); }
static wgt_tensor *run_sum(wgt_context *ctx, wgt_tensor *a, wgt_tensor *b)
{
    (void)ctx;
    (void)b;
    int axis = 1;
    return wgt_sum(a, &axis, 1, false);
}

/* Runs fn on fresh random inputs [n, n] in ctx; returns host output (malloc'd). */
static float *run_case(wgt_context *ctx, demo_fn fn, int64_t n, double *ms, int64_t *count)
{
    int64_t shape[2] = {n, n};
    wgt_tensor *a = wgt_rand(ctx, WGT_F32, 2, shape, 1);
    wgt_tensor *b = wgt_rand(ctx, WGT_F32, 2, shape, 2);
    wgt_synchronize(ctx);
    double t0 = now_ms();
    wgt_tensor *out = fn(ctx, a, b);
    wgt_synchronize(ctx);
    *ms = now_ms() - t0;
    float *host = NULL;
    if (out) {
        *count = wgt_tensor_numel(out);
        host = malloc((size_t)*count * sizeof(float));
        if (host && wgt_tensor_read(out, host, (size_t)*count * sizeof(float)) != WGT_OK) {
            free(host);
            host = NULL;
        }
    }
    wgt_tensor_release(out);
    wgt_tensor_release(a);
    wgt_tensor_release(b);
    return host;
}

int wgt_command_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    wgt_context *gpu = wgt_context_create(NULL);
    wgt_context_options cpu_options;
    wgt_context_options_init(&cpu_options);
    cpu_options.backend = WGT_BACKEND_CPU;
    wgt_context *cpu = wgt_context_create(&cpu_options);
    if (wgt_context_status(gpu) != WGT_OK || wgt_context_status(cpu) != WGT_OK) {
        fprintf(stderr, "wgt demo: %s\n", wgt_context_error_message(wgt_context_status(gpu) ? gpu : cpu));
        wgt_context_destroy(gpu);
        wgt_context_destroy(cpu);
        return 1;
    }
    wgt_adapter_info info;
    wgt_context_adapter_info(gpu, &info);
    printf("adapter: %s (%s, %s, driver %s)\n", info.name, info.backend, wgt_adapter_type_name(info.type),
           info.driver);
    if (wgt_context_backend(gpu) != WGT_BACKEND_WEBGPU) printf("note: no WebGPU adapter, running on the CPU backend\n");

    const struct {
        const char *name;
        demo_fn fn;
        int64_t n;
        double tolerance;
    } cases[] = {
        {"add [256, 256]", run_add, 256, 0},
        {"fused sqrt(a*b + c*c) [256, 256]", run_fused, 256, 1e-6},
        {"sum axis 1 [256, 256]", run_sum, 256, 1e-5},
        {"softmax [256, 256]", run_softmax, 256, 1e-5},
        {"matmul [128, 128] x [128, 128]", run_matmul, 128, 1e-4},
    };
    int failures = 0;
    printf("%-36s %10s %10s %12s  %s\n", "kernel", "gpu ms", "cpu ms", "max rel err", "result");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double gpu_ms = 0, cpu_ms = 0;
        int64_t n_gpu = 0, n_cpu = 0;
        /* first run compiles the kernel; time the second */
        free(run_case(gpu, cases[i].fn, cases[i].n, &gpu_ms, &n_gpu));
        float *g = run_case(gpu, cases[i].fn, cases[i].n, &gpu_ms, &n_gpu);
        float *c = run_case(cpu, cases[i].fn, cases[i].n, &cpu_ms, &n_cpu);
        if (!g || !c || n_gpu != n_cpu) {
            printf("%-36s %10s %10s %12s  error: %s\n", cases[i].name, "-", "-", "-",
                   wgt_context_error_message(g ? cpu : gpu));
            wgt_context_clear_error(gpu);
            wgt_context_clear_error(cpu);
            failures++;
        } else {
            double max_err = 0;
            for (int64_t k = 0; k < n_gpu; k++) {
                double err = fabs((double)g[k] - c[k]) / (fabs(c[k]) > 1 ? fabs(c[k]) : 1);
                if (!(err <= max_err)) max_err = err; /* NaN counts as a failure */
            }
            bool ok = max_err <= cases[i].tolerance;
            failures += !ok;
            printf("%-36s %10.3f %10.3f %12.2e  %s\n", cases[i].name, gpu_ms, cpu_ms, max_err, ok ? "ok" : "MISMATCH");
        }
        free(g);
        free(c);
    }
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    printf("%s\n", failures ? "demo: some kernels failed" : "demo: all kernels match the CPU reference");
    return failures ? 1 : 0;
}
