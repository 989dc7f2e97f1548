// attention_backward_kv_tiled: dk and dv with register blocks, one workgroup
// per BK keys of one (b, kv head), iterating over the query rows of every query
// head of the group in tiles of BQ rows. Same inputs and outputs as
// attention_backward_kv (see there); webgpu_attention.c picks this kernel on
// a software adapter or with WGT_ATTENTION_BACKWARD=tiled or =kv_tiled, when
// its tiles fit the workgroup memory (on an H100 it took 4.5 ms where
// attention_backward_kv's two passes take 2.07 ms: B 8, H 12, T 1024, D 64).
//
// Invocation (tk, tc) of (BK / 4) x 8 owns keys 4 tk .. 4 tk + 3. Per query
// tile it computes, for its keys x the rows tc, tc + 8, .. (NQ of them), the
// scores s = k . q and dp = v . dout (16 shared loads per 32 four-wide
// products), turns them into p z and ds = p (z dp - delta) in shared memory
// ([row][key]), then accumulates its keys' rows of dv += (p z)^T dout and
// dk += ds^T q over the tile's rows for its column quads (tc, tc + 8, ..).
// No atomics: each workgroup owns its keys' rows of dk and dv.

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

const WG: u32 = (BK / 4u) * 8u;
const NQ: u32 = BQ / 8u;          // query rows per invocation in the score blocks
const DC: u32 = (D4 + 7u) / 8u;   // output column quads per invocation
const QS: u32 = D4 + 1u;          // padded row stride (vec4) of the row tiles
const PS4: u32 = BK / 4u + 1u;    // padded row stride (vec4) of the p and ds tiles

