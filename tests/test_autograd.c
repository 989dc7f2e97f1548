/*
 * Autograd: every op with a backward rule, checked against central finite
 * differences through the public API on both backends; the rule table covers
 * every op; the tape's lifetime rules (scopes free it, a second backward needs
 * keep_graph, in-place writes on the tape are refused) and gradient
 * accumulation.
 *
 * Gradient check: loss = sum(f(inputs) * W) with a fixed random W, so every
 * output element's gradient matters and differs. d loss / d x_i is estimated by
 * (loss(x_i + h) - loss(x_i - h)) / 2h in f32 with h = 1e-2 on inputs of size
 * ~1; the truncation error is O(h^2 f''') ~ 1e-4 and the rounding error
 * ~ 1e-7 |loss| / h, so the tolerance is |num - ana| <= 3e-3 + 3e-2 |ana|.
 * Inputs stay away from the points where an op is not differentiable (0 for
 * abs/relu, integers for floor, ties for max) by their domain.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/rules.h"
#include "test_util.h"

#define MAX_IN 4
#define MAX_ELEMS 64 /* elements per input checked by finite differences */

typedef enum domain { ANY, POSITIVE, SPREAD } domain;

typedef struct grad_case {
    const char *name;
    int n_inputs;
    int ndim[MAX_IN];
    int64_t shape[MAX_IN][4];
    domain dom;
    wgt_tensor *(*forward)(wgt_context *ctx, wgt_tensor **in);
} grad_case;

/* Values of magnitude 0.3..1.5 with random sign (ANY), 0.5..2 (POSITIVE), or
 * well separated values for order-sensitive ops (SPREAD: no ties). */
static float draw(uint32_t *rng, domain dom, int i)
{
    float u = (float)(test_xorshift(rng) % 10000) / 10000.0f;
    if (dom == POSITIVE) return 0.5f + 1.5f * u;
    if (dom == SPREAD) return (float)((i * 7919) % 61) * 0.1f - 3.0f + 0.03f * u;
    float m = 0.3f + 1.2f * u;
    return (test_xorshift(rng) & 1) ? m : -m;
}

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

/* sum(f(in) * w) as a host double; w is made on first use for out's shape. */
static double weighted_loss(wgt_context *ctx, const grad_case *c, wgt_tensor **in, wgt_tensor **w,
                            wgt_tensor **loss_out)
{
    wgt_tensor *out = c->forward(ctx, in);
    if (!out) return NAN;
    if (wgt_tensor_dtype(out) != WGT_F32) out = wgt_cast(out, WGT_F32);
    if (!*w) {
        int64_t n = wgt_tensor_numel(out);
        float *host = malloc(sizeof(float) * (size_t)(n ? n : 1));
        uint32_t rng = 99;
        for (int64_t i = 0; i < n; i++) host[i] = (float)(test_xorshift(&rng) % 2000) / 1000.0f - 1.0f;
        *w = wgt_tensor_from_host(ctx, WGT_F32, wgt_tensor_ndim(out), wgt_tensor_shape(out), host);
        free(host);
        wgt_scope_keep(*w);
    }
    wgt_tensor *loss = wgt_sum(wgt_mul(out, *w), NULL, 0, false);
    float value = NAN;
    if (loss) wgt_tensor_read(loss, &value, sizeof(value));
    if (loss_out) *loss_out = loss;
    return value;
}

static void gradcheck(wgt_context *ctx, const char *backend, const grad_case *c)
{
    wgt_scope_push(ctx);
    float *host[MAX_IN] = {0};
    wgt_tensor *in[MAX_IN] = {0}, *w = NULL;
    uint32_t rng = 12345;
    for (int k = 0; k < c->n_inputs; k++) {
        int64_t n = numel_of(c->ndim[k], c->shape[k]);
        host[k] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) host[k][i] = draw(&rng, c->dom, (int)i + 13 * k);
        in[k] = wgt_tensor_from_host(ctx, WGT_F32, c->ndim[k], c->shape[k], host[k]);
        wgt_tensor_set_requires_grad(in[k], true);
    }
    wgt_tensor *loss = NULL;
    weighted_loss(ctx, c, in, &w, &loss);
    wgt_status s = loss ? wgt_backward(loss) : wgt_context_status(ctx);
    CHECK(s == WGT_OK, "%s/%s: backward: %s", backend, c->name, wgt_context_error_message(ctx));
    if (s != WGT_OK) {
        wgt_context_clear_error(ctx);
        goto done;
    }
    int bad = 0, checked = 0;
    wgt_no_grad_push(ctx);
    for (int k = 0; k < c->n_inputs && bad < 3; k++) {
        int64_t n = numel_of(c->ndim[k], c->shape[k]);
        float *analytic = malloc(sizeof(float) * (size_t)(n ? n : 1));
        wgt_tensor *g = wgt_tensor_grad(in[k]);
        if (!g || wgt_tensor_read(g, analytic, sizeof(float) * (size_t)n) != WGT_OK) {
            CHECK(false, "%s/%s: input %d has no gradient", backend, c->name, k);
            free(analytic);
            bad++;
            continue;
        }
        int64_t stride = n > MAX_ELEMS ? n / MAX_ELEMS : 1;
        for (int64_t i = 0; i < n && bad < 3; i += stride) {
            const float h = 1e-2f, saved = host[k][i];
            double l[2];
            for (int side = 0; side < 2; side++) {
                wgt_scope_push(ctx);
                host[k][i] = saved + (side ? -h : h);
                wgt_tensor *probe[MAX_IN];
                for (int j = 0; j < c->n_inputs; j++) probe[j] = in[j];
                probe[k] = wgt_tensor_from_host(ctx, WGT_F32, c->ndim[k], c->shape[k], host[k]);
                l[side] = weighted_loss(ctx, c, probe, &w, NULL);
                wgt_scope_pop(ctx);
            }
            host[k][i] = saved;
            double numeric = (l[0] - l[1]) / (2.0 * h);
            checked++;
            if (!(fabs(numeric - analytic[i]) <= 3e-3 + 3e-2 * fabs(analytic[i]))) {
                bad++;
                CHECK(false, "%s/%s: d/d in%d[%lld]: analytic %.6f, numeric %.6f", backend, c->name, k,
                      (long long)i, analytic[i], numeric);
            }
        }
        free(analytic);
    }
    wgt_no_grad_pop(ctx);
    CHECK(bad == 0 && checked > 0, "%s/%s: %d of %d gradient elements off", backend, c->name, bad, checked);
