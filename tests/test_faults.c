/* Injected faults and the runtime's robustness defects (issue 9): every
 * failure path returns its status within its deadline, nothing is touched after
 * a wait gives up (run under ASan: `make test-asan`), and the context (or a new
 * one, after device loss) works again. Faults come from the test-only hook in
 * src/core/fault.h. Custom-kernel validation (bindings, aliasing, UTF-8, long
 * entry points, debug guards, slices) and budget eviction are here too. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "core/internal.h"
#include "test_util.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static wgt_context *make_context(wgt_backend_kind kind, uint32_t timeout_ms, bool guards)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = kind;
    o.wait_timeout_ms = timeout_ms;
    o.debug_guards = guards;
    wgt_context *ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        CHECK(false, "context creation failed: %s", ctx ? wgt_context_error_message(ctx) : "NULL");
        wgt_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* After a timeout the context fails fast until the device catches up: what a
 * program does is clear and retry synchronize. */
static void wait_until_usable(wgt_context *ctx)
{
    for (double end = now_ms() + 60000; now_ms() < end; sleep_ms(5)) {
        wgt_context_clear_error(ctx);
        if (wgt_synchronize(ctx) == WGT_OK) return;
    }
    CHECK(false, "context still stuck after 60 s: %s", wgt_context_error_message(ctx));
}

/* [1, 2, 3, 4] * 3 read back: true if it came out right. */
static bool small_round_trip(wgt_context *ctx)
{
    float v[4] = {1, 2, 3, 4}, out[4] = {0};
    int64_t n = 4;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_tensor *s = t ? wgt_binary_scalar(WGT_OP_MUL, t, 3.0) : NULL;
    bool ok = s && wgt_tensor_read(s, out, sizeof(out)) == WGT_OK && out[0] == 3 && out[3] == 12;
    wgt_tensor_release(s);
    wgt_tensor_release(t);
    return ok;
}

/* ------------------------------------------------------------ custom kernels */

static const char *FILL_WGSL =
    "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "    if (g.x < arrayLength(&b)) { b[g.x] = 7.0; }\n"
    "}\n";

static wgt_status run_fill(wgt_context *ctx, wgt_tensor *t, uint32_t groups)
{
    wgt_custom_kernel k = {0};
    k.wgsl = FILL_WGSL;
    k.entry_point = "main";
    k.buffers = &t;
    k.n_buffers = 1;
    k.workgroups[0] = groups;
    k.workgroups[1] = k.workgroups[2] = 1;
    return wgt_custom_kernel_run(ctx, &k);
}

/* Busy work whose length the test sets by its workgroup count: each of 64
 * invocations per group runs 60,000 iterations (llvmpipe caps any one loop at
 * 65,535 iterations, so length comes from groups, not from one long loop). */
static const char *SPIN_WGSL =
    "struct P { n: u32, pad0: u32, pad1: u32, pad2: u32 }\n"
    "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
    "@group(0) @binding(1) var<uniform> p: P;\n"
    "@compute @workgroup_size(64) fn main() {\n"
    "    var acc = b[0];\n"
    "    for (var i = 0u; i < p.n; i++) { acc = acc * 0.9999999 + 1.0; }\n"
    "    if (acc == -1.0) { b[0] = acc; }\n"
    "}\n";

/* `units` of spin work: that many workgroups of 60,000 iterations. Past the
 * 65,535 workgroups a dimension may have (a GPU runs thousands of groups at
 * once, so its calibration asks for more) the loop grows instead: `loops`
 * times 60,000 iterations over units / loops groups. */
static wgt_status run_spin(wgt_context *ctx, wgt_tensor *t, uint64_t units)
{
    uint64_t loops = (units + 65534) / 65535;
    uint32_t groups = (uint32_t)((units + loops - 1) / loops);
    uint32_t params[4] = {(uint32_t)(60000 * loops), 0, 0, 0};
    wgt_custom_kernel k = {0};
    k.wgsl = SPIN_WGSL;
    k.entry_point = "main";
    k.buffers = &t;
    k.n_buffers = 1;
    k.uniform = params;
    k.uniform_size = sizeof(params);
    k.workgroups[0] = groups;
    k.workgroups[1] = k.workgroups[2] = 1;
    return wgt_custom_kernel_run(ctx, &k);
}

/* Workgroups of the spin kernel that take about target_ms on this device when
 * it is not slowed down: the fastest of three runs per size, so a load spike
 * during calibration cannot make the kernels too short. */
