/*
 * Optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam, AdamW.
 *
 * Each step is one OPTIMIZER kernel per parameter that has a gradient
 * (backend.h): param, grad and state are read and written once, in place. The
 * state tensors are allocated at create, so a step allocates nothing, and the
 * step's lr and bias corrections travel in the call (a uniform on the GPU), so
 * a schedule that changes lr every step never builds a pipeline.
 *
 * Per-parameter step counters follow PyTorch: a parameter without a gradient
 * is skipped and its counter does not advance (Adam's bias corrections and
 * SGD's first momentum step use the parameter's own count).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_common.h"

void wgt_scope_remove(wgt_tensor *t); /* src/core/tensor.c */

#define OPTIMIZER_NAME_SIZE 40

struct wgt_optimizer {
    wgt_context *ctx;
    wgt_optimizer_config config;
    double grad_scale;
    wgt_tensor *scale_tensor;       /* retained; a [] f32 also multiplying every gradient, or NULL */
    int n_params;
    wgt_tensor **params;            /* retained */
    int states_per_param;           /* 0 (plain SGD), 1 (SGD momentum), 2 (Adam, AdamW) */
    wgt_tensor **state;             /* [n_params * states_per_param], parameter-major */
    char (*state_names)[OPTIMIZER_NAME_SIZE];
    int64_t *param_steps;           /* steps each parameter took with a gradient */
    int64_t step_count;             /* calls of wgt_optimizer_step */
};

void wgt_optimizer_config_init(wgt_optimizer_config *config, wgt_optimizer_kind kind)
{
    if (!config) return;
    memset(config, 0, sizeof(*config));
    config->kind = kind;
    config->lr = 1e-3;
    config->beta1 = 0.9;
    config->beta2 = 0.999;
    config->eps = 1e-8;
    config->weight_decay = kind == WGT_OPTIMIZER_ADAMW ? 1e-2 : 0.0;
}

static const char *kind_name(wgt_optimizer_kind kind)
{
    switch (kind) {
    case WGT_OPTIMIZER_SGD: return "sgd";
    case WGT_OPTIMIZER_ADAM: return "adam";
    case WGT_OPTIMIZER_ADAMW: return "adamw";
    default: return "unknown";
    }
}

/* PyTorch's checks of the hyperparameters, as messages. */
static bool config_is_valid(wgt_context *ctx, const wgt_optimizer_config *c)
{
    const char *op = "wgt_optimizer_create";
    if ((unsigned)c->kind >= WGT_OPTIMIZER_KIND_COUNT)
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: unknown optimizer kind %d", op, (int)c->kind);
    if (!(c->lr >= 0) || !isfinite(c->lr))
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: lr %g must be finite and >= 0", op, c->lr);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay))
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: weight_decay %g must be finite and >= 0", op,
                          c->weight_decay);
    if (c->kind == WGT_OPTIMIZER_SGD) {
        if (!(c->momentum >= 0) || !isfinite(c->momentum) || !isfinite(c->dampening))
            return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: sgd momentum %g and dampening %g must be finite, "
                              "momentum >= 0", op, c->momentum, c->dampening);
        if (c->nesterov && (c->momentum <= 0 || c->dampening != 0))
            return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: Nesterov momentum needs momentum > 0 and "
                              "dampening 0 (got %g and %g)", op, c->momentum, c->dampening);
        return true;
    }
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s betas (%g, %g) must lie in [0, 1)", op,
                          kind_name(c->kind), c->beta1, c->beta2);
    if (!(c->eps >= 0) || !isfinite(c->eps))
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g must be finite and >= 0", op, c->eps);
    return true;
}

static bool params_are_valid(wgt_context *ctx, wgt_tensor *const *params, int n)
{
    const char *op = "wgt_optimizer_create";
    for (int i = 0; i < n; i++) {
        const wgt_tensor_view *v = &params[i]->view;
        char buf[160];
        if (v->dtype != WGT_F32)
            return !wgt_error(ctx, WGT_ERR_DTYPE, "%s: parameter %d is %s; optimizers update f32 parameters", op, i,
                              wgt_dtype_name(v->dtype));
        if (!wgt_view_is_contiguous(v))
            return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: parameter %d %s is not contiguous", op, i,
                              wgt_shape_string(v->ndim, v->shape, buf, sizeof(buf)));
        for (int j = 0; j < i; j++)
            if (params[j]->view.storage == v->storage)
                return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                                  "%s: parameters %d and %d share storage (listed twice, or views of one tensor)",
                                  op, j, i);
    }
    return true;
}

static int states_per_param(const wgt_optimizer_config *c)
{
    if (c->kind == WGT_OPTIMIZER_SGD) return c->momentum != 0 ? 1 : 0;
    return 2;
}

