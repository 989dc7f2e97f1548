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
// Prelude: ROW_THREADS (a power of two <= 256), UNROLL (words in flight per
// step), BITS (4 or 8). Word w of row n holds weights WPW w .. WPW w + WPW - 1
// with WPW = 128 / BITS; the group of its scale is w * WPW / 32.
// The sum of a row is the f32 sum over its words in a fixed order (each
// invocation's words in order, then a tree over the invocations), so results
// are deterministic; they differ from quant_gemv's in rounding only.

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    x_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // x, q in vec4 units; s, out in elements
    row_blocks: u32, _p0: u32, _p1: u32, _p2: u32,
}

const WG: u32 = 256u;
const ROWS: u32 = WG / ROW_THREADS;    // rows per workgroup
const WPW: u32 = 128u / BITS;          // weights per 16-byte word
const XV: u32 = WPW / 4u;              // x vec4s per word
const WPG: u32 = 32u / WPW;            // words per scale group

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

// The dot product of word w's codes (scaled by its group's scale) with x.
fn word_dot(row_words: u32, row_groups: u32, n: u32, w: u32) -> f32 {
    let c = q[params.q_offset + n * row_words + w];
    let xa = params.x_offset + w * XV;
    var d: f32;
    if (BITS == 4u) {
        d = (dot(nibbles_lo(c.x), x[xa]) + dot(nibbles_hi(c.x), x[xa + 1u])) +
            (dot(nibbles_lo(c.y), x[xa + 2u]) + dot(nibbles_hi(c.y), x[xa + 3u])) +
            (dot(nibbles_lo(c.z), x[xa + 4u]) + dot(nibbles_hi(c.z), x[xa + 5u])) +
            (dot(nibbles_lo(c.w), x[xa + 6u]) + dot(nibbles_hi(c.w), x[xa + 7u]));
    } else {
        d = (dot(bytes4(c.x), x[xa]) + dot(bytes4(c.y), x[xa + 1u])) +
            (dot(bytes4(c.z), x[xa + 2u]) + dot(bytes4(c.w), x[xa + 3u]));
    }
    return d * scales[params.s_offset + n * row_groups + w / WPG];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id * ROWS >= params.N) { return; }   // uniform per workgroup
    let lane = lid % ROW_THREADS;
    let n = id * ROWS + lid / ROW_THREADS;
    var acc = 0.0;
    if (n < params.N) {
        let row_words = params.K / WPW;
        let row_groups = params.K / 32u;
        var accs: array<f32, UNROLL>;
        var w = lane;
        for (; w + (UNROLL - 1u) * ROW_THREADS < row_words; w += UNROLL * ROW_THREADS) {
            for (var u = 0u; u < UNROLL; u++) { accs[u] += word_dot(row_words, row_groups, n, w + u * ROW_THREADS); }
        }
        for (; w < row_words; w += ROW_THREADS) { accs[0] += word_dot(row_words, row_groups, n, w); }
        for (var u = 0u; u < UNROLL; u++) { acc += accs[u]; }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = ROW_THREADS / 2u; s > 0u; s >>= 1u) {
        if (lane < s) { partial[lid] += partial[lid + s]; }
        workgroupBarrier();
    }
    if (lane == 0u && n < params.N) { out[params.out_offset + n] = partial[lid]; }
}
