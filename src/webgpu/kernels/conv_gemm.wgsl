// conv_gemm: the three convolution kernels of WGT_KERNEL_CONV as one implicit
// GEMM, out[m, col] = sum over r of A(m, r) B(r, col), per group (and per
// stride phase for the input gradient; any of the three may also split r,
// split-K: always the weight gradient, the others when their output alone
// gives too few workgroups). No unfolded (im2col) tensor exists in device
// memory: each BK x BN tile of B is gathered from the NCHW tensor straight
// into workgroup memory, zeros where the window reaches padding.
//
//   MODE 0 CONV_FORWARD          A = w [K, C/g, KH, KW] as [K/g, C/g KH KW] per group
//                                B = unfolded x: r = (ci, a, b), col = (n, i, j)
//                                out = y [N, K, OH, OW] (+ bias[K])
//   MODE 1 CONV_BACKWARD_INPUT   A = w read as [C/g, K/g KH KW]: m = ci, r = (co, a, b)
//                                B = dy gathered: col = (n, ih, iw), the dy element
//                                whose window puts tap (a, b) on (ih, iw), if any
//                                out = dx [N, C, H, W]
//          PHASED                one GEMM per stride phase (ih % sh, iw % sw): col =
//                                (n, u, v) with ih = ph + sh u, iw = pw + sw v, and r
//                                runs over (co, the taps that can land on that phase)
//                                only, so no product with a structural zero is formed
//                                (a 3x3 stride 2 gradient does 1/4 of the unphased work;
//                                at stride 1 there is one phase)
//   MODE 2 CONV_BACKWARD_WEIGHT  A = dy: m = co, r = (n, i, j)
//                                B = unfolded x: col = (ci, a, b)
//                                out = dw [K, C/g, KH, KW]
//
// Prelude (webgpu_conv.c): const MODE: u32; PHASED, B_ALONG_R (MODE 2: B quads
// fetched along r, see Loads), RTAB (r_info from a per-slice table, see
// Loads), B_SPREAD (see slot_col), DBUF (double-buffered shared tiles, see
// main), CTAB (column table, see ctab): bool; the tile BM x BN (rows x columns of out per workgroup), BK
// (depth of one K slice), TM x TN (outputs per invocation, multiples of 4)
// with (BM / TM) (BN / TN) = WG invocations (256; 128 or 64 for the 8 x 8
// blocks of the WGT_CONV_V2 tiles), and PAD (0 or 1 vec4 of padding
// per shared tile row).
// Workgroups: x = column tiles, y = row tiles, z = group + groups (phase +
// phases split). With splits, out is [splits][out's size] (a temporary that
// conv_splitk_reduce.wgsl sums in order).
//
// Shared tiles are k-major vec4 arrays, a_tile [NBUF][BK][BM / 4 + PAD] and
// b_tile [NBUF][BK][BN / 4 + PAD]: each invocation fetches quads of 4 rows of
// A (or columns of B) at one r and stores each as one vec4, and reads its
// operands back as vec4s (128-bit shared loads). Invocation (tx, ty) owns the
// row slots ty, ty + BM / TM, ... and column slots tx, tx + BN / TN, ...:
// neighbouring invocations read neighbouring vec4s, free of bank conflicts.
// Quads stored along r (A always, B in MODE 2) would put 8 neighbouring
// invocations' vec4 stores on one bank; the PAD vec4 per row spreads them.
//
// Loads: an operand that is contiguous along r (weights, dy in MODE 2, x in
// MODE 2) is fetched with consecutive invocations on consecutive r, so a warp's
// loads cover runs of neighbouring pixels; the gathered B of MODE 0 and 1 is
// fetched with consecutive invocations on consecutive column slots, whose
// columns are neighbouring output or input pixels (B_SPREAD). An invocation's
// B columns are the same for every K slice, so their decomposition is done
// once, before the loop; with RTAB, the decomposition of each r of the next
// slice (integer divisions by the kernel and plane sizes) is done by BK
// invocations into the table rtab, so a load is an add, two bounds tests and
// a multiply-add.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    k: u32, oh: u32, ow: u32, kh: u32,
    kw: u32, stride_h: u32, stride_w: u32, pad_top: u32,
    pad_left: u32, dil_h: u32, dil_w: u32, cg: u32,       // cg = c / groups
    kg: u32, rows: u32, cols: u32, depth: u32,              // kg = k / groups; the GEMM's M, N, K
    a_offset: u32, b_offset: u32, out_offset: u32, bias_offset: u32,
    split_len: u32, has_bias: u32, groups: u32, out_split: u32,   // out_split: elements per split of out
    step_h: u32, step_w: u32, phases: u32, pad2: u32,       // PHASED: sh / gcd(sh, dil_h), sw / gcd(sw, dil_w), sh sw (else 1)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a_src: array<f32>;   // MODE 0, 1: w; MODE 2: dy
