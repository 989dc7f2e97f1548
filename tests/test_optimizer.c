/*
 * Optimizers, gradient clipping, LR schedules and gradient accumulation, on
 * the CPU and the WebGPU backend.
 *
 * The oracle is a host implementation written here in double precision from
 * PyTorch's published update rules (torch.optim.SGD / Adam / AdamW docs), not
 * the library's code: several steps with a learning rate that changes every
 * step, weight decay, momentum with dampening, Nesterov, a parameter that has
 * no gradient on one step (skipped, its step count frozen), and a gradient
 * scale. Tolerances: the library computes in f32, so each value must agree to
 * 2e-5 relative (plus 2e-6 absolute) after the last step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* kernel calls built by hand (backend.h) */
#include "test_util.h"

#define N_PARAMS 3
#define N_STEPS 5
static const int64_t param_sizes[N_PARAMS] = {1000, 37, 1}; /* odd sizes: no vector-width assumptions */

/* ------------------------------------------------------------ host oracle */

typedef struct ref_state {
    double *p[N_PARAMS], *buf[N_PARAMS], *m[N_PARAMS], *v[N_PARAMS];
    int64_t steps[N_PARAMS];
} ref_state;

/* One PyTorch step of one parameter (g already multiplied by the grad scale). */
static void ref_update(const wgt_optimizer_config *c, double lr, int64_t step, int64_t n, double *p, const double *g_in,
                       double *buf, double *m, double *v)
{
    for (int64_t i = 0; i < n; i++) {
        double g = g_in[i];
        if (c->kind == WGT_OPTIMIZER_SGD) {
            if (c->weight_decay != 0) g += c->weight_decay * p[i];
            if (c->momentum != 0) {
                buf[i] = step == 1 ? g : c->momentum * buf[i] + (1 - c->dampening) * g;
                g = c->nesterov ? g + c->momentum * buf[i] : buf[i];
            }
            p[i] -= lr * g;
            continue;
        }
        if (c->kind == WGT_OPTIMIZER_ADAMW)
            p[i] *= 1 - lr * c->weight_decay;
        else if (c->weight_decay != 0)
            g += c->weight_decay * p[i];
        m[i] = c->beta1 * m[i] + (1 - c->beta1) * g;
        v[i] = c->beta2 * v[i] + (1 - c->beta2) * g * g;
        double bc1 = 1 - pow(c->beta1, (double)step), bc2 = 1 - pow(c->beta2, (double)step);
        double denom = sqrt(v[i]) / sqrt(bc2) + c->eps;
        p[i] -= lr / bc1 * m[i] / denom;
    }
}

static bool close_to(double got, double want) { return fabs(got - want) <= 2e-6 + 2e-5 * fabs(want); }

/* Compares a device tensor to a host array; reports the first mismatch. */
static void check_tensor(wgt_tensor *t, const double *want, int64_t n, const char *what)
{
    float *got = malloc((size_t)n * sizeof(float));
    wgt_status s = wgt_tensor_read(t, got, (size_t)n * sizeof(float));
    CHECK(s == WGT_OK, "%s: read failed: %s", what, wgt_context_error_message(wgt_tensor_context(t)));
    int64_t bad = -1;
    for (int64_t i = 0; s == WGT_OK && i < n && bad < 0; i++)
        if (!close_to(got[i], want[i])) bad = i;
    CHECK(bad < 0, "%s: element %lld is %.9g, expected %.9g", what, (long long)bad, bad >= 0 ? got[bad] : 0.0,
          bad >= 0 ? want[bad] : 0.0);
    free(got);
}

static float *random_floats(int64_t n, uint32_t *rng, float amplitude)
{
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = amplitude * ((float)(test_xorshift(rng) >> 8) / 16777216.0f * 2.0f - 1.0f);
    return x;
}

/* ------------------------------------------------- optimizer vs the oracle */

/* Runs N_STEPS of config on N_PARAMS parameters with new random gradients each
 * step (parameter 1 has none at step 2) and an lr that changes every step;
 * compares parameters and state with the oracle after every step. */
