/* The WebGPU foundation: adapters, selection, buffer round trips, the caching
 * allocator, the pipeline cache, custom kernels and each of their failure modes,
 * a grid folded past 65535 workgroups, and recovery after every error. */
#define _GNU_SOURCE /* strcasestr */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "webgpu/webgpu_internal.h"

static void test_adapters(void)
{
    wgt_adapter_info *infos = NULL;
    size_t n = 0;
    wgt_status s = wgt_adapters_enumerate(&infos, &n);
    CHECK(s == WGT_OK && n >= 1, "enumerate: %s, %zu adapters", wgt_status_string(s), n);
    for (size_t i = 0; i < n; i++) {
        CHECK(infos[i].index == (int)i, "index %d", infos[i].index);
        CHECK(infos[i].name[0] != '\0', "adapter %zu has no name", i);
        CHECK(infos[i].backend[0] != '\0', "adapter %zu has no backend", i);
        CHECK(infos[i].limits.max_compute_workgroups_per_dimension >= 65535, "limit %u",
              infos[i].limits.max_compute_workgroups_per_dimension);
    }
    CHECK(wgt_adapters_enumerate(NULL, &n) == WGT_ERR_INVALID_ARGUMENT, "NULL infos accepted");

    /* Selection by index: each adapter either gives a device or a clean
     * WGT_ERR_NO_ADAPTER (a GL adapter without a display may refuse), and the
     * first one (the native API: Vulkan/Metal/D3D12 come first) must work. */
    wgt_context_options o;
    wgt_adapter_info chosen;
    wgt_context *ctx;
    int usable = 0;
    for (size_t i = 0; i < n; i++) {
        wgt_context_options_init(&o);
        o.backend = WGT_BACKEND_WEBGPU;
        o.adapter_index = (int)i;
        ctx = wgt_context_create(&o);
        wgt_status got = wgt_context_status(ctx);
        if (got == WGT_OK) {
            usable++;
            CHECK(wgt_context_adapter_info(ctx, &chosen) == WGT_OK && strcmp(chosen.name, infos[i].name) == 0 &&
                      strcmp(chosen.backend, infos[i].backend) == 0,
                  "select by index %zu gave \"%s\"", i, chosen.name);
        } else {
            CHECK(got == WGT_ERR_NO_ADAPTER && strstr(wgt_context_error_message(ctx), infos[i].name),
                  "adapter %zu refused with %s: %s", i, wgt_status_string(got), wgt_context_error_message(ctx));
            printf("adapter %zu (%s, %s) gives no device: %s\n", i, infos[i].name, infos[i].backend,
                   wgt_context_error_message(ctx));
        }
        CHECK(i != 0 || got == WGT_OK, "adapter 0 must give a device: %s", wgt_context_error_message(ctx));
        wgt_context_destroy(ctx);
    }
    CHECK(usable >= 1, "no adapter gives a device");

    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    char needle[8] = {0};
    memcpy(needle, infos[0].name, 4);
    o.adapter_name = needle;
    ctx = wgt_context_create(&o);
    CHECK(wgt_context_status(ctx) == WGT_OK && wgt_context_adapter_info(ctx, &chosen) == WGT_OK &&
              strstr(chosen.name, needle) != NULL,
          "select by name '%s': %s", needle, wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);

    /* by API: "vulkan" picks a Vulkan adapter (lavapipe in CI); "gl" also
     * probes OpenGL and picks it, and a GL adapter either runs a kernel or is
     * refused at creation with the cause (compute_works in device.c), never
     * at the first kernel */
    const char *apis[2] = {"vulkan", "gl"};
    for (int a = 0; a < 2; a++) {
        o.adapter_name = apis[a];
        ctx = wgt_context_create(&o);
        if (wgt_context_status(ctx) == WGT_OK) {
            CHECK(wgt_context_adapter_info(ctx, &chosen) == WGT_OK && strcasestr(chosen.backend, apis[a]),
                  "select by API '%s' gave %s (%s)", apis[a], chosen.name, chosen.backend);
            float x[3] = {-1, 2, -3}, y[3] = {9, 9, 9};
            wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){3}, x);
            wgt_tensor *r = wgt_relu(t);
            CHECK(wgt_tensor_read(r, y, sizeof(y)) == WGT_OK && y[0] == 0 && y[1] == 2 && y[2] == 0,
                  "relu on the '%s' adapter: %g %g %g (%s)", apis[a], (double)y[0], (double)y[1], (double)y[2],
                  wgt_context_error_message(ctx));
            wgt_tensor_release(r);
            wgt_tensor_release(t);
        } else {
            CHECK(a == 1 && wgt_context_status(ctx) == WGT_ERR_NO_ADAPTER &&
                      strstr(wgt_context_error_message(ctx), "wgt_context_create"),
                  "select by API '%s': %s", apis[a], wgt_context_error_message(ctx));
            printf("no usable OpenGL adapter here: %s\n", wgt_context_error_message(ctx));
        }
        wgt_context_destroy(ctx);
    }

    o.adapter_name = "no-such-adapter-xyz";
    ctx = wgt_context_create(&o);
    CHECK(wgt_context_status(ctx) == WGT_ERR_NO_ADAPTER, "bad name gives %s", wgt_status_string(wgt_context_status(ctx)));
    CHECK(wgt_context_clear_error(ctx) == WGT_ERR_NO_ADAPTER, "failed creation must stay failed");
    CHECK(wgt_tensor_empty(ctx, WGT_F32, 0, NULL) == NULL, "a failed context must refuse work");
    wgt_context_destroy(ctx);

    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.adapter_index = 99;
    ctx = wgt_context_create(&o);
    CHECK(wgt_context_status(ctx) == WGT_ERR_NO_ADAPTER, "index 99 gives %s", wgt_status_string(wgt_context_status(ctx)));
    wgt_context_destroy(ctx);

    /* The CPU type filter on a machine whose adapters are all CPU or GPU. */
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.adapter_type = infos[0].type;
    ctx = wgt_context_create(&o);
    CHECK(wgt_context_status(ctx) == WGT_OK && wgt_context_adapter_info(ctx, &chosen) == WGT_OK &&
              chosen.type == infos[0].type,
          "select by type: %s", wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);
    wgt_adapters_free(infos);
}

