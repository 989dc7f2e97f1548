/* Llama inference (src/models/llama*.c) on the CPU and WebGPU backends:
 *  - fixtures from transformers (tests/llm/make_llama_fixture.py, made on the
 *    GPU machine) and from an independent NumPy model (make_numpy_fixture.py):
 *    prompt logits (f32 weights: rel L2 <= 1e-4; f16: <= 1e-2) and greedy
 *    tokens through the KV-cache decode path; a missing fixture is a failure;
 *  - prefill + one-token decode steps give the logits of one full forward
 *    (HIGHEST precision, every weight kind; MEDIUM, quantized weights, where
 *    both quantize x);
 *  - config / weight errors: unsupported architecture, missing field, missing
 *    tensor, shape mismatch, each refused with a message naming it. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv, strdup */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llama.h"
#include "test_util.h"

/* Accuracy cost bounds of the quantized weights on the tiny fixtures (logits
 * rel L2 against the float reference; the measured values are printed). Random
 * weights have no redundancy, so the rounding noise passes straight through:
 * per weight, uniform noise of std scale / sqrt(12) with scale = max|w| / 127
 * (8 bits) or / 7 (4 bits), about 0.5% and 10% of a weight's std for 32
 * Gaussian weights, over ~8 matmuls in a row. Measured on tiny-llama-numpy:
 * q8 0.018, q4 0.33 (both backends); a broken kernel gives ~1. */
#define QUANT8_TOL 3e-2
#define QUANT4_TOL 5e-1

static double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* Reads an expected tensor (f32 or i32) into a malloc'd array. */
static void *read_expected(wgt_context *ctx, wgt_safetensors *f, const char *name, size_t *n)
{
    wgt_scope_push(ctx);
    wgt_tensor *t = wgt_safetensors_load(f, name);
    void *data = NULL;
    if (t) {
        *n = (size_t)wgt_tensor_numel(t);
        data = malloc(*n * 4 + 4);
        if (data && wgt_tensor_read(t, data, *n * 4) != WGT_OK) free(data), data = NULL;
    }
    wgt_scope_pop(ctx);
    return data;
}

/* Tokens llama_generate_greedy hands over, and a stop after `stop` of them. */
typedef struct collected {
    int32_t ids[64];
    size_t n, stop;
} collected;

static bool collect(int32_t token, void *user)
{
    collected *k = user;
    if (k->n < 64) k->ids[k->n] = token;
    k->n++;
    return k->n < k->stop;
}

/* The pipelined greedy loop (step n+1 recorded before step n's token is
 * read) gives transformers' greedy tokens, stops where its callback says and
 * leaves the cache as the sequential loop does: prompt + tokens but the last,
 * so feeding that last token one step at a time continues the fixture's ids. */
static void check_pipelined(llama_cache *c, const int32_t *prompt, size_t n_prompt, const int32_t *greedy,
                            size_t n_greedy, const char *name, const char *backend)
{
    char msg[512] = "";
    CHECK(n_greedy >= 4 && n_greedy <= 64, "%s: %zu greedy ids in the fixture (this check needs 4 to 64)", name, n_greedy);
    for (int pipelined = 1; pipelined >= 0 && n_greedy >= 4 && n_greedy <= 64; pipelined--) {
        for (int early = 0; early < 2; early++) {
            llama_cache_reset(c);
            wgt_tensor *logits = llama_forward(c, prompt, (int64_t)n_prompt, false, msg, sizeof(msg));
            collected k = {.stop = early ? 3 : SIZE_MAX};
            const int64_t got = logits ? llama_generate_greedy(c, logits, (int64_t)n_greedy, pipelined, collect, &k,
                                                               msg, sizeof(msg))
                                       : -1;
            wgt_tensor_release(logits);
            const size_t want_n = early ? 3 : n_greedy;
            bool same = got == (int64_t)want_n && k.n == want_n;
            for (size_t i = 0; same && i < want_n; i++) same = k.ids[i] == greedy[i];
            CHECK(same, "%s %s %s greedy (stop after %zu): %lld tokens, %s", name, backend,
                  pipelined ? "pipelined" : "sequential", want_n, (long long)got, msg);
            CHECK(llama_cache_length(c) == (int64_t)(n_prompt + want_n - 1), "%s %s %s greedy: cache length %lld, want %zu",
                  name, backend, pipelined ? "pipelined" : "sequential", (long long)llama_cache_length(c),
                  n_prompt + want_n - 1);
            if (early && same) {
                wgt_tensor *step = llama_forward(c, &k.ids[2], 1, false, msg, sizeof(msg));
                const int32_t next = llama_argmax(step);
                wgt_tensor_release(step);
                CHECK(next == greedy[3], "%s %s %s: after a stop, the next step gives %d, want %d", name, backend,
                      pipelined ? "pipelined" : "sequential", next, greedy[3]);
            }
        }
    }
    printf("%-18s %-6s: pipelined and sequential greedy loops checked\n", name, backend);
}

