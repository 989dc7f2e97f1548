/*
 * Golden values from PyTorch (tests/golden/make_golden.py wrote them, f32 on
 * the CPU): a small MLP and a one-block GPT (embeddings, layer norm, causal
 * attention, GELU MLP, cross-entropy). Checked on both backends: the loss and
 * every parameter's gradient at the initial parameters, the loss before each
 * of 10 AdamW steps, and the parameters after them.
 *
 * Tolerances (f32 throughout, different summation orders): loss 1e-5
 * relative; gradients max |diff| <= 1e-5 + 1e-4 max |ref| per tensor; losses
 * during training 1e-4 relative; final parameters 2e-4 absolute (Adam divides
 * by sqrt(v), so where a gradient is ~0 a rounding difference becomes a
 * difference of up to lr in one step). Where the true gradient is exactly 0
 * (the attention key bias: softmax is shift-invariant, so q.b_k cancels),
 * both implementations see only rounding noise (~1e-9) and Adam's
 * normalization turns that noise into steps of size ~lr, different in each;
 * elements whose PyTorch gradient is below 1e-7 are therefore only checked
 * to have moved less than 10 steps x lr.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_PARAMS 24

typedef struct model {
    int n;
    const char *names[MAX_PARAMS];
    wgt_tensor *p[MAX_PARAMS];
    wgt_tensor *(*loss)(struct model *m, wgt_safetensors *f);
} model;

static char dir[512];

static wgt_tensor *param(model *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0) return m->p[i];
    return NULL;
}

/* max |a - b| over the elements where noise is NULL or noise[i] >= 1e-7 in
 * magnitude; the others only need |a - b| <= 0.1 (else they count as the max). */
static double host_max_diff_masked(wgt_tensor *a, wgt_tensor *b, wgt_tensor *noise, double *ref_max, int64_t *worst)
{
    int64_t n = wgt_tensor_numel(b);
    if (!a || wgt_tensor_numel(a) != n) return INFINITY;
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    float *g = noise ? malloc(sizeof(float) * (size_t)n) : NULL;
    double d = INFINITY;
    if (wgt_tensor_read(a, x, sizeof(float) * (size_t)n) == WGT_OK &&
        wgt_tensor_read(b, y, sizeof(float) * (size_t)n) == WGT_OK &&
        (!g || wgt_tensor_read(noise, g, sizeof(float) * (size_t)n) == WGT_OK)) {
        d = 0;
        *ref_max = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)x[i] - y[i]);
            if (g && fabs(g[i]) < 1e-7) e = e <= 0.1 ? 0 : e;
            if (!(e <= d)) { /* NaN counts as worst */
                d = e;
                *worst = i;
            }
            if (fabs(y[i]) > *ref_max) *ref_max = fabs(y[i]);
        }
    }
    free(x);
    free(y);
    free(g);
    return d;
}

static double host_max_diff(wgt_tensor *a, wgt_tensor *b, double *ref_max, int64_t *worst)
{
    int64_t n = wgt_tensor_numel(b);
    if (!a || wgt_tensor_numel(a) != n) return INFINITY;
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    double d = INFINITY;
    if (wgt_tensor_read(a, x, sizeof(float) * (size_t)n) == WGT_OK &&
        wgt_tensor_read(b, y, sizeof(float) * (size_t)n) == WGT_OK) {
        d = 0;
        *ref_max = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)x[i] - y[i]);
            if (!(e <= d)) { /* NaN counts as worst */
                d = e;
                *worst = i;
            }
            if (fabs(y[i]) > *ref_max) *ref_max = fabs(y[i]);
        }
    }
    free(x);
    free(y);
    return d;
}

static float read_scalar(wgt_tensor *t)
{
    float v = NAN;
    if (t) wgt_tensor_read(t, &v, sizeof(v));
    return v;
}

