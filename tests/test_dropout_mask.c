/*
 * wgt_dropout_add's recorded form, which keeps its mask as bits (DROPOUT_ADD,
 * DROPOUT_MASKED; src/ops/nn_loss.c), on both backends:
 *
 *   - the node is a dropout_add holding the mask (not the fused expression);
 *   - out, x's gradient and h's gradient equal, bit for bit, those of a
 *     context with WGT_DROPOUT_MASK=0, where the expression kernel runs and
 *     the backward draws the mask again from Philox: the same mask, the same
 *     f32 roundings (a second implementation of the same numbers);
 *   - out against the definition computed here: x where dropped, x + h / (1 -
 *     p) (within one f32 rounding) where kept, and the kept share near 1 - p;
 *   - shapes: element counts that are not a multiple of 32 (a partial last
 *     mask word), the GPT's [B, T, C] layout, p = 0.1, 0.5, 0.9; an f16 or
 *     non-multiple-of-4 input takes the expression (checked: no mask node).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/tape.h"
#include "test_util.h"

static uint32_t rng_state = 777u;

static float *random_floats(int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (float)((int32_t)test_xorshift(&rng_state)) / 1073741824.0f;
    return v;
}

static float *read_f32(wgt_tensor *t, int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!t || wgt_tensor_read(t, v, sizeof(float) * (size_t)n) != WGT_OK) {
        free(v);
        return NULL;
    }
    return v;
}

typedef struct run_result {
    float *out, *dx, *dh;
    wgt_op op; /* what the tape recorded */
} run_result;

static run_result run(wgt_context *ctx, int ndim, const int64_t *shape, const float *const *data, double p,
                      uint64_t seed)
{
    run_result r = {NULL, NULL, NULL, WGT_OP_COUNT};
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    wgt_scope_push(ctx);
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, data[0]);
    wgt_tensor *h = wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, data[1]);
    wgt_tensor *g = wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, data[2]);
    wgt_tensor_set_requires_grad(x, true);
    wgt_tensor_set_requires_grad(h, true);
    wgt_tensor *out = wgt_dropout_add(x, h, p, seed);
    if (out && out->grad_node) r.op = out->grad_node->op;
    r.out = read_f32(out, n);
    if (out && wgt_backward_ex(out, g, false) == WGT_OK) {
        r.dx = read_f32(wgt_tensor_grad(x), n);
        r.dh = read_f32(wgt_tensor_grad(h), n);
    }
    CHECK(r.out && r.dx && r.dh, "%s: dropout_add of %lld: %s", ctx->backend->vt->name, (long long)n,
          wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
    return r;
}

static void free_result(run_result *r) { free(r->out), free(r->dx), free(r->dh); }

static int bits_differ(const float *a, const float *b, int64_t n)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
}

