// SGD step (torch.optim.SGD, maximize = false), per element i:
//   g = grad * grad_scale;  if weight_decay != 0: g += weight_decay * p
//   MOMENTUM: buf = first_step ? g : momentum * buf + (1 - dampening) * g
//             g = NESTEROV ? g + momentum * buf : buf
//   p -= lr * g
// Bindings (after optimizer_common.wgsl): 3 momentum buffer (MOMENTUM only).
// Prelude: alias V, const MOMENTUM: bool, const NESTEROV: bool; the prelude declares
// binding 3 `buf` when MOMENTUM, and fn buf_load / buf_store either way.

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = element_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    let p = param[params.param_offset + i];
    var g = grad[params.grad_offset + i] * grad_multiplier();
    if (params.has_weight_decay != 0u) {
        g = g + params.weight_decay * p;
    }
    if (MOMENTUM) {
        var m = g;
        if (params.first_step == 0u) {
            m = params.momentum * buf_load(params.state0_offset + i) + params.keep * g;
        }
        buf_store(params.state0_offset + i, m);
        if (NESTEROV) {
            g = g + params.momentum * m;
        } else {
            g = m;
        }
    }
    param[params.param_offset + i] = p - params.lr * g;
}
