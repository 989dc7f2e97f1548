// attention_common: parameters and helpers shared by the attention kernels
// (after philox.wgsl, whose philox4x32_10 draws the dropout masks)
// (attention_forward, attention_backward_prepare, attention_backward_kv,
// attention_backward_q). webgpu_attention.c puts a prelude of constants in
// front of this file:
//   D4   vec4s per head row (ceil(D / 4); the padding lanes hold zeros)
//   BQ   query rows per workgroup (one per invocation), BK keys per shared tile
//        (attention_backward_kv swaps the roles: BK keys per workgroup, one
//        per invocation, BQ query rows per shared tile)
//
// Shapes: q, out, dout [B, H, Tq, D]; k, v [B, Hkv, Tk, D]; lse, delta f32
// [B, H, Tq]; query head h reads kv head h / group (group = H / Hkv).
// Inputs are f32 with any strides (in elements, u32: negative strides wrap);
// element (b, h, t, d) of q is q[q_at.x + b * q_st.x + h * q_st.y + t * q_st.z
// + d * q_st.w] with q_at.x its offset. Outputs are f32 from their offsets
// (offsets[1].yzw: forward out, lse; backward dq, dk, dv), contiguous but for
// the forward's out, which has strides o_st (the saved out's in backward): a
// [B, Tq, H, D] buffer seen as [B, H, Tq, D] lets the caller merge the heads
// back with views only; and the gradients of attention_backward_fused and
// attention_backward_dq_reduce, strides dq_st, dk_st, dv_st (windows of one
// [B, T, 3C] gradient that the autograd engine hands).
// Scores are kept in log2 units: s2 = (q . k) * scale * log2(e), so
// probabilities are exp2(s2 - lse * log2(e)).
// Causal: query i sees key j when j <= i + Tk - Tq (bottom-right aligned).
// Dropout: weight (row = (b * H + h) * Tq + i, key j) is kept when word j % 4
// of philox(seed, (j / 4, row, 0, "atte")) >> 8 >= threshold (src/core/philox.h;
// one call serves four neighbouring keys), kept weights are scaled by
// keep_scale = 1 / (1 - p).

struct Params {
    B: u32, H: u32, Hkv: u32, group: u32,
    Tq: u32, Tk: u32, D: u32, causal: u32,
    q_st: vec4<u32>, k_st: vec4<u32>, v_st: vec4<u32>, o_st: vec4<u32>, do_st: vec4<u32>,   // strides b, h, t, d
    offsets: array<vec4<u32>, 3>,   // inputs q, k, v, out | dout, outputs 0, 1, 2 | lse, delta, mask, mask words per row
    scale_log2: f32, keep_scale: f32, threshold: u32, dropout: u32,   // dropout: 0 or 1
    seed: vec2<u32>, blocks: u32, order: u32,  // blocks: workgroups per (b, h) or (b, kv head); order: block_order
    dq_st: vec4<u32>, dk_st: vec4<u32>, dv_st: vec4<u32>,   // backward: the gradients' strides (fused path)
}

@group(0) @binding(0) var<uniform> params: Params;

// Workgroup id -> (pair, block index) for grids of `pairs` (b, head) pairs
// times params.blocks blocks. order 0: pair-major (id / blocks, id % blocks).
// order n > 0: groups of n pairs, and inside a group block index 0 of each
// pair, then index 1, ..: the kernels number their blocks so that index 0 is
// the one with the most work (causal: the most keys or query rows to visit),
// so the longest workgroups start first and the grid's tail is short ones,
// while a group's pairs still share their reads in L2.
fn block_order(id: u32, pairs: u32) -> vec2<u32> {
    let n = params.order;
    if (n == 0u) { return vec2<u32>(id / params.blocks, id % params.blocks); }
    let span = n * params.blocks;
    let first = (id / span) * n;
    let in_group = min(n, pairs - first);   // the last group may be short
    let within = id % span;
    return vec2<u32>(first + within % in_group, within / in_group);
}

const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;
const MASKED: f32 = -3.0e38;   // score of an invisible key: exp2(MASKED - m) == 0, never inf - inf
const NO_MAX: f32 = -1.0e30;   // running max before the first visible key

// Element offset of (b, h, t, d) in a tensor with strides st and offset at.
fn elem(at: u32, st: vec4<u32>, b: u32, h: u32, t: u32, d: u32) -> u32 {
    return at + b * st.x + h * st.y + t * st.z + d * st.w;
}

// Last key query i may see (as i32: negative when it sees none); Tk - 1 when not causal.
fn last_key(i: u32) -> i32 {
    if (params.causal == 0u) { return i32(params.Tk) - 1; }
    return i32(i) + i32(params.Tk) - i32(params.Tq);
}

// Dropout factor of weight (row, key j): 0 or keep_scale (1 without dropout).
fn dropout_factor(row: u32, j: u32) -> f32 {
    if (params.dropout == 0u) { return 1.0; }
    let w = philox4x32_10(params.seed, vec4<u32>(j >> 2u, row, 0u, 0x61747465u));
    return select(0.0, params.keep_scale, (w[j & 3u] >> 8u) >= params.threshold);
}

// The factors of keys j4 .. j4 + 3 (j4 a multiple of 4) with one Philox call.
fn dropout_factors4(row: u32, j4: u32) -> vec4<f32> {
    if (params.dropout == 0u) { return vec4<f32>(1.0); }
    let w = philox4x32_10(params.seed, vec4<u32>(j4 >> 2u, row, 0u, 0x61747465u));
    return select(vec4<f32>(0.0), vec4<f32>(params.keep_scale), (w >> vec4<u32>(8u)) >= vec4<u32>(params.threshold));
}