static uint32_t calibrate_spin(wgt_context *ctx, wgt_tensor *t, double target_ms)
{
    uint32_t groups = 1;
    for (int round = 0; round < 24; round++) {
        double best = 1e30;
        for (int k = 0; k < 3; k++) {
            double start = now_ms();
            if (run_spin(ctx, t, groups) != WGT_OK || wgt_synchronize(ctx) != WGT_OK) return 0;
            best = fmin(best, now_ms() - start);
        }
        /* a GPU needs about 100,000 units for 200 ms (an H100: 1,600 took 3 ms) */
        if (best > target_ms / 4 || groups >= (1u << 22))
            return (uint32_t)fmax(1, fmin(groups * target_ms / fmax(best, 1), 1u << 22));
        groups *= 2;
    }
    return groups;
}

/* Defect 5: entry points longer than the old 160-byte key buffer. Two entry
 * points that differ only after 200 characters must run different pipelines,
 * and a 20,000-character name must be an error, not a crash. */
static void test_long_entry_points(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    char prefix[241];
    memset(prefix, 'x', 240);
    prefix[240] = '\0';
    size_t src_size = 1024;
    char *src = malloc(src_size);
    snprintf(src, src_size,
             "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
             "@compute @workgroup_size(1) fn e%sa() { b[0] = 1.0; }\n"
             "@compute @workgroup_size(1) fn e%sb() { b[0] = 2.0; }\n",
             prefix, prefix);
    char entry_a[300], entry_b[300];
    snprintf(entry_a, sizeof entry_a, "e%sa", prefix);
    snprintf(entry_b, sizeof entry_b, "e%sb", prefix);
    int64_t n = 4;
    wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
    const char *entries[2] = {entry_a, entry_b};
    for (int i = 0; i < 2; i++) {
        wgt_custom_kernel k = {0};
        k.wgsl = src;
        k.entry_point = entries[i];
        k.buffers = &t;
        k.n_buffers = 1;
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        float out[4] = {0};
        CHECK(s == WGT_OK && wgt_tensor_read(t, out, sizeof out) == WGT_OK && out[0] == (float)(i + 1),
              "entry point %d of 242 characters: got %g, status %s (%s)", i, out[0], wgt_status_string(s),
              wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
    }
    size_t lengths[] = {200, 10000, 20000, 100000};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        char *entry = malloc(lengths[i] + 1);
        memset(entry, 'q', lengths[i]);
        entry[lengths[i]] = '\0';
        wgt_custom_kernel k = {0};
        k.wgsl = FILL_WGSL;
        k.entry_point = entry;
        k.buffers = &t;
        k.n_buffers = 1;
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        CHECK(s == WGT_ERR_SHADER_COMPILE, "missing entry point of %zu characters: %s", lengths[i],
              wgt_status_string(s));
        check_error_and_recover(ctx, WGT_ERR_SHADER_COMPILE, "missing long entry point");
        free(entry);
    }
    wgt_tensor_release(t);
    free(src);
    wgt_context_destroy(ctx);
}