/* Round trip of `bytes` bytes as u8 through a fresh tensor. */
static void round_trip(wgt_context *ctx, size_t bytes)
{
    unsigned char *in = malloc(bytes + 1), *out = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)(i * 131 + (i >> 11) * 7 + 1);
    memset(out, 0xEE, bytes + 1);
    int64_t n = (int64_t)bytes;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_U8, 1, &n, in);
    wgt_status s = t ? wgt_tensor_read(t, out, bytes) : wgt_context_status(ctx);
    CHECK(s == WGT_OK && memcmp(in, out, bytes) == 0 && out[bytes] == 0xEE, "round trip of %zu bytes: %s", bytes,
          wgt_context_error_message(ctx));
    wgt_tensor_release(t);
    free(in);
    free(out);
}

static void test_round_trips(wgt_context *ctx)
{
    const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 255, 256, 257, 4095, 65537, (4u << 20) + 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) round_trip(ctx, sizes[i]);
    round_trip(ctx, 256u << 20);
    wgt_memory_trim(ctx);

    /* f16 bits and a sliced read of an odd element offset */
    uint16_t h[5] = {0x3C00, 0xC000, 0x7C00, 0x7E00, 0x0001}, back[5] = {0};
    int64_t n = 5;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F16, 1, &n, h);
    CHECK(t && wgt_tensor_read(t, back, sizeof(back)) == WGT_OK && memcmp(h, back, sizeof(h)) == 0, "f16 round trip");
    wgt_tensor_release(t);
}

