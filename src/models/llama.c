/* Llama-architecture inference (llama.h): weights, KV cache, forward pass. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "llama.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_internal.h"
#include "llm_json.h"

#define MAX_SHARDS 256

/* Where the weights come from: the shards of a folder, or random numbers. */
typedef struct weight_source {
    wgt_safetensors **shards;
    char **shard_names;
    int n_shards;
    uint64_t seed;                            /* random source when n_shards == 0 */
    int n_made;
} weight_source;

static uint64_t mix_seed(uint64_t seed, uint64_t salt)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (salt + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool fail(char *msg, size_t msg_size, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, msg_size, fmt, a, b);
    return false;
}

/* One weight of shape[ndim], in dtype (norm vectors and biases: f32), with
 * the model's own reference. missing_ok: NULL without an error if absent. */
static wgt_tensor *weight(llama_model *m, weight_source *src, const char *name, int ndim, const int64_t *shape,
                          wgt_dtype dtype, bool is_norm, bool missing_ok, char *msg, size_t msg_size)
{
    wgt_tensor *t = NULL;
    wgt_scope_push(m->ctx);
    if (src->n_shards == 0) {
        if (is_norm) t = wgt_ones(m->ctx, WGT_F32, ndim, shape);
        else t = wgt_binary_scalar(WGT_OP_MUL, wgt_randn(m->ctx, WGT_F32, ndim, shape, mix_seed(src->seed, (uint64_t)src->n_made)), 0.02);
        src->n_made++;
    } else {
        int found = -1;
        for (int s = 0; s < src->n_shards; s++) {
            if (wgt_safetensors_find(src->shards[s], name) < 0) continue;
            if (found >= 0) {
                wgt_scope_pop(m->ctx);
                fail(msg, msg_size, "tensor %s is in two shards (%s and another)", name, src->shard_names[s]);
                return NULL;
            }
            found = s;
        }
        if (found < 0) {
            wgt_scope_pop(m->ctx);
            if (!missing_ok) fail(msg, msg_size, "tensor %s is missing from the model's safetensors files%s", name, "");
            return NULL;
        }
        wgt_safetensors_info info;
        wgt_safetensors_info_get(src->shards[found], wgt_safetensors_find(src->shards[found], name), &info);
        bool same = info.ndim == ndim;
        for (int i = 0; same && i < ndim; i++) same = info.shape[i] == shape[i];
        if (!same) {
            char want[96] = "", got[96] = "";
            for (int i = 0; i < ndim; i++) snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%lld", i ? ", " : "", (long long)shape[i]);
            for (int i = 0; i < info.ndim; i++) snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld", i ? ", " : "", (long long)info.shape[i]);
            snprintf(msg, msg_size, "tensor %s has shape [%s], the config implies [%s]", name, got, want);
            wgt_scope_pop(m->ctx);
            return NULL;
        }
        if (strcmp(info.dtype, "F32") != 0 && strcmp(info.dtype, "F16") != 0 && strcmp(info.dtype, "BF16") != 0) {
            fail(msg, msg_size, "tensor %s is %s (f32, f16 or bf16 expected)", name, info.dtype);
            wgt_scope_pop(m->ctx);
            return NULL;
        }
        t = wgt_safetensors_load(src->shards[found], name);
    }
    if (t && wgt_tensor_dtype(t) != dtype) t = wgt_cast(t, dtype);
    if (t) t = wgt_tensor_retain(t);
    wgt_scope_pop(m->ctx);
    if (!t) {
        fail(msg, msg_size, "loading %s: %s", name, wgt_context_error_message(m->ctx));
        return NULL;
    }
    m->weight_bytes += (uint64_t)wgt_tensor_numel(t) * wgt_dtype_size(dtype);
    return t;
}

/* A projection weight [rows, cols]: float, or quantized (then *scales is set)
 * from the file's values as f32. */
