// The rope epilogue's rotation, shared by matmul_gemv_half and quant_gemv_rows
// (appended to either when its ROPE is on; both Params have rope_offset and
// rope_row, both preludes rope_load and ew_opaque): output row s (0: a head's
// first half, 1: its second) at index i of the pair (a, b) = the sums of the
// head's rows i and i + D/2, as WGT_ROPE_ROWS_EXPR computes it (src/core/
// backend.h): a * t[s, i] + b * t[2 + s, i], each product and the sum
// rounded to f32 on their own (ew_opaque).
// The first row of row pair p: head p / D2's row p % D2 (its partner is D2
// rows on).
fn rope_row(p: u32) -> u32 { return (p / D2) * (2u * D2) + p % D2; }

fn rope_rotate(a: f32, b: f32, i: u32, s: u32) -> f32 {
    let t = params.rope_offset + i + s * params.rope_row;
    return ew_opaque(ew_opaque(a * rope_load(t)) + ew_opaque(b * rope_load(t + 2u * params.rope_row)));
}
