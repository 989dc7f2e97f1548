// rope: rotary position embedding, one invocation per rotated pair.
//   x [B, H, T, D] f32 (any strides) -> out f32 [B, H, T, D] contiguous from out_offset
// Pair i of row t (position p = position_offset + t) is (d0, d1) = (2i, 2i+1)
// when interleaved, else (i, i + D/2), and turns by angle a = p * inv_freq[i]
// (negated when inverse, rope's backward):
//   out[d0] = x[d0] cos a - x[d1] sin a,  out[d1] = x[d0] sin a + x[d1] cos a
// inv_freq comes from the host (theta^(-2i/D) rounded to f32, the CPU
// backend's values) and a is one f32 product, so both backends turn by the
// same angle. cos and sin are elementwise_math.wgsl's (appended by
// webgpu_attention.c, with elementwise_common.wgsl): WGSL lets the built-ins
// err by 2^-11 even within [-pi, pi], and Chromium's SwiftShader did (1e-4
// here against the CPU, after a Cody-Waite reduction to [-pi, pi]).
// ew_opaque pins roundings those functions rely on, by an OR with a zero the
// compiler cannot see (params.zero).

struct Params {
    B: u32, H: u32, T: u32, D: u32,
    x_st: vec4<u32>,                         // strides b, h, t, d (elements)
    x_offset: u32, position_offset: u32, interleaved: u32, inverse: u32,
    pairs: u32, out_offset: u32, zero: u32, _p2: u32,  // pairs: B * H * T * D / 2; zero: 0
    inv_freq: array<vec4<f32>, 32>,          // D / 2 <= 128 values
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn ew_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | params.zero); }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * 256u;
    if (id >= params.pairs) { return; }
    let half = params.D / 2u;
    let i = id % half;
    let row = id / half;                        // (b, h, t) flattened
    let t = row % params.T;
    let h = (row / params.T) % params.H;
    let b = row / (params.T * params.H);
    var d0 = i;
    var d1 = i + half;
    if (params.interleaved != 0u) {
        d0 = 2u * i;
        d1 = 2u * i + 1u;
    }
    let a = f32(params.position_offset + t) * params.inv_freq[i / 4u][i % 4u];
    let c = ew_cos(a);
    let s = select(ew_sin(a), -ew_sin(a), params.inverse != 0u);
    let at = params.x_offset + b * params.x_st.x + h * params.x_st.y + t * params.x_st.z;
    let x0 = x[at + d0 * params.x_st.w];
    let x1 = x[at + d1 * params.x_st.w];
    let o = params.out_offset + row * params.D;
    out[o + d0] = x0 * c - x1 * s;
    out[o + d1] = x0 * s + x1 * c;
}
