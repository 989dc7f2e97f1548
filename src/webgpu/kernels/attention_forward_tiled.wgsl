// attention_forward_tiled: flash attention forward with register tiles, one
// workgroup per BQ query rows of one (b, h). Same inputs, outputs and results
// as attention_forward (see there); webgpu_attention.c runs it with
// WGT_ATTENTION_FORWARD=tiled when its tiles fit the device's workgroup memory
// (on an H100 it took 1.18 ms where attention_forward takes 0.87 ms).
//
// attention_forward gives each invocation a whole query row, so every multiply
// needs a shared-memory load of k or v. Here the products are blocked as in a
// GEMM: invocation (tr, tc) of TR x 8 computes the scores of 4 query rows
// (4 tr ..) x 4 keys (tc, tc + 8, ..) of each BK-key tile (8 shared loads per
// 16 four-wide products), then the output block of the same 4 rows x DC
// column quads (tc, tc + 8, ..): one load of 4 probabilities and DC loads of v
// per 4 * DC products. Between the two, one invocation per row turns the
// row's tile of scores into probabilities (online softmax: running max m and
// sum l in shared memory, the output rescaled by alpha = exp2(m_old - m_new)).
// Shared tiles: q [BQ][D4] (pre-scaled, loaded once), k and v [BK][D4] (rows
// padded by one vec4 against bank conflicts), p transposed [BK][BQ].

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> attn_tiled_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(1) var<storage, read> q: array<QKV_WORD>;   // ld_q
@group(0) @binding(2) var<storage, read> k: array<QKV_WORD>;   // ld_k
@group(0) @binding(3) var<storage, read> v: array<QKV_WORD>;   // ld_v
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const TR: u32 = BQ / 4u;          // invocation rows; each owns 4 query rows
const WG: u32 = TR * 8u;
const DC: u32 = (D4 + 7u) / 8u;   // output column quads per invocation
const QS: u32 = D4 + 1u;          // padded row stride (vec4) of the q, k, v tiles
const PS4: u32 = BQ / 4u + 1u;    // padded row stride (vec4) of the probability tile

