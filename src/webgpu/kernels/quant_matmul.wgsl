// quant_matmul: out = x W^T with W stored group-wise in 8 or 4 bits (QMATMUL).
//   x [M, K] f32, qweight [N, K * bits / 32] u32 words, scales [N, K / 32] f32
//   -> out [M, N] f32; all contiguous, offsets in vec4 units (multiples of 4 elements).
// One workgroup of 64 invocations per (output column n, block of ROWS rows of
// x): invocation i takes the groups g = i, i + 64, ... of row n, loads the
// group's codes as vec4<u32> (8 bits: two loads, 4 bits: one), forms the
// 32-term integer-weighted dot product with x in f32, scales it and adds it
// to its ROWS partial sums; a tree reduction in workgroup memory finishes.
// Decode (M = 1) reads every weight byte exactly once: a bandwidth-bound GEMV.
// Weight (n, k) = code * scale: 8 bits: byte k % 4 of word k / 4 as int8;
// 4 bits: nibble k % 8 (low first) of word k / 8, minus 8.

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    x_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // x, q in vec4 units; s, out in elements
    row_blocks: u32, _p0: u32, _p1: u32, _p2: u32,                 // ceil(M / ROWS)
}

const ROWS: u32 = 4u;
const WG: u32 = 64u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<array<f32, 64>, 4>;

// dot of 32 codes (8 vec4) of one group with x's 8 vec4 at xa
fn group_dot(codes: array<vec4<f32>, 8>, xa: u32) -> f32 {
    var d = 0.0;
    for (var j = 0u; j < 8u; j++) { d += dot(codes[j], x[xa + j]); }
    return d;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.N * params.row_blocks) { return; }   // uniform per workgroup
    let n = id % params.N;
    let m0 = (id / params.N) * ROWS;
    let G = params.K / 32u;
    let K4 = params.K / 4u;
    let words4 = params.K * params.bits / 128u;            // vec4<u32> per weight row
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var g = lid; g < G; g += WG) {
        var codes: array<vec4<f32>, 8>;
        let qa = params.q_offset + n * words4;
        if (params.bits == 8u) {
            let w0 = q[qa + 2u * g];
            let w1 = q[qa + 2u * g + 1u];
            codes[0] = bytes4(w0.x); codes[1] = bytes4(w0.y); codes[2] = bytes4(w0.z); codes[3] = bytes4(w0.w);
            codes[4] = bytes4(w1.x); codes[5] = bytes4(w1.y); codes[6] = bytes4(w1.z); codes[7] = bytes4(w1.w);
        } else {
            let w = q[qa + g];
            codes[0] = nibbles_lo(w.x); codes[1] = nibbles_hi(w.x);
            codes[2] = nibbles_lo(w.y); codes[3] = nibbles_hi(w.y);
            codes[4] = nibbles_lo(w.z); codes[5] = nibbles_hi(w.z);
            codes[6] = nibbles_lo(w.w); codes[7] = nibbles_hi(w.w);
        }
        let scale = scales[params.s_offset + n * G + g];
        for (var r = 0u; r < ROWS; r++) {
            let m = m0 + r;
            if (m < params.M) {
                acc[r] += group_dot(codes, params.x_offset + m * K4 + 8u * g) * scale;
            }
        }
    }
    for (var r = 0u; r < ROWS; r++) { partial[r][lid] = acc[r]; }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (lid < stride) {
            for (var r = 0u; r < ROWS; r++) { partial[r][lid] += partial[r][lid + stride]; }
        }
        workgroupBarrier();
    }
    if (lid < ROWS) {
        let m = m0 + lid;
        if (m < params.M) { out[params.out_offset + m * params.N + n] = partial[lid][0]; }
    }
}
