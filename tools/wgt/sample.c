/* wgt sample: generates text from a `wgt train` checkpoint, streaming each
 * character as it is produced. The KV cache of gpt.h makes each new token one
 * forward step of length 1; when the context reaches block_size, the last
 * block_size / 2 tokens are re-encoded (one full forward) and generation goes on. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt.h"
#include "sampler.h"
#include "train_checkpoint.h"
#include "wgt_commands.h"
#include "wgtensor.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt sample --checkpoint CKPT [--prompt TEXT] [--tokens N] [--temperature T]\n"
               "                  [--top-k K] [--top-p P] [--seed S] [--backend cpu|webgpu] [--adapter A]\n"
               "  defaults: prompt \"\\n\", 300 tokens, temperature 0.8, top-k 200, top-p 1, seed 1337\n");
}

static bool number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

typedef struct sample_args {
    const char *checkpoint, *prompt, *backend, *adapter;
    int64_t tokens;
    sampler_config sampling;
} sample_args;

static int parse(int argc, char **argv, sample_args *a)
{
    *a = (sample_args){.prompt = "\n", .tokens = 300};
    sampler_config_init(&a->sampling);
    a->sampling.temperature = 0.8;
    a->sampling.top_k = 200;
    a->sampling.seed = 1337;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "wgt sample: %s needs a value\n", flag);
            return 2;
        }
        const char *v = argv[++i];
        double d = 0;
        bool ok = true;
        if (strcmp(flag, "--checkpoint") == 0) a->checkpoint = v;
        else if (strcmp(flag, "--prompt") == 0) a->prompt = v;
        else if (strcmp(flag, "--backend") == 0) a->backend = v;
        else if (strcmp(flag, "--adapter") == 0) a->adapter = v;
        else if (strcmp(flag, "--tokens") == 0) ok = number(v, 0, 1e9, &d) && d == floor(d), a->tokens = (int64_t)d;
        else if (strcmp(flag, "--temperature") == 0) ok = number(v, 0, 1e6, &a->sampling.temperature);
        else if (strcmp(flag, "--top-k") == 0) ok = number(v, 0, 1e9, &d) && d == floor(d), a->sampling.top_k = (int)d;
        else if (strcmp(flag, "--top-p") == 0) ok = number(v, 1e-9, 1, &a->sampling.top_p);
        else if (strcmp(flag, "--seed") == 0) ok = number(v, 0, 9007199254740992.0, &d) && d == floor(d), a->sampling.seed = (uint64_t)d;
        else {
            fprintf(stderr, "wgt sample: unknown option \"%s\"\n", flag);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "wgt sample: %s: \"%s\" is not a valid value\n", flag, v);
            return 2;
        }
    }
    if (!a->checkpoint) {
        fprintf(stderr, "wgt sample: --checkpoint is required (wgt train writes out/<preset>/ckpt.safetensors)\n");
        return 2;
    }
    if (a->backend && strcmp(a->backend, "cpu") != 0 && strcmp(a->backend, "webgpu") != 0) {
        fprintf(stderr, "wgt sample: --backend must be cpu or webgpu, not \"%s\"\n", a->backend);
        return 2;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs tokens[0, n) through the cache from position 0; logits of the last go to host. */
static bool encode(gpt_kv_cache *cache, wgt_context *ctx, const int32_t *tokens, int64_t n, float *logits, int V)
{
    gpt_kv_cache_reset(cache);
    wgt_scope_push(ctx);
    wgt_tensor *idx = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){1, n}, tokens);
    wgt_tensor *out = gpt_forward_cached(cache, idx);
    bool ok = out && wgt_tensor_read(out, logits, (size_t)V * sizeof(float)) == WGT_OK;
    wgt_scope_pop(ctx);
    return ok;
}