var<workgroup> k_tile: array<vec4<f32>, BK * QS>;
var<workgroup> v_tile: array<vec4<f32>, BK * QS>;
var<workgroup> q_tile: array<vec4<f32>, BQ * QS>;    // q * scale * log2 e
var<workgroup> do_tile: array<vec4<f32>, BQ * QS>;
var<workgroup> p_tile: array<vec4<f32>, BQ * PS4>;   // [row][key / 4][key % 4]: p z
var<workgroup> ds_tile: array<vec4<f32>, BQ * PS4>;  // ds
var<workgroup> lse_tile: array<f32, BQ>;             // lse * log2 e
var<workgroup> delta_tile: array<f32, BQ>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.Hkv) { return; }
    let bg = id / params.blocks;
    let j0 = (id % params.blocks) * BK;
    let b = bg / params.Hkv;
    let g = bg % params.Hkv;
    let tk = lid / 8u;
    let tc = lid % 8u;

    for (var s = lid; s < BK * D4; s += WG) {
        let j = j0 + s / D4;
        let d0 = (s % D4) * 4u;
        let kv = kv_quads(b, g, j, d0);
        k_tile[(s / D4) * QS + s % D4] = kv.k;
        v_tile[(s / D4) * QS + s % D4] = kv.v;
    }

    var dka: array<vec4<f32>, 4u * DC>;   // [key a][column quad c]
    var dva: array<vec4<f32>, 4u * DC>;
    for (var x = 0u; x < 4u * DC; x++) {
        dka[x] = vec4<f32>();
        dva[x] = vec4<f32>();
    }
    // query i sees key j when i >= j - (Tk - Tq): causal rows before the block's first key's are skipped
    var i_start = 0u;
    if (params.causal != 0u) { i_start = u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ; }

    for (var h = g * params.group; h < (g + 1u) * params.group; h++) {
        let row_base = (b * params.H + h) * params.Tq;
        for (var i0 = i_start; i0 < params.Tq; i0 += BQ) {
            workgroupBarrier();   // the previous tile's readers are done
            for (var s = lid; s < BQ * D4; s += WG) {
                let i = i0 + s / D4;
                let d0 = (s % D4) * 4u;
                var qv = vec4<f32>();
                var ov = vec4<f32>();
                if (i < params.Tq) {
                    for (var c = 0u; c < 4u; c++) {
                        if (d0 + c < params.D) {
                            qv[c] = q[elem(params.offsets[0].x, params.q_st, b, h, i, d0 + c)] * params.scale_log2;
                            ov[c] = dout[elem(params.offsets[1].x, params.do_st, b, h, i, d0 + c)];
                        }
                    }
                }
                q_tile[(s / D4) * QS + s % D4] = qv;
                do_tile[(s / D4) * QS + s % D4] = ov;
            }
            for (var r = lid; r < BQ; r += WG) {
                let ok = i0 + r < params.Tq;
                lse_tile[r] = select(0.0, lse[select(0u, params.offsets[2].x + row_base + i0 + r, ok)] * LOG2E, ok);
                delta_tile[r] = select(0.0, delta[select(0u, params.offsets[2].y + row_base + i0 + r, ok)], ok);
            }
            workgroupBarrier();

            // scores and dp of keys 4 tk + a x rows tc + 8 n
            var sc: array<f32, 4u * NQ>;
            var dp: array<f32, 4u * NQ>;
            for (var x = 0u; x < 4u * NQ; x++) {
                sc[x] = 0.0;
                dp[x] = 0.0;
            }
            for (var d4 = 0u; d4 < D4; d4++) {
                var kr: array<vec4<f32>, 4>;
                var vr: array<vec4<f32>, 4>;
                for (var a = 0u; a < 4u; a++) {
                    kr[a] = k_tile[(tk * 4u + a) * QS + d4];
                    vr[a] = v_tile[(tk * 4u + a) * QS + d4];
                }
                for (var n = 0u; n < NQ; n++) {
                    let qv = q_tile[(tc + 8u * n) * QS + d4];
                    let ov = do_tile[(tc + 8u * n) * QS + d4];
                    for (var a = 0u; a < 4u; a++) {
                        sc[a * NQ + n] += dot(kr[a], qv);
                        dp[a * NQ + n] += dot(vr[a], ov);
                    }
                }
            }
            for (var n = 0u; n < NQ; n++) {
                // this invocation's 4 keys are neighbours: one Philox call per row
                let z4 = dropout_factors4(row_base + i0 + tc + 8u * n, j0 + tk * 4u);
                for (var a = 0u; a < 4u; a++) {
                    let key = tk * 4u + a;
                    let j = j0 + key;
                    let r = tc + 8u * n;
                    let i = i0 + r;
                    var pz = 0.0;
                    var ds = 0.0;
                    if (j < params.Tk && i < params.Tq && i32(j) <= last_key(i)) {
                        let p = exp2(sc[a * NQ + n] - lse_tile[r]);
                        let z = z4[a];
                        pz = p * z;
                        ds = p * (z * dp[a * NQ + n] - delta_tile[r]);
                    }
                    p_tile[r * PS4 + tk][a] = pz;
                    ds_tile[r * PS4 + tk][a] = ds;
                }
            }
            workgroupBarrier();

            // dv += (p z)^T dout, dk += ds^T q over the tile's rows
            let n_rows = min(BQ, params.Tq - i0);
            for (var r = 0u; r < n_rows; r++) {
                let pv = p_tile[r * PS4 + tk];
                let dsv = ds_tile[r * PS4 + tk];
                for (var c = 0u; c < DC; c++) {
                    let col = tc + 8u * c;
                    if (col < D4) {
                        let ov = do_tile[r * QS + col];
                        let qv = q_tile[r * QS + col];
                        for (var a = 0u; a < 4u; a++) {
                            dva[a * DC + c] = fma(vec4<f32>(pv[a]), ov, dva[a * DC + c]);
                            dka[a * DC + c] = fma(vec4<f32>(dsv[a]), qv, dka[a * DC + c]);
                        }
                    }
                }
            }
        }
    }

    // q_tile held q * scale * log2 e: dk = sum ds q scale
    let unscale = 1.0 / LOG2E;
    for (var a = 0u; a < 4u; a++) {
        let j = j0 + tk * 4u + a;
        if (j >= params.Tk) { continue; }
        let base = (bg * params.Tk + j) * params.D;
        for (var c = 0u; c < DC; c++) {
            let col = tc + 8u * c;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) {
                    dk[params.offsets[1].z + base + d] = dka[a * DC + c][e] * unscale;
                    dv[params.offsets[1].w + base + d] = dva[a * DC + c][e];
                }
            }
        }
    }
}
