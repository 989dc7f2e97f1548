// NORM_PARAM_GRADS: partial sums of the weight and bias gradients of a norm.
//   x [R, D], stats [R, 2] (mean, rstd), dy [R, D]
//     -> dw [P, D]: dw[p, j] = sum over rows r of chunk p of dy[r, j] xhat[r, j]
//        db [P, D]: db[p, j] = sum over rows r of chunk p of dy[r, j]  (has bias)
// Chunk p is rows [p chunk_rows, (p + 1) chunk_rows). One thread per (chunk,
// column of V): a workgroup's threads read consecutive columns of one row at a
// time (coalesced). The host sums the P partials with a REDUCE: no atomics.
// Dispatch: P * ceil(D / W / WG) workgroups.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<V>;
@group(0) @binding(4) var<storage, read_write> dw: array<V>;
@group(0) @binding(5) var<storage, read_write> db: array<V>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let group = group_index(wid, nwg);
    let n = params.d / W;
    let per_chunk = (n + WG - 1u) / WG;
    let chunk = group / per_chunk;
    let j = (group % per_chunk) * WG + lid.x;
    if (group >= params.n_groups || j >= n) {
        return; // no barriers in this kernel
    }
    let first = chunk * params.chunk_rows;
    let last = min(first + params.chunk_rows, params.rows);
    var sw = splat(0.0);
    var sb = splat(0.0);
    for (var r = first; r < last; r++) {
        let g = dy[params.dy_offset + r * n + j];
        let h = (x[params.x_offset + r * n + j] - splat(stats[params.stats_offset + 2u * r])) *
                splat(stats[params.stats_offset + 2u * r + 1u]);
        sw += g * h;
        sb += g;
    }
    dw[params.y_offset + chunk * n + j] = sw;
    if ((params.flags & HAS_BIAS) != 0u) {
        db[params.b_offset + chunk * n + j] = sb;
    }
}
