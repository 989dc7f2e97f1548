// attention_backward_fused: dk, dv and dq in one pass (FlashAttention-2's
// backward order), with register micro-tiles for all five products. One
// workgroup of 8 BK invocations per BK keys of one (b, kv head), iterating
// over the query rows of every query head of the group in tiles of BQ = BK
// rows. P and dS of a tile are computed once and serve dk, dv and dq; dq gets
// one partial sum per (key block, row), stored after delta in the work buffer
// and added up in a fixed order by attention_backward_dq_reduce (no atomics:
// the same bits run to run).
//   q, dout [B, H, Tq, D], k, v [B, Hkv, Tk, D], lse f32 [B, H, Tq],
//   work f32: delta [B, H, Tq] at offsets[2].y, dq partials at offsets[2].z (a
//   multiple of 4; bound as vec4s)
//   -> dk, dv f32 [B, Hkv, Tk, D] (strides dk_st, dv_st); dq partials (unscaled sums of
//      ds k) [B, H, R, 4 D4], R = offsets[2].w rows per head, each row whole
//      vec4s (zeros past D), stored as one 16-byte word an invocation (four
//      scalar stores a quad wrote 4x the L2 sectors): the rows of key
//      block kb follow those of blocks 0 .. kb - 1, from its first query tile
//      i_first(kb) to Tq (causal blocks skip the tiles no row of which sees
//      them)
// Shapes: D4 <= 16 (D <= 64), BK = BQ in {16, 32}: at D = 64 and BK = 32 the six
// shared tiles take 43.3 KiB, under the 48 KiB of NVIDIA's Vulkan driver.
// The workgroup is two halves of 4 BK invocations (a warp lies in one half),
// and each step splits its products between them, so that an invocation reads
// as many shared words per FMA as with 4 BK invocations doing both, while an
// SM runs twice the warps: the tiles allow one workgroup an SM there (its
// workgroups get ~64 KiB in all), and with 4 BK invocations, four warps an SM,
// the kernel stalled on latency. Per query tile, between barriers:
//   load    q (pre-scaled by scale * log2 e) and dout rows into shared
//           memory [row][d / 4] (rows padded by one vec4: conflict-free
//           column reads), lse * log2 e and delta of the rows
//   scores  invocation (rg, tk) = (l / (BK / 4), l % (BK / 4)) of a half (l =
//           its index there) computes, for rows rg, rg + RG, .. (NR of them) x
//           keys 4 tk .. 4 tk + 3, s = q k (half 0) or dp = dout v (half 1) as
//           small GEMMs over d: per d quad 4 k (v) + NR q (dout) vec4 loads for
//           4 NR dot products (k and v are stored key-quad interleaved, key 4
//           tk + a at slot a * BK / 4 + tk, so the 8 distinct k vec4s a warp
//           reads lie in distinct banks). Half 0 stores p, half 1
//           dp; after a barrier every invocation takes one (row, key quad),
//           draws its dropout factors z (one Philox call: the 4 keys are
//           neighbours) and turns p into p z and dp into ds = p (z dp - delta),
//           in shared [row][key quad] as whole vec4s
//   update  invocation (kq, c) of half 0 holds dv of keys 4 kq .. 4 kq + 3,
//           column quad c, in registers (per row one p z and one dout vec4 for
//           16 FMAs), of half 1 dk (ds, q); then every invocation computes the
//           dq partial of rows kq + BK / 4 m (m = 2 half, 2 half + 1), column
//           quad c: per key quad 4 k + 2 ds loads for 32 FMAs, and stores it to
//           the work buffer. A warp covers 4 kq x 8 c (kq = 4 (l / 64) + (l %
//           32) / 8, c = 8 ((l / 32) % 2) + l % 8): per load 4 or 8 distinct
//           vec4s in distinct banks, one shared wavefront each
// The next tile's q, dout, lse and delta are loaded into registers while this
// tile's products run (one workgroup an SM: nothing else hides the latency).
// Causal: query i sees key j when j <= i + Tk - Tq; tiles before the first
// one with a row that sees the block's first key are skipped, invisible pairs
// get p = 0 (a row that sees no key has lse = -inf: the select keeps its
// exp2 = inf out of the sums). Rows past Tq and keys past Tk are zeros.
// On an H100 (64x6x256x64 causal, dropout 0.2; bench/results/h100-2026-11-28d):
// 630 us a call against 765-797 for 4 BK invocations doing both halves' work
// and for 16 BK invocations (each half's rows split once more: more shared
// reads per FMA); fwd+bwd 1.14 ms against 1.27; the prefetch and the dropout
// factors drawn by all invocations (not half 1 alone) 627 -> 618 us. Earlier,
// with 4 BK: 0.93 ms against 1.31 for dkdv + q; 16-key blocks slower (fwd+bwd
// 1.58 ms against 1.34), scalar loads of the inputs too (1.48).
// Prelude constants: D4, BK (16 or 32), BQ (= BK), VEC_IN and IN_T (see q_quad).

