// attention_forward_quad: flash attention forward with each query row split
// over the four lanes of a subgroup quad (needs the subgroups feature; the
// prelude enables it).
//   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out f32 [B, H, Tq, D] (strides
//   o_st), lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)
// Same inputs, outputs and results as attention_forward (up to rounding).
//
// Why: on NVIDIA GPUs shared memory delivers 32 lane-words a clock per SM
// whatever the access (a broadcast LDS.128 still takes four), while the FMA
// units do 128 a clock. attention_forward gives each invocation a whole query
// row, so every word of K and V it reads from shared memory feeds one FMA:
// bound by shared memory at a quarter of the FMA rate (0.34 ms for the GPT's
// 64x6x256x64 causal forward on an H100, PyTorch 0.17). Here a quad of lanes
// holds QR rows (prelude constant, 2 or 4), each lane a quarter of their
// columns (lane l: column quads l, l + 4, ..): a K or V word feeds QR FMAs (one
// per row), and the partial scores are summed across the quad with two xor
// shuffles. With 4 rows a key costs 16 + 16 + 8 = 40 words for 128 FMAs, but
// the rows' q and output columns take 128 registers a lane: on an H100 the
// kernel ran few warps an SM and stalled on latency; with 2 rows (64
// registers, twice the warps, 16 + 16 + 4 words for 64 FMAs) the GPT's forward
// took 0.25 ms against 0.31-0.35 (webgpu_attention.c, quad_forward_rows).
//
// Workgroup: 4 BQ / QR invocations = BQ / QR quads, QR rows each, so BQ query
// rows of one (b, h). Quads are formed from subgroup lanes (lanes 4n .. 4n + 3 of a
// subgroup; its size is a multiple of 4): each subgroup takes a range of row
// slots with one atomic, so the rows do not depend on how the implementation
// maps invocations to subgroups. Every lane of a quad computes the same
// scores, maxima and sums for the quad's rows (bit-identical: the butterfly
// adds the same pairs), and its own columns of the output.
// Keys go in tiles of BK through shared memory (rows padded to DS vec4, zeros
// past D), KS = 16 / QR at a time (a step): scores, mask, online softmax
// (rescaling only when a row's max grows), dropout, then the weighted V rows.
// Dropout: lane l draws the Philox words of row l % QR of its quad for keys 4
// (l / QR) .. + 3 of the step (one call a lane a step) and the quad trades the
// keep bits (one shuffle per row and 4 keys). Causal tiles past the block's last
// visible key are never loaded; only tiles crossing the diagonal (or Tk) are
// masked. Control flow around the shuffles is uniform (it depends on the
// workgroup and the parameters only), as WGSL requires.

var<private> attn_quad_bits_ff800000: u32 = 0xff800000u;   // -inf, bitcast at run time (Tint)

@group(0) @binding(1) var<storage, read> q: array<QKV_WORD>;   // ld_q
@group(0) @binding(2) var<storage, read> k: array<QKV_WORD>;   // ld_k
@group(0) @binding(3) var<storage, read> v: array<QKV_WORD>;   // ld_v
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const QL: u32 = (D4 + 3u) / 4u;   // column quads of a row per lane
const DS: u32 = 4u * QL;          // row stride (vec4) of the K and V tiles
const KS: u32 = 16u / QR;         // keys a step: each lane of a quad draws one Philox call (4 keys) a step
const KG: u32 = KS / 4u;          // key groups of 4 a step
const WG: u32 = 4u * BQ / QR;

var<workgroup> k_tile: array<vec4<f32>, BK * DS>;
var<workgroup> v_tile: array<vec4<f32>, BK * DS>;
var<workgroup> next_slot: atomic<u32>;   // row slots handed out so far (reset by invocation 0: workgroup
                                          // memory kept the last workgroup's value on lavapipe)

