/* chain_probe: what a dependent dispatch boundary costs a decode-shaped GEMV
 * chain, and what a single dispatch with ordered tickets and device-scope
 * "stage done" counters saves (raw webgpu.h, no wgtensor).
 *
 * Per layer l (L layers, f16 weights, f32 vectors):
 *   A: y[r] = W1[l][r, :] . x          W1 [N1, K1]   (2048 -> 8192)
 *   B: x[r] = x[r] + W2[l][r, :] . y   W2 [K1, N1]   (8192 -> 2048)
 * mode 0: A and B as their own dispatches, one compute pass (2 L dispatches);
 * mode 1: one dispatch a layer: a workgroup takes a ticket (atomicAdd); tickets
 *         below A's count do A's rows, the rest B's, which wait until A's
 *         done counter is full (B's first PF weight quads are fetched first);
 * mode 2: the whole chain in one dispatch, every stage waiting on the one
 *         before it.
 * A ticket is taken by a running workgroup, so a workgroup waits only on
 * workgroups that are already running (no deadlock where they keep running).
 * Every mode must give the same x bit for bit (same sums in the same order).
 * Build: gcc -O2 -std=c11 -I.deps/wgpu-native/include chain_probe.c
 *        -Lbuild-bench/lib -lwgpu_native -o chain_probe
 * Run:   ./chain_probe [iterations] [prefetch quads] [layers] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include "webgpu.h"
#include "wgpu.h"

static int L = 16; /* layers: argv[3] */
#define K1 2048
#define N1 8192
#define RPW 8 /* rows a workgroup: one subgroup of 32 a row */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static WGPUStringView sv(const char *s) { return (WGPUStringView){s, strlen(s)}; }

static WGPUDevice device_got;
static void on_device(WGPURequestDeviceStatus st, WGPUDevice d, WGPUStringView m, void *a, void *b)
{
    (void)a, (void)b;
    if (st != WGPURequestDeviceStatus_Success) fprintf(stderr, "device: %.*s\n", (int)m.length, m.data);
    device_got = d;
}
static void on_error(WGPUDevice const *d, WGPUErrorType t, WGPUStringView m, void *a, void *b)
{
    (void)d, (void)a, (void)b;
    fprintf(stderr, "uncaptured error %d: %.*s\n", (int)t, (int)m.length, m.data);
}
static int mapped;
static void on_map(WGPUMapAsyncStatus st, WGPUStringView m, void *a, void *b)
{
    (void)m, (void)a, (void)b;
    mapped = st == WGPUMapAsyncStatus_Success ? 1 : -1;
}