/* Defect 7 (a)-(c): what used to abort inside wgpu-native is an error. */
static void test_custom_kernel_validation(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    int64_t n = 16;
    wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
    wgt_tensor *u = wgt_zeros(ctx, WGT_F32, 1, &n);

    /* (a) not UTF-8 (a lone continuation byte and a truncated sequence) */
    const char *bad_utf8[] = {"// \x80\n@compute @workgroup_size(1) fn main() {}\n",
                              "@compute @workgroup_size(1) fn main() {} // \xe2\x82\n",
                              "// \xed\xa0\x80 surrogate\n@compute @workgroup_size(1) fn main() {}\n"};
    for (int i = 0; i < 3; i++) {
        wgt_custom_kernel k = {0};
        k.wgsl = bad_utf8[i];
        k.entry_point = "main";
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        CHECK(s == WGT_ERR_SHADER_COMPILE && strstr(wgt_context_error_message(ctx), "UTF-8"),
              "non-UTF-8 WGSL %d: %s (%s)", i, wgt_status_string(s), wgt_context_error_message(ctx));
        check_error_and_recover(ctx, WGT_ERR_SHADER_COMPILE, "non-UTF-8 WGSL");
    }
    /* valid multi-byte UTF-8 in a comment still compiles */
    {
        wgt_custom_kernel k = {0};
        k.wgsl = "// caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n@compute @workgroup_size(1) fn main() {}\n";
        k.entry_point = "main";
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        CHECK(s == WGT_OK, "UTF-8 comment: %s (%s)", wgt_status_string(s), wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
    }

    /* (b) a binding smaller than the shader's fixed-size array / struct */
    const char *too_big[] = {
        "@group(0) @binding(0) var<storage, read_write> b: array<f32, 64>;\n"
        "@compute @workgroup_size(1) fn main() { b[0] = 1.0; }\n",
        "struct S { a: array<vec4<f32>, 8>, n: u32 }\n"
        "@group(0) @binding(0) var<storage, read_write> b: S;\n"
        "@compute @workgroup_size(1) fn main() { b.n = 1u; }\n"};
    for (int i = 0; i < 2; i++) {
        wgt_custom_kernel k = {0};
        k.wgsl = too_big[i];
        k.entry_point = "main";
        k.buffers = &t;
        k.n_buffers = 1;
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        CHECK(s == WGT_ERR_INVALID_ARGUMENT, "binding of 64 bytes for a larger declaration (%d): %s (%s)", i,
              wgt_status_string(s), wgt_context_error_message(ctx));
        check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "binding too small");
    }

    /* (c) one tensor bound read-only and read-write in one dispatch */
    {
        const char *wgsl = "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
                           "@group(0) @binding(1) var<storage, read_write> b: array<f32>;\n"
                           "@compute @workgroup_size(1) fn main() { b[0] = a[0] + 1.0; }\n";
        wgt_tensor *same[2] = {t, t};
        bool read_only[2] = {true, false};
        wgt_custom_kernel k = {0};
        k.wgsl = wgsl;
        k.entry_point = "main";
        k.buffers = same;
        k.read_only = read_only;
        k.n_buffers = 2;
        k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        CHECK(s == WGT_ERR_INVALID_ARGUMENT, "aliased read-only and read-write: %s (%s)", wgt_status_string(s),
              wgt_context_error_message(ctx));
        check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "aliased bindings");
        /* two distinct tensors are fine */
        wgt_tensor *pair[2] = {u, t};
        k.buffers = pair;
        s = wgt_custom_kernel_run(ctx, &k);
        float out[16];
        CHECK(s == WGT_OK && wgt_tensor_read(t, out, sizeof out) == WGT_OK && out[0] == 1.0f,
              "distinct bindings: %s (%s)", wgt_status_string(s), wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
    }
    wgt_tensor_release(u);
    wgt_tensor_release(t);
    wgt_context_destroy(ctx);
}

/* Defect 12: a custom kernel binds exactly the tensor's bytes. */
static void test_custom_kernel_binds_exact_bytes(void)
{
    /* debug guards: index 0 is the tensor's first element, guards stay intact */
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, true);
    if (!ctx) return;
    int64_t n = 4;
    wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
    wgt_status s = run_fill(ctx, t, 64); /* far more invocations than elements */
    float out[4] = {0};
    CHECK(s == WGT_OK && wgt_tensor_read(t, out, sizeof out) == WGT_OK && out[0] == 7 && out[3] == 7,
          "guarded tensor: [%g %g %g %g], %s (%s)", out[0], out[1], out[2], out[3], wgt_status_string(s),
          wgt_context_error_message(ctx));
    CHECK(wgt_tensor_check_guards(t) == WGT_OK, "guards overwritten by a custom kernel: %s",
          wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_tensor_release(t);
    wgt_context_destroy(ctx);

    /* slices: an aligned slice writes only itself, an unaligned one is refused */
    ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    int64_t m = 256;
    wgt_tensor *parent = wgt_zeros(ctx, WGT_F32, 1, &m);
    wgt_tensor *front = wgt_slice(parent, 0, 0, 64, 1);
    wgt_tensor *back = wgt_slice(parent, 0, 128, 192, 1); /* byte 512: aligned */
    wgt_tensor *odd = wgt_slice(parent, 0, 1, 5, 1);      /* byte 4: not */
    CHECK(front && back && odd, "slices: %s", wgt_context_error_message(ctx));
    if (front && back && odd) {
        CHECK(run_fill(ctx, front, 4) == WGT_OK, "fill front slice: %s", wgt_context_error_message(ctx));
        CHECK(run_fill(ctx, back, 4) == WGT_OK, "fill aligned slice: %s", wgt_context_error_message(ctx));
        float all[256];
        CHECK(wgt_tensor_read(parent, all, sizeof all) == WGT_OK, "read parent: %s", wgt_context_error_message(ctx));
        int wrong = 0;
        for (int i = 0; i < 256; i++) wrong += all[i] != ((i < 64 || (i >= 128 && i < 192)) ? 7.0f : 0.0f);
        CHECK(wrong == 0, "custom kernels on slices wrote %d elements outside the slices (or missed some)", wrong);
        wgt_status so = run_fill(ctx, odd, 1);
        CHECK(so == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_error_message(ctx), "alignment"),
              "unaligned slice: %s (%s)", wgt_status_string(so), wgt_context_error_message(ctx));
        check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "unaligned slice");
    }
    wgt_tensor_release(odd);
    wgt_tensor_release(back);
    wgt_tensor_release(front);
    wgt_tensor_release(parent);
    wgt_context_destroy(ctx);
}

