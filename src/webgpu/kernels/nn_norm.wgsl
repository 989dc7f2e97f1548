// NORM: layer norm or rms norm forward, one workgroup per row.
//   x [R, D], weight [D]?, bias [D]? -> y [R, D], stats [R, 2] = (mean, rstd)
//   layer: mean = sum x / D, var = sum (x - mean)^2 / D (two passes over the
//          registers, not E[x^2] - mean^2, which cancels); rms: mean = 0.
//   y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps).
// When CACHED (CACHE <= 8 slots per thread) the row is read once, kept in
// registers, and written once; else it is read three times.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> bias: array<V>;
@group(0) @binding(4) var<storage, read_write> y: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

// Slot i of the row at xb (zeros past the row's n slots). The load is
// clamped into the row, not skipped, so a thread's loads issue together.
fn load_slot(xb: u32, i: u32, n: u32) -> V {
    let v = x[xb + min(i, n - 1u)];
    return select(splat(0.0), v, i < n);
}

fn squares(v: V, m: V, valid: bool) -> f32 {
    let c = v - m;
    return select(0.0, hsum(c * c), valid);
}

fn store_slot(yb: u32, i: u32, n: u32, v: V, m: V, r: V, has_w: bool, has_b: bool) {
    if (i >= n) {
        return;
    }
    var o = (v - m) * r;
    if (has_w) {
        o = o * weight[params.w_offset + i];
    }
    if (has_b) {
        o = o + bias[params.b_offset + i];
    }
    y[yb + i] = o;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.rows) {
        return; // the whole workgroup leaves: barriers below stay uniform
    }
    let t = lid.x;
    let n = params.d / W;
    let xb = params.x_offset + row * n;
    let yb = params.y_offset + row * n;
    let rms = (params.flags & RMS) != 0u;
    let inv_d = 1.0 / f32(params.d);

    // The row's slots t, t + WG, ... in registers c0..c7 (named, not an array,
    // so that nothing can be placed in local memory); zeros past the row.
    var c0 = splat(0.0);
    var c1 = splat(0.0);
    var c2 = splat(0.0);
    var c3 = splat(0.0);
    var c4 = splat(0.0);
    var c5 = splat(0.0);
    var c6 = splat(0.0);
    var c7 = splat(0.0);
    var s = 0.0;
    if (CACHED) {
        c0 = load_slot(xb, t, n);
        if (CACHE > 1u) { c1 = load_slot(xb, t + 1u * WG, n); }
        if (CACHE > 2u) { c2 = load_slot(xb, t + 2u * WG, n); }
        if (CACHE > 3u) { c3 = load_slot(xb, t + 3u * WG, n); }
        if (CACHE > 4u) { c4 = load_slot(xb, t + 4u * WG, n); }
        if (CACHE > 5u) { c5 = load_slot(xb, t + 5u * WG, n); }
        if (CACHE > 6u) { c6 = load_slot(xb, t + 6u * WG, n); }
        if (CACHE > 7u) { c7 = load_slot(xb, t + 7u * WG, n); }
        s = ((hsum(c0) + hsum(c1)) + (hsum(c2) + hsum(c3))) + ((hsum(c4) + hsum(c5)) + (hsum(c6) + hsum(c7)));
    } else {
        for (var i = t; i < n; i += WG) {
            s += hsum(x[xb + i]);
        }
    }
    var mean = 0.0;
    if (!rms) {
        mean = workgroup_sum2(vec2<f32>(s, 0.0), t).x * inv_d;
    }
    let m = splat(mean);
    var q = 0.0;
    if (CACHED) {
        q = squares(c0, m, t < n);
        if (CACHE > 1u) { q += squares(c1, m, t + 1u * WG < n); }
        if (CACHE > 2u) { q += squares(c2, m, t + 2u * WG < n); }
        if (CACHE > 3u) { q += squares(c3, m, t + 3u * WG < n); }
        if (CACHE > 4u) { q += squares(c4, m, t + 4u * WG < n); }
        if (CACHE > 5u) { q += squares(c5, m, t + 5u * WG < n); }
        if (CACHE > 6u) { q += squares(c6, m, t + 6u * WG < n); }
        if (CACHE > 7u) { q += squares(c7, m, t + 7u * WG < n); }
    } else {
        for (var i = t; i < n; i += WG) {
            q += squares(x[xb + i], m, true);
        }
    }
    let rstd = inverseSqrt(workgroup_sum2(vec2<f32>(q, 0.0), t).x * inv_d + params.eps);
    let r = splat(rstd);
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let has_b = (params.flags & HAS_BIAS) != 0u;
    if (CACHED) {
        store_slot(yb, t, n, c0, m, r, has_w, has_b);
        if (CACHE > 1u) { store_slot(yb, t + 1u * WG, n, c1, m, r, has_w, has_b); }
        if (CACHE > 2u) { store_slot(yb, t + 2u * WG, n, c2, m, r, has_w, has_b); }
        if (CACHE > 3u) { store_slot(yb, t + 3u * WG, n, c3, m, r, has_w, has_b); }
        if (CACHE > 4u) { store_slot(yb, t + 4u * WG, n, c4, m, r, has_w, has_b); }
        if (CACHE > 5u) { store_slot(yb, t + 5u * WG, n, c5, m, r, has_w, has_b); }
        if (CACHE > 6u) { store_slot(yb, t + 6u * WG, n, c6, m, r, has_w, has_b); }
        if (CACHE > 7u) { store_slot(yb, t + 7u * WG, n, c7, m, r, has_w, has_b); }
    } else {
        for (var i = t; i < n; i += WG) {
            store_slot(yb, i, n, x[xb + i], m, r, has_w, has_b);
        }
    }
    if (t == 0u) {
        stats[params.stats_offset + 2u * row] = mean;
        stats[params.stats_offset + 2u * row + 1u] = rstd;
    }
}