static wgt_tensor *mlp_loss(model *m, wgt_safetensors *f)
{
    wgt_tensor *x = wgt_safetensors_load(f, "input.x");
    wgt_tensor *t = wgt_safetensors_load(f, "input.targets");
    wgt_tensor *h = wgt_gelu(wgt_linear(x, param(m, "l1.weight"), param(m, "l1.bias")));
    return wgt_cross_entropy(wgt_linear(h, param(m, "l2.weight"), param(m, "l2.bias")), t, WGT_REDUCTION_MEAN, -100);
}

/* The block of make_golden.py, op for op. */
static wgt_tensor *block_loss(model *m, wgt_safetensors *f)
{
    const int64_t B = 2, T = 6, C = 16, H = 2, V = 11;
    wgt_tensor *idx = wgt_safetensors_load(f, "input.idx");
    wgt_tensor *targets = wgt_safetensors_load(f, "input.targets");
    wgt_tensor *x = wgt_add(wgt_embedding(param(m, "tok.weight"), idx), wgt_slice(param(m, "pos.weight"), 0, 0, T, 1));
    wgt_tensor *qkv = wgt_linear(wgt_layer_norm(x, param(m, "ln1.weight"), param(m, "ln1.bias"), 1e-5),
                                 param(m, "qkv.weight"), param(m, "qkv.bias"));
    wgt_tensor *heads[3];
    for (int i = 0; i < 3; i++) {
        wgt_tensor *part = wgt_slice(qkv, 2, i * C, (i + 1) * C, 1);
        heads[i] = wgt_transpose(wgt_reshape(part, 4, (int64_t[]){B, T, H, C / H}), 1, 2);
    }
    wgt_tensor *y = wgt_scaled_dot_product_attention(heads[0], heads[1], heads[2], true, 0.0, 0);
    y = wgt_reshape(wgt_transpose(y, 1, 2), 3, (int64_t[]){B, T, C});
    x = wgt_add(x, wgt_linear(y, param(m, "proj.weight"), param(m, "proj.bias")));
    wgt_tensor *h = wgt_layer_norm(x, param(m, "ln2.weight"), param(m, "ln2.bias"), 1e-5);
    h = wgt_linear(wgt_gelu(wgt_linear(h, param(m, "fc1.weight"), param(m, "fc1.bias"))), param(m, "fc2.weight"),
                   param(m, "fc2.bias"));
    x = wgt_add(x, h);
    wgt_tensor *logits = wgt_linear(wgt_layer_norm(x, param(m, "lnf.weight"), param(m, "lnf.bias"), 1e-5),
                                    param(m, "head.weight"), NULL);
    return wgt_cross_entropy(wgt_reshape(logits, 2, (int64_t[]){B * T, V}), wgt_reshape(targets, 1, (int64_t[]){B * T}),
                             WGT_REDUCTION_MEAN, -100);
}

