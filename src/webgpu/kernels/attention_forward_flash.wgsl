// attention_forward_flash: flash attention forward (FlashAttention-2 order)
// with register tiles and the softmax spread over every invocation.
//   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] -> out f32 [B, H, Tq, D] contiguous,
//   lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)
// Same inputs, outputs and results as attention_forward; webgpu_attention.c
// runs it with WGT_ATTENTION_FORWARD=flash where its tiles fit the workgroup
// memory (on an H100 it was slower than attention_forward: 1.23-1.34 ms
// against 0.87 ms at B 8, H 12, T 1024, D 64 causal).
//
// One workgroup per BQ query rows of one (b, h); invocation (tr, tc) of
// (BQ / 4) x 8 owns query rows 4 tr .. 4 tr + 3. Per tile of BK keys it
// computes the scores of its rows x keys tc, tc + 8, .. (NK of them) in
// registers, then the output block of its rows x column quads tc, tc + 8, ..
// The online softmax lives in registers too: the 8 invocations of a row group
// trade their partial row maxima through a small shared array (one barrier),
// each keeps the same running max m and its own partial sum l (rescaled with
// the output); the partial sums are added once at the end. attention_forward_
// tiled instead ran the softmax on one invocation per row between two barriers
// while the others waited, which dominated its time.
// Causal: tiles past the block's last visible key are never loaded; only tiles
// crossing the diagonal (or the end of the keys) are masked.
// Shared tiles: q [BQ][D4] (pre-scaled by scale * log2 e, loaded once), k, v
// [BK][D4] (rows padded by one vec4: the 8 invocations of a row group read 8
// different rows, 68 words apart, on distinct banks), p transposed [BK][BQ]
// (written and read as a vec4 of 4 rows).

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> attn_flash_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(1) var<storage, read> q: array<QKV_WORD>;   // ld_q
@group(0) @binding(2) var<storage, read> k: array<QKV_WORD>;   // ld_k
@group(0) @binding(3) var<storage, read> v: array<QKV_WORD>;   // ld_v
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const TR: u32 = BQ / 4u;          // invocation rows; each owns 4 query rows
const WG: u32 = TR * 8u;
const NK: u32 = BK / 8u;          // keys per invocation in a tile
const DC: u32 = (D4 + 7u) / 8u;   // output column quads per invocation
const QS: u32 = D4 + 1u;          // padded row stride (vec4) of the q, k, v tiles
const PS4: u32 = TR + 1u;         // padded row stride (vec4) of the probability tile

