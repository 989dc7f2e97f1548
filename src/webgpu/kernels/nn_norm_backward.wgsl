// NORM_BACKWARD: dx of layer norm or rms norm, one workgroup per row.
//   x [R, D], weight [D]?, stats [R, 2] (mean, rstd), dy [R, D] -> dx [R, D]
//   xhat = (x - mean) rstd, g = dy * weight (dy without weight)
//   dx = rstd (g - xhat mean(g xhat) - mean(g))      (rms: no mean(g) term)
// When CACHED (CACHE <= 8 slots per thread), g and xhat stay in registers: x
// and dy are read once and dx written once; else they are read twice.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<V>;
@group(0) @binding(5) var<storage, read_write> dx: array<V>;

// dy * weight at slot i of the row at yb, zeros past the row (loads clamped
// into the row so a thread's loads issue together).
fn grad_slot(i: u32, n: u32, yb: u32, has_w: bool) -> V {
    let j = min(i, n - 1u);
    var g = dy[yb + j];
    if (has_w) {
        g = g * weight[params.w_offset + j];
    }
    return select(splat(0.0), g, i < n);
}

fn xhat_slot(i: u32, n: u32, xb: u32, m: V, r: V) -> V {
    let h = (x[xb + min(i, n - 1u)] - m) * r;
    return select(splat(0.0), h, i < n);
}

fn store_dx(ob: u32, i: u32, n: u32, g: V, h: V, r: V, mean_gh: V, mean_g: V) {
    if (i < n) {
        let v = r * (g - h * mean_gh - mean_g);
        if ((params.flags & ACCUMULATE) != 0u) {
            dx[ob + i] = dx[ob + i] + rounded(v);   // the gradient dx held plus this one: one f32 add, no fma
        } else {
            dx[ob + i] = v;
        }
    }
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

    // g and xhat of slots t, t + WG, ... in registers (named, not arrays, so
    // nothing goes to local memory); zeros past the row.
    var g0 = splat(0.0); var h0 = splat(0.0);
    var g1 = splat(0.0); var h1 = splat(0.0);
    var g2 = splat(0.0); var h2 = splat(0.0);
    var g3 = splat(0.0); var h3 = splat(0.0);
    var g4 = splat(0.0); var h4 = splat(0.0);
    var g5 = splat(0.0); var h5 = splat(0.0);
    var g6 = splat(0.0); var h6 = splat(0.0);
    var g7 = splat(0.0); var h7 = splat(0.0);
    var sums = vec2<f32>(0.0, 0.0); // (sum g, sum g xhat)
    if (CACHED) {
        g0 = grad_slot(t, n, db, has_w); h0 = xhat_slot(t, n, xb, m, r);
        if (CACHE > 1u) { g1 = grad_slot(t + 1u * WG, n, db, has_w); h1 = xhat_slot(t + 1u * WG, n, xb, m, r); }
        if (CACHE > 2u) { g2 = grad_slot(t + 2u * WG, n, db, has_w); h2 = xhat_slot(t + 2u * WG, n, xb, m, r); }
        if (CACHE > 3u) { g3 = grad_slot(t + 3u * WG, n, db, has_w); h3 = xhat_slot(t + 3u * WG, n, xb, m, r); }
        if (CACHE > 4u) { g4 = grad_slot(t + 4u * WG, n, db, has_w); h4 = xhat_slot(t + 4u * WG, n, xb, m, r); }
        if (CACHE > 5u) { g5 = grad_slot(t + 5u * WG, n, db, has_w); h5 = xhat_slot(t + 5u * WG, n, xb, m, r); }
        if (CACHE > 6u) { g6 = grad_slot(t + 6u * WG, n, db, has_w); h6 = xhat_slot(t + 6u * WG, n, xb, m, r); }
        if (CACHE > 7u) { g7 = grad_slot(t + 7u * WG, n, db, has_w); h7 = xhat_slot(t + 7u * WG, n, xb, m, r); }
        let sg = ((hsum(g0) + hsum(g1)) + (hsum(g2) + hsum(g3))) + ((hsum(g4) + hsum(g5)) + (hsum(g6) + hsum(g7)));
        let sgh = ((hsum(g0 * h0) + hsum(g1 * h1)) + (hsum(g2 * h2) + hsum(g3 * h3))) +
                  ((hsum(g4 * h4) + hsum(g5 * h5)) + (hsum(g6 * h6) + hsum(g7 * h7)));
        sums = vec2<f32>(sg, sgh);
    } else {
        for (var i = t; i < n; i += WG) {
            let g = grad_slot(i, n, db, has_w);
            let h = xhat_slot(i, n, xb, m, r);
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
        store_dx(ob, t, n, g0, h0, r, mean_gh, mean_g);
        if (CACHE > 1u) { store_dx(ob, t + 1u * WG, n, g1, h1, r, mean_gh, mean_g); }
        if (CACHE > 2u) { store_dx(ob, t + 2u * WG, n, g2, h2, r, mean_gh, mean_g); }
        if (CACHE > 3u) { store_dx(ob, t + 3u * WG, n, g3, h3, r, mean_gh, mean_g); }
        if (CACHE > 4u) { store_dx(ob, t + 4u * WG, n, g4, h4, r, mean_gh, mean_g); }
        if (CACHE > 5u) { store_dx(ob, t + 5u * WG, n, g5, h5, r, mean_gh, mean_g); }
        if (CACHE > 6u) { store_dx(ob, t + 6u * WG, n, g6, h6, r, mean_gh, mean_g); }
        if (CACHE > 7u) { store_dx(ob, t + 7u * WG, n, g7, h7, r, mean_gh, mean_g); }
    } else {
        for (var i = t; i < n; i += WG) {
            store_dx(ob, i, n, grad_slot(i, n, db, has_w), xhat_slot(i, n, xb, m, r), r, mean_gh, mean_g);
        }
    }
}
