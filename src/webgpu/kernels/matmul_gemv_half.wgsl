// matmul_gemv_half: matrix-vector product of an f16 matrix read as 16-byte
// words (8 halves per load) and an f16 or f32 vector, f32 sums.
//   y[b, i] = sum_k mat[b, i, k] * x[b, k]
//   mat (binding a): [B.., I, K] f16 at a_offset, i stride a_row, k stride 1
//   x   (binding b): [B.., K]    f16 or f32 at b_offset, k stride 1; the
//                    prelude's load_x8(i) gives elements 8i..8i+7 as two
//                    vec4<f32> (f16: one word unpacked; f32: two vec4 loads,
//                    llama's f32 activations with no cast to f16 first)
//   y   (out):       [B.., I]    contiguous, O = f32 (wgt_matmul_ex) or f16
// Why: matmul_gemv_rows reads f16 as vec4<f16>, 8 bytes per load; in decode
// (`wgt generate`, Llama-3.2-1B f16 weights on an H100) its weight matvecs
// moved ~1 TB/s where the f32 kernel moves 3.5-3.8 TB/s with 16-byte loads.
// Here a (and an f16 b) is bound as vec4<u32> (the prelude aliases SA = u32)
// and each word is unpacked to 8 f32 (unpack2x16float); four words per invocation are
// in flight per step. Every offset, row and batch stride is a multiple of 8
// halves and K % 8 == 0 (webgpu_matmul_gemv.c checks).
// ROW_THREADS invocations per row (prelude), as matmul_gemv_rows, and RPT
// consecutive rows per invocation (prelude: 1, 2 or 4): each load_x8 serves
// the RPT rows' words, so the vector is read RPT times less (an f32 vector
// reads 32 bytes per 16-byte word of the matrix; at RPT 1 those reads, not
// the matrix's, were most of the kernel's memory traffic). Every row's sum
// takes the same operations in the same order whatever RPT is.
// params.tiles_m = workgroups per batch = ceil(I / ROWS).
// SWIGLU (prelude; wgt_linear_swiglu_ex in LLM decode): rows 2i and 2i + 1
// are an MLP's gate and up rows (interleaved at load), and y [I / 2] gets
// swiglu_store(gate sum, up sum) (silu(g) * u, see webgpu_matmul_gemv.c) at
// out_offset + i: the projection and the SwiGLU in one dispatch. One batch,
// I and ROWS even, no bias.
// NORM (prelude; wgt_rms_norm_linear_ex in LLM decode): the f32 vector is
// first RMS-normalized with the weight nw [K] (binding 4, no bias) into
// workgroup memory hx, as the NORM kernel would write it, and read from there.
// COMBINE (prelude; wgt_attention_linear_ex in LLM decode): the vector is the
// decode attention's output row, merged from its first pass's partial sums
// (part_o bound as b, from vec4 params.b_offset / 4; part_ml at binding 5,
// from pair params.rope_offset; params.rope_row chunks) into hx by
// combine_x4 (attention_combine_x.wgsl) and read from there, as NORM's row:
// the attention's combine and the projection in one dispatch. One batch.
// ROPE (prelude; wgt_rms_norm_linear_rope_into in LLM decode, with NORM):
// RPT = 2 and an invocation's rows are i and i + D2 of one head (D = 2 D2,
// prelude): row pair p (the workgroup's first pair + slot) is head p / D2,
// i = p % D2. Lane 0 rounds both sums to O as the product would store them,
// then stores them rotated by the table (binding 5, rope_load) as
// WGT_ROPE_ROWS_EXPR computes it, or as they are for heads in
// [rope_pass_begin, rope_pass_end): the q/k/v projection and the rotation
// into the KV cache in one dispatch. One batch, no bias.

const WG: u32 = 256u;
const SLOTS: u32 = WG / ROW_THREADS;  // row groups per workgroup
const ROWS: u32 = SLOTS * RPT;        // rows per workgroup

var<workgroup> partial: array<f32, WG * RPT>;   // [r][lid]; NORM's tree uses [0][lid]
var<workgroup> hx: array<vec4<f32>, HX>;   // NORM, COMBINE: the vector (K / 4 slots)