wgt_optimizer *wgt_optimizer_create(wgt_tensor *const *params, int n, const wgt_optimizer_config *config)
{
    if (!params || n <= 0 || !config) return NULL;
    wgt_context *ctx = wgt_op_begin("wgt_optimizer_create", n, params);
    if (!ctx || !config_is_valid(ctx, config) || !params_are_valid(ctx, params, n)) return NULL;
    wgt_optimizer *opt = calloc(1, sizeof(*opt));
    int per = states_per_param(config);
    if (opt) {
        opt->params = calloc((size_t)n, sizeof(*opt->params));
        opt->param_steps = calloc((size_t)n, sizeof(*opt->param_steps));
        opt->state = calloc((size_t)n * (size_t)per + 1, sizeof(*opt->state));
        opt->state_names = calloc((size_t)n * (size_t)per + 1, sizeof(*opt->state_names));
    }
    if (!opt || !opt->params || !opt->param_steps || !opt->state || !opt->state_names) {
        wgt_optimizer_destroy(opt);
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_optimizer_create: out of host memory for %d parameters", n);
        return NULL;
    }
    opt->ctx = ctx;
    opt->config = *config;
    opt->grad_scale = 1.0;
    opt->n_params = n;
    opt->states_per_param = per;
    static const char *const sgd_names[] = {"momentum_buffer"}, *const adam_names[] = {"exp_avg", "exp_avg_sq"};
    const char *const *names = config->kind == WGT_OPTIMIZER_SGD ? sgd_names : adam_names;
    for (int i = 0; i < n; i++) opt->params[i] = wgt_tensor_ref(params[i]); /* a holder: never takes it out of a scope */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < per; k++) {
            const wgt_tensor_view *v = &params[i]->view;
            wgt_tensor *s = wgt_zeros(ctx, WGT_F32, v->ndim, v->shape);
            if (!s) {
                wgt_optimizer_destroy(opt);
                return NULL;
            }
            wgt_scope_remove(s); /* owned by the optimizer, whatever scope is open */
            opt->state[i * per + k] = s;
            snprintf(opt->state_names[i * per + k], OPTIMIZER_NAME_SIZE, "%s.%d", names[k], i);
        }
    }
    return opt;
}

void wgt_optimizer_destroy(wgt_optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; opt->params && i < opt->n_params; i++) wgt_tensor_unref(opt->params[i]);
    for (int i = 0; opt->state && i < opt->n_params * opt->states_per_param; i++) wgt_tensor_release(opt->state[i]);
    wgt_tensor_unref(opt->scale_tensor);
    free(opt->params);
    free(opt->state);
    free(opt->state_names);
    free(opt->param_steps);
    free(opt);
}

/* The gradient as the kernel needs it: contiguous f32 in a storage of its own
 * (WebGPU cannot bind one buffer read-only and read-write in one dispatch).
 * Usually g itself; otherwise a copy that *temp owns. */
static wgt_tensor *kernel_ready_grad(wgt_optimizer *opt, int i, wgt_tensor *g, wgt_tensor **temp)
{
    *temp = NULL;
    wgt_tensor *p = opt->params[i];
    if (g->view.dtype != WGT_F32) {
        wgt_error(opt->ctx, WGT_ERR_DTYPE, "wgt_optimizer_step: the gradient of parameter %d is %s, not f32", i,
                  wgt_dtype_name(g->view.dtype));
        return NULL;
    }
    if (wgt_view_is_contiguous(&g->view) && g->view.storage != p->view.storage) return g;
    *temp = wgt_copy(g);
    if (*temp) wgt_scope_remove(*temp);
    return *temp;
}

static wgt_status step_param(wgt_optimizer *opt, int i)
{
    wgt_tensor *p = opt->params[i], *g = p->grad, *temp;
    if (!g) return WGT_OK; /* no gradient: skipped, as PyTorch */
    g = kernel_ready_grad(opt, i, g, &temp);
    if (!g) return opt->ctx->status;
    const wgt_optimizer_config *c = &opt->config;
    int64_t steps = opt->param_steps[i] + 1;
    wgt_kernel_call call = {0};
    call.kind = WGT_KERNEL_OPTIMIZER;
    call.op_name = "wgt_optimizer_step";
    call.n_inputs = 1;
    call.inputs[0] = g->view;
    if (opt->scale_tensor) call.inputs[call.n_inputs++] = opt->scale_tensor->view;
    call.n_outputs = 1 + opt->states_per_param;
    call.outputs[0] = p->view;
    for (int k = 0; k < opt->states_per_param; k++) call.outputs[1 + k] = opt->state[i * opt->states_per_param + k]->view;
    call.optimizer.kind = c->kind;
    call.optimizer.lr = c->lr;
    call.optimizer.weight_decay = c->weight_decay;
    call.optimizer.momentum = c->momentum;
    call.optimizer.dampening = c->dampening;
    call.optimizer.nesterov = c->nesterov;
    call.optimizer.first_step = steps == 1;
    call.optimizer.beta1 = c->beta1;
    call.optimizer.beta2 = c->beta2;
    call.optimizer.eps = c->eps;
    call.optimizer.bias_correction1 = 1.0 - pow(c->beta1, (double)steps);
    call.optimizer.bias_correction2 = 1.0 - pow(c->beta2, (double)steps);
    call.optimizer.grad_scale = opt->grad_scale;
    wgt_status s = wgt_run_kernel(opt->ctx, &call);
    wgt_tensor_release(temp);
    if (s == WGT_OK) opt->param_steps[i] = steps;
    return s;
}