done:
    for (int k = 0; k < c->n_inputs; k++) free(host[k]);
    wgt_tensor_release(w);
    wgt_scope_pop(ctx);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s/%s: context %s", backend, c->name, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
}

/* ------------------------------------------------------------ the cases */

#define F(name, body) \
    static wgt_tensor *name(wgt_context *ctx, wgt_tensor **in) { (void)ctx; return body; }

F(f_add, wgt_add(in[0], in[1]))
F(f_sub, wgt_sub(in[0], in[1]))
F(f_mul, wgt_mul(in[0], in[1]))
F(f_div, wgt_div(in[0], in[1]))
F(f_pow, wgt_pow(in[0], in[1]))
F(f_maximum, wgt_maximum(in[0], in[1]))
F(f_minimum, wgt_minimum(in[0], in[1]))
F(f_where, wgt_where(wgt_gt(in[0], in[1]), in[0], in[1]))
F(f_scalar, wgt_binary_scalar(WGT_OP_DIV, wgt_binary_scalar(WGT_OP_SUB, in[0], 0.5), 3.0))
F(f_neg, wgt_neg(in[0]))
F(f_abs, wgt_abs(in[0]))
F(f_sign, wgt_add(wgt_sign(in[0]), in[0]))
F(f_exp, wgt_exp(in[0]))
F(f_log, wgt_log(in[0]))
F(f_log1p, wgt_log1p(in[0]))
F(f_sqrt, wgt_sqrt(in[0]))
F(f_rsqrt, wgt_rsqrt(in[0]))
F(f_reciprocal, wgt_reciprocal(in[0]))
F(f_sin, wgt_sin(in[0]))
F(f_cos, wgt_cos(in[0]))
F(f_tanh, wgt_tanh(in[0]))
F(f_sigmoid, wgt_sigmoid(in[0]))
F(f_relu, wgt_relu(in[0]))
F(f_leaky_relu, wgt_leaky_relu(in[0], 0.1))
F(f_elu, wgt_elu(in[0], 0.7))
F(f_gelu, wgt_gelu(in[0]))
F(f_gelu_tanh, wgt_gelu_tanh(in[0]))
F(f_gelu_linear, wgt_gelu_linear(in[0], in[1], in[2]))
F(f_silu, wgt_silu(in[0]))
F(f_softplus, wgt_softplus(in[0]))
F(f_clamp, wgt_clamp(in[0], -0.85, 0.75))
F(f_floor, wgt_add(wgt_floor(in[0]), wgt_mul(in[0], in[0])))
F(f_fused, wgt_fused(ctx, "a * b + sin(c) / (1 + exp(-a))", in, 3))
F(f_erf, wgt_fused(ctx, "erf(a * 1.5)", in, 1))
F(f_broadcast, wgt_mul(in[0], in[1]))
F(f_sum, wgt_sum(in[0], (int[]){1}, 1, false))
F(f_sum_all, wgt_sum(in[0], NULL, 0, true))
F(f_mean, wgt_mean(in[0], (int[]){0, 2}, 2, false))
F(f_max, wgt_max(in[0], (int[]){1}, 1, false))
F(f_min, wgt_min(in[0], (int[]){0}, 1, true))
F(f_prod, wgt_prod(in[0], (int[]){1}, 1, false))
F(f_var, wgt_var(in[0], (int[]){1}, 1, 1, false))
F(f_std, wgt_std(in[0], (int[]){0}, 1, 0, false))
F(f_cumsum, wgt_cumsum(in[0], 1))
F(f_softmax, wgt_softmax(in[0], -1))
F(f_log_softmax, wgt_log_softmax(in[0], 0))
F(f_matmul, wgt_matmul(in[0], in[1]))
F(f_matvec, wgt_matmul(in[0], in[1]))
F(f_copy, wgt_copy(wgt_transpose(in[0], 0, 1)))
F(f_cast, wgt_cast(wgt_cast(in[0], WGT_F16), WGT_F32))
F(f_concat, wgt_concat(in, 2, 1))
F(f_stack, wgt_stack(in, 2, 0))
F(f_pad, wgt_pad(in[0], (int64_t[]){1, 0, 2, 1}, 0.5))
F(f_tril, wgt_tril(in[0], 0))
F(f_triu, wgt_triu(in[0], 1))
F(f_view, wgt_reshape(in[0], 2, (int64_t[]){3, 4}))
F(f_permute, wgt_permute(in[0], (int[]){2, 0, 1}))
F(f_slice, wgt_slice(in[0], 1, 1, 6, 2))
F(f_slice_full, wgt_mul(wgt_slice(in[0], 1, 0, 7, 1), wgt_slice(wgt_exp(in[0]), 0, 0, 3, 1)))
F(f_expand, wgt_expand(in[0], 3, (int64_t[]){2, 3, 4}))
F(f_squeeze, wgt_unsqueeze(wgt_squeeze(in[0], 1), 0))