@group(0) @binding(1) var<storage, read> q: array<IN_T>;      // IN_T: vec4<f32> with VEC_IN, else f32
@group(0) @binding(2) var<storage, read> k: array<IN_T>;
@group(0) @binding(3) var<storage, read> v: array<IN_T>;
@group(0) @binding(4) var<storage, read> dout: array<IN_T>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read_write> work: array<vec4<f32>>;   // delta [rows], then the dq partials
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

const WG: u32 = 8u * BK;          // two halves of 4 BK invocations
const HALF: u32 = 4u * BK;
const KQ: u32 = BK / 4u;          // key quads of a block
const RG: u32 = HALF / KQ;        // row groups of the scores step (16)
const NR: u32 = BQ / RG;          // rows per invocation in the scores step
const QS: u32 = D4 + 1u;          // padded row stride (vec4) of the q, dout, k, v tiles
const PS: u32 = KQ + 1u;          // padded row stride (vec4) of the p, ds tiles
const NLOAD: u32 = (BQ * D4 + WG - 1u) / WG;   // q (and dout) quads per invocation

var<workgroup> k_tile: array<vec4<f32>, BK * QS>;    // [slot][d / 4]: key 4 kq + a at slot a * KQ + kq
var<workgroup> v_tile: array<vec4<f32>, BK * QS>;
var<workgroup> q_tile: array<vec4<f32>, BQ * QS>;    // [row][d / 4], q * scale * log2 e
var<workgroup> do_tile: array<vec4<f32>, BQ * QS>;
var<workgroup> p_tile: array<vec4<f32>, BQ * PS>;    // [row][key quad]: p z
var<workgroup> ds_tile: array<vec4<f32>, BQ * PS>;   // ds
var<workgroup> lse_tile: array<f32, BQ>;             // lse * log2 e (0 past Tq)
var<workgroup> delta_tile: array<f32, BQ>;

// First query row of the tiles key block j0 .. j0 + BK - 1 needs (a multiple of BQ).
fn first_row(j0: u32) -> u32 {
    if (params.causal == 0u) { return 0u; }
    return u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ;
}

// The quad of elements (b, h, t, d0 .. d0 + 3) of q, k, v or dout (zeros past
// D; t in range). VEC_IN (d stride 1, D, offsets and strides multiples of 4:
// the inputs are bound as vec4 arrays, IN_T): one 16-byte load. Else four
// loads from one index computation. (vec4<f32>(x) is x or its splat: each
// branch type-checks for either IN_T.)
fn q_quad(b: u32, h: u32, t: u32, d0: u32) -> vec4<f32> {
    let at = elem(params.offsets[0].x, params.q_st, b, h, t, d0);
    if (VEC_IN) { return vec4<f32>(q[at >> 2u]); }
    var x = vec4<f32>();
    for (var c = 0u; c < 4u; c++) {
        if (d0 + c < params.D) { x[c] = vec4<f32>(q[at + c * params.q_st.w]).x; }
    }
    return x;
}
fn do_quad(b: u32, h: u32, t: u32, d0: u32) -> vec4<f32> {
    let at = elem(params.offsets[1].x, params.do_st, b, h, t, d0);
    if (VEC_IN) { return vec4<f32>(dout[at >> 2u]); }
    var x = vec4<f32>();
    for (var c = 0u; c < 4u; c++) {
        if (d0 + c < params.D) { x[c] = vec4<f32>(dout[at + c * params.do_st.w]).x; }
    }
    return x;
}
fn k_quad(b: u32, g: u32, t: u32, d0: u32) -> vec4<f32> {
    let at = elem(params.offsets[0].y, params.k_st, b, g, t, d0);
    if (VEC_IN) { return vec4<f32>(k[at >> 2u]); }
    var x = vec4<f32>();
    for (var c = 0u; c < 4u; c++) {
        if (d0 + c < params.D) { x[c] = vec4<f32>(k[at + c * params.k_st.w]).x; }
    }
    return x;
}
fn v_quad(b: u32, g: u32, t: u32, d0: u32) -> vec4<f32> {
    let at = elem(params.offsets[0].z, params.v_st, b, g, t, d0);
    if (VEC_IN) { return vec4<f32>(v[at >> 2u]); }
    var x = vec4<f32>();
    for (var c = 0u; c < 4u; c++) {
        if (d0 + c < params.D) { x[c] = vec4<f32>(v[at + c * params.v_st.w]).x; }
    }
    return x;
}

