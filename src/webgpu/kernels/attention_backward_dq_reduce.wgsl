// attention_backward_dq_reduce: dq from the partial sums attention_backward_fused
// stored per (key block, query row), added in key-block order (fixed: the
// same bits run to run, no atomics).
//   work f32 (bound as vec4s): partials [B, H, R, 4 D4] at offsets[2].z (a
//   multiple of 4; R = offsets[2].w rows per head: key block kb's rows
//   first_row(kb) .. Tq - 1 after those of blocks 0 .. kb - 1; each row whole
//   vec4s, zeros past D) -> dq f32 [B, H, Tq, D] at offsets[1].y, strides dq_st
//   dq = scale * sum over the blocks whose rows include i of partial(kb, i)
// One invocation per quad of a dq row (4 elements, fewer in a last quad past
// D): memory-bound, params.blocks vec4 reads each.
// Prelude constants: D4, BK, BQ (those of attention_backward_fused).

@group(0) @binding(1) var<storage, read> work: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dq: array<f32>;

// The same as attention_backward_fused's: first query row of key block j0's tiles.
fn first_row(j0: u32) -> u32 {
    if (params.causal == 0u) { return 0u; }
    return u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;   // (row, quad)
    if (e >= params.B * params.H * params.Tq * D4) { return; }
    let q4 = e % D4;
    let row = e / D4;
    let i = row % params.Tq;
    let bh = row / params.Tq;
    let head = (params.offsets[2].z >> 2u) + bh * params.offsets[2].w * D4 + q4;
    var acc = vec4<f32>();
    var part_row0 = 0u;
    for (var kb = 0u; kb < params.blocks; kb++) {
        let i_first = first_row(kb * BK);
        if (i < i_first) { break; }   // later blocks start later still
        acc += work[head + (part_row0 + i - i_first) * D4];
        part_row0 += params.Tq - i_first;
    }
    let at = elem(params.offsets[1].y, params.dq_st, bh / params.H, bh % params.H, i, q4 * 4u);   // dq's strides
    for (var c = 0u; c < 4u; c++) {
        if (q4 * 4u + c < params.D) { dq[at + c * params.dq_st.w] = acc[c] * (params.scale_log2 / LOG2E); }
    }
}
