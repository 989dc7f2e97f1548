// attention_backward_prepare: the row dot products the backward kernels share.
//   out, dout [B, H, Tq, D] (any strides) -> delta f32 [B, H, Tq]
//   delta[row] = sum_d dout[row, d] * out[row, d]   (= sum_j p_j dp_j)
// One invocation per row (rows are short: D <= a few hundred).

@group(0) @binding(1) var<storage, read> o: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> delta: array<f32>;

@compute @workgroup_size(BQ)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = (wid.x + wid.y * nwg.x) * BQ + lid;
    if (row >= params.B * params.H * params.Tq) { return; }
    let i = row % params.Tq;
    let h = (row / params.Tq) % params.H;
    let b = row / (params.Tq * params.H);
    var s = 0.0;
    for (var d = 0u; d < params.D; d++) {
        s += o[elem(params.offsets[0].w, params.o_st, b, h, i, d)] * dout[elem(params.offsets[1].x, params.do_st, b, h, i, d)];
    }
    delta[params.offsets[2].y + row] = s;
}
