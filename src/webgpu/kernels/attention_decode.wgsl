// attention_decode: the first pass of split-key ("flash decoding") attention
// for a few query rows (Tq <= 4) against a long K/V cache.
//   q [B, H, Tq, D] (f32 or f16, any strides), k, v [B, Hkv, Tk, D] (f32 or
//   f16, unit d stride, rows starting on 16-byte words) ->
//   part_o f32 [B, H, Tq, chunks, D]: unnormalized sum_j p_j v_j over a chunk,
//   part_ml vec2<f32> [B, H, Tq, chunks]: (chunk max m in log2 units, sum_j p_j)
// with p_j = exp2(s_j - m). attention_decode_combine.wgsl merges the chunks.
//
// Why: the general forward kernels give one (b, h) and a block of query rows
// to a workgroup that then walks every key; with one query row per head that
// is B H workgroups (32 for Llama-3.2-1B) each walking ~500 keys alone, 38 us
// per layer on an H100. Here a workgroup owns one chunk of CH = 64 keys of one
// kv head and the rows of up to 4 query heads x queries (the grouped-query
// heads that share this kv head read its K/V once), so there are
// B Hkv ceil(Tk / 64) head-blocks workgroups, each short.
//
// Workgroup of 64 invocations (CH == WG):
//  1. q rows -> q_tile, pre-scaled by scale log2(e);
//  2. scores: invocation t takes key c0 + t, reads its K row as 16-byte words
//     (D8 of them, all independent loads) and forms up to 4 dot products;
//  3. per row max over the chunk (tree in workgroup memory), p = exp2(s - m);
//  4. p V: invocation (column octet c, key slice s) of D8 x SL adds p v over
//     keys s, s + SL, .. (CH / SL loads in flight), slices summed through
//     workgroup memory; slice lanes with c == 0 also sum p (the row sums).
// Causal: query i sees key j when j <= i + Tk - Tq (bottom-right aligned, as
// attention_common.wgsl). A row that sees no key of the chunk gets m = NO_MAX,
// sum 0, o = 0, which the combine weights by 0.
// KV_Q8: k and v are 8-bit rows (wgt_attention_q8; bytes4 of quant_codes.wgsl,
// prepended, makes codes values): one-byte codes, 16 a
// word, their strides and offsets counted in codes (4 a u32), and a group
// scale per 32 elements (ks, vs); a key's dot products take its group scales,
// a value's scale multiplies its p in the p V step (not the row sum).
// Prelude constants (webgpu_attention_decode.c): D8 (= D / 8), KV_F16, KV_Q8, Q_F16,
// W8 (16-byte words per 8 elements: 1 f16, 2 f32), PREFETCH (the K and V
// words an invocation needs fit in registers: loaded first, see raw_word),
// KWS, VWS (their register slots; 1 without PREFETCH).

