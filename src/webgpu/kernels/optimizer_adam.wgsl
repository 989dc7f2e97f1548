// Adam / AdamW step (torch.optim.Adam / AdamW, amsgrad = false), per element i:
//   g = grad * grad_scale
//   DECOUPLED (AdamW): p *= 1 - lr * weight_decay
//   else (Adam):       if weight_decay != 0: g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Bindings (after optimizer_common.wgsl): 3 exp_avg (m), 4 exp_avg_sq (v).
// Prelude: alias V, const DECOUPLED: bool, fn grad_multiplier() -> f32 (grad_scale,
// times a scale buffer bound after exp_avg_sq when the call has one).

@group(0) @binding(3) var<storage, read_write> exp_avg: array<V>;
@group(0) @binding(4) var<storage, read_write> exp_avg_sq: array<V>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = element_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    var p = param[params.param_offset + i];
    var g = grad[params.grad_offset + i] * grad_multiplier();
    if (DECOUPLED) {
        p = p * params.decay;
    } else if (params.has_weight_decay != 0u) {
        g = g + params.weight_decay * p;
    }
    let m = params.beta1 * exp_avg[params.state0_offset + i] + params.one_minus_beta1 * g;
    let v = params.beta2 * exp_avg_sq[params.state1_offset + i] + params.one_minus_beta2 * (g * g);
    exp_avg[params.state0_offset + i] = m;
    exp_avg_sq[params.state1_offset + i] = v;
    let denom = sqrt(v) * params.inv_sqrt_bc2 + params.eps;
    param[params.param_offset + i] = p - params.step_size * (m / denom);
}
