/* The GPT of src/models/gpt.c and the sampler of src/models/sampler.c:
 *   - the loss equals a host cross-entropy (double) of the model's own logits;
 *   - the KV-cache path (prefill, then one token at a time) gives the logits of
 *     a full forward at every position, on both backends;
 *   - the same seed gives the same initial model on the CPU and the GPU;
 *   - every parameter receives a finite gradient and AdamW memorizes one batch;
 *   - regression: ops whose tape node keeps a temporary (embedding, layer_norm,
 *     attention, cross_entropy, reshape by copy, matmul with a vector) left it in
 *     the caller's scope too, so popping the scope released it twice (a crash
 *     or heap corruption whenever a training step ran inside a scope);
 *   - the sampler: greedy = argmax, top-k/top-p keep the right tokens, draws
 *     follow the softmax, a seed replays, bad configs are refused.
 * Shapes are tiny: seconds on lavapipe and under ASan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "sampler.h"
#include "test_util.h"

static const gpt_config SMALL = {.n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 11,
                                 .dropout = 0.0, .bias = true, .tied_head = false};

/* Makes the weights large enough that the logits differ clearly between
 * positions (nanoGPT's init keeps them near 0). */
static void scale_weights(gpt_model *m, double factor)
{
    wgt_context *ctx = wgt_tensor_context(gpt_params(m)[0]);
    wgt_no_grad_push(ctx);
    wgt_scope_push(ctx);
    for (int i = 0; i < gpt_param_count(m); i++) {
        wgt_tensor *p = gpt_params(m)[i];
        wgt_tensor *noise = wgt_randn(ctx, WGT_F32, wgt_tensor_ndim(p), wgt_tensor_shape(p), 100 + (uint64_t)i);
        wgt_assign(p, wgt_add(p, wgt_binary_scalar(WGT_OP_MUL, noise, factor)));
    }
    wgt_scope_pop(ctx);
    wgt_no_grad_pop(ctx);
}

static float *read_all(wgt_tensor *t)
{
    if (!t) return NULL;
    size_t n = (size_t)wgt_tensor_numel(t);
    float *h = malloc(n * sizeof(float));
    if (h && wgt_tensor_read(t, h, n * sizeof(float)) != WGT_OK) {
        free(h);
        return NULL;
    }
    return h;
}

static void check_loss_and_cache(wgt_context *ctx, const char *backend)
{
    gpt_model *m = gpt_create(ctx, &SMALL, 7);
    CHECK(m != NULL, "%s: gpt_create: %s", backend, wgt_context_error_message(ctx));
    if (!m) return;
    scale_weights(m, 0.3);
    const int64_t T = SMALL.block_size, V = SMALL.vocab_size;
    int32_t ids[2 * 8], targets[2 * 8];
    uint32_t rng = 12345;
    for (int i = 0; i < 2 * T; i++) ids[i] = (int32_t)(test_xorshift(&rng) % (uint32_t)V);
    for (int i = 0; i < 2 * T; i++) targets[i] = (int32_t)(test_xorshift(&rng) % (uint32_t)V);
    wgt_scope_push(ctx);
    wgt_tensor *idx = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){2, T}, ids);
    wgt_tensor *tgt = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){2, T}, targets);
    float *logits = read_all(gpt_logits(m, idx)); /* [2, T, V] */
    float loss = NAN;
    wgt_tensor_read(gpt_loss(m, idx, tgt, false, 0), &loss, sizeof(loss));
    CHECK(logits != NULL, "%s: logits: %s", backend, wgt_context_error_message(ctx));
    double want = 0, spread = 0;
    for (int r = 0; logits && r < 2 * T; r++) {
        const float *row = logits + r * V;
        double mx = row[0], sum = 0;
        for (int v = 1; v < V; v++) mx = fmax(mx, row[v]);
        for (int v = 0; v < V; v++) sum += exp((double)row[v] - mx);
        want += (log(sum) + mx - row[targets[r]]) / (2.0 * T);
        spread = fmax(spread, fabs(row[0] - logits[V * (r % T == 0 ? 1 : 0)]));
    }
    CHECK(fabs(loss - want) <= 1e-5 * fabs(want), "%s: gpt_loss %.7f, host cross-entropy of its logits %.7f", backend,
          loss, want);
    CHECK(spread > 1e-3, "%s: logits barely vary (%.3g): the cache check below would be vacuous", backend, spread);

    /* batch row 1 through the KV cache: a prefill of 3, then 1 token at a time */
    gpt_kv_cache *cache = gpt_kv_cache_create(m, 1);
    CHECK(cache != NULL, "%s: gpt_kv_cache_create: %s", backend, wgt_context_error_message(ctx));
    double worst = 0, ref_max = 0;
    for (int64_t pos = 0; cache && logits && pos < T;) {
        int64_t n = pos == 0 ? 3 : 1;
        wgt_scope_push(ctx);
        wgt_tensor *step = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){1, n}, ids + T + pos);
        float *got = read_all(gpt_forward_cached(cache, step)); /* [1, V], position pos + n - 1 */
        wgt_scope_pop(ctx);
        CHECK(got != NULL, "%s: gpt_forward_cached at %lld: %s", backend, (long long)pos, wgt_context_error_message(ctx));
        if (!got) break;
        const float *want_row = logits + (T + pos + n - 1) * V;
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs(got[v] - want_row[v]));
            ref_max = fmax(ref_max, fabs(want_row[v]));
        }
        free(got);
        pos += n;
        CHECK(gpt_kv_cache_length(cache) == pos, "%s: cache length %lld, want %lld", backend,
              (long long)gpt_kv_cache_length(cache), (long long)pos);
    }
    CHECK(worst <= 2e-5 * fmax(1, ref_max), "%s: KV-cache logits differ from the full forward by %.3g (max %.3g)",
          backend, worst, ref_max);
    /* a full cache refuses more tokens without an error on the context */
    wgt_tensor *extra = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){1, 1}, ids);
    CHECK(cache && gpt_forward_cached(cache, extra) == NULL, "%s: a token past block_size was accepted", backend);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", backend, wgt_context_error_message(ctx));
    printf("%s: loss %.6f = host %.6f; KV cache vs full forward max diff %.3g\n", backend, loss, want, worst);
    free(logits);
    gpt_kv_cache_destroy(cache);
    wgt_scope_pop(ctx);
    gpt_destroy(m);
}