var<workgroup> q_tile: array<vec4<f32>, BQ * QS>;
var<workgroup> k_tile: array<vec4<f32>, BK * QS>;
var<workgroup> v_tile: array<vec4<f32>, BK * QS>;
var<workgroup> p_tile: array<vec4<f32>, BK * PS4>;   // [key][row / 4][row % 4]
var<workgroup> m_row: array<f32, BQ>;
var<workgroup> l_row: array<f32, BQ>;
var<workgroup> alpha_row: array<f32, BQ>;

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
    for (var r = lid; r < BQ; r += WG) {
        m_row[r] = NO_MAX;
        l_row[r] = 0.0;
    }
    workgroupBarrier();

    var o: array<vec4<f32>, 4u * DC>;   // [row a][column quad c]
    var kv_end = i32(params.Tk);
    if (params.causal != 0u) { kv_end = clamp(last_key(min(i0 + BQ, params.Tq) - 1u) + 1, 0, i32(params.Tk)); }

    for (var j0 = 0u; i32(j0) < kv_end; j0 += BK) {
        for (var s = lid; s < BK * D4; s += WG) {
            let j = j0 + s / D4;
            let d0 = (s % D4) * 4u;
            let kv = kv_quads(b, g, j, d0);
            k_tile[(s / D4) * QS + s % D4] = kv.k;
            v_tile[(s / D4) * QS + s % D4] = kv.v;
        }
        workgroupBarrier();

        // scores of rows 4 tr + a, keys tc + 8 n (n < BK / 8)
        // [a][key group] -> 4 keys; zeroed by explicit stores: a declaration in a
        // loop is not reliably re-initialized on every iteration by every compiler
        var sc: array<vec4<f32>, 4u * (BK / 32u)>;
        for (var x = 0u; x < 4u * (BK / 32u); x++) { sc[x] = vec4<f32>(); }
        for (var d4 = 0u; d4 < D4; d4++) {
            var qv: array<vec4<f32>, 4>;
            for (var a = 0u; a < 4u; a++) { qv[a] = q_tile[(tr * 4u + a) * QS + d4]; }
            for (var n = 0u; n < BK / 8u; n++) {
                let kv = k_tile[(tc + 8u * n) * QS + d4];
                for (var a = 0u; a < 4u; a++) {
                    sc[a * (BK / 32u) + n / 4u][n % 4u] += dot(qv[a], kv);
                }
            }
        }
        for (var a = 0u; a < 4u; a++) {
            let r = tr * 4u + a;
            let limit = last_key(i0 + r);
            for (var n = 0u; n < BK / 8u; n++) {
                let j = tc + 8u * n;
                var s = sc[a * (BK / 32u) + n / 4u][n % 4u];
                if (j0 + j >= params.Tk || i32(j0 + j) > limit) { s = MASKED; }
                p_tile[j * PS4 + r / 4u][r % 4u] = s;
            }
        }
        workgroupBarrier();

        // online softmax, one invocation per row
        if (lid < BQ) {
            let r = lid;
            let row = bh * params.Tq + i0 + r;
            var mt = MASKED;
            for (var j = 0u; j < BK; j++) { mt = max(mt, p_tile[j * PS4 + r / 4u][r % 4u]); }
            let m_old = m_row[r];
            let m_new = max(m_old, mt);
            var sum = 0.0;
            for (var j = 0u; j < BK; j += 4u) {
                let z = dropout_factors4(row, j0 + j);
                for (var c = 0u; c < 4u; c++) {
                    let p = exp2(p_tile[(j + c) * PS4 + r / 4u][r % 4u] - m_new);
                    sum += p;
                    p_tile[(j + c) * PS4 + r / 4u][r % 4u] = p * z[c];
                }
            }
            let alpha = exp2(m_old - m_new);
            alpha_row[r] = alpha;
            m_row[r] = m_new;
            l_row[r] = l_row[r] * alpha + sum;
        }
        workgroupBarrier();

        // o = o * alpha + p v
        for (var a = 0u; a < 4u; a++) {
            let al = alpha_row[tr * 4u + a];
            for (var c = 0u; c < DC; c++) { o[a * DC + c] *= al; }
        }
        for (var j = 0u; j < BK; j++) {
            let pv = p_tile[j * PS4 + tr];
            for (var c = 0u; c < DC; c++) {
                let col = tc + 8u * c;
                if (col < D4) {
                    let vv = v_tile[j * QS + col];
                    for (var a = 0u; a < 4u; a++) { o[a * DC + c] = fma(vec4<f32>(pv[a]), vv, o[a * DC + c]); }
                }
            }
        }
        workgroupBarrier();
    }

    for (var a = 0u; a < 4u; a++) {
        let r = tr * 4u + a;
        let i = i0 + r;
        if (i >= params.Tq) { continue; }
        let l = l_row[r];
        let inv = select(0.0, 1.0 / l, l > 0.0);
        let base = elem(params.offsets[1].y, params.o_st, b, h, i, 0u);   // out may be strided (o_st)
        for (var c = 0u; c < DC; c++) {
            let col = tc + 8u * c;
            if (col >= D4) { continue; }
            for (var e = 0u; e < 4u; e++) {
                let d = col * 4u + e;
                if (d < params.D) { out[base + d * params.o_st.w] = o[a * DC + c][e] * inv; }
            }
        }
    }
    if (lid < BQ && i0 + lid < params.Tq) {
        let l = l_row[lid];
        lse[params.offsets[1].z + bh * params.Tq + i0 + lid] =
            select(bitcast<f32>(attn_tiled_bits_ff800000), (m_row[lid] + log2(l)) * LN2, l > 0.0);
    }
}
