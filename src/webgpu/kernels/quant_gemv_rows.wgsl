// quant_gemv_rows: the decode form (M = 1) of QMATMUL laid out like
// matmul_gemv_half: ROW_THREADS invocations per output row, each streaming
// 16-byte words of the row's codes, UNROLL words in flight per step.
//   x [1, K] f32, qweight [N, K * BITS / 32] u32 words, scales [N, K / 32] f32
//   -> out [1, N] f32 (same layout and Params as quant_matmul.wgsl)
// Why: quant_gemv gives 64 invocations to a block of 4 rows and walks one
// 32-weight group per step; in Llama-3.2-1B decode on an H100 its products
// moved ~0.25 TB/s (WGT_PROFILE), a tenth of what the f16 rows kernel moves
// on the same weights. Here each word is one load of 16 bytes (BITS 4: 32
// codes, one group and its scale; BITS 8: 16 codes, half a group), the x
// elements it multiplies (8 or 4 vec4, read through L1: the rows of a
// workgroup read the same x) and one scale, with several independent words
// in flight per invocation, as the f16 kernel does.
// x: lane l of a row reads the x of word w = l + ROW_THREADS i, XV vec4s at
// XV w: addresses XV * 16 bytes apart across a warp, so every x load touched
// 32 cache lines (H100: the 4-bit head moved 0.16-0.3 TB/s against 2.8 for
// the f16 kernel on the same shape). With XS > 0 the workgroup first copies x
// into workgroup memory (coalesced), one padding vec4 after every XV, so the
// lanes' reads land on distinct banks; XS = 0 (x too large for workgroup
// memory) reads x from storage as before.
// Fusions (wgt_qlinear_ex; all need XS > 0, the row staged): NORM: the
// staged row is RMS-normalized with the weight aux [K] (the sum of squares
// over the workgroup, a tree, rsqrt(mean + eps), then (x * rstd) * w); BIAS:
// aux [N] is added to each sum; SWIGLU: rows 2i and 2i + 1 (gate and up, in
// one workgroup since ROWS is even) give out[i] = silu(g) * u. x may be f16
// (the prelude's x_load unpacks it; staged as f32).
// RPT (prelude: 1, 2 or 4) consecutive rows per invocation: a word's x
// vec4s (128 bytes of workgroup memory at 4 bits, against 16 of codes) are
// read once for the RPT rows' words; at RPT 1 those reads bounded the kernel.
// Each row's sum takes the same operations in the same order whatever RPT is.
// ROPE (prelude; wgt_qlinear_rope_into in LLM decode, with NORM): RPT = 2
// and an invocation's rows are a head's i and i + D2 (D = 2 D2): row pair p
// (the workgroup's first pair + slot) is head p / D2, i = p % D2. Lane 0
// stores both sums rotated by the table (binding 6, rope_load) as
// WGT_ROPE_ROWS_EXPR computes them (ew_opaque pins each rounding; its
// uniform zero is params._p0), or as they are for heads in [rope_pass_begin,
// rope_pass_end), through rope_store (out f32 or f16, rounded to nearest
// even): the q/k/v projection and the rotation into the KV cache in one
// dispatch.
// INT8_X (prelude; QMATMUL's int8_x, wgt_set_matmul_precision MEDIUM): the
// row (staged and normalized first with NORM, else read as it is) is
// quantized per group of 32 (quant_q8_group.wgsl's rule, prepended: the same
// codes and scales as quant_rows_int8 and the CPU's), into workgroup memory
// as 8-bit codes (K bytes; without NORM no f32 row, XS 0), and a word's products
// are dot4I8Packed of its codes and x's: four products an instruction
// (DP4A on NVIDIA) where the f32 path spent ~5 instructions a weight on
// unpacking and FMAs, which bounded 4-bit decode GEMVs below the memory's
// rate. A 4-bit word is one group: its even and odd nibbles (c & 0x0f0f0f0f,
// (c >> 4) & 0x0f0f0f0f) meet x's codes of the group's even and odd elements
// (staged apart), and the codes' offset of 8 comes off as 8 times the sum of
// x's codes of the group. An 8-bit word is half a group. Each word adds
// f32(its integer sum) * (s_x * s_w) to its lane's f32 sum.
// Prelude: ROW_THREADS (a power of two <= 256), UNROLL (words in flight per
// step), BITS (4 or 8), XS (vec4 slots of the staged x, 0: not staged),
// NORM, BIAS, SWIGLU, INT8_X and XG (groups of x, K / 32, with INT8_X), PRE
// (INT8_X: the first words loaded before the prologue), and the x binding
// with its x_load(i) (vec4 i as f32).
// Word w of row n holds weights WPW w .. WPW w + WPW - 1 with WPW = 128 /
// BITS; the group of its scale is w * WPW / 32.
// The sum of a row is the f32 sum over its words in a fixed order (each
// invocation's words in order, then a tree over the invocations), so results
// are deterministic; they differ from quant_gemv's in rounding only.

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    x_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // x, q in vec4 units; s, out in elements
    row_blocks: u32, _p0: u32, aux_offset: u32, eps: f32,           // aux in elements (NORM, BIAS)
    rope_offset: u32, rope_row: u32, rope_pass_begin: u32, rope_pass_end: u32,   // ROPE's table (elements)
}

