// attention_backward_prepare: the row dot products the backward kernels share.
//   out, dout [B, H, Tq, D] (any strides) -> delta f32 [B, H, Tq]
//   delta[row] = sum_d dout[row, d] * out[row, d]   (= sum_j p_j dp_j)
// A workgroup of 256 takes ROWS = 16 rows, 16 lanes per row: lane l adds
// columns l, l + 16, .. (neighbouring lanes read neighbouring elements, so a
// warp's loads are two contiguous runs), then the 16 partial sums of a row
// are added in shared memory, always in the same order. (One invocation per
// row, each walking its own row, made every load of a warp touch 32 rows:
// 61 us for the GPT's 64x6x256x64 on an H100.)
// The dispatch is ceil(rows / 16) workgroups (webgpu_attention.c, PREPARE_ROWS).

@group(0) @binding(1) var<storage, read> o: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> delta: array<f32>;

const ROWS: u32 = 16u;
const LANES: u32 = 16u;
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = (wid.x + wid.y * nwg.x) * ROWS + lid / LANES;
    let lane = lid % LANES;
    let n_rows = params.B * params.H * params.Tq;
    var s = 0.0;
    if (row < n_rows) {
        let i = row % params.Tq;
        let h = (row / params.Tq) % params.H;
        let b = row / (params.Tq * params.H);
        let o_at = elem(params.offsets[0].w, params.o_st, b, h, i, 0u);
        let do_at = elem(params.offsets[1].x, params.do_st, b, h, i, 0u);
        for (var d = lane; d < params.D; d += LANES) {
            s = fma(o[o_at + d * params.o_st.w], dout[do_at + d * params.do_st.w], s);
        }
    }
    partial[lid] = s;
    workgroupBarrier();
    if (lane == 0u && row < n_rows) {
        var t = 0.0;
        for (var l = 0u; l < LANES; l++) { t += partial[lid + l]; }
        delta[params.offsets[2].y + row] = t;
    }
}