@group(0) @binding(2) var<storage, read> b_src: array<f32>;   // MODE 0, 2: x; MODE 1: dy
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const WG = (BM / TM) * (BN / TN);                 // invocations: 256, or 128 / 64 for the "w" tiles
const A_QUADS = BM * BK / 4u;                      // quads of A per K slice
const B_QUADS = BN * BK / 4u;
const A_LOADS = (A_QUADS + WG - 1u) / WG;          // per invocation (the last may be partial: small tiles)
const B_LOADS = (B_QUADS + WG - 1u) / WG;
const RQ = TM / 4u;                                // row quads per invocation
const CQ = TN / 4u;                                // column quads per invocation
const A_ROW = BM / 4u + PAD;                       // vec4s per r of the shared tiles
const B_ROW = BN / 4u + PAD;

const NBUF = select(1u, 2u, DBUF);                 // copies of the shared tiles (and of rtab)

var<workgroup> a_tile: array<vec4<f32>, NBUF * BK * A_ROW>;   // [buffer][r][row quad]
var<workgroup> b_tile: array<vec4<f32>, NBUF * BK * B_ROW>;   // [buffer][r][column quad]

// PHASED: this workgroup's stride phase (ph, pw), its first taps (a0, b0) and
// tap counts (na, nb); the dy pixel of column (u, v) at phase tap (ta, tb) is
// (u + off_h - ta dh, v + off_w - tb dw).
struct Phase {
    ph: u32, pw: u32, a0: u32, b0: u32,
    na: u32, nb: u32, hu: u32, wv: u32,
    off_h: i32, off_w: i32, dh: i32, dw: i32,
}
var<private> phase: Phase;

// The first tap a < min(k, s) with a dil = p + pad (mod s), or k if none: the
// taps landing on phase p are a0, a0 + step, ... (step = s / gcd(s, dil)).
fn first_tap(p: u32, pad: u32, dil: u32, s: u32, k: u32) -> u32 {
    let want = (p + pad % s) % s;
    for (var a = 0u; a < min(k, s); a++) {
        if (((a % s) * (dil % s)) % s == want) { return a; }
    }
    return k;
}

// Phase `index` (ph = index / sw, pw = index % sw). A value returned, not
// stored in `phase` directly: the caller's loop bounds come from it, and WGSL's
// uniformity analysis (Tint's in browsers) takes anything read back from a
// module-scope private variable as non-uniform, so a barrier in a loop
// bounded by phase.na failed to compile there.
fn phase_of(index: u32) -> Phase {
    var phase: Phase;
    let sh = params.stride_h;
    let sw = params.stride_w;
    phase.ph = index / sw;
    phase.pw = index % sw;
    phase.a0 = first_tap(phase.ph, params.pad_top, params.dil_h, sh, params.kh);
    phase.b0 = first_tap(phase.pw, params.pad_left, params.dil_w, sw, params.kw);
    phase.na = select(0u, (params.kh - phase.a0 + params.step_h - 1u) / params.step_h, phase.a0 < params.kh);
    phase.nb = select(0u, (params.kw - phase.b0 + params.step_w - 1u) / params.step_w, phase.b0 < params.kw);
    phase.hu = select(0u, (params.h - phase.ph + sh - 1u) / sh, phase.ph < params.h);
    phase.wv = select(0u, (params.w - phase.pw + sw - 1u) / sw, phase.pw < params.w);
    // exact divisions: a0 dil = ph + pad (mod sh), and step dil is a multiple of sh
    phase.off_h = (i32(phase.ph + params.pad_top) - i32(phase.a0 * params.dil_h)) / i32(sh);
    phase.off_w = (i32(phase.pw + params.pad_left) - i32(phase.b0 * params.dil_w)) / i32(sw);
    phase.dh = i32(params.step_h * params.dil_h / sh);
    phase.dw = i32(params.step_w * params.dil_w / sw);
    return phase;
}

