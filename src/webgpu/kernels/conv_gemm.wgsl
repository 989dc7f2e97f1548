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
// Prelude (webgpu_conv.c): const MODE: u32, BM, BN (tile, multiples of 16), BK
// (depth of a K slice, 16). 256 invocations, each owning a 4 x 4 block of the
// BM x BN tile (register blocking: 16 accumulators, 8 shared loads per 16
// FMAs). Workgroups: x = column tiles, y = row tiles, z = group + groups *
// split.
//
// Loads: consecutive invocations take consecutive columns of B (consecutive
// output pixels: consecutive addresses of x or dy, so loads coalesce) and
// consecutive r of A (contiguous weights or dy). An invocation's B columns
// are the same for every K slice, so their (n, i, j) decomposition is done
// once, outside the loop.

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
const A_LOADS = BM * BK / WG;
const B_LOADS = BN * BK / WG;

var<workgroup> a_tile: array<f32, BK * BM>;   // [r][m]
var<workgroup> b_tile: array<f32, BK * BN>;   // [r][col]

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

    // this invocation's loads: B columns fixed, A rows fixed
    let b_col = t % BN;
    let b_r = t / BN;                 // + q * (WG / BN)
    let col = column_of(col0 + b_col);
    let a_r = t % BK;
    let a_m = t / BK;                 // + q * (WG / BK)

    // the 4 x 4 block: rows ty * 4 .. + 3, columns tx * 4 .. + 3
    let tx = t % (BN / 4u);
    let ty = t / (BN / 4u);
    var acc: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) { acc[i] = vec4<f32>(0.0); }

    for (var r0 = r_begin; r0 < r_end; r0 += BK) {
        for (var q = 0u; q < A_LOADS; q++) {
            let m = a_m + q * (WG / BK);
            a_tile[a_r * BM + m] = load_a(g, row0 + m, r0 + a_r, r_end);
        }
        for (var q = 0u; q < B_LOADS; q++) {
            let r = b_r + q * (WG / BN);
            b_tile[r * BN + b_col] = load_b(g, col, r0 + r, r_end);
        }
        workgroupBarrier();
        for (var r = 0u; r < BK; r++) {
            let a = vec4<f32>(a_tile[r * BM + ty * 4u], a_tile[r * BM + ty * 4u + 1u], a_tile[r * BM + ty * 4u + 2u],
                              a_tile[r * BM + ty * 4u + 3u]);
            let b = vec4<f32>(b_tile[r * BN + tx * 4u], b_tile[r * BN + tx * 4u + 1u], b_tile[r * BN + tx * 4u + 2u],
                              b_tile[r * BN + tx * 4u + 3u]);
            acc[0] = fma(vec4<f32>(a.x), b, acc[0]);
            acc[1] = fma(vec4<f32>(a.y), b, acc[1]);
            acc[2] = fma(vec4<f32>(a.z), b, acc[2]);
            acc[3] = fma(vec4<f32>(a.w), b, acc[3]);
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let m = row0 + ty * 4u + i;
        for (var j = 0u; j < 4u; j++) {
            store_out(g, split, m, col0 + tx * 4u + j, acc[i][j]);
        }
    }
}