static wgt_tensor *proj_weight(llama_model *m, weight_source *src, const char *name, int64_t rows, int64_t cols,
                               wgt_tensor **scales, bool missing_ok, char *msg, size_t msg_size)
{
    *scales = NULL;
    const int64_t shape[2] = {rows, cols};
    if (!m->bits) return weight(m, src, name, 2, shape, m->wdtype, false, missing_ok, msg, msg_size);
    if (cols % 32 != 0) {
        snprintf(msg, msg_size, "%s: %lld columns are not a multiple of 32, the quantization group", name, (long long)cols);
        return NULL;
    }
    wgt_tensor *w = weight(m, src, name, 2, shape, WGT_F32, false, missing_ok, msg, msg_size);
    if (!w) return NULL;
    m->weight_bytes -= (uint64_t)(rows * cols) * 4;
    wgt_tensor *q = NULL;
    wgt_scope_push(m->ctx);
    if (wgt_quantize_weight(w, m->bits, &q, scales) == WGT_OK) {
        q = wgt_tensor_retain(q);
        *scales = wgt_tensor_retain(*scales);
    }
    wgt_scope_pop(m->ctx);
    wgt_tensor_release(w);
    if (!q) {
        snprintf(msg, msg_size, "quantizing %s: %s", name, wgt_context_error_message(m->ctx));
        return NULL;
    }
    m->weight_bytes += (uint64_t)(wgt_tensor_numel(q) + wgt_tensor_numel(*scales)) * 4;
    return q;
}

void llama_destroy(llama_model *m)
{
    if (!m) return;
    for (int l = 0; m->layers && l < m->cfg.n_layers; l++) {
        wgt_tensor **all = (wgt_tensor **)&m->layers[l];
        for (size_t i = 0; i < sizeof(llama_layer) / sizeof(wgt_tensor *); i++) wgt_tensor_release(all[i]);
    }
    if (m->head != m->embed) wgt_tensor_release(m->head);
    wgt_tensor_release(m->head_scales);
    wgt_tensor_release(m->embed);
    wgt_tensor_release(m->norm);
    wgt_tensor_release(m->rope_lo);
    wgt_tensor_release(m->rope_hi);
    wgt_tensor_release(m->rope_tab);
    wgt_tensor_release(m->rope_pass);
    free(m->layers);
    free(m);
}

/* cos / sin tables of the llama3-scaled frequencies, as HF computes them: the
 * inverse frequencies and the angles in f32, the cosines of those angles.
 * Laid out for one fused kernel per rotation (llama_forward.c's rotate): a head
 * [D] = (x1, x2) halves turns into out[s, i] = x1[i] lo[p, s, i] + x2[i] hi[p, s, i]
 * with lo = (cos, sin), hi = (-sin, cos) [positions, 2, D/2]. In f16 for f16
 * weights, as HF casts cos and sin to the activations' dtype: then the rotated
 * q, k come out f16 and need no cast before the cache and attention. */