static wgt_tensor *f_split(wgt_context *ctx, wgt_tensor **in)
{
    wgt_tensor *parts[3];
    if (wgt_split(in[0], 1, (int64_t[]){1, 2, 2}, 3, parts) != WGT_OK) return NULL;
    (void)ctx;
    return wgt_add(wgt_mul(parts[0], parts[0]), wgt_sum(wgt_mul(parts[2], parts[1]), (int[]){1}, 1, true));
}

/* Slices of an intermediate: autograd writes their gradients into windows of
 * one buffer (backward.c). Here two disjoint windows, one overlapping both
 * (added, not written), columns 5..7 read by no slice (zeroed) and the source
 * itself used too (added to the windowed buffer). The engine runs the
 * concat's inputs last first, so the order below makes a and b write windows,
 * then c overlap them, then -h add to the result. */
static wgt_tensor *f_slice_windows(wgt_context *ctx, wgt_tensor **in)
{
    (void)ctx;
    wgt_tensor *h = wgt_mul(in[0], wgt_binary_scalar(WGT_OP_ADD, in[0], 0.5)); /* [3, 8] */
    wgt_tensor *parts[4] = {wgt_neg(h), wgt_slice(h, 1, 1, 3, 1), wgt_slice(h, 1, 2, 5, 1), wgt_slice(h, 1, 0, 2, 1)};
    return wgt_concat(parts, 4, 1);
}

/* q, k, v as gpt.c takes them: slices of a permuted view, so the windowed
 * gradient buffer has the permuted layout; slice 1 is unused (a gap). */
static wgt_tensor *f_slice_heads(wgt_context *ctx, wgt_tensor **in)
{
    (void)ctx;
    wgt_tensor *h = wgt_reshape(wgt_mul(in[0], in[0]), 4, (int64_t[]){2, 3, 3, 2});
    wgt_tensor *heads = wgt_permute(h, (int[]){2, 0, 1, 3}); /* [3, 2, 3, 2] */
    wgt_tensor *q = wgt_reshape(wgt_slice(heads, 0, 0, 1, 1), 3, (int64_t[]){2, 3, 2});
    wgt_tensor *v = wgt_reshape(wgt_slice(heads, 0, 2, 3, 1), 3, (int64_t[]){2, 3, 2});
    return wgt_add(wgt_mul(q, v), q);
}

/* The GPT's attention input: q, k, v views of slices of one [B, T, 3C]
 * intermediate, heads split out (B 2, T 5, H 2, D 2). The engine hands the
 * attention rule their windows of the intermediate's gradient to write into
 * (backward.c, window destinations). */
static void qkv_views(wgt_tensor *x, wgt_tensor **qkv)
{
    wgt_tensor *h = wgt_mul(x, wgt_binary_scalar(WGT_OP_ADD, x, 0.5));
    wgt_tensor *heads = wgt_permute(wgt_reshape(h, 5, (int64_t[]){2, 5, 3, 2, 2}), (int[]){2, 0, 3, 1, 4});
    for (int i = 0; i < 3; i++) qkv[i] = wgt_reshape(wgt_slice(heads, 0, i, i + 1, 1), 4, (int64_t[]){2, 2, 5, 2});
}

/* The heads merged back as gpt.c does: the attention's output gradient
 * arrives as a permuted view, which the engine passes on without a copy. */
static wgt_tensor *f_attention_qkv(wgt_context *ctx, wgt_tensor **in)
{
    (void)ctx;
    wgt_tensor *qkv[3];
    qkv_views(in[0], qkv);
    wgt_tensor *y = wgt_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], true, 0.0, 0);
    return wgt_reshape(wgt_transpose(y, 1, 2), 3, (int64_t[]){2, 5, 4});
}

/* k also read by a second op: its view has two consumers, so k's gradient is
 * summed and copied in as before, while q's and v's go straight in. */
static wgt_tensor *f_attention_qkv_shared(wgt_context *ctx, wgt_tensor **in)
{
    (void)ctx;
    wgt_tensor *qkv[3];
    qkv_views(in[0], qkv);
    return wgt_add(wgt_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], false, 0.0, 0), qkv[1]);
}

static wgt_tensor *index_tensor(wgt_context *ctx, int ndim, const int64_t *shape, const int32_t *values)
{
    return wgt_tensor_from_host(ctx, WGT_I32, ndim, shape, values);
}

static wgt_tensor *f_gather(wgt_context *ctx, wgt_tensor **in)
{
    static const int32_t idx[6] = {2, 0, 2, 1, 3, 3};
    return wgt_gather(in[0], 1, index_tensor(ctx, 2, (int64_t[]){2, 3}, idx));
}

