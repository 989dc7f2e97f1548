/* The digits CNN (digits_cnn.h), public API only. */
#include "digits_cnn.h"

#include <math.h>
#include <stddef.h>

const char *const digits_cnn_param_names[DIGITS_CNN_PARAMS] = {
    "conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
    "conv2.bias",   "bn2.weight", "bn2.bias",   "fc.weight", "fc.bias"};
const char *const digits_cnn_buffer_names[DIGITS_CNN_BUFFERS] = {"bn1.running_mean", "bn1.running_var",
                                                                 "bn2.running_mean", "bn2.running_var"};

/* uniform(-bound, bound) of shape, as PyTorch's default conv/linear init. */
static wgt_tensor *uniform_param(wgt_context *ctx, int ndim, const int64_t *shape, double bound, uint64_t seed)
{
    wgt_tensor *u = wgt_rand(ctx, WGT_F32, ndim, shape, seed);
    double p[2] = {2 * bound, -bound};
    wgt_tensor *t = u ? wgt_fused_params(ctx, "a * p0 + p1", &u, 1, p, 2) : NULL;
    wgt_tensor_release(u);
    return t;
}

bool digits_cnn_init(digits_cnn *m, wgt_context *ctx, uint64_t seed)
{
    *m = (digits_cnn){.ctx = ctx};
    /* the model owns its tensors: made in a scope of their own and kept out of it */
    if (wgt_scope_push(ctx) != WGT_OK) return false;
    int64_t w1[4] = {16, 1, 3, 3}, c16 = 16, w2[4] = {32, 16, 3, 3}, c32 = 32, fw[2] = {10, 128}, c10 = 10;
    double b1 = 1 / sqrt(9.0), b2 = 1 / sqrt(144.0), bf = 1 / sqrt(128.0);
    m->params[0] = uniform_param(ctx, 4, w1, b1, seed * 16 + 1);
    m->params[1] = uniform_param(ctx, 1, &c16, b1, seed * 16 + 2);
    m->params[2] = wgt_ones(ctx, WGT_F32, 1, &c16);
    m->params[3] = wgt_zeros(ctx, WGT_F32, 1, &c16);
    m->params[4] = uniform_param(ctx, 4, w2, b2, seed * 16 + 3);
    m->params[5] = uniform_param(ctx, 1, &c32, b2, seed * 16 + 4);
    m->params[6] = wgt_ones(ctx, WGT_F32, 1, &c32);
    m->params[7] = wgt_zeros(ctx, WGT_F32, 1, &c32);
    m->params[8] = uniform_param(ctx, 2, fw, bf, seed * 16 + 5);
    m->params[9] = uniform_param(ctx, 1, &c10, bf, seed * 16 + 6);
    m->buffers[0] = wgt_zeros(ctx, WGT_F32, 1, &c16);
    m->buffers[1] = wgt_ones(ctx, WGT_F32, 1, &c16);
    m->buffers[2] = wgt_zeros(ctx, WGT_F32, 1, &c32);
    m->buffers[3] = wgt_ones(ctx, WGT_F32, 1, &c32);
    bool ok = true;
    for (int i = 0; i < DIGITS_CNN_PARAMS; i++) {
        ok = ok && m->params[i] && wgt_tensor_set_requires_grad(m->params[i], true) == WGT_OK;
        wgt_scope_keep(m->params[i]);
    }
    for (int i = 0; i < DIGITS_CNN_BUFFERS; i++) ok = ok && wgt_scope_keep(m->buffers[i]);
    wgt_scope_pop(ctx);
    return ok;
}

void digits_cnn_free(digits_cnn *m)
{
    for (int i = 0; i < DIGITS_CNN_PARAMS; i++) wgt_tensor_release(m->params[i]), m->params[i] = NULL;
    for (int i = 0; i < DIGITS_CNN_BUFFERS; i++) wgt_tensor_release(m->buffers[i]), m->buffers[i] = NULL;
}

/* conv 3x3 pad 1 -> batch norm -> ReLU -> max pool 2 */
static wgt_tensor *stage(digits_cnn *m, wgt_tensor *x, int first, int stats, bool training)
{
    wgt_conv2d_options conv;
    wgt_conv2d_options_init(&conv);
    conv.padding[0] = conv.padding[1] = conv.padding[2] = conv.padding[3] = 1;
    wgt_pool2d_options pool;
    wgt_pool2d_options_init(&pool, 2, 2);
    /* intermediates belong to the scope digits_cnn_forward opens */
    wgt_tensor *c = wgt_conv2d(x, m->params[first], m->params[first + 1], &conv);
    wgt_tensor *n = c ? wgt_batch_norm(c, m->buffers[stats], m->buffers[stats + 1], m->params[first + 2],
                                       m->params[first + 3], training, 0.1, 1e-5)
                      : NULL;
    wgt_tensor *r = n ? wgt_relu(n) : NULL;
    return r ? wgt_max_pool2d(r, &pool) : NULL;
}

wgt_tensor *digits_cnn_forward(digits_cnn *m, wgt_tensor *x, bool training)
{
    /* A scope owns the intermediates (the tape keeps what backward needs);
     * only the logits move out to the caller (or the caller's scope). */
    if (wgt_scope_push(m->ctx) != WGT_OK) return NULL;
    wgt_tensor *h1 = stage(m, x, 0, 0, training);
    wgt_tensor *h2 = h1 ? stage(m, h1, 4, 2, training) : NULL;
    int64_t flat[2] = {h2 ? wgt_tensor_dim(h2, 0) : 0, 128};
    wgt_tensor *f = h2 ? wgt_reshape(h2, 2, flat) : NULL;
    wgt_tensor *logits = f ? wgt_scope_keep(wgt_linear(f, m->params[8], m->params[9])) : NULL;
    wgt_scope_pop(m->ctx);
    return logits;
}
