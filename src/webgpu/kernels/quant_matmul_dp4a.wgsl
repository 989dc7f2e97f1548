// quant_matmul_dp4a: QMATMUL with int8_x (backend.h), the second pass: x's
// 8-bit codes (quant_rows_int8.wgsl) times the weights' 8- or 4-bit codes
// with WGSL's dot4I8Packed (four int8 products and their sum in one
// instruction: DP4A on NVIDIA).
//   xq u32 [M, K / 4] (int8 codes, byte 0 first), xs f32 [M, K / 32],
//   qweight u32 [N, K * BITS / 32], scales f32 [N, K / 32] -> out f32 [M, N]
//   out[m, n] = sum over groups g, in order, of
//               f32(isum(m, n, g)) * (xs[m, g] * scales[n, g])
// where isum is the exact integer sum of the group's 32 code products.
// Why: the f32 tiled kernel (quant_matmul_tiled.wgsl) dequantizes into f32
// and runs one FMA per product, with two shared-memory words per four FMAs;
// here one instruction does four products and a shared-memory word holds four
// codes (an H100 ran dot4I8Packed at ~1.8x its f32 FMA rate in products).
//
// Tiles: a workgroup owns BM x BN outputs (prelude: BM, BN, TM, TN, BITS;
// webgpu_quant_int8.c) and walks K one group (32 k) at a time. Shared tiles
// hold a group's codes as 2 vec4<u32> a row (x rows, weight rows), padded to 3
// so that 8 lanes of a 128-bit access phase hit distinct banks; 4-bit weights
// are widened to int8 bytes as they are stored. Invocation (tx, ty) owns rows
// ty + i BM / TM and columns tx + j BN / TN; the next group is fetched into
// registers while this one is multiplied, then stored into the other of two
// shared buffers: one barrier a group.
// A group's integer sum stays below 32 * 127 * 127 < 2^22 in magnitude, so it
// is kept offset by 1.5 * 2^23 (MAGIC): the bits then read as an f32 whose
// value minus 1.5 * 2^23 is the sum, exactly (one add instead of a slower
// int-to-float conversion).

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    xq_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // xq, q in vec4 units; s, out in elements
    tiles_m: u32, tiles_n: u32, _p1: u32, _p2: u32,
}

const WG: u32 = (BM / TM) * (BN / TN);
const ROWV: u32 = 3u;                       // vec4s per shared row: a group's 8 code words + padding
const X_QUADS: u32 = BM * 2u;               // vec4<u32> of x codes per group
const X_LOADS: u32 = (X_QUADS + WG - 1u) / WG;
const QPR: u32 = BITS / 4u;                 // vec4<u32> of weight codes per row and group (8 bits: 2, 4 bits: 1)
const W_QUADS: u32 = BN * QPR;
const W_LOADS: u32 = (W_QUADS + WG - 1u) / WG;
const XS_LOADS: u32 = (BM + WG - 1u) / WG;
const MAGIC: i32 = 0x4b400000;              // bits of f32 1.5 * 2^23
const MAGIC_F: f32 = 12582912.0;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> xs: array<f32>;

var<workgroup> xt: array<vec4<u32>, 2u * BM * ROWV>;   // [buffer][row][2 code vec4s + pad]
var<workgroup> wt: array<vec4<u32>, 2u * BN * ROWV>;   // [buffer][column][2 code vec4s + pad]
var<workgroup> xst: array<f32, 2u * BM>;               // [buffer][row]
var<workgroup> wst: array<f32, 2u * BN>;

struct Slice {
    x: array<vec4<u32>, X_LOADS>,
    w: array<vec4<u32>, W_LOADS>,
    s: array<f32, W_LOADS>,
    xs: array<f32, XS_LOADS>,
}

// Group g of x rows row0.. and weight rows col0..; zeros past M and N.
fn fetch(row0: u32, col0: u32, g: u32, lid: u32) -> Slice {
    var r: Slice;
    let G = params.K / 32u;
    for (var j = 0u; j < X_LOADS; j++) {
        let i = lid + j * WG;
        let m = row0 + i / 2u;
        r.x[j] = vec4<u32>();
        if ((X_QUADS % WG == 0u || i < X_QUADS) && m < params.M) {
            r.x[j] = xq[params.xq_offset + m * (G * 2u) + g * 2u + i % 2u];
        }
    }
    for (var j = 0u; j < XS_LOADS; j++) {
        let i = lid + j * WG;
        r.xs[j] = 0.0;
        if ((BM % WG == 0u || i < BM) && row0 + i < params.M) { r.xs[j] = xs[(row0 + i) * G + g]; }
    }
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        let n = col0 + i / QPR;
        r.w[j] = vec4<u32>();
        r.s[j] = 0.0;
        if ((W_QUADS % WG == 0u || i < W_QUADS) && n < params.N) {
            r.w[j] = q[params.q_offset + n * (G * QPR) + g * QPR + i % QPR];
            if (i % QPR == 0u) { r.s[j] = scales[params.s_offset + n * G + g]; }
        }
    }
    return r;
}