static void check_fixture(wgt_context *ctx, const char *name, const char *backend, bool required)
{
    char dir[1024], path[1100], msg[512] = "";
    snprintf(dir, sizeof(dir), "%s/tests/llm/%s", WGT_SOURCE_DIR, name);
    snprintf(path, sizeof(path), "%s/expected.safetensors", dir);
    if (access(path, R_OK) != 0) {
        CHECK(!required, "fixture %s is missing: run `python3 tests/llm/make_llama_fixture.py` where torch and "
                         "transformers are installed, and commit tests/llm/%s", path, name);
        return;
    }
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    CHECK(f != NULL, "%s: %s", path, wgt_context_error_message(ctx));
    if (!f) return;
    size_t n_prompt = 0, n_logits = 0, n_greedy = 0;
    int32_t *prompt = read_expected(ctx, f, "prompt_ids", &n_prompt);
    float *want = read_expected(ctx, f, "logits", &n_logits);
    int32_t *greedy = read_expected(ctx, f, "greedy_ids", &n_greedy);
    wgt_safetensors_close(f);
    CHECK(prompt && want && greedy, "%s holds prompt_ids, logits, greedy_ids", path);
    /* f32 and f16 weights against the tolerances of issue 12; q8 and q4 report
     * their accuracy cost (the same prompt's logits) with a bound each */
    static const llama_weights kinds[4] = {LLAMA_WEIGHTS_F32, LLAMA_WEIGHTS_F16, LLAMA_WEIGHTS_Q8, LLAMA_WEIGHTS_Q4};
    static const char *const kind_names[4] = {"f32", "f16", "q8", "q4"};
    static const double tolerances[4] = {1e-4, 1e-2, QUANT8_TOL, QUANT4_TOL};
    for (int w = 0; prompt && want && greedy && w < 4; w++) {
        const llama_weights weights = kinds[w];
        const char *wname = kind_names[w];
        llama_model *m = llama_load(ctx, dir, weights, msg, sizeof(msg));
        CHECK(m != NULL, "%s %s %s: %s", name, backend, wname, msg);
        if (!m) continue;
        const int V = llama_model_config(m)->vocab_size;
        llama_cache *c = llama_cache_create(m, (int64_t)(n_prompt + n_greedy), msg, sizeof(msg));
        CHECK(c != NULL && n_logits == n_prompt * (size_t)V, "%s cache / logits shape: %s", name, msg);
        if (c && n_logits == n_prompt * (size_t)V) {
            wgt_tensor *logits = llama_forward(c, prompt, (int64_t)n_prompt, true, msg, sizeof(msg));
            float *got = malloc(n_logits * sizeof(float));
            CHECK(logits && got && wgt_tensor_read(logits, got, n_logits * 4) == WGT_OK, "%s forward: %s", name, msg);
            if (logits && got) {
                const double err = rel_l2(got, want, n_logits), tol = tolerances[w];
                printf("%-18s %-6s %s: prompt logits rel L2 %.3g (tolerance %.0e)\n", name, backend, wname, err, tol);
                CHECK(err <= tol, "%s %s %s: logits rel L2 %.3g > %.0e", name, backend, wname, err, tol);
                /* greedy decode through the cache, one token per step */
                int32_t tok = llama_argmax(logits);
                size_t same = 0;
                for (size_t i = 0; i < n_greedy; i++) {
                    if (tok != greedy[i]) break;
                    same++;
                    if (i + 1 == n_greedy) break;
                    wgt_tensor *step = llama_forward(c, &tok, 1, false, msg, sizeof(msg));
                    tok = llama_argmax(step);
                    wgt_tensor_release(step);
                }
                printf("%-18s %-6s %s: %zu of %zu greedy tokens match\n", name, backend, wname, same, n_greedy);
                if (!w) CHECK(same == n_greedy, "%s %s: greedy tokens differ at %zu", name, backend, same);
                if (!w) check_pipelined(c, prompt, n_prompt, greedy, n_greedy, name, backend);
            }
            free(got);
            wgt_tensor_release(logits);
        }
        llama_cache_destroy(c);
        llama_destroy(m);
    }
    free(prompt), free(want), free(greedy);
}