// Quads lid, lid + WG, .. of the q (pre-scaled) and dout tile of rows i0 ..
// i0 + BQ - 1 of head h (zeros past Tq).
fn fetch_tile(qn: ptr<function, array<vec4<f32>, NLOAD>>, on: ptr<function, array<vec4<f32>, NLOAD>>, b: u32,
              h: u32, i0: u32, lid: u32) {
    for (var x = 0u; x < NLOAD; x++) {
        let s = lid + x * WG;
        let r = s / D4;
        var qv = vec4<f32>();
        var ov = vec4<f32>();
        if (s < BQ * D4 && i0 + r < params.Tq) {
            qv = q_quad(b, h, i0 + r, (s % D4) * 4u) * params.scale_log2;
            ov = do_quad(b, h, i0 + r, (s % D4) * 4u);
        }
        (*qn)[x] = qv;
        (*on)[x] = ov;
    }
}

// lse * log2 e and delta of row i0 + lid of head h (lid < BQ; zeros past Tq or for other invocations).
fn fetch_row(b: u32, h: u32, i0: u32, lid: u32) -> vec2<f32> {
    if (lid >= BQ || i0 + lid >= params.Tq) { return vec2<f32>(); }
    let at = (b * params.H + h) * params.Tq + i0 + lid;
    let w = params.offsets[2].y + at;
    return vec2<f32>(lse[params.offsets[2].x + at] * LOG2E, work[w >> 2u][w & 3u]);
}

// Last key row i sees (-1: none, also past Tq).
fn last_seen(i: u32) -> i32 {
    var last = i32(params.Tk) - 1;
    if (params.causal != 0u) { last = min(last, last_key(i)); }
    if (i >= params.Tq) { last = -1; }
    return last;
}

