// BATCH_NORM_FORWARD and BATCH_NORM_BACKWARD (WGT_KERNEL_CONV, contracts in
// src/backend.h), one workgroup of 256 per channel c over the [N, C, L] view:
// element (n, l) of channel c is at (n C + c) L + l.
//
// Forward (BACKWARD false): training: mean, then the biased variance around
// it (two passes: no cancellation), written to mean / var; eval: mean / var
// are read. Then y = (x - mean) rstd w + b.
// Backward (BACKWARD true): sums of dy and dy xhat; dw = sum dy xhat, db = sum
// dy; dx = w rstd (dy - mean(dy) - xhat mean(dy xhat)) when training, else
// w rstd dy. (y is dx, and the `b` binding is dy in backward.)
// Prelude (webgpu_conv.c): const BACKWARD: bool.

struct Params {
    n: u32, c: u32, l: u32, flags: u32,   // 1 training, 2 has weight, 4 has bias
    eps: f32, x_offset: u32, w_offset: u32, b_offset: u32,
    mean_offset: u32, var_offset: u32, y_offset: u32, dw_offset: u32,
    db_offset: u32, pad0: u32, pad1: u32, pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;       // bias (forward), dy (backward)
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // y (forward), dx (backward)
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> var_: array<f32>;
@group(0) @binding(7) var<storage, read_write> grads: array<f32>; // dw, db (backward)

const TRAINING = 1u;
const HAS_WEIGHT = 2u;
const HAS_BIAS = 4u;

var<workgroup> partial: array<vec2<f32>, 256>;

fn workgroup_sum2(v: vec2<f32>, t: u32) -> vec2<f32> {
    partial[t] = v;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (t < step) { partial[t] = partial[t] + partial[t + step]; }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}


@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let c = wid.x + wid.y * nwg.x;
    if (c >= params.c) { return; }   // uniform per workgroup
    let count = params.n * params.l;
    let L = params.l;
    let stride_n = params.c * L;
    let base = c * L;
    let training = (params.flags & TRAINING) != 0u;
    var m: f32;
    var v: f32;
    if (!BACKWARD && training) {
        var s = 0.0;
        for (var e = t; e < count; e += 256u) { s += x[params.x_offset + (e / L) * stride_n + base + e % L]; }
        m = workgroup_sum2(vec2<f32>(s, 0.0), t).x / f32(count);
        var sq = 0.0;
        for (var e = t; e < count; e += 256u) {
            let d = x[params.x_offset + (e / L) * stride_n + base + e % L] - m;
            sq += d * d;
        }
        v = workgroup_sum2(vec2<f32>(sq, 0.0), t).x / f32(count);
        if (t == 0u) {
            mean[params.mean_offset + c] = m;
            var_[params.var_offset + c] = v;
        }
    } else {
        m = mean[params.mean_offset + c];
        v = var_[params.var_offset + c];
    }
    let rstd = 1.0 / sqrt(v + params.eps);
    var w = 1.0;
    if ((params.flags & HAS_WEIGHT) != 0u) { w = wt[params.w_offset + c]; }
    if (!BACKWARD) {
        let scale = w * rstd;
        var shift = 0.0;
        if ((params.flags & HAS_BIAS) != 0u) { shift = b[params.b_offset + c]; }
        for (var e = t; e < count; e += 256u) {
            let i = (e / L) * stride_n + base + e % L;
            y[params.y_offset + i] = (x[params.x_offset + i] - m) * scale + shift;
        }
        return;
    }
    var sums = vec2<f32>(0.0);
    for (var e = t; e < count; e += 256u) {
        let i = (e / L) * stride_n + base + e % L;
        let g = b[params.b_offset + i];
        sums += vec2<f32>(g, g * (x[params.x_offset + i] - m) * rstd);
    }
    let total = workgroup_sum2(sums, t);
    if (t == 0u) {
        grads[params.dw_offset + c] = total.y;
        grads[params.db_offset + c] = total.x;
    }
    let scale = w * rstd;
    let m_dy = total.x / f32(count);
    let m_dy_xhat = total.y / f32(count);
    for (var e = t; e < count; e += 256u) {
        let i = (e / L) * stride_n + base + e % L;
        let g = b[params.b_offset + i];
        if (training) {
            y[params.y_offset + i] = scale * (g - m_dy - (x[params.x_offset + i] - m) * rstd * m_dy_xhat);
        } else {
            y[params.y_offset + i] = scale * g;
        }
    }
}