static void test_allocator(wgt_context *ctx)
{
    wgt_memory_stats before, after;
    wgt_memory_stats_get(ctx, &before);
    int64_t n = 1000;
    wgt_tensor *a = wgt_tensor_empty(ctx, WGT_F32, 1, &n);
    wgt_memory_stats_get(ctx, &after);
    CHECK(after.bytes_in_use >= before.bytes_in_use + 4000, "in use %llu -> %llu",
          (unsigned long long)before.bytes_in_use, (unsigned long long)after.bytes_in_use);
    CHECK(after.allocations == before.allocations + 1, "allocations counted");
    wgt_tensor_release(a);
    wgt_memory_stats mid;
    wgt_memory_stats_get(ctx, &mid);
    CHECK(mid.bytes_in_use == before.bytes_in_use, "release returns the bytes");
    CHECK(mid.bytes_reserved >= after.bytes_in_use - before.bytes_in_use, "the freed block stays cached");
    /* Same size class again: served from the pool, no new device buffer. */
    wgt_tensor *b = wgt_tensor_empty(ctx, WGT_F32, 1, &n);
    wgt_memory_stats again;
    wgt_memory_stats_get(ctx, &again);
    CHECK(again.pool_hits == mid.pool_hits + 1, "pool hit expected (%llu -> %llu)", (unsigned long long)mid.pool_hits,
          (unsigned long long)again.pool_hits);
    CHECK(again.device_allocations == mid.device_allocations, "no new device buffer");
    CHECK(again.peak_bytes_in_use >= again.bytes_in_use, "peak tracks");
    wgt_tensor_release(b);
    wgt_memory_trim(ctx);
    wgt_memory_stats trimmed;
    wgt_memory_stats_get(ctx, &trimmed);
    CHECK(trimmed.bytes_reserved == trimmed.bytes_in_use, "trim drops the cache (%llu reserved, %llu in use)",
          (unsigned long long)trimmed.bytes_reserved, (unsigned long long)trimmed.bytes_in_use);

    /* Over the device limit and over a budget: WGT_ERR_OUT_OF_MEMORY with numbers. */
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    int64_t huge = (int64_t)(info.limits.max_buffer_size / 4 + 16);
    CHECK(wgt_tensor_empty(ctx, WGT_F32, 1, &huge) == NULL, "over max buffer size must fail");
    CHECK(strstr(wgt_context_error_message(ctx), "bytes") != NULL, "message names bytes: %s",
          wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_OUT_OF_MEMORY, "over device limit");

    CHECK(wgt_memory_set_budget(ctx, 1u << 20) == WGT_OK, "set budget");
    int64_t two_mib = 1 << 19;
    CHECK(wgt_tensor_empty(ctx, WGT_F32, 1, &two_mib) == NULL, "over budget must fail");
    CHECK(strstr(wgt_context_error_message(ctx), "budget") != NULL, "message: %s", wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_OUT_OF_MEMORY, "over budget");
    wgt_memory_set_budget(ctx, 0);

    int64_t bad_shape[2] = {3, -1};
    CHECK(wgt_tensor_empty(ctx, WGT_F32, 2, bad_shape) == NULL, "negative dim must fail");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "negative dim");
    int64_t overflow[3] = {INT64_MAX / 2, 4, 4};
    CHECK(wgt_tensor_empty(ctx, WGT_F32, 3, overflow) == NULL, "overflowing shape must fail");
    check_error_and_recover(ctx, WGT_ERR_OUT_OF_MEMORY, "overflowing shape");
}

static const char *double_kernel =
    "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n"
    "struct Params { scale: f32, count: u32 }\n"
    "@group(0) @binding(1) var<uniform> params: Params;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
    "    let i = gid.x + gid.y * nwg.x * 64u;\n"
    "    if (i < params.count) { data[i] = data[i] * params.scale + 1.0; }\n"
    "}\n";