// What a reduction index r contributes to the addresses (the divisions that
// split r into its coordinates, done once per r instead of once per load):
//   x: A's element offset; w: B's element offset (added to a column's base);
//   y, z: row / column offsets (i32) added to a column's.
//   MODE 0, r = (ci, a, b): x = A's r, y = a dil_h - pad_top, z = b dil_w - pad_left, w = ci H W
//   MODE 1, r = (co, tap):  x = A's offset of (co, tap) at m = 0, w = co OH OW,
//                           y, z: PHASED: off - t d (dy row / column offsets);
//                           unphased: pad - a dil (the dy pixel is (q + y) / sh when divisible)
//   MODE 2, r = (n, i, j):  x = A's offset at m = 0, w = n C H W,
//                           y = i sh - pad_top, z = j sw - pad_left
struct RInfo {
    x: u32, w: u32, y: i32, z: i32,
}

fn r_info(g: u32, r: u32) -> RInfo {
    var o: RInfo;
    let taps = params.kh * params.kw;
    if (MODE == 0u) {
        let t = r % taps;
        o.x = params.a_offset + g * params.kg * params.depth + r;
        o.w = (r / taps) * params.h * params.w;
        o.y = i32((t / params.kw) * params.dil_h) - i32(params.pad_top);
        o.z = i32((t % params.kw) * params.dil_w) - i32(params.pad_left);
    } else if (MODE == 1u && PHASED) {
        let pt = max(phase.na * phase.nb, 1u);
        let co = r / pt;
        let t = r % pt;
        let ta = t / max(phase.nb, 1u);
        let tb = t % max(phase.nb, 1u);
        let tap = (phase.a0 + ta * params.step_h) * params.kw + phase.b0 + tb * params.step_w;
        o.x = params.a_offset + (g * params.kg + co) * params.cg * taps + tap;
        o.w = co * params.oh * params.ow;
        o.y = phase.off_h - i32(ta) * phase.dh;
        o.z = phase.off_w - i32(tb) * phase.dw;
    } else if (MODE == 1u) {
        let co = r / taps;
        let t = r % taps;
        o.x = params.a_offset + (g * params.kg + co) * params.cg * taps + t;
        o.w = co * params.oh * params.ow;
        o.y = i32(params.pad_top) - i32((t / params.kw) * params.dil_h);
        o.z = i32(params.pad_left) - i32((t % params.kw) * params.dil_w);
    } else {
        let plane = params.oh * params.ow;
        let n = r / plane;
        let rest = r % plane;
        o.x = params.a_offset + n * params.k * plane + rest;
        o.w = n * params.c * params.h * params.w;
        o.y = i32((rest / params.ow) * params.stride_h) - i32(params.pad_top);
        o.z = i32((rest % params.ow) * params.stride_w) - i32(params.pad_left);
    }
    return o;
}

// A(m, ri) of group g (m within the group), zero past the rows.
fn load_a(g: u32, m: u32, ri: RInfo) -> f32 {
    if (m >= params.rows) { return 0.0; }
    if (MODE == 0u) { return a_src[ri.x + m * params.depth]; }
    if (MODE == 1u) { return a_src[ri.x + m * params.kh * params.kw]; }
    return a_src[ri.x + (g * params.kg + m) * params.oh * params.ow];
}

