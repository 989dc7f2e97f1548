/* Checkpoint save and load for `wgt train` / `wgt sample` (see train_checkpoint.h).
 * Files are hostile until validated: every metadata field is parsed strictly
 * and range-checked, every tensor's shape compared before it is copied. */
#include "train_checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_META 40

typedef struct meta_list {
    wgt_metadata_entry entries[MAX_META];
    char values[MAX_META][48];
    int n;
} meta_list;

static void meta_put(meta_list *m, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_put(meta_list *m, const char *key, const char *fmt, ...)
{
    if (m->n >= MAX_META) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->values[m->n], sizeof(m->values[0]), fmt, ap);
    va_end(ap);
    m->entries[m->n] = (wgt_metadata_entry){key, m->values[m->n]};
    m->n++;
}

/* The config fields as (key, pointer, kind): one table for saving and loading. */
typedef enum { K_INT, K_INT32, K_U64, K_DOUBLE, K_BOOL } key_kind;
typedef struct key_def {
    const char *key;
    key_kind kind;
    size_t offset;
} key_def;
#define KEY(name, kind, field) {name, kind, offsetof(train_config, field)}
static const key_def CONFIG_KEYS[] = {
    KEY("n_layer", K_INT32, model.n_layer), KEY("n_head", K_INT32, model.n_head),
    KEY("n_embd", K_INT32, model.n_embd), KEY("block_size", K_INT32, model.block_size),
    KEY("vocab_size", K_INT32, model.vocab_size), KEY("dropout", K_DOUBLE, model.dropout),
    KEY("bias", K_BOOL, model.bias), KEY("tied_head", K_BOOL, model.tied_head),
    KEY("batch_size", K_INT, batch_size), KEY("max_iters", K_INT, max_iters),
    KEY("warmup_iters", K_INT, warmup_iters), KEY("lr_decay_iters", K_INT, lr_decay_iters),
    KEY("lr", K_DOUBLE, lr), KEY("min_lr", K_DOUBLE, min_lr), KEY("weight_decay", K_DOUBLE, weight_decay),
    KEY("beta1", K_DOUBLE, beta1), KEY("beta2", K_DOUBLE, beta2), KEY("grad_clip", K_DOUBLE, grad_clip),
    KEY("eval_interval", K_INT, eval_interval), KEY("eval_iters", K_INT, eval_iters),
    KEY("log_interval", K_INT, log_interval), KEY("checkpoint_interval", K_INT, checkpoint_interval),
    KEY("seed", K_U64, seed),
};
#define N_CONFIG_KEYS ((int)(sizeof(CONFIG_KEYS) / sizeof(CONFIG_KEYS[0])))

