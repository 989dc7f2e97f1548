// quant_rows: rows of D floats and their 8-bit form (QROWS, backend.h; an
// LLM's 8-bit KV cache), one invocation per group of 32 values.
//   quantize (DEQUANTIZE false): x [.., D] f32 or f16 -> codes u32 [.., D/4]
//   (four int8 codes a word, byte 0 = the lowest index), scales f32 [.., D/32]
//   dequantize: codes, scales -> x = code * s (rounded to f16 when X_F16)
// Views of up to 4 dims (3 leading dims here, padded with 1s), any strides on
// the leading dims, unit stride on the last (webgpu_quant_rows.c checks).
// Per group the rule of quant_q8_group.wgsl; codes become values through
// quant_codes.wgsl's bytes4 (both prepended; cpu_quant_rows.c is the reference).
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
    for (var w = 0u; w < 8u; w++) {
        let e = x0 + 4u * w;
        v[w] = vec4<f32>(load_x(e), load_x(e + 1u), load_x(e + 2u), load_x(e + 3u));
    }
    let s = q8_group_scale(v);   // quant_q8_group.wgsl
    scales[s0] = s;
    for (var w = 0u; w < 8u; w++) { codes[c0 + w] = q8_group_word(v[w], s); }
}
