// NORM: layer norm or rms norm forward, one workgroup per row.
//   x [R, D], weight [D]?, bias [D]? -> y [R, D], stats [R, 2] = (mean, rstd)
//   layer: mean = sum x / D, var = sum (x - mean)^2 / D (two passes over the
//          registers, not E[x^2] - mean^2, which cancels); rms: mean = 0.
//   y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps).
// When CACHED the row is read once (kept in CACHE registers per thread) and
// written once; else it is read three times.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> bias: array<V>;
@group(0) @binding(4) var<storage, read_write> y: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

fn affine(v: V, m: V, r: V, i: u32, has_w: bool, has_b: bool) -> V {
    var o = (v - m) * r;
    if (has_w) {
        o = o * weight[params.w_offset + i];
    }
    if (has_b) {
        o = o + bias[params.b_offset + i];
    }
    return o;
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

    var cache: array<V, CACHE>;
    var s = 0.0;
    if (CACHED) {
        for (var k = 0u; k < CACHE; k++) {
            let i = t + k * WG;
            var v = splat(0.0);
            if (i < n) {
                v = x[xb + i];
            }
            cache[k] = v;
            s += hsum(v);
        }
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
        for (var k = 0u; k < CACHE; k++) {
            if (t + k * WG < n) {
                let c = cache[k] - m;
                q += hsum(c * c);
            }
        }
    } else {
        for (var i = t; i < n; i += WG) {
            let c = x[xb + i] - m;
            q += hsum(c * c);
        }
    }
    let rstd = inverseSqrt(workgroup_sum2(vec2<f32>(q, 0.0), t).x * inv_d + params.eps);
    let r = splat(rstd);
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let has_b = (params.flags & HAS_BIAS) != 0u;
    if (CACHED) {
        for (var k = 0u; k < CACHE; k++) { // constant trip count: the cache stays in registers
            let i = t + k * WG;
            if (i < n) {
                y[yb + i] = affine(cache[k], m, r, i, has_w, has_b);
            }
        }
    } else {
        for (var i = t; i < n; i += WG) {
            y[yb + i] = affine(x[xb + i], m, r, i, has_w, has_b);
        }
    }
    if (t == 0u) {
        stats[params.stats_offset + 2u * row] = mean;
        stats[params.stats_offset + 2u * row + 1u] = rstd;
    }
}
