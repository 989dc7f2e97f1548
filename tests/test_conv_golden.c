/*
 * Golden values from PyTorch for the convolution family (issue 13):
 * tests/golden/make_conv_golden.py wrote them (f32 on the CPU); this test runs
 * the same cases on both backends and compares every output and gradient, then
 * one training step of the digits CNN (loss, every gradient, the parameters
 * and batch-norm running statistics after one SGD momentum step).
 *
 * The fixture files must exist: a missing file or tensor is a failure, never
 * a skip (run the script on a machine with PyTorch and commit its output).
 *
 * Tolerance: |ours - torch| <= 1e-4 (1 + |torch|) per element (two f32
 * implementations summing in different orders); the CNN's parameters after
 * the step 1e-5 (1 + |p|).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static char dir[512];

typedef enum { OP_CONV, OP_CONVT, OP_MAX, OP_AVG, OP_ADAPTIVE, OP_BN, OP_GN } golden_op;

/* Mirror of CASES in make_conv_golden.py (same names and hyperparameters). */
typedef struct golden_case {
    const char *name;
    golden_op op;
    bool bias;
    int64_t stride[2], padding[4], dilation[2], groups, out_pad[2];
    int64_t kernel[2];
    bool ceil_mode, count_include_pad;
    int64_t output[2];
    bool affine, training;
} golden_case;

static const golden_case CASES[] = {
    {"conv_perside", OP_CONV, true, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, false, false},
    {"conv_depthwise", OP_CONV, false, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4, {0, 0}, {0, 0}, false, false, {0, 0}, false, false},
    {"conv_groups_1x1", OP_CONV, true, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2, {0, 0}, {0, 0}, false, false, {0, 0}, false, false},
    {"conv_pointwise", OP_CONV, true, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, false, false},
    {"conv_batch1_70ch", OP_CONV, true, {2, 2}, {2, 2, 2, 2}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, false, false},
    {"convt_stride2_outpad", OP_CONVT, true, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1}, {0, 0}, false, false, {0, 0}, false, false},
    {"convt_groups_dilated", OP_CONVT, false, {1, 3}, {0, 0, 1, 1}, {2, 2}, 2, {0, 2}, {0, 0}, false, false, {0, 0}, false, false},
    {"maxpool_ceil", OP_MAX, false, {2, 2}, {1, 1, 0, 0}, {1, 1}, 1, {0, 0}, {3, 3}, true, true, {0, 0}, false, false},
    {"maxpool_dilated", OP_MAX, false, {1, 2}, {0, 1, 0, 0}, {2, 1}, 1, {0, 0}, {2, 3}, false, true, {0, 0}, false, false},
    {"maxpool_ties", OP_MAX, false, {1, 1}, {1, 1, 0, 0}, {1, 1}, 1, {0, 0}, {3, 3}, false, true, {0, 0}, false, false},
    {"avgpool_ceil_pad", OP_AVG, false, {2, 2}, {1, 1, 0, 0}, {1, 1}, 1, {0, 0}, {3, 3}, true, true, {0, 0}, false, false},
    {"avgpool_exclude_pad", OP_AVG, false, {2, 1}, {1, 1, 0, 0}, {1, 1}, 1, {0, 0}, {3, 2}, false, false, {0, 0}, false, false},
    {"adaptive_3x2", OP_ADAPTIVE, false, {0, 0}, {0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {3, 2}, false, false},
    {"adaptive_global", OP_ADAPTIVE, false, {0, 0}, {0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {1, 1}, false, false},
    {"bn_train_affine", OP_BN, false, {0, 0}, {0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, true, true},
    {"bn_eval_affine", OP_BN, false, {0, 0}, {0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, true, false},
    {"bn_train_plain", OP_BN, false, {0, 0}, {0}, {1, 1}, 1, {0, 0}, {0, 0}, false, false, {0, 0}, false, true},
    {"gn_affine", OP_GN, false, {0, 0}, {0}, {1, 1}, 3, {0, 0}, {0, 0}, false, false, {0, 0}, true, false},
};

static wgt_tensor *load(wgt_safetensors *f, const char *case_name, const char *what)
{
    char name[160];
    snprintf(name, sizeof(name), "%s%s%s", case_name, case_name[0] ? "." : "", what);
    wgt_tensor *t = f ? wgt_safetensors_load(f, name) : NULL;
    CHECK(t != NULL, "fixture tensor %s is missing", name);
    return t;
}

/* max over elements of |a - b| / (1 + |b|); INFINITY on size mismatch or read failure. */
static double rel_diff(wgt_tensor *a, wgt_tensor *b)
{
    if (!a || !b || wgt_tensor_numel(a) != wgt_tensor_numel(b)) return INFINITY;
    int64_t n = wgt_tensor_numel(b);
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1)), *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    double worst = INFINITY;
    if (wgt_tensor_read(a, x, sizeof(float) * (size_t)n) == WGT_OK && wgt_tensor_read(b, y, sizeof(float) * (size_t)n) == WGT_OK) {
        worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
            if (!(e <= worst)) worst = e;
        }
    }
    free(x), free(y);
    return worst;
}

