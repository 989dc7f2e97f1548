/* Soaks (issue 9), sized for CI on lavapipe and under ASan:
 *   OOM soak: allocate under a budget until WGT_ERR_OUT_OF_MEMORY, free, 50
 *     cycles; bytes in use back to the baseline every cycle, the same number
 *     of tensors fits every cycle.
 *   leak soak: many small ops in scopes beside live tensors; bytes in use,
 *     pipeline count and process RSS flat between the warm-up checkpoint and
 *     the end. 100,000 ops on each backend (about 2 s on lavapipe for
 *     64-element ops; the counts are printed).
 *   threads: two threads, each with its own context, running ops at once
 *     (CPU+CPU, WebGPU+WebGPU, CPU+WebGPU), every result checked.
 * `test_soak [ops_cpu ops_webgpu]` overrides the leak soak's counts. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif

static wgt_context *make_context(wgt_backend_kind kind)
{
    return kind == WGT_BACKEND_CPU ? test_cpu_context() : test_webgpu_context();
}

static const char *kind_name(wgt_backend_kind kind) { return kind == WGT_BACKEND_CPU ? "cpu" : "webgpu"; }

/* Resident set size in bytes (Linux /proc), 0 if unknown. */
static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    return n == 2 ? resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

/* ------------------------------------------------------------ OOM soak */

static void oom_soak(wgt_backend_kind kind)
{
    wgt_context *ctx = make_context(kind);
    if (!ctx) return;
    const uint64_t budget = 1u << 20;
    CHECK(wgt_memory_set_budget(ctx, budget) == WGT_OK, "%s: budget: %s", kind_name(kind),
          wgt_context_error_message(ctx));
    wgt_memory_stats base;
    wgt_memory_stats_get(ctx, &base);
    int64_t n = (64 << 10) / 4; /* 64 KiB tensors */
    wgt_tensor *held[64];
    int first_count = -1, bad_cycles = 0;
    for (int cycle = 0; cycle < 50; cycle++) {
        int count = 0;
        wgt_status s = WGT_OK;
        while (count < 64) {
            wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
            if (!t) {
                s = wgt_context_status(ctx);
                break;
            }
            held[count++] = t;
        }
        if (s != WGT_ERR_OUT_OF_MEMORY || strstr(wgt_context_error_message(ctx), "bytes") == NULL) {
            bad_cycles++;
            CHECK(false, "%s cycle %d: after %d tensors expected OOM naming bytes, got %s (%s)", kind_name(kind), cycle,
                  count, wgt_status_string(s), wgt_context_error_message(ctx));
        }
        wgt_context_clear_error(ctx);
        if (first_count < 0) first_count = count;
        if (count != first_count) {
            bad_cycles++;
            CHECK(false, "%s cycle %d: %d tensors fit, %d in the first cycle", kind_name(kind), cycle, count,
                  first_count);
        }
        for (int i = 0; i < count; i++) wgt_tensor_release(held[i]);
        wgt_memory_stats st;
        wgt_memory_stats_get(ctx, &st);
        if (st.bytes_in_use != base.bytes_in_use || st.bytes_reserved > budget) {
            bad_cycles++;
            CHECK(false, "%s cycle %d: %llu bytes in use (baseline %llu), %llu reserved (budget %llu)", kind_name(kind),
                  cycle, (unsigned long long)st.bytes_in_use, (unsigned long long)base.bytes_in_use,
                  (unsigned long long)st.bytes_reserved, (unsigned long long)budget);
        }
        if (bad_cycles > 3) break;
    }
    CHECK(first_count >= 8 && first_count < 64, "%s: %d tensors of 64 KiB under a 1 MiB budget", kind_name(kind),
          first_count);
    CHECK(wgt_synchronize(ctx) == WGT_OK, "%s: sync after the soak: %s", kind_name(kind),
          wgt_context_error_message(ctx));
    wgt_memory_stats end;
    wgt_memory_stats_get(ctx, &end);
    printf("%s OOM soak: 50 cycles of %d x 64 KiB until OOM under 1 MiB; in use %llu -> %llu bytes, reserved %llu\n",
           kind_name(kind), first_count, (unsigned long long)base.bytes_in_use, (unsigned long long)end.bytes_in_use,
           (unsigned long long)end.bytes_reserved);
    wgt_context_destroy(ctx);
}

/* ------------------------------------------------------------ leak soak */

typedef struct soak_point {
    uint64_t bytes_in_use, pipelines, rss;
} soak_point;

static soak_point measure(wgt_context *ctx)
{
    wgt_synchronize(ctx);
    wgt_memory_stats m;
    wgt_pipeline_stats p;
    wgt_memory_stats_get(ctx, &m);
    wgt_pipeline_stats_get(ctx, &p);
    return (soak_point){m.bytes_in_use, p.entries, rss_bytes()};
}

