// conv_splitk_reduce: the second half of the weight gradient's split-K
// (webgpu_conv.c). conv_gemm MODE 2 wrote one partial dw per split of the
// N OH OW reduction into a temporary [splits, size]; here one invocation per
// weight element adds its splits in order 0, 1, ..., so the result does not
// depend on scheduling (deterministic, unlike atomics), and writes dw.
// Consecutive invocations read consecutive elements of every split (coalesced).

struct Params {
    size: u32,          // elements of one split (K C/g KH KW)
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
    var sum = 0.0;
    var at = params.src_offset + e;
    for (var s = 0u; s < params.splits; s++) {
        sum += src[at];
        at += params.size;
    }
    dst[params.dst_offset + e] = sum;
}
