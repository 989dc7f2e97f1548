// CROSS_ENTROPY_BACKWARD: dlogits in one pass, one workgroup per row.
//   logits [R, C], targets i32 [R], lse [R], g [R] (stride g_stride, 0 = one
//   scale) -> dlogits [R, C] = (exp(logits - lse) - onehot(tgt)) * g[row],
//   all zeros in a row whose tgt is ignore_index.
// Prelude extra: onehot(i, tgt) -> V, 1 in the lane at element tgt.

@group(0) @binding(1) var<storage, read> logits: array<V>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogits: array<V>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let n = params.d / W;
    let xb = params.x_offset + row * n;
    let ob = params.y_offset + row * n;
    let tgt = targets[params.t_offset + row * params.t_stride];
    let scale = g[params.g_offset + row * params.g_stride];
    let ignored = params.ignore_valid != 0u && tgt == params.ignore_index;
    let l = splat(lse[params.lse_offset + row]);
    let sc = splat(scale);
    for (var i = lid.x; i < n; i += WG) {
        var v = (exp(logits[xb + i] - l) - onehot(i, tgt)) * sc;
        if (ignored) {
            v = splat(0.0);
        }
        dlogits[ob + i] = v;
    }
}
