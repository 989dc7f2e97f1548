/* The convolutional cases of wgt bench (bench_cnn.h), public API only. */
#include "bench_cnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* (Cin, Cout, k, stride, H) of the ResNet-50 convolutions the issue names;
 * padding k / 2 as in ResNet. */
static const int64_t conv_layers[BENCH_CONV_LAYERS][5] = {
    {3, 64, 7, 2, 224}, {64, 64, 3, 1, 56},  {128, 128, 3, 1, 28}, {256, 256, 3, 1, 14},
    {512, 512, 3, 1, 7}, {256, 64, 1, 1, 56}, {1024, 256, 1, 1, 14},
};

static struct {
    wgt_tensor *x, *w, *dy;
    wgt_conv2d_options opt;
    double flops;
} conv;

const char *bench_conv_name(int layer)
{
    static char names[BENCH_CONV_LAYERS][48];
    const int64_t *l = conv_layers[layer];
    snprintf(names[layer], sizeof(names[layer]), "conv_fb_%lld_%lld_k%lld_s%lld_%lld", (long long)l[0], (long long)l[1],
             (long long)l[2], (long long)l[3], (long long)l[4]);
    return names[layer];
}

static void release_conv(void)
{
    wgt_tensor_release(conv.x), wgt_tensor_release(conv.w), wgt_tensor_release(conv.dy);
    conv.x = conv.w = conv.dy = NULL;
}

bool bench_conv_setup(wgt_context *ctx, int layer, int64_t div)
{
    bench_cnn_release();
    const int64_t *l = conv_layers[layer];
    int64_t n = 32 / div > 0 ? 32 / div : 1, h = l[4] / div >= l[2] ? l[4] / div : l[2];
    int64_t oh = (h + 2 * (l[2] / 2) - l[2]) / l[3] + 1;
    int64_t xs[4] = {n, l[0], h, h}, ws[4] = {l[1], l[0], l[2], l[2]}, ys[4] = {n, l[1], oh, oh};
    wgt_conv2d_options_init(&conv.opt);
    conv.opt.stride[0] = conv.opt.stride[1] = l[3];
    for (int i = 0; i < 4; i++) conv.opt.padding[i] = l[2] / 2;
    conv.x = wgt_randn(ctx, WGT_F32, 4, xs, 101);
    conv.w = wgt_randn(ctx, WGT_F32, 4, ws, 102);
    conv.dy = wgt_randn(ctx, WGT_F32, 4, ys, 103);
    conv.flops = 3.0 * 2.0 * (double)n * l[1] * l[0] * l[2] * l[2] * oh * oh;
    return conv.x && conv.w && conv.dy && wgt_tensor_set_requires_grad(conv.x, true) == WGT_OK &&
           wgt_tensor_set_requires_grad(conv.w, true) == WGT_OK;
}

wgt_tensor *bench_conv_step(wgt_context *ctx)
{
    (void)ctx;
    wgt_tensor *params[2] = {conv.x, conv.w};
    wgt_zero_grad(params, 2);
    wgt_tensor *y = wgt_conv2d(conv.x, conv.w, NULL, &conv.opt);
    if (y && wgt_backward_ex(y, conv.dy, false) != WGT_OK) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}

double bench_conv_flops(void) { return conv.flops; }

/* ------------------------------------------------------------- ResNet-18 */

#define R18_MAX_PARAMS 128
#define R18_MAX_BUFFERS 64

static struct {
    wgt_context *ctx;
    int64_t batch, size, div;
    wgt_tensor *params[R18_MAX_PARAMS], *buffers[R18_MAX_BUFFERS];
    int n_params, n_buffers, cursor_p, cursor_b;
    wgt_tensor *images, *labels;
    wgt_optimizer *opt;
} r18;

static wgt_tensor *add_param(wgt_tensor *t)
{
    if (!t || r18.n_params == R18_MAX_PARAMS) return NULL;
    wgt_tensor_set_requires_grad(t, true);
    return r18.params[r18.n_params++] = t;
}

/* kaiming-normal-like init (scale does not matter for timing, only that
 * activations stay finite): randn * sqrt(2 / fan_in) */
static bool make_conv(int64_t cin, int64_t cout, int64_t k)
{
    int64_t shape[4] = {cout, cin, k, k};
    wgt_tensor *r = wgt_randn(r18.ctx, WGT_F32, 4, shape, 1000 + (uint64_t)r18.n_params);
    wgt_tensor *w = r ? wgt_binary_scalar(WGT_OP_MUL, r, sqrt(2.0 / (double)(cin * k * k))) : NULL;
    wgt_tensor_release(r);
    return add_param(w) != NULL;
}

static bool make_bn(int64_t c)
{
    if (r18.n_buffers + 2 > R18_MAX_BUFFERS) return false;
    bool ok = add_param(wgt_ones(r18.ctx, WGT_F32, 1, &c)) && add_param(wgt_zeros(r18.ctx, WGT_F32, 1, &c));
    r18.buffers[r18.n_buffers++] = wgt_zeros(r18.ctx, WGT_F32, 1, &c);
    r18.buffers[r18.n_buffers++] = wgt_ones(r18.ctx, WGT_F32, 1, &c);
    return ok && r18.buffers[r18.n_buffers - 1] && r18.buffers[r18.n_buffers - 2];
}

int64_t bench_resnet18_batch(void) { return r18.batch; }