/* The 50 logits of two decode paths that compute the same values: bit for
 * bit where the kernels are exact (test_exact_kernels: the CPU backend,
 * lavapipe); on a GPU, whose compiler may round a fused epilogue's f16 output
 * one ulp apart from the separate kernels', within 1e-3 relative (L2). */
static bool same_logits(wgt_context *ctx, const float *a, const float *b)
{
    if (test_exact_kernels(ctx)) return memcmp(a, b, 50 * sizeof(float)) == 0;
    double d = 0, n = 0;
    for (int i = 0; i < 50; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), n += (double)a[i] * a[i];
    return sqrt(d) <= 1e-3 * sqrt(n);
}

/* The llama knobs (WGT_LLAMA_CAST_F16, WGT_LLAMA_DECODE_FUSE) are read when a
 * model is built: the model of check_cache (seed 7) built again with env
 * name=value, 3 tokens prefilled, then one decode step of toks[3] with its
 * argmax. Returns the step's dispatches (argmax included); its logits [50]
 * into logits and the token into *token. */
static unsigned long long step_with(wgt_context *ctx, const llama_config *cfg, llama_weights kind, const char *name,
                                    const char *value, const int32_t *toks, float *logits, int32_t *token)
{
    char msg[256] = "";
    const char *was = getenv(name);
    char *saved = was ? strdup(was) : NULL;
    setenv(name, value, 1);
    llama_model *m = llama_create_random(ctx, cfg, kind, 7, msg, sizeof(msg));
    if (saved) setenv(name, saved, 1), free(saved);
    else unsetenv(name);
    llama_cache *c = m ? llama_cache_create(m, 16, msg, sizeof(msg)) : NULL;
    CHECK(c != NULL, "model with %s=%s: %s", name, value, msg);
    wgt_execution_stats c0, c1;
    memset(&c0, 0, sizeof(c0)), memset(&c1, 0, sizeof(c1));
    memset(logits, 0, 50 * sizeof(float));
    if (c) {
        wgt_tensor_release(llama_forward(c, toks, 3, false, msg, sizeof(msg)));
        wgt_synchronize(ctx);
        wgt_execution_stats_get(ctx, &c0);
        wgt_tensor *l = llama_forward(c, &toks[3], 1, false, msg, sizeof(msg));
        const int32_t t = llama_argmax(l);
        wgt_execution_stats_get(ctx, &c1);
        CHECK(l && wgt_tensor_read(l, logits, 50 * sizeof(float)) == WGT_OK, "decode step with %s=%s: %s", name,
              value, msg);
        if (token) *token = t;
        wgt_tensor_release(l);
    }
    llama_cache_destroy(c);
    llama_destroy(m);
    return c1.dispatches - c0.dispatches;
}

/* A decode step at fusion level lo + 1 against level lo (WGT_LLAMA_DECODE_FUSE):
 * `fewer` dispatches fewer on WebGPU, the same logits (same_logits). */
static void one_level_more(wgt_context *ctx, const llama_config *cfg, llama_weights kind, const int32_t *toks, char lo,
                           unsigned long long fewer, const char *backend, int w, const char *what)
{
    float a[50], b[50];
    const char lo_text[2] = {lo, 0}, hi_text[2] = {(char)(lo + 1), 0};
    const unsigned long long n_lo = step_with(ctx, cfg, kind, "WGT_LLAMA_DECODE_FUSE", lo_text, toks, a, NULL);
    const unsigned long long n_hi = step_with(ctx, cfg, kind, "WGT_LLAMA_DECODE_FUSE", hi_text, toks, b, NULL);
    const bool counted = wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU;
    CHECK(same_logits(ctx, a, b) && (!counted || n_lo == n_hi + fewer),
          "%s weights %d, llama3 rope: decode step with %s (level %s): %llu dispatches, %llu at level %s (%llu more "
          "expected); logits %s", backend, w, what, hi_text, n_hi, n_lo, lo_text, fewer,
          same_logits(ctx, a, b) ? "equal" : "differ");
}

/* Prefill of 5 tokens then 4 decode steps gives the last rows of one 9-token
 * forward. qwen: the Qwen2/3 features (q/k/v biases, per-head q/k norms) and
 * llama3 rope scaling, which no fixture covers, at least run consistently.
 * llama3: llama3 rope scaling alone (Llama-3.2's path: k | v | q rows, the
 * cache by position, a decode step's rotation storing k and v into the cache
 * and q into its scratch rows in one kernel). */