bool train_checkpoint_save(wgt_context *ctx, const char *path, const train_config *cfg, const train_state *st,
                           gpt_model *model, wgt_optimizer *const *opts, int n_opts, const unsigned char *vocab,
                           int vocab_size, const train_history *history, char *msg, size_t msg_size)
{
    meta_list meta = {.n = 0};
    meta_put(&meta, "format", "%s", TRAIN_CHECKPOINT_FORMAT);
    meta_put(&meta, "preset", "%s", cfg->preset);
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        const void *p = (const char *)cfg + CONFIG_KEYS[i].offset;
        switch (CONFIG_KEYS[i].kind) {
        case K_INT: meta_put(&meta, CONFIG_KEYS[i].key, "%" PRId64, *(const int64_t *)p); break;
        case K_INT32: meta_put(&meta, CONFIG_KEYS[i].key, "%d", *(const int *)p); break;
        case K_U64: meta_put(&meta, CONFIG_KEYS[i].key, "%" PRIu64, *(const uint64_t *)p); break;
        case K_DOUBLE: meta_put(&meta, CONFIG_KEYS[i].key, "%.17g", *(const double *)p); break;
        case K_BOOL: meta_put(&meta, CONFIG_KEYS[i].key, "%d", *(const bool *)p ? 1 : 0); break;
        }
    }
    meta_put(&meta, "step", "%" PRId64, st->step);
    meta_put(&meta, "data_rng", "%" PRIu64, st->data_rng);
    meta_put(&meta, "text_hash", "%" PRIu64, st->text_hash);
    meta_put(&meta, "best_val", "%.9g", st->best_val);

    const int n_params = gpt_param_count(model);
    int n_state = 0;
    for (int g = 0; g < n_opts; g++) n_state += wgt_optimizer_state_count(opts[g]);
    wgt_named_tensor *tensors = calloc((size_t)(n_params + n_state + 2), sizeof(wgt_named_tensor));
    char **names = calloc((size_t)(n_params + n_state), sizeof(char *));
    char *steps[2] = {NULL, NULL}; /* per group: AdamW's per-parameter step counters, a comma list */
    bool ok = tensors && names && n_opts <= 2;
    wgt_metadata_entry entries[MAX_META + 2];
    int n = 0;
    wgt_scope_push(ctx);
    for (int i = 0; ok && i < n_params; i++) {
        names[n] = malloc(strlen(gpt_param_name(model, i)) + 8);
        if (!names[n]) ok = false;
        else sprintf(names[n], "model.%s", gpt_param_name(model, i));
        tensors[n] = (wgt_named_tensor){names[n], gpt_params(model)[i]};
        n++;
    }
    for (int g = 0; ok && g < n_opts; g++) {
        for (int i = 0; ok && i < wgt_optimizer_state_count(opts[g]); i++) {
            const char *state_name;
            wgt_tensor *t;
            wgt_optimizer_state_get(opts[g], i, &state_name, &t);
            names[n] = malloc(strlen(state_name) + 12);
            if (!names[n]) ok = false;
            else sprintf(names[n], "optim%d.%s", g, state_name);
            tensors[n] = (wgt_named_tensor){names[n], t};
            n++;
        }
        size_t size = (size_t)n_params * 24 + 1;
        steps[g] = calloc(size, 1);
        ok = ok && steps[g];
        for (int i = 0; ok && wgt_optimizer_param_steps(opts[g], i) >= 0 && i < n_params; i++) {
            size_t len = strlen(steps[g]);
            snprintf(steps[g] + len, size - len, "%s%" PRId64, i ? "," : "", wgt_optimizer_param_steps(opts[g], i));
        }
    }
    if (ok) {
        tensors[n++] = (wgt_named_tensor){"vocab", wgt_tensor_from_host(ctx, WGT_U8, 1, (int64_t[]){vocab_size}, vocab)};
        if (history->n > 0)
            tensors[n++] = (wgt_named_tensor){
                "history", wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){history->n, TRAIN_RECORD_FIELDS},
                                                history->rows)};
        memcpy(entries, meta.entries, (size_t)meta.n * sizeof(wgt_metadata_entry));
        static const char *steps_keys[2] = {"param_steps0", "param_steps1"};
        for (int g = 0; g < n_opts; g++) entries[meta.n + g] = (wgt_metadata_entry){steps_keys[g], steps[g]};
        if (wgt_safetensors_save(ctx, path, tensors, n, entries, meta.n + n_opts) != WGT_OK) ok = false;
    }
    wgt_scope_pop(ctx);
    if (!ok) {
        snprintf(msg, msg_size, "cannot write the checkpoint %s: %s", path,
                 wgt_context_status(ctx) != WGT_OK ? wgt_context_error_message(ctx) : "out of memory");
        wgt_context_clear_error(ctx);
    }
    for (int i = 0; names && i < n_params + n_state; i++) free(names[i]);
    free(names);
    free(tensors);
    free(steps[0]);
    free(steps[1]);
    return ok;
}

static bool parse_key(const key_def *k, const char *value, void *dst)
{
    char *end;
    errno = 0;
    if (k->kind == K_DOUBLE) {
        double d = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(d)) return false;
        *(double *)dst = d;
        return true;
    }
    if (k->kind == K_U64) {
        if (value[0] == '-') return false;
        unsigned long long u = strtoull(value, &end, 10);
        if (errno || end == value || *end) return false;
        *(uint64_t *)dst = u;
        return true;
    }
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end) return false;
    if (k->kind == K_INT) *(int64_t *)dst = v;
    else if (k->kind == K_BOOL) {
        if (v != 0 && v != 1) return false;
        *(bool *)dst = v == 1;
    } else {
        if (v < -2147483647 || v > 2147483647) return false;
        *(int *)dst = (int)v;
    }
    return true;
}

