// conv_gemm: the three convolution kernels of WGT_KERNEL_CONV as one implicit
// GEMM, out[m, col] = sum over r of A(m, r) B(r, col), per group (and per
// split of r for the weight gradient). No unfolded (im2col) tensor exists in
// device memory: each BK x BN tile of B is gathered from the NCHW tensor
// straight into workgroup memory, zeros where the window reaches padding.
//
//   MODE 0 CONV_FORWARD          A = w [K, C/g, KH, KW] as [K/g, C/g KH KW] per group
//                                B = unfolded x: r = (ci, a, b), col = (n, i, j)
//                                out = y [N, K, OH, OW] (+ bias[K])
//   MODE 1 CONV_BACKWARD_INPUT   A = w read as [C/g, K/g KH KW]: m = ci, r = (co, a, b)
//                                B = dy gathered: col = (n, ih, iw), the dy element
//                                whose window puts tap (a, b) on (ih, iw), if any
//                                out = dx [N, C, H, W]
//   MODE 2 CONV_BACKWARD_WEIGHT  A = dy: m = co, r = (n, i, j)
//                                B = unfolded x: col = (ci, a, b)
//                                out = partial dw [splits, K, C/g, KH, KW]
//
// Prelude (webgpu_conv.c): const MODE: u32; the tile BM x BN (rows x columns
// of out per workgroup), BK (depth of one K slice) and TM x TN (outputs per
// invocation, multiples of 4), with (BM / TM) (BN / TN) = 256 invocations:
// 64 x 64 tiles of 4 x 4 blocks for small problems (more workgroups), 128 x 128
// tiles of 8 x 8 blocks for large ones (twice the arithmetic per shared load).
// Workgroups: x = column tiles, y = row tiles, z = group + groups * split.
//
// Shared tiles are k-major vec4 arrays, a_tile [BK][BM / 4] and b_tile
// [BK][BN / 4]: each invocation fetches quads of 4 neighbouring rows of A (or
// columns of B) at one r and stores each as one vec4, and reads its operands
// back as vec4s (128-bit shared loads). Invocation (tx, ty) owns the row
// quads ty, ty + BM / TM, ... and column quads tx, tx + BN / TN, ...:
// neighbouring invocations read neighbouring vec4s, free of bank conflicts.
//
// Loads: consecutive invocations fetch consecutive r of A (contiguous weights
// or dy along r) and consecutive column quads of B (consecutive output pixels:
// neighbouring addresses of x or dy, so loads coalesce). An invocation's B
// columns are the same for every K slice, so their (n, i, j) decomposition is
// done once, before the loop; the r decomposition is shared by the quad.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    k: u32, oh: u32, ow: u32, kh: u32,
    kw: u32, stride_h: u32, stride_w: u32, pad_top: u32,
    pad_left: u32, dil_h: u32, dil_w: u32, cg: u32,       // cg = c / groups
    kg: u32, rows: u32, cols: u32, depth: u32,              // kg = k / groups; the GEMM's M, N, K
    a_offset: u32, b_offset: u32, out_offset: u32, bias_offset: u32,
    split_len: u32, has_bias: u32, groups: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a_src: array<f32>;   // MODE 0, 1: w; MODE 2: dy
@group(0) @binding(2) var<storage, read> b_src: array<f32>;   // MODE 0, 2: x; MODE 1: dy
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const WG = 256u;
const A_QUADS = BM * BK / 4u;                      // quads of A per K slice
const B_QUADS = BN * BK / 4u;
const A_LOADS = A_QUADS / WG;                      // per invocation (BM * BK is a multiple of 4 WG)
const B_LOADS = B_QUADS / WG;
const RQ = TM / 4u;                                // row quads per invocation
const CQ = TN / 4u;                                // column quads per invocation

var<workgroup> a_tile: array<vec4<f32>, BK * BM / 4u>;   // [r][row quad]
var<workgroup> b_tile: array<vec4<f32>, BK * BN / 4u>;   // [r][column quad]

// A(m, r) of group g; r is the absolute reduction index; zero outside.
fn load_a(g: u32, m: u32, r: u32, r_end: u32) -> f32 {
    if (m >= params.rows || r >= r_end) { return 0.0; }
    let taps = params.kh * params.kw;
    if (MODE == 0u) {
        return a_src[params.a_offset + (g * params.kg + m) * params.depth + r];
    }
    if (MODE == 1u) {
        let co = r / taps;
        return a_src[params.a_offset + ((g * params.kg + co) * params.cg + m) * taps + r % taps];
    }
    let plane = params.oh * params.ow;
    let n = r / plane;
    return a_src[params.a_offset + (n * params.k + g * params.kg + m) * plane + r % plane];
}