static void check_against_oracle(wgt_context *ctx, const wgt_optimizer_config *config, double grad_scale,
                                 const char *label)
{
    uint32_t rng = 12345;
    wgt_tensor *params[N_PARAMS];
    ref_state ref;
    memset(&ref, 0, sizeof(ref));
    for (int k = 0; k < N_PARAMS; k++) {
        int64_t n = param_sizes[k];
        float *init = random_floats(n, &rng, 1.0f);
        params[k] = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, init);
        ref.p[k] = calloc((size_t)n, sizeof(double));
        ref.buf[k] = calloc((size_t)n, sizeof(double));
        ref.m[k] = calloc((size_t)n, sizeof(double));
        ref.v[k] = calloc((size_t)n, sizeof(double));
        for (int64_t i = 0; i < n; i++) ref.p[k][i] = init[i];
        free(init);
    }
    wgt_optimizer *opt = wgt_optimizer_create(params, N_PARAMS, config);
    CHECK(opt != NULL, "%s: create failed: %s", label, wgt_context_error_message(ctx));
    if (!opt) goto done;
    CHECK(wgt_optimizer_set_grad_scale(opt, grad_scale) == WGT_OK, "%s: set_grad_scale", label);
    for (int step = 0; step < N_STEPS; step++) {
        double lr = config->lr * (1.0 + 0.5 * step); /* a new lr every step */
        CHECK(wgt_optimizer_set_lr(opt, lr) == WGT_OK, "%s: set_lr", label);
        for (int k = 0; k < N_PARAMS; k++) {
            int64_t n = param_sizes[k];
            if (k == 1 && step == 2) {
                wgt_tensor_set_grad(params[k], NULL); /* no gradient this step: skipped */
                continue;
            }
            float *g = random_floats(n, &rng, 2.0f);
            wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, g);
            wgt_tensor_set_grad(params[k], gt);
            wgt_tensor_release(gt);
            double *gd = malloc((size_t)n * sizeof(double));
            for (int64_t i = 0; i < n; i++) gd[i] = (double)g[i] * grad_scale;
            ref.steps[k]++;
            ref_update(config, lr, ref.steps[k], n, ref.p[k], gd, ref.buf[k], ref.m[k], ref.v[k]);
            free(gd);
            free(g);
        }
        wgt_status s = wgt_optimizer_step(opt);
        CHECK(s == WGT_OK, "%s: step %d: %s", label, step, wgt_context_error_message(ctx));
        for (int k = 0; k < N_PARAMS; k++) {
            char what[128];
            snprintf(what, sizeof(what), "%s: step %d param %d", label, step, k);
            check_tensor(params[k], ref.p[k], param_sizes[k], what);
        }
    }
    /* State: names, counts and values. */
    int per = config->kind == WGT_OPTIMIZER_SGD ? (config->momentum != 0 ? 1 : 0) : 2;
    CHECK(wgt_optimizer_state_count(opt) == N_PARAMS * per, "%s: %d state tensors, expected %d", label,
          wgt_optimizer_state_count(opt), N_PARAMS * per);
    for (int i = 0; i < wgt_optimizer_state_count(opt); i++) {
        const char *name = NULL;
        wgt_tensor *t = NULL;
        CHECK(wgt_optimizer_state_get(opt, i, &name, &t) == WGT_OK && name && t, "%s: state %d", label, i);
        if (!name || !t) continue;
        int k = i / per, which = i % per;
        char want[64];
        snprintf(want, sizeof(want), "%s.%d", per == 1 ? "momentum_buffer" : which == 0 ? "exp_avg" : "exp_avg_sq",
                 k);
        CHECK(strcmp(name, want) == 0, "%s: state %d is named %s, expected %s", label, i, name, want);
        char what[128];
        snprintf(what, sizeof(what), "%s: state %s", label, name);
        check_tensor(t, per == 1 ? ref.buf[k] : which == 0 ? ref.m[k] : ref.v[k], param_sizes[k], what);
    }
    CHECK(wgt_optimizer_step_count(opt) == N_STEPS, "%s: step count %lld", label,
          (long long)wgt_optimizer_step_count(opt));
    CHECK(wgt_optimizer_param_steps(opt, 1) == N_STEPS - 1 && wgt_optimizer_param_steps(opt, 0) == N_STEPS,
          "%s: per-parameter steps %lld, %lld (parameter 1 skipped once)", label,
          (long long)wgt_optimizer_param_steps(opt, 0), (long long)wgt_optimizer_param_steps(opt, 1));
    wgt_optimizer_destroy(opt);
done:
    for (int k = 0; k < N_PARAMS; k++) {
        wgt_tensor_release(params[k]);
        free(ref.p[k]);
        free(ref.buf[k]);
        free(ref.m[k]);
        free(ref.v[k]);
    }
    wgt_context_clear_error(ctx);
}

static void test_optimizers(wgt_context *ctx, const char *backend)
{
    char label[96];
    wgt_optimizer_config c;

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_SGD);
    c.lr = 0.05;
    snprintf(label, sizeof(label), "%s sgd plain", backend);
    check_against_oracle(ctx, &c, 1.0, label);

    c.momentum = 0.9, c.dampening = 0.1, c.weight_decay = 0.01;
    snprintf(label, sizeof(label), "%s sgd momentum+dampening+wd", backend);
    check_against_oracle(ctx, &c, 1.0, label);

    c.dampening = 0, c.nesterov = true, c.weight_decay = 0.05;
    snprintf(label, sizeof(label), "%s sgd nesterov+wd, grad scale 0.25", backend);
    check_against_oracle(ctx, &c, 0.25, label);

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAM);
    c.lr = 0.01, c.weight_decay = 0.02;
    snprintf(label, sizeof(label), "%s adam+wd", backend);
    check_against_oracle(ctx, &c, 1.0, label);

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAMW);
    c.lr = 0.01, c.weight_decay = 0.1, c.beta1 = 0.8, c.beta2 = 0.95, c.eps = 1e-6;
    snprintf(label, sizeof(label), "%s adamw", backend);
    check_against_oracle(ctx, &c, 1.0, label);

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAMW);
    CHECK(c.lr == 1e-3 && c.beta1 == 0.9 && c.beta2 == 0.999 && c.eps == 1e-8 && c.weight_decay == 1e-2,
          "%s: AdamW defaults are not PyTorch's", backend);
}

/* ------------------------------------------------- gradient accumulation */

/* Gradients of three micro-batches summed into .grad (as backward
 * accumulates), stepped with grad scale 1/3, equal the step on their mean. */
