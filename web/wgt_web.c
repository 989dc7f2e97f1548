/* The page's entry points (web/index.html calls them through ccall): open a
 * context on the browser's WebGPU or the CPU, train the `tiny` GPT preset of
 * `wgt train` one step per call (so the page redraws its loss chart between
 * steps), load a checkpoint written by native `wgt train`, stream samples, and
 * time dispatches and a matmul for docs/web.md. Built only by `make web`
 * (web/CMakeLists.txt); the same model, data and checkpoint code as the native
 * tool (src/models, tools/wgt/train_{config,data,checkpoint}.c). */
#include <emscripten.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt.h"
#include "sampler.h"
#include "train_checkpoint.h"
#include "train_config.h"
#include "train_data.h"
#include "wgtensor.h"

static struct {
    wgt_context *ctx;
    char message[1024];
    train_config cfg;
    train_data data;
    bool have_data;
    gpt_model *model;
    wgt_optimizer *opts[2];
    int64_t step;
    uint64_t data_rng;
    int32_t *x, *y;
    /* sampling */
    unsigned char vocab[256];
    int16_t id_of[256];
    int vocab_size;
    gpt_kv_cache *cache;
    sampler *sampler;
    int32_t *context;
    int64_t context_len;
} web;

static int say(int rc, const char *fmt, const char *detail)
{
    snprintf(web.message, sizeof web.message, fmt, detail);
    return rc;
}

EMSCRIPTEN_KEEPALIVE const char *web_message(void) { return web.message; }

static void drop_model(void)
{
    sampler_destroy(web.sampler);
    gpt_kv_cache_destroy(web.cache);
    for (int g = 0; g < 2; g++) wgt_optimizer_destroy(web.opts[g]);
    gpt_destroy(web.model);
    free(web.x), free(web.y), free(web.context);
    web.sampler = NULL, web.cache = NULL, web.opts[0] = web.opts[1] = NULL, web.model = NULL;
    web.x = web.y = web.context = NULL;
}

/* cpu != 0: the CPU backend (the page's fallback). 0 on success, with the
 * adapter's description in web_message(). */
EMSCRIPTEN_KEEPALIVE int web_open(int cpu)
{
    drop_model();
    wgt_context_destroy(web.ctx);
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = cpu ? WGT_BACKEND_CPU : WGT_BACKEND_WEBGPU;
    web.ctx = wgt_context_create(&o);
    if (!web.ctx) return say(1, "%s", "out of memory");
    if (wgt_context_status(web.ctx) != WGT_OK) {
        say(1, "%s", wgt_context_error_message(web.ctx));
        wgt_context_destroy(web.ctx);
        web.ctx = NULL;
        return 1;
    }
    wgt_adapter_info info;
    wgt_context_adapter_info(web.ctx, &info);
    snprintf(web.message, sizeof web.message, "%s | %s | %s | f16 %s | timestamps %s", cpu ? "CPU backend" : "WebGPU",
             info.name, info.driver, info.shader_f16 ? "yes" : "no", info.timestamp_query ? "yes" : "no");
    return 0;
}

static bool make_model(void)
{
    web.model = gpt_create(web.ctx, &web.cfg.model, web.cfg.seed);
    return web.model != NULL;
}

/* Splits flags (wgt train's, space-separated, e.g. "--n-layer 1 --n-embd 32")
 * into argv after a dummy "train"; the strings point into buf. Returns argc,
 * or -1 when there are more than max - 1 words. */
