// conv_splitk_sum: the second half of the convolution's split-K for large
// outputs with few splits (WGT_CONV_V2 "reduce"; webgpu_conv.c picks it when
// the output alone gives enough workgroups, else conv_splitk_reduce.wgsl).
//
//   src [splits, size] (conv_gemm's partial outputs) -> dst [size]
//
// One invocation per element of dst: every invocation is busy whatever the
// split count (conv_splitk_reduce's 8 parts per element leave 5 of 8 idle at 3
// splits, and its 32 elements per workgroup make 100k workgroups for a 3M
// output: it ran at a fifth of the memory bandwidth on an H100). Neighbouring
// invocations read neighbouring elements of one split (coalesced). Split s
// goes into accumulator s % 4, four independent sums so that four loads are in
// flight, added (0 + 1) + (2 + 3) at the end: a fixed order, so the result
// does not depend on scheduling (deterministic, no atomics).

struct Params {
    size: u32,          // elements of one split
    splits: u32,
    src_offset: u32,
    dst_offset: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;        // [splits, size]
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;  // [size]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (e >= params.size) { return; }
    let step = params.size;
    var at = params.src_offset + e;
    var acc = vec4<f32>(0.0);
    var s = 0u;
    for (; s + 4u <= params.splits; s += 4u) {
        acc += vec4<f32>(src[at], src[at + step], src[at + 2u * step], src[at + 3u * step]);
        at += 4u * step;
    }
    if (s < params.splits) { acc.x += src[at]; }
    if (s + 1u < params.splits) { acc.y += src[at + step]; }
    if (s + 2u < params.splits) { acc.z += src[at + 2u * step]; }
    dst[params.dst_offset + e] = (acc.x + acc.y) + (acc.z + acc.w);
}
