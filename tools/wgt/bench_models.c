/* Whole-model cases of wgt bench; see bench_models.h. bench/torch_ref.py builds
 * the same shapes in PyTorch (adamw_124m, gpt2_fwd). */
#include <stdlib.h>

#include "bench_models.h"

#define GPT2_MAX_PARAMS (2 + 12 * 12 + 2)

static struct {
    wgt_tensor *params[GPT2_MAX_PARAMS];
    int n_params;
    int64_t n_elements;
    wgt_optimizer *opt;
    wgt_tensor *ids;
    int64_t layers, width, heads, vocab, batch, seq;
} m;

void bench_models_release(void)
{
    wgt_optimizer_destroy(m.opt);
    m.opt = NULL;
    for (int i = 0; i < m.n_params; i++) wgt_tensor_release(m.params[i]);
    wgt_tensor_release(m.ids);
    m.ids = NULL;
    m.n_params = 0;
    m.n_elements = 0;
}

static bool add_param(wgt_context *ctx, int ndim, const int64_t *shape, double scale)
{
    wgt_tensor *r = wgt_randn(ctx, WGT_F32, ndim, shape, (uint64_t)m.n_params + 1);
    wgt_tensor *p = r ? wgt_binary_scalar(WGT_OP_MUL, r, scale) : NULL;
    wgt_tensor_release(r);
    if (!p) return false;
    m.params[m.n_params++] = p;
    m.n_elements += wgt_tensor_numel(p);
    return true;
}

/* wte, wpe, then per layer ln1 w b, attn w b, proj w b, ln2 w b, fc w b, fc2 w b; lnf w b */
static bool make_gpt2_params(wgt_context *ctx, int64_t div)
{
    bench_models_release();
    m.layers = 12 / div > 0 ? 12 / div : 1;
    m.width = 768 / div;
    m.heads = 12 / div > 0 ? 12 / div : 1;
    m.vocab = 50257 / div;
    int64_t C = m.width, ctx_len = 1024 / div;
    bool ok = add_param(ctx, 2, (int64_t[]){m.vocab, C}, 0.02) && add_param(ctx, 2, (int64_t[]){ctx_len, C}, 0.01);
    for (int64_t l = 0; ok && l < m.layers; l++) {
        ok = add_param(ctx, 1, (int64_t[]){C}, 1.0) && add_param(ctx, 1, (int64_t[]){C}, 0.0) &&
             add_param(ctx, 2, (int64_t[]){3 * C, C}, 0.02) && add_param(ctx, 1, (int64_t[]){3 * C}, 0.0) &&
             add_param(ctx, 2, (int64_t[]){C, C}, 0.02) && add_param(ctx, 1, (int64_t[]){C}, 0.0) &&
             add_param(ctx, 1, (int64_t[]){C}, 1.0) && add_param(ctx, 1, (int64_t[]){C}, 0.0) &&
             add_param(ctx, 2, (int64_t[]){4 * C, C}, 0.02) && add_param(ctx, 1, (int64_t[]){4 * C}, 0.0) &&
             add_param(ctx, 2, (int64_t[]){C, 4 * C}, 0.02) && add_param(ctx, 1, (int64_t[]){C}, 0.0);
    }
    return ok && add_param(ctx, 1, (int64_t[]){C}, 1.0) && add_param(ctx, 1, (int64_t[]){C}, 0.0);
}

bool bench_adamw_setup(wgt_context *ctx, int64_t div)
{
    if (!make_gpt2_params(ctx, div)) return false;
    for (int i = 0; i < m.n_params; i++) { /* a gradient for every parameter */
        wgt_tensor *g = wgt_randn(ctx, WGT_F32, wgt_tensor_ndim(m.params[i]), wgt_tensor_shape(m.params[i]), 1000 + i);
        if (!g || wgt_tensor_set_grad(m.params[i], g) != WGT_OK) return false;
        wgt_tensor_release(g);
    }
    wgt_optimizer_config cfg;
    wgt_optimizer_config_init(&cfg, WGT_OPTIMIZER_ADAMW);
    cfg.lr = 6e-4;
    cfg.weight_decay = 0.1;
    m.opt = wgt_optimizer_create(m.params, m.n_params, &cfg);
    return m.opt != NULL;
}

int64_t bench_adamw_param_count(void) { return m.n_elements; }

wgt_tensor *bench_adamw_step(wgt_context *ctx)
{
    if (wgt_optimizer_step(m.opt) != WGT_OK) return NULL;
    return wgt_tensor_retain(m.params[0]); /* the harness releases what a step returns */
    (void)ctx;
}

bool bench_gpt2_setup(wgt_context *ctx, int64_t batch, int64_t seq, int64_t div)
{
    if (!make_gpt2_params(ctx, div)) return false;
    m.batch = batch;
    m.seq = seq;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(batch * seq));
    if (!ids) return false;
    uint32_t state = 12345;
    for (int64_t i = 0; i < batch * seq; i++) {
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        ids[i] = (int32_t)(state % (uint32_t)m.vocab);
    }
    m.ids = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){batch, seq}, ids);
    free(ids);
    return m.ids != NULL;
}

/* logits [B, T, V] of GPT-2: the nanoGPT forward (pre-norm blocks, causal flash
 * attention, tanh GELU MLP, tied head) with no autograd recording. */
wgt_tensor *bench_gpt2_forward(wgt_context *ctx)
{
    const int64_t B = m.batch, T = m.seq, C = m.width, H = m.heads;
    wgt_scope_push(ctx);
    wgt_tensor **p = m.params;
    wgt_tensor *x = wgt_add(wgt_embedding(p[0], m.ids), wgt_slice(p[1], 0, 0, T, 1));
    for (int64_t l = 0; l < m.layers; l++) {
        wgt_tensor **q = p + 2 + 12 * l;
        wgt_tensor *qkv = wgt_linear(wgt_layer_norm(x, q[0], q[1], 1e-5), q[2], q[3]);
        wgt_tensor *heads[3];
        for (int i = 0; i < 3; i++)
            heads[i] = wgt_transpose(wgt_view(wgt_slice(qkv, 2, i * C, (i + 1) * C, 1), 4,
                                              (int64_t[]){B, T, H, C / H}),
                                     1, 2);
        wgt_tensor *y = wgt_scaled_dot_product_attention(heads[0], heads[1], heads[2], true, 0.0, 0);
        y = wgt_reshape(wgt_transpose(y, 1, 2), 3, (int64_t[]){B, T, C});
        x = wgt_add(x, wgt_linear(y, q[4], q[5]));
        wgt_tensor *h = wgt_gelu_tanh(wgt_linear(wgt_layer_norm(x, q[6], q[7], 1e-5), q[8], q[9]));
        x = wgt_add(x, wgt_linear(h, q[10], q[11]));
    }
    wgt_tensor *last = p[2 + 12 * m.layers];
    wgt_tensor *logits = wgt_linear(wgt_layer_norm(x, last, p[3 + 12 * m.layers], 1e-5), p[0], NULL);
    wgt_scope_keep(logits);
    wgt_scope_pop(ctx);
    return logits;
}
