// Batch norm, second dispatch: combine the channel's partials, then y (or dx)
// for this workgroup's chunk (see conv_bn_common.wgsl). (b is the bias
// forward and dy backward; y is y forward and dx backward.)

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> partials: array<vec2<f32>>;   // [C][splits]
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<storage, read_write> mean: array<f32>;
@group(0) @binding(7) var<storage, read_write> var_: array<f32>;
@group(0) @binding(8) var<storage, read_write> grads: array<f32>;      // dw [C], then db [C]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.n_groups) { return; }
    let c = id / params.splits;
    let s = id % params.splits;
    let range = chunk_range(s);
    let total = f32(params.n * params.l);
    let training = (params.flags & TRAINING) != 0u;
    var w = 1.0;
    if ((params.flags & HAS_WEIGHT) != 0u) { w = wt[params.w_offset + c]; }
    if (!BACKWARD) {
        var m: f32;
        var v: f32;
        if (training) {
            // Chan et al.: merge (count, mean, M2) of the chunks in order
            var n_a = 0.0;
            m = 0.0;
            var m2 = 0.0;
            for (var k = 0u; k < params.splits; k++) {
                let r = chunk_range(k);
                let n_b = f32(r.y - r.x);
                if (n_b == 0.0) { continue; }
                let p = partials[c * params.splits + k];
                let n_ab = n_a + n_b;
                let delta = p.x - m;
                m = m + delta * (n_b / n_ab);
                m2 = m2 + p.y + delta * delta * (n_a * n_b / n_ab);
                n_a = n_ab;
            }
            v = m2 / total;
            if (s == 0u && t == 0u) {
                mean[params.mean_offset + c] = m;
                var_[params.var_offset + c] = v;
            }
        } else {
            m = mean[params.mean_offset + c];
            v = var_[params.var_offset + c];
        }
        let scale = w / sqrt(v + params.eps);
        var shift = 0.0;
        if ((params.flags & HAS_BIAS) != 0u) { shift = b[params.b_offset + c]; }
        if (STREAM) {
            var k = cursor_at(range.x + t);
            var e = range.x + t;
            for (; e + 768u < range.y; e += 1024u) {
                let i = cursor_next4(&k, c);
                let ix = i + vec4<u32>(params.x_offset);
                let iy = i + vec4<u32>(params.y_offset);
                let v = (vec4<f32>(x[ix.x], x[ix.y], x[ix.z], x[ix.w]) - vec4<f32>(m)) * scale + vec4<f32>(shift);
                y[iy.x] = v.x;
                y[iy.y] = v.y;
                y[iy.z] = v.z;
                y[iy.w] = v.w;
            }
            for (; e < range.y; e += 256u) {
                let i = cursor_index(c, k);
                y[params.y_offset + i] = (x[params.x_offset + i] - m) * scale + shift;
                k = cursor_next(k);
            }
            return;
        }
        for (var e = range.x + t; e < range.y; e += 256u) {
            let i = element(c, e);
            y[params.y_offset + i] = (x[params.x_offset + i] - m) * scale + shift;
        }
        return;
    }
    var sums = vec2<f32>(0.0);
    for (var k = 0u; k < params.splits; k++) { sums += partials[c * params.splits + k]; }
    if (s == 0u && t == 0u) {
        grads[params.grads_offset + c] = sums.y;
        grads[params.grads_offset + params.c + c] = sums.x;
    }
    let m = mean[params.mean_offset + c];
    let rstd = 1.0 / sqrt(var_[params.var_offset + c] + params.eps);
    let scale = w * rstd;
    let m_dy = sums.x / total;
    let m_dy_xhat = sums.y / total;
    if (STREAM && training) {
        var k = cursor_at(range.x + t);
        var e = range.x + t;
        for (; e + 768u < range.y; e += 1024u) {
            let i = cursor_next4(&k, c);
            let ig = i + vec4<u32>(params.b_offset);
            let ix = i + vec4<u32>(params.x_offset);
            let iy = i + vec4<u32>(params.y_offset);
            let g = vec4<f32>(b[ig.x], b[ig.y], b[ig.z], b[ig.w]);
            let xv = vec4<f32>(x[ix.x], x[ix.y], x[ix.z], x[ix.w]);
            let d = scale * (g - vec4<f32>(m_dy) - (xv - vec4<f32>(m)) * rstd * m_dy_xhat);
            y[iy.x] = d.x;
            y[iy.y] = d.y;
            y[iy.z] = d.z;
            y[iy.w] = d.w;
        }
        for (; e < range.y; e += 256u) {
            let i = cursor_index(c, k);
            let g = b[params.b_offset + i];
            y[params.y_offset + i] = scale * (g - m_dy - (x[params.x_offset + i] - m) * rstd * m_dy_xhat);
            k = cursor_next(k);
        }
        return;
    }
    for (var e = range.x + t; e < range.y; e += 256u) {
        let i = element(c, e);
        let g = b[params.b_offset + i];
        if (training) {
            y[params.y_offset + i] = scale * (g - m_dy - (x[params.x_offset + i] - m) * rstd * m_dy_xhat);
        } else {
            y[params.y_offset + i] = scale * g;
        }
    }
}