// A column of B, decomposed once: MODE 0 (n, i, j) of the output pixel, MODE 1
// (n, ih, iw) of the input pixel, MODE 2 (ci, a, b) of the tap.
struct Column {
    valid: bool,
    p: u32, q: i32, s: i32,
}

fn column_of(col: u32) -> Column {
    var c: Column;
    c.valid = col < params.cols;
    if (MODE == 0u) {
        let plane = params.oh * params.ow;
        c.p = col / plane;
        let rest = col % plane;
        c.q = i32(rest / params.ow);
        c.s = i32(rest % params.ow);
    } else if (MODE == 1u) {
        let plane = params.h * params.w;
        c.p = col / plane;
        let rest = col % plane;
        c.q = i32(rest / params.w);
        c.s = i32(rest % params.w);
    } else {
        let taps = params.kh * params.kw;
        c.p = col / taps;
        let rest = col % taps;
        c.q = i32(rest / params.kw);
        c.s = i32(rest % params.kw);
    }
    return c;
}

// x[n, g cg + ci, ih, iw], zero in the padding.
fn x_at(g: u32, n: u32, ci: u32, ih: i32, iw: i32) -> f32 {
    if (ih < 0 || iw < 0 || ih >= i32(params.h) || iw >= i32(params.w)) { return 0.0; }
    return b_src[params.b_offset + ((n * params.c + g * params.cg + ci) * params.h + u32(ih)) * params.w + u32(iw)];
}

fn load_b(g: u32, col: Column, r: u32, r_end: u32) -> f32 {
    if (!col.valid || r >= r_end) { return 0.0; }
    let taps = params.kh * params.kw;
    if (MODE == 0u) {
        let ci = r / taps;
        let t = r % taps;
        let ih = col.q * i32(params.stride_h) - i32(params.pad_top) + i32((t / params.kw) * params.dil_h);
        let iw = col.s * i32(params.stride_w) - i32(params.pad_left) + i32((t % params.kw) * params.dil_w);
        return x_at(g, col.p, ci, ih, iw);
    }
    if (MODE == 1u) {
        let co = r / taps;
        let t = r % taps;
        let th = col.q + i32(params.pad_top) - i32((t / params.kw) * params.dil_h);
        let tw = col.s + i32(params.pad_left) - i32((t % params.kw) * params.dil_w);
        if (th < 0 || tw < 0) { return 0.0; }
        let i = u32(th) / params.stride_h;
        let j = u32(tw) / params.stride_w;
        if (u32(th) % params.stride_h != 0u || u32(tw) % params.stride_w != 0u || i >= params.oh || j >= params.ow) {
            return 0.0;
        }
        return b_src[params.b_offset + ((col.p * params.k + g * params.kg + co) * params.oh + i) * params.ow + j];
    }
    let plane = params.oh * params.ow;
    let n = r / plane;
    let rest = r % plane;
    let ih = i32(rest / params.ow) * i32(params.stride_h) - i32(params.pad_top) + col.q * i32(params.dil_h);
    let iw = i32(rest % params.ow) * i32(params.stride_w) - i32(params.pad_left) + col.s * i32(params.dil_w);
    return x_at(g, n, col.p, ih, iw);
}

fn store_out(g: u32, split: u32, m: u32, col: u32, v: f32) {
    if (m >= params.rows || col >= params.cols) { return; }
    if (MODE == 0u) {
        let plane = params.oh * params.ow;
        let co = g * params.kg + m;
        var y = v;
        if (params.has_bias != 0u) { y = y + bias[params.bias_offset + co]; }
        out[params.out_offset + ((col / plane) * params.k + co) * plane + col % plane] = y;
    } else if (MODE == 1u) {
        let plane = params.h * params.w;
        out[params.out_offset + ((col / plane) * params.c + g * params.cg + m) * plane + col % plane] = v;
    } else {
        let wsize = params.k * params.cols;
        out[params.out_offset + split * wsize + (g * params.kg + m) * params.cols + col] = v;
    }
}