// A column of B, decomposed once, as the base offset of its plane(s) and the
// row / column it adds to r's: MODE 0 output pixel (n, i, j): base of x[n, g
// cg], (i sh, j sw); MODE 1 input pixel (n, ih, iw) (PHASED: (n, u, v) of the
// phase): base of dy[n, g kg], (ih, iw) (PHASED (u, v)); MODE 2 tap (ci, a,
// b): base of x[., g cg + ci], (a dil_h, b dil_w).
struct Column {
    valid: bool,
    base: u32, q: i32, s: i32,
}

fn column_of(g: u32, col: u32) -> Column {
    var c: Column;
    c.valid = col < params.cols;
    if (MODE == 0u) {
        let plane = params.oh * params.ow;
        let rest = col % plane;
        c.base = params.b_offset + ((col / plane) * params.c + g * params.cg) * params.h * params.w;
        c.q = i32((rest / params.ow) * params.stride_h);
        c.s = i32((rest % params.ow) * params.stride_w);
    } else if (MODE == 1u) {
        var hu = params.h;
        var wv = params.w;
        if (PHASED) {
            hu = phase.hu;
            wv = phase.wv;
            c.valid = col < params.n * hu * wv;
        }
        if (c.valid) {
            let plane = hu * wv;
            let rest = col % plane;
            c.base = params.b_offset + ((col / plane) * params.k + g * params.kg) * params.oh * params.ow;
            c.q = i32(rest / wv);
            c.s = i32(rest % wv);
        }
    } else {
        let taps = params.kh * params.kw;
        let rest = col % taps;
        c.base = params.b_offset + (g * params.cg + col / taps) * params.h * params.w;
        c.q = i32((rest / params.kw) * params.dil_h);
        c.s = i32((rest % params.kw) * params.dil_w);
    }
    return c;
}

// B(ri, col), zero in the padding (x) or where no output pixel is (dy).
fn load_b(col: Column, ri: RInfo) -> f32 {
    if (!col.valid) { return 0.0; }
    var i = col.q + ri.y;
    var j = col.s + ri.z;
    if (MODE == 1u && !PHASED) {
        if (i < 0 || j < 0 || u32(i) % params.stride_h != 0u || u32(j) % params.stride_w != 0u) { return 0.0; }
        i = i32(u32(i) / params.stride_h);
        j = i32(u32(j) / params.stride_w);
    }
    // negative coordinates wrap to large u32: one comparison per bound
    if (MODE == 1u) {
        if (u32(i) >= params.oh || u32(j) >= params.ow) { return 0.0; }
        return b_src[col.base + ri.w + u32(i) * params.ow + u32(j)];
    }
    if (u32(i) >= params.h || u32(j) >= params.w) { return 0.0; }
    return b_src[col.base + ri.w + u32(i) * params.w + u32(j)];
}

// The epilogue's addresses split into a column part and a row part, so the
// divisions by the plane sizes are done once per column, not per element:
// out's element (m, col) is at out_base + col_part(col) + row_part(m).
// col_part is NONE for a column past the edge (or outside this phase).
const NONE = 0xffffffffu;

fn col_part(col: u32) -> u32 {
    if (col >= params.cols) { return NONE; }
    if (MODE == 0u) {
        let plane = params.oh * params.ow;
        return (col / plane) * params.k * plane + col % plane;
    }
    if (MODE == 1u && PHASED) {
        let plane = phase.hu * phase.wv;
        if (col >= params.n * plane) { return NONE; }
        let rest = col % plane;
        let ih = phase.ph + params.stride_h * (rest / phase.wv);
        let iw = phase.pw + params.stride_w * (rest % phase.wv);
        return (col / plane) * params.c * params.h * params.w + ih * params.w + iw;
    }
    if (MODE == 1u) {
        let plane = params.h * params.w;
        return (col / plane) * params.c * plane + col % plane;
    }
    return col;
}

fn row_part(g: u32, m: u32) -> u32 {
    if (MODE == 0u) { return (g * params.kg + m) * params.oh * params.ow; }
    if (MODE == 1u) { return (g * params.cg + m) * params.h * params.w; }
    return (g * params.kg + m) * params.cols;
}