// Four 4-bit codes (nibbles 0..3 of t's low 16 bits, low first) as int8 bytes
// code - 8: the low nibble of b - 8 is b ^ 8, the high one 0xf when b < 8.
fn widen_nibbles(t: u32) -> u32 {
    let b = (t & 0xfu) | ((t & 0xf0u) << 4u) | ((t & 0xf00u) << 8u) | ((t & 0xf000u) << 12u);
    return (b ^ 0x08080808u) | ((~b & 0x08080808u) * 30u);
}

fn put(r: Slice, lid: u32, buf: u32) {
    let xb = buf * BM * ROWV;
    let wb = buf * BN * ROWV;
    for (var j = 0u; j < X_LOADS; j++) {
        let i = lid + j * WG;
        if (X_QUADS % WG == 0u || i < X_QUADS) { xt[xb + (i / 2u) * ROWV + i % 2u] = r.x[j]; }
    }
    for (var j = 0u; j < XS_LOADS; j++) {
        let i = lid + j * WG;
        if (BM % WG == 0u || i < BM) { xst[buf * BM + i] = r.xs[j]; }
    }
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        if (W_QUADS % WG != 0u && i >= W_QUADS) { continue; }
        let c = i / QPR;
        let w = r.w[j];
        if (BITS == 8u) {
            wt[wb + c * ROWV + i % QPR] = w;
        } else {   // 32 nibbles: words of 8 codes -> two words of 4 int8 codes each
            wt[wb + c * ROWV] = vec4<u32>(widen_nibbles(w.x), widen_nibbles(w.x >> 16u), widen_nibbles(w.y), widen_nibbles(w.y >> 16u));
            wt[wb + c * ROWV + 1u] = vec4<u32>(widen_nibbles(w.z), widen_nibbles(w.z >> 16u), widen_nibbles(w.w), widen_nibbles(w.w >> 16u));
        }
        if (i % QPR == 0u) { wst[buf * BN + c] = r.s[j]; }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.tiles_m * params.tiles_n) { return; }   // uniform per workgroup
    let row0 = (id % params.tiles_m) * BM;
    let col0 = (id / params.tiles_m) * BN;
    let tx = lid % (BN / TN);
    let ty = lid / (BN / TN);
    let G = params.K / 32u;

    var acc: array<f32, TM * TN>;
    var r = fetch(row0, col0, 0u, lid);
    put(r, lid, 0u);
    workgroupBarrier();
    for (var g = 0u; g < G; g++) {
        let cur = g & 1u;
        let more = g + 1u < G;
        if (more) { r = fetch(row0, col0, g + 1u, lid); }
        var isum: array<i32, TM * TN>;
        for (var o = 0u; o < TM * TN; o++) { isum[o] = MAGIC; }
        for (var h = 0u; h < 2u; h++) {
            var av: array<vec4<u32>, TM>;
            var bv: array<vec4<u32>, TN>;
            for (var i = 0u; i < TM; i++) { av[i] = xt[(cur * BM + ty + i * (BM / TM)) * ROWV + h]; }
            for (var j = 0u; j < TN; j++) { bv[j] = wt[(cur * BN + tx + j * (BN / TN)) * ROWV + h]; }
            for (var i = 0u; i < TM; i++) {
                for (var j = 0u; j < TN; j++) {
                    let a = av[i];
                    let b = bv[j];
                    isum[i * TN + j] += dot4I8Packed(a.x, b.x) + dot4I8Packed(a.y, b.y) + dot4I8Packed(a.z, b.z) +
                                        dot4I8Packed(a.w, b.w);
                }
            }
        }
        for (var i = 0u; i < TM; i++) {
            let sx = xst[cur * BM + ty + i * (BM / TM)];
            for (var j = 0u; j < TN; j++) {
                let v = bitcast<f32>(isum[i * TN + j]) - MAGIC_F;
                acc[i * TN + j] += v * (sx * wst[cur * BN + tx + j * (BN / TN)]);
            }
        }
        // the other buffer was last read in group g - 1, before the barrier
        // that ended it: group g + 1 goes there, then one barrier a group
        if (more) { put(r, lid, cur ^ 1u); }
        workgroupBarrier();
    }

    for (var i = 0u; i < TM; i++) {
        let m = row0 + ty + i * (BM / TM);
        if (m >= params.M) { continue; }
        for (var j = 0u; j < TN; j++) {
            let n = col0 + tx + j * (BN / TN);
            if (n < params.N) { out[params.out_offset + m * params.N + n] = acc[i * TN + j]; }
        }
    }
}