static bool rope_tables(llama_model *m, char *msg, size_t msg_size)
{
    const llama_config *c = &m->cfg;
    /* rows: positions up to max_position, at most LLAMA_ROPE_TABLE_ROWS (the cache's limit) */
    const int D = c->head_dim, P = c->max_position < LLAMA_ROPE_TABLE_ROWS ? c->max_position : LLAMA_ROPE_TABLE_ROWS;
    float *inv = malloc((size_t)D / 2 * sizeof(float));
    float *tab = malloc((size_t)P * 2 * (size_t)D * sizeof(float));
    const bool f16 = m->wdtype == WGT_F16 && !m->bits;
    if (!inv || !tab) {
        free(inv), free(tab);
        return fail(msg, msg_size, "out of memory for the rope tables%s%s", "", "");
    }
    const double lo_wave = c->rope_original_max / c->rope_low_freq_factor;
    const double hi_wave = c->rope_original_max / c->rope_high_freq_factor;
    for (int i = 0; i < D / 2; i++) {
        const float f = (float)(1.0 / pow(c->rope_theta, (double)(float)(2 * i) / D));
        const double wave = 2 * 3.14159265358979323846 / f;
        double g = f;
        if (wave > lo_wave) g = f / c->rope_factor;
        else if (wave >= hi_wave) {
            const double smooth = (c->rope_original_max / wave - c->rope_low_freq_factor) /
                                  (c->rope_high_freq_factor - c->rope_low_freq_factor);
            g = (1 - smooth) * f / c->rope_factor + smooth * f;
        }
        inv[i] = (float)g;
    }
    /* one column per frequency: both halves of a head turn by the same angles */
    const int half = D / 2;
    for (int p = 0; p < P; p++)
        for (int i = 0; i < half; i++) {
            const float angle = (float)p * inv[i], cv = (float)cos(angle), sv = (float)sin(angle);
            const size_t at = (size_t)p * 2 * D + i; /* row p of [P, 4, half] */
            tab[at] = cv, tab[at + half] = sv;        /* lo: (cos, sin) */
            tab[at + 2 * half] = -sv, tab[at + 3 * half] = cv; /* hi: (-sin, cos) */
        }
    wgt_scope_push(m->ctx);
    wgt_tensor *t = wgt_tensor_from_host(m->ctx, WGT_F32, 3, (int64_t[]){P, 4, half}, tab);
    m->rope_tab = wgt_tensor_retain(f16 && t ? wgt_cast(t, WGT_F16) : t);
    m->rope_lo = wgt_tensor_retain(m->rope_tab ? wgt_slice(m->rope_tab, 1, 0, 2, 1) : NULL);
    m->rope_hi = wgt_tensor_retain(m->rope_tab ? wgt_slice(m->rope_tab, 1, 2, 4, 1) : NULL);
    /* rope_pass [G + 2, 1, 1, 1, 1], G = n_heads / n_kv_heads: 1 for the v
     * segment of q | k | v, or of k | v | q with kv_first (llama_forward.c's
     * rotate_qkv passes it through) */
    const int64_t G = c->n_kv_heads > 0 ? c->n_heads / c->n_kv_heads : 0;
    float *pass = calloc((size_t)G + 2, sizeof(float));
    if (pass) {
        pass[m->kv_first ? 1 : G + 1] = 1.0f;
        wgt_tensor *tp = wgt_tensor_from_host(m->ctx, WGT_F32, 5, (int64_t[]){G + 2, 1, 1, 1, 1}, pass);
        m->rope_pass = wgt_tensor_retain(f16 && tp ? wgt_cast(tp, WGT_F16) : tp);
    }
    wgt_scope_pop(m->ctx);
    free(inv), free(tab), free(pass);
    return m->rope_lo && m->rope_hi && m->rope_pass;
}

/* The decode fusion level when WGT_LLAMA_DECODE_FUSE is unset
 * (llama_forward.c's decode_fuse_level): 6 on a GPU. Level 4, the MLP's RMSNorm
 * in the gate/up GEMV's prologue, paid there (H100, Llama-3.2-1B f16, `wgt
 * generate --bench`, three rounds of levels 2 / 3 / 4: 586.8 / 596.5 / 666.0,
 * 618.9 / 664.4 / 665.4, 543.6 / 619.4 / 638.8 tokens/s); level 5, the
 * attention's combine in the o projection's GEMV (wgt_attention_linear_ex,
 * attention_project_add), paid with quantized weights and cost nothing with
 * f16 ones (H200, three alternated rounds, means of level 4 / 5: f16 837.2 /
 * 838.1, q8 964.7 / 985.8, q4 1,043.8 / 1,062.8 tokens/s;
 * bench/results/h200-2026-11-29k/close); level 6, the final norm in the f16
 * head's GEMV (head_logits): f16 848.8 / 848.4 / 847.2 / 848.4 tokens/s
 * against 843.6 / 847.9 / 846.0 / 843.4 at level 5, alternated
 * (bench/results/h200-2026-11-29o/p7). 3 on a CPU adapter, where every workgroup
 * recomputing a norm made decode 20% slower (lavapipe), and on the CPU
 * backend, which runs the fused calls as their parts anyway. */
static int default_decode_fuse(wgt_context *ctx)
{
    wgt_adapter_info info;
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU || wgt_context_adapter_info(ctx, &info) != WGT_OK) return 3;
    return info.type == WGT_ADAPTER_CPU ? 3 : 6;
}

