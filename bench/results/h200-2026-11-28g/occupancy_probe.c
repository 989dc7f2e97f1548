/* How many 256-invocation workgroups an SM runs at once on this GPU's Vulkan
 * driver, by workgroup memory size: each workgroup runs a dependent FMA chain
 * of fixed length (latency-bound, so co-resident workgroups overlap), and N
 * workgroups take ceil(N / (SMs * k)) chain times when k fit an SM.
 * Build: cc -O2 -Iinclude occupancy_probe.c -Lbuild-bench/lib -lwgtensor -Wl,-rpath,$PWD/build-bench/lib
 * Run: ./occupancy_probe [SMs] -> per size: ms for 1x .. 6x SMs workgroups. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "wgtensor.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const int sms = argc > 1 ? atoi(argv[1]) : 132;
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    wgt_context *ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) return 1;
    const int kib[] = {8, 16, 21, 24, 32, 40, 44, 48};
    wgt_tensor *out = wgt_zeros(ctx, WGT_F32, 1, (int64_t[]){(int64_t)sms * 8 * 256});
    for (size_t s = 0; s < sizeof(kib) / sizeof(kib[0]); s++) {
        char wgsl[1024];
        const int vec4s = kib[s] * 1024 / 16 - 1; /* minus a 16-byte slot: 48 KiB itself is the limit */
        snprintf(wgsl, sizeof(wgsl),
                 "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
                 "var<workgroup> pad: array<vec4<f32>, %d>;\n"
                 "@compute @workgroup_size(256)\n"
                 "fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n"
                 "  for (var i = lid; i < %du; i += 256u) { pad[i] = vec4<f32>(f32(i)); }\n"
                 "  workgroupBarrier();\n"
                 "  var x = pad[(lid * 7u) %% %du].x;\n"
                 "  for (var i = 0u; i < 50000u; i++) { x = fma(x, 0.9999999, 0.5); }\n"
                 "  out[wid.x * 256u + lid] = x;\n"
                 "}\n",
                 vec4s, vec4s, vec4s);
        printf("%2d KiB:", kib[s]);
        for (int mult = 1; mult <= 6; mult++) {
            wgt_custom_kernel k = {.wgsl = wgsl, .entry_point = "main", .buffers = &out, .n_buffers = 1,
                                   .workgroups = {(uint32_t)(sms * mult), 1, 1}};
            if (mult == 1) { /* warm-up: pipeline and clocks */
                for (int w = 0; w < 3; w++) wgt_custom_kernel_run(ctx, &k);
                wgt_synchronize(ctx);
            }
            double best = 1e9;
            for (int rep = 0; rep < 3; rep++) {
                double t0 = now_ms();
                wgt_status st = wgt_custom_kernel_run(ctx, &k);
                if (st != WGT_OK || wgt_synchronize(ctx) != WGT_OK) {
                    printf(" error: %s\n", wgt_context_error_message(ctx));
                    return 1;
                }
                double t = now_ms() - t0;
                best = t < best ? t : best;
            }
            printf(" %dx %.3f", mult, best);
        }
        printf(" ms\n");
    }
    wgt_context_destroy(ctx);
    return 0;
}