static int split_flags(char *buf, char **argv, int max)
{
    int argc = 0;
    argv[argc++] = "train";
    for (char *tok = strtok(buf, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
        if (argc >= max) return -1;
        argv[argc++] = tok;
    }
    return argc;
}

/* Loads the training text (written into the module's file system by the
 * page) and builds the model and AdamW groups, as wgt train: the tiny preset,
 * then flags over it (the same parser and checks as the command line, so a
 * page can train a smaller model: the browser test trains a micro one that
 * SwiftShader runs in seconds). max_iters > 0 sets the run's length unless
 * flags give --max-iters. A bad flag is reported in web_message. */
EMSCRIPTEN_KEEPALIVE int web_train_begin(const char *text_path, int max_iters, const char *flags)
{
    if (!web.ctx) return say(1, "%s", "web_train_begin: no context (web_open first)");
    drop_model();
    if (web.have_data) train_data_free(&web.data);
    web.have_data = false;
    char msg[1024];
    train_preset(&web.cfg, "tiny");
    char flag_buf[1024];
    if (flags && strlen(flags) >= sizeof flag_buf) return say(1, "%s", "training flags longer than 1023 characters");
    snprintf(flag_buf, sizeof flag_buf, "%s", flags ? flags : "");
    char *argv[64];
    int argc = split_flags(flag_buf, argv, 64);
    if (argc < 0) return say(1, "%s", "more than 63 words of training flags");
    train_options opt = {0};
    train_flags_seen seen;
    bool preset_given;
    /* The parser prints its reason on stderr (the page's console and its
     * notice); only the model and optimizer flags mean anything here. */
    if (train_parse_flags(argc, argv, &web.cfg, &opt, &seen, &preset_given) != 0)
        return say(1, "bad training flags \"%s\" (the reason is on the console)", flags);
    if (max_iters > 0 && !train_flag_seen(&seen, "--max-iters")) {
        /* a shorter run: the cosine decays over it, the warmup shrinks to fit */
        web.cfg.max_iters = max_iters;
        if (!train_flag_seen(&seen, "--lr-decay-iters")) web.cfg.lr_decay_iters = max_iters;
        if (!train_flag_seen(&seen, "--warmup-iters") && web.cfg.warmup_iters >= web.cfg.lr_decay_iters)
            web.cfg.warmup_iters = web.cfg.lr_decay_iters / 10;
    }
    if (!train_data_load(&web.data, text_path, msg, sizeof msg)) return say(1, "%s", msg);
    web.have_data = true;
    web.cfg.model.vocab_size = web.data.vocab_size;
    if (!train_config_check(&web.cfg, msg, sizeof msg)) return say(1, "%s", msg);
    if (!make_model()) return say(1, "cannot create the model: %s", wgt_context_error_message(web.ctx));
    int n = gpt_param_count(web.model), count[2] = {0, 0};
    wgt_tensor **groups[2] = {calloc((size_t)n, sizeof(wgt_tensor *)), calloc((size_t)n, sizeof(wgt_tensor *))};
    for (int i = 0; groups[0] && groups[1] && i < n; i++) {
        wgt_tensor *p = gpt_params(web.model)[i];
        int g = wgt_tensor_ndim(p) >= 2 ? 0 : 1;
        groups[g][count[g]++] = p;
    }
    for (int g = 0; g < 2; g++) {
        wgt_optimizer_config oc;
        wgt_optimizer_config_init(&oc, WGT_OPTIMIZER_ADAMW);
        oc.lr = web.cfg.lr;
        oc.weight_decay = g == 0 ? web.cfg.weight_decay : 0.0;
        oc.beta1 = web.cfg.beta1;
        oc.beta2 = web.cfg.beta2;
        web.opts[g] = groups[g] ? wgt_optimizer_create(groups[g], count[g], &oc) : NULL;
    }
    free(groups[0]), free(groups[1]);
    if (!web.opts[0] || !web.opts[1]) return say(1, "cannot create the optimizer: %s", wgt_context_error_message(web.ctx));
    size_t tokens = (size_t)(web.cfg.batch_size * web.cfg.model.block_size);
    web.x = malloc(tokens * sizeof(int32_t));
    web.y = malloc(tokens * sizeof(int32_t));
    if (!web.x || !web.y) return say(1, "%s", "out of memory");
    web.step = 0;
    web.data_rng = web.cfg.seed;
    memcpy(web.vocab, web.data.vocab, sizeof web.vocab);
    memcpy(web.id_of, web.data.id_of, sizeof web.id_of);
    web.vocab_size = web.data.vocab_size;
    snprintf(web.message, sizeof web.message,
             "%s%s: %d layers, %d heads, width %d, %lld parameters, batch %lld x %d tokens, %lld steps", web.cfg.preset,
             seen.n ? " + flags" : " preset", web.cfg.model.n_layer, web.cfg.model.n_head, web.cfg.model.n_embd,
             (long long)gpt_weight_count(web.model), (long long)web.cfg.batch_size, web.cfg.model.block_size,
             (long long)web.cfg.max_iters);
    return 0;
}

EMSCRIPTEN_KEEPALIVE int web_tokens_per_step(void) { return (int)(web.cfg.batch_size * web.cfg.model.block_size); }

/* One AdamW step (warmup-cosine learning rate, gradient clipping) as wgt
 * train's; returns the batch loss, NaN on error (message in web_message). */
EMSCRIPTEN_KEEPALIVE double web_train_step(void)
{
    if (!web.model || !web.opts[0]) return say(0, "%s", "web_train_step: no model (web_train_begin first)"), NAN;
    const wgt_lr_schedule schedule = {WGT_LR_WARMUP_COSINE, web.cfg.lr, web.cfg.min_lr, web.cfg.warmup_iters,
                                      web.cfg.lr_decay_iters};
    double lr = wgt_lr_at(&schedule, web.step);
    wgt_scope_push(web.ctx);
    train_data_batch(&web.data, 0, web.cfg.batch_size, web.cfg.model.block_size, &web.data_rng, web.x, web.y);
    for (int g = 0; g < 2; g++) {
        wgt_optimizer_zero_grad(web.opts[g]);
        wgt_optimizer_set_lr(web.opts[g], lr);
    }
    int64_t shape[2] = {web.cfg.batch_size, web.cfg.model.block_size};
    wgt_tensor *xs = wgt_tensor_from_host(web.ctx, WGT_I32, 2, shape, web.x);
    wgt_tensor *ys = wgt_tensor_from_host(web.ctx, WGT_I32, 2, shape, web.y);
    wgt_tensor *loss = gpt_loss(web.model, xs, ys, true, web.cfg.seed + (uint64_t)web.step);
    wgt_backward(loss);
    if (web.cfg.grad_clip > 0) wgt_clip_grad_norm(gpt_params(web.model), gpt_param_count(web.model), web.cfg.grad_clip, NULL);
    for (int g = 0; g < 2; g++) wgt_optimizer_step(web.opts[g]);
    float v = NAN;
    if (loss) wgt_tensor_read(loss, &v, sizeof v);
    wgt_scope_pop(web.ctx);
    if (wgt_context_status(web.ctx) != WGT_OK) {
        say(0, "training step failed: %s", wgt_context_error_message(web.ctx));
        wgt_context_clear_error(web.ctx);
        return NAN;
    }
    web.step++;
    return v;
}

/* Where a step's GPU time goes: n more training steps under the library's
 * profiler (timestamp queries; each batch is synchronized, so kernels, not
 * pipelining). Returns the per-op report (static, until the next call) or
 * NULL with the reason in web_message, e.g. no timestamp-query feature. */
EMSCRIPTEN_KEEPALIVE const char *web_profile_steps(int n)
{
    static char *report;
    free(report);
    report = NULL;
    if (!web.ctx || !web.model) return say(0, "%s", "web_profile_steps: no model (web_train_begin first)"), NULL;
    if (wgt_profiler_enable(web.ctx, true) != WGT_OK) {
        say(0, "profiler: %s", wgt_context_error_message(web.ctx));
        wgt_context_clear_error(web.ctx);
        return NULL;
    }
    bool stepped = true;
    for (int i = 0; i < n && stepped; i++) stepped = isfinite(web_train_step());
    if (!stepped) { /* web_train_step said why */
        wgt_profiler_enable(web.ctx, false);
        return NULL;
    }
    size_t size = 0;
    FILE *f = open_memstream(&report, &size);
    bool ok = f && wgt_profiler_report(web.ctx, f) == WGT_OK;
    if (f) fclose(f);
    wgt_profiler_enable(web.ctx, false);
    if (!ok || !report) {
        say(0, "profiler report: %s", f ? wgt_context_error_message(web.ctx) : "out of memory");
        wgt_context_clear_error(web.ctx);
        return NULL;
    }
    return report;
}

/* A checkpoint of native `wgt train` (fetched by the page into path). */
EMSCRIPTEN_KEEPALIVE int web_load_checkpoint(const char *path)
{
    if (!web.ctx) return say(1, "%s", "web_load_checkpoint: no context (web_open first)");
    drop_model();
    wgt_safetensors *file = NULL;
    train_state state;
    char msg[1024];
    if (!train_checkpoint_open(web.ctx, path, &file, &web.cfg, &state, web.vocab, &web.vocab_size, msg, sizeof msg)) {
        wgt_safetensors_close(file);
        return say(1, "%s", msg);
    }
    bool ok = make_model() && train_checkpoint_load_model(file, web.model, msg, sizeof msg);
    wgt_safetensors_close(file);
    if (!web.model) return say(1, "cannot create the model: %s", wgt_context_error_message(web.ctx));
    if (!ok) return say(1, "%s", msg);
    for (int i = 0; i < 256; i++) web.id_of[i] = -1;
    for (int i = 0; i < web.vocab_size; i++) web.id_of[web.vocab[i]] = (int16_t)i;
    snprintf(web.message, sizeof web.message, "checkpoint %s: %d layers, %d heads, width %d, step %lld", path,
             web.cfg.model.n_layer, web.cfg.model.n_head, web.cfg.model.n_embd, (long long)state.step);
    return 0;
}

/* Feeds tokens [from, context_len) of the context; returns the last logits
 * read to host, or false. Past block_size the cache restarts on the last
 * half block (as wgt sample). */
static bool feed(int64_t from, float *logits)
{
    int64_t block = web.cfg.model.block_size;
    if (gpt_kv_cache_length(web.cache) + (web.context_len - from) > block) {
        gpt_kv_cache_reset(web.cache);
        from = web.context_len > block / 2 ? web.context_len - block / 2 : 0;
    }
    wgt_scope_push(web.ctx);
    int64_t shape[2] = {1, web.context_len - from};
    wgt_tensor *idx = wgt_tensor_from_host(web.ctx, WGT_I32, 2, shape, web.context + from);
    wgt_tensor *out = gpt_forward_cached(web.cache, idx);
    bool ok = out && wgt_tensor_read(out, logits, (size_t)web.vocab_size * sizeof(float)) == WGT_OK;
    wgt_scope_pop(web.ctx);
    return ok;
}

static float *sample_logits;

EMSCRIPTEN_KEEPALIVE int web_sample_begin(const char *prompt, double temperature, int seed)
{
    if (!web.model) return say(1, "%s", "web_sample_begin: no model (train or load a checkpoint first)");
    sampler_destroy(web.sampler);
    gpt_kv_cache_destroy(web.cache);
    free(web.context);
    free(sample_logits);
    sampler_config sc;
    sampler_config_init(&sc);
    sc.temperature = temperature;
    sc.top_k = 0;
    sc.seed = (uint64_t)seed;
    web.sampler = sampler_create(&sc, web.vocab_size);
    web.cache = gpt_kv_cache_create(web.model, 1);
    web.context = malloc(1 << 20);
    sample_logits = malloc((size_t)web.vocab_size * sizeof(float));
    if (!web.sampler || !web.cache || !web.context || !sample_logits)
        return say(1, "cannot start sampling: %s", wgt_context_error_message(web.ctx));
    web.context_len = 0;
    for (const unsigned char *p = (const unsigned char *)prompt; *p && web.context_len < 1024; p++)
        if (web.id_of[*p] >= 0) web.context[web.context_len++] = web.id_of[*p];
    if (web.context_len == 0) web.context[web.context_len++] = web.id_of['\n'] >= 0 ? web.id_of['\n'] : 0;
    wgt_no_grad_push(web.ctx);
    bool ok = feed(0, sample_logits);
    wgt_no_grad_pop(web.ctx);
    if (!ok) return say(1, "sampling failed: %s", wgt_context_error_message(web.ctx));
    return 0;
}

/* The next byte of the sample, or -1 (error in web_message). */
EMSCRIPTEN_KEEPALIVE int web_sample_next(void)
{
    if (!web.sampler || !sample_logits) return -1;
    if (web.context_len >= (1 << 18)) return say(-1, "%s", "sample too long");
    int id = sampler_pick(web.sampler, sample_logits);
    web.context[web.context_len++] = id;
    wgt_no_grad_push(web.ctx);
    bool ok = feed(web.context_len - 1, sample_logits);
    wgt_no_grad_pop(web.ctx);
    if (!ok) return say(-1, "sampling failed: %s", wgt_context_error_message(web.ctx));
    return web.vocab[id];
}

static double now_ms(void) { return emscripten_get_now(); }

/* n dependent small additions (4096 floats), one read at the end; true if
 * the result is right. */
static bool add_chain(int n)
{
    int64_t len = 4096;
    static float all[4096];
    wgt_scope_push(web.ctx);
    wgt_tensor *x = wgt_full(web.ctx, WGT_F32, 1, &len, 1.0);
    for (int i = 0; i < n; i++) x = wgt_binary_scalar(WGT_OP_ADD, x, 1.0);
    all[4095] = 0;
    wgt_tensor_read(x, all, sizeof all);
    float v = all[4095];
    wgt_scope_pop(web.ctx);
    if (v != 1.0f + (float)n) { /* a wrong answer is no timing */
        snprintf(web.message, sizeof web.message, "web_bench_dispatch: got %g, expected %d (%s)", (double)v, 1 + n,
                 wgt_context_error_message(web.ctx));
        wgt_context_clear_error(web.ctx);
        return false;
    }
    return true;
}

/* Microseconds per dispatch: the chain of n additions, timed on its second
 * run. The first run compiles the pipeline and creates the n buffers, each
 * with an error scope whose pop is a round trip to the browser's GPU process
 * (~3-5 ms here): timing it measured allocation, not dispatch. */
EMSCRIPTEN_KEEPALIVE double web_bench_dispatch(int n)
{
    if (!web.ctx) return NAN;
    if (!add_chain(n)) return NAN;
    double t0 = now_ms();
    if (!add_chain(n)) return NAN;
    return (now_ms() - t0) * 1000.0 / n;
}

/* GFLOP/s of reps n x n x n f32 matmuls. */
EMSCRIPTEN_KEEPALIVE double web_bench_matmul(int n, int reps)
{
    if (!web.ctx) return NAN;
    int64_t shape[2] = {n, n};
    wgt_scope_push(web.ctx);
    wgt_tensor *a = wgt_full(web.ctx, WGT_F32, 2, shape, 1.0);
    wgt_tensor *b = wgt_full(web.ctx, WGT_F32, 2, shape, 0.5);
    wgt_tensor *c = wgt_matmul(a, b);
    float *all = malloc((size_t)n * (size_t)n * sizeof(float));
    if (!all) return NAN;
    wgt_tensor_read(c, all, (size_t)n * (size_t)n * sizeof(float)); /* warm: pipelines compiled */
    double t0 = now_ms();
    for (int i = 0; i < reps; i++) c = wgt_matmul(a, b);
    wgt_tensor_read(c, all, (size_t)n * (size_t)n * sizeof(float));
    float v = all[(size_t)n * (size_t)n - 1];
    free(all);
    double t1 = now_ms();
    wgt_scope_pop(web.ctx);
    if (v != 0.5f * (float)n) {
        snprintf(web.message, sizeof web.message, "web_bench_matmul: got %g, expected %g (%s)", (double)v, 0.5 * n,
                 wgt_context_error_message(web.ctx));
        wgt_context_clear_error(web.ctx);
        return NAN;
    }
    return 2.0 * n * n * (double)n * reps / ((t1 - t0) / 1000.0) / 1e9;
}
