/* nanoGPT-style GPT on the public API (see gpt.h for the architecture). Every
 * function here could be written by a user of the library: no internal header. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One transformer block's parameters (biases NULL when config.bias is off). */
typedef struct gpt_block {
    wgt_tensor *ln1_w, *ln1_b, *attn_w, *attn_b, *attn_proj_w, *attn_proj_b;
    wgt_tensor *ln2_w, *ln2_b, *fc_w, *fc_b, *mlp_proj_w, *mlp_proj_b;
} gpt_block;

struct gpt_model {
    gpt_config config;
    wgt_context *ctx;
    gpt_block *blocks;
    wgt_tensor *wte, *wpe, *lnf_w, *lnf_b, *head; /* head == wte when tied */
    int n_params;
    wgt_tensor **params; /* every distinct parameter, in creation order */
    char **names;
};

struct gpt_kv_cache {
    gpt_model *model;
    int64_t batch, length;
    wgt_tensor **k, **v; /* per layer [B, H, block_size, D] */
};

bool gpt_config_check(const gpt_config *cfg, char *msg, size_t msg_size)
{
    const char *why = NULL;
    if (cfg->n_layer < 1 || cfg->n_layer > 1000) why = "n_layer must be in [1, 1000]";
    else if (cfg->n_head < 1 || cfg->n_embd < 1 || cfg->n_embd > 65536) why = "n_head >= 1 and n_embd in [1, 65536]";
    else if (cfg->n_embd % cfg->n_head != 0) why = "n_embd must be a multiple of n_head";
    else if (cfg->block_size < 1 || cfg->block_size > 1 << 20) why = "block_size must be in [1, 2^20]";
    else if (cfg->vocab_size < 1 || cfg->vocab_size > 1 << 24) why = "vocab_size must be in [1, 2^24]";
    else if (!(cfg->dropout >= 0 && cfg->dropout < 1)) why = "dropout must be in [0, 1)";
    if (why) {
        snprintf(msg, msg_size, "gpt config n_layer=%d n_head=%d n_embd=%d block_size=%d vocab_size=%d dropout=%g: %s",
                 cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->block_size, cfg->vocab_size, cfg->dropout, why);
        return false;
    }
    return true;
}