struct Params {
    B: u32, H: u32, Hkv: u32, group: u32,
    Tq: u32, Tk: u32, D: u32, causal: u32,
    q_st: vec4<u32>, k_st: vec4<u32>, v_st: vec4<u32>,   // strides b, h, t, d (elements)
    q_off: u32, k_off: u32, v_off: u32, out_off: u32,    // elements
    o_off: u32, ml_off: u32, lse_off: u32, chunks: u32,  // part_o in vec4s, part_ml in vec2s, lse in elements
    scale_log2: f32, hb: u32, hblocks: u32, rows: u32,   // heads per workgroup, head blocks per kv head, hb Tq
    ks_st: vec4<u32>, vs_st: vec4<u32>,                  // KV_Q8: the scales' strides b, h, t and offset (.w)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> ks: array<f32>;   // KV_Q8: the keys' group scales (else k again, unread)
@group(0) @binding(5) var<storage, read> vs: array<f32>;   // KV_Q8: the values' (else v again)
@group(0) @binding(6) var<storage, read_write> part_o: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> part_ml: array<vec2<f32>>;

const WG: u32 = 64u;
const CH: u32 = 64u;          // keys per workgroup
const R: u32 = 4u;            // most query rows per workgroup
const D4: u32 = 2u * D8;
const SL: u32 = WG / D8;      // key slices of the p V step
const MASKED: f32 = -3.0e38;
const NO_MAX: f32 = -1.0e30;

var<workgroup> q_tile: array<vec4<f32>, R * D4>;     // [row][d4]
var<workgroup> red: array<vec4<f32>, WG>;            // [t] -> rows 0..3 (max tree)
var<workgroup> p_tile: array<vec4<f32>, CH>;         // [key] -> rows 0..3
var<workgroup> o_part: array<vec4<f32>, 2u * R * WG>; // [t][row][2]
var<workgroup> l_part: array<vec4<f32>, SL>;         // [slice] -> rows 0..3

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
// The group scale of 8-bit key (is_v false) or value row t, element d (1 unless KV_Q8).
fn q8_scale(is_v: bool, b: u32, g: u32, t: u32, d: u32) -> f32 {
    if (!KV_Q8) { return 1.0; }
    if (is_v) { return vs[params.vs_st.w + b * params.vs_st.x + g * params.vs_st.y + t * params.vs_st.z + d / 32u]; }
    return ks[params.ks_st.w + b * params.ks_st.x + g * params.ks_st.y + t * params.ks_st.z + d / 32u];
}

fn unpack8(w: array<vec4<u32>, 2>, e: u32) -> array<vec4<f32>, 2> {
    if (KV_Q8) {   // 16 codes a word: element e's 8 are its first or second half
        let h = select(w[0].xy, w[0].zw, ((e >> 3u) & 1u) == 1u);
        return array<vec4<f32>, 2>(bytes4(h.x), bytes4(h.y));
    }
    if (KV_F16) {
        let a = unpack2x16float(w[0].x); let b = unpack2x16float(w[0].y);
        let c = unpack2x16float(w[0].z); let d = unpack2x16float(w[0].w);
        return array<vec4<f32>, 2>(vec4<f32>(a, b), vec4<f32>(c, d));
    }
    return array<vec4<f32>, 2>(bitcast<vec4<f32>>(w[0]), bitcast<vec4<f32>>(w[1]));
}

const KEYS_PER_SLICE: u32 = (CH + SL - 1u) / SL;   // keys of one invocation's p V step (some past CH)
const QG: u32 = (D8 + 3u) / 4u;                     // KV_Q8: groups of 32 columns a row

// Word w8 (of W8: 1 for f16, 2 for f32) of 8 elements of k (is_v false) or
// v from element e. A branch, not select(): select evaluates both loads, and
// every call names a constant is_v, so the branch folds away.
fn raw_word(is_v: bool, e: u32, w8: u32) -> vec4<u32> {
    var i = select((e >> 2u) + w8, e >> 3u, KV_F16);
    if (KV_Q8) { i = e >> 4u; }   // 16 one-byte codes a word (e counts codes)
    if (is_v) { return v[i]; }
    return k[i];
}

// 8 elements of k (is_v false) or v from element e: prefetched words (slot
// `slot` of kw / vw) or, without PREFETCH, loaded now
fn words8(is_v: bool, e: u32, pre: array<vec4<u32>, 2>) -> array<vec4<f32>, 2> {
    if (PREFETCH) { return unpack8(pre, e); }
    return unpack8(array<vec4<u32>, 2>(raw_word(is_v, e, 0u), raw_word(is_v, e, W8 - 1u)), e);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.B * params.Hkv * params.hblocks * params.chunks) { return; }   // whole workgroups
    let chunk = id % params.chunks;
    let rest = id / params.chunks;
    let hblock = rest % params.hblocks;
    let bg = rest / params.hblocks;
    let b = bg / params.Hkv;
    let g = bg % params.Hkv;
    let c0 = chunk * CH;
    let Tq = params.Tq;

    // row r: head g group + hblock hb + r / Tq, query r % Tq; valid when its
    // head is inside the group (the last block may be short)
    var row_ok = vec4<bool>(false);
    var last = vec4<i32>(-1);          // last visible key per row
    for (var r = 0u; r < R; r++) {
        let hh = hblock * params.hb + r / Tq;
        if (r < params.rows && hh < params.group) {
            row_ok[r] = true;
            let i = r % Tq;
            last[r] = select(i32(params.Tk) - 1, i32(i + params.Tk) - i32(Tq), params.causal != 0u);
        }
    }

    // 0. every K and V word this invocation reads, in flight together with q
    //    (a key past Tk reads key Tk - 1: its score is MASKED, its p 0)
    let j = c0 + lid;
    let jc = min(j, params.Tk - 1u);
    let kb = params.k_off + b * params.k_st.x + g * params.k_st.y + jc * params.k_st.z;
    let c = lid % D8;
    let sl = lid / D8;
    let vb = params.v_off + b * params.v_st.x + g * params.v_st.y + c * 8u;
    var kw: array<vec4<u32>, KWS>;   // PREFETCH: [d8][W8]
    var vw: array<vec4<u32>, VWS>;   // PREFETCH: [key of the slice][W8]
    if (PREFETCH) {
        for (var d8 = 0u; d8 < D8; d8++) {
            for (var w8 = 0u; w8 < W8; w8++) { kw[d8 * W8 + w8] = raw_word(false, kb + d8 * 8u, w8); }
        }
        if (sl < SL) {
            for (var u = 0u; u < KEYS_PER_SLICE; u++) {
                let e = vb + min(c0 + min(sl + u * SL, CH - 1u), params.Tk - 1u) * params.v_st.z;
                for (var w8 = 0u; w8 < W8; w8++) { vw[u * W8 + w8] = raw_word(true, e, w8); }
            }
        }
    }