var<workgroup> q_tile: array<vec4<f32>, BQ * QS>;
var<workgroup> k_tile: array<vec4<f32>, BK * QS>;
var<workgroup> v_tile: array<vec4<f32>, BK * QS>;
var<workgroup> p_tile: array<vec4<f32>, BK * PS4>;   // [key][row / 4] -> 4 rows
var<workgroup> part: array<vec4<f32>, 8u * TR>;     // [tc][tr] -> partial max (sum) of 4 rows

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
    let tr = lid / 8u;
    let tc = lid % 8u;

    for (var s = lid; s < BQ * D4; s += WG) {
        let r = s / D4;
        let d0 = (s % D4) * 4u;
        let i = i0 + r;
        var qv = vec4<f32>();
        if (i < params.Tq) {
            for (var c = 0u; c < 4u; c++) {
                if (d0 + c < params.D) { qv[c] = ld_q(elem(params.offsets[0].x, params.q_st, b, h, i, d0 + c)) * params.scale_log2; }
            }
        }
        q_tile[r * QS + s % D4] = qv;
    }

    var o: array<vec4<f32>, 4u * DC>;   // [row a][column quad c]
    for (var x = 0u; x < 4u * DC; x++) { o[x] = vec4<f32>(); }
    var m = vec4<f32>(NO_MAX);          // running max of rows 4 tr + a (the same in all 8 invocations)
    var l = vec4<f32>();                // this invocation's share of the row sums
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }
    // the first row's last key: a tile up to it is fully visible to every row
    let first_limit = last_key(i0);

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        for (var s = lid; s < BK * D4; s += WG) {
            let j = j0 + s / D4;
            let d0 = (s % D4) * 4u;
            let kv = kv_quads(b, g, j, d0);
            k_tile[(s / D4) * QS + s % D4] = kv.k;
            v_tile[(s / D4) * QS + s % D4] = kv.v;
        }
        workgroupBarrier();

        // sc[n][a]: row 4 tr + a, key tc + 8 n. Zeroed by explicit stores: a
        // declaration in a loop is not reliably re-initialized by every compiler.
        var sc: array<vec4<f32>, NK>;
        for (var n = 0u; n < NK; n++) { sc[n] = vec4<f32>(); }
        for (var d4 = 0u; d4 < D4; d4++) {
            let q0 = q_tile[(tr * 4u) * QS + d4];
            let q1 = q_tile[(tr * 4u + 1u) * QS + d4];
            let q2 = q_tile[(tr * 4u + 2u) * QS + d4];
            let q3 = q_tile[(tr * 4u + 3u) * QS + d4];
            for (var n = 0u; n < NK; n++) {
                let kv = k_tile[(tc + 8u * n) * QS + d4];
                sc[n] += vec4<f32>(dot(q0, kv), dot(q1, kv), dot(q2, kv), dot(q3, kv));
            }
        }
        if (i32(j0 + BK) > first_limit + 1 || j0 + BK > params.Tk) {
            for (var n = 0u; n < NK; n++) {
                let j = j0 + tc + 8u * n;
                for (var a = 0u; a < 4u; a++) {
                    if (j >= params.Tk || i32(j) > last_key(i0 + tr * 4u + a)) { sc[n][a] = MASKED; }
                }
            }
        }
        var mt = sc[0];
        for (var n = 1u; n < NK; n++) { mt = max(mt, sc[n]); }
        part[tc * TR + tr] = mt;
        workgroupBarrier();

        for (var t = 0u; t < 8u; t++) { mt = max(mt, part[t * TR + tr]); }
        let m_new = max(m, mt);
        let alpha = exp2(m - m_new);
        m = m_new;
        var sum = vec4<f32>();
        for (var n = 0u; n < NK; n++) {
            let p = exp2(sc[n] - m_new);
            sum += p;
            var z = vec4<f32>(1.0);
            if (params.dropout != 0u) {
                let j = j0 + tc + 8u * n;
                let row = bh * params.Tq + i0 + tr * 4u;
                z = vec4<f32>(dropout_factor(row, j), dropout_factor(row + 1u, j), dropout_factor(row + 2u, j),
                              dropout_factor(row + 3u, j));
            }
            p_tile[(tc + 8u * n) * PS4 + tr] = p * z;
        }
        l = l * alpha + sum;
        for (var c = 0u; c < DC; c++) {
            o[c] *= alpha.x;
            o[DC + c] *= alpha.y;
            o[2u * DC + c] *= alpha.z;
            o[3u * DC + c] *= alpha.w;
        }
        workgroupBarrier();

        // o += p v over the tile's keys (masked keys have p == 0)
        for (var j = 0u; j < BK; j++) {
            let pv = p_tile[j * PS4 + tr];
            for (var c = 0u; c < DC; c++) {
                let col = tc + 8u * c;
                if (col < D4) {
                    let vv = v_tile[j * QS + col];
                    o[c] = fma(vec4<f32>(pv.x), vv, o[c]);
                    o[DC + c] = fma(vec4<f32>(pv.y), vv, o[DC + c]);
                    o[2u * DC + c] = fma(vec4<f32>(pv.z), vv, o[2u * DC + c]);
                    o[3u * DC + c] = fma(vec4<f32>(pv.w), vv, o[3u * DC + c]);
                }
            }
        }
        workgroupBarrier();   // the tiles and part are rewritten by the next step
    }

    // the row sums: add the 8 invocations' shares
    part[tc * TR + tr] = l;
    workgroupBarrier();
    var lt = vec4<f32>();
    for (var t = 0u; t < 8u; t++) { lt += part[t * TR + tr]; }

    for (var a = 0u; a < 4u; a++) {
        let r = tr * 4u + a;
        let i = i0 + r;
        if (i >= params.Tq) { continue; }
        let inv = select(0.0, 1.0 / lt[a], lt[a] > 0.0);
        let base = elem(params.offsets[1].y, params.o_st, b, h, i, 0u);   // out may be strided (o_st)
        for (var c = 0u; c < DC; c++) {
            let col = tc + 8u * c;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) { out[base + d * params.o_st.w] = o[a * DC + c][e] * inv; }
            }
        }
        if (tc == 0u) {
            lse[params.offsets[1].z + bh * params.Tq + i] = select(bitcast<f32>(attn_flash_bits_ff800000), (m[a] + log2(lt[a])) * LN2, lt[a] > 0.0);
        }
    }
}