/* Defect 7 (d): under a budget the pool frees a cached block that recorded,
 * unsubmitted work still reads; the next submit must not find it destroyed. */
static void test_budget_eviction_keeps_recorded_work(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    CHECK(wgt_memory_set_budget(ctx, 4u << 20) == WGT_OK, "budget: %s", wgt_context_error_message(ctx));
    int64_t n = (1 << 20) / 4; /* 1 MiB */
    float *host = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) host[i] = (float)(i % 1000);
    wgt_tensor *a = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, host);
    wgt_tensor *b = a ? wgt_binary_scalar(WGT_OP_MUL, a, 2.0) : NULL; /* recorded, reads a */
    wgt_tensor_release(a);                                             /* a's block goes to the cache */
    int64_t big = (int64_t)(2.5 * (1 << 20)) / 4;
    wgt_tensor *c = wgt_zeros(ctx, WGT_F32, 1, &big); /* over the budget with the cache: evicts a's block */
    CHECK(b && c, "allocations under the budget: %s", wgt_context_error_message(ctx));
    if (b) {
        wgt_status s = wgt_tensor_read(b, host, (size_t)n * sizeof(float));
        CHECK(s == WGT_OK && host[999] == 1998.0f && host[n - 1] == 2.0f * (float)((n - 1) % 1000),
              "read after eviction: %s (%s)", wgt_status_string(s), wgt_context_error_message(ctx));
    }
    wgt_tensor_release(c);
    wgt_tensor_release(b);
    free(host);
    wgt_context_destroy(ctx);
}

/* ------------------------------------------------------------ deadlines */

/* Defect 1: a read whose wait times out; the map callback fires later (when the
 * staging buffer is destroyed) and must not reach the returned frame. */
static void test_read_timeout(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i;
    int64_t n = 64;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_tensor *y = wgt_binary_scalar(WGT_OP_ADD, t, 1.0);
    for (int round = 0; round < 5; round++) {
        CHECK(wgt_debug_fault(ctx, "timeout") == WGT_OK, "arm timeout");
        float out[64];
        wgt_status s = wgt_tensor_read(y, out, sizeof out);
        CHECK(s == WGT_ERR_TIMEOUT, "injected read timeout: %s", wgt_status_string(s));
        /* more stack traffic where the old request lived, then make the
         * implementation fire the abandoned callback */
        volatile char scratch[4096];
        memset((char *)scratch, 0x5a, sizeof scratch);
        wait_until_usable(ctx);
        memset(out, 0, sizeof out);
        s = wgt_tensor_read(y, out, sizeof out);
        CHECK(s == WGT_OK && out[0] == 1 && out[63] == 64, "read after the timeout: %s (%s)", wgt_status_string(s),
              wgt_context_error_message(ctx));
    }
    CHECK(wgt_debug_faults_injected(ctx) == 5, "faults injected: %lld", (long long)wgt_debug_faults_injected(ctx));
    wgt_tensor_release(y);
    wgt_tensor_release(t);
    wgt_context_destroy(ctx);
}

/* Defect 2: WGT_WAIT_TIMEOUT_MS overrides any program's deadline. */
static void test_timeout_environment(void)
{
    setenv("WGT_WAIT_TIMEOUT_MS", "4321", 1);
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 600000, false);
    unsetenv("WGT_WAIT_TIMEOUT_MS");
    if (!ctx) return;
    wgt_debug_fault(ctx, "timeout");
    wgt_status s = wgt_synchronize(ctx);
    CHECK(s == WGT_ERR_TIMEOUT && strstr(wgt_context_error_message(ctx), "4321 ms"),
          "WGT_WAIT_TIMEOUT_MS=4321 over options 600000: %s (%s)", wgt_status_string(s),
          wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_context_destroy(ctx);
}

/* Defects 2 and 8 with a real slow device: many kernels that together take
 * longer than the deadline pass (progress moves it); one that stops making
 * progress times out, later calls fail fast, and the context recovers when the
 * device catches up. Destroy keeps a bound. */