/* splitmix64: derives independent seeds (init per parameter, dropout per site). */
static uint64_t mix_seed(uint64_t seed, uint64_t salt)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (salt + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A new leaf parameter: normal(0, std) (std > 0), else filled with fill. */
static wgt_tensor *add_param(gpt_model *m, const char *name, int ndim, const int64_t *shape, double std,
                             double fill, uint64_t seed)
{
    wgt_tensor *p;
    if (std > 0) {
        wgt_tensor *r = wgt_randn(m->ctx, WGT_F32, ndim, shape, mix_seed(seed, (uint64_t)m->n_params));
        p = r ? wgt_binary_scalar(WGT_OP_MUL, r, std) : NULL; /* r is freed by gpt_create's scope */
    } else {
        p = wgt_full(m->ctx, WGT_F32, ndim, shape, fill);
    }
    if (!p) return NULL;
    wgt_tensor_set_requires_grad(p, true);
    m->params[m->n_params] = wgt_tensor_retain(p); /* the model's own reference */
    m->names[m->n_params] = strdup(name);
    m->n_params++;
    return p;
}

gpt_model *gpt_create(wgt_context *ctx, const gpt_config *cfg, uint64_t seed)
{
    char msg[256];
    if (!ctx || !cfg || !gpt_config_check(cfg, msg, sizeof(msg))) return NULL;
    gpt_model *m = calloc(1, sizeof(*m));
    int max_params = 4 + 12 * cfg->n_layer + 1;
    if (!m) return NULL;
    m->config = *cfg;
    m->ctx = ctx;
    m->blocks = calloc((size_t)cfg->n_layer, sizeof(gpt_block));
    m->params = calloc((size_t)max_params, sizeof(wgt_tensor *));
    m->names = calloc((size_t)max_params, sizeof(char *));
    if (!m->blocks || !m->params || !m->names) {
        gpt_destroy(m);
        return NULL;
    }
    const int64_t C = cfg->n_embd, V = cfg->vocab_size;
    const double std = 0.02, proj_std = 0.02 / sqrt(2.0 * cfg->n_layer);
    /* The model holds its own reference to each parameter, so a scope the
     * caller has open does not free them. */
    wgt_no_grad_push(ctx);
    wgt_scope_push(ctx);
    m->wte = add_param(m, "transformer.wte.weight", 2, (int64_t[]){V, C}, std, 0, seed);
    m->wpe = add_param(m, "transformer.wpe.weight", 2, (int64_t[]){cfg->block_size, C}, std, 0, seed);
    char name[128];
#define BLOCK_PARAM(field, suffix, ndim, std_, fill_, ...)                                       \
    do {                                                                                         \
        snprintf(name, sizeof(name), "transformer.h.%d.%s", l, suffix);                          \
        b->field = add_param(m, name, ndim, (int64_t[]){__VA_ARGS__}, std_, fill_, seed);        \
    } while (0)
    for (int l = 0; l < cfg->n_layer; l++) {
        gpt_block *b = &m->blocks[l];
        BLOCK_PARAM(ln1_w, "ln_1.weight", 1, 0, 1.0, C);
        if (cfg->bias) BLOCK_PARAM(ln1_b, "ln_1.bias", 1, 0, 0.0, C);
        BLOCK_PARAM(attn_w, "attn.c_attn.weight", 2, std, 0, 3 * C, C);
        if (cfg->bias) BLOCK_PARAM(attn_b, "attn.c_attn.bias", 1, 0, 0.0, 3 * C);
        BLOCK_PARAM(attn_proj_w, "attn.c_proj.weight", 2, proj_std, 0, C, C);
        if (cfg->bias) BLOCK_PARAM(attn_proj_b, "attn.c_proj.bias", 1, 0, 0.0, C);
        BLOCK_PARAM(ln2_w, "ln_2.weight", 1, 0, 1.0, C);
        if (cfg->bias) BLOCK_PARAM(ln2_b, "ln_2.bias", 1, 0, 0.0, C);
        BLOCK_PARAM(fc_w, "mlp.c_fc.weight", 2, std, 0, 4 * C, C);
        if (cfg->bias) BLOCK_PARAM(fc_b, "mlp.c_fc.bias", 1, 0, 0.0, 4 * C);
        BLOCK_PARAM(mlp_proj_w, "mlp.c_proj.weight", 2, proj_std, 0, C, 4 * C);
        if (cfg->bias) BLOCK_PARAM(mlp_proj_b, "mlp.c_proj.bias", 1, 0, 0.0, C);
    }
#undef BLOCK_PARAM
    m->lnf_w = add_param(m, "transformer.ln_f.weight", 1, (int64_t[]){C}, 0, 1.0, seed);
    if (cfg->bias) m->lnf_b = add_param(m, "transformer.ln_f.bias", 1, (int64_t[]){C}, 0, 0.0, seed);
    m->head = cfg->tied_head ? m->wte : add_param(m, "lm_head.weight", 2, (int64_t[]){V, C}, std, 0, seed);
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    if (wgt_context_status(ctx) != WGT_OK || !m->head) {
        gpt_destroy(m);
        return NULL;
    }
    return m;
}

void gpt_destroy(gpt_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_params; i++) {
        wgt_tensor_release(m->params[i]);
        free(m->names[i]);
    }
    free(m->params);
    free(m->names);
    free(m->blocks);
    free(m);
}

const gpt_config *gpt_model_config(const gpt_model *m) { return &m->config; }
int gpt_param_count(const gpt_model *m) { return m->n_params; }
wgt_tensor *const *gpt_params(const gpt_model *m) { return m->params; }
const char *gpt_param_name(const gpt_model *m, int i) { return i >= 0 && i < m->n_params ? m->names[i] : NULL; }

