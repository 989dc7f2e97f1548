// OPTIMIZER: the parameter block shared by optimizer_sgd.wgsl and
// optimizer_adam.wgsl (webgpu_optimizer.c fills it; struct optimizer_params).
// Every view is contiguous f32, n elements from its offset (in elements) in
// its buffer. Prelude: `alias V = f32;` or, when n and every offset are
// multiples of 4, `alias V = vec4<f32>;` with n and offsets counted in vec4
// (every operation below is componentwise, so one text serves both). The hyperparameters arrive per dispatch, rounded to f32 once on
// the host, so a new learning rate or bias correction changes a uniform and
// never a pipeline.
//
// Dispatch: ceil(n / 256) workgroups of 256, folded into (x, y) by
// webgpu_grid; invocation i updates element (or vec4) i.

struct Params {
    n: u32,               // elements (vec4s when V is vec4<f32>)
    param_offset: u32,
    grad_offset: u32,
    state0_offset: u32,   // SGD momentum buffer, Adam exp_avg
    state1_offset: u32,   // Adam exp_avg_sq
    first_step: u32,      // SGD: 1 on the parameter's first step (buffer = grad)
    has_weight_decay: u32,
    scale_offset: u32,    // the scale buffer's element, when the prelude binds one
    lr: f32,
    weight_decay: f32,
    grad_scale: f32,      // the gradient is multiplied by grad_multiplier() (prelude) first
    momentum: f32,        // SGD
    keep: f32,            // SGD: 1 - dampening
    beta1: f32,           // Adam: beta1, 1 - beta1, beta2, 1 - beta2
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
    step_size: f32,       // Adam: lr / (1 - beta1^step)
    inv_sqrt_bc2: f32,    // Adam: 1 / sqrt(1 - beta2^step)
    eps: f32,
    decay: f32,           // AdamW: 1 - lr * weight_decay
    _pad1: f32,
    _pad2: f32,
    _pad3: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grad: array<V>;
@group(0) @binding(2) var<storage, read_write> param: array<V>;

fn element_index(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
    return (wid.x + wid.y * nwg.x) * 256u + lid.x;
}