static void test_accumulation(wgt_context *ctx, const char *backend)
{
    uint32_t rng = 777;
    int64_t n = 300;
    float *init = random_floats(n, &rng, 1.0f);
    wgt_tensor *p = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, init);
    double *ref = malloc((size_t)n * sizeof(double)), *mean = calloc((size_t)n, sizeof(double));
    double *m = calloc((size_t)n, sizeof(double)), *v = calloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) ref[i] = init[i];
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAMW);
    c.lr = 0.02;
    wgt_optimizer *opt = wgt_optimizer_create(&p, 1, &c);
    CHECK(opt && wgt_optimizer_set_grad_scale(opt, 1.0 / 3.0) == WGT_OK, "%s accumulation: create", backend);
    for (int micro = 0; opt && micro < 3; micro++) {
        float *g = random_floats(n, &rng, 1.0f);
        wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, g);
        wgt_tensor *acc = wgt_tensor_grad(p) ? wgt_add(wgt_tensor_grad(p), gt) : wgt_tensor_retain(gt);
        wgt_tensor_set_grad(p, acc);
        wgt_tensor_release(acc);
        wgt_tensor_release(gt);
        for (int64_t i = 0; i < n; i++) mean[i] += (double)g[i] / 3.0;
        free(g);
    }
    if (opt) {
        CHECK(wgt_optimizer_step(opt) == WGT_OK, "%s accumulation: step: %s", backend, wgt_context_error_message(ctx));
        ref_update(&c, c.lr, 1, n, ref, mean, NULL, m, v);
        char what[96];
        snprintf(what, sizeof(what), "%s accumulation over 3 micro-batches", backend);
        check_tensor(p, ref, n, what);
        CHECK(wgt_optimizer_zero_grad(opt) == WGT_OK && wgt_tensor_grad(p) == NULL, "%s: zero_grad", backend);
    }
    wgt_optimizer_destroy(opt);
    wgt_tensor_release(p);
    free(init), free(ref), free(mean), free(m), free(v);
}

/* The same through autograd: two backward passes of loss_k = sum(w * x_k)
 * without zero_grad accumulate x_1 + x_2 into w's .grad; a step with grad
 * scale 1/2 then uses their mean. */
static void test_accumulation_with_backward(wgt_context *ctx, const char *backend)
{
    uint32_t rng = 4242;
    int64_t n = 96;
    float *init = random_floats(n, &rng, 1.0f), *x[2] = {random_floats(n, &rng, 1.0f), random_floats(n, &rng, 1.0f)};
    wgt_tensor *w = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, init);
    wgt_tensor_set_requires_grad(w, true);
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAM);
    c.lr = 0.03;
    wgt_optimizer *opt = wgt_optimizer_create(&w, 1, &c);
    wgt_status s = opt ? wgt_optimizer_set_grad_scale(opt, 0.5) : WGT_ERR_INTERNAL;
    for (int k = 0; k < 2 && s == WGT_OK; k++) {
        wgt_scope_push(ctx);
        wgt_tensor *xt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, x[k]);
        wgt_tensor *loss = wgt_sum(wgt_mul(w, xt), NULL, 0, false);
        s = loss ? wgt_backward(loss) : wgt_context_status(ctx);
        wgt_scope_pop(ctx);
    }
    CHECK(s == WGT_OK, "%s backward accumulation: %s", backend, wgt_context_error_message(ctx));
    double *ref = malloc((size_t)n * sizeof(double)), *mean = malloc((size_t)n * sizeof(double));
    double *m = calloc((size_t)n, sizeof(double)), *v = calloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) ref[i] = init[i], mean[i] = ((double)x[0][i] + x[1][i]) / 2;
    if (s == WGT_OK) {
        CHECK(wgt_optimizer_step(opt) == WGT_OK, "%s backward accumulation: step", backend);
        ref_update(&c, c.lr, 1, n, ref, mean, NULL, m, v);
        char what[96];
        snprintf(what, sizeof(what), "%s 2 backward passes accumulated, grad scale 1/2", backend);
        check_tensor(w, ref, n, what);
    }
    wgt_optimizer_destroy(opt);
    wgt_tensor_release(w);
    free(init), free(x[0]), free(x[1]), free(ref), free(mean), free(m), free(v);
    wgt_context_clear_error(ctx);
}

/* A gradient that is a view of the parameter's own storage (or a transposed
 * view) still steps correctly: the optimizer copies it first instead of
 * binding one buffer twice. */
