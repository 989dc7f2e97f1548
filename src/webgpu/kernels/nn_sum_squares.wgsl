// SUM_SQUARES: per-chunk sums of squares of up to 7 tensors (contract in
// src/core/backend.h; wgt_sum_squares, src/ops/sum_squares.c).
//   x_0 [L_0], ..., x_{n-1} [L_{n-1}] (f32, contiguous) -> partials [P]
// One workgroup per chunk of `chunk` elements: workgroup g belongs to the last
// input k with first[k] <= g (an empty input has no chunk; the host leaves
// them out anyway) and sums chunk g - first[k] of it. Invocation t adds the
// squares of elements t, t + WG, ... of the chunk (neighbouring invocations
// on neighbouring elements: coalesced loads) in eight accumulators, then the
// workgroup adds its invocations' sums as a tree. Every addition happens in a
// fixed order, so the partials are the same bits every run (no atomics).
// The input is chosen per workgroup (uniform), and each binding has its own
// loop: no branch per element.

struct Params {
    n_groups: u32,   // workgroups doing work (the folded grid may overshoot)
    chunk: u32,      // elements per partial
    out_offset: u32, // partials, in f32
    n_inputs: u32,
    offset: array<vec4<u32>, 2>, // input k's first element, in f32: offset[k / 4][k % 4]
    length: array<vec4<u32>, 2>, // L_k
    first: array<vec4<u32>, 2>,  // index of input k's first partial, relative to out_offset
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x0: array<f32>;
@group(0) @binding(2) var<storage, read> x1: array<f32>;
@group(0) @binding(3) var<storage, read> x2: array<f32>;
@group(0) @binding(4) var<storage, read> x3: array<f32>;
@group(0) @binding(5) var<storage, read> x4: array<f32>;
@group(0) @binding(6) var<storage, read> x5: array<f32>;
@group(0) @binding(7) var<storage, read> x6: array<f32>;
@group(0) @binding(8) var<storage, read_write> partials: array<f32>;

const WG = 256u;

var<workgroup> sums: array<f32, WG>;

fn sq(u: vec4<f32>) -> vec4<f32> { return u * u; }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= params.n_groups) {
        return; // the whole workgroup
    }
    var k = 0u;
    for (var i = 1u; i < params.n_inputs; i++) {
        if (params.first[i / 4u][i % 4u] <= g) {
            k = i;
        }
    }
    let base = params.offset[k / 4u][k % 4u];
    let start = (g - params.first[k / 4u][k % 4u]) * params.chunk;
    let end = min(start + params.chunk, params.length[k / 4u][k % 4u]);
    let t = lid.x;
    // eight loads in flight an iteration (a chunk is 32 elements an invocation:
    // four iterations), summed into eight lanes of two vec4s; with two, each
    // kernel waited on its loads 16 times (14 us a call for a GPT's 7
    // gradients on an H200, 6 calls a step)
    var lo = vec4<f32>();
    var hi = vec4<f32>();
    var i = base + start + t;
    let stop = base + end;
    switch k {
        case 0u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x0[i], x0[i + WG], x0[i + 2u * WG], x0[i + 3u * WG]));
                hi += sq(vec4<f32>(x0[i + 4u * WG], x0[i + 5u * WG], x0[i + 6u * WG], x0[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x0[i]; lo.x += u * u; }
        }
        case 1u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x1[i], x1[i + WG], x1[i + 2u * WG], x1[i + 3u * WG]));
                hi += sq(vec4<f32>(x1[i + 4u * WG], x1[i + 5u * WG], x1[i + 6u * WG], x1[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x1[i]; lo.x += u * u; }
        }
        case 2u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x2[i], x2[i + WG], x2[i + 2u * WG], x2[i + 3u * WG]));
                hi += sq(vec4<f32>(x2[i + 4u * WG], x2[i + 5u * WG], x2[i + 6u * WG], x2[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x2[i]; lo.x += u * u; }
        }
        case 3u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x3[i], x3[i + WG], x3[i + 2u * WG], x3[i + 3u * WG]));
                hi += sq(vec4<f32>(x3[i + 4u * WG], x3[i + 5u * WG], x3[i + 6u * WG], x3[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x3[i]; lo.x += u * u; }
        }
        case 4u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x4[i], x4[i + WG], x4[i + 2u * WG], x4[i + 3u * WG]));
                hi += sq(vec4<f32>(x4[i + 4u * WG], x4[i + 5u * WG], x4[i + 6u * WG], x4[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x4[i]; lo.x += u * u; }
        }
        case 5u: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x5[i], x5[i + WG], x5[i + 2u * WG], x5[i + 3u * WG]));
                hi += sq(vec4<f32>(x5[i + 4u * WG], x5[i + 5u * WG], x5[i + 6u * WG], x5[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x5[i]; lo.x += u * u; }
        }
        default: {
            for (; i + 7u * WG < stop; i += 8u * WG) {
                lo += sq(vec4<f32>(x6[i], x6[i + WG], x6[i + 2u * WG], x6[i + 3u * WG]));
                hi += sq(vec4<f32>(x6[i + 4u * WG], x6[i + 5u * WG], x6[i + 6u * WG], x6[i + 7u * WG]));
            }
            for (; i < stop; i += WG) { let u = x6[i]; lo.x += u * u; }
        }
    }
    sums[t] = ((lo.x + lo.y) + (lo.z + lo.w)) + ((hi.x + hi.y) + (hi.z + hi.w));
    workgroupBarrier();
    for (var step = WG / 2u; step > 0u; step >>= 1u) {
        if (t < step) {
            sums[t] = sums[t] + sums[t + step];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        partials[params.out_offset + g] = sums[0];
    }
}
