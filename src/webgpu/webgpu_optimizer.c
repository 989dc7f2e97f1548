/*
 * WebGPU OPTIMIZER: one fused SGD / Adam / AdamW step of a parameter tensor.
 *
 *   grad [n] f32 (read) -> param [n] f32, state [n] f32 (read and written)
 *
 * Kernels: optimizer_common.wgsl (the Params block, bindings 1 grad and
 * 2 param) followed by optimizer_sgd.wgsl (binding 3 the momentum buffer, when
 * momentum != 0) or optimizer_adam.wgsl (bindings 3 exp_avg, 4 exp_avg_sq).
 * With a second input, a [] f32 scale (the gradient-clipping factor, left on
 * the device so the clip needs no per-gradient multiply), bound read-only
 * after the state buffers, multiplies the gradient too.
 * One invocation per element, or per vec4 when every view is 4-aligned. The
 * pipelines are specialized only by what changes the code (momentum on/off,
 * Nesterov, Adam vs AdamW, vec4): at most ten pipelines ever, whatever the
 * learning rate or step does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#define OPTIMIZER_THREADS 256u

/* Matches struct Params in optimizer_common.wgsl. */
typedef struct optimizer_params {
    uint32_t n, param_offset, grad_offset, state0_offset, state1_offset, first_step, has_weight_decay, scale_offset;
    float lr, weight_decay, grad_scale, momentum, keep;
    float beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, inv_sqrt_bc2, eps, decay;
    float pad1, pad2, pad3;
} optimizer_params;

_Static_assert(sizeof(optimizer_params) == 96, "optimizer_params must match the WGSL Params block");

bool webgpu_optimizer_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if ((unsigned)call->optimizer.kind >= WGT_OPTIMIZER_KIND_COUNT || call->n_inputs < 1 || call->n_inputs > 2)
        return false;
    if (call->n_inputs == 2 && call->inputs[1].dtype != WGT_F32) return false;
    int states = call->optimizer.kind == WGT_OPTIMIZER_SGD ? (call->optimizer.momentum != 0 ? 1 : 0) : 2;
    if (call->n_outputs != 1 + states) return false;
    for (int i = 0; i <= call->n_outputs; i++) {
        const wgt_tensor_view *v = i == 0 ? &call->inputs[0] : &call->outputs[i - 1];
        if (v->dtype != WGT_F32 || !wgt_view_is_contiguous(v)) return false;
    }
    return true;
}

/* Every view has the parameter's element count, fits u32 indexing, lies in
 * its storage, and no two share a buffer (one buffer bound twice in a
 * dispatch, read-only and read-write, is a WebGPU validation error that
 * wgpu-native answers with an abort). */
static wgt_status check_views(webgpu_backend *wg, const wgt_kernel_call *call, uint64_t *n)
{
    const char *op = call->op_name;
    const wgt_tensor_view *param = &call->outputs[0];
    int64_t numel = wgt_shape_numel(param->ndim, param->shape);
    for (int i = 0; i <= call->n_outputs; i++) {
        const wgt_tensor_view *v = i == 0 ? &call->inputs[0] : &call->outputs[i - 1];
        int64_t vn = wgt_shape_numel(v->ndim, v->shape);
        if (vn != numel)
            return wgt_error(wg->base.ctx, WGT_ERR_SHAPE_MISMATCH, "%s: view %d has %lld elements, the parameter %lld",
                             op, i, (long long)vn, (long long)numel);
        if (v->offset < 0 || (uint64_t)v->offset + (uint64_t)numel > UINT32_MAX)
            return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %lld elements at offset %lld exceed 32-bit "
                             "indexing", op, (long long)numel, (long long)v->offset);
        if (numel > 0 && (!v->storage || !v->storage->handle ||
                          ((uint64_t)v->offset + (uint64_t)numel) * 4u > v->storage->bytes))
            return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: view %d lies outside its storage", op, i);
        for (int j = 0; j < i && numel > 0; j++) {
            const wgt_tensor_view *u = j == 0 ? &call->inputs[0] : &call->outputs[j - 1];
            if (webgpu_view_buffer(u) == webgpu_view_buffer(v))
                return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: views %d and %d share one buffer", op,
                                 j, i);
        }
    }
    if (call->n_inputs == 2) { /* the scale: one f32, in no buffer written here */
        const wgt_tensor_view *s = &call->inputs[1];
        if (wgt_shape_numel(s->ndim, s->shape) != 1 || s->offset < 0 || s->offset >= UINT32_MAX || !s->storage ||
            !s->storage->handle || ((uint64_t)s->offset + 1u) * 4u > s->storage->bytes)
            return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the gradient scale must be one f32 inside "
                             "its storage", op);
        for (int j = 0; j < call->n_outputs && numel > 0; j++)
            if (webgpu_view_buffer(&call->outputs[j]) == webgpu_view_buffer(s))
                return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the gradient scale shares a buffer "
                                 "with output %d", op, j);
    }
    *n = (uint64_t)numel;
    return WGT_OK;
}