static void test_aliased_gradient(wgt_context *ctx, const char *backend)
{
    int64_t shape[2] = {4, 6};
    float init[24];
    for (int i = 0; i < 24; i++) init[i] = (float)i * 0.25f - 2.0f;
    wgt_tensor *p = wgt_tensor_from_host(ctx, WGT_F32, 2, shape, init);
    wgt_tensor *alias = wgt_detach(p); /* same storage */
    wgt_tensor_set_grad(p, alias);
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_SGD);
    c.lr = 0.5;
    wgt_optimizer *opt = wgt_optimizer_create(&p, 1, &c);
    wgt_status s = opt ? wgt_optimizer_step(opt) : WGT_ERR_INTERNAL;
    CHECK(s == WGT_OK, "%s aliased gradient: %s", backend, wgt_context_error_message(ctx));
    double want[24];
    for (int i = 0; i < 24; i++) want[i] = init[i] - 0.5 * init[i];
    char what[64];
    snprintf(what, sizeof(what), "%s aliased gradient", backend);
    check_tensor(p, want, 24, what);
    wgt_optimizer_destroy(opt);
    wgt_tensor_release(alias);
    wgt_tensor_release(p);
    wgt_context_clear_error(ctx);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_input(wgt_context *ctx, const char *backend)
{
    char what[96];
    int64_t n = 8;
    wgt_tensor *p = wgt_zeros(ctx, WGT_F32, 1, &n);
    wgt_optimizer_config c;

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_SGD);
    c.nesterov = true; /* momentum 0 */
    CHECK(wgt_optimizer_create(&p, 1, &c) == NULL, "%s: nesterov without momentum accepted", backend);
    snprintf(what, sizeof(what), "%s: nesterov without momentum", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);

    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAM);
    c.lr = -1;
    CHECK(wgt_optimizer_create(&p, 1, &c) == NULL, "%s: negative lr accepted", backend);
    snprintf(what, sizeof(what), "%s: negative lr", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);

    c.lr = 1e-3, c.beta2 = 1.0;
    CHECK(wgt_optimizer_create(&p, 1, &c) == NULL, "%s: beta2 = 1 accepted", backend);
    snprintf(what, sizeof(what), "%s: beta2 = 1", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);

    wgt_tensor *h = wgt_zeros(ctx, WGT_F16, 1, &n);
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAM);
    CHECK(wgt_optimizer_create(&h, 1, &c) == NULL, "%s: f16 parameter accepted", backend);
    snprintf(what, sizeof(what), "%s: f16 parameter", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, what);

    wgt_tensor *twice[2] = {p, p};
    CHECK(wgt_optimizer_create(twice, 2, &c) == NULL, "%s: parameter listed twice accepted", backend);
    snprintf(what, sizeof(what), "%s: parameter listed twice", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);

    wgt_optimizer *opt = wgt_optimizer_create(&p, 1, &c);
    CHECK(opt && wgt_optimizer_set_lr(opt, NAN) == WGT_ERR_INVALID_ARGUMENT, "%s: NaN lr accepted", backend);
    snprintf(what, sizeof(what), "%s: NaN lr", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    CHECK(wgt_optimizer_state_get(opt, 99, NULL, NULL) == WGT_ERR_INVALID_ARGUMENT, "%s: state index 99", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    /* An f16 gradient for an f32 parameter. */
    wgt_tensor_set_grad(p, h);
    CHECK(wgt_optimizer_step(opt) == WGT_ERR_DTYPE, "%s: f16 gradient accepted", backend);
    snprintf(what, sizeof(what), "%s: f16 gradient", backend);
    check_error_and_recover(ctx, WGT_ERR_DTYPE, what);
    CHECK(wgt_clip_grad_norm(&p, 1, -1.0, NULL) == WGT_ERR_INVALID_ARGUMENT, "%s: negative max_norm", backend);
    snprintf(what, sizeof(what), "%s: negative max_norm", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    wgt_optimizer_destroy(opt);
    wgt_tensor_release(h);
    wgt_tensor_release(p);
}

/* ------------------------------------------------ hostile kernel calls */

/* OPTIMIZER calls built by hand, as a buggy front-end could send them: views
 * past their storage, the wrong state count, one buffer bound as grad and
 * param. Each is refused with a status (never an out-of-bounds access, never a
 * wgpu-native abort), and the context recovers. */
static void test_hostile_calls(wgt_context *ctx, const char *backend)
{
    int64_t n = 16, big = 64;
    wgt_tensor *p = wgt_zeros(ctx, WGT_F32, 1, &n), *g = wgt_ones(ctx, WGT_F32, 1, &n);
    wgt_tensor *m = wgt_zeros(ctx, WGT_F32, 1, &n), *v = wgt_zeros(ctx, WGT_F32, 1, &n);
    wgt_kernel_call base = {0};
    base.kind = WGT_KERNEL_OPTIMIZER;
    base.op_name = "test_optimizer_kernel";
    base.n_inputs = 1;
    base.inputs[0] = g->view;
    base.n_outputs = 3;
    base.outputs[0] = p->view;
    base.outputs[1] = m->view;
    base.outputs[2] = v->view;
    base.optimizer.kind = WGT_OPTIMIZER_ADAM;
    base.optimizer.lr = 0.1, base.optimizer.beta1 = 0.9, base.optimizer.beta2 = 0.99, base.optimizer.eps = 1e-8;
    base.optimizer.bias_correction1 = 0.1, base.optimizer.bias_correction2 = 0.01, base.optimizer.grad_scale = 1;
    char what[96];

    CHECK(wgt_run_kernel(ctx, &base) == WGT_OK, "%s: a sound OPTIMIZER call failed: %s", backend,
          wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);

    wgt_kernel_call c = base; /* the parameter view claims 64 elements of a 16-element storage */
    c.outputs[0].shape[0] = big;
    for (int i = 0; i < 3; i++) c.outputs[i].shape[0] = big;
    c.inputs[0].shape[0] = big;
    wgt_status s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_INVALID_ARGUMENT, "%s: views past their storage: %s", backend, wgt_status_string(s));
    snprintf(what, sizeof(what), "%s: OPTIMIZER views past their storage", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);

    c = base; /* Adam with one state view */
    c.n_outputs = 2;
    s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_INVALID_ARGUMENT || s == WGT_ERR_UNSUPPORTED, "%s: one state view for Adam: %s", backend,
          wgt_status_string(s));
    wgt_context_clear_error(ctx);

    c = base; /* grad and param in one storage */
    c.inputs[0] = p->view;
    s = wgt_run_kernel(ctx, &c);
    bool refused = s == WGT_ERR_INVALID_ARGUMENT;
    /* The CPU computes this correctly in place; WebGPU must refuse it (one
     * buffer bound read-only and read-write aborts inside wgpu-native). */
    CHECK(refused || wgt_context_backend(ctx) == WGT_BACKEND_CPU, "%s: grad aliasing param: %s", backend,
          wgt_status_string(s));
    wgt_context_clear_error(ctx);

    c = base; /* a different element count in one view */
    c.outputs[2].shape[0] = n - 1;
    s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_SHAPE_MISMATCH || s == WGT_ERR_UNSUPPORTED, "%s: state of another size: %s", backend,
          wgt_status_string(s));
    wgt_context_clear_error(ctx);

    c = base; /* an f16 parameter: not yet supported */
    c.outputs[0].dtype = WGT_F16;
    s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_UNSUPPORTED, "%s: f16 parameter view: %s", backend, wgt_status_string(s));
    snprintf(what, sizeof(what), "%s: OPTIMIZER with an f16 parameter", backend);
    check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, what);
    c = base; /* a gradient scale of 4 elements, then one in the parameter's buffer */
    c.n_inputs = 2;
    c.inputs[1] = g->view;
    s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_INVALID_ARGUMENT, "%s: a 16-element gradient scale: %s", backend, wgt_status_string(s));
    wgt_context_clear_error(ctx);
    c.inputs[1] = p->view;
    c.inputs[1].ndim = 0, c.inputs[1].offset = 3;
    s = wgt_run_kernel(ctx, &c);
    CHECK(s == WGT_ERR_INVALID_ARGUMENT || wgt_context_backend(ctx) == WGT_BACKEND_CPU,
          "%s: a gradient scale inside the parameter: %s", backend, wgt_status_string(s));
    wgt_context_clear_error(ctx);
    wgt_tensor_release(p), wgt_tensor_release(g), wgt_tensor_release(m), wgt_tensor_release(v);
}

