// NORM_BACKWARD: dx of layer norm or rms norm, one workgroup per row.
//   x [R, D], weight [D]?, stats [R, 2] (mean, rstd), dy [R, D] -> dx [R, D]
//   xhat = (x - mean) rstd, g = dy * weight (dy without weight)
//   dx = rstd (g - xhat mean(g xhat) - mean(g))      (rms: no mean(g) term)
// When CACHED, g and xhat stay in registers: x and dy are read once and dx
// written once; else they are read twice.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<V>;
@group(0) @binding(5) var<storage, read_write> dx: array<V>;

fn grad_in(i: u32, xb: u32, yb: u32, has_w: bool) -> V {
    var g = dy[yb + i];
    if (has_w) {
        g = g * weight[params.w_offset + i];
    }
    return g;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let t = lid.x;
    let n = params.d / W;
    let xb = params.x_offset + row * n;
    let db = params.dy_offset + row * n;
    let ob = params.y_offset + row * n;
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let rms = (params.flags & RMS) != 0u;
    let m = splat(stats[params.stats_offset + 2u * row]);
    let rstd = stats[params.stats_offset + 2u * row + 1u];
    let r = splat(rstd);

    var cache_g: array<V, CACHE>;
    var cache_h: array<V, CACHE>;
    var sums = vec2<f32>(0.0, 0.0); // (sum g, sum g xhat)
    if (CACHED) {
        for (var k = 0u; k < CACHE; k++) {
            let i = t + k * WG;
            var g = splat(0.0);
            var h = splat(0.0);
            if (i < n) {
                g = grad_in(i, xb, db, has_w);
                h = (x[xb + i] - m) * r;
            }
            cache_g[k] = g;
            cache_h[k] = h;
            sums += vec2<f32>(hsum(g), hsum(g * h));
        }
    } else {
        for (var i = t; i < n; i += WG) {
            let g = grad_in(i, xb, db, has_w);
            let h = (x[xb + i] - m) * r;
            sums += vec2<f32>(hsum(g), hsum(g * h));
        }
    }
    let total = workgroup_sum2(sums, t) / f32(params.d);
    var mean_g = splat(total.x);
    if (rms) {
        mean_g = splat(0.0);
    }
    let mean_gh = splat(total.y);
    if (CACHED) {
        for (var k = 0u; k < CACHE; k++) { // constant trip count: the caches stay in registers
            let i = t + k * WG;
            if (i < n) {
                dx[ob + i] = r * (cache_g[k] - cache_h[k] * mean_gh - mean_g);
            }
        }
    } else {
        for (var i = t; i < n; i += WG) {
            let g = grad_in(i, xb, db, has_w);
            let h = (x[xb + i] - m) * r;
            dx[ob + i] = r * (g - h * mean_gh - mean_g);
        }
    }
}