// s + dot(a, b) as four fused multiply-adds (a dot and an add take five instructions)
fn dot_fma(a: vec4<f32>, b: vec4<f32>, s: f32) -> f32 {
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, s))));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_invocation_id) sg_lane: u32,
        @builtin(subgroup_size) sg_size: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.blocks * params.B * params.H) { return; }   // whole workgroups only
    if (lid == 0u) { atomicStore(&next_slot, 0u); }
    workgroupBarrier();
    var first = 0u;
    if (sg_lane == 0u) { first = atomicAdd(&next_slot, sg_size); }
    let slot = subgroupBroadcast(first, 0u) + sg_lane;
    let quad = slot / 4u;
    let ql = slot % 4u;                 // = sg_lane % 4: the partners are lanes sg_lane ^ 1, ^ 2
    let quad_lane0 = sg_lane & ~3u;
    // with block_order's order, index 0 is the last query block (causal: the most keys)
    let pb = block_order(id, params.B * params.H);
    let bh = pb.x;
    let i0 = select(pb.y, params.blocks - 1u - pb.y, params.order != 0u) * BQ;
    let b = bh / params.H;
    let h = bh % params.H;
    let g = h / params.group;
    let r0 = i0 + QR * quad;            // the quad's first row
    let quad_ok = quad < BQ / QR;       // a partial subgroup may hand out slots past the workgroup

    var qr: array<vec4<f32>, QR * QL>;  // [row r][x]: columns 4 (ql + 4 x) .., pre-scaled
    var o: array<vec4<f32>, QR * QL>;
    var row_limit = vec4<i32>(-1);      // last key each row sees (-1: none, or no such row)
    for (var r = 0u; r < QR; r++) {
        let i = r0 + r;
        let row_ok = quad_ok && i < params.Tq;
        if (row_ok) { row_limit[r] = last_key(i); }
        for (var x = 0u; x < QL; x++) {
            let d0 = (ql + 4u * x) * 4u;
            var qv = vec4<f32>();
            if (row_ok) {
                for (var c = 0u; c < 4u; c++) {
                    if (d0 + c < params.D) { qv[c] = ld_q(elem(params.offsets[0].x, params.q_st, b, h, i, d0 + c)) * params.scale_log2; }
                }
            }
            qr[r * QL + x] = qv;
            o[r * QL + x] = vec4<f32>();
        }
    }
    var m = vec4<f32>(NO_MAX);          // running max of the quad's rows (QR of the components)
    var l = vec4<f32>();                // running sums
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }
    let first_limit = last_key(i0);     // tiles up to the block's first row's last key are fully visible
    // this lane's dropout words: row r0 + ql % QR, keys 4 (ql / QR) .. of each step
    let my_row = bh * params.Tq + r0 + ql % QR;
    let my_keys = 4u * (ql / QR);

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        for (var s = lid; s < BK * DS; s += WG) {
            let j = j0 + s / DS;
            let d0 = (s % DS) * 4u;
            let kv = kv_quads(b, g, j, d0);
            k_tile[s] = kv.k;
            v_tile[s] = kv.v;
        }
        workgroupBarrier();
        let n = min(BK, u32(kv_end) - j0);
        let need_mask = i32(j0 + BK) > first_limit + 1 || j0 + BK > params.Tk;
        for (var jj = 0u; jj < n; jj += KS) {
            // sc[r KG + e][c]: row r0 + r, key j0 + jj + 4 e + c; this lane's columns, then the quad's
            var sc: array<vec4<f32>, QR * KG>;
            for (var t = 0u; t < QR * KG; t++) { sc[t] = vec4<f32>(); }
            for (var e = 0u; e < KG; e++) {
                for (var c = 0u; c < 4u; c++) {
                    for (var x = 0u; x < QL; x++) {
                        let kv = k_tile[(jj + 4u * e + c) * DS + ql + 4u * x];
                        for (var r = 0u; r < QR; r++) { sc[r * KG + e][c] = dot_fma(qr[r * QL + x], kv, sc[r * KG + e][c]); }
                    }
                }
            }
            for (var t = 0u; t < QR * KG; t++) {
                sc[t] += subgroupShuffleXor(sc[t], 1u);
                sc[t] += subgroupShuffleXor(sc[t], 2u);
            }
            if (need_mask) {
                for (var e = 0u; e < KG; e++) {
                    let keys = vec4<i32>(i32(j0 + jj + 4u * e)) + vec4<i32>(0, 1, 2, 3);
                    let in_range = keys < vec4<i32>(i32(params.Tk));
                    for (var r = 0u; r < QR; r++) {
                        sc[r * KG + e] = select(vec4<f32>(MASKED), sc[r * KG + e], in_range & (keys <= vec4<i32>(row_limit[r])));
                    }
                }
            }
            var keep = 0u;   // this lane's row and keys: bit c set when key j0 + jj + my_keys + c is kept
            if (params.dropout != 0u) {
                let z = dropout_factors4(my_row, j0 + jj + my_keys);   // a multiple of 4
                keep = select(0u, 1u, z.x != 0.0) | select(0u, 2u, z.y != 0.0) | select(0u, 4u, z.z != 0.0) |
                       select(0u, 8u, z.w != 0.0);
            }
            var pz: array<vec4<f32>, QR * KG>;
            for (var r = 0u; r < QR; r++) {
                var top = sc[r * KG];
                for (var e = 1u; e < KG; e++) { top = max(top, sc[r * KG + e]); }
                let m_new = max(m[r], max(max(top.x, top.y), max(top.z, top.w)));
                if (m_new > m[r]) {
                    let alpha = exp2(m[r] - m_new);
                    l[r] *= alpha;
                    for (var x = 0u; x < QL; x++) { o[r * QL + x] *= alpha; }
                    m[r] = m_new;
                }
                for (var e = 0u; e < KG; e++) {
                    let p = exp2(sc[r * KG + e] - vec4<f32>(m_new));
                    l[r] += (p.x + p.y) + (p.z + p.w);
                    pz[r * KG + e] = p;
                }
            }
            if (params.dropout != 0u) {
                for (var e = 0u; e < KG; e++) {
                    for (var r = 0u; r < QR; r++) {
                        let bits = vec4<u32>(subgroupShuffle(keep, quad_lane0 + e * QR + r)) >> vec4<u32>(0u, 1u, 2u, 3u);
                        pz[r * KG + e] *= select(vec4<f32>(0.0), vec4<f32>(params.keep_scale), (bits & vec4<u32>(1u)) != vec4<u32>(0u));
                    }
                }
            }
            for (var e = 0u; e < KG; e++) {
                for (var c = 0u; c < 4u; c++) {
                    for (var x = 0u; x < QL; x++) {
                        let vv = v_tile[(jj + 4u * e + c) * DS + ql + 4u * x];
                        for (var r = 0u; r < QR; r++) { o[r * QL + x] = fma(vec4<f32>(pz[r * KG + e][c]), vv, o[r * QL + x]); }
                    }
                }
            }
        }
        workgroupBarrier();   // the tiles are rewritten by the next step
    }

    for (var r = 0u; r < QR; r++) {
        let i = r0 + r;
        if (!quad_ok || i >= params.Tq) { continue; }
        let inv = select(0.0, 1.0 / l[r], l[r] > 0.0);
        let base = elem(params.offsets[1].y, params.o_st, b, h, i, 0u);   // out may be strided (o_st)
        for (var x = 0u; x < QL; x++) {
            let d0 = (ql + 4u * x) * 4u;
            for (var c = 0u; c < 4u; c++) {
                if (d0 + c < params.D) { out[base + (d0 + c) * params.o_st.w] = o[r * QL + x][c] * inv; }
            }
        }
        if (ql == 0u) {
            lse[params.offsets[1].z + bh * params.Tq + i] =
                select(bitcast<f32>(attn_quad_bits_ff800000), (m[r] + log2(l[r])) * LN2, l[r] > 0.0);
        }
    }
}