static wgt_tensor *f_index_select(wgt_context *ctx, wgt_tensor **in)
{
    static const int32_t idx[4] = {1, 0, 1, 2};
    return wgt_index_select(in[0], 0, index_tensor(ctx, 1, (int64_t[]){4}, idx));
}

static wgt_tensor *f_embedding(wgt_context *ctx, wgt_tensor **in)
{
    static const int32_t ids[6] = {4, 0, 4, 2, 1, 4};
    return wgt_embedding(in[0], index_tensor(ctx, 2, (int64_t[]){2, 3}, ids));
}

static wgt_tensor *f_scatter_add(wgt_context *ctx, wgt_tensor **in)
{
    static const int32_t idx[6] = {0, 3, 0, 2, 2, 1};
    return wgt_scatter_add(in[0], 1, index_tensor(ctx, 2, (int64_t[]){2, 3}, idx), in[1]);
}

static wgt_tensor *f_topk(wgt_context *ctx, wgt_tensor **in)
{
    wgt_tensor *values, *indices;
    (void)ctx;
    if (wgt_topk(in[0], 3, true, &values, &indices) != WGT_OK) return NULL;
    return values;
}

static const grad_case cases[] = {
    {"add", 2, {2, 2}, {{3, 4}, {3, 4}}, ANY, f_add},
    {"sub", 2, {2, 1}, {{3, 4}, {4}}, ANY, f_sub},
    {"mul", 2, {2, 2}, {{3, 4}, {3, 4}}, ANY, f_mul},
    {"div", 2, {2, 2}, {{3, 4}, {1, 4}}, POSITIVE, f_div},
    {"pow", 2, {2, 2}, {{3, 4}, {3, 4}}, POSITIVE, f_pow},
    {"maximum", 2, {2, 2}, {{3, 4}, {3, 4}}, ANY, f_maximum},
    {"minimum", 2, {2, 2}, {{3, 4}, {3, 4}}, ANY, f_minimum},
    {"where", 2, {2, 2}, {{3, 4}, {3, 4}}, ANY, f_where},
    {"binary_scalar", 1, {2}, {{3, 4}}, ANY, f_scalar},
    {"neg", 1, {2}, {{3, 5}}, ANY, f_neg},
    {"abs", 1, {2}, {{3, 5}}, ANY, f_abs},
    {"sign", 1, {2}, {{3, 5}}, ANY, f_sign},
    {"exp", 1, {2}, {{3, 5}}, ANY, f_exp},
    {"log", 1, {2}, {{3, 5}}, POSITIVE, f_log},
    {"log1p", 1, {2}, {{3, 5}}, POSITIVE, f_log1p},
    {"sqrt", 1, {2}, {{3, 5}}, POSITIVE, f_sqrt},
    {"rsqrt", 1, {2}, {{3, 5}}, POSITIVE, f_rsqrt},
    {"reciprocal", 1, {2}, {{3, 5}}, POSITIVE, f_reciprocal},
    {"sin", 1, {2}, {{3, 5}}, ANY, f_sin},
    {"cos", 1, {2}, {{3, 5}}, ANY, f_cos},
    {"tanh", 1, {2}, {{3, 5}}, ANY, f_tanh},
    {"sigmoid", 1, {2}, {{3, 5}}, ANY, f_sigmoid},
    {"relu", 1, {2}, {{3, 5}}, ANY, f_relu},
    {"leaky_relu", 1, {2}, {{3, 5}}, ANY, f_leaky_relu},
    {"elu", 1, {2}, {{3, 5}}, ANY, f_elu},
    {"gelu", 1, {2}, {{3, 5}}, ANY, f_gelu},
    {"gelu_tanh", 1, {2}, {{3, 5}}, ANY, f_gelu_tanh},
    {"gelu_linear", 3, {3, 2, 1}, {{2, 3, 8}, {5, 8}, {5}}, ANY, f_gelu_linear},
    {"silu", 1, {2}, {{3, 5}}, ANY, f_silu},
    {"softplus", 1, {2}, {{3, 5}}, ANY, f_softplus},
    {"clamp", 1, {2}, {{3, 5}}, SPREAD, f_clamp},
    {"floor", 1, {2}, {{3, 5}}, SPREAD, f_floor},
    {"fused", 3, {2, 1, 2}, {{3, 4}, {4}, {3, 1}}, ANY, f_fused},
    {"erf", 1, {2}, {{3, 5}}, ANY, f_erf},
    {"broadcast", 2, {3, 2}, {{2, 1, 4}, {3, 1}}, ANY, f_broadcast},
    {"sum", 1, {3}, {{2, 3, 4}}, ANY, f_sum},
    {"sum_all", 1, {2}, {{3, 4}}, ANY, f_sum_all},
    {"mean", 1, {3}, {{2, 3, 4}}, ANY, f_mean},
    {"max", 1, {2}, {{3, 7}}, SPREAD, f_max},
    {"min", 1, {2}, {{5, 3}}, SPREAD, f_min},
    {"prod", 1, {2}, {{3, 4}}, ANY, f_prod},
    {"var", 1, {2}, {{3, 5}}, ANY, f_var},
    {"std", 1, {2}, {{4, 3}}, ANY, f_std},
    {"cumsum", 1, {2}, {{3, 5}}, ANY, f_cumsum},
    {"softmax", 1, {2}, {{3, 6}}, ANY, f_softmax},
    {"log_softmax", 1, {2}, {{4, 3}}, ANY, f_log_softmax},
    {"matmul", 2, {3, 2}, {{2, 3, 4}, {4, 5}}, ANY, f_matmul},
    {"matvec", 2, {2, 1}, {{3, 4}, {4}}, ANY, f_matvec},
    {"copy", 1, {2}, {{3, 4}}, ANY, f_copy},
    {"cast", 1, {2}, {{3, 4}}, ANY, f_cast},
    {"concat", 2, {2, 2}, {{2, 3}, {2, 2}}, ANY, f_concat},
    {"stack", 2, {2, 2}, {{2, 3}, {2, 3}}, ANY, f_stack},
    {"split", 1, {2}, {{3, 5}}, ANY, f_split},
    {"pad", 1, {2}, {{2, 3}}, ANY, f_pad},
    {"tril", 1, {2}, {{4, 4}}, ANY, f_tril},
    {"triu", 1, {3}, {{2, 3, 4}}, ANY, f_triu},
    {"view", 1, {3}, {{2, 3, 2}}, ANY, f_view},
    {"permute", 1, {3}, {{2, 3, 4}}, ANY, f_permute},
    {"slice", 1, {2}, {{3, 7}}, ANY, f_slice},
    {"slice_full", 1, {2}, {{3, 7}}, ANY, f_slice_full}, /* whole-axis slices of a leaf and of an intermediate */
    {"slice_windows", 1, {2}, {{3, 8}}, ANY, f_slice_windows},
    {"slice_heads", 1, {3}, {{2, 3, 6}}, ANY, f_slice_heads},
    {"attention_qkv", 1, {3}, {{2, 5, 12}}, ANY, f_attention_qkv},
    {"attention_qkv_shared", 1, {3}, {{2, 5, 12}}, ANY, f_attention_qkv_shared},
    {"expand", 1, {2}, {{3, 1}}, ANY, f_expand},
    {"squeeze", 1, {3}, {{3, 1, 2}}, ANY, f_squeeze},
    {"gather", 1, {2}, {{2, 4}}, ANY, f_gather},
    {"index_select", 1, {2}, {{3, 4}}, ANY, f_index_select},
    {"embedding", 1, {2}, {{5, 3}}, ANY, f_embedding},
    {"scatter_add", 2, {2, 2}, {{2, 4}, {2, 3}}, ANY, f_scatter_add},
    {"topk", 1, {2}, {{3, 6}}, SPREAD, f_topk},
};