static void test_case(wgt_context *masked, wgt_context *plain, int ndim, const int64_t *shape, double p)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *data[3] = {random_floats(n), random_floats(n), random_floats(n)};
    uint64_t seed = 0x123456789abcull + (uint64_t)n;
    run_result a = run(masked, ndim, shape, (const float *const *)data, p, seed);
    run_result b = run(plain, ndim, shape, (const float *const *)data, p, seed);
    const char *name = masked->backend->vt->name;
    CHECK(a.op == WGT_OP_DROPOUT_ADD, "%s n %lld: recorded %s, expected dropout_add (the mask kept)", name, (long long)n,
          a.op < WGT_OP_COUNT ? wgt_op_name(a.op) : "nothing");
    CHECK(b.op == WGT_OP_FUSED, "%s n %lld, WGT_DROPOUT_MASK=0: recorded %s, expected the fused expression", name,
          (long long)n, b.op < WGT_OP_COUNT ? wgt_op_name(b.op) : "nothing");
    if (a.out && b.out && a.dx && b.dx && a.dh && b.dh) {
        CHECK(bits_differ(a.out, b.out, n) == 0, "%s n %lld p %g: %d outputs differ from the expression's", name,
              (long long)n, p, bits_differ(a.out, b.out, n));
        CHECK(bits_differ(a.dx, b.dx, n) == 0, "%s n %lld p %g: x's gradient differs", name, (long long)n, p);
        CHECK(bits_differ(a.dh, b.dh, n) == 0, "%s n %lld p %g: %d of h's gradients differ", name, (long long)n, p,
              bits_differ(a.dh, b.dh, n));
        /* the definition: kept elements are x + h / (1 - p) and carry g / (1 - p), dropped ones x and 0 */
        int64_t kept = 0, bad = 0;
        float s = (float)(1.0 / (1.0 - p));
        for (int64_t i = 0; i < n; i++) {
            if (a.dh[i] != 0.0f) { /* kept (g is never 0 here) */
                kept++;
                bad += a.out[i] != data[0][i] + data[1][i] * s || a.dh[i] != data[2][i] * s;
            } else {
                bad += a.out[i] != data[0][i] + 0.0f;
            }
            bad += a.dx[i] != data[2][i];
        }
        double share = (double)kept / (double)n, sd = sqrt((1 - p) * p / (double)n);
        CHECK(bad == 0, "%s n %lld p %g: %lld elements off the definition", name, (long long)n, p, (long long)bad);
        CHECK(n < 1000 || fabs(share - (1 - p)) <= 5 * sd + 1e-3, "%s n %lld p %g: %.4f kept", name, (long long)n, p,
              share);
    }
    free_result(&a), free_result(&b);
    for (int i = 0; i < 3; i++) free(data[i]);
}

/* f16, or an element count that is not a multiple of 4: the expression, no mask node. */
static void test_expression_kept(wgt_context *ctx)
{
    float v[24] = {0};
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){6}, v);
    wgt_tensor *h = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){6}, v);
    wgt_tensor *x16 = wgt_cast(x, WGT_F16), *h16 = wgt_cast(h, WGT_F16); /* leaves: cast before h requires grad */
    wgt_tensor_set_requires_grad(h, true);
    wgt_tensor *out = wgt_dropout_add(x, h, 0.5, 1);
    CHECK(out && out->grad_node && out->grad_node->op == WGT_OP_FUSED, "%s: 6 elements take the expression",
          ctx->backend->vt->name);
    wgt_tensor_release(out);
    wgt_tensor_set_requires_grad(h16, true);
    out = wgt_dropout_add(x16, h16, 0.5, 1);
    CHECK(out && out->grad_node && out->grad_node->op == WGT_OP_FUSED, "%s: f16 takes the expression",
          ctx->backend->vt->name);
    wgt_tensor_release(out);
    wgt_tensor_release(x16), wgt_tensor_release(h16), wgt_tensor_release(x), wgt_tensor_release(h);
}

int main(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_CPU;
    const char *const off[] = {"WGT_DROPOUT_MASK", "0", NULL};
    wgt_context *ctx[2][2] = {{test_cpu_context(), test_context_env(&o, off)},
                              {test_webgpu_context(), test_context_env(NULL, off)}};
    for (int k = 0; k < 2; k++) {
        if (!ctx[k][0] || !ctx[k][1]) {
            CHECK(false, "contexts");
            continue;
        }
        int before = test_failed;
        test_case(ctx[k][0], ctx[k][1], 1, (int64_t[]){84}, 0.1);          /* 21 quads: 3 words, a partial last */
        test_case(ctx[k][0], ctx[k][1], 2, (int64_t[]){37, 36}, 0.5);
        test_case(ctx[k][0], ctx[k][1], 3, (int64_t[]){4, 64, 48}, 0.2);    /* [B, T, C] */
        test_case(ctx[k][0], ctx[k][1], 1, (int64_t[]){100004}, 0.9);
        test_expression_kept(ctx[k][0]);
        printf("%s: %s\n", ctx[k][0]->backend->vt->name, test_failed == before ? "ok" : "FAILED");
        fflush(stdout);
    }
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 2; j++)
            if (ctx[k][j]) wgt_context_destroy(ctx[k][j]);
    return test_summary();
}