struct double_params {
    float scale;
    uint32_t count;
};

static void test_custom_kernels(wgt_context *ctx)
{
    enum { N = 1000 };
    float host[N], out[N];
    for (int i = 0; i < N; i++) host[i] = (float)i - 17.5f;
    int64_t n = N;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, host);
    struct double_params p = {3.0f, N};
    wgt_tensor *bufs[1] = {t};
    wgt_custom_kernel k = {.wgsl = double_kernel, .entry_point = "main", .buffers = bufs, .n_buffers = 1,
                           .uniform = &p, .uniform_size = sizeof(p), .workgroups = {(N + 63) / 64, 1, 1}};
    wgt_pipeline_stats ps0, ps1;
    wgt_pipeline_stats_get(ctx, &ps0);
    CHECK(wgt_custom_kernel_run(ctx, &k) == WGT_OK, "custom kernel: %s", wgt_context_error_message(ctx));
    CHECK(wgt_custom_kernel_run(ctx, &k) == WGT_OK, "custom kernel again: %s", wgt_context_error_message(ctx));
    wgt_pipeline_stats_get(ctx, &ps1);
    CHECK(ps1.misses == ps0.misses + 1 && ps1.hits >= ps0.hits + 1, "pipeline cache: misses %llu->%llu hits %llu->%llu",
          (unsigned long long)ps0.misses, (unsigned long long)ps1.misses, (unsigned long long)ps0.hits,
          (unsigned long long)ps1.hits);
    CHECK(ps1.compile_ms > 0, "compile time recorded");
    CHECK(wgt_tensor_read(t, out, sizeof(out)) == WGT_OK, "read");
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float once = host[i] * 3.0f + 1.0f, twice = once * 3.0f + 1.0f;
        if (out[i] != twice) bad++;
    }
    CHECK(bad == 0, "%d wrong elements after two custom dispatches", bad);

    /* Invalid WGSL: compile error with line and column. */
    wgt_custom_kernel broken = k;
    broken.wgsl = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n"
                  "@compute @workgroup_size(64)\n"
                  "fn main(@builtin(global_invocation_id) gid: vec3u) {\n"
                  "    data[gid.x] = undefined_name * 2.0;\n"
                  "}\n";
    broken.uniform = NULL;
    broken.uniform_size = 0;
    CHECK(wgt_custom_kernel_run(ctx, &broken) == WGT_ERR_SHADER_COMPILE, "bad WGSL gives %s",
          wgt_status_string(wgt_context_status(ctx)));
    CHECK(strstr(wgt_context_error_message(ctx), "line 4") != NULL, "message has the line: %s",
          wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHADER_COMPILE, "invalid WGSL");

    broken.wgsl = "this is not wgsl";
    CHECK(wgt_custom_kernel_run(ctx, &broken) == WGT_ERR_SHADER_COMPILE, "garbage WGSL");
    check_error_and_recover(ctx, WGT_ERR_SHADER_COMPILE, "garbage WGSL");

    /* Workgroup size over the device limit. */
    wgt_custom_kernel wide = k;
    wide.wgsl = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n"
                "struct Params { scale: f32, count: u32 }\n"
                "@group(0) @binding(1) var<uniform> params: Params;\n"
                "@compute @workgroup_size(4096, 1, 1)\n"
                "fn main(@builtin(global_invocation_id) gid: vec3u) { data[gid.x] = params.scale; }\n";
    CHECK(wgt_custom_kernel_run(ctx, &wide) == WGT_ERR_INVALID_WORKGROUP_SIZE, "workgroup 4096 gives %s",
          wgt_status_string(wgt_context_status(ctx)));
    check_error_and_recover(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE, "workgroup size");
    wide.wgsl = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n"
                "struct Params { scale: f32, count: u32 }\n"
                "@group(0) @binding(1) var<uniform> params: Params;\n"
                "@compute @workgroup_size(64, 64)\n"
                "fn main(@builtin(global_invocation_id) gid: vec3u) { data[gid.x] = params.scale; }\n";
    CHECK(wgt_custom_kernel_run(ctx, &wide) == WGT_ERR_INVALID_WORKGROUP_SIZE, "64x64 invocations gives %s",
          wgt_status_string(wgt_context_status(ctx)));
    check_error_and_recover(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE, "invocations per workgroup");

    /* Workgroup counts above the per-dimension limit are rejected, not sent. */
    wgt_custom_kernel many = k;
    many.workgroups[0] = 70000;
    CHECK(wgt_custom_kernel_run(ctx, &many) == WGT_ERR_INVALID_WORKGROUP_SIZE, "70000 workgroups gives %s",
          wgt_status_string(wgt_context_status(ctx)));
    CHECK(strstr(wgt_context_error_message(ctx), "70000") != NULL, "message names the count: %s",
          wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE, "workgroup count");

    /* NULLs and wrong arguments. */
    CHECK(wgt_custom_kernel_run(ctx, NULL) == WGT_ERR_INVALID_ARGUMENT, "NULL kernel");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "NULL kernel");
    wgt_custom_kernel nulls = k;
    nulls.entry_point = NULL;
    CHECK(wgt_custom_kernel_run(ctx, &nulls) == WGT_ERR_INVALID_ARGUMENT, "NULL entry");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "NULL entry");
    wgt_tensor *null_buf[1] = {NULL};
    nulls = k;
    nulls.buffers = null_buf;
    CHECK(wgt_custom_kernel_run(ctx, &nulls) == WGT_ERR_INVALID_ARGUMENT, "NULL buffer");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "NULL buffer");
    nulls = k;
    nulls.uniform = NULL;
    CHECK(wgt_custom_kernel_run(ctx, &nulls) == WGT_ERR_INVALID_ARGUMENT, "NULL uniform with size");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "NULL uniform");
    nulls = k;
    nulls.entry_point = "no_such_entry";
    CHECK(wgt_custom_kernel_run(ctx, &nulls) == WGT_ERR_SHADER_COMPILE, "missing entry point gives %s",
          wgt_status_string(wgt_context_status(ctx)));
    check_error_and_recover(ctx, WGT_ERR_SHADER_COMPILE, "missing entry point");
    /* The shader wants a uniform at binding 1 that the call does not give. */
    nulls = k;
    nulls.uniform = NULL;
    nulls.uniform_size = 0;
    CHECK(wgt_custom_kernel_run(ctx, &nulls) != WGT_OK, "missing uniform binding must fail");
    wgt_context_clear_error(ctx);
    check_error_and_recover(ctx, WGT_OK, "after binding mismatch");

    /* A zero count records nothing. */
    wgt_custom_kernel none = k;
    none.workgroups[1] = 0;
    CHECK(wgt_custom_kernel_run(ctx, &none) == WGT_OK, "zero count is a no-op");
    wgt_tensor_release(t);
}