static void test_progress_and_stuck(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 3000, false);
    if (!ctx) return;
    int64_t n = 4;
    wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
    uint32_t iters = calibrate_spin(ctx, t, 200);
    CHECK(iters > 0, "calibration: %s", wgt_context_error_message(ctx));
    if (iters == 0) goto done;

    /* 24 kernels of at least ~200 ms (each its own submission): > 4.8 s, past a 3 s deadline */
    double start = now_ms();
    wgt_status s = WGT_OK;
    for (int i = 0; i < 24 && s == WGT_OK; i++) s = run_spin(ctx, t, iters);
    if (s == WGT_OK) s = wgt_synchronize(ctx);
    double total = now_ms() - start;
    CHECK(s == WGT_OK, "24 x 200 ms of kernels under a 3 s no-progress deadline: %s after %.0f ms (%s)",
          wgt_status_string(s), total, wgt_context_error_message(ctx));
    printf("progress: 24 kernels took %.0f ms under a 3000 ms deadline\n", total);
    wait_until_usable(ctx);

    /* one kernel of ~16 s: the wait gives up after 3 s without progress (8 s was not enough on a 2-core CI machine whose load fell after the calibration: the kernel finished in 2.1 s) */
    float v[4] = {1, 2, 3, 4};
    int64_t k = 4;
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 1, &k, v); /* made before the device is stuck */
    wgt_tensor *z = wgt_tensor_from_host(ctx, WGT_F32, 1, &k, v);
    s = run_spin(ctx, t, (uint64_t)iters * 80); /* ~16 s at the calibrated speed: still past the 3 s deadline when the machine gets 5x less busy than during calibration */
    start = now_ms();
    s = s == WGT_OK ? wgt_synchronize(ctx) : s;
    double waited = now_ms() - start;
    CHECK(s == WGT_ERR_TIMEOUT && waited < 7000, "stuck kernel: %s after %.0f ms", wgt_status_string(s), waited);
    wgt_context_clear_error(ctx);
    /* known stuck: the next calls fail at once instead of waiting again */
    float out[4] = {0};
    start = now_ms();
    s = x ? wgt_tensor_read(x, out, sizeof out) : wgt_context_status(ctx);
    double fast = now_ms() - start;
    CHECK(s == WGT_ERR_TIMEOUT && fast < 500, "read on a stuck context: %s after %.0f ms (%s)", wgt_status_string(s),
          fast, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    start = now_ms();
    wgt_tensor *x2 = wgt_tensor_from_host(ctx, WGT_F32, 1, &k, v);
    fast = now_ms() - start;
    CHECK(!x2 && wgt_context_status(ctx) == WGT_ERR_TIMEOUT && fast < 500, "upload on a stuck context: %s after %.0f ms",
          wgt_status_string(wgt_context_status(ctx)), fast);
    wgt_tensor_release(x2);
    /* work recorded while stuck keeps its buffers, even through a trim */
    wgt_context_clear_error(ctx);
    wgt_tensor *doubled = z ? wgt_binary_scalar(WGT_OP_MUL, z, 2.0) : NULL; /* recorded, not submitted */
    wgt_tensor_release(z);                                                 /* z's block: into the cache */
    wgt_status trim = wgt_memory_trim(ctx);
    CHECK(doubled && trim == WGT_ERR_TIMEOUT, "trim on a stuck context: %s", wgt_status_string(trim));
    /* the device catches up: the context works again, the earlier read too */
    wait_until_usable(ctx);
    CHECK(small_round_trip(ctx), "round trip after the device caught up: %s", wgt_context_error_message(ctx));
    s = x ? wgt_tensor_read(x, out, sizeof out) : WGT_ERR_INTERNAL;
    CHECK(s == WGT_OK && out[3] == 4, "read after the device caught up: %s (%s)", wgt_status_string(s),
          wgt_context_error_message(ctx));
    s = doubled ? wgt_tensor_read(doubled, out, sizeof out) : WGT_ERR_INTERNAL;
    CHECK(s == WGT_OK && out[3] == 8, "work recorded while stuck: %s, %g (%s)", wgt_status_string(s), out[3],
          wgt_context_error_message(ctx));
    wgt_tensor_release(doubled);
    wgt_tensor_release(x);

    /* destroy while stuck keeps a bound (no wait on the stuck work) */
    s = run_spin(ctx, t, (uint64_t)iters * 80); /* ~16 s at the calibrated speed: still past the 3 s deadline when the machine gets 5x less busy than during calibration */
    s = s == WGT_OK ? wgt_synchronize(ctx) : s;
    CHECK(s == WGT_ERR_TIMEOUT, "second stuck kernel: %s", wgt_status_string(s));
    wgt_tensor_release(t);
    t = NULL;
    start = now_ms();
    wgt_context_destroy(ctx);
    double destroy_ms = now_ms() - start;
    printf("destroy of a stuck context: %.0f ms (kernel of ~16 s, deadline 3 s)\n", destroy_ms);
    CHECK(destroy_ms < 1000, "wgt_context_destroy of a stuck context took %.0f ms", destroy_ms);
    wgt_context *fresh = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (fresh) {
        CHECK(small_round_trip(fresh), "new context after a stuck one: %s", wgt_context_error_message(fresh));
        wgt_context_destroy(fresh);
    }
    return;
done:
    wgt_tensor_release(t);
    wgt_context_destroy(ctx);
}