int64_t gpt_weight_count(const gpt_model *m)
{
    int64_t n = 0;
    for (int i = 0; i < m->n_params; i++) n += wgt_tensor_numel(m->params[i]);
    return n;
}

static wgt_tensor *maybe_dropout(wgt_tensor *x, double p, bool training, uint64_t seed, uint64_t site)
{
    return training && p > 0 ? wgt_dropout(x, p, mix_seed(seed, site)) : x;
}

/* x + dropout(h): one kernel forward, and backward one kernel for h only. */
static wgt_tensor *residual(wgt_tensor *x, wgt_tensor *h, double p, bool training, uint64_t seed, uint64_t site)
{
    return training && p > 0 ? wgt_dropout_add(x, h, p, mix_seed(seed, site)) : wgt_add(x, h);
}

/* One block's attention branch input -> q, k, v [B, H, T, D], views of the
 * projection: qkv [B, T, 3C] -> [B, T, 3, H, D] -> permuted [3, B, H, T, D],
 * sliced along the first dim. The strides are those of slicing the channels
 * and splitting heads, but the three slices share one source: autograd writes
 * their gradients into its windows, so dq, dk, dv reach the projection's
 * [B, T, 3C] gradient through views, with no zero fills, adds or copies. */
static void project_qkv(const gpt_model *m, const gpt_block *b, wgt_tensor *x, wgt_tensor *qkv_out[3])
{
    const int64_t B = wgt_tensor_dim(x, 0), T = wgt_tensor_dim(x, 1), C = m->config.n_embd, H = m->config.n_head;
    const int64_t D = C / H;
    wgt_tensor *qkv = wgt_linear(wgt_layer_norm(x, b->ln1_w, b->ln1_b, 1e-5), b->attn_w, b->attn_b); /* [B,T,3C] */
    wgt_tensor *heads = wgt_permute(wgt_reshape(qkv, 5, (int64_t[]){B, T, 3, H, D}), (int[]){2, 0, 3, 1, 4});
    for (int i = 0; i < 3; i++)
        qkv_out[i] = wgt_reshape(wgt_slice(heads, 0, i, i + 1, 1), 4, (int64_t[]){B, H, T, D});
}

/* The rest of a block after attention: y [B, H, T, D] -> new residual stream. */
static wgt_tensor *finish_block(const gpt_model *m, const gpt_block *b, wgt_tensor *x, wgt_tensor *y, bool training,
                                uint64_t seed, uint64_t site)
{
    const int64_t B = wgt_tensor_dim(x, 0), T = wgt_tensor_dim(x, 1), C = m->config.n_embd;
    const double p = m->config.dropout;
    y = wgt_reshape(wgt_transpose(y, 1, 2), 3, (int64_t[]){B, T, C});
    x = residual(x, wgt_linear(y, b->attn_proj_w, b->attn_proj_b), p, training, seed, site + 1);
    wgt_tensor *h = wgt_layer_norm(x, b->ln2_w, b->ln2_b, 1e-5);
    /* linear(gelu(fc)) as one op: its backward gets dfc from one GEMM whose
     * epilogue applies GELU's slope (the [B, T, 4C] gradient of gelu's
     * output is never written) */
    h = wgt_gelu_linear(wgt_linear(h, b->fc_w, b->fc_b), b->mlp_proj_w, b->mlp_proj_b);
    return residual(x, h, p, training, seed, site + 2);
}

/* idx [B, T] at positions pos0.. -> token + position embeddings [B, T, C]. */
static wgt_tensor *embed(const gpt_model *m, wgt_tensor *idx, int64_t pos0)
{
    const int64_t T = wgt_tensor_dim(idx, 1);
    return wgt_add(wgt_embedding(m->wte, idx), wgt_slice(m->wpe, 0, pos0, pos0 + T, 1));
}

/* Hidden states after ln_f, [B, T, C]. The embedding and each block run in
 * their own scope and hand only their output on, so their intermediates are
 * freed at their end unless the tape keeps them for backward (a node keeps
 * only the inputs its rule reads: core/tape.h); the block outputs (which ln_1
 * and ln_2 read in backward anyway) and the result belong to the caller's
 * scope. */
