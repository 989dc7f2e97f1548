// quant_rows: rows of D floats and their 8-bit form (QROWS, backend.h; an
// LLM's 8-bit KV cache), one invocation per group of 32 values.
//   quantize (DEQUANTIZE false): x [.., D] f32 or f16 -> codes u32 [.., D/4]
//   (four int8 codes a word, byte 0 = the lowest index), scales f32 [.., D/32]
//   dequantize: codes, scales -> x = code * s (rounded to f16 when X_F16)
// Views of up to 4 dims (3 leading dims here, padded with 1s), any strides on
// the leading dims, unit stride on the last (webgpu_quant_rows.c checks).
// Per group: s = max|x| / 127, code = round-to-even(x / s) clamped to
// [-127, 127]; zeros give s = 0 and codes 0, a NaN or an infinity s = NaN and
// codes 0 (quant_rows_int8.wgsl's rule; cpu_quant_rows.c is the reference).
// f16 x is read and written as u32 pairs: a group starts on an even element
// (the host checks the offsets and strides).
// Prelude constants: X_F16, DEQUANTIZE.

struct Params {
    lead: vec4<u32>,      // leading dims (3 used), groups per row in .w
    x_st: vec4<u32>,      // strides of the leading dims (elements), offset in .w
    c_st: vec4<u32>,      // codes (u32 words)
    s_st: vec4<u32>,      // scales
    groups: u32, _p0: u32, _p1: u32, _p2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// read_write in both directions (one layout for both; three storages, checked)
@group(0) @binding(1) var<storage, read_write> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;
@group(0) @binding(3) var<storage, read_write> scales: array<f32>;

// Element index of value e of row (i0, i1, i2) in the view with strides st
// (offset in st.w).
fn at(st: vec4<u32>, i: vec3<u32>) -> u32 {
    return st.w + i.x * st.x + i.y * st.y + i.z * st.z;
}

fn load_x(e: u32) -> f32 {
    if (X_F16) { return unpack2x16float(x[e >> 1u])[e & 1u]; }
    return bitcast<f32>(x[e]);
}

// Four values already divided by s, rounded to even and packed as int8 bytes.
fn pack_codes(q: vec4<f32>) -> u32 {
    let c = vec4<i32>(clamp(round(q), vec4<f32>(-127.0), vec4<f32>(127.0)));
    let b = vec4<u32>(bitcast<vec4<u32>>(c) & vec4<u32>(0xffu));
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

fn bytes4(w: u32) -> vec4<f32> {       // four int8 codes, byte 0 first
    let v = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w));
    return vec4<f32>(v >> vec4<u32>(24u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 64u;
    if (g >= params.groups) { return; }
    let per_row = params.lead.w;
    let r = g / per_row;
    let gr = g % per_row;
    let row = vec3<u32>(r / (params.lead.y * params.lead.z), (r / params.lead.z) % params.lead.y, r % params.lead.z);
    let x0 = at(params.x_st, row) + gr * 32u;
    let c0 = at(params.c_st, row) + gr * 8u;
    let s0 = at(params.s_st, row) + gr;
    if (DEQUANTIZE) {
        let s = scales[s0];
        for (var w = 0u; w < 8u; w++) {
            let v = bytes4(codes[c0 + w]) * s;
            if (X_F16) {
                x[(x0 >> 1u) + 2u * w] = pack2x16float(v.xy);
                x[(x0 >> 1u) + 2u * w + 1u] = pack2x16float(v.zw);
            } else {
                for (var c = 0u; c < 4u; c++) { x[x0 + 4u * w + c] = bitcast<u32>(v[c]); }
            }
        }
        return;
    }
    var v: array<vec4<f32>, 8>;
    var amax = 0.0;
    var finite = true;   // by the exponent bits: a compiler may assume floats are finite
    for (var w = 0u; w < 8u; w++) {
        let e = x0 + 4u * w;
        v[w] = vec4<f32>(load_x(e), load_x(e + 1u), load_x(e + 2u), load_x(e + 3u));
        finite = finite && !any((bitcast<vec4<u32>>(v[w]) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
        let a = abs(v[w]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let s = select(bitcast<f32>(0x7fc00000u), amax / 127.0, finite);
    scales[s0] = s;
    for (var w = 0u; w < 8u; w++) {
        // x / s per element, as the reference divides (not x * (1 / s))
        let q = select(vec4<f32>(0.0), v[w] / vec4<f32>(s), finite && amax > 0.0);
        codes[c0 + w] = pack_codes(q);
    }
}
