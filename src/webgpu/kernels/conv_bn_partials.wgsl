// Batch norm, first dispatch: per (channel, chunk) partials (see
// conv_bn_common.wgsl). Forward: (chunk mean, sum of squared deviations);
// backward: (sum dy, sum dy xhat) with the saved mean and var.

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