static wgt_tensor *hidden_states(gpt_model *m, wgt_tensor *idx, bool training, uint64_t seed)
{
    const double p = m->config.dropout;
    if (wgt_scope_push(m->ctx) != WGT_OK) return NULL;
    wgt_tensor *x = wgt_scope_keep(maybe_dropout(embed(m, idx, 0), p, training, seed, 0));
    wgt_scope_pop(m->ctx);
    for (int l = 0; l < m->config.n_layer && x; l++) {
        const gpt_block *b = &m->blocks[l];
        const uint64_t site = 1 + 3 * (uint64_t)l;
        if (wgt_scope_push(m->ctx) != WGT_OK) return NULL;
        wgt_tensor *qkv[3];
        project_qkv(m, b, x, qkv);
        wgt_tensor *y = wgt_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], true, training ? p : 0.0,
                                                         mix_seed(seed, site));
        x = wgt_scope_keep(finish_block(m, b, x, y, training, seed, site));
        wgt_scope_pop(m->ctx);
    }
    return wgt_layer_norm(x, m->lnf_w, m->lnf_b, 1e-5);
}

static bool idx_ok(const gpt_model *m, wgt_tensor *idx)
{
    return idx && wgt_tensor_ndim(idx) == 2 && wgt_tensor_dtype(idx) == WGT_I32 && wgt_tensor_dim(idx, 1) >= 1 &&
           wgt_tensor_dim(idx, 1) <= m->config.block_size;
}

wgt_tensor *gpt_loss(gpt_model *m, wgt_tensor *idx, wgt_tensor *targets, bool training, uint64_t dropout_seed)
{
    if (!m || !idx_ok(m, idx) || !targets) return NULL;
    const int64_t B = wgt_tensor_dim(idx, 0), T = wgt_tensor_dim(idx, 1), V = m->config.vocab_size;
    wgt_tensor *logits = wgt_linear(hidden_states(m, idx, training, dropout_seed), m->head, NULL); /* [B,T,V] */
    return wgt_cross_entropy(wgt_reshape(logits, 2, (int64_t[]){B * T, V}), wgt_reshape(targets, 1, (int64_t[]){B * T}),
                             WGT_REDUCTION_MEAN, -1);
}

wgt_tensor *gpt_logits(gpt_model *m, wgt_tensor *idx)
{
    if (!m || !idx_ok(m, idx)) return NULL;
    return wgt_linear(hidden_states(m, idx, false, 0), m->head, NULL);
}

uint64_t gpt_training_bytes(const gpt_config *cfg, int64_t batch)
{
    const uint64_t C = (uint64_t)cfg->n_embd, V = (uint64_t)cfg->vocab_size, L = (uint64_t)cfg->n_layer;
    const uint64_t BT = (uint64_t)batch * (uint64_t)cfg->block_size;
    const uint64_t params = V * C * (cfg->tied_head ? 1 : 2) + (uint64_t)cfg->block_size * C + L * 12 * C * C;
    /* parameters + gradients + AdamW's two moments */
    uint64_t floats = 4 * params;
    /* kept for backward per block: ln_1 in/out, qkv (3C), attention out (the
     * c_proj input is a view of it), ln_2 in/out, fc (4C), gelu (4C): 16 C per
     * token (the peak trace, wgt_memory_peak_report), counted as 18 for size
     * classes and the row statistics; plus the head's logits, their gradient
     * and the softmax of the loss (3 V per token), plus a block's worth of
     * gradients in flight during backward (8 C per token). */
    floats += L * 18 * BT * C + 3 * BT * V + 8 * BT * C;
    return floats * 4;
}

uint64_t gpt_largest_tensor_bytes(const gpt_config *cfg, int64_t batch)
{
    const uint64_t BT = (uint64_t)batch * (uint64_t)cfg->block_size;
    uint64_t logits = BT * (uint64_t)cfg->vocab_size, mlp = BT * 4 * (uint64_t)cfg->n_embd;
    return 4 * (logits > mlp ? logits : mlp);
}