bool train_checkpoint_open(wgt_context *ctx, const char *path, wgt_safetensors **file, train_config *cfg,
                           train_state *st, unsigned char vocab[256], int *vocab_size, char *msg, size_t msg_size)
{
    *file = wgt_safetensors_open(ctx, path);
    if (!*file) {
        snprintf(msg, msg_size, "%s", wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
        return false;
    }
    wgt_safetensors *f = *file;
    const char *format = wgt_safetensors_metadata_find(f, "format");
    if (!format || strcmp(format, TRAIN_CHECKPOINT_FORMAT) != 0) {
        snprintf(msg, msg_size, "%s is a safetensors file but not a wgt train checkpoint (metadata format is %s%s%s)",
                 path, format ? "\"" : "", format ? format : "absent", format ? "\"" : "");
        return false;
    }
    memset(cfg, 0, sizeof(*cfg));
    const char *preset = wgt_safetensors_metadata_find(f, "preset");
    snprintf(cfg->preset, sizeof(cfg->preset), "%s", preset ? preset : "");
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        const char *v = wgt_safetensors_metadata_find(f, CONFIG_KEYS[i].key);
        if (!v || !parse_key(&CONFIG_KEYS[i], v, (char *)cfg + CONFIG_KEYS[i].offset)) {
            snprintf(msg, msg_size, "checkpoint %s: metadata \"%s\" is %s%s%s", path, CONFIG_KEYS[i].key,
                     v ? "not a valid value: \"" : "missing", v ? v : "", v ? "\"" : "");
            return false;
        }
    }
    static const key_def state_keys[] = {{"step", K_INT, offsetof(train_state, step)},
                                         {"data_rng", K_U64, offsetof(train_state, data_rng)},
                                         {"text_hash", K_U64, offsetof(train_state, text_hash)}};
    for (int i = 0; i < 3; i++) {
        const char *v = wgt_safetensors_metadata_find(f, state_keys[i].key);
        if (!v || !parse_key(&state_keys[i], v, (char *)st + state_keys[i].offset)) {
            snprintf(msg, msg_size, "checkpoint %s: metadata \"%s\" is missing or invalid", path, state_keys[i].key);
            return false;
        }
    }
    const char *best = wgt_safetensors_metadata_find(f, "best_val");
    st->best_val = best ? strtof(best, NULL) : NAN;
    char why[256];
    if (!train_config_check(cfg, why, sizeof(why))) {
        snprintf(msg, msg_size, "checkpoint %s: %s", path, why);
        return false;
    }
    if (st->step < 0 || st->step > cfg->max_iters) {
        snprintf(msg, msg_size, "checkpoint %s: step %" PRId64 " outside [0, max_iters %" PRId64 "]", path, st->step,
                 cfg->max_iters);
        return false;
    }
    /* the vocabulary: u8 [vocab_size], ids sorted, no duplicates */
    wgt_safetensors_info info;
    int vi = wgt_safetensors_find(f, "vocab");
    if (vi < 0 || wgt_safetensors_info_get(f, vi, &info) != WGT_OK || strcmp(info.dtype, "U8") != 0 ||
        info.ndim != 1 || info.shape[0] != cfg->model.vocab_size || info.shape[0] > 256) {
        snprintf(msg, msg_size, "checkpoint %s: no u8 [%d] tensor \"vocab\"", path, cfg->model.vocab_size);
        return false;
    }
    wgt_scope_push(ctx);
    wgt_tensor *v = wgt_safetensors_load(f, "vocab");
    bool ok = v && wgt_tensor_read(v, vocab, (size_t)cfg->model.vocab_size) == WGT_OK;
    for (int i = 1; ok && i < cfg->model.vocab_size; i++) ok = vocab[i] > vocab[i - 1];
    wgt_scope_pop(ctx);
    if (!ok) {
        snprintf(msg, msg_size, "checkpoint %s: the vocabulary is unreadable or not sorted and unique", path);
        wgt_context_clear_error(ctx);
        return false;
    }
    *vocab_size = cfg->model.vocab_size;
    return true;
}