/* ------------------------------------------------------- tape behaviour */

static void check_tape_rules(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    float x_host[4] = {1, 2, 3, 4};
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){4}, x_host);
    wgt_tensor_set_requires_grad(x, true);

    /* accumulation over two backwards: d/dx sum(x*x) = 2x, twice -> 4x */
    for (int pass = 0; pass < 2; pass++) {
        wgt_tensor *loss = wgt_sum(wgt_mul(x, x), NULL, 0, false);
        CHECK(wgt_backward(loss) == WGT_OK, "%s: backward %d: %s", backend, pass, wgt_context_error_message(ctx));
    }
    float g[4] = {0};
    wgt_tensor_read(wgt_tensor_grad(x), g, sizeof(g));
    CHECK(g[0] == 4 && g[3] == 16, "%s: accumulated grad %g %g, expected 4 16", backend, g[0], g[3]);

    /* zero_grad clears; a second backward through a freed graph is refused */
    wgt_zero_grad(&x, 1);
    CHECK(wgt_tensor_grad(x) == NULL, "%s: zero_grad left a gradient", backend);
    wgt_tensor *loss = wgt_sum(wgt_exp(x), NULL, 0, false);
    CHECK(wgt_backward(loss) == WGT_OK, "%s: backward", backend);
    CHECK(wgt_backward(loss) == WGT_ERR_INVALID_ARGUMENT, "%s: second backward through a freed graph", backend);
    wgt_context_clear_error(ctx);
    /* keep_graph allows it */
    wgt_tensor *loss2 = wgt_sum(wgt_sin(x), NULL, 0, false);
    CHECK(wgt_backward_ex(loss2, NULL, true) == WGT_OK && wgt_backward_ex(loss2, NULL, false) == WGT_OK,
          "%s: keep_graph: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);

    /* non-scalar loss needs grad_output; grad_output of the wrong shape is refused */
    wgt_tensor *vec = wgt_mul(x, x);
    CHECK(wgt_backward(vec) == WGT_ERR_SHAPE_MISMATCH, "%s: non-scalar loss accepted", backend);
    wgt_context_clear_error(ctx);
    wgt_zero_grad(&x, 1);
    float up[4] = {1, 0, -1, 2};
    wgt_tensor *upstream = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){4}, up);
    CHECK(wgt_backward_ex(vec, upstream, false) == WGT_OK, "%s: explicit grad_output", backend);
    wgt_tensor_read(wgt_tensor_grad(x), g, sizeof(g));
    CHECK(g[0] == 2 && g[1] == 0 && g[2] == -6 && g[3] == 16, "%s: vector-Jacobian product %g %g %g %g", backend,
          g[0], g[1], g[2], g[3]);

    /* no_grad records nothing; detach cuts the tape; ints cannot require grad */
    wgt_no_grad_push(ctx);
    wgt_tensor *quiet = wgt_mul(x, x);
    wgt_no_grad_pop(ctx);
    CHECK(!wgt_tensor_requires_grad(quiet) && !wgt_tensor_requires_grad(wgt_detach(x)), "%s: no_grad/detach", backend);
    CHECK(wgt_backward(wgt_sum(quiet, NULL, 0, false)) == WGT_ERR_INVALID_ARGUMENT, "%s: loss without grad", backend);
    wgt_context_clear_error(ctx);
    wgt_tensor *ids = wgt_zeros(ctx, WGT_I32, 1, (int64_t[]){2});
    CHECK(wgt_tensor_set_requires_grad(ids, true) == WGT_ERR_DTYPE, "%s: i32 requires_grad", backend);
    wgt_context_clear_error(ctx);
    /* in-place writes into the tape are refused, the context stays usable */
    CHECK(wgt_fill(x, 0) == WGT_ERR_INVALID_ARGUMENT, "%s: fill of a leaf accepted", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "fill of a leaf");
    /* a comparison result carries no gradient: backward through it is refused */
    CHECK(wgt_backward(wgt_sum(wgt_cast(wgt_gt(x, x), WGT_F32), NULL, 0, false)) == WGT_ERR_INVALID_ARGUMENT,
          "%s: gradient through a comparison", backend);
    wgt_context_clear_error(ctx);
    wgt_scope_pop(ctx);
}

