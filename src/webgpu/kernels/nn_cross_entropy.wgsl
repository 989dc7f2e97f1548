// CROSS_ENTROPY: fused log-softmax + NLL, one workgroup per row.
//   logits [R, C], targets i32 [R] -> loss [R], lse [R]
//   lse = log sum exp(logits); loss = lse - logits[tgt];
//   loss = 0 where tgt == ignore_index; NaN where tgt is outside [0, C).
// The row is read once: each thread keeps a running (max, sum of exp(v - max))
// over its V slots, rescaled when the max grows, merged across the workgroup.
// A NaN logit makes lse NaN; +inf gives exp(inf - inf) = NaN, as the CPU.
// Prelude extras: vmax(V) -> f32 (largest lane), vnan(V) -> bool.

@group(0) @binding(1) var<storage, read> logits: array<V>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> logits1: array<f32>; // the same buffer, element access
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse_out: array<f32>;

var<workgroup> wg_max: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let t = lid.x;
    let n = params.d / W;
    let base = params.x_offset + row * n;
    let lowest = -3.4028234e38;
    var m = lowest;
    var s = 0.0;
    var nan = false;
    for (var i = t; i < n; i += WG) {
        let v = logits[base + i];
        nan = nan || vnan(v);
        let m_new = max(m, vmax(v));
        s = s * exp(m - m_new) + hsum(exp(v - splat(m_new)));
        m = m_new;
    }
    // merge (m, s) pairs: the workgroup max first, then the rescaled sums
    wg_max[t] = m;
    workgroupBarrier();
    for (var step = WG / 2u; step > 0u; step >>= 1u) {
        if (t < step) {
            wg_max[t] = max(wg_max[t], wg_max[t + step]);
        }
        workgroupBarrier();
    }
    let row_max = wg_max[0];
    var scaled = s * exp(m - row_max);
    if (s == 0.0) {
        scaled = 0.0; // exp(lowest - row_max) is 0 anyway; avoids inf * 0
    }
    let any_nan = workgroup_sum2(vec2<f32>(scaled, select(0.0, 1.0, nan)), t);
    if (t == 0u) {
        var lse = row_max + log(any_nan.x);
        if (any_nan.y > 0.0) {
            lse = bitcast<f32>(params.nan_bits);
        }
        let tgt = targets[params.t_offset + row * params.t_stride];
        var l = 0.0;
        if (params.ignore_valid == 0u || tgt != params.ignore_index) {
            if (tgt < 0 || u32(tgt) >= params.d) {
                l = bitcast<f32>(params.nan_bits);
            } else {
                l = lse - logits1[params.x_offset * W + row * params.d + u32(tgt)];
            }
        }
        loss[params.g_offset + row] = l;
        lse_out[params.lse_offset + row] = lse;
    }
}