static void expect(const char *backend, const char *case_name, const char *what, wgt_tensor *ours, wgt_tensor *ref,
                   double tol)
{
    double d = rel_diff(ours, ref);
    CHECK(d <= tol, "%s %s %s: worst relative difference %.3g (tolerance %.1g)%s", backend, case_name, what, d, tol,
          ours ? "" : " (no result)");
}

static void run_case(wgt_context *ctx, const char *backend, wgt_safetensors *f, const golden_case *gc)
{
    wgt_scope_push(ctx);
    const char *n = gc->name;
    wgt_tensor *x = load(f, n, "x"), *r = load(f, n, "r"), *yref = load(f, n, "y"), *dxref = load(f, n, "dx");
    wgt_tensor *w = NULL, *b = NULL, *rm = NULL, *rv = NULL;
    bool has_w = gc->op == OP_CONV || gc->op == OP_CONVT || gc->op == OP_GN || (gc->op == OP_BN && gc->affine);
    bool has_b = gc->bias || gc->op == OP_GN || (gc->op == OP_BN && gc->affine);
    if (has_w) w = load(f, n, "w");
    if (has_b) b = load(f, n, "b");
    if (gc->op == OP_BN) rm = load(f, n, "running_mean"), rv = load(f, n, "running_var");
    if (!x || !r || !yref || !dxref || (has_w && !w) || (has_b && !b) || (gc->op == OP_BN && (!rm || !rv))) {
        wgt_scope_pop(ctx);
        return;
    }
    wgt_tensor_set_requires_grad(x, true);
    if (w) wgt_tensor_set_requires_grad(w, true);
    if (b) wgt_tensor_set_requires_grad(b, true);
    wgt_tensor *y = NULL;
    if (gc->op == OP_CONV || gc->op == OP_CONVT) {
        wgt_conv2d_options o;
        wgt_conv2d_options_init(&o);
        memcpy(o.stride, gc->stride, sizeof(o.stride));
        memcpy(o.padding, gc->padding, sizeof(o.padding));
        memcpy(o.dilation, gc->dilation, sizeof(o.dilation));
        memcpy(o.output_padding, gc->out_pad, sizeof(o.output_padding));
        o.groups = gc->groups;
        y = gc->op == OP_CONV ? wgt_conv2d(x, w, b, &o) : wgt_conv_transpose2d(x, w, b, &o);
    } else if (gc->op == OP_MAX || gc->op == OP_AVG) {
        wgt_pool2d_options o;
        wgt_pool2d_options_init(&o, gc->kernel[0], gc->kernel[1]);
        memcpy(o.stride, gc->stride, sizeof(o.stride));
        o.padding[0] = gc->padding[0], o.padding[1] = gc->padding[1];
        memcpy(o.dilation, gc->dilation, sizeof(o.dilation));
        o.ceil_mode = gc->ceil_mode;
        o.count_include_pad = gc->count_include_pad;
        y = gc->op == OP_MAX ? wgt_max_pool2d(x, &o) : wgt_avg_pool2d(x, &o);
    } else if (gc->op == OP_ADAPTIVE) {
        y = wgt_adaptive_avg_pool2d(x, gc->output[0], gc->output[1]);
    } else if (gc->op == OP_GN) {
        y = wgt_group_norm(x, gc->groups, w, b, 1e-5);
    } else {
        y = wgt_batch_norm(x, rm, rv, w, b, gc->training, 0.1, 1e-5);
    }
    CHECK(y != NULL, "%s %s: %s", backend, n, wgt_context_error_message(ctx));
    expect(backend, n, "y", y, yref, 1e-4);
    wgt_tensor *prod = y ? wgt_mul(y, r) : NULL, *loss = prod ? wgt_sum(prod, NULL, 0, false) : NULL;
    CHECK(loss && wgt_backward(loss) == WGT_OK, "%s %s backward: %s", backend, n, wgt_context_error_message(ctx));
    expect(backend, n, "dx", wgt_tensor_grad(x), dxref, 1e-4);
    if (w) expect(backend, n, "dw", wgt_tensor_grad(w), load(f, n, "dw"), 1e-4);
    if (b) expect(backend, n, "db", wgt_tensor_grad(b), load(f, n, "db"), 1e-4);
    if (gc->op == OP_BN && gc->training) {
        expect(backend, n, "running_mean after", rm, load(f, n, "running_mean_after"), 1e-5);
        expect(backend, n, "running_var after", rv, load(f, n, "running_var_after"), 1e-5);
    }
    wgt_context_clear_error(ctx);
    wgt_scope_pop(ctx);
}

static const char *const PARAMS[10] = {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
                                       "conv2.bias",   "bn2.weight", "bn2.bias",   "fc.weight",  "fc.bias"};
static const char *const BUFFERS[4] = {"bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"};