/* wgt_clip_grad_norm_scale + wgt_optimizer_set_grad_scale_tensor (the clip
 * inside the update, as `wgt train` runs it) gives the parameters and state
 * of wgt_clip_grad_norm + step, bit for bit, for AdamW and SGD with
 * momentum, clipping (max_norm 0.5) and not (1e6); grads stay unscaled. */
static void test_clip_in_update(wgt_context *ctx, const char *backend)
{
    const int64_t sizes[3] = {37, 8, 1000};
    for (int trial = 0; trial < 4; trial++) {
        double max_norm = trial % 2 ? 1e6 : 0.5;
        wgt_optimizer_config oc;
        wgt_optimizer_config_init(&oc, trial < 2 ? WGT_OPTIMIZER_ADAMW : WGT_OPTIMIZER_SGD);
        if (trial >= 2) oc.momentum = 0.9, oc.lr = 0.1;
        wgt_tensor *pa[3], *pb[3];
        float *gr[3];
        uint32_t rng = 7;
        for (int k = 0; k < 3; k++) {
            float *w = random_floats(sizes[k], &rng, 1.0f);
            gr[k] = random_floats(sizes[k], &rng, 0.5f);
            pa[k] = wgt_tensor_from_host(ctx, WGT_F32, 1, &sizes[k], w);
            pb[k] = wgt_tensor_from_host(ctx, WGT_F32, 1, &sizes[k], w);
            free(w);
        }
        wgt_optimizer *oa = wgt_optimizer_create(pa, 3, &oc), *ob = wgt_optimizer_create(pb, 3, &oc);
        for (int step = 0; oa && ob && step < 2; step++) {
            for (int k = 0; k < 3; k++) { /* fresh gradients each step (the clip rewrites pa's) */
                for (int64_t i = 0; i < sizes[k]; i++) gr[k][i] *= -1.25f;
                wgt_tensor *ga = wgt_tensor_from_host(ctx, WGT_F32, 1, &sizes[k], gr[k]);
                wgt_tensor *gb = wgt_tensor_from_host(ctx, WGT_F32, 1, &sizes[k], gr[k]);
                wgt_tensor_set_grad(pa[k], ga), wgt_tensor_set_grad(pb[k], gb);
                wgt_tensor_release(ga), wgt_tensor_release(gb);
            }
            wgt_tensor *scale = NULL;
            CHECK(wgt_clip_grad_norm(pa, 3, max_norm, NULL) == WGT_OK, "%s: clip", backend);
            CHECK(wgt_clip_grad_norm_scale(pb, 3, max_norm, &scale, NULL) == WGT_OK && scale,
                  "%s: clip_grad_norm_scale: %s", backend, wgt_context_error_message(ctx));
            wgt_optimizer_step(oa);
            wgt_optimizer_set_grad_scale_tensor(ob, scale);
            wgt_optimizer_step(ob);
            wgt_optimizer_set_grad_scale_tensor(ob, NULL);
            wgt_tensor_release(scale);
        }
        CHECK(wgt_context_status(ctx) == WGT_OK, "%s: clip in update: %s", backend, wgt_context_error_message(ctx));
        for (int k = 0; k < 3; k++) {
            float *a = malloc(sizeof(float) * (size_t)sizes[k]), *b = malloc(sizeof(float) * (size_t)sizes[k]);
            wgt_tensor_read(pa[k], a, sizeof(float) * (size_t)sizes[k]);
            wgt_tensor_read(pb[k], b, sizeof(float) * (size_t)sizes[k]);
            CHECK(memcmp(a, b, sizeof(float) * (size_t)sizes[k]) == 0,
                  "%s trial %d: parameter %d differs between clip + step and the clip in the update", backend,
                  trial, k);
            free(a), free(b), free(gr[k]);
        }
        wgt_optimizer_destroy(oa), wgt_optimizer_destroy(ob);
        for (int k = 0; k < 3; k++) wgt_tensor_release(pa[k]), wgt_tensor_release(pb[k]);
    }
    /* bad scales are refused with a message */
    int64_t two = 2;
    wgt_tensor *p = wgt_zeros(ctx, WGT_F32, 1, &two), *s2 = wgt_ones(ctx, WGT_F32, 1, &two);
    wgt_tensor *si = wgt_ones(ctx, WGT_I32, 0, NULL);
    wgt_optimizer_config oc;
    wgt_optimizer_config_init(&oc, WGT_OPTIMIZER_ADAMW);
    wgt_optimizer *o = wgt_optimizer_create(&p, 1, &oc);
    char what[96];
    CHECK(wgt_optimizer_set_grad_scale_tensor(o, s2) == WGT_ERR_INVALID_ARGUMENT, "%s: a 2-element scale", backend);
    snprintf(what, sizeof(what), "%s: a 2-element gradient scale", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    CHECK(wgt_optimizer_set_grad_scale_tensor(o, si) == WGT_ERR_INVALID_ARGUMENT, "%s: an i32 scale", backend);
    snprintf(what, sizeof(what), "%s: an i32 gradient scale", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    CHECK(wgt_clip_grad_norm_scale(&p, 1, 1.0, NULL, NULL) == WGT_ERR_INVALID_ARGUMENT, "%s: NULL scale", backend);
    snprintf(what, sizeof(what), "%s: clip_grad_norm_scale without scale", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, what);
    wgt_optimizer_destroy(o);
    wgt_tensor_release(p), wgt_tensor_release(s2), wgt_tensor_release(si);
}

/* ------------------------------------------------------------ flat loop */

/* 200 AdamW steps with a new lr (a cosine schedule) and a new clipping norm
 * every step: no pipeline built, no byte and no tensor handle gained after the first steps. */
static void test_flat_loop(wgt_context *ctx, const char *backend)
{
    int64_t shape[2] = {64, 33};
    wgt_tensor *params[2] = {wgt_randn(ctx, WGT_F32, 2, shape, 1), wgt_randn(ctx, WGT_F32, 1, shape, 2)};
    wgt_tensor *grads[2] = {wgt_randn(ctx, WGT_F32, 2, shape, 3), wgt_randn(ctx, WGT_F32, 1, shape, 4)};
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAMW);
    wgt_optimizer *opt = wgt_optimizer_create(params, 2, &c);
    wgt_lr_schedule sched = {WGT_LR_WARMUP_COSINE, 6e-4, 6e-5, 20, 180};
    wgt_pipeline_stats p0 = {0}, p1 = {0};
    wgt_memory_stats m0 = {0}, m1 = {0};
    wgt_execution_stats e0 = {0}, e1 = {0};
    int64_t live0 = 0;
    wgt_status s = opt ? WGT_OK : WGT_ERR_INTERNAL;
    for (int step = 0; step < 200 && s == WGT_OK; step++) {
        wgt_scope_push(ctx);
        wgt_optimizer_set_lr(opt, wgt_lr_at(&sched, step));
        for (int k = 0; k < 2; k++) wgt_tensor_set_grad(params[k], grads[k]);
        s = wgt_clip_grad_norm(params, 2, 1.0 + 0.01 * step, NULL); /* a new max_norm every step too */
        if (s == WGT_OK) s = wgt_optimizer_step(opt);
        wgt_optimizer_zero_grad(opt);
        wgt_scope_pop(ctx);
        if (step == 9) {
            wgt_synchronize(ctx);
            wgt_pipeline_stats_get(ctx, &p0);
            wgt_memory_stats_get(ctx, &m0);
            wgt_execution_stats_get(ctx, &e0);
            live0 = wgt_context_live_tensors(ctx);
        }
    }
    wgt_synchronize(ctx);
    CHECK(s == WGT_OK, "%s flat loop: %s", backend, wgt_context_error_message(ctx));
    wgt_pipeline_stats_get(ctx, &p1);
    wgt_memory_stats_get(ctx, &m1);
    wgt_execution_stats_get(ctx, &e1);
    /* No host round trip: the clipping norm and scale never leave the device. */
    CHECK(e1.downloads == e0.downloads && e1.uploads == e0.uploads, "%s flat loop: %llu downloads, %llu uploads in "
          "190 steps", backend, (unsigned long long)(e1.downloads - e0.downloads),
          (unsigned long long)(e1.uploads - e0.uploads));
    CHECK(p1.entries == p0.entries && p1.misses == p0.misses, "%s flat loop: pipelines %llu -> %llu (misses %llu -> %llu)",
          backend, (unsigned long long)p0.entries, (unsigned long long)p1.entries, (unsigned long long)p0.misses,
          (unsigned long long)p1.misses);
    CHECK(m1.bytes_in_use == m0.bytes_in_use, "%s flat loop: bytes in use %llu -> %llu", backend,
          (unsigned long long)m0.bytes_in_use, (unsigned long long)m1.bytes_in_use);
    CHECK(wgt_context_live_tensors(ctx) == live0, "%s flat loop: live tensors %lld -> %lld", backend,
          (long long)live0, (long long)wgt_context_live_tensors(ctx));
    printf("%s flat loop: 200 steps, %llu pipelines, %llu bytes in use, %lld live tensors\n", backend,
           (unsigned long long)p1.entries, (unsigned long long)m1.bytes_in_use, (long long)live0);
    wgt_optimizer_destroy(opt);
    for (int k = 0; k < 2; k++) wgt_tensor_release(params[k]), wgt_tensor_release(grads[k]);
    wgt_context_clear_error(ctx);
}

/* ------------------------------------------------------- gradient clipping */

static void test_clip(wgt_context *ctx, const char *backend)
{
    uint32_t rng = 99;
    const int64_t sizes[3] = {500, 7, 1};
    double max_norms[2] = {1.5, 1e6}; /* clips / leaves alone */
    for (int trial = 0; trial < 2; trial++) {
        wgt_tensor *params[4];
        float *g[3];
        double sumsq = 0;
        for (int k = 0; k < 3; k++) {
            int64_t n = sizes[k];
            params[k] = wgt_zeros(ctx, WGT_F32, 1, &n);
            g[k] = random_floats(n, &rng, 0.5f);
            for (int64_t i = 0; i < n; i++) sumsq += (double)g[k][i] * g[k][i];
            wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, g[k]);
            wgt_tensor_set_grad(params[k], gt);
            wgt_tensor_release(gt);
        }
        int64_t one = 3;
        params[3] = wgt_zeros(ctx, WGT_F32, 1, &one); /* no gradient: counts 0, stays without */
        wgt_tensor *norm = NULL;
        wgt_status s = wgt_clip_grad_norm(params, 4, max_norms[trial], &norm);
        CHECK(s == WGT_OK && norm, "%s clip: %s", backend, wgt_context_error_message(ctx));
        double want_norm = sqrt(sumsq), scale = max_norms[trial] / (want_norm + 1e-6);
        if (scale > 1) scale = 1;
        float got_norm = 0;
        if (norm) wgt_tensor_read(norm, &got_norm, sizeof(got_norm));
        CHECK(close_to(got_norm, want_norm), "%s clip: norm %.9g, expected %.9g", backend, got_norm, want_norm);
        for (int k = 0; k < 3; k++) {
            double *want = malloc((size_t)sizes[k] * sizeof(double));
            for (int64_t i = 0; i < sizes[k]; i++) want[i] = g[k][i] * scale;
            char what[96];
            snprintf(what, sizeof(what), "%s clip (max_norm %g): gradient %d", backend, max_norms[trial], k);
            if (wgt_tensor_grad(params[k])) check_tensor(wgt_tensor_grad(params[k]), want, sizes[k], what);
            free(want);
            free(g[k]);
        }
        CHECK(wgt_tensor_grad(params[3]) == NULL, "%s clip: a parameter without gradient got one", backend);
        wgt_tensor_release(norm);
        for (int k = 0; k < 4; k++) wgt_tensor_release(params[k]);
    }
    /* 16 gradients (a GPT has dozens), no norm asked for: the partial sums go
     * through more than one 7-input adding kernel, the scale through the
     * kernel that takes the square root itself */
    enum { MANY = 16 };
    wgt_tensor *many[MANY];
    float *gm[MANY];
    double sumsq = 0;
    for (int k = 0; k < MANY; k++) {
        int64_t n = 3 + k;
        many[k] = wgt_zeros(ctx, WGT_F32, 1, &n);
        gm[k] = random_floats(n, &rng, 0.5f);
        for (int64_t i = 0; i < n; i++) sumsq += (double)gm[k][i] * gm[k][i];
        wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, gm[k]);
        wgt_tensor_set_grad(many[k], gt);
        wgt_tensor_release(gt);
    }
    CHECK(wgt_clip_grad_norm(many, MANY, 0.5, NULL) == WGT_OK, "%s clip of %d: %s", backend, MANY,
          wgt_context_error_message(ctx));
    double scale = 0.5 / (sqrt(sumsq) + 1e-6);
    for (int k = 0; k < MANY; k++) {
        int64_t n = 3 + k;
        double want[3 + MANY];
        for (int64_t i = 0; i < n; i++) want[i] = gm[k][i] * scale;
        char what[96];
        snprintf(what, sizeof(what), "%s clip of %d: gradient %d", backend, MANY, k);
        check_tensor(wgt_tensor_grad(many[k]), want, n, what);
        free(gm[k]);
        wgt_tensor_release(many[k]);
    }
    wgt_context_clear_error(ctx);
}

