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
// The loads of row i + 1 (x, dy, the gradient added into, stats) are issued
// before row i's sums: a workgroup walks its rows one after another, with a
// workgroup sum (barriers) each, and few workgroups share an SM (the GPT's
// 1024 chunks of 64 threads), so without it every row waited for its loads.

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

fn x_slot(base: u32, i: u32, n: u32) -> V {
    return x[base + min(i, n - 1u)];
}

// xhat of slot i from its raw x (zeros past the row).
fn xhat_of(xr: V, i: u32, n: u32, m: V, r: V) -> V {
    return select(splat(0.0), (xr - m) * r, i < n);
}

fn weight_slot(i: u32, n: u32, has_w: bool) -> V {
    if (!has_w) {
        return splat(1.0);
    }
    return weight[params.w_offset + min(i, n - 1u)];
}

// ACCUMULATE: slot i of the gradient dx holds on entry, loaded with the row's
// x and dy so that its latency hides behind the row's sums (loaded just
// before the store, the folded call took 52.5 us against an unfolded one's
// 31.2 in one H200 profile, about the separate add it replaces:
// bench/results/h200-2026-11-28h p2); zeros otherwise.
fn acc_slot(base: u32, i: u32, n: u32) -> V {
    if ((params.flags & ACCUMULATE) == 0u) {
        return splat(0.0);
    }
    return select(splat(0.0), dx[base + min(i, n - 1u)], i < n);
}

// One row's loads: the raw x, dy and (ACCUMULATE) dx of slots s0 .. s3 (the
// ones past CACHE zeros) and its (mean, rstd).
struct RowLoads {
    x0: V, x1: V, x2: V, x3: V,
    d0: V, d1: V, d2: V, d3: V,
    a0: V, a1: V, a2: V, a3: V,
    st: vec2<f32>,
}

fn load_row(row: u32, n: u32, s0: u32, s1: u32, s2: u32, s3: u32) -> RowLoads {
    var l: RowLoads;
    let xb = params.x_offset + row * n;
    let yb = params.dy_offset + row * n;
    let ob = params.y_offset + row * n;
    l.x0 = x_slot(xb, s0, n); l.d0 = dy_slot(yb, s0, n); l.a0 = acc_slot(ob, s0, n);
    l.x1 = splat(0.0); l.d1 = splat(0.0); l.a1 = splat(0.0);
    l.x2 = splat(0.0); l.d2 = splat(0.0); l.a2 = splat(0.0);
    l.x3 = splat(0.0); l.d3 = splat(0.0); l.a3 = splat(0.0);
    if (CACHE > 1u) { l.x1 = x_slot(xb, s1, n); l.d1 = dy_slot(yb, s1, n); l.a1 = acc_slot(ob, s1, n); }
    if (CACHE > 2u) { l.x2 = x_slot(xb, s2, n); l.d2 = dy_slot(yb, s2, n); l.a2 = acc_slot(ob, s2, n); }
    if (CACHE > 3u) { l.x3 = x_slot(xb, s3, n); l.d3 = dy_slot(yb, s3, n); l.a3 = acc_slot(ob, s3, n); }
    l.st = vec2<f32>(stats[params.stats_offset + 2u * row], stats[params.stats_offset + 2u * row + 1u]);
    return l;
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
    var next = load_row(first, n, s0, s1, s2, s3);
    for (var row = first; row < last; row++) {
        let cur = next;
        if (row + 1u < last) { next = load_row(row + 1u, n, s0, s1, s2, s3); }   // in flight during this row
        let ob = params.y_offset + row * n;
        let m = splat(cur.st.x);
        let r = splat(cur.st.y);
        let d0 = cur.d0; let d1 = cur.d1; let d2 = cur.d2; let d3 = cur.d3;
        let a0 = cur.a0; let a1 = cur.a1; let a2 = cur.a2; let a3 = cur.a3;
        let h0 = xhat_of(cur.x0, s0, n, m, r);
        var h1 = splat(0.0); var h2 = splat(0.0); var h3 = splat(0.0);
        if (CACHE > 1u) { h1 = xhat_of(cur.x1, s1, n, m, r); }
        if (CACHE > 2u) { h2 = xhat_of(cur.x2, s2, n, m, r); }
        if (CACHE > 3u) { h3 = xhat_of(cur.x3, s3, n, m, r); }
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
