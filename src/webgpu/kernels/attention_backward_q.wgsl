// attention_backward_q: dq, one workgroup per BQ query rows of one (b, h), one
// row per invocation, iterating over tiles of BK keys in shared memory (as
// attention_forward does).
//   q, dout [B, H, Tq, D], k, v [B, Hkv, Tk, D], lse, delta f32 [B, H, Tq]
//   -> dq f32 [B, H, Tq, D] contiguous
// Per visible key j: p = exp2(s2 - lse * log2 e), dp = z * (dout_i . v_j),
// dq_i += p * (dp - delta_i) * k_j; dq_i is scaled by 1 / sqrt(D) at the end.

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<u32>;   // f32 delta [rows], then (MASK_BITS) mask words
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

var<workgroup> k_tile: array<vec4<f32>, BK * D4>;
var<workgroup> v_tile: array<vec4<f32>, BK * D4>;

@compute @workgroup_size(BQ)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.H) { return; }
    let bh = id / params.blocks;
    let i0 = (id % params.blocks) * BQ;
    let b = bh / params.H;
    let h = bh % params.H;
    let g = h / params.group;
    let i = i0 + lid;
    let row_ok = i < params.Tq;
    let row = bh * params.Tq + i;

    var qr: array<vec4<f32>, D4>;
    var dor: array<vec4<f32>, D4>;
    var acc: array<vec4<f32>, D4>;
    var lse2 = 0.0;
    var di = 0.0;
    if (row_ok) {
        for (var d4 = 0u; d4 < D4; d4++) {
            for (var c = 0u; c < 4u; c++) {
                let d = d4 * 4u + c;
                if (d < params.D) {
                    qr[d4][c] = q[elem(params.offsets[0].x, params.q_st, b, h, i, d)] * params.scale_log2;
                    dor[d4][c] = dout[elem(params.offsets[1].x, params.do_st, b, h, i, d)];
                }
            }
        }
        lse2 = lse[params.offsets[2].x + row] * LOG2E;
        di = bitcast<f32>(delta[params.offsets[2].y + row]);
    }
    let limit = last_key(i);
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }

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
            var z4 = vec4<f32>(1.0);
            var bits = 0u;
            for (var j = 0u; j < n; j++) {
                if (i32(j0 + j) > limit) { break; }
                let jj = j0 + j;
                if (MASK_BITS) {
                    // the mask attention_backward_dkdv stored: bit jj % 32 of word jj / 32
                    if (j == 0u || (jj & 31u) == 0u) { bits = delta[params.offsets[2].z + row * params.offsets[2].w + jj / 32u]; }
                    z4[jj & 3u] = select(0.0, params.keep_scale, ((bits >> (jj & 31u)) & 1u) != 0u);
                } else if ((j & 3u) == 0u) {
                    // one Philox call per 4 keys (j0 is a multiple of 4), not one per key
                    z4 = dropout_factors4(row, jj);
                }
                var s4 = vec4<f32>();
                var dp4 = vec4<f32>();
                for (var d4 = 0u; d4 < D4; d4++) {
                    s4 = fma(qr[d4], k_tile[j * D4 + d4], s4);
                    dp4 = fma(dor[d4], v_tile[j * D4 + d4], dp4);
                }
                let s2 = (s4.x + s4.y) + (s4.z + s4.w);
                let dpv = (dp4.x + dp4.y) + (dp4.z + dp4.w);
                let p = exp2(s2 - lse2);
                let ds = p * (z4[j & 3u] * dpv - di);
                for (var d4 = 0u; d4 < D4; d4++) { acc[d4] += ds * k_tile[j * D4 + d4]; }
            }
        }
        workgroupBarrier();
    }

    if (!row_ok) { return; }
    let scale = params.scale_log2 / LOG2E;
    let base = params.offsets[1].y + row * params.D;
    for (var d4 = 0u; d4 < D4; d4++) {
        for (var c = 0u; c < 4u; c++) {
            let d = d4 * 4u + c;
            if (d < params.D) { dq[base + d] = acc[d4][c] * scale; }
        }
    }
}
