/* wgt generate: text from a Hugging Face Llama-family folder (config.json,
 * *.safetensors, tokenizer.json), streamed token by token; or, with --bench,
 * prefill and decode tokens/s of a real shape (Llama-3.2-1B by default) with
 * random weights made on the device, so nothing needs downloading.
 *
 * Greedy decoding (temperature 0) picks on the device and reads back one int
 * per token; sampling reads the last logits row and uses sampler.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "llm_tokenizer.h"
#include "sampler.h"
#include "train_config.h"
#include "wgt_commands.h"
#include "wgtensor.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wgt generate --model DIR --prompt TEXT [--max-tokens N] [--quantize q8|q4] [--context N]\n"
            "                    [--temperature T] [--top-k K] [--top-p P] [--seed S] [--repetition-penalty R]\n"
            "                    [--no-bos] [--sequential] [--precision highest|medium] [--kv-cache q8]\n"
            "                    [--backend cpu|webgpu] [--adapter A]\n"
            "       wgt generate --bench [--shape llama-3.2-1b|llama-3.2-1b-slice|tiny|tiny-llama3] [--weights f16|f32|q8|q4] [--prompt-tokens N]\n"
            "                    [--max-tokens N] [--kv-cache q8] [--json FILE]\n"
            "  defaults: 128 tokens, f16 weights, greedy (temperature 0), context = prompt + tokens\n"
            "  --quantize q8|q4 (= --weights): projections quantized at load, 32 weights per scale\n"
            "  --kv-cache q8: keys and values stored as 8-bit codes, 32 per f32 scale (default: the weights'\n"
            "                 float type, f16 for f16 and quantized weights): 0.56x the cache's bytes\n"
            "  --sequential: greedy decoding reads each token before recording the next step (by default the\n"
            "                host records step n+1 while the device runs step n)\n"
            "  --precision: the forward pass's matmul precision (default medium for f16 and quantized weights:\n"
            "               quantized weights' products quantize x to 8 bits (prefill and decode), f16 prefill\n"
            "               sums products in f16 runs;\n"
            "               highest: f32 x and f32 sums, as with f32 weights; see docs/llm.md)\n");
}

typedef struct gen_args {
    const char *model, *prompt, *backend, *adapter, *shape, *json;
    bool bench, no_bos, sequential;
    int precision; /* -1: the model's default, else a wgt_matmul_precision */
    llama_weights weights;
    llama_kv_type kv;
    int64_t max_tokens, context, prompt_tokens;
    double repetition_penalty;
    sampler_config sampling;
} gen_args;

static bool number(const char *s, double lo, double hi, bool integer, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi) || (integer && v != floor(v))) return false;
    *out = v;
    return true;
}