/* The 9 tokens' full forward into `full` (*ref: its logits, for the caller
 * to release), then the first 5 as a prefill into `inc` and the other 4 as
 * one-token decode steps; returns the worst rel L2 of a step's logits from
 * the full forward's row (vocabulary 50). */
static double full_then_steps(llama_cache *full, llama_cache *inc, const int32_t toks[9], wgt_tensor **ref)
{
    char msg[256] = "";
    float all[9 * 50], step[50];
    *ref = llama_forward(full, toks, 9, true, msg, sizeof(msg));
    CHECK(*ref && wgt_tensor_read(*ref, all, sizeof(all)) == WGT_OK, "full forward: %s", msg);
    wgt_tensor_release(llama_forward(inc, toks, 5, false, msg, sizeof(msg)));
    double worst = 0;
    for (int t = 5; t < 9; t++) {
        wgt_tensor *l = llama_forward(inc, &toks[t], 1, false, msg, sizeof(msg));
        CHECK(l && wgt_tensor_read(l, step, sizeof(step)) == WGT_OK, "decode step %d: %s", t, msg);
        double e = rel_l2(step, all + t * 50, 50);
        worst = e > worst ? e : worst;
        wgt_tensor_release(l);
    }
    return worst;
}

/* At MEDIUM precision (the models' default) quantized weights' products
 * quantize x in prefill (several rows) and in a decode step (one row) alike
 * since the thirteenth session, so the cached decode steps give the full
 * forward's logits there too; before, a step's one row kept f32 x and parted
 * from the prefill's by x's int8 rounding (7.4e-3 here). That holds to 2e-3
 * where kernels are exact (the CPU, a software adapter: ~1e-7). A GPU may
 * sum a norm in another order in the decode GEMV's prologue than in the norm
 * kernel prefill takes (both allowed, backend.h), and an ulp of the
 * normalized x can cross a code's rounding boundary: an H200 gave 6.8e-3
 * (q8) and 9.3e-3 (q4) before and after the fourteenth session's changes
 * (bench/results/h200-2026-11-29n/p2); there the bound is the q8 prompt logits
 * against transformers (QUANT8_TOL), which a wrong cache row or position misses. */
static void check_cache_medium(wgt_context *ctx, const char *backend)
{
    llama_config cfg = {.model_type = "llama", .vocab_size = 50, .hidden_size = 64, .intermediate_size = 128,
                        .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 16, .max_position = 32,
                        .rms_eps = 1e-5, .rope_theta = 10000.0, .bos_token_id = -1, .eos_token_id = -1};
    const int32_t toks[9] = {3, 14, 15, 9, 26, 5, 35, 8, 9};
    char msg[256] = "";
    static const llama_weights kinds[2] = {LLAMA_WEIGHTS_Q8, LLAMA_WEIGHTS_Q4};
    for (int w = 0; w < 2; w++) {
        llama_model *m = llama_create_random(ctx, &cfg, kinds[w], 11, msg, sizeof(msg));
        CHECK(m != NULL, "random model: %s", msg);
        if (!m) continue;
        llama_cache *full = llama_cache_create(m, 16, msg, sizeof(msg));
        llama_cache *inc = llama_cache_create(m, 16, msg, sizeof(msg));
        wgt_tensor *ref = NULL;
        const double worst = full_then_steps(full, inc, toks, &ref);
        wgt_tensor_release(ref);
        printf("%-18s %-6s %s: MEDIUM, cached decode vs full forward rel L2 %.3g\n", "random", backend,
               w ? "q4" : "q8", worst);
        const double bound = test_exact_kernels(ctx) ? 2e-3 : QUANT8_TOL;
        CHECK(worst <= bound, "%s %s weights, MEDIUM: cached decode vs full forward rel L2 %.3g (bound %g)", backend,
              w ? "q4" : "q8", worst, bound);
        llama_cache_destroy(full), llama_cache_destroy(inc);
        llama_destroy(m);
    }
}

