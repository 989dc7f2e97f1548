// attention_backward_kv: dk and dv, one workgroup per BK keys of one (b, kv
// head), one key per invocation, iterating over the query rows of every query
// head of the group in tiles of BQ rows (q, dout, lse, delta in shared memory).
// No atomics: each invocation owns its key's dk and dv rows.
//   q, dout [B, H, Tq, D], k, v [B, Hkv, Tk, D], lse, delta f32 [B, H, Tq]
//   -> dk, dv f32 [B, Hkv, Tk, D] contiguous
// Per query row i that sees key j: p = exp2(s2 - lse_i * log2 e), z the dropout
// factor: dv_j += p z dout_i, dk_j += p (z (dout_i . v_j) - delta_i) q_i
// (dk_j scaled by 1 / sqrt(D) at the end). Causal: the rows before the first
// one that sees the block's first key are skipped.
// WANT_DK, WANT_DV (prelude): which of the two this pipeline computes. Each
// invocation holds its key's k, v and accumulator rows in registers; for large
// D the four rows together would spill (4 * D floats), so webgpu_attention.c
// then runs the kernel twice, dv only (k and dv rows) and dk only (k, v, dk),
// recomputing the scores once more instead.

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> attn_bkv_bits_7f800000: u32 = 0x7f800000u;

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

var<workgroup> q_tile: array<vec4<f32>, BQ * D4>;    // [row][d / 4], q pre-scaled
var<workgroup> do_tile: array<vec4<f32>, BQ * D4>;
var<workgroup> lse_tile: array<f32, BQ>;             // lse * log2 e (+inf: row absent)
var<workgroup> delta_tile: array<f32, BQ>;

@compute @workgroup_size(BK)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.Hkv) { return; }
    let bg = id / params.blocks;
    let j0 = (id % params.blocks) * BK;
    let b = bg / params.Hkv;
    let g = bg % params.Hkv;
    let j = j0 + lid;
    let key_ok = j < params.Tk;

    var kr: array<vec4<f32>, D4>;
    var vr: array<vec4<f32>, D4>;
    var dka: array<vec4<f32>, D4>;
    var dva: array<vec4<f32>, D4>;
    if (key_ok) {
        for (var d4 = 0u; d4 < D4; d4++) {
            for (var c = 0u; c < 4u; c++) {
                let d = d4 * 4u + c;
                if (d < params.D) {
                    kr[d4][c] = k[elem(params.offsets[0].y, params.k_st, b, g, j, d)];
                    if (WANT_DK) { vr[d4][c] = v[elem(params.offsets[0].z, params.v_st, b, g, j, d)]; }
                }
            }
        }
    }
    // first query row that sees key j0 (causal), as a whole tile start
    var i_start = 0u;
    if (params.causal != 0u) {
        i_start = u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ;
    }
    // query i sees key j when i >= j - (Tk - Tq)
    let first_row = i32(j) - (i32(params.Tk) - i32(params.Tq));

    for (var h = g * params.group; h < (g + 1u) * params.group; h++) {
        for (var i0 = i_start; i0 < params.Tq; i0 += BQ) {
            for (var s = lid; s < BQ * D4; s += BK) {
                let i = i0 + s / D4;
                let d0 = (s % D4) * 4u;
                var qv = vec4<f32>();
                var dv4 = vec4<f32>();
                if (i < params.Tq) {
                    for (var c = 0u; c < 4u; c++) {
                        if (d0 + c < params.D) {
                            qv[c] = q[elem(params.offsets[0].x, params.q_st, b, h, i, d0 + c)] * params.scale_log2;
                            dv4[c] = dout[elem(params.offsets[1].x, params.do_st, b, h, i, d0 + c)];
                        }
                    }
                }
                q_tile[s] = qv;
                do_tile[s] = dv4;
            }
            for (var r = lid; r < BQ; r += BK) {
                let i = i0 + r;
                let row = (b * params.H + h) * params.Tq + i;
                let ok = i < params.Tq;
                lse_tile[r] = select(bitcast<f32>(attn_bkv_bits_7f800000), lse[select(0u, params.offsets[2].x + row, ok)] * LOG2E, ok);
                delta_tile[r] = select(0.0, delta[select(0u, params.offsets[2].y + row, ok)], ok);
            }
            workgroupBarrier();
            if (key_ok) {
                let n = min(BQ, params.Tq - i0);
                let row0 = (b * params.H + h) * params.Tq + i0;
                for (var r = 0u; r < n; r++) {
                    if (params.causal != 0u && i32(i0 + r) < first_row) { continue; }
                    var s4 = vec4<f32>();
                    var dp4 = vec4<f32>();
                    for (var d4 = 0u; d4 < D4; d4++) {
                        s4 = fma(q_tile[r * D4 + d4], kr[d4], s4);
                        if (WANT_DK) { dp4 = fma(do_tile[r * D4 + d4], vr[d4], dp4); }
                    }
                    let s2 = (s4.x + s4.y) + (s4.z + s4.w);
                    let dpv = (dp4.x + dp4.y) + (dp4.z + dp4.w);
                    let p = exp2(s2 - lse_tile[r]);
                    let z = dropout_factor(row0 + r, j);
                    if (WANT_DV) {
                        let pz = p * z;
                        for (var d4 = 0u; d4 < D4; d4++) { dva[d4] += pz * do_tile[r * D4 + d4]; }
                    }
                    if (WANT_DK) {
                        let ds = p * (z * dpv - delta_tile[r]);
                        for (var d4 = 0u; d4 < D4; d4++) { dka[d4] += ds * q_tile[r * D4 + d4]; }
                    }
                }
            }
            workgroupBarrier();
        }
    }

    if (!key_ok) { return; }
    // q_tile held q * scale * log2 e: dk = sum ds * q * scale
    let unscale = 1.0 / LOG2E;
    let base = (bg * params.Tk + j) * params.D;
    for (var d4 = 0u; d4 < D4; d4++) {
        for (var c = 0u; c < 4u; c++) {
            let d = d4 * 4u + c;
            if (d < params.D) {
                if (WANT_DK) { dk[params.offsets[1].z + base + d] = dka[d4][c] * unscale; }
                if (WANT_DV) { dv[params.offsets[1].w + base + d] = dva[d4][c]; }
            }
        }
    }
}