// s + (a . b0, a . b1, a . b2, a . b3) as four vec4 fused multiply-adds: 16
// instructions for the 16 products (four dots and an add would take 20)
fn dot4_fma(a: vec4<f32>, b0: vec4<f32>, b1: vec4<f32>, b2: vec4<f32>, b3: vec4<f32>, s: vec4<f32>) -> vec4<f32> {
    var r = fma(vec4<f32>(a.x), vec4<f32>(b0.x, b1.x, b2.x, b3.x), s);
    r = fma(vec4<f32>(a.y), vec4<f32>(b0.y, b1.y, b2.y, b3.y), r);
    r = fma(vec4<f32>(a.z), vec4<f32>(b0.z, b1.z, b2.z, b3.z), r);
    return fma(vec4<f32>(a.w), vec4<f32>(b0.w, b1.w, b2.w, b3.w), r);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.Hkv) { return; }   // whole workgroups only
    // block_order's index 0 is key block 0 (causal: the most query tiles)
    let pb = block_order(id, params.B * params.Hkv);
    let bg = pb.x;
    let kb = pb.y;
    let j0 = kb * BK;
    let b = bg / params.Hkv;
    let g = bg % params.Hkv;

    // the block's k and v rows, key-quad interleaved
    for (var s = lid; s < BK * D4; s += WG) {
        let key = s / D4;
        let d4 = s % D4;
        let j = j0 + key;
        var kv = vec4<f32>();
        var vv = vec4<f32>();
        if (j < params.Tk) {
            kv = k_quad(b, g, j, d4 * 4u);
            vv = v_quad(b, g, j, d4 * 4u);
        }
        let slot = (key % 4u) * KQ + key / 4u;
        k_tile[slot * QS + d4] = kv;
        v_tile[slot * QS + d4] = vv;
    }

    // where this block's dq partial rows start in each head's R rows
    let i_first = first_row(j0);
    var part_row0 = 0u;
    for (var x = 0u; x < kb; x++) { part_row0 += params.Tq - first_row(x * BK); }

    let half = lid / HALF;        // uniform across a warp (HALF is a multiple of 32)
    let l = lid % HALF;
    // scores step: row group and key quad (within the half)
    let rg = l / KQ;
    let tk = l % KQ;
    let j4 = j0 + 4u * tk;
    let keys = vec4<i32>(i32(j4)) + vec4<i32>(0, 1, 2, 3);
    // update step: key quad (dv in half 0, dk in half 1) or row group (dq), and
    // column quad. A warp covers 4 kq x 8 c: per load 4 or 8 distinct vec4s in
    // distinct banks
    let kq = 4u * (l / 64u) + (l % 32u) / 8u;
    let c = 8u * ((l / 32u) % 2u) + l % 8u;
    let col_ok = c < D4;
    var acc: array<vec4<f32>, 4>;   // [key a]: dv (half 0) or dk (half 1) of key 4 kq + a, columns 4 c ..
    for (var a = 0u; a < 4u; a++) { acc[a] = vec4<f32>(); }

    let tiles_per_head = (params.Tq - i_first + BQ - 1u) / BQ;
    let n_tiles = tiles_per_head * params.group;
    var qn: array<vec4<f32>, NLOAD>;   // a tile's q (pre-scaled) and dout quads, staged in registers
    var on: array<vec4<f32>, NLOAD>;
    var ld = vec2<f32>();              // lid < BQ: lse * log2 e and delta of row lid of the tile
    if (n_tiles > 0u) {
        fetch_tile(&qn, &on, b, g * params.group, i_first, lid);
        ld = fetch_row(b, g * params.group, i_first, lid);
    }
    for (var t = 0u; t < n_tiles; t++) {
        let h = g * params.group + t / tiles_per_head;
        let i0 = i_first + (t % tiles_per_head) * BQ;
        let row_base = (b * params.H + h) * params.Tq;
        workgroupBarrier();   // the previous tile's update step is done with the tiles
        for (var x = 0u; x < NLOAD; x++) {
            let s = lid + x * WG;
            if (s < BQ * D4) {
                q_tile[(s / D4) * QS + s % D4] = qn[x];
                do_tile[(s / D4) * QS + s % D4] = on[x];
            }
        }
        if (lid < BQ) {
            lse_tile[lid] = ld.x;
            delta_tile[lid] = ld.y;
        }
        workgroupBarrier();
        if (t + 1u < n_tiles) {   // the next tile's loads fly during this tile's products
            let h1 = g * params.group + (t + 1u) / tiles_per_head;
            let i1 = i_first + ((t + 1u) % tiles_per_head) * BQ;
            fetch_tile(&qn, &on, b, h1, i1, lid);
            ld = fetch_row(b, h1, i1, lid);
        }

        // scores step: s (half 0) or dp (half 1) of rows rg + RG n x keys 4 tk + a
        var sc: array<vec4<f32>, NR>;
        for (var n = 0u; n < NR; n++) { sc[n] = vec4<f32>(); }
        if (half == 0u) {
            for (var d4 = 0u; d4 < D4; d4++) {
                let k0 = k_tile[tk * QS + d4];
                let k1 = k_tile[(KQ + tk) * QS + d4];
                let k2 = k_tile[(2u * KQ + tk) * QS + d4];
                let k3 = k_tile[(3u * KQ + tk) * QS + d4];
                for (var n = 0u; n < NR; n++) {
                    let qv = q_tile[(rg + RG * n) * QS + d4];
                    sc[n] = dot4_fma(qv, k0, k1, k2, k3, sc[n]);
                }
            }
        } else {
            for (var d4 = 0u; d4 < D4; d4++) {
                let v0 = v_tile[tk * QS + d4];
                let v1 = v_tile[(KQ + tk) * QS + d4];
                let v2 = v_tile[(2u * KQ + tk) * QS + d4];
                let v3 = v_tile[(3u * KQ + tk) * QS + d4];
                for (var n = 0u; n < NR; n++) {
                    let ov = do_tile[(rg + RG * n) * QS + d4];
                    sc[n] = dot4_fma(ov, v0, v1, v2, v3, sc[n]);
                }
            }
        }
        for (var n = 0u; n < NR; n++) {
            let r = rg + RG * n;
            let visible = keys <= vec4<i32>(last_seen(i0 + r));
            if (half == 0u) {
                p_tile[r * PS + tk] = select(vec4<f32>(0.0), exp2(sc[n] - vec4<f32>(lse_tile[r])), visible);
            } else {
                ds_tile[r * PS + tk] = sc[n];   // dp, made ds below
            }
        }
        workgroupBarrier();
        // every invocation draws the dropout factors of one (row, key quad) of the tile
        for (var x = lid; x < BQ * KQ; x += WG) {
            let r = x / KQ;
            let q4 = x % KQ;
            let jz = j0 + 4u * q4;
            let visible = vec4<i32>(i32(jz)) + vec4<i32>(0, 1, 2, 3) <= vec4<i32>(last_seen(i0 + r));
            var z = vec4<f32>(1.0);
            if (any(visible)) { z = dropout_factors4(row_base + i0 + r, jz); }   // no Philox for hidden quads
            let p = p_tile[r * PS + q4];
            p_tile[r * PS + q4] = p * z;
            ds_tile[r * PS + q4] = p * (z * ds_tile[r * PS + q4] - vec4<f32>(delta_tile[r]));
        }
        workgroupBarrier();

        if (col_ok) {
            // half 0: dv += (p z)^T dout; half 1: dk += ds^T q, over the tile's rows (zeros past Tq)
            if (half == 0u) {
                for (var r = 0u; r < BQ; r++) {
                    let pv = p_tile[r * PS + kq];
                    let ov = do_tile[r * QS + c];
                    acc[0] = fma(vec4<f32>(pv.x), ov, acc[0]);
                    acc[1] = fma(vec4<f32>(pv.y), ov, acc[1]);
                    acc[2] = fma(vec4<f32>(pv.z), ov, acc[2]);
                    acc[3] = fma(vec4<f32>(pv.w), ov, acc[3]);
                }
            } else {
                for (var r = 0u; r < BQ; r++) {
                    let dsv = ds_tile[r * PS + kq];
                    let qv = q_tile[r * QS + c];
                    acc[0] = fma(vec4<f32>(dsv.x), qv, acc[0]);
                    acc[1] = fma(vec4<f32>(dsv.y), qv, acc[1]);
                    acc[2] = fma(vec4<f32>(dsv.z), qv, acc[2]);
                    acc[3] = fma(vec4<f32>(dsv.w), qv, acc[3]);
                }
            }
            // dq partial of rows kq + KQ (2 half + m), m < 2: sum over the block's keys of ds k
            var dqa: array<vec4<f32>, 2>;
            for (var m = 0u; m < 2u; m++) { dqa[m] = vec4<f32>(); }
            for (var kk = 0u; kk < KQ; kk++) {
                let k0 = k_tile[kk * QS + c];
                let k1 = k_tile[(KQ + kk) * QS + c];
                let k2 = k_tile[(2u * KQ + kk) * QS + c];
                let k3 = k_tile[(3u * KQ + kk) * QS + c];
                for (var m = 0u; m < 2u; m++) {
                    let dsv = ds_tile[(kq + KQ * (2u * half + m)) * PS + kk];
                    dqa[m] = fma(vec4<f32>(dsv.x), k0, fma(vec4<f32>(dsv.y), k1,
                             fma(vec4<f32>(dsv.z), k2, fma(vec4<f32>(dsv.w), k3, dqa[m]))));
                }
            }
            for (var m = 0u; m < 2u; m++) {
                let i = i0 + kq + KQ * (2u * half + m);
                if (i < params.Tq) {
                    let row = (b * params.H + h) * params.offsets[2].w + part_row0 + i - i_first;
                    work[(params.offsets[2].z >> 2u) + row * D4 + c] = dqa[m];   // zeros past D: k_tile's are
                }
            }
        }
    }

    // q_tile held q * scale * log2 e: dk = sum ds q scale
    if (!col_ok) { return; }
    let unscale = select(1.0, 1.0 / LOG2E, half == 1u);
    for (var a = 0u; a < 4u; a++) {
        let j = j0 + kq * 4u + a;
        if (j >= params.Tk) { continue; }
        for (var e = 0u; e < 4u; e++) {
            let d = c * 4u + e;
            if (d < params.D) {
                if (half == 1u) {
                    dk[elem(params.offsets[1].z, params.dk_st, b, g, j, d)] = acc[a][e] * unscale;
                } else {
                    dv[elem(params.offsets[1].w, params.dv_st, b, g, j, d)] = acc[a][e];
                }
            }
        }
    }
}