/* conv 3x3 pad 1 + bias -> batch norm (training) -> ReLU -> max pool 2, as the script */
static wgt_tensor *stage(wgt_tensor *h, wgt_tensor *const *p, wgt_tensor *rm, wgt_tensor *rv)
{
    wgt_conv2d_options o;
    wgt_conv2d_options_init(&o);
    o.padding[0] = o.padding[1] = o.padding[2] = o.padding[3] = 1;
    wgt_pool2d_options pool;
    wgt_pool2d_options_init(&pool, 2, 2);
    wgt_tensor *c = h ? wgt_conv2d(h, p[0], p[1], &o) : NULL;
    wgt_tensor *n = c ? wgt_batch_norm(c, rm, rv, p[2], p[3], true, 0.1, 1e-5) : NULL;
    wgt_tensor *a = n ? wgt_relu(n) : NULL;
    return a ? wgt_max_pool2d(a, &pool) : NULL;
}

static void run_digits(wgt_context *ctx, const char *backend, wgt_safetensors *f)
{
    wgt_scope_push(ctx);
    wgt_tensor *p[10], *buf[4];
    char name[64];
    bool ok = true;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "param.%s", PARAMS[i]);
        p[i] = load(f, "", name);
        ok = ok && p[i] && wgt_tensor_set_requires_grad(p[i], true) == WGT_OK;
    }
    int64_t c16 = 16, c32 = 32;
    buf[0] = wgt_zeros(ctx, WGT_F32, 1, &c16), buf[1] = wgt_ones(ctx, WGT_F32, 1, &c16);
    buf[2] = wgt_zeros(ctx, WGT_F32, 1, &c32), buf[3] = wgt_ones(ctx, WGT_F32, 1, &c32);
    wgt_tensor *x = load(f, "", "input.x"), *y = load(f, "", "input.y");
    if (!ok || !x || !y) {
        wgt_scope_pop(ctx);
        return;
    }
    wgt_tensor *h = stage(stage(x, p, buf[0], buf[1]), p + 4, buf[2], buf[3]);
    int64_t flat[2] = {16, 128};
    wgt_tensor *hf = h ? wgt_reshape(h, 2, flat) : NULL;
    wgt_tensor *logits = hf ? wgt_linear(hf, p[8], p[9]) : NULL;
    wgt_tensor *loss = logits ? wgt_cross_entropy(logits, y, WGT_REDUCTION_MEAN, -100) : NULL;
    CHECK(loss != NULL, "%s digits forward: %s", backend, wgt_context_error_message(ctx));
    expect(backend, "digits", "loss", loss, load(f, "", "loss0"), 1e-5);
    wgt_optimizer_config cfg;
    wgt_optimizer_config_init(&cfg, WGT_OPTIMIZER_SGD);
    cfg.lr = 0.05, cfg.momentum = 0.9;
    wgt_optimizer *opt = wgt_optimizer_create(p, 10, &cfg);
    CHECK(opt && loss && wgt_backward(loss) == WGT_OK, "%s digits backward: %s", backend, wgt_context_error_message(ctx));
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "grad.%s", PARAMS[i]);
        expect(backend, "digits", name, wgt_tensor_grad(p[i]), load(f, "", name), 1e-4);
    }
    CHECK(opt && wgt_optimizer_step(opt) == WGT_OK, "%s digits step: %s", backend, wgt_context_error_message(ctx));
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "final.%s", PARAMS[i]);
        expect(backend, "digits", name, p[i], load(f, "", name), 1e-5);
    }
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "final.%s", BUFFERS[i]);
        expect(backend, "digits", name, buf[i], load(f, "", name), 1e-5);
    }
    wgt_optimizer_destroy(opt);
    wgt_context_clear_error(ctx);
    wgt_scope_pop(ctx);
}

static wgt_safetensors *open_fixture(wgt_context *ctx, const char *file)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/golden/%s", dir, file);
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    CHECK(f != NULL, "fixture %s cannot be opened (%s): run `python3 tests/golden/make_conv_golden.py` on a machine "
                     "with PyTorch and commit its output", path, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    return f;
}

int main(void)
{
    snprintf(dir, sizeof(dir), "%s", __FILE__); /* the test's folder: the fixtures live beside it */
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof(dir), ".");
    wgt_context *contexts[2] = {test_cpu_context(), test_webgpu_context()};
    const char *names[2] = {"cpu", "webgpu"};
    for (int k = 0; k < 2; k++) {
        CHECK(contexts[k] != NULL, "%s context", names[k]);
        if (!contexts[k]) continue;
        wgt_safetensors *conv = open_fixture(contexts[k], "conv.safetensors");
        if (conv) {
            for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) run_case(contexts[k], names[k], conv, &CASES[i]);
            wgt_safetensors_close(conv);
        }
        wgt_safetensors *digits = open_fixture(contexts[k], "digits_cnn.safetensors");
        if (digits) {
            run_digits(contexts[k], names[k], digits);
            wgt_safetensors_close(digits);
        }
        wgt_context_destroy(contexts[k]);
    }
    return test_summary();
}