static void check_training(wgt_context *ctx, const char *backend)
{
    gpt_config cfg = SMALL;
    cfg.tied_head = true;
    cfg.bias = false;
    cfg.dropout = 0.1;
    gpt_model *m = gpt_create(ctx, &cfg, 3);
    CHECK(m != NULL, "%s: gpt_create: %s", backend, wgt_context_error_message(ctx));
    if (!m) return;
    /* tied: one tensor for wte and lm_head; no biases: 2 + 4 per layer + 1 tensors */
    CHECK(gpt_param_count(m) == 2 + 6 * cfg.n_layer + 1, "%s: %d parameter tensors", backend, gpt_param_count(m));
    int32_t ids[4 * 8], targets[4 * 8];
    for (int i = 0; i < 4 * 8; i++) ids[i] = i % 11, targets[i] = (i * 7 + 3) % 11;
    wgt_optimizer_config oc;
    wgt_optimizer_config_init(&oc, WGT_OPTIMIZER_ADAMW);
    oc.lr = 1e-2;
    wgt_optimizer *opt = wgt_optimizer_create(gpt_params(m), gpt_param_count(m), &oc);
    float first = NAN, last = NAN;
    for (int step = 0; opt && step < 40; step++) {
        wgt_scope_push(ctx);
        wgt_optimizer_zero_grad(opt);
        wgt_tensor *idx = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){4, 8}, ids);
        wgt_tensor *tgt = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){4, 8}, targets);
        wgt_tensor *loss = gpt_loss(m, idx, tgt, true, (uint64_t)step);
        wgt_backward(loss);
        if (step == 0) {
            int with_grad = 0;
            for (int i = 0; i < gpt_param_count(m); i++) {
                float *g = read_all(wgt_tensor_grad(gpt_params(m)[i]));
                bool finite = g != NULL, nonzero = false;
                for (int64_t k = 0; g && k < wgt_tensor_numel(gpt_params(m)[i]); k++) {
                    finite = finite && isfinite(g[k]);
                    nonzero = nonzero || g[k] != 0;
                }
                with_grad += finite && nonzero;
                free(g);
            }
            CHECK(with_grad == gpt_param_count(m), "%s: %d of %d parameters got a finite non-zero gradient", backend,
                  with_grad, gpt_param_count(m));
        }
        wgt_clip_grad_norm(gpt_params(m), gpt_param_count(m), 1.0, NULL);
        wgt_optimizer_step(opt);
        float v = NAN;
        wgt_tensor_read(loss, &v, sizeof(v));
        if (step == 0) first = v;
        last = v;
        wgt_scope_pop(ctx);
    }
    /* memorizing a fixed batch: the loss falls well below ln(11) = 2.40 */
    CHECK(first > 2.2f && last < 1.2f, "%s: loss %.4f -> %.4f after 40 AdamW steps on one batch", backend, first, last);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", backend, wgt_context_error_message(ctx));
    printf("%s: one-batch training loss %.4f -> %.4f\n", backend, first, last);
    wgt_optimizer_destroy(opt);
    gpt_destroy(m);
}

