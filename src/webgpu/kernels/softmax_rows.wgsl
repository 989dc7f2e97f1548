// SOFTMAX / LOG_SOFTMAX along an axis: x [rows, D] (any strides;
// params.red_x[0].x is x's stride along the axis) -> out [rows, D].
//   softmax:     exp(x - max) / sum(exp(x - max))
//   log_softmax: x - max - log(sum(exp(x - max)))
// Computed in f32 with an online (running max, rescaled sum) pass over the row,
// then a pass that writes (the row is read twice; contiguous rows of up to
// 32768 elements take softmax_cached.wgsl instead, which reads them once). A NaN or +inf in a row makes the whole row NaN, and a
// row of -inf gives NaN, as the CPU oracle (max - max = NaN). Empty state: s = 0.
//
// Workgroup WX x WY: WX rows, WY threads per row (thread ty takes positions ty,
// ty + WY, ...). VEC4 (WX = 1, rows contiguous in x and out, D and every row
// start a multiple of 4): vec4 loads and stores.
//
// Prelude: WX, WY, VEC4, LOG; bindings 1 x, 2 x4 with load(i) -> f32 and
// load4(i) -> vec4<f32>; binding 3 out (array<f32>, or array<vec4<f32>> when
// VEC4) with store1(i, f32) and store4(i, vec4<f32>) (the one that does not
// fit the binding is never called).

struct Online {
    m: f32,  // running max (NaN: the row is NaN); meaningless while s = 0
    s: f32,  // sum of exp(x - m); 0: nothing but -inf seen yet
}

fn online_fold(o: Online, v: f32) -> Online {
    let bits = bitcast<u32>(v);
    if (bits == 0xff800000u) {
        return o; // -inf adds exp(-inf) = 0
    }
    if ((bits & 0x7fffffffu) >= 0x7f800000u) {
        let nan = bitcast<f32>(params.nan_bits);
        return Online(nan, nan); // NaN, or +inf: exp(inf - inf) = NaN
    }
    if (o.s == 0.0) {
        return Online(v, 1.0);
    }
    if (v > o.m) {
        return Online(v, o.s * exp(o.m - v) + 1.0);
    }
    return Online(o.m, o.s + exp(v - o.m));
}

fn online_merge(a: Online, b: Online) -> Online {
    if (f32_is_nan(a.m)) {
        return a;
    }
    if (f32_is_nan(b.m)) {
        return b;
    }
    if (b.s == 0.0) {
        return a;
    }
    if (a.s == 0.0) {
        return b;
    }
    let m = max(a.m, b.m);
    return Online(m, a.s * exp(a.m - m) + b.s * exp(b.m - m));
}

var<workgroup> shared_m: array<f32, WX * WY>;
var<workgroup> shared_s: array<f32, WX * WY>;

fn soft(v: f32, m: f32, scale: f32) -> f32 {
    if (LOG) {
        return v - m - scale; // scale = log(sum)
    }
    return exp(v - m) * scale; // scale = 1 / sum
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let g = group_index(wid, nwg);
    if (g >= params.n_groups) {
        return;
    }
    let row = g * WX + lid.x;
    let valid = row < params.n_rows;
    let n = params.row_len;
    let x_stride = params.red_x[0].x;
    var base = vec2<u32>(0u, 0u);
    var o = Online(0.0, 0.0);
    if (valid) {
        base = row_offsets(row);
        if (VEC4) {
            let first4 = base.x / 4u;
            for (var k = lid.y; k < n / 4u; k += WY) {
                let v = load4(first4 + k);
                o = online_fold(o, v.x);
                o = online_fold(o, v.y);
                o = online_fold(o, v.z);
                o = online_fold(o, v.w);
            }
        } else {
            for (var p = lid.y; p < n; p += WY) {
                o = online_fold(o, load(base.x + p * x_stride));
            }
        }
    }

    // Merge the WY partial (max, sum) pairs of each row.
    let slot = lid.y * WX + lid.x;
    shared_m[slot] = o.m;
    shared_s[slot] = o.s;
    workgroupBarrier();
    for (var step = WY / 2u; step > 0u; step >>= 1u) {
        if (lid.y < step) {
            let merged = online_merge(Online(shared_m[slot], shared_s[slot]),
                                      Online(shared_m[slot + step * WX], shared_s[slot + step * WX]));
            shared_m[slot] = merged.m;
            shared_s[slot] = merged.s;
        }
        workgroupBarrier();
    }
    if (!valid) {
        return;
    }
    let m = shared_m[lid.x];
    let s = shared_s[lid.x];
    var scale = 1.0 / s;
    if (LOG) {
        scale = log(s);
    }
    if (VEC4) {
        let first4 = base.x / 4u;
        let out4 = base.y / 4u;
        for (var k = lid.y; k < n / 4u; k += WY) {
            let v = load4(first4 + k);
            store4(out4 + k, vec4<f32>(soft(v.x, m, scale), soft(v.y, m, scale), soft(v.z, m, scale),
                                       soft(v.w, m, scale)));
        }
    } else {
        let out_stride = params.out_axis_stride;
        for (var p = lid.y; p < n; p += WY) {
            store1(base.y + p * out_stride, soft(load(base.x + p * x_stride), m, scale));
        }
    }
}
