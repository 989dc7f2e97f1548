// attention_combine_x: the decode attention's second pass (attention_decode_combine.wgsl)
// as a function a GEMV calls while it stages its vector: the attention's output row
// (heads concatenated, [H D]) read 4 elements at a time from the first pass's partials,
// so wgt_attention_linear_ex's projection needs no combine dispatch before it.
//   part_o f32 [H, chunks, D] (comb_o(i): vec4 i), part_ml vec2<f32> [H, chunks]
//   (comb_ml(i): (chunk max m in log2 units, sum p)), one query row per head
// combine_x4(i) = elements 4i .. 4i + 3 of the row: head h = i / CD4, with M = max_c m_c,
// L = sum_c l_c 2^(m_c - M), o = sum_c o_c 2^(m_c - M) / L, the operations of the
// combine kernel in its order (that kernel takes two elements an invocation, this four:
// the same arithmetic per element), then rounded to the attention output's dtype
// (COMBINE_F16: f16 and back), the values the combine kernel stores and the product
// would load. o_off: part_o's first vec4; ml_off: part_ml's first pair.
// Prelude: CD4 (= D / 4), COMBINE_F16, comb_o, comb_ml.

fn combine_x4(i: u32, o_off: u32, ml_off: u32, chunks: u32) -> vec4<f32> {
    let h = i / CD4;
    let base = ml_off + h * chunks;
    var mx = -1.0e30;
    for (var c = 0u; c < chunks; c++) { mx = max(mx, comb_ml(base + c).x); }
    var l = 0.0;
    var o = vec4<f32>();
    let ob = o_off + h * chunks * CD4 + i % CD4;
    for (var c = 0u; c < chunks; c++) {
        let ml = comb_ml(base + c);
        let w = exp2(ml.x - mx);
        l += ml.y * w;
        o += comb_o(ob + c * CD4) * w;
    }
    let inv = select(0.0, 1.0 / l, l > 0.0);
    o *= inv;
    if (COMBINE_F16) {
        return vec4<f32>(unpack2x16float(pack2x16float(o.xy)), unpack2x16float(pack2x16float(o.zw)));
    }
    return o;
}
