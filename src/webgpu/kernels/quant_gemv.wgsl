// quant_gemv: the decode form (M = 1) of QMATMUL, out = x W^T with W stored
// group-wise in 8 or 4 bits (same layout and Params as quant_matmul.wgsl).
//   x [1, K] f32, qweight [N, K * bits / 32] u32 words, scales [N, K / 32] f32
//   -> out [1, N] f32
// Why: quant_matmul gives one workgroup of 64 invocations to each output
// column, and every invocation loads 32 x values (128 bytes) per group of 32
// weights (32 or 16 bytes): in decode that is N tiny workgroups, each ending
// in a 6-step tree, whose x traffic is 4-8 times the weight traffic. Here an
// invocation keeps a group's x in registers and uses it for R = 4 rows, and a
// workgroup of 256 covers 16 rows (4 row blocks of 64 invocations), so the
// tree runs once per 16 outputs.
// Invocation (row block rb = lid / 64, lane): rows n0 = 16 wid + 4 rb .. + 3,
// groups g = lane, lane + 64, ..; for each group: x's 8 vec4, then per row the
// group's codes (8 bits: two vec4<u32> loads, 4 bits: one), the 32-term dot
// product, times the group's scale. Weight (n, k) = code * scale: 8 bits:
// byte k % 4 of word k / 4 as int8; 4 bits: nibble k % 8 (low first) of word
// k / 8, minus 8.

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    x_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // x, q in vec4 units; s, out in elements
    row_blocks: u32, _p0: u32, _p1: u32, _p2: u32,
}

const WG: u32 = 256u;
const LANES: u32 = 64u;     // invocations per row block
const R: u32 = 4u;          // rows per invocation
const ROWS: u32 = (WG / LANES) * R;   // rows per workgroup

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<vec4<f32>, WG>;   // [lid] -> rows n0 .. n0 + 3

fn dot_word8(w: u32, x0: vec4<f32>) -> f32 { return dot(bytes4(w), x0); }
fn dot_word4(w: u32, x0: vec4<f32>, x1: vec4<f32>) -> f32 { return dot(nibbles_lo(w), x0) + dot(nibbles_hi(w), x1); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id * ROWS >= params.N) { return; }   // uniform per workgroup
    let lane = lid % LANES;
    let n0 = id * ROWS + (lid / LANES) * R;
    let G = params.K / 32u;
    let words4 = params.K * params.bits / 128u;   // vec4<u32> per weight row
    var acc = vec4<f32>();
    for (var g = lane; g < G; g += LANES) {
        let xa = params.x_offset + 8u * g;
        var xs: array<vec4<f32>, 8>;
        for (var j = 0u; j < 8u; j++) { xs[j] = x[xa + j]; }
        for (var r = 0u; r < R; r++) {
            let n = n0 + r;
            if (n >= params.N) { break; }
            let qa = params.q_offset + n * words4;
            var d = 0.0;
            if (params.bits == 8u) {
                let w0 = q[qa + 2u * g];
                let w1 = q[qa + 2u * g + 1u];
                d = dot_word8(w0.x, xs[0]) + dot_word8(w0.y, xs[1]) + dot_word8(w0.z, xs[2]) + dot_word8(w0.w, xs[3]) +
                    dot_word8(w1.x, xs[4]) + dot_word8(w1.y, xs[5]) + dot_word8(w1.z, xs[6]) + dot_word8(w1.w, xs[7]);
            } else {
                let w = q[qa + g];
                d = dot_word4(w.x, xs[0], xs[1]) + dot_word4(w.y, xs[2], xs[3]) + dot_word4(w.z, xs[4], xs[5]) +
                    dot_word4(w.w, xs[6], xs[7]);
            }
            acc[r] += d * scales[params.s_offset + n * G + g];
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s >>= 1u) {
        if (lane < s) { partial[lid] += partial[lid + s]; }
        workgroupBarrier();
    }
    if (lane < R && n0 + lane < params.N) {
        out[params.out_offset + n0 + lane] = partial[lid - lane][lane];
    }
}