// The column of the tile that component e of b_tile slot j holds. B_SPREAD:
// j + e BN / 4, so that component e of the quads of neighbouring invocations
// (neighbouring slots) is neighbouring columns: each load instruction of a
// warp reads one contiguous run of pixels (and the epilogue's stores are
// contiguous too). Else 4 j + e (each load instruction strides 4 columns).
// The multiply does not care which columns a slot holds.
fn slot_col(j: u32, e: u32) -> u32 {
    if (B_SPREAD) { return j + e * (BN / 4u); }
    return j * 4u + e;
}

// Where quad number `quad` of a K slice sits: its r within the slice and its
// row (or column) quad. A quads run along r; B quads along the columns, or
// along r when B_ALONG_R.
fn a_r(quad: u32) -> u32 { return quad % BK; }
fn a_rq(quad: u32) -> u32 { return quad / BK; }
fn b_r(quad: u32) -> u32 { return select(quad / (BN / 4u), quad % BK, B_ALONG_R); }
fn b_cq(quad: u32) -> u32 { return select(quad % (BN / 4u), quad / BK, B_ALONG_R); }

var<workgroup> rtab: array<RInfo, NBUF * BK>;   // RTAB: [buffer][r] r_info of the slice being fetched

// CTAB (WGT_CONV_V2 "ctab"): the 4 columns of each b_tile slot, decomposed
// once per workgroup into workgroup memory, read back (3 shared loads) at each
// fetch: without it every invocation keeps its B quads' Columns in registers
// (16 per quad), which next to the 8 x 8 block's 64 accumulators pushed the
// kernel past 128 registers (one workgroup of 256 per SM, nothing else to run
// while a slice waits on its loads; BK 16, 2 more vec4 registers, measured
// 1.5-2x slower). A column past the edge has q = COL_NONE, so its bounds
// tests fail: no separate validity flag.
struct ColQuad {
    base: vec4<u32>, q: vec4<i32>, s: vec4<i32>,
}
const COL_NONE = -0x40000000;
var<workgroup> ctab: array<ColQuad, select(1u, BN / 4u, CTAB)>;   // [b_tile column slot]

fn col_quad(g: u32, col0: u32, slot: u32) -> ColQuad {
    var o: ColQuad;
    for (var e = 0u; e < 4u; e++) {
        let c = column_of(g, col0 + slot_col(slot, e));
        o.base[e] = c.base;
        o.q[e] = select(COL_NONE, c.q, c.valid);
        o.s[e] = c.s;
    }
    return o;
}

// Column e of a ctab entry (valid: its q carries the edge).
fn quad_col(c: ColQuad, e: u32) -> Column {
    return Column(true, c.base[e], c.q[e], c.s[e]);
}

// r_info of r0 + rl: from buffer buf of the table (RTAB, filled by BK
// invocations per slice) or computed here (every load then pays the divisions).
fn info_of(g: u32, r0: u32, rl: u32, buf: u32) -> RInfo {
    if (RTAB) { return rtab[buf * BK + rl]; }
    return r_info(g, r0 + rl);
}