static void check_cache(wgt_context *ctx, const char *backend, bool qwen, bool llama3)
{
    llama_config cfg = {.model_type = "llama", .vocab_size = 50, .hidden_size = 32, .intermediate_size = 64,
                        .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .max_position = 32,
                        .rms_eps = 1e-5, .rope_theta = 10000.0, .bos_token_id = -1, .eos_token_id = -1};
    if (qwen) {
        cfg.attention_bias = cfg.qk_norm = cfg.rope_llama3 = true;
        cfg.rope_factor = 8, cfg.rope_low_freq_factor = 1, cfg.rope_high_freq_factor = 4, cfg.rope_original_max = 16;
    }
    if (llama3) {
        cfg.rope_llama3 = true;
        cfg.n_heads = 12, cfg.n_kv_heads = 4; /* G = 3 q heads per kv head: odd, so q ends mid-row of the cache's scratch */
        cfg.rope_factor = 8, cfg.rope_low_freq_factor = 1, cfg.rope_high_freq_factor = 4, cfg.rope_original_max = 16;
    }
    const int32_t toks[9] = {3, 14, 15, 9, 26, 5, 35, 8, 9};
    char msg[256] = "";
    static const llama_weights kinds[4] = {LLAMA_WEIGHTS_F32, LLAMA_WEIGHTS_F16, LLAMA_WEIGHTS_Q8, LLAMA_WEIGHTS_Q4};
    /* HIGHEST matmul precision for every model built here (step_with's too):
     * a prefill's products of several rows would otherwise quantize x (int8)
     * or sum in f16 where a decode step's one row does not; the fixtures
     * cover MEDIUM, the default */
    setenv("WGT_LLAMA_PRECISION", "highest", 1);
    for (int w = 0; w < 4; w++) {
        llama_model *m = llama_create_random(ctx, &cfg, kinds[w], 7, msg, sizeof(msg));
        CHECK(m != NULL, "random model: %s", msg);
        if (!m) continue;
        llama_cache *full = llama_cache_create(m, 16, msg, sizeof(msg)), *inc = llama_cache_create(m, 16, msg, sizeof(msg));
        wgt_tensor *ref = NULL;
        const double worst = full_then_steps(full, inc, toks, &ref);
        CHECK(worst <= (w ? 2e-3 : 1e-5), "%s weights %d: cached decode vs full forward rel L2 %.3g", backend, w, worst);
        if (llama3) {
            /* the decode step's rotation and cache append in one kernel
             * (wgt_fused_assign into the cache) against the rotation kernel
             * then the cache assignment (WGT_LLAMA_DECODE_FUSE=0, where the
             * step's other fusions are off too, bit-identical by their own
             * tests): the same logits bit for bit, every weight kind */
            float fused[50], unfused[50];
            const unsigned long long nf = step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_DECODE_FUSE", "1", toks, fused, NULL);
            const unsigned long long nu = step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_DECODE_FUSE", "0", toks, unfused, NULL);
            /* WebGPU, f16 weights: the epilogue fusions (o + residual,
             * gate/up + SwiGLU, down + residual) and the rotation's cache
             * append, 4 a layer; f32 weights: the SwiGLU stays its own
             * kernel (no f32 GEMV epilogue), 3; quantized: the append,
             * q's cast to the cache's f16 (the rotation of f32 sums stores
             * q as f16 into the cache's scratch), the two residual adds
             * (wgt_qlinear_ex's bias) and the attention output's cast to
             * f32 (wgt_qlinear_ex reads f16), 5 */
            const unsigned long long per_layer = w >= 2 ? 5 : w == 1 ? 4 : 3;
            const bool counted = wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU;
            CHECK(same_logits(ctx, fused, unfused) &&
                      (!counted || nu == nf + per_layer * (unsigned long long)cfg.n_layers),
                  "%s weights %d, llama3 rope: decode step with the rotation into the cache: %llu dispatches, %llu "
                  "unfused (%llu a layer more expected); logits %s", backend, w, nf, nu, per_layer,
                  same_logits(ctx, fused, unfused) ? "equal" : "differ");
            if (w >= 1) {
                /* f16 and quantized: level 3 also rotates in the q/k/v
                 * projection's epilogue, storing into the cache
                 * (wgt_rms_norm_linear_rope_into, wgt_qlinear_rope_into):
                 * one dispatch a layer fewer than level 2 (WebGPU), the same
                 * logits bit for bit */
                const unsigned long long layers = (unsigned long long)cfg.n_layers;
                one_level_more(ctx, &cfg, kinds[w], toks, '2', layers, backend, w, "the rotation in the projection");
                /* level 5: the attention and the o projection in one call
                 * (wgt_attention_(q)linear_ex), whose combine WebGPU runs in
                 * the projection's GEMV: one dispatch a layer fewer than
                 * level 4, the same logits (within same_logits: the merge may
                 * round an f16 attention output the other way) */
                one_level_more(ctx, &cfg, kinds[w], toks, '4', layers, backend, w,
                               "the attention's combine in the o projection");
                /* level 6: the final norm in the f16 head's GEMV, one
                 * dispatch a step fewer than level 5, the same logits
                 * (wgt_rms_norm_linear_ex: bit for bit); quantized heads
                 * keep the norm kernel */
                one_level_more(ctx, &cfg, kinds[w], toks, '5', w == 1 ? 1 : 0, backend, w,
                               "the final norm in the head");
            }
        }
        /* a greedy decode step reads back one int and nothing else (WebGPU) */
        wgt_execution_stats s0, s1;
        if (wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU && wgt_execution_stats_get(ctx, &s0) == WGT_OK) {
            llama_cache_reset(full);
            wgt_tensor_release(llama_forward(full, toks, 3, false, msg, sizeof(msg)));
            wgt_synchronize(ctx);
            wgt_execution_stats_get(ctx, &s0);
            wgt_tensor *l = llama_forward(full, &toks[3], 1, false, msg, sizeof(msg));
            const int32_t next = llama_argmax(l);
            wgt_tensor_release(l);
            wgt_execution_stats_get(ctx, &s1);
            CHECK(next >= 0 && s1.downloads - s0.downloads == 1, "%s weights %d: a decode step made %llu downloads "
                  "(one expected: the sampled token)", backend, w, (unsigned long long)(s1.downloads - s0.downloads));
            if (w == 1 && !qwen && !llama3)
                printf("decode step, tiny model, f16 weights: %llu dispatches, %llu submits, %llu uploads, %llu downloads\n",
                       (unsigned long long)(s1.dispatches - s0.dispatches), (unsigned long long)(s1.submits - s0.submits),
                       (unsigned long long)(s1.uploads - s0.uploads), (unsigned long long)(s1.downloads - s0.downloads));
            if (w == 1 && !qwen && !llama3) {
                /* f16 weights take the f32 activations as they are (f32 x f16
                 * products): against WGT_LLAMA_CAST_F16=1, which casts them,
                 * the step saves the casts before q/k/v and gate/up in every
                 * layer and the one before the head; same token. The knob is
                 * read when a model is built: the same model (seed 7) again */
                int32_t next_cast = -1;
                float fused[50], unfused[50], level3[50], cast_logits[50];
                const unsigned long long cast = step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_CAST_F16", "1", toks,
                                                          cast_logits, &next_cast);
                /* 2 casts a layer and 1 before the head; with the casts the
                 * attention norm is its own dispatch again, where the fused
                 * step computes it in the q/k/v projection */
                const unsigned long long now = step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_DECODE_FUSE", "3", toks,
                                                         level3, NULL); /* the default on a CPU adapter */
                const unsigned long long saved = 3ull * (unsigned long long)llama_model_config(m)->n_layers + 1;
                CHECK(cast == now + saved && next_cast == next,
                      "f16 decode step: %llu dispatches, %llu with the casts (%llu fewer expected); tokens %d, %d", now,
                      cast, saved, next, next_cast);
                /* the residual adds in the o-proj and down GEMVs' epilogues,
                 * the SwiGLU in the gate/up GEMV's, the attention RMSNorm in
                 * the qkv GEMV's prologue (=4: the MLP's in the gate/up
                 * GEMV's too): against WGT_LLAMA_DECODE_FUSE=0 four (five)
                 * dispatches fewer per layer, the same logits bit for bit.
                 * The step_with counts include the argmax, as `now` does. */
                llama_cache_reset(full);
                wgt_tensor_release(llama_forward(full, toks, 3, false, msg, sizeof(msg)));
                wgt_tensor *lf = llama_forward(full, &toks[3], 1, false, msg, sizeof(msg));
                CHECK(lf && wgt_tensor_read(lf, fused, sizeof(fused)) == WGT_OK, "fused decode step: %s", msg);
                wgt_tensor_release(lf);
                const unsigned long long unf =
                    step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_DECODE_FUSE", "0", toks, unfused, NULL);
                const unsigned long long adds = 4ull * (unsigned long long)llama_model_config(m)->n_layers;
                const unsigned long long at3 = now;
                CHECK(unf == at3 + adds && same_logits(ctx, fused, unfused),
                      "f16 decode step: %llu dispatches fused (level 3), %llu unfused (%llu more expected); logits %s",
                      at3, unf, adds, same_logits(ctx, fused, unfused) ? "equal" : "differ");
                /* (the default level is 3 on a CPU adapter, 6 on a GPU: both named) */
                float level4[50];
                const unsigned long long l3 = at3;
                const unsigned long long l4 =
                    step_with(ctx, &cfg, kinds[w], "WGT_LLAMA_DECODE_FUSE", "4", toks, level4, NULL);
                CHECK(l4 == l3 - (unsigned long long)llama_model_config(m)->n_layers &&
                          same_logits(ctx, level3, level4) && same_logits(ctx, fused, level3),
                      "f16 decode step with the gate/up norm fused too: %llu dispatches (%llu expected); logits %s",
                      l4, l3 - (unsigned long long)llama_model_config(m)->n_layers,
                      same_logits(ctx, level3, level4) && same_logits(ctx, fused, level3) ? "equal" : "differ");
            }
        }
        CHECK(llama_cache_length(inc) == 9, "cache length 9 after 5 + 4 tokens");
        /* past the context: refused with a message, nothing recorded */
        int32_t many[8] = {0};
        wgt_tensor *over = llama_forward(inc, many, 8, false, msg, sizeof(msg));
        CHECK(over == NULL && strstr(msg, "context"), "overflowing the cache is refused: %s", msg);
        const int32_t bad_tok = 50;
        CHECK(llama_forward(inc, &bad_tok, 1, false, msg, sizeof(msg)) == NULL && strstr(msg, "vocabulary"),
              "a token outside the vocabulary is refused: %s", msg);
        wgt_tensor_release(ref);
        llama_cache_destroy(full), llama_cache_destroy(inc);
        llama_destroy(m);
    }
    unsetenv("WGT_LLAMA_PRECISION");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) fputs(text, f), fclose(f);
}

