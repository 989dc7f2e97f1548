// attention_backward_dq: dq in attention_backward_dkdv's shape (roles of rows
// and keys swapped): one workgroup of 4 BQ invocations per BQ query rows of
// one (b, h), iterating over the keys the block sees in tiles of BK = 32.
//   q, dout [B, H, Tq, D], k, v [B, Hkv, Tk, D], lse, delta f32 [B, H, Tq]
//   -> dq f32 [B, H, Tq, D] contiguous
// Per key tile, three steps between barriers:
//   load    k and v rows of the tile into shared memory; with dropout and no
//           mask from the dk/dv kernel, the tile's dropout factors into
//           ds_tile (one Philox call per 4 neighbouring keys of a row)
//   scores  invocation (quarter, row) = (lid / BQ, lid % BQ) holds its row's
//           q (pre-scaled) and dout in registers (loaded once) and, for the
//           keys quarter, quarter + 4, ..., computes s = q . k, dp = dout . v
//           from broadcast reads, ds = p (z dp - delta) -> ds_tile[key][row]
//   update  invocation (row group, column quad) = (lid / 16, lid % 16) owns
//           rows 4 rg .. 4 rg + 3 and column quads c, c + 16, ... of dq in
//           registers: dq += ds k over the tile's keys
// The one-row-per-invocation kernel (attention_backward_q) keeps q, dout and
// dq rows in registers together (3 D floats); here 2 D + 4 D / 16.
// MASK_BITS: the dropout mask comes from the dk/dv kernel as bits (word
// (row, j / 32), one per tile since BK is 32 and tiles start at multiples of
// 32). Prelude constants: D4 (<= 16), BQ rows per workgroup (a multiple of 8),
// BK (32).

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<u32>;   // f32 delta [rows], then (MASK_BITS) mask words
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

const WG: u32 = 4u * BQ;
const BQ4: u32 = BQ / 4u;          // row quads per tile key
const KPQ: u32 = BK / 4u;          // keys per quarter in the scores step
const DC: u32 = (D4 + 15u) / 16u;  // column quads per invocation in the update step

var<workgroup> k_tile: array<vec4<f32>, BK * D4>;    // [key][d / 4]
var<workgroup> v_tile: array<vec4<f32>, BK * D4>;
var<workgroup> ds_tile: array<vec4<f32>, BK * BQ4>;  // [key][row / 4][row % 4]: z, then ds

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.H) { return; }   // whole workgroups only
    let bh = id / params.blocks;
    let i0 = (id % params.blocks) * BQ;
    let b = bh / params.H;
    let h = bh % params.H;
    let g = h / params.group;
    let row_base = bh * params.Tq;

    // scores step: this invocation's row
    let quarter = lid / BQ;
    let rr = lid % BQ;
    let i = i0 + rr;
    let row_ok = i < params.Tq;
    let row = row_base + i;
    var qr: array<vec4<f32>, D4>;
    var dor: array<vec4<f32>, D4>;
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
    let limit = select(-1, last_key(i), row_ok);

    // update step: this invocation's rows and column quads
    let rg = lid / 16u;
    let c0 = lid % 16u;
    var acc: array<vec4<f32>, 4u * DC>;   // [row a][column quad cc]
    for (var x = 0u; x < 4u * DC; x++) { acc[x] = vec4<f32>(); }

    // keys any row of the block sees
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        workgroupBarrier();   // the previous tile's update step is done with the tiles
        for (var s = lid; s < BK * D4; s += WG) {
            let j = j0 + s / D4;
            let d0 = (s % D4) * 4u;
            var kv = vec4<f32>();
            var vv = vec4<f32>();
            if (j < params.Tk) {
                for (var c = 0u; c < 4u; c++) {
                    if (d0 + c < params.D) {
                        kv[c] = k[elem(params.offsets[0].y, params.k_st, b, g, j, d0 + c)];
                        vv[c] = v[elem(params.offsets[0].z, params.v_st, b, g, j, d0 + c)];
                    }
                }
            }
            k_tile[s] = kv;
            v_tile[s] = vv;
        }
        if (params.dropout != 0u && !MASK_BITS) {
            for (var s = lid; s < BQ * KPQ; s += WG) {
                let r = s / KPQ;
                let kq = s % KPQ;
                let z4 = dropout_factors4(row_base + i0 + r, j0 + kq * 4u);
                for (var a = 0u; a < 4u; a++) { ds_tile[(kq * 4u + a) * BQ4 + r / 4u][r % 4u] = z4[a]; }
            }
        }
        var bits = 0u;
        if (MASK_BITS && row_ok) { bits = delta[params.offsets[2].z + row * params.offsets[2].w + j0 / 32u]; }
        workgroupBarrier();

        for (var n = 0u; n < KPQ; n++) {
            let key = quarter + 4u * n;
            let j = j0 + key;
            var s4 = vec4<f32>();
            var dp4 = vec4<f32>();
            for (var d4 = 0u; d4 < D4; d4++) {
                s4 = fma(qr[d4], k_tile[key * D4 + d4], s4);
                dp4 = fma(dor[d4], v_tile[key * D4 + d4], dp4);
            }
            let s2 = (s4.x + s4.y) + (s4.z + s4.w);
            let dpv = (dp4.x + dp4.y) + (dp4.z + dp4.w);
            // limit is -1 for rows past Tq; j < Tk holds for every j <= limit
            let p = select(0.0, exp2(s2 - lse2), i32(j) <= limit);
            var z = 1.0;
            if (MASK_BITS) {
                z = select(0.0, params.keep_scale, ((bits >> key) & 1u) != 0u);
            } else if (params.dropout != 0u) {
                z = ds_tile[key * BQ4 + rr / 4u][rr % 4u];
            }
            ds_tile[key * BQ4 + rr / 4u][rr % 4u] = p * (z * dpv - di);
        }
        workgroupBarrier();

        let n_keys = min(BK, u32(kv_end) - j0);
        for (var jk = 0u; jk < n_keys; jk++) {
            let dsv = ds_tile[jk * BQ4 + rg];
            for (var cc = 0u; cc < DC; cc++) {
                let col = c0 + 16u * cc;
                if (col < D4) {
                    let kv = k_tile[jk * D4 + col];
                    for (var a = 0u; a < 4u; a++) { acc[a * DC + cc] = fma(vec4<f32>(dsv[a]), kv, acc[a * DC + cc]); }
                }
            }
        }
    }

    let scale = params.scale_log2 / LOG2E;
    for (var a = 0u; a < 4u; a++) {
        let ii = i0 + rg * 4u + a;
        if (ii >= params.Tq) { continue; }
        let base = params.offsets[1].y + (row_base + ii) * params.D;
        for (var cc = 0u; cc < DC; cc++) {
            let col = c0 + 16u * cc;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) { dq[base + d] = acc[a * DC + cc][e] * scale; }
            }
        }
    }
}