static int parse(int argc, char **argv, gen_args *a)
{
    *a = (gen_args){.max_tokens = 128, .weights = LLAMA_WEIGHTS_F16, .repetition_penalty = 1.0,
                    .shape = "llama-3.2-1b", .prompt_tokens = 512, .precision = -1};
    sampler_config_init(&a->sampling);
    a->sampling.temperature = 0;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) return usage(stdout), 1;
        if (strcmp(flag, "--bench") == 0) {
            a->bench = true;
            continue;
        }
        if (strcmp(flag, "--no-bos") == 0) {
            a->no_bos = true;
            continue;
        }
        if (strcmp(flag, "--sequential") == 0) {
            a->sequential = true;
            continue;
        }
        if (i + 1 >= argc) return fprintf(stderr, "wgt generate: %s needs a value\n", flag), 2;
        const char *v = argv[++i];
        double d = 0;
        bool ok = true;
        if (strcmp(flag, "--model") == 0) a->model = v;
        else if (strcmp(flag, "--prompt") == 0) a->prompt = v;
        else if (strcmp(flag, "--backend") == 0) a->backend = v;
        else if (strcmp(flag, "--adapter") == 0) a->adapter = v;
        else if (strcmp(flag, "--shape") == 0) a->shape = v;
        else if (strcmp(flag, "--json") == 0) a->json = v;
        else if (strcmp(flag, "--precision") == 0) {
            if (strcmp(v, "highest") == 0) a->precision = WGT_MATMUL_PRECISION_HIGHEST;
            else if (strcmp(v, "medium") == 0) a->precision = WGT_MATMUL_PRECISION_MEDIUM;
            else {
                fprintf(stderr, "wgt generate: --precision %s: highest or medium\n", v);
                return 2;
            }
        }
        else if (strcmp(flag, "--weights") == 0 || strcmp(flag, "--quantize") == 0) {
            if (strcmp(v, "f16") == 0) a->weights = LLAMA_WEIGHTS_F16;
            else if (strcmp(v, "f32") == 0) a->weights = LLAMA_WEIGHTS_F32;
            else if (strcmp(v, "q8") == 0) a->weights = LLAMA_WEIGHTS_Q8;
            else if (strcmp(v, "q4") == 0) a->weights = LLAMA_WEIGHTS_Q4;
            else {
                fprintf(stderr, "wgt generate: %s %s: f16, f32, q8 or q4\n", flag, v);
                return 2;
            }
        } else if (strcmp(flag, "--kv-cache") == 0) {
            if (strcmp(v, "q8") == 0) a->kv = LLAMA_KV_Q8;
            else if (strcmp(v, "default") == 0) a->kv = LLAMA_KV_DEFAULT;
            else {
                fprintf(stderr, "wgt generate: --kv-cache %s: q8 or default\n", v);
                return 2;
            }
        } else if (strcmp(flag, "--max-tokens") == 0) ok = number(v, 0, 1e7, true, &d), a->max_tokens = (int64_t)d;
        else if (strcmp(flag, "--context") == 0) ok = number(v, 1, 1 << 24, true, &d), a->context = (int64_t)d;
        else if (strcmp(flag, "--prompt-tokens") == 0) ok = number(v, 1, 1 << 20, true, &d), a->prompt_tokens = (int64_t)d;
        else if (strcmp(flag, "--temperature") == 0) ok = number(v, 0, 1e6, false, &a->sampling.temperature);
        else if (strcmp(flag, "--top-k") == 0) ok = number(v, 0, 1e9, true, &d), a->sampling.top_k = (int)d;
        else if (strcmp(flag, "--top-p") == 0) ok = number(v, 1e-9, 1, false, &a->sampling.top_p);
        else if (strcmp(flag, "--seed") == 0) ok = number(v, 0, 9007199254740992.0, true, &d), a->sampling.seed = (uint64_t)d;
        else if (strcmp(flag, "--repetition-penalty") == 0) ok = number(v, 1e-3, 1e3, false, &a->repetition_penalty);
        else {
            fprintf(stderr, "wgt generate: unknown option \"%s\"\n", flag);
            return usage(stderr), 2;
        }
        if (!ok) return fprintf(stderr, "wgt generate: %s: \"%s\" is not a valid value\n", flag, v), 2;
    }
    if (!a->bench && (!a->model || !a->prompt)) {
        fprintf(stderr, "wgt generate: --model DIR and --prompt TEXT are required (or --bench)\n");
        return usage(stderr), 2;
    }
    if (a->backend && strcmp(a->backend, "cpu") != 0 && strcmp(a->backend, "webgpu") != 0)
        return fprintf(stderr, "wgt generate: --backend must be cpu or webgpu\n"), 2;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Samplers of a generation: over the whole vocabulary, or over the top_k
 * candidates the device picked (then only 2 k numbers cross to the host, not
 * V logits: the same distribution, since top-k comes first either way). */
typedef struct pickers {
    sampler *full, *topk;
    float *values;
    int32_t *indices;
} pickers;