wgt_status wgt_optimizer_step(wgt_optimizer *opt)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (opt->ctx->status != WGT_OK) return opt->ctx->status;
    wgt_no_grad_push(opt->ctx); /* a gradient copy (kernel_ready_grad) is never recorded */
    wgt_status s = WGT_OK;
    for (int i = 0; i < opt->n_params && s == WGT_OK; i++) s = step_param(opt, i);
    wgt_no_grad_pop(opt->ctx);
    if (s == WGT_OK) opt->step_count++;
    return s;
}

wgt_status wgt_optimizer_zero_grad(wgt_optimizer *opt)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    return wgt_zero_grad(opt->params, opt->n_params);
}

wgt_status wgt_optimizer_set_lr(wgt_optimizer *opt, double lr)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (!(lr >= 0) || !isfinite(lr))
        return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_lr: lr %g must be finite and >= 0", lr);
    opt->config.lr = lr;
    return WGT_OK;
}

double wgt_optimizer_lr(const wgt_optimizer *opt) { return opt ? opt->config.lr : NAN; }

wgt_status wgt_optimizer_set_grad_scale(wgt_optimizer *opt, double scale)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (!isfinite(scale))
        return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_grad_scale: scale %g is not finite",
                         scale);
    opt->grad_scale = scale;
    return WGT_OK;
}

wgt_status wgt_optimizer_set_grad_scale_tensor(wgt_optimizer *opt, wgt_tensor *scale)
{
    const char *op = "wgt_optimizer_set_grad_scale_tensor";
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (scale) {
        if (scale->ctx != opt->ctx)
            return wgt_error(opt->ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: the scale is from another context", op);
        if (scale->view.dtype != WGT_F32 || wgt_shape_numel(scale->view.ndim, scale->view.shape) != 1)
            return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the scale must be one f32 element, not %s with "
                             "%lld elements", op, wgt_dtype_name(scale->view.dtype),
                             (long long)wgt_shape_numel(scale->view.ndim, scale->view.shape));
    }
    wgt_tensor_ref(scale);
    wgt_tensor_unref(opt->scale_tensor);
    opt->scale_tensor = scale;
    return WGT_OK;
}

int64_t wgt_optimizer_step_count(const wgt_optimizer *opt) { return opt ? opt->step_count : 0; }

wgt_status wgt_optimizer_config_get(const wgt_optimizer *opt, wgt_optimizer_config *config)
{
    if (!opt || !config) return WGT_ERR_INVALID_ARGUMENT;
    *config = opt->config;
    return WGT_OK;
}

int wgt_optimizer_param_count(const wgt_optimizer *opt) { return opt ? opt->n_params : 0; }

int wgt_optimizer_state_count(const wgt_optimizer *opt) { return opt ? opt->n_params * opt->states_per_param : 0; }

wgt_status wgt_optimizer_state_get(wgt_optimizer *opt, int index, const char **name, wgt_tensor **tensor)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (index < 0 || index >= wgt_optimizer_state_count(opt))
        return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_state_get: index %d outside [0, %d)",
                         index, wgt_optimizer_state_count(opt));
    if (name) *name = opt->state_names[index];
    if (tensor) *tensor = opt->state[index];
    return WGT_OK;
}

int64_t wgt_optimizer_param_steps(const wgt_optimizer *opt, int param_index)
{
    if (!opt || param_index < 0 || param_index >= opt->n_params) return -1;
    return opt->param_steps[param_index];
}

wgt_status wgt_optimizer_set_steps(wgt_optimizer *opt, int64_t step_count, const int64_t *param_steps)
{
    if (!opt) return WGT_ERR_INVALID_ARGUMENT;
    if (step_count < 0)
        return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_steps: step_count %lld < 0",
                         (long long)step_count);
    for (int i = 0; param_steps && i < opt->n_params; i++)
        if (param_steps[i] < 0 || param_steps[i] > step_count)
            return wgt_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT,
                             "wgt_optimizer_set_steps: parameter %d has %lld steps, outside [0, %lld]", i,
                             (long long)param_steps[i], (long long)step_count);
    opt->step_count = step_count;
    for (int i = 0; param_steps && i < opt->n_params; i++) opt->param_steps[i] = param_steps[i];
    return WGT_OK;
}