// This invocation's quads of the K slice starting at r0: A quads along the
// rows (quad / BK) at r = quad % BK, B quads along the columns at r = quad /
// (BN / 4), zeros past the edges.
fn fetch(g: u32, row0: u32, r0: u32, r_end: u32, t: u32, cols: ptr<function, array<Column, B_LOADS * 4u>>,
         a_regs: ptr<function, array<vec4<f32>, A_LOADS>>, b_regs: ptr<function, array<vec4<f32>, B_LOADS>>) {
    for (var q = 0u; q < A_LOADS; q++) {
        let quad = t + q * WG;
        let r = r0 + quad % BK;
        let m = row0 + (quad / BK) * 4u;
        (*a_regs)[q] = vec4<f32>(load_a(g, m, r, r_end), load_a(g, m + 1u, r, r_end), load_a(g, m + 2u, r, r_end),
                                 load_a(g, m + 3u, r, r_end));
    }
    for (var q = 0u; q < B_LOADS; q++) {
        let quad = t + q * WG;
        let r = r0 + quad / (BN / 4u);
        (*b_regs)[q] = vec4<f32>(load_b(g, (*cols)[q * 4u], r, r_end), load_b(g, (*cols)[q * 4u + 1u], r, r_end),
                                 load_b(g, (*cols)[q * 4u + 2u], r, r_end), load_b(g, (*cols)[q * 4u + 3u], r, r_end));
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = wid.z % params.groups;
    let split = wid.z / params.groups;
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    var r_begin = 0u;
    var r_end = params.depth;
    if (MODE == 2u) {
        r_begin = split * params.split_len;
        r_end = min(params.depth, r_begin + params.split_len);
    }

    // this invocation's B quads: 4 columns each, decomposed once
    var cols: array<Column, B_LOADS * 4u>;
    for (var q = 0u; q < B_LOADS; q++) {
        let quad = t + q * WG;
        for (var e = 0u; e < 4u; e++) {
            cols[q * 4u + e] = column_of(col0 + (quad % (BN / 4u)) * 4u + e);
        }
    }

    let tx = t % (BN / TN);
    let ty = t / (BN / TN);
    var acc: array<vec4<f32>, RQ * TN>;   // [row i of the block][column quad]
    for (var i = 0u; i < RQ * TN; i++) { acc[i] = vec4<f32>(0.0); }

    // Software pipelining: the next slice's quads are fetched into registers
    // right after the current slice reaches workgroup memory, so their global
    // loads are in flight while the current slice is multiplied.
    var a_regs: array<vec4<f32>, A_LOADS>;
    var b_regs: array<vec4<f32>, B_LOADS>;
    fetch(g, row0, r_begin, r_end, t, &cols, &a_regs, &b_regs);
    for (var r0 = r_begin; r0 < r_end; r0 += BK) {
        workgroupBarrier();   // every invocation is done reading the previous slice
        for (var q = 0u; q < A_LOADS; q++) {
            let quad = t + q * WG;
            a_tile[(quad % BK) * (BM / 4u) + quad / BK] = a_regs[q];
        }
        for (var q = 0u; q < B_LOADS; q++) {
            let quad = t + q * WG;
            b_tile[(quad / (BN / 4u)) * (BN / 4u) + quad % (BN / 4u)] = b_regs[q];
        }
        workgroupBarrier();
        if (r0 + BK < r_end) {
            fetch(g, row0, r0 + BK, r_end, t, &cols, &a_regs, &b_regs);
        }
        for (var r = 0u; r < BK; r++) {
            var b: array<vec4<f32>, CQ>;
            for (var h = 0u; h < CQ; h++) { b[h] = b_tile[r * (BN / 4u) + tx + h * (BN / TN)]; }
            for (var gq = 0u; gq < RQ; gq++) {
                let a = a_tile[r * (BM / 4u) + ty + gq * (BM / TM)];
                for (var h = 0u; h < CQ; h++) {
                    let base = (gq * 4u) * CQ + h;
                    acc[base] = fma(vec4<f32>(a.x), b[h], acc[base]);
                    acc[base + CQ] = fma(vec4<f32>(a.y), b[h], acc[base + CQ]);
                    acc[base + 2u * CQ] = fma(vec4<f32>(a.z), b[h], acc[base + 2u * CQ]);
                    acc[base + 3u * CQ] = fma(vec4<f32>(a.w), b[h], acc[base + 3u * CQ]);
                }
            }
        }
    }
    for (var gq = 0u; gq < RQ; gq++) {
        for (var i = 0u; i < 4u; i++) {
            let m = row0 + (ty + gq * (BM / TM)) * 4u + i;
            for (var h = 0u; h < CQ; h++) {
                let v = acc[(gq * 4u + i) * CQ + h];
                let c = col0 + (tx + h * (BN / TN)) * 4u;
                store_out(g, split, m, c, v.x);
                store_out(g, split, m, c + 1u, v.y);
                store_out(g, split, m, c + 2u, v.z);
                store_out(g, split, m, c + 3u, v.w);
            }
        }
    }
}