/* 40 gradients of mixed sizes (a GPT preset has 39; several larger than one
 * 8192-element chunk of wgt_sum_squares, whose kernel takes 7 per call): the
 * norm matches a float64 reference, the scale follows from it, and a second
 * call gives the same bits. Then wgt_sum_squares itself: none, empty, f16,
 * a transposed view, and what it refuses. */
static void test_clip_many_norm(wgt_context *ctx, const char *backend)
{
    enum { N = 40 };
    uint32_t rng = 1234;
    wgt_tensor *params[N];
    double sumsq = 0;
    for (int k = 0; k < N; k++) {
        int64_t n = k % 5 == 0 ? 8192 * (k / 5) + 17 * k + 1 : k % 3 == 0 ? 384 : 3 * k + 1;
        float *g = random_floats(n, &rng, k % 7 == 0 ? 2.0f : 0.25f);
        for (int64_t i = 0; i < n; i++) sumsq += (double)g[i] * g[i];
        params[k] = wgt_zeros(ctx, WGT_F32, 1, &n);
        wgt_tensor *gt = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, g);
        wgt_tensor_set_grad(params[k], gt);
        wgt_tensor_release(gt);
        free(g);
    }
    float got[2][2] = {{0}};
    for (int rep = 0; rep < 2; rep++) {
        wgt_tensor *scale = NULL, *norm = NULL;
        wgt_status s = wgt_clip_grad_norm_scale(params, N, 1.0, &scale, &norm);
        CHECK(s == WGT_OK && scale && norm, "%s clip of %d: %s", backend, N, wgt_context_error_message(ctx));
        if (norm) wgt_tensor_read(norm, &got[rep][0], sizeof(float));
        if (scale) wgt_tensor_read(scale, &got[rep][1], sizeof(float));
        wgt_tensor_release(scale);
        wgt_tensor_release(norm);
    }
    double want = sqrt(sumsq);
    CHECK(fabs(got[0][0] - want) <= 1e-5 * want, "%s clip of %d: norm %.9g, float64 %.9g", backend, N, got[0][0], want);
    CHECK(close_to(got[0][1], 1.0 / (want + 1e-6)), "%s clip of %d: scale %.9g, expected %.9g", backend, N, got[0][1],
          1.0 / (want + 1e-6));
    CHECK(memcmp(got[0], got[1], sizeof(got[0])) == 0, "%s clip of %d: a second call differs", backend, N);
    for (int k = 0; k < N; k++) wgt_tensor_release(params[k]);

    /* wgt_sum_squares directly */
    float v = -1;
    wgt_tensor *zero = wgt_sum_squares(ctx, NULL, 0);
    CHECK(zero && zero->view.ndim == 0 && wgt_tensor_read(zero, &v, sizeof(v)) == WGT_OK && v == 0,
          "%s sum_squares of none: %g", backend, v);
    wgt_tensor_release(zero);
    const float a[6] = {1, -2, 3, 0.5f, -0.25f, 4}; /* 30.3125 */
    wgt_tensor *t32 = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){2, 3}, a);
    wgt_tensor *t16 = wgt_cast(t32, WGT_F16);
    wgt_tensor *tt = wgt_transpose(t32, 0, 1);
    wgt_tensor *empty = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){0, 3});
    wgt_tensor *list[4] = {t32, empty, t16, tt};
    wgt_tensor *ss = wgt_sum_squares(ctx, list, 4);
    v = -1;
    CHECK(ss && wgt_tensor_read(ss, &v, sizeof(v)) == WGT_OK && v == 3 * 30.3125f, "%s sum_squares: %g, expected %g: %s",
          backend, v, 3 * 30.3125, wgt_context_error_message(ctx));
    wgt_tensor_release(ss);
    wgt_tensor *i32 = wgt_zeros(ctx, WGT_I32, 1, (int64_t[]){3});
    CHECK(wgt_sum_squares(ctx, &i32, 1) == NULL && wgt_context_status(ctx) == WGT_ERR_DTYPE, "%s sum_squares of i32",
          backend);
    wgt_context_clear_error(ctx);
    CHECK(wgt_sum_squares(ctx, NULL, 2) == NULL && wgt_context_status(ctx) == WGT_ERR_INVALID_ARGUMENT,
          "%s sum_squares of NULL", backend);
    wgt_context_clear_error(ctx);
    wgt_tensor_set_requires_grad(t32, true);
    CHECK(wgt_sum_squares(ctx, &t32, 1) == NULL && wgt_context_status(ctx) == WGT_ERR_UNSUPPORTED,
          "%s sum_squares under grad is refused", backend);
    wgt_context_clear_error(ctx);
    wgt_no_grad_push(ctx);
    ss = wgt_sum_squares(ctx, &t32, 1);
    v = -1;
    CHECK(ss && wgt_tensor_read(ss, &v, sizeof(v)) == WGT_OK && v == 30.3125f, "%s sum_squares under no_grad: %g",
          backend, v);
    wgt_no_grad_pop(ctx);
    wgt_tensor_release(ss);
    wgt_tensor_release(i32);
    wgt_tensor_release(t32), wgt_tensor_release(t16), wgt_tensor_release(tt), wgt_tensor_release(empty);
    wgt_context_clear_error(ctx);
}