const WG: u32 = 256u;
const SLOTS: u32 = WG / ROW_THREADS;   // row groups per workgroup
const ROWS: u32 = SLOTS * RPT;         // rows per workgroup
const WPW: u32 = 128u / BITS;          // weights per 16-byte word
const XV: u32 = WPW / 4u;              // x vec4s per word
const WPG: u32 = 32u / WPW;            // words per scale group

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
// out (binding 4) in the prelude: array<f32>, or array<OUT_T> with ROPE
@group(0) @binding(5) var<storage, read> aux: array<f32>;   // NORM: weight [K]; BIAS: bias [N]; else unused

var<workgroup> partial: array<f32, WG * RPT>;   // [r][lid]; NORM's tree uses [0][lid]
var<workgroup> xs: array<vec4<f32>, max(XS, 1u)>;   // x, a padding slot after every XV (XS > 0)
// INT8_X: x's codes, 16 a vec4 (BITS 8: word w's at [w]; BITS 4: group g's
// even elements' at [g], its odd ones' at [XG + g]), each group's scale and
// (BITS 4) the sum of its codes
var<workgroup> xq: array<vec4<u32>, select(1u, 2u * XG, INT8_X)>;
var<workgroup> xq_scale: array<f32, select(1u, XG, INT8_X)>;
var<workgroup> xq_sum: array<vec4<i32>, select(1u, XG, INT8_X)>;    // [group][quarter]
var<workgroup> xq_amax: array<vec4<u32>, select(1u, XG, INT8_X)>;   // [group][quarter]: max |x| bits

// x's vec4 i (elements 4 i .. 4 i + 3)
fn xv(i: u32) -> vec4<f32> {
    if (XS > 0u) { return xs[i + i / XV]; }
    return x_load(params.x_offset + i);
}

