/* FMA throughput of f32 vs f16 (vec4, vec2) WGSL on the device: register-only, unrolled by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wgtensor.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

/* type V (vec of E), NACC accumulators; splat: acc_i = fma(V(x_j), b, acc_i) as in a GEMM */
static void make_dp4a(char *src, size_t n)
{
    int at = snprintf(src, n, "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
                      "@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
                      "  var b = g.x * 0x01010101u;\n  let s = 0x01020304u;\n");
    for (int i = 0; i < 16; i++) at += snprintf(src + at, n - at, "  var a%d = vec4<i32>(%d);\n  let w%d = s * %du;\n", i, i, i, i + 1);
    at += snprintf(src + at, n - at, "  for (var it = 0u; it < 2048u; it++) {\n");
    for (int i = 0; i < 16; i++)
        at += snprintf(src + at, n - at, "    a%d += vec4<i32>(dot4I8Packed(w%d, b), dot4I8Packed(w%d, b ^ 1u), dot4I8Packed(w%d, b ^ 2u), dot4I8Packed(w%d, b ^ 3u));\n", i, i, i, i, i);
    at += snprintf(src + at, n - at, "    b = b + s;\n  }\n  var t = 0;\n");
    for (int i = 0; i < 16; i++) at += snprintf(src + at, n - at, "  t += a%d.x + a%d.y + a%d.z + a%d.w;\n", i, i, i, i);
    snprintf(src + at, n - at, "  out[g.x] = f32(t);\n}\n");
}

static void make(char *src, size_t n, const char *en, const char *V, const char *E, int splat)
{
    int at = snprintf(src, n, "%s\n@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
                      "@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
                      "  let s = %s(%s(f32(g.x & 7u) * 0.001));\n  var b = s;\n  var x = s;\n", en, V, E);
    for (int i = 0; i < 16; i++) at += snprintf(src + at, n - at, "  var a%d = %s(%s(f32(%d) * 0.01));\n", i, V, E, i);
    at += snprintf(src + at, n - at, "  for (var it = 0u; it < 2048u; it++) {\n");
    for (int i = 0; i < 16; i++) {
        if (splat) at += snprintf(src + at, n - at, "    a%d = fma(%s(x[%d]), b, a%d);\n", i, V, i % 2, i);
        else at += snprintf(src + at, n - at, "    a%d = fma(a%d, b, s);\n", i, i);
    }
    at += snprintf(src + at, n - at, "    b = b + s;\n    x = x - s;\n  }\n  var t = 0.0;\n");
    for (int i = 0; i < 16; i++) at += snprintf(src + at, n - at, "  t += f32(dot(a%d, a%d));\n", i, i);
    snprintf(src + at, n - at, "  out[g.x] = t;\n}\n");
}

int main(int argc, char **argv)
{
    wgt_context_options o; wgt_context_options_init(&o); o.backend = WGT_BACKEND_WEBGPU;
    wgt_context *ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx)) { fprintf(stderr, "no ctx\n"); return 1; }
    uint32_t wgs = argc > 1 ? (uint32_t)atoi(argv[1]) : 132 * 64;
    int64_t n = (int64_t)wgs * 256;
    wgt_tensor *out = wgt_zeros(ctx, WGT_F32, 1, &n);
    struct { const char *en, *V, *E; int lanes, splat; } ty[] = {
        {"", "vec4<f32>", "f32", 4, 0}, {"enable f16;", "vec4<f16>", "f16", 4, 0}, {"enable f16;", "vec2<f16>", "f16", 2, 0},
        {"", "vec4<f32>", "f32", 4, 1}, {"enable f16;", "vec4<f16>", "f16", 4, 1}, {"", "dp4a(i8x4)", "", 16, 0}};
    for (int t = 0; t < 6; t++) {
        char src[16384];
        if (t == 5) make_dp4a(src, sizeof src);
        else make(src, sizeof src, ty[t].en, ty[t].V, ty[t].E, ty[t].splat);
        wgt_custom_kernel k = {src, "main", &out, NULL, 1, NULL, 0, {wgs, 1, 1}};
        for (int rep = 0; rep < 2; rep++) {
            wgt_synchronize(ctx);
            double t0 = now();
            for (int r = 0; r < 5; r++) wgt_custom_kernel_run(ctx, &k);
            wgt_synchronize(ctx);
            double dt = (now() - t0) / 5;
            double flops = 2.0 * (t == 5 ? 16 : ty[t].lanes) * 16 * 2048 * (double)n;
            if (rep) printf("%-10s splat %d %.3f ms  %.1f TFLOP/s  (%s)\n", ty[t].V, ty[t].splat, dt * 1e3, flops / dt / 1e12, wgt_context_error_message(ctx));
        }
    }
    wgt_tensor_release(out);
    wgt_context_destroy(ctx);
    return 0;
}