/* An explicit release, inside a scope, of a tensor a tape node still holds
 * gives up the creator's reference only: the scope's pop must not release it
 * again (it did: a use after free when the consumer's node let go of it). */
static void check_release_inside_scope(wgt_context *ctx, const char *backend)
{
    int64_t before = wgt_context_live_tensors(ctx);
    wgt_scope_push(ctx);
    float host[3] = {0.5f, -1.0f, 2.0f};
    wgt_tensor *a = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){3}, host);
    wgt_tensor_set_requires_grad(a, true);
    wgt_tensor *b = wgt_exp(a);
    wgt_tensor *c = wgt_sum(b, NULL, 0, false); /* c's node holds b */
    wgt_tensor_release(b);                      /* the creator is done with b */
    wgt_tensor_release(a);                      /* ... and with a: b's node and the scope hold it */
    CHECK(wgt_backward(c) == WGT_OK, "%s: backward after early releases: %s", backend, wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
    CHECK(wgt_context_live_tensors(ctx) == before, "%s: live tensors %lld after the scope, %lld before", backend,
          (long long)wgt_context_live_tensors(ctx), (long long)before);
}

/* A product with a constant (dropout's 1/(1-p), a scale) or a division by
 * one needs no operand's value for its gradient, so the node does not keep
 * the operand: releasing it frees its storage at once. x * x keeps x. The
 * gradients are those of the kept-input version: d/dw of sum(3 e^w + e^w / 4
 * + e^w e^w) = 3.25 e^w + 2 e^2w. */
static void check_unread_inputs_freed(wgt_context *ctx, const char *backend)
{
    enum { N = 4096 }; /* 16 KiB: one size class, no rounding */
    wgt_scope_push(ctx);
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)(i % 7) * 0.1f - 0.3f;
    wgt_tensor *w = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){N}, host);
    wgt_tensor_set_requires_grad(w, true);
    wgt_memory_stats m0, m1;
    wgt_tensor *a = wgt_exp(w), *b = wgt_exp(w), *c = wgt_exp(w);
    wgt_memory_stats_get(ctx, &m0);
    wgt_tensor *scaled = wgt_binary_scalar(WGT_OP_MUL, a, 3.0), *divided = wgt_binary_scalar(WGT_OP_DIV, b, 4.0);
    wgt_tensor *square = wgt_mul(c, c);
    wgt_tensor_release(a), wgt_tensor_release(b), wgt_tensor_release(c);
    wgt_memory_stats_get(ctx, &m1);
    /* three results in, a and b out; c stays on square's node */
    CHECK(m1.bytes_in_use == m0.bytes_in_use + N * 4, "%s: a product with a constant kept its operand (%lld bytes "
          "more in use, %d expected)", backend, (long long)(m1.bytes_in_use - m0.bytes_in_use), N * 4);
    wgt_tensor *loss = wgt_add(wgt_add(wgt_sum(scaled, NULL, 0, false), wgt_sum(divided, NULL, 0, false)),
                               wgt_sum(square, NULL, 0, false));
    CHECK(wgt_backward(loss) == WGT_OK, "%s: backward: %s", backend, wgt_context_error_message(ctx));
    float got[N];
    bool ok = wgt_tensor_read(wgt_tensor_grad(w), got, sizeof(got)) == WGT_OK;
    for (int i = 0; ok && i < N; i++) {
        double e = exp((double)host[i]), want = 3.25 * e + 2 * e * e;
        ok = fabs(got[i] - want) <= 1e-5 * fabs(want) + 1e-6;
    }
    CHECK(ok, "%s: gradient through products with constants", backend);
    wgt_scope_pop(ctx);
    wgt_context_clear_error(ctx);
}

