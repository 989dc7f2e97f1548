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
// Tiles: a workgroup owns BM x BN outputs (prelude: BM, BN, TM, TN, BITS, GPS;
// webgpu_quant_int8.c) and walks K GPS groups (32 k each) at a time. Shared
// tiles hold a slice's codes as 2 GPS vec4<u32> a row (x rows, weight rows),
// padded by one so that 8 lanes of a 128-bit access phase hit distinct banks;
// 4-bit weights are widened to int8 bytes as they are stored. Invocation (tx, ty) owns rows
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
const ROWV: u32 = 2u * GPS + 1u;            // vec4s per shared row: a slice's code words + padding
const X_QUADS: u32 = BM * 2u * GPS;         // vec4<u32> of x codes per slice
const X_LOADS: u32 = (X_QUADS + WG - 1u) / WG;
const QPR: u32 = BITS / 4u;                 // vec4<u32> of weight codes per row and group (8 bits: 2, 4 bits: 1)
const W_QUADS: u32 = BN * QPR * GPS;
const W_LOADS: u32 = (W_QUADS + WG - 1u) / WG;
const XS_N: u32 = BM * GPS;                 // x scales per slice
const XS_LOADS: u32 = (XS_N + WG - 1u) / WG;
const MAGIC: i32 = 0x4b400000;              // bits of f32 1.5 * 2^23
const MAGIC_F: f32 = 12582912.0;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> xs: array<f32>;

var<workgroup> xt: array<vec4<u32>, 2u * BM * ROWV>;   // [buffer][row][group][2 code vec4s], padded rows
var<workgroup> wt: array<vec4<u32>, 2u * BN * ROWV>;   // [buffer][column][group][2 code vec4s], padded rows
var<workgroup> xst: array<f32, 2u * BM * GPS>;         // [buffer][row][group]
var<workgroup> wst: array<f32, 2u * BN * GPS>;         // [buffer][column][group]

struct Slice {
    x: array<vec4<u32>, X_LOADS>,
    w: array<vec4<u32>, W_LOADS>,
    s: array<f32, W_LOADS>,
    xs: array<f32, XS_LOADS>,
}

// Slice sl (groups GPS sl ..) of x rows row0.. and weight rows col0..; zeros
// past M, N and the last group.
fn fetch(row0: u32, col0: u32, sl: u32, lid: u32) -> Slice {
    var r: Slice;
    let G = params.K / 32u;
    let g0 = sl * GPS;
    for (var j = 0u; j < X_LOADS; j++) {
        let i = lid + j * WG;
        let m = row0 + i / (2u * GPS);
        let within = i % (2u * GPS);
        r.x[j] = vec4<u32>();
        if ((X_QUADS % WG == 0u || i < X_QUADS) && m < params.M && g0 + within / 2u < G) {
            r.x[j] = xq[params.xq_offset + m * (G * 2u) + g0 * 2u + within];
        }
    }
    for (var j = 0u; j < XS_LOADS; j++) {
        let i = lid + j * WG;
        let m = row0 + i / GPS;
        let g = g0 + i % GPS;
        r.xs[j] = 0.0;
        if ((XS_N % WG == 0u || i < XS_N) && m < params.M && g < G) { r.xs[j] = xs[m * G + g]; }
    }
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        let n = col0 + i / (QPR * GPS);
        let within = i % (QPR * GPS);
        let g = g0 + within / QPR;
        r.w[j] = vec4<u32>();
        r.s[j] = 0.0;
        if ((W_QUADS % WG == 0u || i < W_QUADS) && n < params.N && g < G) {
            r.w[j] = q[params.q_offset + n * (G * QPR) + g0 * QPR + within];
            if (within % QPR == 0u) { r.s[j] = scales[params.s_offset + n * G + g]; }
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
        if (X_QUADS % WG == 0u || i < X_QUADS) { xt[xb + (i / (2u * GPS)) * ROWV + i % (2u * GPS)] = r.x[j]; }
    }
    for (var j = 0u; j < XS_LOADS; j++) {
        let i = lid + j * WG;
        if (XS_N % WG == 0u || i < XS_N) { xst[buf * XS_N + i] = r.xs[j]; }
    }
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        if (W_QUADS % WG != 0u && i >= W_QUADS) { continue; }
        let c = i / (QPR * GPS);
        let within = i % (QPR * GPS);
        let gg = within / QPR;
        let w = r.w[j];
        let at = wb + c * ROWV + 2u * gg;
        if (BITS == 8u) {
            wt[at + within % QPR] = w;
        } else {   // a group's 32 nibbles -> two vec4s of 4 int8 codes a word
            wt[at] = vec4<u32>(widen_nibbles(w.x), widen_nibbles(w.x >> 16u), widen_nibbles(w.y), widen_nibbles(w.y >> 16u));
            wt[at + 1u] = vec4<u32>(widen_nibbles(w.z), widen_nibbles(w.z >> 16u), widen_nibbles(w.w), widen_nibbles(w.w >> 16u));
        }
        if (within % QPR == 0u) { wst[(buf * BN + c) * GPS + gg] = r.s[j]; }
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
    let slices = (params.K / 32u + GPS - 1u) / GPS;

    var acc: array<f32, TM * TN>;
    var r = fetch(row0, col0, 0u, lid);
    put(r, lid, 0u);
    workgroupBarrier();
    for (var sl = 0u; sl < slices; sl++) {
        let cur = sl & 1u;
        let more = sl + 1u < slices;
        if (more) { r = fetch(row0, col0, sl + 1u, lid); }
        for (var gg = 0u; gg < GPS; gg++) {
            var isum: array<i32, TM * TN>;
            for (var o = 0u; o < TM * TN; o++) { isum[o] = MAGIC; }
            for (var h = 0u; h < 2u; h++) {
                var av: array<vec4<u32>, TM>;
                var bv: array<vec4<u32>, TN>;
                for (var i = 0u; i < TM; i++) { av[i] = xt[(cur * BM + ty + i * (BM / TM)) * ROWV + 2u * gg + h]; }
                for (var j = 0u; j < TN; j++) { bv[j] = wt[(cur * BN + tx + j * (BN / TN)) * ROWV + 2u * gg + h]; }
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
                let sx = xst[(cur * BM + ty + i * (BM / TM)) * GPS + gg];
                for (var j = 0u; j < TN; j++) {
                    let v = bitcast<f32>(isum[i * TN + j]) - MAGIC_F;
                    acc[i * TN + j] += v * (sx * wst[(cur * BN + tx + j * (BN / TN)) * GPS + gg]);
                }
            }
        }
        // the other buffer was last read in slice sl - 1, before the barrier
        // that ended it: slice sl + 1 goes there, then one barrier a slice
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