/* Joins a, b (and c) along rows into a new tensor held by the model and drops
 * them. NULL inputs: nothing to join, returns NULL with ok untouched. */
static wgt_tensor *join_rows(llama_model *m, wgt_tensor **a, wgt_tensor **b, wgt_tensor **c, bool *ok)
{
    if (!*a) return NULL;
    wgt_tensor *parts[3] = {*a, *b, c ? *c : NULL};
    wgt_scope_push(m->ctx);
    wgt_tensor *joined = wgt_tensor_retain(wgt_concat(parts, c ? 3 : 2, 0));
    wgt_scope_pop(m->ctx);
    wgt_tensor_release(*a), wgt_tensor_release(*b);
    *a = *b = NULL;
    if (c) wgt_tensor_release(*c), *c = NULL;
    if (!joined) *ok = false;
    return joined;
}

/* Interleaves the rows of a and b [R, cols] into [2R, cols] (a's row i at 2i,
 * b's at 2i + 1), held by the model, and drops them: gate/up, so that a
 * decode GEMV's workgroup holds both rows of each SwiGLU output
 * (wgt_linear_swiglu_ex). NULL a: returns NULL with ok untouched. */
static wgt_tensor *interleave_rows(llama_model *m, wgt_tensor **a, wgt_tensor **b, bool *ok)
{
    if (!*a) return NULL;
    wgt_tensor *parts[2] = {*a, *b};
    wgt_scope_push(m->ctx);
    wgt_tensor *pairs = wgt_stack(parts, 2, 1); /* [R, 2, cols], contiguous */
    wgt_tensor *joined = wgt_tensor_retain(
        pairs ? wgt_reshape(pairs, 2, (int64_t[]){2 * wgt_tensor_dim(*a, 0), wgt_tensor_dim(*a, 1)}) : NULL);
    wgt_scope_pop(m->ctx);
    wgt_tensor_release(*a), wgt_tensor_release(*b);
    *a = *b = NULL;
    if (!joined) *ok = false;
    return joined;
}