/* More than 65535 workgroups: folded into a 2-D grid and checked element by element. */
static void test_folded_grid(wgt_context *ctx)
{
    const uint32_t count = 70000u * 64u + 3u; /* 70001 workgroups of 64 */
    float *host = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
    for (uint32_t i = 0; i < count; i++) host[i] = (float)(i % 9973);
    int64_t n = count;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, host);
    struct double_params p = {2.0f, count};
    uint32_t groups = (count + 63) / 64;
    uint32_t y = (groups + 65534) / 65535, x = (groups + y - 1) / y;
    wgt_tensor *bufs[1] = {t};
    wgt_custom_kernel k = {.wgsl = double_kernel, .entry_point = "main", .buffers = bufs, .n_buffers = 1,
                           .uniform = &p, .uniform_size = sizeof(p), .workgroups = {x, y, 1}};
    CHECK(y > 1, "grid must be 2-D");
    CHECK(wgt_custom_kernel_run(ctx, &k) == WGT_OK && wgt_tensor_read(t, out, count * sizeof(float)) == WGT_OK,
          "folded run: %s", wgt_context_error_message(ctx));
    uint32_t bad = 0, first_bad = 0;
    for (uint32_t i = 0; i < count; i++)
        if (out[i] != host[i] * 2.0f + 1.0f && bad++ == 0) first_bad = i;
    CHECK(bad == 0, "%u wrong elements in the folded grid, first at %u", bad, first_bad);
    wgt_tensor_release(t);
    free(host);
    free(out);
}

