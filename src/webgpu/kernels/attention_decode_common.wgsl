// attention_decode_common: what the decode attention kernels share
// (attention_decode.wgsl, the split-key first pass, and
// attention_decode_single.wgsl, one pass for short caches): their Params, the
// q, k and v bindings, and the loads. Prelude constants
// (webgpu_attention_decode.c): D8 (= D / 8), KV_F16, Q_F16, W8 (16-byte words
// per 8 elements: 1 f16, 2 f32).

struct Params {
    B: u32, H: u32, Hkv: u32, group: u32,
    Tq: u32, Tk: u32, D: u32, causal: u32,
    q_st: vec4<u32>, k_st: vec4<u32>, v_st: vec4<u32>,   // strides b, h, t, d (elements)
    q_off: u32, k_off: u32, v_off: u32, out_off: u32,    // elements
    o_off: u32, ml_off: u32, lse_off: u32, chunks: u32,  // part_o in vec4s, part_ml in vec2s, lse in elements
    scale_log2: f32, hb: u32, hblocks: u32, rows: u32,   // heads per workgroup, head blocks per kv head, hb Tq
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<u32>>;

fn q_elem(e: u32) -> f32 {
    if (Q_F16) { return unpack2x16float(q[e >> 1u])[e & 1u]; }
    return bitcast<f32>(q[e]);
}

// The raw 16-byte words of 8 elements from element e (as load8_k / load8_v
// read them; f32: two words), unpacked later by unpack8: loading every word
// a thread needs before the first barrier puts the q, K and V reads of a
// chunk in flight together, one memory latency instead of three in a row
// (the cache is cold in decode: each layer's K/V were evicted by the
// weights streamed since the last token).
fn unpack8(w: array<vec4<u32>, 2>) -> array<vec4<f32>, 2> {
    if (KV_F16) {
        let a = unpack2x16float(w[0].x); let b = unpack2x16float(w[0].y);
        let c = unpack2x16float(w[0].z); let d = unpack2x16float(w[0].w);
        return array<vec4<f32>, 2>(vec4<f32>(a, b), vec4<f32>(c, d));
    }
    return array<vec4<f32>, 2>(bitcast<vec4<f32>>(w[0]), bitcast<vec4<f32>>(w[1]));
}

// Word w8 (of W8: 1 for f16, 2 for f32) of 8 elements of k (is_v false) or
// v from element e. A branch, not select(): select evaluates both loads, and
// every call names a constant is_v, so the branch folds away.
fn raw_word(is_v: bool, e: u32, w8: u32) -> vec4<u32> {
    let i = select((e >> 2u) + w8, e >> 3u, KV_F16);
    if (is_v) { return v[i]; }
    return k[i];
}

