// quant_rows_int8: x quantized per row and group of 32 along k, the first
// pass of QMATMUL with int8_x (backend.h; quant_matmul_dp4a.wgsl is the
// second).
//   x [M, K] f32 (rows contiguous) -> codes u32 [M, K / 4] (four int8 codes a
//   word, byte 0 = the lowest k), scales f32 [M, K / 32]
// Per group the rule of quant_q8_group.wgsl (prepended); one invocation per
// group: 8 vec4 loads, 8 word stores, one scale.

struct Params {
    groups: u32,         // M * K / 32
    x_offset: u32,       // vec4 units
    _p0: u32, _p1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;
@group(0) @binding(3) var<storage, read_write> scales: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 256u;
    if (g >= params.groups) { return; }
    var v: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) { v[i] = x[params.x_offset + g * 8u + i]; }
    let s = q8_group_scale(v);   // quant_q8_group.wgsl
    scales[g] = s;
    for (var i = 0u; i < 8u; i++) { codes[g * 8u + i] = q8_group_word(v[i], s); }
}
