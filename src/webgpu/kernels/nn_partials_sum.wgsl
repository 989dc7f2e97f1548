// PARTIALS_SUM: column sums of the norm weight/bias gradient partials.
//   dw partials [P, D], db partials [P, D] (has bias) -> dw [D], db [D]
// A workgroup takes WG / LANES columns (of V) and LANES row lanes: lane l sums
// rows l, l + LANES, ... with four independent accumulators (four loads in
// flight per thread), then the lanes are summed in workgroup memory. Short
// serial chains and many threads: the partials are small (P ~ 1024) and this
// pass must not be latency-bound. The order of the additions is fixed, so the
// result is the same every run. Dispatch: ceil(D / W / (WG / LANES)) groups,
// twice the x count when has bias (the second half sums db).

@group(0) @binding(1) var<storage, read> pw: array<V>;
@group(0) @binding(2) var<storage, read> pb: array<V>;
@group(0) @binding(3) var<storage, read_write> dw: array<V>;
@group(0) @binding(4) var<storage, read_write> db: array<V>;

const LANES = 64u;
const COLUMNS = WG / LANES;

var<workgroup> lane_sums: array<V, WG>;

fn load_partial(bias: bool, i: u32) -> V {
    if (bias) {
        return pb[params.b_offset + i];
    }
    return pw[params.x_offset + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let group = group_index(wid, nwg);
    if (group >= params.n_groups) {
        return; // the whole workgroup
    }
    let n = params.d / W;
    let per_input = (n + COLUMNS - 1u) / COLUMNS;
    let bias = group >= per_input;
    let column = (group % per_input) * COLUMNS + lid.x % COLUMNS;
    let lane = lid.x / COLUMNS;
    let rows = params.rows;
    var a0 = splat(0.0);
    var a1 = splat(0.0);
    var a2 = splat(0.0);
    var a3 = splat(0.0);
    if (column < n) {
        var r = lane;
        for (; r + 3u * LANES < rows; r += 4u * LANES) {
            a0 += load_partial(bias, r * n + column);
            a1 += load_partial(bias, (r + LANES) * n + column);
            a2 += load_partial(bias, (r + 2u * LANES) * n + column);
            a3 += load_partial(bias, (r + 3u * LANES) * n + column);
        }
        for (; r < rows; r += LANES) {
            a0 += load_partial(bias, r * n + column);
        }
    }
    lane_sums[lid.x] = (a0 + a1) + (a2 + a3);
    workgroupBarrier();
    for (var step = LANES / 2u; step > 0u; step >>= 1u) {
        if (lane < step) {
            lane_sums[lid.x] = lane_sums[lid.x] + lane_sums[lid.x + step * COLUMNS];
        }
        workgroupBarrier();
    }
    if (lane == 0u && column < n) {
        if (bias) {
            db[params.pb_offset + column] = lane_sums[lid.x];
        } else {
            dw[params.pw_offset + column] = lane_sums[lid.x];
        }
    }
}