/* ------------------------------------------------------------ schedules */

static void test_schedules(void)
{
    /* nanoGPT's get_lr with learning_rate 6e-4, min_lr 6e-5, warmup_iters 10,
     * lr_decay_iters 100; expected values worked out by hand. */
    wgt_lr_schedule s = {WGT_LR_WARMUP_COSINE, 6e-4, 6e-5, 10, 100};
    struct { int64_t step; double lr; } points[] = {
        {0, 6e-5},     /* 6e-4 * 1 / 10 */
        {4, 3e-4},     /* 6e-4 * 5 / 10 */
        {9, 6e-4},     /* end of warmup */
        {10, 6e-4},    /* cosine at ratio 0 */
        {55, 3.3e-4},  /* ratio 0.5: min + (lr - min) / 2 */
        {100, 6e-5},   /* ratio 1 */
        {5000, 6e-5},  /* past decay: the floor */
    };
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        double got = wgt_lr_at(&s, points[i].step);
        CHECK(fabs(got - points[i].lr) <= 1e-12, "cosine lr at step %lld: %.12g, expected %.12g",
              (long long)points[i].step, got, points[i].lr);
    }
    /* ratio 0.25 between warmup 10 and decay 90: step 30, coefficient
     * 0.5 (1 + cos(pi / 4)) = 0.853553390593... */
    s.decay_steps = 90;
    CHECK(fabs(wgt_lr_at(&s, 30) - (6e-5 + 0.8535533905932737 * 5.4e-4)) <= 1e-12, "cosine lr at ratio 0.25: %.12g",
          wgt_lr_at(&s, 30));
    wgt_lr_schedule warm = {WGT_LR_LINEAR_WARMUP, 1.0, 0, 4, 0};
    CHECK(wgt_lr_at(&warm, 0) == 0.25 && wgt_lr_at(&warm, 3) == 1.0 && wgt_lr_at(&warm, 1000) == 1.0,
          "linear warmup: %g %g %g", wgt_lr_at(&warm, 0), wgt_lr_at(&warm, 3), wgt_lr_at(&warm, 1000));
    wgt_lr_schedule constant = {WGT_LR_CONSTANT, 0.125, 0, 0, 0};
    CHECK(wgt_lr_at(&constant, 0) == 0.125 && wgt_lr_at(&constant, 123456) == 0.125, "constant schedule");
    CHECK(isnan(wgt_lr_at(&s, -1)), "negative step gives NaN");
    wgt_lr_schedule bad = {WGT_LR_WARMUP_COSINE, 1.0, 0.1, 10, 10};
    CHECK(isnan(wgt_lr_at(&bad, 20)), "decay_steps <= warmup_steps gives NaN");
}

static void run_backend(wgt_context *ctx, const char *backend)
{
    if (!ctx) return;
    test_optimizers(ctx, backend);
    test_accumulation(ctx, backend);
    test_accumulation_with_backward(ctx, backend);
    test_aliased_gradient(ctx, backend);
    test_clip(ctx, backend);
    test_clip_many_norm(ctx, backend);
    test_clip_in_update(ctx, backend);
    test_bad_input(ctx, backend);
    test_hostile_calls(ctx, backend);
    test_flat_loop(ctx, backend);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: context left in error: %s", backend, wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);
}

int main(void)
{
    test_schedules();
    run_backend(test_cpu_context(), "cpu");
    run_backend(test_webgpu_context(), "webgpu");
    return test_summary();
}
