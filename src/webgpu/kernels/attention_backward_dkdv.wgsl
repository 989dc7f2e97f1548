// attention_backward_dkdv: dk and dv in one pass (FlashAttention-2's backward
// order), one workgroup of 4 BK invocations per BK keys of one (b, kv head),
// iterating over the query rows of every query head of the group in tiles of
// BQ rows. The scores and probabilities of a (row, key) pair are computed
// once and serve both gradients (the one-key-per-invocation kernel,
// attention_backward_kv, needs two passes at D = 64 because k, v, dk and dv
// rows together do not fit in registers).
//   q, dout [B, H, Tq, D], k, v [B, Hkv, Tk, D], lse, delta f32 [B, H, Tq]
//   -> dk, dv f32 [B, Hkv, Tk, D] contiguous
// Per query tile, three steps between barriers:
//   load    q (pre-scaled by scale * log2 e) and dout rows of the tile into
//           shared memory; with dropout, the tile's dropout factors into
//           p_tile (one Philox call per 4 neighbouring keys of a row, not
//           one per weight: Philox costs about as much as a 64-long dot)
//   scores  invocation (quarter, key) = (lid / BK, lid % BK) holds its key's
//           k and v rows in registers (loaded once) and, for the rows
//           quarter, quarter + 4, ..., computes s = q . k and dp = dout . v
//           from broadcast reads (every invocation of a subgroup reads the
//           same row), then p = exp2(s - lse log2 e), with z the dropout
//           factor pz = p z -> p_tile[row][key] and
//           ds = p (z dp - delta) -> ds_tile[row][key]
//   update  invocation (key group, column quad) = (lid / 16, lid % 16) owns
//           keys 4 kg .. 4 kg + 3 and column quads c, c + 16, ... of dk and
//           dv in registers: dv += (p z)^T dout, dk += ds^T q over the tile's
//           rows (a small GEMM read from shared memory, 8 vec4 products per
//           4 vec4 loads)
// Causal: tiles before the one holding the first row that sees the block's
// first key are skipped, and invisible pairs get p = 0 (a row that sees no
// key has lse = -inf: the select keeps its exp2 = inf out of the sums).
// No atomics: each workgroup owns its keys' rows of dk and dv.
// MASK_BITS (with dropout, BK a multiple of 32): the load step also stores the
// tile's dropout mask as bits, word (row, j / 32) of offsets[2].w words per
// row at offsets[2].z of the delta buffer (bit j % 32: kept), so that the dq
// kernel reads it instead of running Philox again (one more barrier per
// tile: the scores step overwrites the factors). Every (row, key) pair that
// any row sees lies in a tile some workgroup here computes.
// Prelude constants: D4 (<= 16: the k and v rows live in registers), BK keys
// per workgroup (a multiple of 8), BQ query rows per tile (a multiple of 4).

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read_write> delta: array<u32>;   // f32 delta [rows], then the mask words
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

const WG: u32 = 4u * BK;
const BK4: u32 = BK / 4u;          // key quads per tile row
const RPQ: u32 = BQ / 4u;          // rows per quarter in the scores step
const DC: u32 = (D4 + 15u) / 16u;  // column quads per invocation in the update step

var<workgroup> q_tile: array<vec4<f32>, BQ * D4>;    // [row][d / 4], q * scale * log2 e
var<workgroup> do_tile: array<vec4<f32>, BQ * D4>;
var<workgroup> p_tile: array<vec4<f32>, BQ * BK4>;   // [row][key / 4][key % 4]: z, then p z
var<workgroup> ds_tile: array<vec4<f32>, BQ * BK4>;  // ds

const NPF: u32 = (BQ * D4 + WG - 1u) / WG;   // q (and dout) quads of a tile per invocation