static llama_model *build(wgt_context *ctx, const llama_config *cfg, llama_weights weights, weight_source *src,
                          char *msg, size_t msg_size)
{
    llama_model *m = calloc(1, sizeof(*m));
    if (!m || !(m->layers = calloc((size_t)cfg->n_layers, sizeof(llama_layer)))) {
        free(m);
        snprintf(msg, msg_size, "out of memory");
        return NULL;
    }
    m->ctx = ctx;
    m->cfg = *cfg;
    m->weights = weights;
    m->wdtype = weights == LLAMA_WEIGHTS_F32 ? WGT_F32 : WGT_F16;
    m->bits = weights == LLAMA_WEIGHTS_Q8 ? 8 : weights == LLAMA_WEIGHTS_Q4 ? 4 : 0;
    const char *cast = getenv("WGT_LLAMA_CAST_F16");
    m->cast_f16 = cast && strcmp(cast, "1") == 0;
    const char *fuse = getenv("WGT_LLAMA_DECODE_FUSE");
    m->decode_fuse = fuse && fuse[0] >= '0' && fuse[0] <= '6' && !fuse[1] ? fuse[0] - '0' : default_decode_fuse(ctx);
    m->kv_first = cfg->rope_llama3 && !cfg->qk_norm;
    /* MEDIUM matmul precision for 16-bit and quantized weights: the prefill's
     * f16 GEMMs may sum runs of 16 products in f16 (what cuBLAS may do by
     * default in PyTorch: allow_fp16_reduced_precision_reduction; HF's
     * activations are f16 anyway), and quantized prefill quantizes x to 8
     * bits per group (as llama.cpp's quantized GEMMs do) for integer dot
     * products. WGT_LLAMA_PRECISION=highest keeps f32 sums and f32 x. */
    const char *precision = getenv("WGT_LLAMA_PRECISION");
    m->precision = m->wdtype == WGT_F32 || (precision && strcmp(precision, "highest") == 0)
                       ? WGT_MATMUL_PRECISION_HIGHEST : WGT_MATMUL_PRECISION_MEDIUM;
    const int64_t C = cfg->hidden_size, V = cfg->vocab_size, F = cfg->intermediate_size, D = cfg->head_dim;
    const int64_t QD = cfg->n_heads * D, KD = cfg->n_kv_heads * D;
    const wgt_dtype W = m->wdtype;
    bool ok = true;
    char name[160];
#define W2(field, scale, suffix, rows, cols)                                                                       \
    (snprintf(name, sizeof(name), "model.layers.%d.%s", l, suffix),                                                \
     (L->field = proj_weight(m, src, name, rows, cols, &L->scale, false, msg, msg_size)) != NULL)
#define W1(field, suffix, n, is_norm)                                                                              \
    (snprintf(name, sizeof(name), "model.layers.%d.%s", l, suffix),                                                \
     (L->field = weight(m, src, name, 1, (int64_t[]){n}, WGT_F32, is_norm, false, msg, msg_size)) != NULL)
    wgt_no_grad_push(ctx);
    ok = (m->embed = weight(m, src, "model.embed_tokens.weight", 2, (int64_t[]){V, C}, W, false, false, msg, msg_size));
    for (int l = 0; ok && l < cfg->n_layers; l++) {
        llama_layer *L = &m->layers[l];
        ok = W1(attn_norm, "input_layernorm.weight", C, true) && W1(mlp_norm, "post_attention_layernorm.weight", C, true) &&
             W2(wq, sq, "self_attn.q_proj.weight", QD, C) && W2(wk, sk, "self_attn.k_proj.weight", KD, C) &&
             W2(wv, sv, "self_attn.v_proj.weight", KD, C) && W2(wo, so, "self_attn.o_proj.weight", C, QD) &&
             W2(w_gate, s_gate, "mlp.gate_proj.weight", F, C) && W2(w_up, s_up, "mlp.up_proj.weight", F, C) &&
             W2(w_down, s_down, "mlp.down_proj.weight", C, F);
        if (ok && cfg->attention_bias)
            ok = W1(bq, "self_attn.q_proj.bias", QD, false) && W1(bk, "self_attn.k_proj.bias", KD, false) &&
                 W1(bv, "self_attn.v_proj.bias", KD, false);
        if (ok && cfg->qk_norm) ok = W1(q_norm, "self_attn.q_norm.weight", D, true) && W1(k_norm, "self_attn.k_norm.weight", D, true);
        if (ok) {
            if (m->kv_first) { /* k | v | q (see llama_internal.h) */
                L->w_qkv = join_rows(m, &L->wk, &L->wv, &L->wq, &ok);
                L->s_qkv = join_rows(m, &L->sk, &L->sv, &L->sq, &ok);
                L->b_qkv = join_rows(m, &L->bk, &L->bv, &L->bq, &ok);
            } else {
                L->w_qkv = join_rows(m, &L->wq, &L->wk, &L->wv, &ok);
                L->s_qkv = join_rows(m, &L->sq, &L->sk, &L->sv, &ok);
                L->b_qkv = join_rows(m, &L->bq, &L->bk, &L->bv, &ok);
            }
            L->w_gate_up = interleave_rows(m, &L->w_gate, &L->w_up, &ok);
            L->s_gate_up = interleave_rows(m, &L->s_gate, &L->s_up, &ok);
            if (!ok) snprintf(msg, msg_size, "joining layer %d's projections: %s", l, wgt_context_error_message(ctx));
        }
    }
#undef W1
#undef W2
    if (ok) ok = (m->norm = weight(m, src, "model.norm.weight", 1, (int64_t[]){C}, WGT_F32, true, false, msg, msg_size));
    if (ok && !cfg->tie_embeddings) {
        /* an absent lm_head with no tie_word_embeddings key means tied (older configs) */
        msg[0] = 0;
        m->head = proj_weight(m, src, "lm_head.weight", V, C, &m->head_scales, src->n_shards > 0, msg, msg_size);
        if (!m->head && src->n_shards > 0 && !msg[0]) m->head = m->embed; /* absent: tied */
        ok = m->head != NULL;
    }
    if (ok && cfg->tie_embeddings) m->head = m->embed;
    if (ok && m->head == m->embed && m->bits) { /* a quantized copy of the tied table for the head */
        wgt_tensor *q = NULL;
        wgt_scope_push(ctx);
        if (wgt_quantize_weight(m->embed, m->bits, &q, &m->head_scales) == WGT_OK) {
            q = wgt_tensor_retain(q);
            m->head_scales = wgt_tensor_retain(m->head_scales);
        }
        wgt_scope_pop(ctx);
        m->head = q;
        ok = q != NULL;
        if (ok) m->weight_bytes += (uint64_t)(wgt_tensor_numel(q) + wgt_tensor_numel(m->head_scales)) * 4;
        else snprintf(msg, msg_size, "quantizing the tied head: %s", wgt_context_error_message(ctx));
    }
    if (ok && cfg->rope_llama3) ok = rope_tables(m, msg, msg_size);
    wgt_no_grad_pop(ctx);
    if (ok && wgt_context_status(ctx) != WGT_OK) {
        snprintf(msg, msg_size, "%s", wgt_context_error_message(ctx));
        ok = false;
    }
    if (!ok) {
        llama_destroy(m);
        return NULL;
    }
    return m;
}

