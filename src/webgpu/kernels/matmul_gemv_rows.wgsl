// matmul_gemv_rows: matrix-vector product, ROW_THREADS invocations per output.
//   y[b, i] = sum_k mat[b, i, k] * x[b, k]
//   mat (binding a): [B.., I, K] at a_offset, i stride a_row, k stride a_col
//   x   (binding b): [B.., K]    at b_offset, k stride b_row
//   y   (out):       [B.., I]    contiguous (params.M = I, params.N = 1)
// Suits mats whose rows run along k (k stride 1): the invocations of a row read
// it together, coalesced, then add their partial sums in workgroup memory.
// Prelude constants (webgpu_matmul.c):
//   ROW_THREADS  invocations per row (a power of two dividing 256)
//   VEC          mat rows and x are contiguous and 16-byte aligned, K % 4 == 0:
//                each invocation reads vec4s
// params.tiles_m = workgroups per batch = ceil(I / ROWS).

const WG: u32 = 256u;
const ROWS: u32 = WG / ROW_THREADS;   // rows per workgroup

var<workgroup> partial: array<T, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.tiles_m * params.batches) { return; }
    let batch = id / params.tiles_m;
    let row = (id - batch * params.tiles_m) * ROWS + lid / ROW_THREADS;
    let lane = lid % ROW_THREADS;
    let base = batch_offsets(batch);

    var acc = T();
    if (row < params.M) {
        let start = base.x + row * params.a_row;
        if (VEC) {
            // two accumulators and two loads in flight per step
            let m4 = start >> 2u;
            let x4 = base.y >> 2u;
            let quads = params.K >> 2u;
            var acc0 = vec4<T>();
            var acc1 = vec4<T>();
            var q = lane;
            for (; q + ROW_THREADS < quads; q += 2u * ROW_THREADS) {
                let m0 = vec4<T>(a[m4 + q]);
                let m1 = vec4<T>(a[m4 + q + ROW_THREADS]);
                acc0 = mad4(m0, vec4<T>(b[x4 + q]), acc0);
                acc1 = mad4(m1, vec4<T>(b[x4 + q + ROW_THREADS]), acc1);
            }
            if (q < quads) { acc0 = mad4(vec4<T>(a[m4 + q]), vec4<T>(b[x4 + q]), acc0); }
            acc0 += acc1;
            acc = (acc0.x + acc0.y) + (acc0.z + acc0.w);
        } else {
            for (var k = lane; k < params.K; k += ROW_THREADS) {
                acc = mad(a_elem(start + k * params.a_col), b_elem(base.y + k * params.b_row), acc);
            }
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = ROW_THREADS / 2u; s > 0u; s >>= 1u) {
        if (lane < s) { partial[lid] += partial[lid + s]; }
        workgroupBarrier();
    }
    if (lane == 0u && row < params.M) { out[base.z + row] = finish(partial[lid], row, 0u); }
}