static void test_backend_choice(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_CPU;
    wgt_context *cpu = wgt_context_create(&o);
    CHECK(wgt_context_backend(cpu) == WGT_BACKEND_CPU, "cpu backend");
    int64_t n = 4;
    float v[4] = {1, 2, 3, 4};
    wgt_tensor *t = wgt_tensor_from_host(cpu, WGT_F32, 1, &n, v);
    wgt_tensor *bufs[1] = {t};
    wgt_custom_kernel k = {.wgsl = double_kernel, .entry_point = "main", .buffers = bufs, .n_buffers = 1,
                           .workgroups = {1, 1, 1}};
    CHECK(wgt_custom_kernel_run(cpu, &k) == WGT_ERR_UNSUPPORTED, "CPU has no WGSL");
    check_error_and_recover(cpu, WGT_ERR_UNSUPPORTED, "custom kernel on cpu");
    wgt_tensor_release(t);
    wgt_context_destroy(cpu);

    wgt_context_options_init(&o);
    wgt_context *any = wgt_context_create(&o);
    CHECK(wgt_context_status(any) == WGT_OK && wgt_context_backend(any) == WGT_BACKEND_WEBGPU,
          "AUTO picks WebGPU when an adapter exists");
    wgt_context_destroy(any);
}

/* webgpu_wgsl_workgroup_bytes against sizes worked out by hand from the WGSL
 * layout rules (each variable rounded up to 16 bytes, by the WebGPU rule):
 *   a  array<vec3<f32>, 5>: stride 16 -> 80
 *   b  mat3x3<f32>: 3 columns of vec3, stride 16 -> 48
 *   s  array<S, 3>, S { x: f32, y: vec3<f32>, z: f16 }: x at 0, y at 16 (align
 *      16), z at 28, size rounded to the align 16 -> 32; x3 -> 96
 *   c  atomic<u32>: 4 -> 16
 *   d  array<f32, max(N, 3u)>, N = 2 * (3 + 1) = 8 -> 32
 *   e  array<V, 7>, V = vec2<f16> (size 4) -> 28 -> 32
 *   g  array<vec4f, select(2u, 5u, BIG)>, BIG = true -> 80
 *   p  array<P, 2>, P { @size(20) q: f32, @align(8) r: u32 }: r at 24,
 *      size 28 rounded to 8 -> 32; x2 -> 64
 * = 80 + 48 + 96 + 16 + 32 + 32 + 80 + 64 = 448; "unused" (never referenced)
 * and the variable inside a comment do not count. */