/* The top-k candidates of the last row on the device; sampled on the host. */
static int32_t pick_topk(wgt_tensor *logits, pickers *p, int k)
{
    const int64_t N = wgt_tensor_dim(logits, 0);
    wgt_context *ctx = wgt_tensor_context(logits);
    wgt_scope_push(ctx);
    wgt_tensor *values = NULL, *indices = NULL;
    wgt_status st = wgt_topk(wgt_slice(logits, 0, N - 1, N, 1), k, true, &values, &indices);
    if (st == WGT_OK) st = wgt_tensor_read(values, p->values, (size_t)k * sizeof(float));
    if (st == WGT_OK) st = wgt_tensor_read(indices, p->indices, (size_t)k * sizeof(int32_t));
    wgt_scope_pop(ctx);
    if (st != WGT_OK) return -1;
    const int j = sampler_pick(p->topk, p->values);
    return j < 0 ? -1 : p->indices[j];
}

/* The next token from logits [N, V] (last row): on the device when greedy. */
static int32_t pick(wgt_tensor *logits, pickers *p, float *host, int V, const gen_args *a, const int32_t *history,
                    size_t n_history)
{
    if (a->sampling.temperature == 0 && a->repetition_penalty == 1.0) return llama_argmax(logits);
    if (p->topk && a->repetition_penalty == 1.0) return pick_topk(logits, p, a->sampling.top_k);
    sampler *s = p->full;
    const int64_t N = wgt_tensor_dim(logits, 0);
    wgt_context *ctx = wgt_tensor_context(logits);
    wgt_scope_push(ctx);
    wgt_status st = wgt_tensor_read(wgt_slice(logits, 0, N - 1, N, 1), host, (size_t)V * sizeof(float));
    wgt_scope_pop(ctx);
    if (st != WGT_OK) return -1;
    llama_repetition_penalty(host, V, history, n_history, a->repetition_penalty);
    return sampler_pick(s, host);
}

static const char *weights_name(llama_weights w)
{
    static const char *const names[] = {"f32", "f16", "q8", "q4"};
    return names[w];
}

static void report_speed(size_t prompt, double t_prompt, int64_t produced, double t_gen)
{
    fprintf(stderr, "\nwgt generate: prompt %zu tokens in %.3f s (%.1f tokens/s), generated %lld tokens in %.3f s "
                    "(%.1f tokens/s)\n",
            prompt, t_prompt, (double)prompt / fmax(t_prompt, 1e-9), (long long)produced, t_gen,
            (double)produced / fmax(t_gen, 1e-9));
}

/* Streams greedy tokens to stdout as llama_generate_greedy produces them. */
typedef struct emitter {
    const llm_tokenizer *tok;
    int eos;
    int32_t *ids;
    size_t n;
    int64_t produced;
    double t_first; /* when the first token arrived: the prompt's time ends there */
} emitter;

static bool emit(int32_t token, void *user)
{
    emitter *e = user;
    if (e->produced == 0 && e->t_first == 0) e->t_first = now_s();
    if (token == e->eos) return false;
    size_t len;
    const char *bytes = llm_tokenizer_token_bytes(e->tok, token, &len);
    if (bytes) fwrite(bytes, 1, len, stdout), fflush(stdout);
    e->ids[e->n++] = token;
    e->produced++;
    return true;
}

