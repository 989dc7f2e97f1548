/*
 * CPU OPTIMIZER: one fused update of a parameter tensor and its state, the
 * reference for kernels/optimizer_sgd.wgsl and kernels/optimizer_adam.wgsl.
 *
 *   grad [n] f32 -> param [n] f32, state [n] f32 (momentum buffer, or exp_avg
 *   and exp_avg_sq), all updated in place; optional inputs[1] [] f32 also
 *   multiplies the gradient (the gradient-clipping scale, left on the device).
 *
 * The arithmetic is f32 in the same order as the WGSL kernels (so the two
 * backends agree to rounding); the hyperparameters arrive as doubles and are
 * rounded to f32 once, as the GPU receives them. PyTorch's equations are in
 * docs/ops.md "Optimizers".
 */
#include <math.h>

#include "cpu/cpu_internal.h"

/* The views the update touches, checked here rather than by the generic call
 * check (its input/output counts are per kind and fixed). */
static wgt_status check_optimizer_views(cpu_backend *b, const wgt_kernel_call *call, int64_t *n)
{
    int want_state = call->optimizer.kind == WGT_OPTIMIZER_SGD ? (call->optimizer.momentum != 0.0 ? 1 : 0) : 2;
    if (call->n_inputs < 1 || call->n_inputs > 2 || call->n_outputs != 1 + want_state)
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%d inputs and %d outputs, expected 1 (or 2) and %d",
                        call->n_inputs, call->n_outputs, 1 + want_state);
    if (call->n_inputs == 2) { /* the device-side gradient scale: one f32 */
        const wgt_tensor_view *s = &call->inputs[1];
        if (s->dtype != WGT_F32 || wgt_shape_numel(s->ndim, s->shape) != 1 || !s->storage || !s->storage->handle ||
            s->offset < 0 || (uint64_t)(s->offset + 1) * 4u > s->storage->bytes)
            return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "the gradient scale must be one f32 inside its storage");
    }
    const wgt_tensor_view *param = &call->outputs[0];
    *n = wgt_shape_numel(param->ndim, param->shape);
    for (int i = 0; i < 1 + call->n_outputs; i++) {
        const wgt_tensor_view *v = i == 0 ? &call->inputs[0] : &call->outputs[i - 1];
        if (v->dtype != WGT_F32 || !wgt_view_is_contiguous(v))
            return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "view %d must be contiguous f32 (got %s)", i,
                            wgt_dtype_name(v->dtype));
        if (wgt_shape_numel(v->ndim, v->shape) != *n)
            return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "view %d has %lld elements, the parameter %lld", i,
                            (long long)wgt_shape_numel(v->ndim, v->shape), (long long)*n);
        if (*n > 0 && (!v->storage || !v->storage->handle || v->offset < 0 ||
                       (uint64_t)(v->offset + *n) * 4u > v->storage->bytes))
            return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "view %d lies outside its storage", i);
    }
    return WGT_OK;
}

/* grad_scale times the optional device-side scale (inputs[1]): with
 * grad_scale 1 exactly the clip's g * scale, as a separate multiply gave. */
static float grad_multiplier(const wgt_kernel_call *call)
{
    float scale = (float)call->optimizer.grad_scale;
    if (call->n_inputs == 2) scale *= *(const float *)cpu_view_data(&call->inputs[1]);
    return scale;
}

static void sgd_update(const wgt_kernel_call *call, int64_t n, const float *grad, float *param, float *buf)
{
    const float lr = (float)call->optimizer.lr, wd = (float)call->optimizer.weight_decay;
    const float momentum = (float)call->optimizer.momentum, keep = (float)(1.0 - call->optimizer.dampening);
    const float scale = grad_multiplier(call);
    const bool nesterov = call->optimizer.nesterov, first = call->optimizer.first_step;
#pragma omp parallel for if (n >= CPU_PARALLEL_THRESHOLD) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float p = param[i];
        float g = grad[i] * scale;
        if (wd != 0.0f) g = g + wd * p;
        if (buf) {
            float m = first ? g : momentum * buf[i] + keep * g;
            buf[i] = m;
            g = nesterov ? g + momentum * m : m;
        }
        param[i] = p - lr * g;
    }
}

static void adam_update(const wgt_kernel_call *call, int64_t n, const float *grad, float *param, float *exp_avg,
                        float *exp_avg_sq)
{
    const double lr = call->optimizer.lr;
    const bool decoupled = call->optimizer.kind == WGT_OPTIMIZER_ADAMW;
    const float wd = (float)call->optimizer.weight_decay, scale = grad_multiplier(call);
    const float decay = (float)(1.0 - lr * call->optimizer.weight_decay); /* AdamW */
    const float beta1 = (float)call->optimizer.beta1, beta2 = (float)call->optimizer.beta2;
    const float one_minus_beta1 = (float)(1.0 - call->optimizer.beta1);
    const float one_minus_beta2 = (float)(1.0 - call->optimizer.beta2);
    const float step_size = (float)(lr / call->optimizer.bias_correction1);
    const float inv_sqrt_bc2 = (float)(1.0 / sqrt(call->optimizer.bias_correction2));
    const float eps = (float)call->optimizer.eps;
#pragma omp parallel for if (n >= CPU_PARALLEL_THRESHOLD) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float p = param[i];
        float g = grad[i] * scale;
        if (decoupled) {
            p = p * decay;
        } else if (wd != 0.0f) {
            g = g + wd * p;
        }
        float m = beta1 * exp_avg[i] + one_minus_beta1 * g;
        float v = beta2 * exp_avg_sq[i] + one_minus_beta2 * (g * g);
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        float denom = sqrtf(v) * inv_sqrt_bc2 + eps;
        param[i] = p - step_size * (m / denom);
    }
}

bool cpu_optimizer_supports(const wgt_kernel_call *call)
{
    if ((unsigned)call->optimizer.kind >= WGT_OPTIMIZER_KIND_COUNT) return false;
    for (int i = 0; i < call->n_outputs && i < 3; i++)
        if (call->outputs[i].dtype != WGT_F32) return false;
    if (call->n_inputs == 2 && call->inputs[1].dtype != WGT_F32) return false;
    return (call->n_inputs == 1 || call->n_inputs == 2) && call->inputs[0].dtype == WGT_F32;
}

wgt_status cpu_run_optimizer(cpu_backend *b, const wgt_kernel_call *call)
{
    if (!cpu_optimizer_supports(call))
        return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "optimizer update supports f32 parameters and gradients only");
    int64_t n = 0;
    wgt_status s = check_optimizer_views(b, call, &n);
    if (s != WGT_OK || n == 0) return s;
    b->execution.dispatches++;
    const float *grad = (const float *)cpu_view_data(&call->inputs[0]);
    float *param = (float *)cpu_view_data(&call->outputs[0]);
    if (call->optimizer.kind == WGT_OPTIMIZER_SGD) {
        float *buf = call->n_outputs > 1 ? (float *)cpu_view_data(&call->outputs[1]) : NULL;
        sgd_update(call, n, grad, param, buf);
    } else {
        adam_update(call, n, grad, param, (float *)cpu_view_data(&call->outputs[1]),
                    (float *)cpu_view_data(&call->outputs[2]));
    }
    return WGT_OK;
}