llama_model *llama_create_random(wgt_context *ctx, const llama_config *cfg, llama_weights weights, uint64_t seed,
                                 char *msg, size_t msg_size)
{
    weight_source src = {.seed = seed};
    return build(ctx, cfg, weights, &src, msg, msg_size);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

llama_model *llama_load(wgt_context *ctx, const char *dir, llama_weights weights, char *msg, size_t msg_size)
{
    char path[4096];
    size_t size;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    char *text = llm_read_file(path, 1 << 20, &size, msg, msg_size);
    if (!text) return NULL;
    llama_config cfg;
    bool ok = llama_config_parse(text, size, &cfg, msg, msg_size);
    free(text);
    if (!ok) return NULL;
    /* every *.safetensors file of the folder, in name order */
    weight_source src = {0};
    char *names[MAX_SHARDS];
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return fail(msg, msg_size, "cannot open the model folder %s%s", dir, ""), NULL;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t len = strlen(e->d_name);
        if (len > 12 && strcmp(e->d_name + len - 12, ".safetensors") == 0 && n < MAX_SHARDS)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    wgt_safetensors *shards[MAX_SHARDS];
    ok = n > 0;
    if (!ok) fail(msg, msg_size, "no *.safetensors file in %s%s", dir, "");
    int n_open = 0;
    for (int i = 0; ok && i < n; i++) {
        if (!names[i]) {
            ok = fail(msg, msg_size, "out of memory%s%s", "", "");
            break;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        shards[i] = wgt_safetensors_open(ctx, path);
        if (!shards[i]) ok = fail(msg, msg_size, "%s%s", wgt_context_error_message(ctx), "");
        else n_open++;
    }
    llama_model *m = NULL;
    if (ok) {
        src.shards = shards, src.shard_names = names, src.n_shards = n;
        m = build(ctx, &cfg, weights, &src, msg, msg_size);
    }
    for (int i = 0; i < n_open; i++) wgt_safetensors_close(shards[i]);
    for (int i = 0; i < n; i++) free(names[i]);
    return m;
}

const llama_config *llama_model_config(const llama_model *m) { return m ? &m->cfg : NULL; }
llama_weights llama_model_weights(const llama_model *m) { return m->weights; }
uint64_t llama_weight_bytes(const llama_model *m) { return m ? m->weight_bytes : 0; }

wgt_matmul_precision llama_set_matmul_precision(llama_model *m, wgt_matmul_precision precision)
{
    if (!m) return WGT_MATMUL_PRECISION_HIGHEST;
    const wgt_matmul_precision old = m->precision;
    if (precision == WGT_MATMUL_PRECISION_HIGHEST || precision == WGT_MATMUL_PRECISION_MEDIUM) m->precision = precision;
    return old;
}
