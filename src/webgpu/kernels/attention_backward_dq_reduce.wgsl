// attention_backward_dq_reduce: dq from the partial sums attention_backward_fused
// stored per (key block, query row), added in key-block order (fixed: the
// same bits run to run, no atomics).
//   work f32: partials [B, H, R, D] at offsets[2].z (R = offsets[2].w rows per
//   head: key block kb's rows first_row(kb) .. Tq - 1 after those of blocks
//   0 .. kb - 1) -> dq f32 [B, H, Tq, D] at offsets[1].y, strides dq_st
//   dq = scale * sum over the blocks whose rows include i of partial(kb, i)
// One invocation per element of dq, or per 4 of them (VEC_IN: D % 4 == 0, the
// partials start at a multiple of 4, so a row's quads are aligned vec4s):
// memory-bound, params.blocks reads each; vec4 loads keep more bytes in flight.
// Prelude constants: BK, BQ (those of attention_backward_fused), VEC_IN, IN_T.

@group(0) @binding(1) var<storage, read> work: array<IN_T>;   // IN_T: vec4<f32> with VEC_IN (D % 4 == 0)
@group(0) @binding(2) var<storage, read_write> dq: array<f32>;

const PER: u32 = select(1u, 4u, VEC_IN);   // elements of dq per invocation

// The same as attention_backward_fused's: first query row of key block j0's tiles.
fn first_row(j0: u32) -> u32 {
    if (params.causal == 0u) { return 0u; }
    return u32(max(i32(j0) - (i32(params.Tk) - i32(params.Tq)), 0)) / BQ * BQ;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = ((wid.x + wid.y * nwg.x) * 256u + lid) * PER;
    if (e >= params.B * params.H * params.Tq * params.D) { return; }
    let d = e % params.D;
    let row = e / params.D;
    let i = row % params.Tq;
    let bh = row / params.Tq;
    let head = params.offsets[2].z + bh * params.offsets[2].w * params.D + d;   // a multiple of PER
    var acc = vec4<f32>();
    var part_row0 = 0u;
    for (var kb = 0u; kb < params.blocks; kb++) {
        let i_first = first_row(kb * BK);
        if (i < i_first) { break; }   // later blocks start later still
        acc += vec4<f32>(work[(head + (part_row0 + i - i_first) * params.D) / PER]);   // a splat when PER = 1
        part_row0 += params.Tq - i_first;
    }
    let at = elem(params.offsets[1].y, params.dq_st, bh / params.H, bh % params.H, i, d);   // dq's strides
    for (var c = 0u; c < PER; c++) { dq[at + c * params.dq_st.w] = acc[c] * (params.scale_log2 / LOG2E); }
}