bool bench_resnet18_setup(wgt_context *ctx, int64_t batch, int64_t size, int64_t div)
{
    bench_cnn_release();
    r18.ctx = ctx, r18.batch = batch, r18.size = size, r18.div = div;
    int64_t widths[4] = {64 / div, 128 / div, 256 / div, 512 / div};
    bool ok = make_conv(3, widths[0], 7) && make_bn(widths[0]);
    int64_t cin = widths[0];
    for (int stage = 0; stage < 4 && ok; stage++)
        for (int block = 0; block < 2 && ok; block++) {
            int64_t cout = widths[stage];
            ok = make_conv(cin, cout, 3) && make_bn(cout) && make_conv(cout, cout, 3) && make_bn(cout);
            if (ok && block == 0 && stage > 0) ok = make_conv(cin, cout, 1) && make_bn(cout); /* downsample */
            cin = cout;
        }
    int64_t fc[2] = {1000, cin}, classes = 1000;
    wgt_tensor *r = ok ? wgt_randn(ctx, WGT_F32, 2, fc, 77) : NULL;
    ok = ok && add_param(r ? wgt_binary_scalar(WGT_OP_MUL, r, 1 / sqrt((double)cin)) : NULL) &&
         add_param(wgt_zeros(ctx, WGT_F32, 1, &classes));
    wgt_tensor_release(r);
    int64_t xs[4] = {batch, 3, size, size};
    r18.images = wgt_randn(ctx, WGT_F32, 4, xs, 5);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)batch);
    for (int64_t i = 0; labels && i < batch; i++) labels[i] = (int32_t)((i * 7919) % 1000);
    r18.labels = labels ? wgt_tensor_from_host(ctx, WGT_I32, 1, &batch, labels) : NULL;
    free(labels);
    wgt_optimizer_config cfg;
    wgt_optimizer_config_init(&cfg, WGT_OPTIMIZER_SGD);
    cfg.lr = 0.1, cfg.momentum = 0.9, cfg.weight_decay = 1e-4;
    if (ok && r18.images && r18.labels) r18.opt = wgt_optimizer_create(r18.params, r18.n_params, &cfg);
    return r18.opt != NULL;
}

static wgt_tensor *next_param(void) { return r18.params[r18.cursor_p++]; }

/* conv (no bias) -> batch norm (training) [-> ReLU] */
static wgt_tensor *conv_bn(wgt_tensor *x, int64_t stride, int64_t pad, bool relu)
{
    wgt_conv2d_options o;
    wgt_conv2d_options_init(&o);
    o.stride[0] = o.stride[1] = stride;
    for (int i = 0; i < 4; i++) o.padding[i] = pad;
    wgt_tensor *w = next_param(), *g = next_param(), *b = next_param();
    wgt_tensor *rm = r18.buffers[r18.cursor_b++], *rv = r18.buffers[r18.cursor_b++];
    wgt_tensor *c = x ? wgt_conv2d(x, w, NULL, &o) : NULL;
    wgt_tensor *n = c ? wgt_batch_norm(c, rm, rv, g, b, true, 0.1, 1e-5) : NULL;
    return relu && n ? wgt_relu(n) : n;
}

wgt_tensor *bench_resnet18_step(wgt_context *ctx)
{
    r18.cursor_p = r18.cursor_b = 0;
    if (wgt_optimizer_zero_grad(r18.opt) != WGT_OK || wgt_scope_push(ctx) != WGT_OK) return NULL;
    wgt_pool2d_options pool;
    wgt_pool2d_options_init(&pool, 3, 3);
    pool.stride[0] = pool.stride[1] = 2;
    pool.padding[0] = pool.padding[1] = 1;
    wgt_tensor *h = conv_bn(r18.images, 2, 3, true);
    h = h ? wgt_max_pool2d(h, &pool) : NULL;
    for (int stage = 0; stage < 4; stage++)
        for (int block = 0; block < 2; block++) {
            int64_t stride = block == 0 && stage > 0 ? 2 : 1;
            wgt_tensor *a = conv_bn(h, stride, 1, true);
            wgt_tensor *b = conv_bn(a, 1, 1, false);
            wgt_tensor *skip = block == 0 && stage > 0 ? conv_bn(h, 2, 0, false) : h;
            wgt_tensor *sum = b && skip ? wgt_add(b, skip) : NULL;
            h = sum ? wgt_relu(sum) : NULL;
        }
    wgt_tensor *pooled = h ? wgt_adaptive_avg_pool2d(h, 1, 1) : NULL;
    int64_t flat[2] = {r18.batch, pooled ? wgt_tensor_dim(pooled, 1) : 0};
    wgt_tensor *f = pooled ? wgt_reshape(pooled, 2, flat) : NULL;
    wgt_tensor *fw = next_param(), *fb = next_param();
    wgt_tensor *logits = f ? wgt_linear(f, fw, fb) : NULL;
    wgt_tensor *loss = logits ? wgt_cross_entropy(logits, r18.labels, WGT_REDUCTION_MEAN, -100) : NULL;
    bool ok = loss && wgt_backward(loss) == WGT_OK && wgt_optimizer_step(r18.opt) == WGT_OK;
    if (ok) wgt_scope_keep(loss);
    wgt_scope_pop(ctx);
    return ok ? loss : NULL;
}

void bench_cnn_release(void)
{
    release_conv();
    wgt_optimizer_destroy(r18.opt);
    r18.opt = NULL;
    for (int i = 0; i < r18.n_params; i++) wgt_tensor_release(r18.params[i]);
    for (int i = 0; i < r18.n_buffers; i++) wgt_tensor_release(r18.buffers[i]);
    wgt_tensor_release(r18.images), wgt_tensor_release(r18.labels);
    r18.images = r18.labels = NULL;
    r18.n_params = r18.n_buffers = 0;
}
