// conv_splitk_reduce: the second half of the convolution's split-K
// (webgpu_conv.c). conv_gemm wrote one partial output per split of the
// reduction into a temporary [splits, size]; here they are summed and written
// to the output.
//
// A workgroup owns EL = 32 consecutive elements; its 8 warps-worth of
// invocations (PARTS) each sum every PARTS-th split for those elements, with
// 4 independent accumulators so that several loads are in flight (a single
// running sum waits out one memory latency per split: 256 splits took longer
// than reading them). The parts are then added in part order through
// workgroup memory. The order of every addition is fixed, so the result does
// not depend on scheduling (deterministic, unlike atomics). Each group of 32
// neighbouring invocations reads 32 consecutive elements of one split
// (coalesced).

struct Params {
    size: u32,          // elements of one split
    splits: u32,
    src_offset: u32,
    dst_offset: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;        // [splits, size]
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;  // [size]

const EL = 32u;
const PARTS = 8u;

var<workgroup> part_sums: array<f32, PARTS * EL>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let el = lid % EL;
    let part = lid / EL;
    let e = (wid.x + wid.y * nwg.x) * EL + el;
    var acc = vec4<f32>(0.0);   // splits part + PARTS (4 i + j) go to acc[j]
    if (e < params.size) {
        var s = part;
        let step = PARTS * params.size;
        var at = params.src_offset + s * params.size + e;
        for (; s + 3u * PARTS < params.splits; s += 4u * PARTS) {
            acc += vec4<f32>(src[at], src[at + step], src[at + 2u * step], src[at + 3u * step]);
            at += 4u * step;
        }
        if (s < params.splits) { acc.x += src[at]; }
        if (s + PARTS < params.splits) { acc.y += src[at + step]; }
        if (s + 2u * PARTS < params.splits) { acc.z += src[at + 2u * step]; }
    }
    part_sums[part * EL + el] = (acc.x + acc.y) + (acc.z + acc.w);
    workgroupBarrier();
    if (part == 0u && e < params.size) {
        var sum = 0.0;
        for (var p = 0u; p < PARTS; p++) { sum += part_sums[p * EL + el]; }
        dst[params.dst_offset + e] = sum;
    }
}