    // KV_Q8: the group scales of this invocation's key row and of its value
    // rows' column octet, loaded with the words (not inside the loops below,
    // where each load's latency would be paid in turn)
    var ksr: array<f32, QG>;                // [group of 32 columns] of key jc
    var vsr: array<f32, KEYS_PER_SLICE>;    // [key of the slice] for columns 8c ..
    if (KV_Q8) {
        for (var gq = 0u; gq < QG; gq++) { ksr[gq] = q8_scale(false, b, g, jc, 32u * gq); }
        if (sl < SL) {
            for (var u = 0u; u < KEYS_PER_SLICE; u++) {
                vsr[u] = q8_scale(true, b, g, min(c0 + min(sl + u * SL, CH - 1u), params.Tk - 1u), c * 8u);
            }
        }
    }

    // 1. q rows, scaled
    for (var s = lid; s < R * D4; s += WG) {
        let r = s / D4;
        let d0 = (s % D4) * 4u;
        var qv = vec4<f32>();
        if (row_ok[r]) {
            let h = g * params.group + hblock * params.hb + r / Tq;
            let at = params.q_off + b * params.q_st.x + h * params.q_st.y + (r % Tq) * params.q_st.z;
            for (var c = 0u; c < 4u; c++) { qv[c] = q_elem(at + (d0 + c) * params.q_st.w) * params.scale_log2; }
        }
        q_tile[s] = qv;
    }
    workgroupBarrier();

    // 2. scores of key c0 + lid for the 4 rows
    var sc = vec4<f32>(MASKED);
    if (j < params.Tk) {
        var acc = vec4<f32>();
        for (var d8 = 0u; d8 < D8; d8++) {
            let kk = words8(false, kb + d8 * 8u, array<vec4<u32>, 2>(kw[min(d8 * W8, KWS - 1u)], kw[min(d8 * W8 + W8 - 1u, KWS - 1u)]));
            var ksc = 1.0;
            if (KV_Q8) { ksc = ksr[d8 / 4u]; }
            for (var r = 0u; r < R; r++) {
                acc[r] += ksc * (dot(q_tile[r * D4 + 2u * d8], kk[0]) + dot(q_tile[r * D4 + 2u * d8 + 1u], kk[1]));
            }
        }
        for (var r = 0u; r < R; r++) {
            if (row_ok[r] && i32(j) <= last[r]) { sc[r] = acc[r]; }
        }
    }

    // 3. the chunk's max per row, then p
    red[lid] = sc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    let m = max(red[0], vec4<f32>(NO_MAX));   // NO_MAX when the chunk is all masked: p = 0 below
    p_tile[lid] = exp2(sc - m);
    workgroupBarrier();

    // 4. o = sum_j p_j v_j, by column octet and key slice
    var o0 = array<vec4<f32>, R>();   // columns 8c .. 8c + 3 per row
    var o1 = array<vec4<f32>, R>();   // 8c + 4 .. 8c + 7
    var lsum = vec4<f32>();
    if (sl < SL) {
        for (var u = 0u; u < KEYS_PER_SLICE; u++) {
            let jj = sl + u * SL;
            if (jj < CH && c0 + jj < params.Tk) {
                let e = vb + (c0 + jj) * params.v_st.z;
                let vv = words8(true, e, array<vec4<u32>, 2>(vw[min(u * W8, VWS - 1u)], vw[min(u * W8 + W8 - 1u, VWS - 1u)]));
                var p = p_tile[jj];
                if (KV_Q8) { p *= vsr[u]; }   // the value's scale rides on p
                lsum += p_tile[jj];
                for (var r = 0u; r < R; r++) {
                    o0[r] = fma(vec4<f32>(p[r]), vv[0], o0[r]);
                    o1[r] = fma(vec4<f32>(p[r]), vv[1], o1[r]);
                }
            }
        }
        for (var r = 0u; r < R; r++) {
            o_part[(lid * R + r) * 2u] = o0[r];
            o_part[(lid * R + r) * 2u + 1u] = o1[r];
        }
        if (c == 0u) { l_part[sl] = lsum; }
    }
    workgroupBarrier();

    // slices summed: invocation (r, c) writes row r's columns 8c .. 8c + 7
    // (R D8 is up to 128 for D = 256: two rounds)
    for (var t = lid; t < R * D8; t += WG) {
        let r = t / D8;
        let cc = t % D8;
        if (row_ok[r]) {
            var a0 = vec4<f32>();
            var a1 = vec4<f32>();
            var l = 0.0;
            for (var s = 0u; s < SL; s++) {
                a0 += o_part[((s * D8 + cc) * R + r) * 2u];
                a1 += o_part[((s * D8 + cc) * R + r) * 2u + 1u];
                l += l_part[s][r];
            }
            let h = g * params.group + hblock * params.hb + r / Tq;
            let row = (b * params.H + h) * Tq + r % Tq;
            let slot = row * params.chunks + chunk;
            part_o[params.o_off + slot * D4 + 2u * cc] = a0;
            part_o[params.o_off + slot * D4 + 2u * cc + 1u] = a1;
            if (cc == 0u) { part_ml[params.ml_off + slot] = vec2<f32>(m[r], l); }
        }
    }
}