static void check_model(wgt_context *ctx, const char *backend, const char *file, model *m)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/golden/%s", dir, file);
    wgt_scope_push(ctx);
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    CHECK(f != NULL, "%s: %s: %s", backend, path, wgt_context_error_message(ctx));
    if (!f) {
        wgt_context_clear_error(ctx);
        wgt_scope_pop(ctx);
        return;
    }
    /* the parameters, in file order */
    m->n = 0;
    for (int i = 0; i < wgt_safetensors_count(f) && m->n < MAX_PARAMS; i++) {
        wgt_safetensors_info info;
        wgt_safetensors_info_get(f, i, &info);
        if (strncmp(info.name, "param.", 6) != 0) continue;
        m->names[m->n] = info.name + 6;
        m->p[m->n] = wgt_safetensors_load(f, info.name);
        wgt_tensor_set_requires_grad(m->p[m->n], true);
        m->n++;
    }
    CHECK(m->n > 0, "%s: %s has no parameters", backend, file);

    /* loss and gradients at the initial parameters */
    wgt_scope_push(ctx);
    wgt_tensor *loss = m->loss(m, f);
    wgt_backward(loss);
    float got = read_scalar(loss), want = read_scalar(wgt_safetensors_load(f, "loss0"));
    CHECK(fabsf(got - want) <= 1e-5f * fabsf(want), "%s/%s: loss %.7f, PyTorch %.7f", backend, file, got, want);
    for (int i = 0; i < m->n; i++) {
        char name[300];
        snprintf(name, sizeof(name), "grad.%s", m->names[i]);
        double ref_max = 0;
        int64_t worst = -1;
        double d = host_max_diff(wgt_tensor_grad(m->p[i]), wgt_safetensors_load(f, name), &ref_max, &worst);
        CHECK(d <= 1e-5 + 1e-4 * ref_max, "%s/%s: %s max diff %.3g (max |ref| %.3g) at %lld", backend, file, name, d,
              ref_max, (long long)worst);
    }
    wgt_scope_pop(ctx);

    /* 10 AdamW steps */
    wgt_optimizer_config cfg;
    wgt_optimizer_config_init(&cfg, WGT_OPTIMIZER_ADAMW);
    cfg.lr = 1e-2;
    cfg.weight_decay = 0.1;
    wgt_optimizer *opt = wgt_optimizer_create(m->p, m->n, &cfg);
    float losses[10] = {0};
    wgt_tensor *want_losses = wgt_safetensors_load(f, "losses");
    wgt_tensor_read(want_losses, losses, sizeof(losses));
    double worst_loss = 0;
    for (int step = 0; opt && step < 10; step++) {
        wgt_scope_push(ctx);
        wgt_optimizer_zero_grad(opt);
        wgt_tensor *l = m->loss(m, f);
        float v = read_scalar(l);
        worst_loss = fmax(worst_loss, fabs(v - losses[step]) / fabs(losses[step]));
        wgt_backward(l);
        wgt_optimizer_step(opt);
        wgt_scope_pop(ctx);
    }
    CHECK(worst_loss <= 1e-4, "%s/%s: AdamW losses differ by %.3g relative", backend, file, worst_loss);
    double worst_param = 0;
    for (int i = 0; i < m->n; i++) {
        char name[300];
        char grad_name[300];
        snprintf(name, sizeof(name), "final.%s", m->names[i]);
        snprintf(grad_name, sizeof(grad_name), "grad.%s", m->names[i]);
        double ref_max = 0;
        int64_t worst = -1;
        double d = host_max_diff_masked(m->p[i], wgt_safetensors_load(f, name), wgt_safetensors_load(f, grad_name),
                                        &ref_max, &worst);
        worst_param = fmax(worst_param, d);
        CHECK(d <= 2e-4, "%s/%s: %s after 10 steps max diff %.3g at %lld", backend, file, name, d, (long long)worst);
    }
    printf("%s/%s: %d parameters, loss %.6f; 10 AdamW steps: losses within %.2g relative, parameters within %.2g\n",
           backend, file, m->n, got, worst_loss, worst_param);
    wgt_optimizer_destroy(opt);
    for (int i = 0; i < m->n; i++) wgt_tensor_release(m->p[i]);
    wgt_safetensors_close(f);
    wgt_scope_pop(ctx);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s/%s: %s", backend, file, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "%s", __FILE__); /* the test's folder: the fixtures live beside it */
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof(dir), ".");
    wgt_context *contexts[2] = {test_cpu_context(), test_webgpu_context()};
    const char *names[2] = {"cpu", "webgpu"};
    for (int b = 0; b < 2; b++) {
        CHECK(contexts[b] != NULL, "%s context", names[b]);
        if (!contexts[b]) continue;
        model mlp = {.loss = mlp_loss}, block = {.loss = block_loss};
        check_model(contexts[b], names[b], "mlp.safetensors", &mlp);
        check_model(contexts[b], names[b], "transformer.safetensors", &block);
        wgt_context_destroy(contexts[b]);
    }
    return test_summary();
}