/* The same seed gives the same weights (Philox) and so the same logits. */
static void check_backends_agree(wgt_context *cpu, wgt_context *gpu)
{
    gpt_model *a = gpt_create(cpu, &SMALL, 11), *b = gpt_create(gpu, &SMALL, 11);
    CHECK(a && b, "gpt_create on both backends");
    if (!a || !b) {
        gpt_destroy(a);
        gpt_destroy(b);
        return;
    }
    scale_weights(a, 0.3);
    scale_weights(b, 0.3);
    int32_t ids[8] = {1, 5, 2, 9, 10, 0, 3, 3};
    wgt_scope_push(cpu);
    wgt_scope_push(gpu);
    float *la = read_all(gpt_logits(a, wgt_tensor_from_host(cpu, WGT_I32, 2, (int64_t[]){1, 8}, ids)));
    float *lb = read_all(gpt_logits(b, wgt_tensor_from_host(gpu, WGT_I32, 2, (int64_t[]){1, 8}, ids)));
    double worst = 0;
    for (int i = 0; la && lb && i < 8 * 11; i++) worst = fmax(worst, fabs(la[i] - lb[i]));
    CHECK(la && lb && worst < 1e-4, "cpu and webgpu logits of one seed differ by %.3g", worst);
    printf("cpu vs webgpu logits, same seed: max diff %.3g\n", worst);
    free(la);
    free(lb);
    wgt_scope_pop(cpu);
    wgt_scope_pop(gpu);
    gpt_destroy(a);
    gpt_destroy(b);
}

/* Each op on a requires-grad input inside a scope, then the pop: no double
 * release (ASan sees any), nothing leaked. */
static void check_scoped_graphs(wgt_context *ctx)
{
    wgt_tensor *w = wgt_randn(ctx, WGT_F32, 2, (int64_t[]){4, 16}, 1);
    wgt_tensor_set_requires_grad(w, true);
    const int64_t live = wgt_context_live_tensors(ctx);
    static const char *names[6] = {"embedding", "layer_norm", "attention", "cross_entropy", "reshape (copy)",
                                   "matmul (vector)"};
    for (int which = 0; which < 6; which++) {
        for (int rep = 0; rep < 3; rep++) {
            wgt_scope_push(ctx);
            int32_t ids[4] = {0, 3, 1, 2};
            wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_I32, 1, (int64_t[]){4}, ids), *y = NULL;
            if (which == 0) y = wgt_embedding(w, t);
            if (which == 1) y = wgt_layer_norm(w, NULL, NULL, 1e-5);
            if (which == 2) {
                wgt_tensor *q = wgt_reshape(w, 4, (int64_t[]){1, 2, 2, 16});
                y = wgt_scaled_dot_product_attention(q, q, q, true, 0, 0);
            }
            if (which == 3) y = wgt_cross_entropy(w, t, WGT_REDUCTION_MEAN, -1);
            if (which == 4) y = wgt_reshape(wgt_transpose(w, 0, 1), 1, (int64_t[]){64});
            if (which == 5) y = wgt_matmul(w, wgt_ones(ctx, WGT_F32, 1, (int64_t[]){16}));
            CHECK(y != NULL, "%s in a scope: %s", names[which], wgt_context_error_message(ctx));
            wgt_scope_pop(ctx);
        }
        CHECK(wgt_context_live_tensors(ctx) == live, "%s: %lld tensors alive after the scopes, want %lld", names[which],
              (long long)wgt_context_live_tensors(ctx), (long long)live);
    }
    wgt_tensor_release(w);
}

static void check_config(void)
{
    char msg[256];
    gpt_config c = SMALL;
    CHECK(gpt_config_check(&c, msg, sizeof(msg)), "SMALL refused: %s", msg);
    c.n_head = 3;
    CHECK(!gpt_config_check(&c, msg, sizeof(msg)) && strstr(msg, "multiple of n_head"), "n_embd 16, 3 heads: %s", msg);
    c = SMALL;
    c.dropout = 1.0;
    CHECK(!gpt_config_check(&c, msg, sizeof(msg)) && strstr(msg, "dropout"), "dropout 1: %s", msg);
    c = SMALL;
    c.block_size = 0;
    CHECK(!gpt_config_check(&c, msg, sizeof(msg)) && strstr(msg, "block_size"), "block 0: %s", msg);
}