/* A one-layer model folder whose tensors are written by wgt_safetensors_save;
 * skip names one tensor to leave out, bad_shape one to write with a wrong shape. */
static void check_load_errors(wgt_context *ctx)
{
    char dir[256], path[300], msg[512];
    snprintf(dir, sizeof(dir), "%s/wgt_llama_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        CHECK(false, "mkdtemp");
        return;
    }
    const char *cfg = "{\"model_type\": \"llama\", \"vocab_size\": 16, \"hidden_size\": 8, \"intermediate_size\": 12,"
                      " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
                      " \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": true, \"hidden_act\": \"silu\"}";
    snprintf(path, sizeof(path), "%s/config.json", dir);
    write_text(path, cfg);
    const char *names[] = {"model.embed_tokens.weight", "model.norm.weight", "model.layers.0.input_layernorm.weight",
                           "model.layers.0.post_attention_layernorm.weight", "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight",
                           "model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.gate_proj.weight",
                           "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"};
    const int64_t shapes[][2] = {{16, 8}, {8, 0}, {8, 0}, {8, 0}, {8, 8}, {4, 8}, {4, 8}, {8, 8}, {12, 8}, {12, 8}, {8, 12}};
    for (int variant = 0; variant < 3; variant++) { /* 0: complete, 1: k_proj missing, 2: v_proj [4, 9] */
        wgt_scope_push(ctx);
        wgt_named_tensor ts[11];
        int n = 0;
        for (int i = 0; i < 11; i++) {
            if (variant == 1 && i == 5) continue;
            int64_t shape[2] = {shapes[i][0], shapes[i][1]};
            if (variant == 2 && i == 6) shape[1] = 9;
            ts[n].name = names[i];
            ts[n++].tensor = wgt_full(ctx, WGT_F32, shape[1] ? 2 : 1, shape, 0.5);
        }
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        CHECK(wgt_safetensors_save(ctx, path, ts, n, NULL, 0) == WGT_OK, "save: %s", wgt_context_error_message(ctx));
        wgt_scope_pop(ctx);
        msg[0] = 0;
        llama_model *m = llama_load(ctx, dir, LLAMA_WEIGHTS_F32, msg, sizeof(msg));
        if (variant == 0) CHECK(m != NULL, "complete folder loads: %s", msg);
        if (variant == 1) CHECK(!m && strstr(msg, "k_proj.weight is missing"), "missing tensor named: %s", msg);
        if (variant == 2) CHECK(!m && strstr(msg, "v_proj.weight has shape [4, 9]") && strstr(msg, "[4, 8]"),
                                "shape mismatch named: %s", msg);
        llama_destroy(m);
        CHECK(wgt_context_status(ctx) == WGT_OK || wgt_context_clear_error(ctx) == WGT_OK, "context usable");
    }
    /* config errors */
    llama_config c;
    const char *bad[][2] = {
        {"{\"model_type\": \"gpt2\", \"vocab_size\": 16}", "model_type \"gpt2\" is not a supported architecture"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 8}", "\"vocab_size\" is missing"},
        {"{\"model_type\": \"llama\", \"vocab_size\": 16, \"hidden_size\": 8, \"intermediate_size\": 12, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 3, \"num_key_value_heads\": 2}", "multiple of kv heads"},
        {"{\"model_type\": \"llama\", \"hidden_act\": \"gelu\"}", "silu"},
        {"{\"model_type\": \"llama\", \"vocab_size\": 16, \"hidden_size\": 8, \"intermediate_size\": 12, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"rope_scaling\": {\"rope_type\": \"yarn\"}}", "yarn"},
        {"{\"model_type\": \"llama\",}", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        msg[0] = 0;
        CHECK(!llama_config_parse(bad[i][0], strlen(bad[i][0]), &c, msg, sizeof(msg)) && strstr(msg, bad[i][1]),
              "config %zu refused naming \"%s\": got \"%s\"", i, bad[i][1], msg);
    }
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* llama_set_matmul_precision: a q8 model's prefill at MEDIUM (its default)
 * quantizes x, so its logits differ from HIGHEST's, which equal those of the
 * model built with WGT_LLAMA_PRECISION=highest bit for bit; the caller's
 * context setting is restored after each pass. */
static void check_precision(wgt_context *ctx, const char *backend)
{
    llama_config cfg = {.model_type = "llama", .vocab_size = 50, .hidden_size = 64, .intermediate_size = 96,
                        .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 16, .max_position = 32,
                        .rms_eps = 1e-5, .rope_theta = 10000.0, .bos_token_id = -1, .eos_token_id = -1};
    const int32_t toks[6] = {3, 14, 15, 9, 26, 5};
    float logits[3][6 * 50];
    char msg[256] = "";
    bool ok = true;
    for (int r = 0; r < 3; r++) { /* 0: default, 1: set HIGHEST, 2: built with the env */
        if (r == 2) setenv("WGT_LLAMA_PRECISION", "highest", 1);
        llama_model *m = llama_create_random(ctx, &cfg, LLAMA_WEIGHTS_Q8, 7, msg, sizeof(msg));
        if (r == 2) unsetenv("WGT_LLAMA_PRECISION");
        if (m && r == 1)
            ok = ok && llama_set_matmul_precision(m, WGT_MATMUL_PRECISION_HIGHEST) == WGT_MATMUL_PRECISION_MEDIUM;
        llama_cache *c = m ? llama_cache_create(m, 8, msg, sizeof(msg)) : NULL;
        wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST);
        wgt_tensor *l = c ? llama_forward(c, toks, 6, true, msg, sizeof(msg)) : NULL;
        ok = ok && l && wgt_tensor_read(l, logits[r], sizeof(logits[r])) == WGT_OK &&
             wgt_set_matmul_precision(ctx, WGT_MATMUL_PRECISION_HIGHEST) == WGT_MATMUL_PRECISION_HIGHEST;
        wgt_tensor_release(l);
        llama_cache_destroy(c);
        llama_destroy(m);
    }
    CHECK(ok, "%s: precision models: %s", backend, msg);
    CHECK(ok && memcmp(logits[0], logits[1], sizeof(logits[0])) != 0 &&
              memcmp(logits[1], logits[2], sizeof(logits[1])) == 0,
          "%s: q8 prefill logits: MEDIUM differs from HIGHEST, HIGHEST equals the env's", backend);
}

static void run_backend(wgt_context *ctx, const char *backend)
{
    if (!ctx) {
        CHECK(false, "no %s context", backend);
        return;
    }
    check_fixture(ctx, "tiny-llama-numpy", backend, true);
    check_fixture(ctx, "tiny-llama", backend, true);
    check_fixture(ctx, "tiny-llama-bf16", backend, true);
    check_fixture(ctx, "tiny-llama3-rope", backend, true);
    check_precision(ctx, backend);
    check_cache_medium(ctx, backend);
    check_cache(ctx, backend, false, false);
    check_cache(ctx, backend, true, false);
    check_cache(ctx, backend, false, true);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s context clean: %s", backend, wgt_context_error_message(ctx));
}

int main(void)
{
    wgt_context *cpu = test_cpu_context();
    run_backend(cpu, "cpu");
    check_load_errors(cpu);
    wgt_context_destroy(cpu);
    wgt_context *gpu = test_webgpu_context();
    run_backend(gpu, "webgpu");
    wgt_context_destroy(gpu);
    return test_summary();
}