/* Wait timeout at every wait of a sequence of public calls. */
static wgt_status run_sequence(wgt_context *ctx, bool webgpu)
{
    float v[256];
    for (int i = 0; i < 256; i++) v[i] = (float)(i % 17);
    int64_t shape[2] = {16, 16};
    wgt_status s = WGT_OK;
    wgt_scope_push(ctx);
    wgt_tensor *a = wgt_tensor_from_host(ctx, WGT_F32, 2, shape, v);
    wgt_tensor *b = a ? wgt_binary_scalar(WGT_OP_MUL, a, 2.0) : NULL;
    wgt_tensor *c = b ? wgt_add(a, b) : NULL;
    int axis = 1;
    wgt_tensor *d = c ? wgt_sum(c, &axis, 1, false) : NULL;
    wgt_tensor *e = d ? wgt_matmul(c, c) : NULL;
    float out[256];
    if (e) s = wgt_tensor_read(d, out, 16 * sizeof(float));
    if (s == WGT_OK && e) s = wgt_tensor_read(e, out, sizeof out);
    if (s == WGT_OK && e && webgpu) s = run_fill(ctx, e, 4);
    if (s == WGT_OK && e && webgpu) s = run_spin(ctx, e, 10); /* a uniform buffer */
    if (s == WGT_OK && e) s = wgt_synchronize(ctx);
    if (s == WGT_OK && e) s = wgt_tensor_read(e, out, sizeof out);
    wgt_scope_pop(ctx);
    return wgt_context_status(ctx) != WGT_OK ? wgt_context_status(ctx) : s;
}

static void test_fault_at_every_site(wgt_backend_kind kind, const char *fault, wgt_status expected)
{
    bool webgpu = kind == WGT_BACKEND_WEBGPU;
    wgt_context *ctx = make_context(kind, 0, false);
    if (!ctx) return;
    CHECK(run_sequence(ctx, webgpu) == WGT_OK, "sequence without faults: %s", wgt_context_error_message(ctx));
    int sites = 0;
    for (int at = 1; at <= 500; at++) {
        char spec[64];
        snprintf(spec, sizeof spec, "%s@%d", fault, at);
        wgt_debug_fault(ctx, spec);
        int64_t before = wgt_debug_faults_injected(ctx);
        wgt_status s = run_sequence(ctx, webgpu);
        if (wgt_debug_faults_injected(ctx) == before) {
            CHECK(s == WGT_OK, "%s: sequence past the last site: %s", spec, wgt_context_error_message(ctx));
            break;
        }
        sites++;
        CHECK(s == expected, "%s: expected %s, got %s (%s)", spec, wgt_status_string(expected), wgt_status_string(s),
              wgt_context_error_message(ctx));
        if (expected == WGT_ERR_OUT_OF_MEMORY)
            CHECK(strstr(wgt_context_error_message(ctx), "bytes") != NULL, "%s: message without bytes: %s", spec,
                  wgt_context_error_message(ctx));
        if (webgpu) wait_until_usable(ctx); /* clears; a timeout leaves work in flight */
        check_error_and_recover(ctx, wgt_context_status(ctx), spec);
        CHECK(small_round_trip(ctx), "%s: context not usable after clearing: %s", spec, wgt_context_error_message(ctx));
    }
    wgt_debug_fault(ctx, "none");
    printf("%s %s: %d fault sites in the sequence, each recovered\n", webgpu ? "webgpu" : "cpu", fault, sites);
    CHECK(sites > 0, "%s: no site reached", fault);
    CHECK(wgt_debug_fault(ctx, "no_such_fault") == WGT_ERR_INVALID_ARGUMENT, "unknown fault accepted");
    wgt_context_clear_error(ctx);
    wgt_context_destroy(ctx);
}

/* Map failure: a status, and the next read works. */
static void test_map_failure(void)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    int64_t n = 8;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_debug_fault(ctx, "map");
    wgt_status s = wgt_tensor_read(t, out, sizeof out);
    CHECK(s == WGT_ERR_INTERNAL && strstr(wgt_context_error_message(ctx), "mapping"), "map failure: %s (%s)",
          wgt_status_string(s), wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    s = wgt_tensor_read(t, out, sizeof out);
    CHECK(s == WGT_OK && out[7] == 8, "read after a map failure: %s", wgt_status_string(s));
    wgt_tensor_release(t);
    wgt_context_destroy(ctx);
}

/* Device loss mid-batch, during a read, during a wait: WGT_ERR_DEVICE_LOST
 * within a second, permanent on that context, and a new context works. */