static int generate(wgt_context *ctx, gpt_model *model, const unsigned char *vocab, const sample_args *a,
                    const int32_t *prompt_ids, int64_t n_prompt)
{
    const gpt_config *cfg = gpt_model_config(model);
    const int V = cfg->vocab_size, block = cfg->block_size;
    int32_t *context = malloc((size_t)block * sizeof(int32_t));
    float *logits = malloc((size_t)V * sizeof(float));
    gpt_kv_cache *cache = gpt_kv_cache_create(model, 1);
    sampler *s = sampler_create(&a->sampling, V);
    int rc = 0;
    if (!context || !logits || !cache || !s) {
        fprintf(stderr, "wgt sample: cannot allocate the KV cache or the sampler: %s\n", wgt_context_error_message(ctx));
        rc = 1;
        goto done;
    }
    /* the prompt's last block_size tokens are the context */
    int64_t len = n_prompt < block ? n_prompt : block;
    memcpy(context, prompt_ids + (n_prompt - len), (size_t)len * sizeof(int32_t));
    double t0 = now_s();
    bool ok = encode(cache, ctx, context, len, logits, V);
    int64_t produced = 0;
    for (; ok && produced < a->tokens; produced++) {
        int token = sampler_pick(s, logits);
        if (token < 0) {
            fprintf(stderr, "\nwgt sample: the model's logits are all NaN or -inf\n");
            rc = 1;
            break;
        }
        fputc(vocab[token], stdout);
        fflush(stdout);
        if (produced + 1 == a->tokens) break;
        if (len == block) {
            /* the cache is full: keep the newest half and re-encode it */
            int64_t keep = block / 2 > 0 ? block / 2 : 1;
            memmove(context, context + (len - keep + 1), (size_t)(keep - 1) * sizeof(int32_t));
            context[keep - 1] = token;
            len = keep;
            ok = encode(cache, ctx, context, len, logits, V);
            continue;
        }
        context[len++] = token;
        wgt_scope_push(ctx);
        wgt_tensor *idx = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){1, 1}, &context[len - 1]);
        wgt_tensor *out = gpt_forward_cached(cache, idx);
        ok = out && wgt_tensor_read(out, logits, (size_t)V * sizeof(float)) == WGT_OK;
        wgt_scope_pop(ctx);
    }
    if (!ok) {
        fprintf(stderr, "\nwgt sample: generation failed: %s\n", wgt_context_error_message(ctx));
        rc = 1;
    } else if (rc == 0) {
        double elapsed = now_s() - t0;
        fprintf(stderr, "\nwgt sample: %" PRId64 " tokens in %.2f s (%.1f tokens/s, KV cache)\n", a->tokens, elapsed,
                (double)a->tokens / fmax(elapsed, 1e-9));
    }
done:
    sampler_destroy(s);
    gpt_kv_cache_destroy(cache);
    free(logits);
    free(context);
    return rc;
}

int wgt_command_sample(int argc, char **argv)
{
    sample_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    char msg[1400];
    if (!sampler_config_check(&a.sampling, msg, sizeof(msg))) {
        fprintf(stderr, "wgt sample: %s\n", msg);
        return 2;
    }
    const char *note = NULL; /* sampling on lavapipe is slower than on the CPU backend: same policy as train */
    wgt_context *ctx = train_open_context(a.backend, a.adapter, &note);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "wgt sample: cannot open a context: %s\n", ctx ? wgt_context_error_message(ctx) : "no memory");
        wgt_context_destroy(ctx);
        return 1;
    }
    train_config cfg;
    train_state state;
    unsigned char vocab[256];
    int vocab_size = 0;
    wgt_safetensors *file = NULL;
    gpt_model *model = NULL;
    int32_t *prompt_ids = NULL;
    rc = 1;
    if (!train_checkpoint_open(ctx, a.checkpoint, &file, &cfg, &state, vocab, &vocab_size, msg, sizeof(msg))) {
        fprintf(stderr, "wgt sample: %s\n", msg);
        goto done;
    }
    model = gpt_create(ctx, &cfg.model, cfg.seed);
    if (!model) {
        fprintf(stderr, "wgt sample: cannot create the model: %s\n", wgt_context_error_message(ctx));
        goto done;
    }
    if (!train_checkpoint_load_model(file, model, msg, sizeof(msg))) {
        fprintf(stderr, "wgt sample: %s: %s\n", a.checkpoint, msg);
        goto done;
    }
    const size_t n_prompt = strlen(a.prompt);
    if (n_prompt == 0) {
        fprintf(stderr, "wgt sample: --prompt is empty (the default is a newline)\n");
        goto done;
    }
    prompt_ids = malloc(n_prompt * sizeof(int32_t));
    if (!prompt_ids) goto done;
    for (size_t i = 0; i < n_prompt; i++) {
        const unsigned char c = (unsigned char)a.prompt[i];
        int id = -1;
        for (int k = 0; k < vocab_size; k++)
            if (vocab[k] == c) id = k;
        if (id < 0) {
            fprintf(stderr, "wgt sample: the prompt's character %zu ('%c', byte 0x%02x) is not in the checkpoint's "
                            "vocabulary of %d characters\n",
                    i, c >= 32 && c < 127 ? c : '?', c, vocab_size);
            goto done;
        }
        prompt_ids[i] = id;
    }
    fputs(a.prompt, stdout);
    rc = generate(ctx, model, vocab, &a, prompt_ids, (int64_t)n_prompt);
done:
    free(prompt_ids);
    gpt_destroy(model);
    wgt_safetensors_close(file);
    wgt_context_destroy(ctx);
    return rc;
}