/* ---------------------------------------------------------------- KV cache */

gpt_kv_cache *gpt_kv_cache_create(gpt_model *m, int64_t batch)
{
    if (!m || batch < 1) return NULL;
    gpt_kv_cache *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    const gpt_config *cfg = &m->config;
    c->model = m;
    c->batch = batch;
    c->k = calloc((size_t)cfg->n_layer, sizeof(wgt_tensor *));
    c->v = calloc((size_t)cfg->n_layer, sizeof(wgt_tensor *));
    if (!c->k || !c->v) {
        gpt_kv_cache_destroy(c);
        return NULL;
    }
    const int64_t shape[4] = {batch, cfg->n_head, cfg->block_size, cfg->n_embd / cfg->n_head};
    wgt_scope_push(m->ctx);
    for (int l = 0; l < cfg->n_layer; l++) {
        c->k[l] = wgt_tensor_retain(wgt_zeros(m->ctx, WGT_F32, 4, shape));
        c->v[l] = wgt_tensor_retain(wgt_zeros(m->ctx, WGT_F32, 4, shape));
    }
    wgt_scope_pop(m->ctx);
    if (wgt_context_status(m->ctx) != WGT_OK) {
        gpt_kv_cache_destroy(c);
        return NULL;
    }
    return c;
}

void gpt_kv_cache_destroy(gpt_kv_cache *c)
{
    if (!c) return;
    for (int l = 0; c->k && c->v && l < c->model->config.n_layer; l++) {
        wgt_tensor_release(c->k[l]);
        wgt_tensor_release(c->v[l]);
    }
    free(c->k);
    free(c->v);
    free(c);
}

int64_t gpt_kv_cache_length(const gpt_kv_cache *c) { return c ? c->length : 0; }
void gpt_kv_cache_reset(gpt_kv_cache *c)
{
    if (c) c->length = 0;
}

wgt_tensor *gpt_forward_cached(gpt_kv_cache *c, wgt_tensor *idx)
{
    if (!c || !idx_ok(c->model, idx) || wgt_tensor_dim(idx, 0) != c->batch) return NULL;
    gpt_model *m = c->model;
    const int64_t B = c->batch, T = wgt_tensor_dim(idx, 1), pos0 = c->length, end = pos0 + T;
    if (end > m->config.block_size) return NULL;
    wgt_context *ctx = m->ctx;
    wgt_no_grad_push(ctx);
    wgt_scope_push(ctx);
    wgt_tensor *x = embed(m, idx, pos0);
    for (int l = 0; l < m->config.n_layer; l++) {
        const gpt_block *b = &m->blocks[l];
        wgt_tensor *qkv[3];
        project_qkv(m, b, x, qkv);
        /* append this step's keys and values, then attend over the whole prefix;
         * causal is bottom-right aligned, so prompt tokens see only their past */
        wgt_assign(wgt_slice(c->k[l], 2, pos0, end, 1), qkv[1]);
        wgt_assign(wgt_slice(c->v[l], 2, pos0, end, 1), qkv[2]);
        wgt_tensor *k = wgt_slice(c->k[l], 2, 0, end, 1), *v = wgt_slice(c->v[l], 2, 0, end, 1);
        wgt_tensor *y = wgt_scaled_dot_product_attention(qkv[0], k, v, true, 0.0, 0);
        x = finish_block(m, b, x, y, false, 0, 0);
    }
    wgt_tensor *last = wgt_slice(x, 1, T - 1, T, 1); /* only the last position's logits are needed */
    wgt_tensor *logits = wgt_linear(wgt_layer_norm(last, m->lnf_w, m->lnf_b, 1e-5), m->head, NULL);
    wgt_tensor *out = wgt_scope_keep(wgt_reshape(logits, 2, (int64_t[]){B, m->config.vocab_size}));
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
    if (!out) return NULL;
    c->length = end;
    return out;
}
