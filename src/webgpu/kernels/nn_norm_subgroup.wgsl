// NORM with subgroups: layer norm or rms norm forward, one row per subgroup.
//   x [R, D], weight [D]?, bias [D]? -> y [R, D], stats [R, 2] = (mean, rstd)
// The same math as nn_norm.wgsl (two passes: var = sum (x - mean)^2 / D), but
// the row sums are subgroupAdds instead of workgroup trees: no barriers, and a
// workgroup serves ROWS rows. One workgroup per row (nn_norm.wgsl) took 21.6
// us for the GPT's 16384 rows of 384 on an H200 (2.3 TB/s), its two 6-level
// barrier trees a row being most of a workgroup's time. The row's slots are
// read three times (sums, squares, output): the second and third reads hit the
// cache the first filled (1.5 KB a row).
// Subgroups take rows with an atomic counter (lane 0 draws, subgroupBroadcast
// hands the row on), so nothing depends on how invocations form subgroups or
// on their size. (The loop's exit depends on that broadcast value, which WGSL's
// uniformity analysis cannot see is the same across the subgroup: browsers
// (Tint) refuse the module, so they run nn_norm.wgsl; Naga takes it.) The sums' order depends on the subgroup size (one adapter,
// one order: the same bits every run).
// Prelude (webgpu_nn.c): the subgroups directive, WG, the V/W helpers (vec4
// rows only). ROWS: rows a workgroup (= NORM_SUBGROUP_ROWS of webgpu_nn.c).

const ROWS = 8u;

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> bias: array<V>;
@group(0) @binding(4) var<storage, read_write> y: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

var<workgroup> next_row: atomic<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) sg: u32) {
    let group = group_index(wid, nwg);
    if (lid == 0u) {
        atomicStore(&next_row, 0u);
    }
    workgroupBarrier();
    if (group * ROWS >= params.rows) {
        return;
    }
    let n = params.d / W;
    let rms = (params.flags & RMS) != 0u;
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let has_b = (params.flags & HAS_BIAS) != 0u;
    let inv_d = 1.0 / f32(params.d);
    loop {
        var drawn = 0u;
        if (lane == 0u) {
            drawn = atomicAdd(&next_row, 1u);
        }
        let r = subgroupBroadcast(drawn, 0u);
        let row = group * ROWS + r;
        if (r >= ROWS || row >= params.rows) {
            break;
        }
        let xb = params.x_offset + row * n;
        let yb = params.y_offset + row * n;
        var s = 0.0;
        for (var i = lane; i < n; i += sg) {
            s += hsum(x[xb + i]);
        }
        var mean = 0.0;
        if (!rms) {
            mean = subgroupAdd(s) * inv_d;
        }
        let m = splat(mean);
        var q = 0.0;
        for (var i = lane; i < n; i += sg) {
            let c = x[xb + i] - m;
            q += hsum(c * c);
        }
        let rstd = inverseSqrt(subgroupAdd(q) * inv_d + params.eps);
        let rv = splat(rstd);
        for (var i = lane; i < n; i += sg) {
            var o = (x[xb + i] - m) * rv;
            if (has_w) {
                o = o * weight[params.w_offset + i];
            }
            if (has_b) {
                o = o + bias[params.b_offset + i];
            }
            y[yb + i] = o;
        }
        if (lane == 0u) {
            stats[params.stats_offset + 2u * row] = mean;
            stats[params.stats_offset + 2u * row + 1u] = rstd;
        }
    }
}
