// attention_forward: flash attention, one workgroup per BQ query rows of one
// (b, h), one query row per invocation.
//   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out f32 [B, H, Tq, D] contiguous,
//   lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)
// The workgroup walks the keys in tiles of BK: K and V tiles go to shared
// memory (every invocation reads the same key at the same time: broadcast
// reads), each invocation keeps its query row (pre-scaled), its output row and
// the online-softmax state (running max m, sum l) in registers. Keys are taken
// four at a time: four dot products, one max update (rescaling the output row
// only when the max grows), four weighted rows of V. Causal tiles past the
// block's last visible key are never loaded. No [Tq, Tk] matrix exists.

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> attn_fwd_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(1) var<storage, read> q: array<QKV_WORD>;   // ld_q
@group(0) @binding(2) var<storage, read> k: array<QKV_WORD>;   // ld_k
@group(0) @binding(3) var<storage, read> v: array<QKV_WORD>;   // ld_v
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

var<workgroup> k_tile: array<vec4<f32>, BK * D4>;   // [key][d / 4]
var<workgroup> v_tile: array<vec4<f32>, BK * D4>;

@compute @workgroup_size(BQ)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.H) { return; }   // whole workgroups only
    let bh = id / params.blocks;
    let i0 = (id % params.blocks) * BQ;
    let b = bh / params.H;
    let h = bh % params.H;
    let g = h / params.group;
    let i = i0 + lid;
    let row_ok = i < params.Tq;

    var qr: array<vec4<f32>, D4>;
    var o: array<vec4<f32>, D4>;
    if (row_ok) {
        for (var d4 = 0u; d4 < D4; d4++) {
            for (var c = 0u; c < 4u; c++) {
                let d = d4 * 4u + c;
                if (d < params.D) { qr[d4][c] = ld_q(elem(params.offsets[0].x, params.q_st, b, h, i, d)) * params.scale_log2; }
            }
        }
    }
    var m = NO_MAX;
    var l = 0.0;
    let limit = last_key(i);
    // keys any row of the block sees
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }
    let row = bh * params.Tq + i;

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        for (var s = lid; s < BK * D4; s += BQ) {
            let j = j0 + s / D4;
            let d0 = (s % D4) * 4u;
            let kv = kv_quads(b, g, j, d0);
            k_tile[s] = kv.k;
            v_tile[s] = kv.v;
        }
        workgroupBarrier();
        if (row_ok) {
            let n = min(BK, u32(kv_end) - j0);
            for (var jj = 0u; jj < n; jj += 4u) {
                var sc = vec4<f32>(MASKED);
                for (var c = 0u; c < 4u; c++) {
                    let j = jj + c;
                    if (j < n && i32(j0 + j) <= limit) {
                        // four independent partial sums (one per lane) rather than one dependent chain
                        var acc = vec4<f32>();
                        for (var d4 = 0u; d4 < D4; d4++) { acc = fma(qr[d4], k_tile[j * D4 + d4], acc); }
                        sc[c] = (acc.x + acc.y) + (acc.z + acc.w);
                    }
                }
                let cm = max(max(sc.x, sc.y), max(sc.z, sc.w));
                if (cm > m) {
                    let alpha = exp2(m - cm);
                    l *= alpha;
                    for (var d4 = 0u; d4 < D4; d4++) { o[d4] *= alpha; }
                    m = cm;
                }
                let p = exp2(sc - vec4<f32>(m));
                l += p.x + p.y + p.z + p.w;
                let pz = p * dropout_factors4(row, j0 + jj);   // j0 + jj: a multiple of 4
                for (var c = 0u; c < 4u; c++) {
                    let j = jj + c;
                    let w = pz[c];
                    if (w != 0.0) {
                        for (var d4 = 0u; d4 < D4; d4++) { o[d4] += w * v_tile[j * D4 + d4]; }
                    }
                }
            }
        }
        workgroupBarrier();
    }

    if (!row_ok) { return; }
    let inv = select(0.0, 1.0 / l, l > 0.0);
    let base = elem(params.offsets[1].y, params.o_st, b, h, i, 0u);   // out may be strided (o_st)
    for (var d4 = 0u; d4 < D4; d4++) {
        for (var c = 0u; c < 4u; c++) {
            let d = d4 * 4u + c;
            if (d < params.D) { out[base + d * params.o_st.w] = o[d4][c] * inv; }
        }
    }
    lse[params.offsets[1].z + row] = select(bitcast<f32>(attn_fwd_bits_ff800000), (m + log2(l)) * LN2, l > 0.0);
}
