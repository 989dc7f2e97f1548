// attention_forward_blocks: flash attention in attention_backward_dq's shape:
// one workgroup of 4 BQ invocations per BQ query rows of one (b, h), walking
// the keys the block sees in tiles of BK = 32.
//   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out f32 [B, H, Tq, D] contiguous,
//   lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)
// Per key tile, three steps between barriers:
//   scores  invocation (quarter, row) = (lid / BQ, lid % BQ) holds its row's
//           q (pre-scaled) in registers and computes the scores of keys
//           8 quarter .. 8 quarter + 7 of the tile from broadcast reads of the
//           k tile -> s_tile[key][row], and their max -> qmax[quarter][row]
//   softmax the same invocation takes the row's new running max m (the four
//           quarters of a row compute the same value), turns its 8 scores
//           into p z (z: two Philox calls for the 8 neighbouring keys) in
//           place, keeps its share of the row sum l (all four shares use the
//           same m) and, in quarter 0, the rescale factor of the row's output
//           exp2(m_old - m) -> alpha[row]
//   update  invocation (row group, column quad) = (lid / 16, lid % 16) owns
//           rows 4 rg .. 4 rg + 3 and column quads c, c + 16, ... of the
//           output in registers: o = o alpha + p z v over the tile's keys
// The one-row-per-invocation kernel (attention_forward) keeps q and o rows
// in registers together (2 D floats); here D + 4 D / 16.
// Prelude constants: D4 (<= 16), BQ rows per workgroup (a multiple of 8),
// BK (32).

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> attn_fwb_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const WG: u32 = 4u * BQ;
const BQ4: u32 = BQ / 4u;          // row quads per tile key
const DC: u32 = (D4 + 15u) / 16u;  // column quads per invocation in the update step

var<workgroup> k_tile: array<vec4<f32>, BK * D4>;   // [key][d / 4]
var<workgroup> v_tile: array<vec4<f32>, BK * D4>;
var<workgroup> s_tile: array<vec4<f32>, BK * BQ4>;  // [key][row / 4][row % 4]: s, then p z
var<workgroup> qmax: array<f32, 4u * BQ>;           // [quarter][row]: max of the quarter's scores, then its l
var<workgroup> alpha: array<vec4<f32>, BQ4>;        // [row / 4][row % 4]

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

    // scores and softmax steps: this invocation's row and quarter of the keys
    let quarter = lid / BQ;
    let rr = lid % BQ;
    let i = i0 + rr;
    let row_ok = i < params.Tq;
    let row = bh * params.Tq + i;
    var qr: array<vec4<f32>, D4>;
    if (row_ok) {
        for (var d4 = 0u; d4 < D4; d4++) {
            for (var c = 0u; c < 4u; c++) {
                let d = d4 * 4u + c;
                if (d < params.D) { qr[d4][c] = q[elem(params.offsets[0].x, params.q_st, b, h, i, d)] * params.scale_log2; }
            }
        }
    }
    let limit = select(-1, last_key(i), row_ok);   // rows past Tq see nothing
    var m = NO_MAX;   // the row's running max (the same in its four quarters)
    var l = 0.0;      // this quarter's share of the row sum

    // update step: this invocation's rows and column quads
    let rg = lid / 16u;
    let c0 = lid % 16u;
    var o: array<vec4<f32>, 4u * DC>;   // [row a][column quad cc]
    for (var x = 0u; x < 4u * DC; x++) { o[x] = vec4<f32>(); }

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
        workgroupBarrier();

        var sc: array<f32, 8>;
        var cm = MASKED;
        for (var n = 0u; n < 8u; n++) {
            let key = quarter * 8u + n;
            var acc = vec4<f32>();
            for (var d4 = 0u; d4 < D4; d4++) { acc = fma(qr[d4], k_tile[key * D4 + d4], acc); }
            sc[n] = select(MASKED, (acc.x + acc.y) + (acc.z + acc.w), i32(j0 + key) <= limit);
            cm = max(cm, sc[n]);
        }
        qmax[quarter * BQ + rr] = cm;
        workgroupBarrier();

        let m_new = max(m, max(max(qmax[rr], qmax[BQ + rr]), max(qmax[2u * BQ + rr], qmax[3u * BQ + rr])));
        let a = exp2(m - m_new);
        l *= a;
        m = m_new;
        let k8 = j0 + quarter * 8u;   // a multiple of 8
        let z0 = dropout_factors4(row, k8);
        let z1 = dropout_factors4(row, k8 + 4u);
        for (var n = 0u; n < 8u; n++) {
            let p = exp2(sc[n] - m);   // 0 for masked keys: MASKED - m underflows
            l += p;
            let z = select(z1[n & 3u], z0[n & 3u], n < 4u);
            s_tile[(quarter * 8u + n) * BQ4 + rr / 4u][rr % 4u] = p * z;
        }
        if (quarter == 0u) { alpha[rr / 4u][rr % 4u] = a; }
        workgroupBarrier();

        let av = alpha[rg];
        for (var cc = 0u; cc < DC; cc++) {
            for (var x = 0u; x < 4u; x++) { o[x * DC + cc] *= av[x]; }
        }
        let n_keys = min(BK, u32(kv_end) - j0);
        for (var jk = 0u; jk < n_keys; jk++) {
            let pv = s_tile[jk * BQ4 + rg];
            for (var cc = 0u; cc < DC; cc++) {
                let col = c0 + 16u * cc;
                if (col < D4) {
                    let vv = v_tile[jk * D4 + col];
                    for (var x = 0u; x < 4u; x++) { o[x * DC + cc] = fma(vec4<f32>(pv[x]), vv, o[x * DC + cc]); }
                }
            }
        }
    }

    // the row sums: the four quarters' shares, through qmax (the barrier: every
    // invocation has read the last tile's maxima)
    workgroupBarrier();
    qmax[quarter * BQ + rr] = l;
    workgroupBarrier();
    if (quarter == 0u && row_ok) {
        let lt = (qmax[rr] + qmax[BQ + rr]) + (qmax[2u * BQ + rr] + qmax[3u * BQ + rr]);
        lse[params.offsets[1].z + row] = select(bitcast<f32>(attn_fwb_bits_ff800000), (m + log2(lt)) * LN2, lt > 0.0);
    }
    for (var x = 0u; x < 4u; x++) {
        let r = rg * 4u + x;
        let ii = i0 + r;
        if (ii >= params.Tq) { continue; }
        let lt = (qmax[r] + qmax[BQ + r]) + (qmax[2u * BQ + r] + qmax[3u * BQ + r]);
        let inv = select(0.0, 1.0 / lt, lt > 0.0);
        let base = params.offsets[1].y + (bh * params.Tq + ii) * params.D;
        for (var cc = 0u; cc < DC; cc++) {
            let col = c0 + 16u * cc;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) { out[base + d] = o[x * DC + cc][e] * inv; }
            }
        }
    }
}