// Quads lid, lid + WG, ... of the q (pre-scaled) and dout tile of rows i0 ..
// i0 + BQ - 1 of head h (zeros past Tq and D).
fn fetch_tile(qn: ptr<function, array<vec4<f32>, NPF>>, on: ptr<function, array<vec4<f32>, NPF>>, b: u32, h: u32,
              i0: u32, lid: u32) {
    for (var x = 0u; x < NPF; x++) {
        let s = lid + x * WG;
        let i = i0 + s / D4;
        let d0 = (s % D4) * 4u;
        var qv = vec4<f32>();
        var ov = vec4<f32>();
        if (s < BQ * D4 && i < params.Tq) {
            for (var c = 0u; c < 4u; c++) {
                if (d0 + c < params.D) {
                    qv[c] = q[elem(params.offsets[0].x, params.q_st, b, h, i, d0 + c)] * params.scale_log2;
                    ov[c] = dout[elem(params.offsets[1].x, params.do_st, b, h, i, d0 + c)];
                }
            }
        }
        (*qn)[x] = qv;
        (*on)[x] = ov;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.Hkv) { return; }   // whole workgroups only
    let bg = id / params.blocks;
    let j0 = (id % params.blocks) * BK;
    let b = bg / params.Hkv;
    let g = bg % params.Hkv;

    // scores step: this invocation's key and its k, v rows
    let quarter = lid / BK;
    let key = lid % BK;
    let j = j0 + key;
    let key_ok = j < params.Tk;
    var kr: array<vec4<f32>, D4>;
    var vr: array<vec4<f32>, D4>;
    if (key_ok) {
        for (var d4 = 0u; d4 < D4; d4++) {
            for (var c = 0u; c < 4u; c++) {
                let d = d4 * 4u + c;
                if (d < params.D) {
                    kr[d4][c] = k[elem(params.offsets[0].y, params.k_st, b, g, j, d)];
                    vr[d4][c] = v[elem(params.offsets[0].z, params.v_st, b, g, j, d)];
                }
            }
        }
    }
    // query i sees key j when i >= j - (Tk - Tq)
    let first_row = i32(j) - (i32(params.Tk) - i32(params.Tq));

    // update step: this invocation's keys and column quads
    let kg = lid / 16u;
    let c0 = lid % 16u;
    var dka: array<vec4<f32>, 4u * DC>;   // [key a][column quad cc]
    var dva: array<vec4<f32>, 4u * DC>;
    for (var x = 0u; x < 4u * DC; x++) {
        dka[x] = vec4<f32>();
        dva[x] = vec4<f32>();
    }

    // causal: rows before the first one that sees key j0 see none of the block
    var i_start = 0u;
    if (params.causal != 0u) { i_start = u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ; }
    // the query tiles of every head of the group, as one sequence
    let tiles_per_head = (params.Tq - i_start + BQ - 1u) / BQ;
    let n_tiles = tiles_per_head * params.group;
    var qn: array<vec4<f32>, NPF>;   // this tile's q and dout quads, staged in registers
    var on: array<vec4<f32>, NPF>;

    for (var t = 0u; t < n_tiles; t++) {
        let h = g * params.group + t / tiles_per_head;
        let i0 = i_start + (t % tiles_per_head) * BQ;
        let row_base = (b * params.H + h) * params.Tq;
        workgroupBarrier();   // the previous tile's update step is done with the tiles
        fetch_tile(&qn, &on, b, h, i0, lid);
        for (var x = 0u; x < NPF; x++) {
            let s = lid + x * WG;
            if (s < BQ * D4) {
                q_tile[s] = qn[x];
                do_tile[s] = on[x];
            }
        }
        if (params.dropout != 0u) {
            for (var s = lid; s < BQ * BK4; s += WG) {
                p_tile[s] = dropout_factors4(row_base + i0 + s / BK4, j0 + (s % BK4) * 4u);
            }
        }
        workgroupBarrier();
        if (MASK_BITS) {
            for (var s = lid; s < BQ * (BK / 32u); s += WG) {
                let r = s / (BK / 32u);
                let w = s % (BK / 32u);
                var bits = 0u;
                for (var x = 0u; x < 8u; x++) {
                    let z = p_tile[r * BK4 + w * 8u + x];
                    let m = select(vec4<u32>(0u), vec4<u32>(1u, 2u, 4u, 8u), z != vec4<f32>(0.0));
                    bits |= (m.x | m.y | m.z | m.w) << (4u * x);
                }
                if (i0 + r < params.Tq && j0 / 32u + w < params.offsets[2].w) {   // rows past Tq, words past Tk: not ours
                    delta[params.offsets[2].z + (row_base + i0 + r) * params.offsets[2].w + (j0 / 32u + w)] = bits;
                }
            }
            workgroupBarrier();   // the scores step overwrites the factors
        }

        for (var n = 0u; n < RPQ; n++) {
            let r = quarter + 4u * n;
            let i = i0 + r;
            var s4 = vec4<f32>();
            var dp4 = vec4<f32>();
            for (var d4 = 0u; d4 < D4; d4++) {
                s4 = fma(q_tile[r * D4 + d4], kr[d4], s4);
                dp4 = fma(do_tile[r * D4 + d4], vr[d4], dp4);
            }
            let s2 = (s4.x + s4.y) + (s4.z + s4.w);
            let dpv = (dp4.x + dp4.y) + (dp4.z + dp4.w);
            let row_ok = i < params.Tq;
            let visible = key_ok && row_ok && (params.causal == 0u || i32(i) >= first_row);
            let at = select(0u, row_base + i, row_ok);   // rows past Tq read row 0 (unused)
            let lse2 = lse[params.offsets[2].x + at] * LOG2E;
            let di = bitcast<f32>(delta[params.offsets[2].y + at]);
            let p = select(0.0, exp2(s2 - lse2), visible);
            var z = 1.0;
            if (params.dropout != 0u) { z = p_tile[r * BK4 + key / 4u][key % 4u]; }
            p_tile[r * BK4 + key / 4u][key % 4u] = p * z;
            ds_tile[r * BK4 + key / 4u][key % 4u] = p * (z * dpv - di);
        }
        workgroupBarrier();

        let n_rows = min(BQ, params.Tq - i0);
        for (var r = 0u; r < n_rows; r++) {
            let pv = p_tile[r * BK4 + kg];
            let dsv = ds_tile[r * BK4 + kg];
            for (var cc = 0u; cc < DC; cc++) {
                let col = c0 + 16u * cc;
                if (col < D4) {
                    let ov = do_tile[r * D4 + col];
                    let qv = q_tile[r * D4 + col];
                    for (var a = 0u; a < 4u; a++) {
                        dva[a * DC + cc] = fma(vec4<f32>(pv[a]), ov, dva[a * DC + cc]);
                        dka[a * DC + cc] = fma(vec4<f32>(dsv[a]), qv, dka[a * DC + cc]);
                    }
                }
            }
        }
    }

    // q_tile held q * scale * log2 e: dk = sum ds q scale
    let unscale = 1.0 / LOG2E;
    for (var a = 0u; a < 4u; a++) {
        let jj = j0 + kg * 4u + a;
        if (jj >= params.Tk) { continue; }
        let base = (bg * params.Tk + jj) * params.D;
        for (var cc = 0u; cc < DC; cc++) {
            let col = c0 + 16u * cc;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) {
                    dk[params.offsets[1].z + base + d] = dka[a * DC + cc][e] * unscale;
                    dv[params.offsets[1].w + base + d] = dva[a * DC + cc][e];
                }
            }
        }
    }
}