/* Loads name into dst after checking it exists with dst's shape. */
static bool load_into(wgt_safetensors *f, const char *name, wgt_tensor *dst, char *msg, size_t msg_size)
{
    wgt_context *ctx = wgt_tensor_context(dst);
    wgt_safetensors_info info;
    int i = wgt_safetensors_find(f, name);
    bool shape_ok = i >= 0 && wgt_safetensors_info_get(f, i, &info) == WGT_OK && info.ndim == wgt_tensor_ndim(dst);
    for (int d = 0; shape_ok && d < info.ndim; d++) shape_ok = info.shape[d] == wgt_tensor_dim(dst, d);
    if (!shape_ok) {
        char want[96];
        snprintf(msg, msg_size, "checkpoint: tensor \"%s\" %s (the model needs %s)", name,
                 i < 0 ? "is missing" : "has another shape", wgt_tensor_describe(dst, want, sizeof(want)));
        return false;
    }
    wgt_scope_push(ctx);
    wgt_tensor *src = wgt_safetensors_load(f, name);
    wgt_status s = src ? wgt_assign(dst, src) : wgt_context_status(ctx);
    wgt_scope_pop(ctx);
    if (s != WGT_OK) {
        snprintf(msg, msg_size, "checkpoint: cannot load \"%s\": %s", name, wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
        return false;
    }
    return true;
}

bool train_checkpoint_load_model(wgt_safetensors *f, gpt_model *model, char *msg, size_t msg_size)
{
    wgt_context *ctx = wgt_tensor_context(gpt_params(model)[0]);
    wgt_no_grad_push(ctx);
    bool ok = true;
    for (int i = 0; ok && i < gpt_param_count(model); i++) {
        char name[200];
        snprintf(name, sizeof(name), "model.%s", gpt_param_name(model, i));
        ok = load_into(f, name, gpt_params(model)[i], msg, msg_size);
    }
    wgt_no_grad_pop(ctx);
    return ok;
}

bool train_checkpoint_load_optimizer(wgt_safetensors *f, int group, wgt_optimizer *opt, int n_params, char *msg,
                                     size_t msg_size)
{
    for (int i = 0; i < wgt_optimizer_state_count(opt); i++) {
        const char *state_name;
        wgt_tensor *t;
        char name[200];
        wgt_optimizer_state_get(opt, i, &state_name, &t);
        snprintf(name, sizeof(name), "optim%d.%s", group, state_name);
        if (!load_into(f, name, t, msg, msg_size)) return false;
    }
    char key[32];
    snprintf(key, sizeof(key), "param_steps%d", group);
    const char *steps = wgt_safetensors_metadata_find(f, key), *step = wgt_safetensors_metadata_find(f, "step");
    int64_t *counts = calloc((size_t)n_params, sizeof(int64_t));
    bool ok = steps && step && counts;
    const char *p = steps;
    for (int i = 0; ok && i < n_params; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        ok = !errno && end != p && v >= 0 && (*end == (i + 1 < n_params ? ',' : '\0'));
        counts[i] = v;
        p = end + (*end == ',');
    }
    if (ok) ok = wgt_optimizer_set_steps(opt, strtoll(step, NULL, 10), counts) == WGT_OK;
    free(counts);
    if (!ok) snprintf(msg, msg_size, "checkpoint: metadata \"%s\" is missing or not %d counts", key, n_params);
    return ok;
}

bool train_checkpoint_load_history(wgt_safetensors *f, train_history *h, char *msg, size_t msg_size)
{
    int i = wgt_safetensors_find(f, "history");
    if (i < 0) return true; /* saved before the first log line */
    wgt_safetensors_info info;
    wgt_safetensors_info_get(f, i, &info);
    if (strcmp(info.dtype, "F32") != 0 || info.ndim != 2 || info.shape[1] != TRAIN_RECORD_FIELDS ||
        info.shape[0] > 100000000) {
        snprintf(msg, msg_size, "checkpoint: tensor \"history\" is not f32 [n, %d]", TRAIN_RECORD_FIELDS);
        return false;
    }
    const int64_t n = info.shape[0];
    train_record *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof(train_record));
    wgt_tensor *t = rows ? wgt_safetensors_load(f, "history") : NULL;
    bool ok = t && wgt_tensor_read(t, rows, (size_t)n * sizeof(train_record)) == WGT_OK;
    wgt_tensor_release(t);
    for (int64_t r = 0; ok && r < n; r++) ok = train_history_add(h, rows[r]);
    free(rows);
    if (!ok) snprintf(msg, msg_size, "checkpoint: cannot read the tensor \"history\"");
    return ok;
}