// Codes to floats without an integer-to-float conversion (a quarter-rate
// instruction on NVIDIA, four per 4 codes): a code c in the low mantissa bits
// of 2^23 is the float 2^23 + c, exactly, so subtracting 2^23 + 8 (4 bits) or
// 2^23 + 128 (8 bits, stored c + 128 after flipping the sign bit) gives the
// same values as quant_codes.wgsl's conversions, exactly.
const MAGIC: u32 = 0x4b000000u;   // 2^23
fn nib_lo(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w, w >> 4u, w >> 8u, w >> 12u) & vec4<u32>(15u)) | vec4<u32>(MAGIC)) -
           vec4<f32>(8388616.0);
}
fn nib_hi(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w >> 16u, w >> 20u, w >> 24u, w >> 28u) & vec4<u32>(15u)) | vec4<u32>(MAGIC)) -
           vec4<f32>(8388616.0);
}
fn byte4(w: u32) -> vec4<f32> {
    let b = w ^ 0x80808080u;   // int8 -> int8 + 128, as unsigned bytes
    return bitcast<vec4<f32>>((vec4<u32>(b, b >> 8u, b >> 16u, b >> 24u) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) -
           vec4<f32>(8388736.0);
}

// word w's x vec4s (XV of them; BITS 8 uses the first 4)
fn word_x(w: u32) -> array<vec4<f32>, 8> {
    var xw: array<vec4<f32>, 8>;
    for (var i = 0u; i < XV; i++) { xw[i] = xv(w * XV + i); }
    return xw;
}

// The dot product of word w of row n (scaled by its group's scale) with x
// (its word_x).
fn word_dot(row_words: u32, row_groups: u32, n: u32, w: u32, xw: array<vec4<f32>, 8>) -> f32 {
    let c = q[params.q_offset + n * row_words + w];
    var d: f32;
    if (BITS == 4u) {
        d = (dot(nib_lo(c.x), xw[0]) + dot(nib_hi(c.x), xw[1])) +
            (dot(nib_lo(c.y), xw[2]) + dot(nib_hi(c.y), xw[3])) +
            (dot(nib_lo(c.z), xw[4]) + dot(nib_hi(c.z), xw[5])) +
            (dot(nib_lo(c.w), xw[6]) + dot(nib_hi(c.w), xw[7]));
    } else {
        d = (dot(byte4(c.x), xw[0]) + dot(byte4(c.y), xw[1])) +
            (dot(byte4(c.z), xw[2]) + dot(byte4(c.w), xw[3]));
    }
    return d * scales[params.s_offset + n * row_groups + w / WPG];
}

// INT8_X: x's codes, scale and code sum for word w (BITS 4: group w; BITS 8:
// half of group w / 2)
struct XCodes { even: vec4<u32>, odd: vec4<u32>, scale: f32, sum: i32 }
fn word_xq(w: u32) -> XCodes {
    if (BITS == 4u) {
        let q = xq_sum[w];
        return XCodes(xq[w], xq[XG + w], xq_scale[w], (q.x + q.y) + (q.z + q.w));
    }
    return XCodes(xq[w], vec4<u32>(), xq_scale[w / 2u], 0);
}

// INT8_X: word_dot's integer form for code word c of scale sw: f32(the
// word's integer sum) * (s_x * sw)
fn word_dot_xq(c: vec4<u32>, sw: f32, xc: XCodes) -> f32 {
    var isum: i32;
    if (BITS == 4u) {
        let m = 0x0f0f0f0fu;
        isum = dot4I8Packed(c.x & m, xc.even.x) + dot4I8Packed((c.x >> 4u) & m, xc.odd.x) +
               dot4I8Packed(c.y & m, xc.even.y) + dot4I8Packed((c.y >> 4u) & m, xc.odd.y) +
               dot4I8Packed(c.z & m, xc.even.z) + dot4I8Packed((c.z >> 4u) & m, xc.odd.z) +
               dot4I8Packed(c.w & m, xc.even.w) + dot4I8Packed((c.w >> 4u) & m, xc.odd.w) - 8 * xc.sum;
    } else {
        isum = dot4I8Packed(c.x, xc.even.x) + dot4I8Packed(c.y, xc.even.y) + dot4I8Packed(c.z, xc.even.z) +
               dot4I8Packed(c.w, xc.even.w);
    }
    return f32(isum) * (xc.scale * sw);
}

// Word w of row n and its scale
struct RowWord { c: vec4<u32>, sw: f32 }
fn row_word(row_words: u32, row_groups: u32, n: u32, w: u32) -> RowWord {
    return RowWord(q[params.q_offset + n * row_words + w], scales[params.s_offset + n * row_groups + w / WPG]);
}

// Word w of each of the invocation's rows into its sums' slot u: with
// INT8_X the integer products with x's codes (PRE: the lane's first step,
// first, takes the words loaded before the prologue, pre[.][u]), else the
// f32 products with x.
fn add_word(rows: array<u32, RPT>, row_words: u32, row_groups: u32, w: u32, u: u32, first: bool,
            pre: ptr<function, array<array<RowWord, UNROLL>, RPT>>,
            accs: ptr<function, array<array<f32, UNROLL>, RPT>>) {
    if (INT8_X) {
        let xc = word_xq(w);
        for (var r = 0u; r < RPT; r++) {
            var rw: RowWord;
            if (PRE && first) { rw = (*pre)[r][u]; } else { rw = row_word(row_words, row_groups, rows[r], w); }
            (*accs)[r][u] += word_dot_xq(rw.c, rw.sw, xc);
        }
    } else {
        let xw = word_x(w);
        for (var r = 0u; r < RPT; r++) { (*accs)[r][u] += word_dot(row_words, row_groups, rows[r], w, xw); }
    }
}

// INT8_X: x quantized into xq, xq_scale and xq_sum by groups of 32, four
// invocations a group (8 elements each, a group's max through xq_amax), all
// WG invocations busy as in the f32 staging: a first form with one
// invocation a group (8 loads in a row each, a quarter of them busy) made the
// prologues of an H200's decode GEMVs slower than the products gained. x is
// read through xv: the staged, normalized row with NORM, else x_load.
fn stage_codes(lid: u32) {
    let t = lid % 4u;   // elements 8t .. 8t + 7 of the group
    for (var g0 = 0u; g0 < XG; g0 += WG / 4u) {   // uniform: the barrier below is reached by all
        let g = g0 + lid / 4u;
        var a = vec4<f32>();
        var b = vec4<f32>();
        if (g < XG) {
            a = xv(g * 8u + 2u * t);
            b = xv(g * 8u + 2u * t + 1u);
            // max |x| as bits (they order as the floats do), all ones for a value not finite
            let m = max(abs(a), abs(b));
            xq_amax[g][t] = select(0xffffffffu, bitcast<u32>(max(max(m.x, m.y), max(m.z, m.w))),
                                   q8_finite(a) && q8_finite(b));
        }
        workgroupBarrier();
        if (g < XG) {
            let mb = xq_amax[g];
            let top = max(max(mb.x, mb.y), max(mb.z, mb.w));
            let s = q8_scale_of(bitcast<f32>(top), top != 0xffffffffu);   // quant_q8_group.wgsl
            if (t == 0u) { xq_scale[g] = s; }
            if (BITS == 8u) {   // words 2t and 2t + 1 of the group
                xq[2u * g + t / 2u][2u * (t % 2u)] = q8_group_word(a, s);
                xq[2u * g + t / 2u][2u * (t % 2u) + 1u] = q8_group_word(b, s);
            } else {
                // code word t of a 4-bit row holds elements 8t .. 8t + 7, nibble j element 8t + j
                let even = q8_group_word(vec4<f32>(a.x, a.z, b.x, b.z), s);
                let odd = q8_group_word(vec4<f32>(a.y, a.w, b.y, b.w), s);
                xq[g][t] = even;
                xq[XG + g][t] = odd;
                xq_sum[g][t] = dot4I8Packed(even, 0x01010101u) + dot4I8Packed(odd, 0x01010101u);
            }
        }
    }
    workgroupBarrier();
}

// NORM: the norm weight's vec4 i (aux, elements 4 i .. 4 i + 3)
fn norm_weight(i: u32) -> vec4<f32> {
    let a = params.aux_offset + 4u * i;
    return vec4<f32>(aux[a], aux[a + 1u], aux[a + 2u], aux[a + 3u]);
}

// the reduced sum of the workgroup's row lr (< ROWS): row group lr / RPT, its r = lr % RPT
fn row_sum(lr: u32) -> f32 { return partial[(lr % RPT) * WG + (lr / RPT) * ROW_THREADS]; }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id * ROWS >= params.N) { return; }   // uniform per workgroup
    let lane = lid % ROW_THREADS;
    // this invocation's rows: n0 + r (r < RPT), or (ROPE) n0 + r D2
    let pair = id * SLOTS + lid / ROW_THREADS;        // ROPE: its (i, i + D2) pair
    var n0 = id * ROWS + (lid / ROW_THREADS) * RPT;
    var step = 1u;
    var live = n0 < params.N;
    if (ROPE) {
        n0 = rope_row(pair);   // gemv_rope.wgsl
        step = D2;
        live = pair < params.N / 2u;
    }
    let row_words = params.K / WPW;
    let row_groups = params.K / 32u;
    var rows: array<u32, RPT>;
    for (var r = 0u; r < RPT; r++) { rows[r] = min(n0 + r * step, params.N - 1u); }   // past N: dropped below
    // PRE (INT8_X): the lane's first UNROLL words of each row and their scales,
    // loaded before the prologue so that their memory latency overlaps it
    var pre: array<array<RowWord, UNROLL>, RPT>;
    if (PRE && live) {
        for (var u = 0u; u < UNROLL; u++) {
            let wu = min(lane + u * ROW_THREADS, row_words - 1u);   // past the row: never used
            for (var r = 0u; r < RPT; r++) { pre[r][u] = row_word(row_words, row_groups, rows[r], wu); }
        }
    }
    if (XS > 0u) {
        let slots = params.K / 4u;
        // The invocation's first two slots of the row (lid, lid + WG: all of
        // them up to K = 2048) and, with NORM, of the norm weight are loaded
        // up front, in one round of memory latency; the weight's used to
        // follow the sum's tree, a round more (H200, Llama-3.2-1B q4: q/k/v
        // 11.9 -> 11.5 us, gate/up 18.2 -> 17.8 profiled,
        // bench/results/h200-2026-11-29n/p1). Later slots load in the loops.
        let x0 = x_load(params.x_offset + min(lid, slots - 1u));
        let x1 = x_load(params.x_offset + min(lid + WG, slots - 1u));
        var w0 = vec4<f32>();
        var w1 = vec4<f32>();
        if (NORM) {
            w0 = norm_weight(min(lid, slots - 1u));
            w1 = norm_weight(min(lid + WG, slots - 1u));
        }
        var ss = 0.0;
        for (var i = lid; i < slots; i += WG) {
            var v = x0;
            if (i >= lid + 2u * WG) { v = x_load(params.x_offset + i); } else if (i != lid) { v = x1; }
            xs[i + i / XV] = v;
            ss += dot(v, v);
        }
        if (NORM) {
            partial[lid] = ss;
            workgroupBarrier();
            for (var s = WG / 2u; s > 0u; s >>= 1u) {
                if (lid < s) { partial[lid] += partial[lid + s]; }
                workgroupBarrier();
            }
            let rstd = inverseSqrt(partial[0] / f32(params.K) + params.eps);
            for (var i = lid; i < slots; i += WG) {
                var w = w0;
                if (i >= lid + 2u * WG) { w = norm_weight(i); } else if (i != lid) { w = w1; }
                xs[i + i / XV] = (xs[i + i / XV] * rstd) * w;
            }
        }
        workgroupBarrier();
    }
    if (INT8_X) { stage_codes(lid); }
    var accs: array<array<f32, UNROLL>, RPT>;
    if (live) {
        var w = lane;
        for (; w + (UNROLL - 1u) * ROW_THREADS < row_words; w += UNROLL * ROW_THREADS) {
            for (var u = 0u; u < UNROLL; u++) {
                add_word(rows, row_words, row_groups, w + u * ROW_THREADS, u, w == lane, &pre, &accs);
            }
        }
        // w == lane here: the first word, prefetched (slot 0) when the loop above did not run
        for (; w < row_words; w += ROW_THREADS) {
            add_word(rows, row_words, row_groups, w, 0u, w == lane, &pre, &accs);
        }
    }
    for (var r = 0u; r < RPT; r++) {
        var acc = 0.0;
        for (var u = 0u; u < UNROLL; u++) { acc += accs[r][u]; }
        partial[r * WG + lid] = acc;
    }
    workgroupBarrier();
    for (var s = ROW_THREADS / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            for (var r = 0u; r < RPT; r++) { partial[r * WG + lid] += partial[r * WG + lid + s]; }
        }
        workgroupBarrier();
    }
    if (ROPE) {
        if (lane != 0u || !live) { return; }
        let at = params.out_offset + n0;                  // out[n0], out[n0 + D2]
        let ya = partial[lid];
        let yb = partial[WG + lid];
        let head = pair / D2;
        if (head >= params.rope_pass_begin && head < params.rope_pass_end) {
            out[at] = rope_store(ya);
            out[at + D2] = rope_store(yb);
            return;
        }
        out[at] = rope_store(rope_rotate(ya, yb, pair % D2, 0u));   // gemv_rope.wgsl
        out[at + D2] = rope_store(rope_rotate(ya, yb, pair % D2, 1u));
        return;
    }
    // invocation lid < ROWS stores the workgroup's row lid
    let n = id * ROWS + lid;
    if (lid >= ROWS || n >= params.N) { return; }
    var sum = row_sum(lid);
    if (BIAS) { sum += aux[params.aux_offset + n]; }
    if (SWIGLU) {
        // rows n (even: the gate) and n + 1 (the up row) of this workgroup
        if ((n & 1u) == 0u && n + 1u < params.N) {
            var up = row_sum(lid + 1u);
            if (BIAS) { up += aux[params.aux_offset + n + 1u]; }
            out[params.out_offset + n / 2u] = OUT_T(sum / (1.0 + exp(-sum)) * up);
        }
        return;
    }
    out[params.out_offset + n] = OUT_T(sum);
}