static void leak_soak(wgt_backend_kind kind, long ops)
{
    wgt_context *ctx = make_context(kind);
    if (!ctx) return;
    float xv[64], yv[64];
    for (int i = 0; i < 64; i++) xv[i] = (float)i, yv[i] = 1.0f;
    int64_t n = 64;
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, xv); /* live across every scope */
    wgt_tensor *y = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, yv);
    wgt_tensor *acc = wgt_zeros(ctx, WGT_F32, 1, &n);             /* replaced every iteration */
    const int ops_per_iteration = 4;
    long iterations = ops / ops_per_iteration, warm = iterations / 5;
    soak_point at_warm = {0, 0, 0};
    int axis = 0;
    bool ok = x && y && acc;
    for (long it = 0; it < iterations && ok; it++) {
        if (it == warm) at_warm = measure(ctx);
        wgt_scope_push(ctx);
        wgt_tensor *a = wgt_add(x, y);
        wgt_tensor *b = wgt_binary_scalar(WGT_OP_MUL, a, 0.5);
        wgt_tensor *c = wgt_sum(b, &axis, 1, true);
        wgt_tensor *next = c ? wgt_add(acc, c) : NULL; /* broadcast [1] over [64] */
        if (next) {
            wgt_tensor_retain(next); /* survives the scope */
            wgt_tensor_release(acc);
            acc = next;
        }
        wgt_scope_pop(ctx);
        ok = next != NULL;
        if (it % 2000 == 1999) ok = ok && wgt_synchronize(ctx) == WGT_OK;
    }
    CHECK(ok, "%s leak soak stopped: %s", kind_name(kind), wgt_context_error_message(ctx));
    soak_point at_end = measure(ctx);
    /* acc[i] = iterations * sum((j + 1) / 2) = iterations * 1040 */
    float out[64] = {0};
    CHECK(wgt_tensor_read(acc, out, sizeof out) == WGT_OK, "%s: read: %s", kind_name(kind),
          wgt_context_error_message(ctx));
    double expected = (double)iterations * 1040.0;
    CHECK(out[0] > expected * 0.999 && out[0] < expected * 1.001, "%s: accumulated %g, expected %g", kind_name(kind),
          out[0], expected);
    long long rss_growth = (long long)at_end.rss - (long long)at_warm.rss;
    printf("%s leak soak: %ld ops; from op %ld to the end: bytes in use %llu -> %llu, pipelines %llu -> %llu, "
           "RSS %+lld KiB\n",
           kind_name(kind), iterations * ops_per_iteration, warm * ops_per_iteration,
           (unsigned long long)at_warm.bytes_in_use, (unsigned long long)at_end.bytes_in_use,
           (unsigned long long)at_warm.pipelines, (unsigned long long)at_end.pipelines, rss_growth / 1024);
    CHECK(at_end.bytes_in_use == at_warm.bytes_in_use, "%s: bytes in use grew %llu -> %llu", kind_name(kind),
          (unsigned long long)at_warm.bytes_in_use, (unsigned long long)at_end.bytes_in_use);
    CHECK(at_end.pipelines == at_warm.pipelines, "%s: pipelines grew %llu -> %llu", kind_name(kind),
          (unsigned long long)at_warm.pipelines, (unsigned long long)at_end.pipelines);
    /* 4 MiB of slack for allocator noise; a leak of one small tensor per op
     * would be megabytes per thousand ops. Under ASan freed memory sits in its
     * quarantine (256 MiB) and RSS says nothing: LeakSanitizer checks at exit. */
#ifndef TEST_UNDER_ASAN
    CHECK(rss_growth < (4 << 20), "%s: RSS grew %lld KiB over %ld ops", kind_name(kind), rss_growth / 1024,
          (iterations - warm) * ops_per_iteration);
#endif
    wgt_tensor_release(acc);
    wgt_tensor_release(y);
    wgt_tensor_release(x);
    wgt_context_destroy(ctx);
}

/* ------------------------------------------------------------ threads */

typedef struct worker {
    wgt_backend_kind kind;
    int iterations;
    int wrong;        /* results that did not match */
    char error[256];  /* first error, if any */
} worker;

/* Threading rule under test: a context is used by one thread at a time;
 * different contexts run concurrently without locks (docs/errors.md). */