/* vec4 loads and stores when every view starts at a multiple of 4 elements
 * and n is one too (parameters from the pool always do, but for odd sizes). */
static bool use_vec4(const wgt_kernel_call *call, uint64_t n)
{
    if (n % 4 != 0) return false;
    for (int i = 0; i <= call->n_outputs; i++) {
        const wgt_tensor_view *v = i == 0 ? &call->inputs[0] : &call->outputs[i - 1];
        if (v->offset % 4 != 0) return false;
    }
    return true;
}

static wgt_status get_pipeline(webgpu_backend *wg, const wgt_kernel_call *call, bool vec4, webgpu_pipeline **out)
{
    const char *op = call->op_name;
    bool sgd = call->optimizer.kind == WGT_OPTIMIZER_SGD;
    bool momentum = sgd && call->optimizer.momentum != 0, nesterov = momentum && call->optimizer.nesterov;
    bool decoupled = call->optimizer.kind == WGT_OPTIMIZER_ADAMW, scaled = call->n_inputs == 2;
    char key[64];
    if (sgd)
        snprintf(key, sizeof(key), "optimizer/sgd/%d/%d/%d/%d", (int)momentum, (int)nesterov, (int)vec4, (int)scaled);
    else
        snprintf(key, sizeof(key), "optimizer/adam/%d/%d/%d", (int)decoupled, (int)vec4, (int)scaled);
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;

    char prelude[1024], scale_code[256];
    const char *alias = vec4 ? "alias V = vec4<f32>;\n" : "alias V = f32;\n";
    int n_read_write = 1 + (sgd ? (momentum ? 1 : 0) : 2);
    /* the gradient's multiplier: grad_scale, times the scale buffer (bound
     * after the state buffers) when there is one */
    if (scaled)
        snprintf(scale_code, sizeof(scale_code),
                 "@group(0) @binding(%d) var<storage, read> scale_buf: array<f32>;\n"
                 "fn grad_multiplier() -> f32 { return params.grad_scale * scale_buf[params.scale_offset]; }\n",
                 2 + n_read_write);
    else
        snprintf(scale_code, sizeof(scale_code), "fn grad_multiplier() -> f32 { return params.grad_scale; }\n");
    if (sgd)
        snprintf(prelude, sizeof(prelude),
                 "%s%sconst MOMENTUM = %s;\nconst NESTEROV = %s;\n%s", alias, scale_code,
                 momentum ? "true" : "false", nesterov ? "true" : "false",
                 momentum ? "@group(0) @binding(3) var<storage, read_write> buf: array<V>;\n"
                            "fn buf_load(i: u32) -> V { return buf[i]; }\n"
                            "fn buf_store(i: u32, v: V) { buf[i] = v; }\n"
                          : "fn buf_load(i: u32) -> V { return V(0.0); }\n"
                            "fn buf_store(i: u32, v: V) { }\n");
    else
        snprintf(prelude, sizeof(prelude), "%s%sconst DECOUPLED = %s;\n", alias, scale_code,
                 decoupled ? "true" : "false");
    const char *common = webgpu_kernel_source("optimizer_common");
    const char *body = webgpu_kernel_source(sgd ? "optimizer_sgd" : "optimizer_adam");
    if (!common || !body)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: optimizer kernel sources are not embedded", op);
    size_t n_prelude = strlen(prelude), n_common = strlen(common), n_body = strlen(body);
    char *source = malloc(n_prelude + n_common + n_body + 2);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    memcpy(source, prelude, n_prelude);
    memcpy(source + n_prelude, common, n_common);
    source[n_prelude + n_common] = '\n';
    memcpy(source + n_prelude + n_common + 1, body, n_body + 1);
    /* grad (read), param and state (read_write), the scale (read) */
    bool read_only[5] = {true, false, false, false, false};
    int n_storage = 1 + n_read_write + (scaled ? 1 : 0);
    if (scaled) read_only[n_storage - 1] = true;
    /* checked = false: every access is guarded by i < n and the views were
     * checked against their buffers above. */
    wgt_status s = webgpu_pipeline_create_ex(wg, key, source, NULL, n_storage, read_only, true, false, false, op, out);
    free(source);
    return s;
}