/* The shader: MODE 0 plain stages (STAGE picks A or B), 1 one layer, 2 the chain. */
static char *shader(int mode, int stage, int pf)
{
    char *s = malloc(16384);
    snprintf(s, 16384,
"// naga takes subgroup built-ins without enable subgroups\n"
"const MODE: u32 = %du; const STAGE: u32 = %du; const PF: u32 = %du;\n"
"const K1: u32 = %du; const N1: u32 = %du; const RPW: u32 = %du; const L: u32 = %du;\n"
"const NA: u32 = N1 / RPW; const NB: u32 = K1 / RPW;\n"
"struct P { layer: u32, p1: u32, p2: u32, p3: u32 }\n"
"@group(0) @binding(0) var<uniform> prm: P;\n"
"@group(0) @binding(1) var<storage, read> w1: array<vec4<u32>>;\n"
"@group(0) @binding(2) var<storage, read> w2: array<vec4<u32>>;\n"
"@group(0) @binding(3) var<storage, read_write> x: array<vec4<f32>>;\n"
"@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;\n"
"@group(0) @binding(5) var<storage, read_write> ctr: array<atomic<u32>>;\n"
"var<workgroup> tk: u32;\n"
"fn dot8(w: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {\n"
"  return dot(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), a) +\n"
"         dot(vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)), b);\n"
"}\n"
"fn xs(i: u32) -> f32 { return x[i / 4u][i %% 4u]; }\n"
"fn wait_for(i: u32, n: u32, lid: u32) {\n"
"  if (lid == 0u) { while (atomicLoad(&ctr[i]) < n) { } }\n"
"  storageBarrier();\n"
"}\n"
"fn signal(i: u32, lid: u32) {\n"
"  storageBarrier();\n"
"  if (lid == 0u) { atomicAdd(&ctr[i], 1u); }\n"
"}\n"
"// A: rows blk RPW.. of layer l; lane reads quads lane + 32 i (8 halves each)\n"
"fn stage_a(l: u32, blk: u32, lid: u32, wait_i: u32, wait_n: u32) {\n"
"  let r = blk * RPW + lid / 32u; let lane = lid %% 32u;\n"
"  let base = (l * N1 + r) * (K1 / 8u);\n"
"  var w: array<vec4<u32>, K1 / 256u>;\n"
"  for (var i = 0u; i < K1 / 256u; i++) { w[i] = w1[base + lane + 32u * i]; }\n"
"  if (wait_n > 0u) { wait_for(wait_i, wait_n, lid); }\n"
"  var acc = 0.0;\n"
"  for (var i = 0u; i < K1 / 256u; i++) { let q = (lane + 32u * i) * 2u; acc += dot8(w[i], x[q], x[q + 1u]); }\n"
"  let s = subgroupAdd(acc);\n"
"  if (lane == 0u) { y[r / 4u][r %% 4u] = s; }\n"
"}\n"
"fn stage_b(l: u32, blk: u32, lid: u32, wait_i: u32, wait_n: u32) {\n"
"  let r = blk * RPW + lid / 32u; let lane = lid %% 32u;\n"
"  let base = (l * K1 + r) * (N1 / 8u);\n"
"  var w: array<vec4<u32>, PF + 1u>;\n"
"  for (var i = 0u; i < PF; i++) { w[i] = w2[base + lane + 32u * i]; }\n"
"  if (wait_n > 0u) { wait_for(wait_i, wait_n, lid); }\n"
"  var acc = 0.0;\n"
"  for (var i = 0u; i < N1 / 256u; i++) {\n"
"    var wv: vec4<u32>;\n"
"    if (i < PF) { wv = w[i]; } else { wv = w2[base + lane + 32u * i]; }\n"
"    let q = (lane + 32u * i) * 2u; acc += dot8(wv, y[q], y[q + 1u]);\n"
"  }\n"
"  let s = subgroupAdd(acc);\n"
"  if (lane == 0u) { x[r / 4u][r %% 4u] = xs(r) + s; }\n"
"}\n"
"@compute @workgroup_size(256)\n"
"fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n"
"  if (MODE == 0u) {\n"
"    if (STAGE == 0u) { stage_a(prm.layer, wid.x, lid, 0u, 0u); } else { stage_b(prm.layer, wid.x, lid, 0u, 0u); }\n"
"    return;\n"
"  }\n"
"  // counters: [0] tickets, then one done counter a stage (stage s: 1 + s)\n"
"  let first_stage = select(0u, 2u * prm.layer, MODE == 1u);\n"
"  if (lid == 0u) { tk = atomicAdd(&ctr[select(0u, 2u * L + 1u + prm.layer, MODE == 1u)], 1u); }\n"
"  let t = workgroupUniformLoad(&tk);\n"
"  let s = first_stage + 2u * (t / (NA + NB)) + select(0u, 1u, t %% (NA + NB) >= NA);\n"
"  let blk = select(t %% (NA + NB), t %% (NA + NB) - NA, t %% (NA + NB) >= NA);\n"
"  let l = s / 2u;\n"
"  // a stage waits on the one before it in this dispatch (mode 1: B on A)\n"
"  let wait_n = select(0u, select(NB, NA, s %% 2u == 1u), s > first_stage);\n"
"  if (s %% 2u == 0u) { stage_a(l, blk, lid, s, wait_n); } else { stage_b(l, blk, lid, s, wait_n); }\n"
"  signal(1u + s, lid);\n"
"}\n", mode, stage, pf, K1, N1, RPW, L);
    return s;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 50;
    int pf = argc > 2 ? atoi(argv[2]) : 8;
    if (argc > 3) L = atoi(argv[3]);
    WGPUInstance inst = wgpuCreateInstance(NULL);
    WGPUAdapter ads[16];
    size_t n = wgpuInstanceEnumerateAdapters(inst, NULL, NULL);
    if (n > 16) n = 16;
    wgpuInstanceEnumerateAdapters(inst, NULL, ads);
    WGPUAdapter ad = NULL;
    for (size_t i = 0; i < n; i++) {
        WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
        wgpuAdapterGetInfo(ads[i], &info);
        printf("adapter %zu: %.*s type %d backend %d\n", i, (int)info.device.length, info.device.data,
               (int)info.adapterType, (int)info.backendType);
        if (!ad && info.adapterType == WGPUAdapterType_DiscreteGPU && info.backendType == WGPUBackendType_Vulkan)
            ad = ads[i];
    }
    if (!ad && n) ad = ads[0];
    if (!ad) return 1;
    WGPULimits lim = WGPU_LIMITS_INIT;
    wgpuAdapterGetLimits(ad, &lim);
    WGPUFeatureName feat = (WGPUFeatureName)WGPUNativeFeature_Subgroup;
    if (wgpuAdapterHasFeature(ad, WGPUFeatureName_Subgroups)) feat = WGPUFeatureName_Subgroups;
    WGPUDeviceDescriptor dd = WGPU_DEVICE_DESCRIPTOR_INIT;
    dd.requiredFeatureCount = 1;
    dd.requiredFeatures = &feat;
    dd.requiredLimits = &lim;
    dd.uncapturedErrorCallbackInfo.callback = on_error;
    WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_device;
    wgpuAdapterRequestDevice(ad, &dd, cb);
    for (int i = 0; i < 1000 && !device_got; i++) wgpuInstanceProcessEvents(inst);
    if (!device_got) return 1;
    WGPUDevice dev = device_got;
    WGPUQueue q = wgpuDeviceGetQueue(dev);

    const uint64_t wbytes = (uint64_t)L * N1 * K1 * 2;
    printf("weights %.1f MB a matrix set, max binding %llu\n", wbytes / 1e6,
           (unsigned long long)lim.maxStorageBufferBindingSize);
    WGPUBufferDescriptor bd = WGPU_BUFFER_DESCRIPTOR_INIT;
    bd.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
    bd.size = wbytes;
    WGPUBuffer w1 = wgpuDeviceCreateBuffer(dev, &bd), w2 = wgpuDeviceCreateBuffer(dev, &bd);
    /* random-ish f16 weights in [-1/64, 1/64): fill a chunk on the host, repeat it with an offset pattern */
    const size_t chunk = 1 << 24;
    uint16_t *h = malloc(chunk);
    uint32_t rng = 12345;
    for (size_t i = 0; i < chunk / 2; i++) {
        rng = rng * 1664525u + 1013904223u;
        int m = (rng >> 16) & 0x3ff; /* mantissa */
        int e = 6 + ((rng >> 26) & 3); /* exponent 6..9: magnitudes 2^-9 .. 2^-5 */
        h[i] = (uint16_t)(((rng >> 31) << 15) | (e << 10) | m);
    }
    for (uint64_t off = 0; off < wbytes; off += chunk) {
        wgpuQueueWriteBuffer(q, w1, off, h, chunk);
        wgpuQueueWriteBuffer(q, w2, off, h, chunk);
        h[off / chunk % (chunk / 2)] ^= 0x1234; /* vary the chunks */
    }
    free(h);
    bd.size = K1 * 4;
    WGPUBuffer x = wgpuDeviceCreateBuffer(dev, &bd), x0 = wgpuDeviceCreateBuffer(dev, &bd);
    float hx[K1];
    for (int i = 0; i < K1; i++) hx[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    wgpuQueueWriteBuffer(q, x0, 0, hx, sizeof(hx));
    bd.size = N1 * 4;
    WGPUBuffer y = wgpuDeviceCreateBuffer(dev, &bd);
    bd.size = 256;
    WGPUBuffer ctr = wgpuDeviceCreateBuffer(dev, &bd);
    bd.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
    bd.size = 256 * L;
    WGPUBuffer ub = wgpuDeviceCreateBuffer(dev, &bd);
    for (uint32_t l = 0; l < L; l++) {
        uint32_t p[4] = {l, 0, 0, 0};
        wgpuQueueWriteBuffer(q, ub, 256 * l, p, 16);
    }
    bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    bd.size = K1 * 4;
    WGPUBuffer rb = wgpuDeviceCreateBuffer(dev, &bd);

    /* one explicit layout for every pipeline (auto layouts are not shared between pipelines) */
    WGPUBindGroupLayoutEntry le[6];
    memset(le, 0, sizeof(le));
    for (int i = 0; i < 6; i++) {
        le[i].binding = i;
        le[i].visibility = WGPUShaderStage_Compute;
        le[i].buffer.type = i == 0 ? WGPUBufferBindingType_Uniform
                            : i < 3 ? WGPUBufferBindingType_ReadOnlyStorage : WGPUBufferBindingType_Storage;
    }
    WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
    ld.entryCount = 6;
    ld.entries = le;
    WGPUBindGroupLayout bgl = wgpuDeviceCreateBindGroupLayout(dev, &ld);
    WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
    pld.bindGroupLayoutCount = 1;
    pld.bindGroupLayouts = &bgl;
    WGPUPipelineLayout layout = wgpuDeviceCreatePipelineLayout(dev, &pld);

    float results[3][K1];
    for (int mode = 0; mode < 3; mode++) {
        WGPUComputePipeline pipes[2];
        for (int st = 0; st < (mode == 0 ? 2 : 1); st++) {
            char *src = shader(mode, st, pf);
            WGPUShaderSourceWGSL ws = WGPU_SHADER_SOURCE_WGSL_INIT;
            ws.code = sv(src);
            WGPUShaderModuleDescriptor md = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
            md.nextInChain = &ws.chain;
            WGPUShaderModule m = wgpuDeviceCreateShaderModule(dev, &md);
            WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
            pd.layout = layout;
            pd.compute.module = m;
            pd.compute.entryPoint = sv("main");
            pipes[st] = wgpuDeviceCreateComputePipeline(dev, &pd);
            free(src);
        }
        WGPUBindGroup groups[L];
        for (int l = 0; l < L; l++) {
            WGPUBindGroupEntry e[6] = {0};
            WGPUBuffer bufs[6] = {ub, w1, w2, x, y, ctr};
            for (int i = 0; i < 6; i++) {
                e[i].binding = i;
                e[i].buffer = bufs[i];
                e[i].offset = i == 0 ? 256 * l : 0;
                e[i].size = i == 0 ? 16 : WGPU_WHOLE_SIZE;
            }
            WGPUBindGroupDescriptor gd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
            gd.layout = bgl;
            gd.entryCount = 6;
            gd.entries = e;
            groups[l] = wgpuDeviceCreateBindGroup(dev, &gd);
        }
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            for (int it = 0; it < iters; it++) {
                WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
                wgpuCommandEncoderClearBuffer(enc, ctr, 0, 256);
                wgpuCommandEncoderCopyBufferToBuffer(enc, x0, 0, x, 0, K1 * 4);
                WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
                if (mode == 0) {
                    for (int l = 0; l < L; l++) {
                        wgpuComputePassEncoderSetPipeline(pass, pipes[0]);
                        wgpuComputePassEncoderSetBindGroup(pass, 0, groups[l], 0, NULL);
                        wgpuComputePassEncoderDispatchWorkgroups(pass, N1 / RPW, 1, 1);
                        wgpuComputePassEncoderSetPipeline(pass, pipes[1]);
                        wgpuComputePassEncoderDispatchWorkgroups(pass, K1 / RPW, 1, 1);
                    }
                } else if (mode == 1) {
                    wgpuComputePassEncoderSetPipeline(pass, pipes[0]);
                    for (int l = 0; l < L; l++) {
                        wgpuComputePassEncoderSetBindGroup(pass, 0, groups[l], 0, NULL);
                        wgpuComputePassEncoderDispatchWorkgroups(pass, N1 / RPW + K1 / RPW, 1, 1);
                    }
                } else {
                    wgpuComputePassEncoderSetPipeline(pass, pipes[0]);
                    wgpuComputePassEncoderSetBindGroup(pass, 0, groups[0], 0, NULL);
                    wgpuComputePassEncoderDispatchWorkgroups(pass, L * (N1 / RPW + K1 / RPW), 1, 1);
                }
                wgpuComputePassEncoderEnd(pass);
                wgpuComputePassEncoderRelease(pass);
                WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, NULL);
                wgpuQueueSubmit(q, 1, &cmd);
                wgpuCommandBufferRelease(cmd);
                wgpuCommandEncoderRelease(enc);
            }
            wgpuDevicePoll(dev, 1, NULL);
            double dt = (now() - t0) / iters;
            if (dt < best) best = dt;
            printf("mode %d prefetch %d: %.1f us an iteration (%d layers), %.0f GB/s of weights\n", mode, pf,
                   dt * 1e6, L, 2.0 * wbytes / dt / 1e9);
            fflush(stdout);
        }
        WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
        wgpuCommandEncoderCopyBufferToBuffer(enc, x, 0, rb, 0, K1 * 4);
        WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, NULL);
        wgpuQueueSubmit(q, 1, &cmd);
        WGPUBufferMapCallbackInfo mc = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
        mc.mode = WGPUCallbackMode_AllowProcessEvents;
        mc.callback = on_map;
        mapped = 0;
        wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, K1 * 4, mc);
        for (int i = 0; i < 100000 && !mapped; i++) {
            wgpuDevicePoll(dev, 1, NULL);
            wgpuInstanceProcessEvents(inst);
        }
        memcpy(results[mode], wgpuBufferGetConstMappedRange(rb, 0, K1 * 4), K1 * 4);
        wgpuBufferUnmap(rb);
        printf("mode %d best %.1f us; x[0..3] %g %g %g %g\n", mode, best * 1e6, results[mode][0], results[mode][1],
               results[mode][2], results[mode][3]);
        if (mode) {
            int diff = 0;
            for (int i = 0; i < K1; i++) diff += memcmp(&results[mode][i], &results[0][i], 4) != 0;
            printf("mode %d: %d of %d elements differ from mode 0\n", mode, diff, K1);
        }
    }
    return 0;
}