// This invocation's quads of the K slice starting at r0, zeros past the edges.
fn fetch(g: u32, row0: u32, r0: u32, r_end: u32, t: u32, buf: u32, cols: ptr<function, array<Column, B_LOADS * 4u>>,
         a_regs: ptr<function, array<vec4<f32>, A_LOADS>>, b_regs: ptr<function, array<vec4<f32>, B_LOADS>>) {
    for (var q = 0u; q < A_LOADS; q++) {
        let quad = t + q * WG;
        if (quad < A_QUADS) {
            (*a_regs)[q] = vec4<f32>(0.0);
            if (r0 + a_r(quad) < r_end) {
                let ri = info_of(g, r0, a_r(quad), buf);
                let m = row0 + a_rq(quad) * 4u;
                (*a_regs)[q] = vec4<f32>(load_a(g, m, ri), load_a(g, m + 1u, ri), load_a(g, m + 2u, ri),
                                         load_a(g, m + 3u, ri));
            }
        }
    }
    for (var q = 0u; q < B_LOADS; q++) {
        let quad = t + q * WG;
        if (quad < B_QUADS) {
            (*b_regs)[q] = vec4<f32>(0.0);
            if (r0 + b_r(quad) < r_end) {
                let ri = info_of(g, r0, b_r(quad), buf);
                if (CTAB) {
                    let c = ctab[b_cq(quad)];
                    (*b_regs)[q] = vec4<f32>(load_b(quad_col(c, 0u), ri), load_b(quad_col(c, 1u), ri),
                                             load_b(quad_col(c, 2u), ri), load_b(quad_col(c, 3u), ri));
                } else {
                    (*b_regs)[q] = vec4<f32>(load_b((*cols)[q * 4u], ri), load_b((*cols)[q * 4u + 1u], ri),
                                             load_b((*cols)[q * 4u + 2u], ri), load_b((*cols)[q * 4u + 3u], ri));
                }
            }
        }
    }
}

// The fetched quads into buffer buf of the shared tiles.
fn store_slice(buf: u32, t: u32, a_regs: ptr<function, array<vec4<f32>, A_LOADS>>,
               b_regs: ptr<function, array<vec4<f32>, B_LOADS>>) {
    for (var q = 0u; q < A_LOADS; q++) {
        let quad = t + q * WG;
        if (quad < A_QUADS) { a_tile[(buf * BK + a_r(quad)) * A_ROW + a_rq(quad)] = (*a_regs)[q]; }
    }
    for (var q = 0u; q < B_LOADS; q++) {
        let quad = t + q * WG;
        if (quad < B_QUADS) { b_tile[(buf * BK + b_r(quad)) * B_ROW + b_cq(quad)] = (*b_regs)[q]; }
    }
}