/* width: 4 when the kernel works on vec4 (n and offsets counted in vec4s). */
static void fill_params(const wgt_kernel_call *call, uint64_t n, uint32_t width, optimizer_params *p)
{
    memset(p, 0, sizeof(*p));
    p->n = (uint32_t)(n / width);
    p->grad_offset = (uint32_t)(call->inputs[0].offset / width);
    p->param_offset = (uint32_t)(call->outputs[0].offset / width);
    if (call->n_outputs > 1) p->state0_offset = (uint32_t)(call->outputs[1].offset / width);
    if (call->n_outputs > 2) p->state1_offset = (uint32_t)(call->outputs[2].offset / width);
    p->first_step = call->optimizer.first_step ? 1u : 0u;
    p->has_weight_decay = call->optimizer.weight_decay != 0 ? 1u : 0u;
    if (call->n_inputs == 2) p->scale_offset = (uint32_t)call->inputs[1].offset; /* f32, never vec4 */
    double lr = call->optimizer.lr;
    p->lr = (float)lr;
    p->weight_decay = (float)call->optimizer.weight_decay;
    p->grad_scale = (float)call->optimizer.grad_scale;
    p->momentum = (float)call->optimizer.momentum;
    p->keep = (float)(1.0 - call->optimizer.dampening);
    p->beta1 = (float)call->optimizer.beta1;
    p->one_minus_beta1 = (float)(1.0 - call->optimizer.beta1);
    p->beta2 = (float)call->optimizer.beta2;
    p->one_minus_beta2 = (float)(1.0 - call->optimizer.beta2);
    if (call->optimizer.kind != WGT_OPTIMIZER_SGD) {
        p->step_size = (float)(lr / call->optimizer.bias_correction1);
        p->inv_sqrt_bc2 = (float)(1.0 / sqrt(call->optimizer.bias_correction2));
    }
    p->eps = (float)call->optimizer.eps;
    p->decay = (float)(1.0 - lr * call->optimizer.weight_decay);
}

wgt_status webgpu_optimizer_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    uint64_t n = 0;
    wgt_status s = check_views(wg, call, &n);
    if (s != WGT_OK || n == 0) return s;
    bool vec4 = use_vec4(call, n);
    webgpu_pipeline *p;
    s = get_pipeline(wg, call, vec4, &p);
    if (s != WGT_OK) return s;
    optimizer_params params;
    fill_params(call, n, vec4 ? 4 : 1, &params);
    WGPUBuffer buffers[5];
    int n_buffers = 1 + call->n_outputs;
    buffers[0] = webgpu_view_buffer(&call->inputs[0]);
    for (int i = 0; i < call->n_outputs; i++) buffers[1 + i] = webgpu_view_buffer(&call->outputs[i]);
    if (call->n_inputs == 2) buffers[n_buffers++] = webgpu_view_buffer(&call->inputs[1]);
    uint32_t gx, gy;
    s = webgpu_grid(wg, (params.n + OPTIMIZER_THREADS - 1) / OPTIMIZER_THREADS, &gx, &gy, op);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, p, buffers, n_buffers, &params, sizeof(params), gx, gy, 1, op);
}