static void test_workgroup_memory_estimate(void)
{
    const char *src =
        "const N = 2u * (3u + 1u);\n"
        "const BIG: bool = true;\n"
        "alias V = vec2<f16>;\n"
        "struct S { x: f32, y: vec3<f32>, z: f16 }\n"
        "struct P {\n  @size(20) q: f32,\n  @align(8) r: u32,\n}\n"
        "var<workgroup> a: array<vec3<f32>, 5>;\n"
        "var<workgroup> b: mat3x3<f32>;\n"
        "var<workgroup> s: array<S, 3>;\n"
        "var<workgroup> c: atomic<u32>;\n"
        "var<workgroup> d: array<f32, max(N, 3u)>;\n"
        "var<workgroup> e: array<V, 7>;\n"
        "var<workgroup> g: array<vec4f, select(2u, 5u, BIG)>;\n"
        "var<workgroup> p: array<P, 2>;\n"
        "var<workgroup> unused: array<f32, 1000>;\n"
        "/* var<workgroup> hidden: array<f32, 100000>; */\n"
        "@compute @workgroup_size(1) fn main() {\n"
        "  a[0] = vec3f(); b[0] = vec3f(); s[0].x = 0.0; atomicStore(&c, 0u); d[0] = 0.0; e[0] = V();\n"
        "  g[0] = vec4f(); p[0].q = 0.0; // hidden[0] = 1.0;\n"
        "}\n";
    char unknown[64];
    int64_t bytes = webgpu_wgsl_workgroup_bytes(src, unknown, sizeof(unknown));
    CHECK(bytes == 448, "workgroup memory estimate %lld, by hand 448", (long long)bytes);
    const char *odd = "var<workgroup> u: array<f32, foo(3)>;\n@compute @workgroup_size(1) fn main() { u[0] = 1.0; }\n";
    bytes = webgpu_wgsl_workgroup_bytes(odd, unknown, sizeof(unknown));
    CHECK(bytes == -1 && strcmp(unknown, "u") == 0, "an unknown size gives -1 (%lld) naming the variable (%s)",
          (long long)bytes, unknown);
}

/* A custom kernel over the device's workgroup memory is refused before it
 * reaches the driver (wgpu-native does not check; NVIDIA's driver hung), one
 * at the limit runs, and the context stays usable. */
static void test_workgroup_memory_limit(wgt_context *ctx)
{
    wgt_adapter_info info;
    if (wgt_context_adapter_info(ctx, &info) != WGT_OK) return;
    uint32_t limit = info.limits.max_compute_workgroup_storage_size;
    int64_t n = 64;
    wgt_tensor *t = wgt_zeros(ctx, WGT_F32, 1, &n);
    char src[600];
    wgt_custom_kernel k;
    memset(&k, 0, sizeof(k));
    k.entry_point = "main";
    k.buffers = &t;
    k.n_buffers = 1;
    k.workgroups[0] = k.workgroups[1] = k.workgroups[2] = 1;
    k.wgsl = src;
    for (int over = 1; over >= 0; over--) {
        snprintf(src, sizeof(src),
                 "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
                 "const QUADS: u32 = %uu;\n"
                 "var<workgroup> tile: array<vec4<f32>, QUADS>;\n"
                 "@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32) {\n"
                 "  tile[i] = vec4<f32>(f32(i)); workgroupBarrier(); out[i] = tile[63u - i].y; }\n",
                 limit / 16 + (unsigned)over);
        wgt_status s = wgt_custom_kernel_run(ctx, &k);
        if (over) {
            CHECK(s == WGT_ERR_INVALID_WORKGROUP_SIZE, "%u + 16 bytes of workgroup memory gives %s", limit,
                  wgt_status_string(s));
            check_error_and_recover(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE, "workgroup memory");
        } else {
            float out[64];
            CHECK(s == WGT_OK && wgt_tensor_read(t, out, sizeof(out)) == WGT_OK && out[0] == 63.0f && out[63] == 0.0f,
                  "a kernel at the workgroup memory limit (%u bytes) runs: %s", limit, wgt_context_error_message(ctx));
        }
    }
    wgt_tensor_release(t);
}

int main(void)
{
    test_workgroup_memory_estimate();
    test_adapters();
    test_backend_choice();
    wgt_context *ctx = test_webgpu_context();
    if (ctx) {
        test_round_trips(ctx);
        test_allocator(ctx);
        test_custom_kernels(ctx);
        test_workgroup_memory_limit(ctx);
        test_folded_grid(ctx);
        CHECK(wgt_synchronize(ctx) == WGT_OK, "synchronize");
        wgt_context_destroy(ctx);
    }
    return test_summary();
}