static void check_sampler(void)
{
    char msg[256];
    sampler_config c;
    sampler_config_init(&c);
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.2f), -INFINITY};
    /* greedy and top-k 1 pick the argmax */
    c.temperature = 0;
    sampler *s = sampler_create(&c, 4);
    CHECK(s && sampler_pick(s, logits) == 0, "greedy");
    sampler_destroy(s);
    c.temperature = 5;
    c.top_k = 1;
    s = sampler_create(&c, 4);
    bool all_zero = true;
    for (int i = 0; s && i < 200; i++) all_zero = all_zero && sampler_pick(s, logits) == 0;
    CHECK(s && all_zero, "top_k 1 at temperature 5 drew another token");
    sampler_destroy(s);
    /* frequencies follow softmax(logits): 0.5, 0.3, 0.2, never the -inf token */
    const int N = 20000;
    int counts[4] = {0};
    c.temperature = 1;
    c.top_k = 0;
    c.seed = 99;
    s = sampler_create(&c, 4);
    for (int i = 0; s && i < N; i++) counts[sampler_pick(s, logits)]++;
    CHECK(fabs(counts[0] / (double)N - 0.5) < 0.015 && fabs(counts[1] / (double)N - 0.3) < 0.015 &&
              fabs(counts[2] / (double)N - 0.2) < 0.015 && counts[3] == 0,
          "frequencies %d %d %d %d of %d", counts[0], counts[1], counts[2], counts[3], N);
    sampler_destroy(s);
    /* top-p 0.6: {0, 1} (mass 0.8 >= 0.6; {0} alone has 0.5), renormalized to 0.625 / 0.375 */
    memset(counts, 0, sizeof(counts));
    c.top_p = 0.6;
    s = sampler_create(&c, 4);
    for (int i = 0; s && i < N; i++) counts[sampler_pick(s, logits)]++;
    CHECK(counts[2] == 0 && counts[3] == 0 && fabs(counts[0] / (double)N - 0.625) < 0.015,
          "top_p 0.6: counts %d %d %d %d", counts[0], counts[1], counts[2], counts[3]);
    sampler_destroy(s);
    /* top-k 2 keeps {0, 1}; a seed replays the same draws, another seed does not */
    c.top_p = 1;
    c.top_k = 2;
    int a[64], b[64], d[64];
    sampler *s1 = sampler_create(&c, 4), *s2 = sampler_create(&c, 4);
    c.seed = 100;
    sampler *s3 = sampler_create(&c, 4);
    bool same = true, differs = false, in_top2 = true;
    for (int i = 0; s1 && s2 && s3 && i < 64; i++) {
        a[i] = sampler_pick(s1, logits);
        b[i] = sampler_pick(s2, logits);
        d[i] = sampler_pick(s3, logits);
        same = same && a[i] == b[i];
        differs = differs || a[i] != d[i];
        in_top2 = in_top2 && a[i] <= 1;
    }
    CHECK(same && differs && in_top2, "seeded replay: same %d, differs %d, top-2 only %d", same, differs, in_top2);
    sampler_destroy(s1);
    sampler_destroy(s2);
    sampler_destroy(s3);
    /* NaN logits count as impossible; all impossible gives -1 */
    const float nan_logits[3] = {NAN, 1.0f, NAN}, dead[2] = {-INFINITY, NAN};
    c.top_k = 0;
    s = sampler_create(&c, 3);
    CHECK(s && sampler_pick(s, nan_logits) == 1, "NaN logits");
    sampler_destroy(s);
    s = sampler_create(&c, 2);
    CHECK(s && sampler_pick(s, dead) == -1, "all -inf/NaN");
    sampler_destroy(s);
    /* bad configs */
    sampler_config_init(&c);
    c.top_p = 0;
    CHECK(!sampler_config_check(&c, msg, sizeof(msg)) && strstr(msg, "top_p") && !sampler_create(&c, 4), "top_p 0");
    sampler_config_init(&c);
    c.temperature = -1;
    CHECK(!sampler_config_check(&c, msg, sizeof(msg)) && strstr(msg, "temperature"), "temperature -1");
    sampler_config_init(&c);
    c.top_k = -2;
    CHECK(!sampler_config_check(&c, msg, sizeof(msg)) && strstr(msg, "top_k"), "top_k -2");
}

int main(void)
{
    check_config();
    check_sampler();
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    CHECK(cpu && gpu, "contexts");
    if (cpu) {
        check_scoped_graphs(cpu);
        check_loss_and_cache(cpu, "cpu");
        check_training(cpu, "cpu");
    }
    if (gpu) {
        check_loss_and_cache(gpu, "webgpu");
        check_training(gpu, "webgpu");
    }
    if (cpu && gpu) check_backends_agree(cpu, gpu);
    CHECK(!cpu || wgt_context_live_tensors(cpu) == 0, "cpu: %lld tensors leaked", (long long)wgt_context_live_tensors(cpu));
    CHECK(!gpu || wgt_context_live_tensors(gpu) == 0, "webgpu: %lld tensors leaked", (long long)wgt_context_live_tensors(gpu));
    wgt_context_destroy(cpu);
    wgt_context_destroy(gpu);
    return test_summary();
}