static void test_device_lost(const char *fault)
{
    wgt_context *ctx = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (!ctx) return;
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i;
    int64_t n = 64;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_tensor *y = wgt_binary_scalar(WGT_OP_MUL, t, 2.0);
    for (int i = 0; i < 10 && y; i++) { /* a batch of recorded work */
        wgt_tensor *z = wgt_binary_scalar(WGT_OP_ADD, y, 1.0);
        wgt_tensor_release(y);
        y = z;
    }
    CHECK(y != NULL, "setup: %s", wgt_context_error_message(ctx));
    wgt_debug_fault(ctx, fault);
    double start = now_ms();
    float out[64];
    wgt_status s;
    wgt_tensor *z = NULL;
    if (strcmp(fault, "lost_dispatch") == 0) {
        z = wgt_binary_scalar(WGT_OP_ADD, y, 1.0);
        s = wgt_context_status(ctx);
    } else if (strcmp(fault, "lost_read") == 0) {
        s = wgt_tensor_read(y, out, sizeof out);
    } else {
        s = wgt_synchronize(ctx);
    }
    double ms = now_ms() - start;
    CHECK(s == WGT_ERR_DEVICE_LOST && ms < 1000, "%s: %s after %.0f ms (%s)", fault, wgt_status_string(s), ms,
          wgt_context_error_message(ctx));
    CHECK(z == NULL, "%s: an op returned a tensor on a lost device", fault);
    /* permanent: clearing keeps it, later calls fail at once */
    wgt_context_clear_error(ctx);
    start = now_ms();
    s = wgt_tensor_read(y, out, sizeof out);
    CHECK(wgt_context_status(ctx) == WGT_ERR_DEVICE_LOST && s == WGT_ERR_DEVICE_LOST && now_ms() - start < 1000,
          "%s: after loss: %s", fault, wgt_status_string(wgt_context_status(ctx)));
    wgt_tensor_release(y);
    wgt_tensor_release(t);
    start = now_ms();
    wgt_context_destroy(ctx);
    CHECK(now_ms() - start < 1000, "%s: destroying the lost context took %.0f ms", fault, now_ms() - start);
    /* recovery: a new context on the same adapter */
    wgt_context *fresh = make_context(WGT_BACKEND_WEBGPU, 0, false);
    if (fresh) {
        CHECK(small_round_trip(fresh), "%s: a new context after loss does not work: %s", fault,
              wgt_context_error_message(fresh));
        wgt_context_destroy(fresh);
    }
}

/* Defect 11: a real device out-of-memory (lavapipe's memory is the process's:
 * an address-space limit makes it run out) is WGT_ERR_OUT_OF_MEMORY with the
 * bytes, and the context works right after clearing. In a child process, so
 * the limit stays there. ASan reserves terabytes of address space: not then. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif

static int real_oom_child(wgt_backend_kind kind)
{
    wgt_context *ctx = make_context(kind, 0, false);
    if (!ctx || !small_round_trip(ctx)) return 2;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (!f || fscanf(f, "%llu", &pages) != 1) return 3;
    fclose(f);
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = pages * (unsigned long long)sysconf(_SC_PAGESIZE) + (1ull << 30);
    if (setrlimit(RLIMIT_AS, &rl) != 0) return 4;
    /* 100 MiB tensors until the limit; a discrete GPU's memory is not in the
     * address space, so past 32 of them 256 MiB ones (within WebGPU's default
     * buffer size limit) until the device itself runs out, at most 512 GiB */
    enum { SMALL = 32, LARGE = 2048 };
    static wgt_tensor *held[SMALL + LARGE];
    int64_t n = (100 << 20) / 4, n_large = (256 << 20) / 4;
    int count = 0;
    while (count < SMALL && (held[count] = wgt_zeros(ctx, WGT_F32, 1, &n)) != NULL) count++;
    while (count >= SMALL && count < SMALL + LARGE && (held[count] = wgt_zeros(ctx, WGT_F32, 1, &n_large)) != NULL)
        count++;
    wgt_status s = wgt_context_status(ctx);
    printf("%s real OOM after %d x 100 MiB + %d x 256 MiB: %s: %s\n", kind == WGT_BACKEND_CPU ? "cpu" : "webgpu",
           count < SMALL ? count : SMALL, count > SMALL ? count - SMALL : 0, wgt_status_string(s),
           wgt_context_error_message(ctx));
    int bad = s != WGT_ERR_OUT_OF_MEMORY || !strstr(wgt_context_error_message(ctx), "bytes") ||
              count == SMALL + LARGE;
    for (int i = 0; i < count; i++) wgt_tensor_release(held[i]);
    wgt_context_clear_error(ctx);
    if (!small_round_trip(ctx)) {
        printf("not usable after clearing: %s\n", wgt_context_error_message(ctx));
        bad = 1;
    }
    wgt_context_destroy(ctx);
    fflush(stdout); /* the child leaves with _exit */
    return bad;
}