static int run_generate(wgt_context *ctx, const gen_args *a)
{
    char msg[1024] = "", path[4200];
    snprintf(path, sizeof(path), "%s/tokenizer.json", a->model);
    llm_tokenizer *tok = llm_tokenizer_load(path, msg, sizeof(msg));
    if (!tok) return fprintf(stderr, "wgt generate: %s\n", msg), 1;
    double t_load = now_s();
    llama_model *m = llama_load(ctx, a->model, a->weights, msg, sizeof(msg));
    if (!m) {
        llm_tokenizer_free(tok);
        return fprintf(stderr, "wgt generate: %s: %s\n", a->model, msg), 1;
    }
    t_load = now_s() - t_load;
    if (a->precision >= 0) llama_set_matmul_precision(m, (wgt_matmul_precision)a->precision);
    const llama_config *cfg = llama_model_config(m);
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = 1;
    llama_cache *cache = NULL;
    pickers pk = {0};
    float *host = malloc((size_t)cfg->vocab_size * sizeof(float));
    if (!llm_tokenizer_encode(tok, a->prompt, strlen(a->prompt), !a->no_bos, &ids, &n, msg, sizeof(msg))) {
        fprintf(stderr, "wgt generate: the prompt: %s\n", msg);
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "wgt generate: the prompt encodes to no token (use a non-empty prompt or drop --no-bos)\n");
        goto done;
    }
    const int64_t context = a->context ? a->context : (int64_t)n + a->max_tokens;
    int32_t *grown = realloc(ids, (size_t)(n + (size_t)a->max_tokens + 1) * sizeof(int32_t));
    if (!grown || !host) goto done;
    ids = grown;
    cache = llama_cache_create_kv(m, context, a->kv, msg, sizeof(msg));
    pk.full = sampler_create(&a->sampling, cfg->vocab_size);
    if (a->sampling.top_k > 0 && a->sampling.top_k < cfg->vocab_size && a->sampling.temperature > 0) {
        sampler_config kc = a->sampling;
        kc.top_k = 0; /* the device already kept the top k */
        pk.topk = sampler_create(&kc, a->sampling.top_k);
        pk.values = malloc((size_t)a->sampling.top_k * sizeof(float));
        pk.indices = malloc((size_t)a->sampling.top_k * sizeof(int32_t));
    }
    if (!cache || !pk.full || (pk.topk && (!pk.values || !pk.indices))) {
        fprintf(stderr, "wgt generate: %s\n", cache ? "cannot create the sampler" : msg);
        goto done;
    }
    fprintf(stderr, "wgt generate: %s (%s, %d layers, hidden %d), %s weights, %.1f MB, loaded in %.2f s\n", a->model,
            cfg->model_type, cfg->n_layers, cfg->hidden_size, weights_name(a->weights),
            (double)llama_weight_bytes(m) / 1e6, t_load);
    fputs(a->prompt, stdout);
    fflush(stdout);
    const double t0 = now_s();
    wgt_tensor *logits = llama_forward(cache, ids, (int64_t)n, false, msg, sizeof(msg));
    if (logits && a->sampling.temperature == 0 && a->repetition_penalty == 1.0 && a->max_tokens > 0) {
        /* greedy: the picks stay on the device, the host one step ahead */
        emitter e = {.tok = tok, .eos = cfg->eos_token_id, .ids = ids, .n = n};
        const int64_t got = llama_generate_greedy(cache, logits, a->max_tokens, !a->sequential, emit, &e, msg,
                                                  sizeof(msg));
        wgt_tensor_release(logits);
        if (got < 0) {
            fprintf(stderr, "\nwgt generate: failed: %s\n", msg);
            goto done;
        }
        report_speed((size_t)(e.n - (size_t)e.produced), e.t_first - t0, e.produced, now_s() - e.t_first);
        rc = 0;
        goto done;
    }
    int32_t next = logits ? pick(logits, &pk, host, cfg->vocab_size, a, ids, n) : -1;
    wgt_tensor_release(logits);
    const double t_prompt = now_s() - t0;
    int64_t produced = 0;
    const double t1 = now_s();
    while (next >= 0 && produced < a->max_tokens) {
        size_t len;
        const char *bytes = llm_tokenizer_token_bytes(tok, next, &len);
        if (next == cfg->eos_token_id) break;
        if (bytes) fwrite(bytes, 1, len, stdout), fflush(stdout);
        ids[n++] = next;
        produced++;
        if (produced == a->max_tokens || llama_cache_length(cache) >= context) break;
        logits = llama_forward(cache, &next, 1, false, msg, sizeof(msg));
        next = logits ? pick(logits, &pk, host, cfg->vocab_size, a, ids, n) : -1;
        wgt_tensor_release(logits);
    }
    const double t_gen = now_s() - t1;
    if (next < 0) {
        fprintf(stderr, "\nwgt generate: failed: %s%s\n", msg, wgt_context_error_message(ctx));
        goto done;
    }
    report_speed(n - (size_t)produced, t_prompt, produced, t_gen);
    rc = 0;
