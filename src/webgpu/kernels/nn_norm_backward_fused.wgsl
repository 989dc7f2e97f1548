// NORM_BACKWARD with the weight/bias gradient partials: one workgroup per chunk
// of rows, x and dy read once for dx, dweight and dbias.
//   x [R, D], weight [D]?, stats [R, 2] (mean, rstd), dy [R, D]
//     -> dx [R, D] as nn_norm_backward.wgsl,
//        dw [P, D]: dw[p, j] = sum over rows r of chunk p of dy[r, j] xhat[r, j]
//        db [P, D]: db[p, j] = sum over the same rows of dy[r, j]   (has bias)
// Chunk p is rows [p chunk_rows, (p + 1) chunk_rows). The workgroup walks its
// rows one after another; thread t keeps slots t, t + WG, .. (CACHE <= 4) of
// the row's dy and xhat, the weight and its running dw/db sums in registers
// (named, not arrays, so nothing goes to local memory). The host sums the P
// partials with a REDUCE: no atomics. Dispatch: P workgroups.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<V>;
@group(0) @binding(5) var<storage, read_write> dx: array<V>;
@group(0) @binding(6) var<storage, read_write> dw: array<V>;
@group(0) @binding(7) var<storage, read_write> db: array<V>;

// Slot i of a row (zeros past the row's n slots; loads clamped into the row so
// a thread's loads issue together).
fn dy_slot(base: u32, i: u32, n: u32) -> V {
    return select(splat(0.0), dy[base + min(i, n - 1u)], i < n);
}

fn xhat_slot(base: u32, i: u32, n: u32, m: V, r: V) -> V {
    return select(splat(0.0), (x[base + min(i, n - 1u)] - m) * r, i < n);
}

fn weight_slot(i: u32, n: u32, has_w: bool) -> V {
    if (!has_w) {
        return splat(1.0);
    }
    return weight[params.w_offset + min(i, n - 1u)];
}

// ACCUMULATE: slot i of the gradient dx holds on entry, loaded with the row's
// x and dy so that its latency hides behind the row's sums (loaded just
// before the store, it made the kernel 21 us slower a call on an H200, as
// slow as the separate add it replaces); zeros otherwise.
fn acc_slot(base: u32, i: u32, n: u32) -> V {
    if ((params.flags & ACCUMULATE) == 0u) {
        return splat(0.0);
    }
    return select(splat(0.0), dx[base + min(i, n - 1u)], i < n);
}

fn store_dx(ob: u32, i: u32, n: u32, g: V, h: V, r: V, mean_gh: V, mean_g: V, a: V) {
    if (i < n) {
        let v = r * (g - h * mean_gh - mean_g);
        if ((params.flags & ACCUMULATE) != 0u) {
            dx[ob + i] = a + rounded(v);   // the gradient dx held plus this one: one f32 add, no fma
        } else {
            dx[ob + i] = v;
        }
    }
}

fn store_partials(p: u32, i: u32, n: u32, sw: V, sb: V, has_b: bool) {
    if (i < n) {
        dw[params.pw_offset + p * n + i] = sw;
        if (has_b) {
            db[params.pb_offset + p * n + i] = sb;
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = group_index(wid, nwg);
    let first = p * params.chunk_rows;
    if (p >= params.n_groups || first >= params.rows) {
        return; // the whole workgroup leaves: barriers below stay uniform
    }
    let last = min(first + params.chunk_rows, params.rows);
    let t = lid.x;
    let n = params.d / W;
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let has_b = (params.flags & HAS_BIAS) != 0u;
    let rms = (params.flags & RMS) != 0u;
    let s0 = t;
    let s1 = t + WG;
    let s2 = t + 2u * WG;
    let s3 = t + 3u * WG;
    let w0 = weight_slot(s0, n, has_w);
    var w1 = splat(1.0);
    var w2 = splat(1.0);
    var w3 = splat(1.0);
    if (CACHE > 1u) { w1 = weight_slot(s1, n, has_w); }
    if (CACHE > 2u) { w2 = weight_slot(s2, n, has_w); }
    if (CACHE > 3u) { w3 = weight_slot(s3, n, has_w); }
    var sw0 = splat(0.0); var sb0 = splat(0.0);
    var sw1 = splat(0.0); var sb1 = splat(0.0);
    var sw2 = splat(0.0); var sb2 = splat(0.0);
    var sw3 = splat(0.0); var sb3 = splat(0.0);
    for (var row = first; row < last; row++) {
        let xb = params.x_offset + row * n;
        let yb = params.dy_offset + row * n;
        let m = splat(stats[params.stats_offset + 2u * row]);
        let r = splat(stats[params.stats_offset + 2u * row + 1u]);
        let ob = params.y_offset + row * n;
        let d0 = dy_slot(yb, s0, n);
        let h0 = xhat_slot(xb, s0, n, m, r);
        let a0 = acc_slot(ob, s0, n);
        var a1 = splat(0.0); var a2 = splat(0.0); var a3 = splat(0.0);
        if (CACHE > 1u) { a1 = acc_slot(ob, s1, n); }
        if (CACHE > 2u) { a2 = acc_slot(ob, s2, n); }
        if (CACHE > 3u) { a3 = acc_slot(ob, s3, n); }
        var d1 = splat(0.0); var h1 = splat(0.0);
        var d2 = splat(0.0); var h2 = splat(0.0);
        var d3 = splat(0.0); var h3 = splat(0.0);
        if (CACHE > 1u) { d1 = dy_slot(yb, s1, n); h1 = xhat_slot(xb, s1, n, m, r); }
        if (CACHE > 2u) { d2 = dy_slot(yb, s2, n); h2 = xhat_slot(xb, s2, n, m, r); }
        if (CACHE > 3u) { d3 = dy_slot(yb, s3, n); h3 = xhat_slot(xb, s3, n, m, r); }
        let g0 = d0 * w0;
        let g1 = d1 * w1;
        let g2 = d2 * w2;
        let g3 = d3 * w3;
        let sums = vec2<f32>((hsum(g0) + hsum(g1)) + (hsum(g2) + hsum(g3)),
                             (hsum(g0 * h0) + hsum(g1 * h1)) + (hsum(g2 * h2) + hsum(g3 * h3)));
        let total = workgroup_sum2(sums, t) / f32(params.d);
        var mean_g = splat(total.x);
        if (rms) {
            mean_g = splat(0.0);
        }
        let mean_gh = splat(total.y);
        store_dx(ob, s0, n, g0, h0, r, mean_gh, mean_g, a0);
        if (CACHE > 1u) { store_dx(ob, s1, n, g1, h1, r, mean_gh, mean_g, a1); }
        if (CACHE > 2u) { store_dx(ob, s2, n, g2, h2, r, mean_gh, mean_g, a2); }
        if (CACHE > 3u) { store_dx(ob, s3, n, g3, h3, r, mean_gh, mean_g, a3); }
        sw0 += d0 * h0; sb0 += d0;
        sw1 += d1 * h1; sb1 += d1;
        sw2 += d2 * h2; sb2 += d2;
        sw3 += d3 * h3; sb3 += d3;
    }
    store_partials(p, s0, n, sw0, sb0, has_b);
    if (CACHE > 1u) { store_partials(p, s1, n, sw1, sb1, has_b); }
    if (CACHE > 2u) { store_partials(p, s2, n, sw2, sb2, has_b); }
    if (CACHE > 3u) { store_partials(p, s3, n, sw3, sb3, has_b); }
}