/* The child is a fresh exec of this binary: forking a process whose driver
 * threads hold locks would deadlock the child's first context. */
static void test_real_oom(wgt_backend_kind kind)
{
#ifdef TEST_UNDER_ASAN
    (void)kind;
    printf("real OOM: not run under AddressSanitizer (it needs the address space the test limits)\n");
#else
    const char *name = kind == WGT_BACKEND_CPU ? "cpu" : "webgpu";
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_faults", "--real-oom-child", name, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    pid_t done = 0;
    for (int i = 0; pid > 0 && i < 1200 && done == 0; i++) { /* two minutes */
        done = waitpid(pid, &status, WNOHANG);
        if (done == 0) sleep_ms(100);
    }
    if (pid > 0 && done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        CHECK(false, "real OOM on %s: the child did not finish within two minutes", name);
        return;
    }
    CHECK(pid > 0 && done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "real OOM on %s: child %s %d", name,
          WIFEXITED(status) ? "exited" : "killed by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
#endif
}

/* The snprintf audit (defect 5): a shape that does not fit its buffer is cut
 * inside the buffer and says so, at every buffer size. */
static void test_shape_string_truncation(void)
{
    int64_t shape[8] = {INT64_MAX, INT64_MIN, 123456789, 1, 2, 3, 4, 5};
    char buf[200];
    const char *full = "[9223372036854775807, -9223372036854775808, 123456789, 1, 2, 3, 4, 5]";
    for (size_t size = 0; size <= sizeof buf - 8; size++) {
        memset(buf, 'Z', sizeof buf);
        wgt_shape_string(8, shape, buf, size);
        bool inside = true;
        for (size_t i = size; i < sizeof buf; i++) inside &= buf[i] == 'Z';
        CHECK(inside, "wgt_shape_string wrote past a %zu-byte buffer", size);
        if (size > 0) CHECK(memchr(buf, '\0', size) != NULL, "no terminator in %zu bytes", size);
        if (size >= 5 && size <= strlen(full))
            CHECK(strstr(buf, "...]") != NULL, "truncated to %zu bytes without ...]: %s", size, buf);
    }
    wgt_shape_string(8, shape, buf, sizeof buf);
    CHECK(strcmp(buf, full) == 0, "full: %s", buf);
}

/* test_faults [word]: only the tests whose name contains word. */
int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--real-oom-child") == 0)
        return real_oom_child(strcmp(argv[2], "cpu") == 0 ? WGT_BACKEND_CPU : WGT_BACKEND_WEBGPU);
    const char *only = argc > 1 ? argv[1] : "";
#define RUN(name, call)                                  \
    do {                                                 \
        if (strstr(name, only)) call;                    \
    } while (0)
    RUN("shape_string", test_shape_string_truncation());
    RUN("cpu_alloc", test_fault_at_every_site(WGT_BACKEND_CPU, "alloc", WGT_ERR_OUT_OF_MEMORY));
    RUN("long_entry_points", test_long_entry_points());
    RUN("custom_kernel_validation", test_custom_kernel_validation());
    RUN("binds_exact_bytes", test_custom_kernel_binds_exact_bytes());
    RUN("budget_eviction", test_budget_eviction_keeps_recorded_work());
    RUN("read_timeout", test_read_timeout());
    RUN("timeout_environment", test_timeout_environment());
    RUN("map_failure", test_map_failure());
    RUN("lost_dispatch", test_device_lost("lost_dispatch"));
    RUN("lost_read", test_device_lost("lost_read"));
    RUN("lost_wait", test_device_lost("lost_wait"));
    RUN("webgpu_alloc", test_fault_at_every_site(WGT_BACKEND_WEBGPU, "alloc", WGT_ERR_OUT_OF_MEMORY));
    RUN("webgpu_timeout", test_fault_at_every_site(WGT_BACKEND_WEBGPU, "timeout", WGT_ERR_TIMEOUT));
    RUN("webgpu_host_alloc", test_fault_at_every_site(WGT_BACKEND_WEBGPU, "host_alloc", WGT_ERR_OUT_OF_MEMORY));
    RUN("progress_and_stuck", test_progress_and_stuck());
    RUN("real_oom_cpu", test_real_oom(WGT_BACKEND_CPU));
    RUN("real_oom_webgpu", test_real_oom(WGT_BACKEND_WEBGPU));
#undef RUN
    return test_summary();
}