done:
    sampler_destroy(pk.full);
    sampler_destroy(pk.topk);
    free(pk.values), free(pk.indices);
    llama_cache_destroy(cache);
    free(host);
    free(ids);
    llama_destroy(m);
    llm_tokenizer_free(tok);
    return rc;
}

/* Llama-3.2-1B's config.json (hf.co/meta-llama/Llama-3.2-1B), and tiny shapes for CI. */
static bool bench_shape(const char *name, llama_config *c)
{
    *c = (llama_config){.model_type = "llama", .rms_eps = 1e-5, .bos_token_id = -1, .eos_token_id = -1,
                        .tie_embeddings = true};
    if (strcmp(name, "llama-3.2-1b") == 0 || strcmp(name, "llama-3.2-1b-slice") == 0) {
        c->vocab_size = 128256, c->hidden_size = 2048, c->intermediate_size = 8192, c->n_layers = 16;
        /* -slice: its layers' shape, 2 of them, and a 2048-token vocabulary (a lavapipe-sized check of the
         * per-layer dispatches: each layer records what a Llama-3.2-1B layer does) */
        if (name[12]) c->vocab_size = 2048, c->n_layers = 2;
        c->n_heads = 32, c->n_kv_heads = 8, c->head_dim = 64, c->max_position = 131072, c->rope_theta = 500000.0;
        c->rope_llama3 = true, c->rope_factor = 32, c->rope_low_freq_factor = 1, c->rope_high_freq_factor = 4;
        c->rope_original_max = 8192;
        return true;
    }
    if (strcmp(name, "tiny") == 0 || strcmp(name, "tiny-llama3") == 0) {
        c->vocab_size = 1024, c->hidden_size = 64, c->intermediate_size = 128, c->n_layers = 2;
        c->n_heads = 4, c->n_kv_heads = 2, c->head_dim = 16, c->max_position = 2048, c->rope_theta = 10000.0;
        if (name[4]) { /* tiny-llama3: Llama-3.2's decode path (llama3 rope tables, GQA) at a lavapipe-sized shape */
            c->rope_theta = 500000.0, c->rope_llama3 = true, c->rope_factor = 32, c->rope_low_freq_factor = 1;
            c->rope_high_freq_factor = 4, c->rope_original_max = 8192;
        }
        return true;
    }
    return false;
}

static bool count_token(int32_t token, void *user)
{
    (void)token;
    ++*(int64_t *)user;
    return true;
}

#define BENCH_WARMUP_MAX 16 /* warm-up prefills of --bench, at most */
#define BENCH_WARMUP_S 0.5   /* and at least this long (s) */