static void *work(void *arg)
{
    worker *w = arg;
    wgt_context *ctx = make_context(w->kind);
    if (!ctx) {
        snprintf(w->error, sizeof w->error, "no context");
        return NULL;
    }
    int64_t shape[2] = {32, 32};
    float a[1024], out[1024];
    for (int it = 0; it < w->iterations; it++) {
        for (int i = 0; i < 1024; i++) a[i] = (float)((i + it) % 13);
        wgt_scope_push(ctx);
        wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 2, shape, a);
        wgt_tensor *y = x ? wgt_binary_scalar(WGT_OP_MUL, x, 2.0) : NULL;
        wgt_tensor *z = y ? wgt_add(y, x) : NULL; /* 3 a */
        wgt_tensor *m = z ? wgt_matmul(z, x) : NULL;
        wgt_status s = m ? wgt_tensor_read(z, out, sizeof out) : wgt_context_status(ctx);
        if (s == WGT_OK) {
            for (int i = 0; i < 1024; i++) w->wrong += out[i] != 3.0f * a[i];
            s = wgt_tensor_read(m, out, sizeof out);
            /* row 0, column 0 of (3a) a: sum_k 3 a[0][k] a[k][0] */
            double ref = 0;
            for (int k = 0; k < 32; k++) ref += 3.0 * a[k] * a[k * 32];
            if (s == WGT_OK && (out[0] < ref - 1e-3 * ref - 1e-3 || out[0] > ref + 1e-3 * ref + 1e-3)) w->wrong++;
        }
        wgt_scope_pop(ctx);
        if (s != WGT_OK) {
            snprintf(w->error, sizeof w->error, "iteration %d: %s", it, wgt_context_error_message(ctx));
            break;
        }
    }
    wgt_context_destroy(ctx);
    return NULL;
}

static void two_threads(wgt_backend_kind k0, wgt_backend_kind k1, int iterations)
{
    worker w[2] = {{k0, iterations, 0, ""}, {k1, iterations, 0, ""}};
    pthread_t t[2];
    int started = 0;
    for (int i = 0; i < 2; i++) started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
    CHECK(started == 2, "pthread_create");
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        CHECK(w[i].error[0] == '\0' && w[i].wrong == 0, "thread %d (%s beside %s): %d wrong, error \"%s\"", i,
              kind_name(w[i].kind), kind_name(w[1 - i].kind), w[i].wrong, w[i].error);
    printf("two threads, %s + %s: %d iterations each\n", kind_name(k0), kind_name(k1), iterations);
}

/* ------------------------------------------------------------ shared cores */

static volatile int hogs_run;

static void *hog(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (hogs_run) x++;
    return NULL;
}

static int context_threads(wgt_context *ctx)
{
    wgt_adapter_info info;
    if (wgt_context_adapter_info(ctx, &info) != WGT_OK) return -1;
    return atoi(info.driver); /* "N threads, ..." */
}

/* Issue 9, defect 3: with the cores busy, the CPU backend drops to fewer
 * threads (spinning OpenMP threads on shared cores made a BERT forward 5x
 * slower), and goes back up when they are free again. */
static void shared_cores(void)
{
    wgt_context *ctx = test_cpu_context();
    if (!ctx) return;
    int max = context_threads(ctx);
    if (max < 2 || getenv("OMP_NUM_THREADS") || getenv("OMP_WAIT_POLICY")) {
        printf("shared cores: not applicable (%d threads, or OpenMP set by the environment)\n", max);
        wgt_context_destroy(ctx);
        return;
    }
    int64_t shape[2] = {256, 256};
    wgt_tensor *x = wgt_full(ctx, WGT_F32, 2, shape, 0.5);
    long n_hogs = 2 * sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t hogs[64];
    if (n_hogs > 64) n_hogs = 64;
    hogs_run = 1;
    int started = 0;
    for (long i = 0; i < n_hogs; i++) started += pthread_create(&hogs[started], NULL, hog, NULL) == 0;
    int lowest = max, ops = 0;
    for (; ops <= 2000 && lowest > 1; ops++) { /* seconds of busy cores without a drop: fail */
        wgt_scope_push(ctx);
        wgt_tensor *y = wgt_matmul(x, x);
        (void)y;
        wgt_scope_pop(ctx);
        int t = context_threads(ctx);
        if (t < lowest) lowest = t;
    }
    hogs_run = 0;
    for (int i = 0; i < started; i++) pthread_join(hogs[i], NULL);
    CHECK(lowest < max, "with %d busy threads on the cores the CPU backend kept %d threads", started, max);
    /* informational: back up once the cores are free (other load may keep it down) */
    int after = lowest;
    for (int i = 0; i < 400 && after < max; i++) {
        wgt_scope_push(ctx);
        wgt_matmul(x, x);
        wgt_scope_pop(ctx);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        after = context_threads(ctx);
    }
    printf("shared cores: %d threads, %d with %d busy threads beside it (after %d ops), %d after they stopped\n", max,
           lowest, started, ops, after);
    wgt_tensor_release(x);
    wgt_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    long ops_cpu = argc > 1 ? atol(argv[1]) : 100000;
    long ops_webgpu = argc > 2 ? atol(argv[2]) : 100000;
    oom_soak(WGT_BACKEND_CPU);
    oom_soak(WGT_BACKEND_WEBGPU);
    leak_soak(WGT_BACKEND_CPU, ops_cpu);
    leak_soak(WGT_BACKEND_WEBGPU, ops_webgpu);
    two_threads(WGT_BACKEND_CPU, WGT_BACKEND_CPU, 200);
    two_threads(WGT_BACKEND_WEBGPU, WGT_BACKEND_WEBGPU, 50);
    two_threads(WGT_BACKEND_CPU, WGT_BACKEND_WEBGPU, 50);
    shared_cores();
    return test_summary();
}
