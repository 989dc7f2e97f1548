// attention_decode_combine: the second pass of split-key decode attention
// (attention_decode.wgsl): merges the chunks' partial softmax sums of each
// query row into the output and the log-sum-exp.
//   part_o f32 [B, H, Tq, chunks, D], part_ml vec2<f32> [B, H, Tq, chunks]
//   -> out [B, H, Tq, D] contiguous (f32, or f16 packed two per word),
//      lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)
// With M = max_c m_c: L = sum_c l_c 2^(m_c - M), out = sum_c o_c 2^(m_c - M) / L,
// lse = (M + log2 L) ln 2. Chunks a row does not see carry m = NO_MAX, l = 0.
// One invocation per (row, pair of columns): it owns one output word when out
// is f16 (the pair), two when f32. Same Params as attention_decode.

// Params, bindings, store_pair and store_lse: attention_decode_combine_common.wgsl.

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * 256u;
    let pairs = params.D / 2u;
    let rows = params.B * params.H * params.Tq;
    if (id >= rows * pairs) { return; }
    let row = id / pairs;
    let pr = id % pairs;
    let base = params.ml_off + row * params.chunks;
    var mx = -1.0e30;
    for (var c = 0u; c < params.chunks; c++) { mx = max(mx, part_ml[base + c].x); }
    var l = 0.0;
    var o = vec2<f32>();
    // part_o in vec2 units: o_off is in vec4s
    let ob = 2u * params.o_off + row * params.chunks * pairs + pr;
    for (var c = 0u; c < params.chunks; c++) {
        let ml = part_ml[base + c];
        let w = exp2(ml.x - mx);
        l += ml.y * w;
        o += part_o[ob + c * pairs] * w;
    }
    let inv = select(0.0, 1.0 / l, l > 0.0);
    o *= inv;
    store_pair(row, pr, o);
    if (pr == 0u) { store_lse(row, mx, l); }
}
