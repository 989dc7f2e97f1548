// matmul_splitk_reduce: the second pass of a split-K GEMM (webgpu_matmul.c,
// run_split_k). matmul_tiled stored each K part's partial sums as
//   partial: [parts, B.. M N (padded to part_stride)] of T (f32, or i32)
// and this kernel writes
//   out[out_offset + e] = sum over p of partial[p, e] (+ bias[n] with n = e % N)
// for the e in [0, total) of the contiguous [B.., M, N] output.
//
// The parts are added in order 0, 1, .., parts - 1, always: the same product
// gives the same bits on every run (no atomics, no order that depends on
// scheduling). Each invocation owns 4 consecutive elements, read as one vec4
// per part (part_stride is a multiple of 4, so the vec4s are aligned).
//
// Prelude (webgpu_matmul.c): S, T, O and BIAS / bias_load as for the other
// matmul kernels (bias bound at binding 3 here), no matmul_common.

struct ReduceParams {
    total: u32,          // elements of out (B.. M N)
    N: u32,
    parts: u32,
    part_stride: u32,    // vec4s between two parts' partial sums
    out_offset: u32,
    bias_offset: u32,
    bias_col: u32,       // bias of column n: element bias_offset + n * bias_col
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: ReduceParams;
@group(0) @binding(1) var<storage, read> partial: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> out: array<O>;

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * WG + lid;   // vec4 index
    let e0 = 4u * i;
    if (e0 >= params.total) { return; }
    var sum = partial[i];
    for (var p = 1u; p < params.parts; p++) { sum += partial[i + p * params.part_stride]; }
    for (var j = 0u; j < 4u; j++) {
        let e = e0 + j;
        if (e >= params.total) { break; }
        var v = sum[j];
        if (BIAS) { v += bias_load(params.bias_offset + (e % params.N) * params.bias_col); }
        out[params.out_offset + e] = O(v);
    }
}
