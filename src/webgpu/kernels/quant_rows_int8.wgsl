// quant_rows_int8: x quantized per row and group of 32 along k, the first
// pass of QMATMUL with int8_x (backend.h; quant_matmul_dp4a.wgsl is the
// second).
//   x [M, K] f32 (rows contiguous) -> codes u32 [M, K / 4] (four int8 codes a
//   word, byte 0 = the lowest k), scales f32 [M, K / 32]
// Per group: s = max|x| / 127, code = round-to-even(x / s) clamped to
// [-127, 127]; a group of zeros gets s = 0 and codes 0, one holding a NaN or
// an infinity s = NaN and codes 0 (the CPU reference,
// cpu_quant.c's quantize_group, defines the same; x / s may round differently
// here by an ulp, so a value within an ulp of a tie may get the other code).
// One invocation per group: 8 vec4 loads, 8 word stores, one scale.

struct Params {
    groups: u32,         // M * K / 32
    x_offset: u32,       // vec4 units
    _p0: u32, _p1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;
@group(0) @binding(3) var<storage, read_write> scales: array<f32>;

// Four values already divided by s, rounded to even and packed as int8 bytes.
fn pack_codes(q: vec4<f32>) -> u32 {
    let c = vec4<i32>(clamp(round(q), vec4<f32>(-127.0), vec4<f32>(127.0)));
    let b = vec4<u32>(bitcast<vec4<u32>>(c) & vec4<u32>(0xffu));
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 256u;
    if (g >= params.groups) { return; }
    var v: array<vec4<f32>, 8>;
    var amax = 0.0;
    var finite = true;   // by the exponent bits: a compiler may assume floats are finite
    for (var i = 0u; i < 8u; i++) {
        v[i] = x[params.x_offset + g * 8u + i];
        finite = finite && !any((bitcast<vec4<u32>>(v[i]) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
        let a = abs(v[i]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    // a group holding a NaN or an infinity: s = NaN, codes 0 (its sums are NaN)
    let s = select(bitcast<f32>(0x7fc00000u), amax / 127.0, finite);
    scales[g] = s;
    for (var i = 0u; i < 8u; i++) {
        // x / s per element, as the reference divides (not x * (1 / s))
        let q = select(vec4<f32>(0.0), v[i] / vec4<f32>(s), finite && amax > 0.0);
        codes[g * 8u + i] = pack_codes(q);
    }
}
