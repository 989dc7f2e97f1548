// attention_decode_single: decode attention in one pass for a short cache,
// one workgroup per query row (attention_decode_common.wgsl is prepended).
//   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out [B, H, Tq, D] contiguous (f32,
//   or f16 packed two per word), lse f32 [B, H, Tq] (natural log; -inf for a
//   row that sees no key); Tk <= KPT * WG
// Same results as attention_decode + attention_decode_combine up to rounding.
// Why: the split-key pair costs two dependent dispatches a layer, and each of
// its workgroups runs a chain of barriers over 64 keys; in an LLM's decode
// step every dispatch boundary drains the GPU (~3 us on an H100), and the
// cache of a short context (Llama-3.2-1B: 8 kv heads x ~600 keys x 64, f16, 1.3
// MB a layer) takes well under a microsecond to read. Here each of B H Tq
// workgroups walks all the keys of its row at once:
//  1. invocation t scores keys t, t + WG, .. (KPT of them; all their K words
//     and a first batch of V words loaded before the first barrier);
//  2. the row's max and sum over the workgroup (two-level tree in workgroup
//     memory), p = exp2(s - max) into p_tile;
//  3. p V: invocation (column octet c = t % D8, key slice s = t / D8) adds
//     p_j v_j[8c..8c+7] over keys s, s + SL, .. in batches of VB loads in
//     flight; the SL slices are summed through workgroup memory.
// Prelude constants besides the common ones: KPT (keys per invocation), VB.

@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const WG: u32 = 256u;
const D4: u32 = 2u * D8;
const SL: u32 = WG / D8;            // key slices of the p V step
const MASKED: f32 = -3.0e38;
const NO_MAX: f32 = -1.0e30;
const LN2: f32 = 0.6931471805599453;
const PARTS: u32 = 16u;             // second level of the reductions: WG / PARTS values each

// Browsers' WGSL compiler rejects a constant expression whose value is -inf.
var<private> single_bits_ff800000: u32 = 0xff800000u;

var<workgroup> q_tile: array<vec4<f32>, D4>;
var<workgroup> p_tile: array<f32, KPT * WG>;
var<workgroup> red: array<f32, WG + PARTS>;
var<workgroup> o_part: array<vec4<f32>, 2u * WG>;   // [slice][octet][2]

