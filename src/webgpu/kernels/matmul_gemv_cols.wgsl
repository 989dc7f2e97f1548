// matmul_gemv_cols: matrix-vector product for mats whose outputs are contiguous.
//   y[b, i] = sum_k mat[b, i, k] * x[b, k]
//   mat (binding a): [B.., I, K] at a_offset, i stride a_row, k stride a_col
//   x   (binding b): [B.., K]    at b_offset, k stride b_row
//   y   (out):       [B.., I]    contiguous (params.M = I, params.N = 1)
// Suits mats with i stride 1 (x @ W for a row-major W): each invocation owns 4
// consecutive outputs, neighbouring invocations read neighbouring quads of one
// k row (coalesced), K_SPLIT invocations share the k range and add their
// partial sums in workgroup memory.
// Prelude constants (webgpu_matmul.c):
//   COL_THREADS  invocations along i (4 outputs each)
//   K_SPLIT      invocations along k (a power of two)
//   VEC          i stride 1, I % 4 == 0 and 16-byte aligned k rows: vec4 loads
// params.tiles_m = workgroups per batch = ceil(I / (4 * COL_THREADS)).

const WG: u32 = COL_THREADS * K_SPLIT;

// mat[i0..i0+3, k] (zeros past I), row start = mat's element (i0, 0).
fn mat_quad(start: u32, k: u32, i0: u32) -> vec4<T> {
    let at = start + k * params.a_col;
    if (VEC) { return vec4<T>(a[at >> 2u]); }
    var m = vec4<T>();
    for (var j = 0u; j < 4u; j++) {
        if (i0 + j < params.M) { m[j] = a_elem(at + j * params.a_row); }
    }
    return m;
}

var<workgroup> partial: array<vec4<T>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.tiles_m * params.batches) { return; }
    let batch = id / params.tiles_m;
    let lx = lid % COL_THREADS;
    let ly = lid / COL_THREADS;
    let i0 = ((id - batch * params.tiles_m) * COL_THREADS + lx) * 4u;
    let base = batch_offsets(batch);

    var acc = vec4<T>();
    if (i0 < params.M) {
        let start = base.x + i0 * params.a_row;
        var acc1 = vec4<T>();
        var k = ly;
        // four k rows per step: four independent loads in flight
        for (; k + 3u * K_SPLIT < params.K; k += 4u * K_SPLIT) {
            let m0 = mat_quad(start, k, i0);
            let m1 = mat_quad(start, k + K_SPLIT, i0);
            let m2 = mat_quad(start, k + 2u * K_SPLIT, i0);
            let m3 = mat_quad(start, k + 3u * K_SPLIT, i0);
            acc = mad4(m0, vec4<T>(b_elem(base.y + k * params.b_row)), acc);
            acc1 = mad4(m1, vec4<T>(b_elem(base.y + (k + K_SPLIT) * params.b_row)), acc1);
            acc = mad4(m2, vec4<T>(b_elem(base.y + (k + 2u * K_SPLIT) * params.b_row)), acc);
            acc1 = mad4(m3, vec4<T>(b_elem(base.y + (k + 3u * K_SPLIT) * params.b_row)), acc1);
        }
        for (; k < params.K; k += K_SPLIT) {
            acc = mad4(mat_quad(start, k, i0), vec4<T>(b_elem(base.y + k * params.b_row)), acc);
        }
        acc += acc1;
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = K_SPLIT / 2u; s > 0u; s >>= 1u) {
        if (ly < s) { partial[lid] += partial[lid + s * COL_THREADS]; }
        workgroupBarrier();
    }
    if (ly == 0u) {
        let v = partial[lid];
        for (var j = 0u; j < 4u; j++) {
            if (i0 + j < params.M) { out[base.z + i0 + j] = finish(v[j], i0 + j, 0u); }
        }
    }
}