static int run_bench(wgt_context *ctx, const gen_args *a)
{
    llama_config cfg;
    char msg[1024] = "";
    if (!bench_shape(a->shape, &cfg)) return fprintf(stderr, "wgt generate: --shape llama-3.2-1b, llama-3.2-1b-slice, tiny or tiny-llama3\n"), 2;
    const char *wname = weights_name(a->weights);
    llama_model *m = llama_create_random(ctx, &cfg, a->weights, 1234, msg, sizeof(msg));
    if (!m) return fprintf(stderr, "wgt generate --bench: %s\n", msg), 1;
    if (a->precision >= 0) llama_set_matmul_precision(m, (wgt_matmul_precision)a->precision);
    const int64_t P = a->prompt_tokens, N = a->max_tokens > 0 ? a->max_tokens : 1;
    llama_cache *cache = llama_cache_create_kv(m, P + N + 1, a->kv, msg, sizeof(msg));
    int32_t *prompt = malloc((size_t)P * sizeof(int32_t));
    int32_t *warm_prompt = malloc((size_t)(P + N) * sizeof(int32_t)); /* the last decode step's keys, less one */
    int rc = 1;
    if (!cache || !prompt || !warm_prompt) {
        fprintf(stderr, "wgt generate --bench: %s\n", msg);
        goto done;
    }
    for (int64_t i = 0; i < P; i++) prompt[i] = (int32_t)((i * 7919) % cfg.vocab_size);
    for (int64_t i = 0; i < P + N; i++) warm_prompt[i] = (int32_t)((i * 7919) % cfg.vocab_size);
    /* warm-up: pipelines compiled, buffers allocated, and the GPU's clock up:
     * prefills are repeated for at least BENCH_WARMUP_S and until two in a
     * row take the same time (within 5%; at most BENCH_WARMUP_MAX). One
     * prefill was not enough: on an H100
     * the first ~0.1-0.5 s of a process ran the quantized prefill's GEMMs
     * 3.4-5.5x slower, dropping to full speed at a random point (a clock
     * ramp, by the discrete speed levels of one trace), so single q4 / q8
     * prefill figures ranged from 3,300 to 13,900 tokens/s */
    double last = 0;
    const double warm0 = now_s();
    for (int w = 0; w < BENCH_WARMUP_MAX; w++) {
        const double w0 = now_s();
        wgt_tensor *wl = llama_forward(cache, prompt, P, false, msg, sizeof(msg));
        const int32_t wt = wl ? llama_argmax(wl) : -1; /* waits */
        wgt_tensor_release(wl);
        llama_cache_reset(cache);
        const double took = now_s() - w0;
        if (wt < 0) break;
        if (w > 0 && now_s() - warm0 >= BENCH_WARMUP_S && took <= 1.05 * last && last <= 1.05 * took) break;
        last = took;
    }
    /* decode warm-up at both ends of the timed steps' keys (P + 1 and P + N):
     * the decode kernels compiled before the clock starts, those taken only
     * past a number of keys too (the attention's combine a workgroup a row,
     * the o projection unfolded: the driver compiled them inside the first
     * timed run of a process, 432.7 against 745.1 tokens/s in the next,
     * bench/results/h200-2026-11-29l/close); the chunk counts between
     * take the kernels of one end or the other */
    int32_t tok = 1;
    wgt_tensor *l = NULL;
    for (int end = 0; end < 2; end++) {
        const int64_t n = end ? P + N - 1 : P;
        wgt_tensor *pl = llama_forward(cache, end ? warm_prompt : prompt, n, false, msg, sizeof(msg));
        tok = pl ? llama_argmax(pl) : 1;
        wgt_tensor_release(pl);
        l = llama_forward(cache, &tok, 1, false, msg, sizeof(msg));
        tok = llama_argmax(l);
        wgt_tensor_release(l);
        llama_cache_reset(cache);
    }
    double t0 = now_s();
    l = llama_forward(cache, prompt, P, false, msg, sizeof(msg));
    tok = llama_argmax(l); /* waits for the prefill */
    const double t_prefill = now_s() - t0;
    wgt_execution_stats before = {0}, after = {0};
    const bool stats = wgt_execution_stats_get(ctx, &before) == WGT_OK;
    /* host recording: each token's llama_forward alone (it records and
     * submits its dispatches without waiting; the wait is llama_argmax's read).
     * Measured by the one-step-at-a-time loop (--sequential); by default the
     * N steps run as wgt generate runs them, the host one step ahead. */
    double t_record = 0;
    t0 = now_s();
    if (a->sequential) {
        for (int64_t i = 0; i < N && tok >= 0; i++) {
            const double r0 = now_s();
            wgt_tensor *d = llama_forward(cache, &tok, 1, false, msg, sizeof(msg));
            t_record += now_s() - r0;
            tok = llama_argmax(d);
            wgt_tensor_release(d);
        }
    } else if (tok >= 0) {
        /* N + 1 tokens: the prompt's pick, then N decode steps */
        int64_t count = 0;
        if (llama_generate_greedy(cache, l, N + 1, true, count_token, &count, msg, sizeof(msg)) != N + 1) tok = -1;
    }
    wgt_tensor_release(l);
    const double t_decode = now_s() - t0;
    if (stats) wgt_execution_stats_get(ctx, &after);
    if (stats && after.dispatches > before.dispatches)
        printf("llm %s %s: per decode token %.1f dispatches, %.2f submits, %.2f uploads, %.2f downloads, %.1f bind "
               "groups created\n", a->shape,
               weights_name(a->weights), (double)(after.dispatches - before.dispatches) / (double)N,
               (double)(after.submits - before.submits) / (double)N, (double)(after.uploads - before.uploads) / (double)N,
               (double)(after.downloads - before.downloads) / (double)N,
               (double)(after.bind_groups - before.bind_groups) / (double)N);
    if (stats && after.dispatches > before.dispatches && a->sequential)
        printf("llm %s %s: host recording per decode token %.1f us (%.2f us per dispatch)\n", a->shape,
               weights_name(a->weights), 1e6 * t_record / (double)N,
               1e6 * t_record / (double)(after.dispatches - before.dispatches));
    if (tok < 0) {
        fprintf(stderr, "wgt generate --bench: %s %s\n", msg, wgt_context_error_message(ctx));
        goto done;
    }
    const double prefill_tps = (double)P / t_prefill, decode_tps = (double)N / t_decode;
    const double gbps = (double)llama_weight_bytes(m) * decode_tps / 1e9;
    printf("llm %s %s: prefill %lld tokens %.1f tokens/s, decode %lld tokens %.1f tokens/s (%.1f GB/s of weights)%s%s\n",
           a->shape, wname, (long long)P, prefill_tps, (long long)N, decode_tps, gbps,
           a->sequential ? ", sequential" : "", a->kv == LLAMA_KV_Q8 ? ", 8-bit KV cache" : "");
    if (a->json) {
        FILE *f = fopen(a->json, "w");
        if (!f) {
            fprintf(stderr, "wgt generate --bench: cannot write %s\n", a->json);
            goto done;
        }
        fprintf(f, "{\"shape\": \"%s\", \"weights\": \"%s\", \"prompt_tokens\": %lld, \"prefill_tokens_per_s\": %.3f, "
                   "\"decode_tokens\": %lld, \"decode_tokens_per_s\": %.3f, \"weight_bytes\": %llu, \"pipelined\": %s, "
                   "\"kv_cache\": \"%s\", \"kv_cache_bytes\": %llu}\n",
                a->shape, wname, (long long)P, prefill_tps, (long long)N, decode_tps,
                (unsigned long long)llama_weight_bytes(m), a->sequential ? "false" : "true",
                a->kv == LLAMA_KV_Q8 ? "q8" : "default", (unsigned long long)llama_cache_bytes(cache));
        fclose(f);
    }
    rc = 0;
done:
    free(prompt);
    free(warm_prompt);
    llama_cache_destroy(cache);
    llama_destroy(m);
    return rc;
}

int wgt_command_generate(int argc, char **argv)
{
    gen_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    char msg[512];
    if (!sampler_config_check(&a.sampling, msg, sizeof(msg))) return fprintf(stderr, "wgt generate: %s\n", msg), 2;
    const char *note = NULL;
    wgt_context *ctx = train_open_context(a.backend, a.adapter, &note);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "wgt generate: cannot open a context: %s\n", ctx ? wgt_context_error_message(ctx) : "no memory");
        wgt_context_destroy(ctx);
        return 1;
    }
    rc = a.bench ? run_bench(ctx, &a) : run_generate(ctx, &a);
    wgt_context_destroy(ctx);
    return rc;
}