// The workgroup's max (is_max) or sum of v; every invocation gets it.
// Three barriers' worth of ordering: the next call writes red[0..WG) only
// after its first barrier, when every reader of red[WG..] here is done.
fn reduce(v: f32, lid: u32, is_max: bool) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    if (lid < PARTS) {
        var a = red[lid * (WG / PARTS)];
        for (var i = 1u; i < WG / PARTS; i++) {
            let x = red[lid * (WG / PARTS) + i];
            a = select(a + x, max(a, x), is_max);
        }
        red[WG + lid] = a;
    }
    workgroupBarrier();
    var r = red[WG];
    for (var i = 1u; i < PARTS; i++) { r = select(r + red[WG + i], max(r, red[WG + i]), is_max); }
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    let Tq = params.Tq;
    if (id >= params.B * params.H * Tq) { return; }   // whole workgroups
    let i = id % Tq;
    let h = (id / Tq) % params.H;
    let b = id / (Tq * params.H);
    let g = h / params.group;
    let Tk = params.Tk;
    let last = select(i32(Tk) - 1, i32(i + Tk) - i32(Tq), params.causal != 0u);   // last visible key
    let kb = params.k_off + b * params.k_st.x + g * params.k_st.y;
    let c = lid % D8;
    let sl = lid / D8;
    let vb = params.v_off + b * params.v_st.x + g * params.v_st.y + c * 8u;

    // 0. this invocation's K words and its first batch of V words, in flight together
    var kw: array<vec4<u32>, KPT * D8 * W8>;
    for (var u = 0u; u < KPT; u++) {
        let e = kb + min(lid + u * WG, Tk - 1u) * params.k_st.z;
        for (var w = 0u; w < D8 * W8; w++) { kw[u * D8 * W8 + w] = raw_word(false, e + (w / W8) * 8u, w % W8); }
    }
    var vw: array<vec4<u32>, VB * W8>;
    for (var u = 0u; u < VB; u++) {
        let e = vb + min(sl + u * SL, Tk - 1u) * params.v_st.z;
        for (var w = 0u; w < W8; w++) { vw[u * W8 + w] = raw_word(true, e, w); }
    }

    // 1. q, scaled by scale log2(e)
    if (lid < D4) {
        let at = params.q_off + b * params.q_st.x + h * params.q_st.y + i * params.q_st.z;
        var qv = vec4<f32>();
        for (var e = 0u; e < 4u; e++) { qv[e] = q_elem(at + (lid * 4u + e) * params.q_st.w) * params.scale_log2; }
        q_tile[lid] = qv;
    }
    workgroupBarrier();

    // 2. scores, the row's max, p and its sum
    var sc: array<f32, KPT>;
    var mloc = MASKED;
    for (var u = 0u; u < KPT; u++) {
        let j = lid + u * WG;
        var acc = 0.0;
        for (var d8 = 0u; d8 < D8; d8++) {
            let kk = unpack8(array<vec4<u32>, 2>(kw[(u * D8 + d8) * W8], kw[(u * D8 + d8) * W8 + W8 - 1u]));
            acc += dot(q_tile[2u * d8], kk[0]) + dot(q_tile[2u * d8 + 1u], kk[1]);
        }
        sc[u] = select(MASKED, acc, j < Tk && i32(j) <= last);
        mloc = max(mloc, sc[u]);
    }
    let m = max(reduce(mloc, lid, true), NO_MAX);   // NO_MAX when the row sees no key: every p is 0
    var lloc = 0.0;
    for (var u = 0u; u < KPT; u++) {
        let p = exp2(sc[u] - m);
        p_tile[lid + u * WG] = p;
        lloc += p;
    }
    let l = reduce(lloc, lid, false);   // its barriers also publish p_tile

    // 3. o = sum_j p_j v_j by column octet and key slice, VB loads in flight
    var o0 = vec4<f32>();
    var o1 = vec4<f32>();
    for (var j0 = sl; j0 < Tk; j0 += SL * VB) {
        if (j0 != sl) {
            for (var u = 0u; u < VB; u++) {
                let e = vb + min(j0 + u * SL, Tk - 1u) * params.v_st.z;
                for (var w = 0u; w < W8; w++) { vw[u * W8 + w] = raw_word(true, e, w); }
            }
        }
        for (var u = 0u; u < VB; u++) {
            let j = j0 + u * SL;
            if (j < Tk) {
                let vv = unpack8(array<vec4<u32>, 2>(vw[u * W8], vw[u * W8 + W8 - 1u]));
                let p = p_tile[j];
                o0 = fma(vec4<f32>(p), vv[0], o0);
                o1 = fma(vec4<f32>(p), vv[1], o1);
            }
        }
    }
    o_part[lid * 2u] = o0;
    o_part[lid * 2u + 1u] = o1;
    workgroupBarrier();

    // the slices summed: invocation t < D4 owns columns 4t .. 4t + 3
    if (lid < D4) {
        var a = vec4<f32>();
        for (var s = 0u; s < SL; s++) { a += o_part[(s * D8 + lid / 2u) * 2u + lid % 2u]; }
        a *= select(0.0, 1.0 / l, l > 0.0);
        let e = params.out_off + ((b * params.H + h) * Tq + i) * params.D + 4u * lid;
        if (OUT_F16) {
            out[e >> 1u] = pack2x16float(a.xy);
            out[(e >> 1u) + 1u] = pack2x16float(a.zw);
        } else {
            out[e] = bitcast<u32>(a.x);
            out[e + 1u] = bitcast<u32>(a.y);
            out[e + 2u] = bitcast<u32>(a.z);
            out[e + 3u] = bitcast<u32>(a.w);
        }
    }
    if (lid == 0u) {
        lse[params.lse_off + (b * params.H + h) * Tq + i] =
            select(bitcast<f32>(single_bits_ff800000), (m + log2(l)) * LN2, l > 0.0);
    }
}