// dot of a word of 8 halves with 8 vector elements (load_x8)
fn dot8(m: vec4<u32>, x: array<vec4<f32>, 2>) -> f32 {
    let m0 = vec4<f32>(unpack2x16float(m.x), unpack2x16float(m.y));
    let m1 = vec4<f32>(unpack2x16float(m.z), unpack2x16float(m.w));
    return dot(m0, x[0]) + dot(m1, x[1]);
}

// the reduced sum of the workgroup's row lr (< ROWS): row group lr / RPT, its r = lr % RPT
fn row_sum(lr: u32) -> f32 { return partial[(lr % RPT) * WG + (lr / RPT) * ROW_THREADS]; }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.tiles_m * params.batches) { return; }
    let batch = id / params.tiles_m;
    let first = (id - batch * params.tiles_m) * ROWS;   // the workgroup's first row
    let slot = lid / ROW_THREADS;
    let lane = lid % ROW_THREADS;
    let base = batch_offsets(batch);
    // this invocation's rows: row0 + r (r < RPT), or (ROPE) row0 + r D2
    let pair = first / 2u + slot;                         // ROPE: its (i, i + D2) pair
    var row0 = first + slot * RPT;
    var step = 1u;
    var live = row0 < params.M;
    if (ROPE) {
        row0 = rope_row(pair);   // gemv_rope.wgsl
        step = D2;
        live = pair < params.M / 2u;
    }
    var m8: array<u32, RPT>;
    for (var r = 0u; r < RPT; r++) {   // rows past M read row M - 1; their sums are dropped
        m8[r] = (base.x + min(row0 + r * step, params.M - 1u) * params.a_row) >> 3u;
    }
    // PRE (prelude; > 0 only when each row has exactly PRE words per
    // invocation, PRE a multiple of 4): the invocation's PRE RPT words are
    // loaded here, before the NORM (or COMBINE) prologue, so their memory
    // latency overlaps the prologue's reads and barriers instead of following them
    var pre: array<vec4<u32>, max(PRE * RPT, 1u)>;
    if (PRE > 0u && live) {
        for (var r = 0u; r < RPT; r++) {
            for (var i = 0u; i < PRE; i++) { pre[r * PRE + i] = a[m8[r] + lane + i * ROW_THREADS]; }
        }
    }

    if (NORM) {
        // RMSNorm of the f32 vector (one batch) as nn_norm.wgsl computes a
        // row: thread t < NORM_THREADS sums the squares of slots t,
        // t + NORM_THREADS, ... in order, a tree over those partials, rstd =
        // inverseSqrt(sum / K + eps), each slot ((x - 0) * rstd) * weight;
        // the same operations in the same order, so the same values
        let slots = params.K >> 2u;
        let xb = base.y >> 2u;
        var q = 0.0;
        if (lid < NORM_THREADS) {
            for (var i = lid; i < slots; i += NORM_THREADS) {
                let c = norm_x(xb + i) - vec4<f32>(0.0);
                let c2 = c * c;
                q += (c2.x + c2.y) + (c2.z + c2.w);
            }
        }
        partial[lid] = q;
        workgroupBarrier();
        for (var s = NORM_THREADS / 2u; s > 0u; s >>= 1u) {
            if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
            workgroupBarrier();
        }
        let rstd = inverseSqrt(partial[0] * (1.0 / f32(params.K)) + params.norm_eps);
        workgroupBarrier();
        let r = vec4<f32>(rstd);
        let wb = params.norm_offset >> 2u;
        for (var i = lid; i < slots; i += WG) { hx[i] = ((norm_x(xb + i) - vec4<f32>(0.0)) * r) * norm_w(wb + i); }
        workgroupBarrier();
    }

    if (COMBINE) {
        for (var i = lid; i < (params.K >> 2u); i += WG) {
            hx[i] = combine_x4(i, params.b_offset >> 2u, params.rope_offset, params.rope_row);
        }
        workgroupBarrier();
    }

    // per row two sums, acc0 over words w, w + 2 RT, .. and acc1 over w + RT,
    // w + 3 RT, .. (RT = ROW_THREADS), the tail into acc0, then acc0 + acc1
    var acc0: array<f32, RPT>;
    var acc1: array<f32, RPT>;
    if (PRE > 0u && live) {   // the same sums in the same order from the registers
        let x8 = select(base.y >> 3u, 0u, NORM || COMBINE);
        for (var i = 0u; i < PRE; i += 4u) {
            let w = lane + i * ROW_THREADS;
            let x0 = load_x8(x8 + w);
            let x1 = load_x8(x8 + w + ROW_THREADS);
            let x2 = load_x8(x8 + w + 2u * ROW_THREADS);
            let x3 = load_x8(x8 + w + 3u * ROW_THREADS);
            for (var r = 0u; r < RPT; r++) {
                acc0[r] += dot8(pre[r * PRE + i], x0) + dot8(pre[r * PRE + i + 2u], x2);
                acc1[r] += dot8(pre[r * PRE + i + 1u], x1) + dot8(pre[r * PRE + i + 3u], x3);
            }
        }
    } else if (live) {
        let x8 = select(base.y >> 3u, 0u, NORM || COMBINE); // NORM: load_x8 reads hx
        let words = params.K >> 3u;
        var w = lane;
        for (; w + 3u * ROW_THREADS < words; w += 4u * ROW_THREADS) {
            let x0 = load_x8(x8 + w);
            let x1 = load_x8(x8 + w + ROW_THREADS);
            let x2 = load_x8(x8 + w + 2u * ROW_THREADS);
            let x3 = load_x8(x8 + w + 3u * ROW_THREADS);
            for (var r = 0u; r < RPT; r++) {
                let a0 = a[m8[r] + w];
                let a1 = a[m8[r] + w + ROW_THREADS];
                let a2 = a[m8[r] + w + 2u * ROW_THREADS];
                let a3 = a[m8[r] + w + 3u * ROW_THREADS];
                acc0[r] += dot8(a0, x0) + dot8(a2, x2);
                acc1[r] += dot8(a1, x1) + dot8(a3, x3);
            }
        }
        for (; w < words; w += ROW_THREADS) {
            let xw = load_x8(x8 + w);
            for (var r = 0u; r < RPT; r++) { acc0[r] += dot8(a[m8[r] + w], xw); }
        }
    }
    for (var r = 0u; r < RPT; r++) { partial[r * WG + lid] = acc0[r] + acc1[r]; }
    workgroupBarrier();
    for (var s = ROW_THREADS / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            for (var r = 0u; r < RPT; r++) { partial[r * WG + lid] += partial[r * WG + lid + s]; }
        }
        workgroupBarrier();
    }
    if (ROPE) {
        if (lane != 0u || !live) { return; }
        let head = pair / D2;
        let at = base.z + row0;                           // out[row0], out[row0 + D2]
        let ya = finish(partial[lid], row0, 0u);
        let yb = finish(partial[WG + lid], row0 + D2, 0u);
        if (head >= params.rope_pass_begin && head < params.rope_pass_end) {
            out[at] = ya;
            out[at + D2] = yb;
            return;
        }
        out[at] = rope_store(rope_rotate(f32(ya), f32(yb), pair % D2, 0u));      // gemv_rope.wgsl
        out[at + D2] = rope_store(rope_rotate(f32(ya), f32(yb), pair % D2, 1u));
        return;
    }
    // invocation lid < ROWS stores the workgroup's row lid
    let row = first + lid;
    if (lid >= ROWS || row >= params.M) { return; }
    if (SWIGLU) {
        // one batch, M and ROWS even: rows 2i (gate) and 2i + 1 (up) are in
        // this workgroup; their sums as O stores them, then the SwiGLU
        if ((row & 1u) == 0u) { out[params.out_offset + row / 2u] = swiglu_store(O(row_sum(lid)), O(row_sum(lid + 1u))); }
        return;
    }
    out[base.z + row] = finish(row_sum(lid), row, 0u);
}