/* Popping the scope of a step frees the tape: no tensor outlives it. */
static void check_tape_freed(wgt_context *ctx, const char *backend)
{
    wgt_tensor *w = wgt_randn(ctx, WGT_F32, 2, (int64_t[]){8, 8}, 3);
    wgt_tensor_set_requires_grad(w, true);
    int64_t before = 0;
    for (int step = 0; step < 30; step++) {
        wgt_scope_push(ctx);
        wgt_tensor *x = wgt_randn(ctx, WGT_F32, 2, (int64_t[]){4, 8}, (uint64_t)step);
        wgt_tensor *h = wgt_tanh(wgt_matmul(x, w));
        wgt_tensor *loss = wgt_mean(wgt_mul(h, h), NULL, 0, false);
        wgt_backward(loss);
        wgt_scope_pop(ctx);
        if (step == 2) before = wgt_context_live_tensors(ctx);
    }
    CHECK(wgt_context_live_tensors(ctx) == before, "%s: live tensors grew from %lld to %lld", backend,
          (long long)before, (long long)wgt_context_live_tensors(ctx));
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", backend, wgt_context_error_message(ctx));
    wgt_tensor_release(w);
}

/* Window destinations under keep_graph: two backward passes over one graph
 * accumulate twice the gradient (the retired VIEW and SLICE nodes and the
 * reserved windows are set up afresh by the second pass). */
static void check_attention_windows_twice(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    float host[120], once[120], twice[120];
    for (int i = 0; i < 120; i++) host[i] = (float)((i * 29) % 17) / 8.0f - 1.0f;
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){2, 5, 12}, host);
    wgt_tensor_set_requires_grad(x, true);
    wgt_tensor *in[1] = {x}, *w = NULL, *loss = NULL;
    weighted_loss(ctx, &(grad_case){.name = "attention_qkv", .forward = f_attention_qkv}, in, &w, &loss);
    bool ok = loss && wgt_backward_ex(loss, NULL, true) == WGT_OK &&
              wgt_tensor_read(wgt_tensor_grad(x), once, sizeof(once)) == WGT_OK &&
              wgt_backward_ex(loss, NULL, false) == WGT_OK &&
              wgt_tensor_read(wgt_tensor_grad(x), twice, sizeof(twice)) == WGT_OK;
    CHECK(ok, "%s: attention window destinations, two passes: %s", backend, wgt_context_error_message(ctx));
    /* x's two uses add their parts to .grad one by one: (g + a) + b, not 2 g, so within rounding */
    int off = 0;
    for (int i = 0; ok && i < 120; i++) off += !(fabsf(twice[i] - 2.0f * once[i]) <= 1e-6f * (1.0f + fabsf(once[i])));
    CHECK(ok && off == 0, "%s: the second pass doubles the gradient (%d of 120 elements off)", backend, off);
    wgt_tensor_release(w);
    wgt_scope_pop(ctx);
}

/* The window destinations against the copies they replace
 * (WGT_AUTOGRAD_WINDOW_DEST=0): the same gradient bit for bit, on the CPU,
 * on the WebGPU default kernels (which write strided gradients through
 * temporaries) and on attention_backward_fused (which writes them in place:
 * three copies, dispatches, fewer a backward). */
/* A context of the CPU or the WebGPU backend with env's knobs (test_context_env). */
static wgt_context *knob_context(bool cpu, const char *const *env)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = cpu ? WGT_BACKEND_CPU : WGT_BACKEND_WEBGPU;
    return test_context_env(&o, env);
}

static void check_attention_windows(void)
{
    static const char *const kernels[3] = {"cpu", "webgpu", "webgpu fused"};
    for (int kind = 0; kind < 3; kind++) {
        float grads[2][120];
        uint64_t dispatches[2] = {0, 0};
        bool ok = true;
        for (int off = 0; off < 2 && ok; off++) {
            const char *env[] = {"WGT_AUTOGRAD_WINDOW_DEST", off ? "0" : "1", "WGT_ATTENTION_BACKWARD",
                                 kind == 2 ? "fused" : NULL, NULL};
            wgt_context *ctx = knob_context(kind == 0, env);
            if (!ctx) return;
            wgt_scope_push(ctx);
            float host[120];
            for (int i = 0; i < 120; i++) host[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
            wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){2, 5, 12}, host);
            wgt_tensor_set_requires_grad(x, true);
            wgt_tensor *in[1] = {x}, *w = NULL, *loss = NULL;
            weighted_loss(ctx, &(grad_case){.name = "attention_qkv", .forward = f_attention_qkv}, in, &w, &loss);
            wgt_execution_stats before = {0}, after = {0};
            wgt_execution_stats_get(ctx, &before);
            ok = loss && wgt_backward(loss) == WGT_OK;
            wgt_execution_stats_get(ctx, &after);
            dispatches[off] = after.dispatches - before.dispatches;
            ok = ok && wgt_tensor_grad(x) && wgt_tensor_read(wgt_tensor_grad(x), grads[off], sizeof(grads[off])) == WGT_OK;
            CHECK(ok, "%s attention window destinations (%s): %s", kernels[kind], off ? "off" : "on",
                  wgt_context_error_message(ctx));
            wgt_tensor_release(w);
            wgt_scope_pop(ctx);
            wgt_context_destroy(ctx);
        }
        if (!ok) continue;
        CHECK(memcmp(grads[0], grads[1], sizeof(grads[0])) == 0,
              "%s: the gradient through window destinations equals the copied one bit for bit", kernels[kind]);
        if (kind == 2)
            CHECK(dispatches[0] + 3 == dispatches[1], "webgpu fused: %llu dispatches a backward with window "
                  "destinations, %llu without (3 copies fewer)", (unsigned long long)dispatches[0],
                  (unsigned long long)dispatches[1]);
    }
}