// acc += this invocation's TM x TN block of the slice in buffer buf.
fn multiply(buf: u32, tx: u32, ty: u32, acc: ptr<function, array<vec4<f32>, RQ * TN>>) {
    for (var r = 0u; r < BK; r++) {
        var b: array<vec4<f32>, CQ>;
        for (var h = 0u; h < CQ; h++) { b[h] = b_tile[(buf * BK + r) * B_ROW + tx + h * (BN / TN)]; }
        for (var gq = 0u; gq < RQ; gq++) {
            let a = a_tile[(buf * BK + r) * A_ROW + ty + gq * (BM / TM)];
            for (var h = 0u; h < CQ; h++) {
                let base = (gq * 4u) * CQ + h;
                (*acc)[base] = fma(vec4<f32>(a.x), b[h], (*acc)[base]);
                (*acc)[base + CQ] = fma(vec4<f32>(a.y), b[h], (*acc)[base + CQ]);
                (*acc)[base + 2u * CQ] = fma(vec4<f32>(a.z), b[h], (*acc)[base + 2u * CQ]);
                (*acc)[base + 3u * CQ] = fma(vec4<f32>(a.w), b[h], (*acc)[base + 3u * CQ]);
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = wid.z % params.groups;
    let split = wid.z / (params.groups * params.phases);
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    var depth = params.depth;
    if (MODE == 1u && PHASED) {
        let p = phase_of((wid.z / params.groups) % params.phases);
        phase = p;
        depth = params.kg * p.na * p.nb;   // 0 for a phase no tap lands on: zeros are stored
    }
    // split-K: this split's part of r (empty past a phase's depth: zeros are stored)
    let r_begin = min(depth, split * params.split_len);
    let r_end = min(depth, r_begin + params.split_len);

    // this invocation's B quads: 4 columns each, decomposed once
    var cols: array<Column, B_LOADS * 4u>;
    if (CTAB) {
        for (var j = t; j < BN / 4u; j += WG) { ctab[j] = col_quad(g, col0, j); }
        workgroupBarrier();   // (uniform: CTAB is a constant)
    } else {
        for (var q = 0u; q < B_LOADS; q++) {
            let quad = t + q * WG;
            for (var e = 0u; e < 4u; e++) {
                cols[q * 4u + e] = column_of(g, col0 + slot_col(b_cq(quad), e));
            }
        }
    }

    let tx = t % (BN / TN);
    let ty = t / (BN / TN);
    var acc: array<vec4<f32>, RQ * TN>;   // [row i of the block][column quad]
    for (var i = 0u; i < RQ * TN; i++) { acc[i] = vec4<f32>(0.0); }

    // Software pipelining: the next slice's quads are fetched into registers
    // before the current slice is multiplied, so their global loads are in
    // flight meanwhile. DBUF: two copies of the tiles (and of rtab, filled two
    // slices ahead), one barrier per slice: the stores into the other copy
    // only overwrite what every invocation finished reading before the last
    // barrier. Else one copy and two barriers per slice.
    var a_regs: array<vec4<f32>, A_LOADS>;
    var b_regs: array<vec4<f32>, B_LOADS>;
    if (RTAB) {
        // the first NBUF slices' r_info
        if (t < NBUF * BK && r_begin + t < r_end) { rtab[t] = r_info(g, r_begin + t); }
        workgroupBarrier();
    }
    fetch(g, row0, r_begin, r_end, t, 0u, &cols, &a_regs, &b_regs);
    if (DBUF) {
        store_slice(0u, t, &a_regs, &b_regs);
        workgroupBarrier();
        var cur = 0u;
        for (var r0 = r_begin; r0 < r_end; r0 += BK) {
            let more = r0 + BK < r_end;
            if (more) { fetch(g, row0, r0 + BK, r_end, t, cur ^ 1u, &cols, &a_regs, &b_regs); }
            multiply(cur, tx, ty, &acc);
            if (more) { store_slice(cur ^ 1u, t, &a_regs, &b_regs); }
            // rtab copy cur (this slice's, read by the previous fetch) takes the slice after next
            if (RTAB && t < BK && r0 + 2u * BK + t < r_end) { rtab[cur * BK + t] = r_info(g, r0 + 2u * BK + t); }
            workgroupBarrier();
            cur ^= 1u;
        }
    } else {
        for (var r0 = r_begin; r0 < r_end; r0 += BK) {
            workgroupBarrier();   // every invocation is done reading the previous slice
            store_slice(0u, t, &a_regs, &b_regs);
            // the next slice's r_info: every invocation is past its reads of this one (barrier above)
            if (RTAB && t < BK && r0 + BK + t < r_end) { rtab[t] = r_info(g, r0 + BK + t); }
            workgroupBarrier();
            if (r0 + BK < r_end) { fetch(g, row0, r0 + BK, r_end, t, 0u, &cols, &a_regs, &b_regs); }
            multiply(0u, tx, ty, &acc);
        }
    }
    // split `split`'s copy of out (out_split elements apart: split-K's
    // partials; the bias goes into split 0 only)
    let out_base = params.out_offset + split * params.out_split;
    for (var h = 0u; h < CQ; h++) {
        let slot = tx + h * (BN / TN);
        let cp = vec4<u32>(col_part(col0 + slot_col(slot, 0u)), col_part(col0 + slot_col(slot, 1u)),
                           col_part(col0 + slot_col(slot, 2u)), col_part(col0 + slot_col(slot, 3u)));
        for (var gq = 0u; gq < RQ; gq++) {
            for (var i = 0u; i < 4u; i++) {
                let m = row0 + (ty + gq * (BM / TM)) * 4u + i;
                if (m >= params.rows) { continue; }
                var v = acc[(gq * 4u + i) * CQ + h];
                if (MODE == 0u && params.has_bias != 0u && split == 0u) {
                    v = v + vec4<f32>(bias[params.bias_offset + g * params.kg + m]);
                }
                let at = out_base + row_part(g, m);
                if (cp.x != NONE) { out[at + cp.x] = v.x; }
                if (cp.y != NONE) { out[at + cp.y] = v.y; }
                if (cp.z != NONE) { out[at + cp.z] = v.z; }
                if (cp.w != NONE) { out[at + cp.w] = v.w; }
            }
        }
    }
}
