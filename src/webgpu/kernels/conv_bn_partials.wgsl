// Batch norm, first dispatch: per (channel, chunk) partials (see
// conv_bn_common.wgsl). Forward: (chunk mean, sum of squared deviations);
// backward: (sum dy, sum dy xhat) with the saved mean and var.
// Prelude const WELFORD (WGT_BN_WELFORD, forward; implies STREAM's walk): the
// forward's chunk statistics in one pass over x instead of two (a mean, then
// the squared deviations from it): Welford's update per invocation, Chan's
// merge over the workgroup, still no cancellation. The two passes read
// ResNet-18's stem activations (205 MB) twice from memory.

var<workgroup> partial3: array<vec3<f32>, 256>;

// (count, mean, M2) after one more value.
fn welford(s: vec3<f32>, v: f32) -> vec3<f32> {
    let n = s.x + 1.0;
    let d = v - s.y;
    let m = s.y + d / n;
    return vec3<f32>(n, m, s.z + d * (v - m));
}

// Chan et al.: two (count, mean, M2) merged.
fn chan(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    if (b.x == 0.0) { return a; }
    if (a.x == 0.0) { return b; }
    let n = a.x + b.x;
    let d = b.y - a.y;
    return vec3<f32>(n, a.y + d * (b.x / n), a.z + b.z + d * d * (a.x * b.x / n));
}

// The workgroup's merged (count, mean, M2); every invocation gets it.
fn workgroup_chan(v: vec3<f32>, t: u32) -> vec3<f32> {
    partial3[t] = v;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (t < step) { partial3[t] = chan(partial3[t], partial3[t + step]); }
        workgroupBarrier();
    }
    let r = partial3[0];
    workgroupBarrier();
    return r;
}

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;    // backward only
@group(0) @binding(3) var<storage, read> mean: array<f32>;  // backward only
@group(0) @binding(4) var<storage, read> var_: array<f32>;  // backward only
@group(0) @binding(5) var<storage, read_write> partials: array<vec2<f32>>; // [C][splits]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.n_groups) { return; }   // uniform per workgroup
    let c = id / params.splits;
    let s = id % params.splits;
    let range = chunk_range(s);
    if (!BACKWARD && WELFORD) {
        // one pass: each invocation's (count, mean, M2) by Welford's update,
        // merged over the workgroup by Chan's formula
        var st = vec3<f32>(0.0);
        var k = cursor_at(range.x + t);
        var e = range.x + t;
        for (; e + 768u < range.y; e += 1024u) {
            let i = cursor_next4(&k, c) + vec4<u32>(params.x_offset);
            let v = vec4<f32>(x[i.x], x[i.y], x[i.z], x[i.w]);
            st = welford(st, v.x);
            st = welford(st, v.y);
            st = welford(st, v.z);
            st = welford(st, v.w);
        }
        for (; e < range.y; e += 256u) {
            st = welford(st, x[params.x_offset + cursor_index(c, k)]);
            k = cursor_next(k);
        }
        let total = workgroup_chan(st, t);
        if (t == 0u) { partials[id] = total.yz; }
        return;
    }
    if (!BACKWARD) {
        var sum = 0.0;
        let count = f32(max(range.y - range.x, 1u));
        if (STREAM) {
            var k = cursor_at(range.x + t);
            var e = range.x + t;
            for (; e + 768u < range.y; e += 1024u) {
                let i = cursor_next4(&k, c) + vec4<u32>(params.x_offset);
                let v = vec4<f32>(x[i.x], x[i.y], x[i.z], x[i.w]);
                sum += v.x;
                sum += v.y;
                sum += v.z;
                sum += v.w;
            }
            for (; e < range.y; e += 256u) {
                sum += x[params.x_offset + cursor_index(c, k)];
                k = cursor_next(k);
            }
        } else {
            for (var e = range.x + t; e < range.y; e += 256u) { sum += x[params.x_offset + element(c, e)]; }
        }
        let m = workgroup_sum2(vec2<f32>(sum, 0.0), t).x / count;
        var sq = 0.0;
        if (STREAM) {
            var k = cursor_at(range.x + t);
            var e = range.x + t;
            for (; e + 768u < range.y; e += 1024u) {
                let i = cursor_next4(&k, c) + vec4<u32>(params.x_offset);
                let d = vec4<f32>(x[i.x], x[i.y], x[i.z], x[i.w]) - vec4<f32>(m);
                sq += d.x * d.x;
                sq += d.y * d.y;
                sq += d.z * d.z;
                sq += d.w * d.w;
            }
            for (; e < range.y; e += 256u) {
                let d = x[params.x_offset + cursor_index(c, k)] - m;
                sq += d * d;
                k = cursor_next(k);
            }
        } else {
            for (var e = range.x + t; e < range.y; e += 256u) {
                let d = x[params.x_offset + element(c, e)] - m;
                sq += d * d;
            }
        }
        let m2 = workgroup_sum2(vec2<f32>(sq, 0.0), t).x;
        if (t == 0u) { partials[id] = vec2<f32>(m, m2); }
        return;
    }
    let m = mean[params.mean_offset + c];
    let rstd = 1.0 / sqrt(var_[params.var_offset + c] + params.eps);
    var sums = vec2<f32>(0.0);
    if (STREAM) {
        var k = cursor_at(range.x + t);
        var e = range.x + t;
        for (; e + 768u < range.y; e += 1024u) {
            let i = cursor_next4(&k, c);
            let ig = i + vec4<u32>(params.b_offset);
            let ix = i + vec4<u32>(params.x_offset);
            let g = vec4<f32>(dy[ig.x], dy[ig.y], dy[ig.z], dy[ig.w]);
            let xv = vec4<f32>(x[ix.x], x[ix.y], x[ix.z], x[ix.w]);
            sums += vec2<f32>(g.x, g.x * (xv.x - m) * rstd);
            sums += vec2<f32>(g.y, g.y * (xv.y - m) * rstd);
            sums += vec2<f32>(g.z, g.z * (xv.z - m) * rstd);
            sums += vec2<f32>(g.w, g.w * (xv.w - m) * rstd);
        }
        for (; e < range.y; e += 256u) {
            let i = cursor_index(c, k);
            let g = dy[params.b_offset + i];
            sums += vec2<f32>(g, g * (x[params.x_offset + i] - m) * rstd);
            k = cursor_next(k);
        }
    } else {
        for (var e = range.x + t; e < range.y; e += 256u) {
            let i = element(c, e);
            let g = dy[params.b_offset + i];
            sums += vec2<f32>(g, g * (x[params.x_offset + i] - m) * rstd);
        }
    }
    let total = workgroup_sum2(sums, t);
    if (t == 0u) { partials[id] = total; }
}