/* Norms whose input's gradient sum the rule adds into in place (backward.c's
 * fold) against the engine's separate add (WGT_AUTOGRAD_FOLD=0), on a
 * residual stream like a transformer's: h1 = a + tanh(layer_norm(a)), h2 =
 * h1 + rms_norm(h1) * 0.5, with a = 1.5 x so the stream is an intermediate.
 * The same gradients bit for bit on both backends, and on WebGPU two add
 * dispatches fewer (one per norm). A second backward in each context gives a
 * a third consumer (the loss reads a too), which must not change the result
 * either. */
static void check_norm_fold(void)
{
    static const char *const kinds[2] = {"cpu", "webgpu"};
    enum { N = 3 * 5 * 24 };
    for (int kind = 0; kind < 2; kind++) {
        float grads[2][2][N], wgrad[2][24];
        uint64_t dispatches[2] = {0, 0};
        bool ok = true;
        for (int off = 0; off < 2 && ok; off++) {
            wgt_context *ctx = knob_context(kind == 0, (const char *[]){"WGT_AUTOGRAD_FOLD", off ? "0" : "1", NULL});
            if (!ctx) return;
            for (int extra = 0; extra < 2 && ok; extra++) {
                wgt_scope_push(ctx);
                float host[N], r[N], wh[24];
                for (int i = 0; i < N; i++) host[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
                for (int i = 0; i < N; i++) r[i] = (float)((i * 13) % 7) / 3.0f - 1.0f;
                for (int i = 0; i < 24; i++) wh[i] = 0.5f + (float)i / 24.0f;
                int64_t shape[3] = {3, 5, 24};
                wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 3, shape, host);
                wgt_tensor *w = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){24}, wh);
                wgt_tensor *rt = wgt_tensor_from_host(ctx, WGT_F32, 3, shape, r);
                wgt_tensor_set_requires_grad(x, true);
                wgt_tensor_set_requires_grad(w, true);
                wgt_tensor *a = wgt_binary_scalar(WGT_OP_MUL, x, 1.5);
                wgt_tensor *h1 = wgt_add(a, wgt_tanh(wgt_layer_norm(a, w, NULL, 1e-5)));
                wgt_tensor *h2 = wgt_add(h1, wgt_binary_scalar(WGT_OP_MUL, wgt_rms_norm(h1, w, 1e-5), 0.5));
                wgt_tensor *loss = wgt_sum(wgt_mul(h2, rt), NULL, 0, false);
                if (extra) loss = wgt_add(loss, wgt_sum(wgt_mul(a, rt), NULL, 0, false));
                wgt_execution_stats before = {0}, after = {0};
                wgt_execution_stats_get(ctx, &before);
                ok = loss && wgt_backward(loss) == WGT_OK;
                wgt_execution_stats_get(ctx, &after);
                if (!extra) dispatches[off] = after.dispatches - before.dispatches;
                ok = ok && wgt_tensor_read(wgt_tensor_grad(x), grads[off][extra], sizeof(grads[off][extra])) == WGT_OK;
                if (!extra) ok = ok && wgt_tensor_read(wgt_tensor_grad(w), wgrad[off], sizeof(wgrad[off])) == WGT_OK;
                CHECK(ok, "%s norm fold (%s, extra reference %d): %s", kinds[kind], off ? "off" : "on", extra,
                      wgt_context_error_message(ctx));
                wgt_scope_pop(ctx);
            }
            wgt_context_destroy(ctx);
        }
        if (!ok) continue;
        CHECK(memcmp(grads[0], grads[1], sizeof(grads[0])) == 0 && memcmp(wgrad[0], wgrad[1], sizeof(wgrad[0])) == 0,
              "%s: gradients with the norms' fold equal the separate adds' bit for bit", kinds[kind]);
        if (kind == 1)
            CHECK(dispatches[0] + 2 == dispatches[1], "webgpu: %llu dispatches a backward with the fold, %llu without "
                  "(2 adds fewer)", (unsigned long long)dispatches[0], (unsigned long long)dispatches[1]);
    }
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    for (int op = 0; op < WGT_OP_COUNT; op++)
        CHECK(wgt_autograd_op_classified((wgt_op)op), "op %s is missing from the autograd rule table",
              wgt_op_name((wgt_op)op));
    wgt_context *contexts[2] = {test_cpu_context(), test_webgpu_context()};
    const char *names[2] = {"cpu", "webgpu"};
    for (int b = 0; b < 2; b++) {
        wgt_context *ctx = contexts[b];
        CHECK(ctx != NULL, "%s context", names[b]);
        if (!ctx) continue;
        int n = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            if (only && strcmp(only, cases[i].name) != 0) continue;
            gradcheck(ctx, names[b], &cases[i]);
            n++;
        }
        printf("%s: %d ops gradient-checked\n", names[b], n);
        if (!only) {
            check_tape_rules(ctx, names[b]);
            check_tape_freed(ctx, names[b]);
            check_release_inside_scope(ctx, names[b]);
            check_unread_inputs_freed(ctx, names[b]);
            check_attention_windows_twice(ctx, names[b]);
        }
        wgt_context_destroy(ctx);
    }
    if (!only) check_attention_windows();
    if (!only) check_norm_fold();
    return test_summary();
}
