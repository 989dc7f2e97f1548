// attention_backward_q_tiled: dq with register blocks, one workgroup per BQ
// query rows of one (b, h), iterating over tiles of BK keys. Same inputs and
// outputs as attention_backward_q (see there); picked like
// attention_backward_kv_tiled.
//
// Invocation (tr, tc) of (BQ / 4) x 8 owns rows 4 tr .. 4 tr + 3. Per key tile
// it computes, for its rows x the keys tc, tc + 8, .. (NK of them), s = q . k
// and dp = dout . v, puts ds = p (z dp - delta) in shared memory ([key][row]),
// then accumulates its rows of dq += ds k for its column quads (tc, tc + 8, ..).

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

const WG: u32 = (BQ / 4u) * 8u;
const NK: u32 = BK / 8u;          // keys per invocation in the score blocks
const DC: u32 = (D4 + 7u) / 8u;   // output column quads per invocation
const QS: u32 = D4 + 1u;          // padded row stride (vec4) of the row tiles
const PS4: u32 = BQ / 4u + 1u;    // padded row stride (vec4) of the ds tile

var<workgroup> q_tile: array<vec4<f32>, BQ * QS>;    // q * scale * log2 e
var<workgroup> do_tile: array<vec4<f32>, BQ * QS>;
var<workgroup> k_tile: array<vec4<f32>, BK * QS>;
var<workgroup> v_tile: array<vec4<f32>, BK * QS>;
var<workgroup> ds_tile: array<vec4<f32>, BK * PS4>;  // [key][row / 4][row % 4]
var<workgroup> lse_row: array<f32, BQ>;              // lse * log2 e
var<workgroup> delta_row: array<f32, BQ>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.H) { return; }
    let bh = id / params.blocks;
    let i0 = (id % params.blocks) * BQ;
    let b = bh / params.H;
    let h = bh % params.H;
    let g = h / params.group;
    let tr = lid / 8u;
    let tc = lid % 8u;
    let row_base = bh * params.Tq;

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
        lse_row[r] = select(0.0, lse[select(0u, params.offsets[2].x + row_base + i0 + r, ok)] * LOG2E, ok);
        delta_row[r] = select(0.0, delta[select(0u, params.offsets[2].y + row_base + i0 + r, ok)], ok);
    }

    var acc: array<vec4<f32>, 4u * DC>;   // [row a][column quad c]
    for (var x = 0u; x < 4u * DC; x++) { acc[x] = vec4<f32>(); }
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        workgroupBarrier();   // the previous tile's readers are done (and q, dout are stored)
        for (var s = lid; s < BK * D4; s += WG) {
            let j = j0 + s / D4;
            let d0 = (s % D4) * 4u;
            let kv = kv_quads(b, g, j, d0);
            k_tile[(s / D4) * QS + s % D4] = kv.k;
            v_tile[(s / D4) * QS + s % D4] = kv.v;
        }
        workgroupBarrier();

        var sc: array<f32, 4u * NK>;
        var dp: array<f32, 4u * NK>;
        for (var x = 0u; x < 4u * NK; x++) {
            sc[x] = 0.0;
            dp[x] = 0.0;
        }
        for (var d4 = 0u; d4 < D4; d4++) {
            var qr: array<vec4<f32>, 4>;
            var orow: array<vec4<f32>, 4>;
            for (var a = 0u; a < 4u; a++) {
                qr[a] = q_tile[(tr * 4u + a) * QS + d4];
                orow[a] = do_tile[(tr * 4u + a) * QS + d4];
            }
            for (var n = 0u; n < NK; n++) {
                let kv = k_tile[(tc + 8u * n) * QS + d4];
                let vv = v_tile[(tc + 8u * n) * QS + d4];
                for (var a = 0u; a < 4u; a++) {
                    sc[a * NK + n] += dot(qr[a], kv);
                    dp[a * NK + n] += dot(orow[a], vv);
                }
            }
        }
        for (var a = 0u; a < 4u; a++) {
            let r = tr * 4u + a;
            let i = i0 + r;
            for (var n = 0u; n < NK; n++) {
                let key = tc + 8u * n;
                let j = j0 + key;
                var ds = 0.0;
                if (j < params.Tk && i < params.Tq && i32(j) <= last_key(i)) {
                    let p = exp2(sc[a * NK + n] - lse_row[r]);
                    ds = p * (dropout_factor(row_base + i, j) * dp[a * NK + n] - delta_row[r]);
                }
                ds_tile[key * PS4 + tr][a] = ds;
            }
        }
        workgroupBarrier();

        let n_keys = min(BK, params.Tk - j0);
        for (var j = 0u; j < n_keys; j++) {
            let dsv = ds_tile[j * PS4 + tr];
            for (var c = 0u; c < DC; c++) {
                let col = tc + 8u * c;
                if (col < D4) {
                    let kv = k_tile[j * QS + col];
                    for (var a = 0u; a < 4u; a++) { acc[a * DC + c] = fma(vec4<f32>(dsv[a]), kv, acc[a * DC + c]); }
                }
            }
        }
    }

    let scale = params.scale_log2 / LOG2E;
    for (var a = 0u; a < 4u; a++) {
        let i = i0 + tr * 4u + a;
        if (i >= params.Tq) { continue; }
        let base = params.offsets[1].y + (row_base + i) * params.D;
        for (var c = 0u; c < DC; c++) {
            let col = tc + 8u * c;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) { dq[base + d] = acc[a * DC + c][e] * scale; }
            }
        }
    }
}
