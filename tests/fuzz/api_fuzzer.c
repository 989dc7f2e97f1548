/*
 * API fuzzer: random sequences of public calls from a seed, on one backend.
 *
 *   api_fuzzer [--backend cpu|webgpu] [--seed N] [--calls N] [--seconds S] [--verbose]
 *
 * It keeps a pool of live tensors and, call after call, picks an entry point
 * and arguments: valid ones, and invalid ones (bad dtypes, ranks, axes, sizes
 * near INT64_MAX or whose products wrap, NULLs, tensors of other shapes),
 * fused expressions that are broken or nested thousands deep, custom WGSL that
 * is mutated, not UTF-8 or bound wrongly, memory budgets that force eviction,
 * scopes opened and closed out of order. After every call it checks the
 * library's contract:
 *   - a failed call recorded an error, and a call that recorded one failed;
 *   - the message is not empty and names the call ("wgt_...");
 *   - the error clears and the context works again;
 *   - results have sane shapes (numel = product of the sizes, no wrap), and
 *     reads fill exactly the tensor's bytes (canaries after the buffer).
 * Crashes, aborts and memory errors are what the sanitizers catch; run it in
 * the ASan/UBSan build. Exit status 1 on any broken contract, with the call
 * number to replay (same seed, --calls that number, --verbose).
 *
 * Compute runs only on small tensors (<= SMALL_NUMEL elements) and creation of
 * mid-sized shapes is avoided, so a run stays bounded in time and memory; huge
 * shapes go through views (which allocate nothing) and through calls that must
 * refuse them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_text.h"
#include "wgtensor.h"

#define POOL 24
#define SMALL_NUMEL 512
#define P(n) ((int64_t)1 << (n))
#define INV7 ((int64_t)0x6DB6DB6DB6DB6DB7LL) /* 7 * INV7 wraps to 1 */

typedef struct fuzzer {
    wgt_context *ctx;
    uint64_t rng;
    bool webgpu, verbose;
    wgt_tensor *pool[POOL];
    int depth[POOL]; /* scopes open when pool[i] was made: the scope owns it then */
    int scopes;
    long calls, invalid, broken;
    const char *call; /* name of the call in flight, for reports */
    double slowest_s; /* the slowest call, to keep runs bounded */
    long slowest_call;
    const char *slowest_name;
} fuzzer;

static int below(fuzzer *f, int n) { return fuzz_below(&f->rng, n); }
static bool chance(fuzzer *f, int one_in) { return below(f, one_in) == 0; }

static void broken(fuzzer *f, const char *fmt, const char *detail)
{
    f->broken++;
    fprintf(stderr, "BROKEN call #%ld %s: ", f->calls, f->call);
    fprintf(stderr, fmt, detail);
    fprintf(stderr, "\n");
}

/* ------------------------------------------------------------- arguments */

static const int64_t extremes[] = {INT64_MAX, INT64_MIN, INT64_MAX - 1, -1, -2, P(62), P(61), P(60), P(40),
                                   P(32),     P(31),     INV7,          7,  0,  1};

static int64_t extreme(fuzzer *f) { return extremes[below(f, (int)(sizeof extremes / sizeof *extremes))]; }

static int64_t size_arg(fuzzer *f)
{
    int k = below(f, 20);
    if (k < 15) return below(f, 6);
    if (k < 18) return 6 + below(f, 30);
    return extreme(f);
}

static int random_shape(fuzzer *f, int64_t *shape)
{
    int ndim = chance(f, 30) ? (chance(f, 2) ? -1 : 9) : below(f, 5);
    for (int i = 0; i < 9; i++) shape[i] = size_arg(f);
    return ndim;
}

/* Whether allocating shape is bounded: few elements, or so many (or a negative
 * size, or a bad rank) that the library must refuse before allocating. */
static bool allocation_bounded(int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > 8) return true;
    long double n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return true;
        n *= (long double)shape[i];
    }
    return n <= 4096 || n >= 0x1p61L;
}

static wgt_dtype random_dtype(fuzzer *f)
{
    if (chance(f, 25)) return chance(f, 2) ? (wgt_dtype)WGT_DTYPE_COUNT : (wgt_dtype)-1;
    static const wgt_dtype common[] = {WGT_F32, WGT_F32, WGT_F32, WGT_F16, WGT_I32, WGT_U8, WGT_BOOL};
    return common[below(f, (int)(sizeof common / sizeof *common))];
}

static int axis_arg(fuzzer *f, int ndim)
{
    if (chance(f, 12)) return chance(f, 2) ? ndim + below(f, 3) : -(ndim + 1 + below(f, 3));
    int rank = ndim > 0 ? ndim : 1;
    return below(f, 2 * rank) - rank;
}

static int64_t pool_numel(wgt_tensor *t) { return wgt_tensor_numel(t); }

/* A pool tensor (may be NULL when the slot is empty). */
static wgt_tensor *any(fuzzer *f) { return f->pool[below(f, POOL)]; }

/* A pool tensor small enough to compute on, or NULL. It may be empty with
 * huge sizes ([0, 2^40]): fine for ops whose output has no more elements than
 * their inputs (elementwise, scans, casts, concatenation). */
static wgt_tensor *small(fuzzer *f)
{
    for (int tries = 0; tries < 8; tries++) {
        wgt_tensor *t = any(f);
        if (t && pool_numel(t) <= SMALL_NUMEL) return t;
    }
    return NULL;
}

/* A small tensor whose sizes are all small too: for ops whose output can have
 * more elements than their input (a reduction over the empty dim, matmul, pad,
 * index_select), which would turn an empty [2^31, 0] into a real allocation of
 * gigabytes. */
static wgt_tensor *tame(fuzzer *f)
{
    for (int tries = 0; tries < 8; tries++) {
        wgt_tensor *t = small(f);
        bool ok = t != NULL;
        for (int d = 0; ok && d < wgt_tensor_ndim(t); d++) ok = wgt_tensor_shape(t)[d] <= 64;
        if (ok) return t;
    }
    return NULL;
}

/* ---------------------------------------------------------------- checks */

static void check_result(fuzzer *f, wgt_tensor *t)
{
    int ndim = wgt_tensor_ndim(t);
    if (ndim < 0 || ndim > 8) {
        broken(f, "result has rank %s", ndim < 0 ? "< 0" : "> 8");
        return;
    }
    const int64_t *shape = wgt_tensor_shape(t);
    int64_t product = 1;
    bool zero = false, wrapped = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) broken(f, "result has a negative size%s", "");
        if (shape[i] == 0) zero = true;
        else if (__builtin_mul_overflow(product, shape[i], &product)) wrapped = true;
    }
    if (zero) product = 0;
    if (wrapped && !zero) broken(f, "result's element count overflows int64%s", "");
    else if (product != wgt_tensor_numel(t)) broken(f, "numel differs from the product of the sizes%s", "");
}

/* Bookkeeping after each call: the contract of statuses and messages. */
static void after(fuzzer *f, bool failed)
{
    f->calls++;
    wgt_status s = wgt_context_status(f->ctx);
    const char *msg = wgt_context_error_message(f->ctx);
    if (f->verbose) fprintf(stderr, "#%ld %s -> %s %s\n", f->calls, f->call, wgt_status_string(s), msg);
    if (s == WGT_OK) {
        if (failed) broken(f, "failed without recording an error%s", "");
        return;
    }
    f->invalid++;
    if (!failed) broken(f, "recorded an error but reported success: %s", msg);
    if (strncmp(msg, "wgt_", 4) != 0) broken(f, "message does not name the call: \"%s\"", msg);
    if (s == WGT_ERR_INTERNAL || s == WGT_ERR_DEVICE_LOST) broken(f, "internal error or device lost: %s", msg);
    if (wgt_context_clear_error(f->ctx) != WGT_OK) broken(f, "the error does not clear: %s", msg);
}

/* Puts t (a fresh result) into the pool, checking it first. A tensor made
 * inside a scope is the scope's: popping it drops the pool's entries of that
 * depth; releasing one early (replacing its slot) also takes it out of the scope. */
static void adopt(fuzzer *f, wgt_tensor *t)
{
    if (!t) return;
    check_result(f, t);
    int slot = below(f, POOL);
    wgt_tensor_release(f->pool[slot]);
    f->pool[slot] = t;
    f->depth[slot] = f->scopes;
}

/* A call returning a tensor: adopt it; NULL means failure. */
static void tensor_call(fuzzer *f, const char *name, wgt_tensor *result)
{
    f->call = name;
    after(f, result == NULL);
    adopt(f, result);
}

static void status_call(fuzzer *f, const char *name, wgt_status s)
{
    f->call = name;
    after(f, s != WGT_OK);
}

/* ------------------------------------------------------------ the calls */

static void call_create(fuzzer *f)
{
    int64_t shape[9];
    int ndim = random_shape(f, shape);
    if (!allocation_bounded(ndim, shape)) ndim = 1, shape[0] = below(f, 64);
    wgt_dtype dtype = random_dtype(f);
    switch (below(f, 9)) {
    case 0: tensor_call(f, "wgt_zeros", wgt_zeros(f->ctx, dtype, ndim, shape)); break;
    case 1: tensor_call(f, "wgt_full", wgt_full(f->ctx, dtype, ndim, shape, chance(f, 4) ? NAN : 3.5)); break;
    case 2: tensor_call(f, "wgt_rand", wgt_rand(f->ctx, dtype, ndim, shape, fuzz_next(&f->rng))); break;
    case 3: tensor_call(f, "wgt_randn", wgt_randn(f->ctx, dtype, ndim, shape, fuzz_next(&f->rng))); break;
    case 4: tensor_call(f, "wgt_tensor_empty", wgt_tensor_empty(f->ctx, dtype, ndim, shape)); break;
    case 5: {
        static const double edges[] = {0, 1, -1, 0.5, 100, 1e300, -1e300, 1e19, INFINITY, NAN, 1e-300};
        double a = edges[below(f, 11)], b = edges[below(f, 11)], c = edges[below(f, 11)];
        double count = c != 0 ? (b - a) / c : 0; /* only bounded counts, or ones it must refuse */
        if (isfinite(count) && count > 4096 && count < 4e18) b = a;
        tensor_call(f, "wgt_arange", wgt_arange(f->ctx, dtype, a, b, c));
        break;
    }
    case 6: {
        int64_t n = chance(f, 3) ? extreme(f) : below(f, 40);
        if (n > 4096 && n < P(61)) n = 4096;
        tensor_call(f, "wgt_linspace", wgt_linspace(f->ctx, dtype, 0, 1, n));
        break;
    }
    case 7: {
        int64_t n = size_arg(f), m = size_arg(f);
        if (!allocation_bounded(2, (int64_t[]){n, m})) n = m = 3;
        tensor_call(f, "wgt_eye", wgt_eye(f->ctx, dtype, n, m));
        break;
    }
    default: {
        float data[4096];
        for (int i = 0; i < 4096; i++) data[i] = (float)below(f, 7) - 3;
        /* data holds 4096 floats: only f32/i32 shapes of at most that many elements read it */
        bool fits = allocation_bounded(ndim, shape) && (dtype == WGT_F32 || dtype == WGT_I32);
        if (!fits) dtype = WGT_F32, ndim = 1, shape[0] = 8;
        tensor_call(f, "wgt_tensor_from_host",
                    wgt_tensor_from_host(f->ctx, dtype, ndim, shape, chance(f, 20) ? NULL : data));
        break;
    }
    }
}

static void call_view(fuzzer *f)
{
    wgt_tensor *t = any(f);
    if (!t) return;
    int64_t shape[9];
    int ndim = random_shape(f, shape);
    int n = wgt_tensor_ndim(t);
    switch (below(f, 10)) {
    case 0:
        if (chance(f, 3) && ndim > 0) shape[below(f, ndim)] = -1;
        tensor_call(f, "wgt_view", wgt_view(t, ndim, shape));
        break;
    case 1: /* reshape may copy: only small tensors */
        if (pool_numel(t) > SMALL_NUMEL) return;
        if (chance(f, 3) && ndim > 0) shape[below(f, ndim)] = -1;
        tensor_call(f, "wgt_reshape", wgt_reshape(t, ndim, shape));
        break;
    case 2: {
        int perm[8];
        for (int i = 0; i < 8; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = below(f, i + 1), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        if (chance(f, 6) && n > 0) perm[below(f, n)] = axis_arg(f, n);
        tensor_call(f, "wgt_permute", wgt_permute(t, perm));
        break;
    }
    case 3: tensor_call(f, "wgt_transpose", wgt_transpose(t, axis_arg(f, n), axis_arg(f, n))); break;
    case 4: {
        int64_t start = chance(f, 4) ? extreme(f) : below(f, 6) - 2;
        int64_t stop = chance(f, 4) ? extreme(f) : below(f, 8) - 2;
        int64_t step = chance(f, 4) ? extreme(f) : 1 + below(f, 3);
        tensor_call(f, "wgt_slice", wgt_slice(t, axis_arg(f, n), start, stop, step));
        break;
    }
    case 5: {
        /* mostly a valid broadcast of t, sometimes to extreme sizes */
        int m = n + below(f, 3);
        if (m > 8) m = 8;
        const int64_t *ts = wgt_tensor_shape(t);
        for (int i = 0; i < m; i++) {
            int j = i - (m - n);
            shape[i] = j >= 0 && !chance(f, 3) ? (ts[j] == 1 && chance(f, 2) ? size_arg(f) : ts[j]) : size_arg(f);
            if (chance(f, 10)) shape[i] = -1;
        }
        tensor_call(f, "wgt_expand", wgt_expand(t, chance(f, 15) ? ndim : m, shape));
        break;
    }
    case 6: tensor_call(f, "wgt_squeeze", wgt_squeeze(t, axis_arg(f, n))); break;
    case 7: tensor_call(f, "wgt_unsqueeze", wgt_unsqueeze(t, axis_arg(f, n + 1))); break;
    case 8:
        if (pool_numel(t) > SMALL_NUMEL && !wgt_tensor_is_contiguous(t)) return;
        tensor_call(f, "wgt_contiguous", wgt_contiguous(t));
        break;
    default:
        if (pool_numel(t) > SMALL_NUMEL) return;
        tensor_call(f, "wgt_copy", wgt_copy(t));
        break;
    }
}

static void call_compute(fuzzer *f)
{
    int which = below(f, 24);
    /* reductions (an empty [2^31, 0] summed over dim 1 is 2^31 zeros), matmul,
     * pad and index_select: outputs can be larger than their inputs */
    bool sizes_add_up = which == 4 || which == 5 || which == 8 || which == 12 || which == 14;
    wgt_tensor *a = sizes_add_up ? tame(f) : small(f), *b = sizes_add_up ? tame(f) : small(f), *c = small(f);
    if (!a) return;
    int n = wgt_tensor_ndim(a);
    int axes[3] = {axis_arg(f, n), axis_arg(f, n), axis_arg(f, n)};
    switch (which) {
    case 0: tensor_call(f, "wgt_binary", wgt_binary((wgt_op)below(f, 17), a, b ? b : a)); break;
    case 1: tensor_call(f, "wgt_unary", wgt_unary((wgt_op)(WGT_OP_NEG + below(f, 28)), a)); break;
    case 2: tensor_call(f, "wgt_binary_scalar", wgt_binary_scalar((wgt_op)below(f, 17), a, chance(f, 3) ? 1e39 : 2)); break;
    case 3: tensor_call(f, "wgt_where", wgt_where(a, b ? b : a, c ? c : a)); break;
    case 4: tensor_call(f, "wgt_reduce", wgt_reduce((wgt_op)(WGT_OP_SUM + below(f, 7)), a, axes, below(f, 4), chance(f, 2))); break;
    case 5: tensor_call(f, "wgt_argmax", wgt_argmax(a, axes[0], chance(f, 2))); break;
    case 6: tensor_call(f, "wgt_cumsum", wgt_cumsum(a, axes[0])); break;
    case 7: tensor_call(f, "wgt_softmax", wgt_softmax(a, axes[0])); break;
    case 8: { /* products at either matmul precision (an unknown one is ignored), mixed dtypes, quantized */
        static const wgt_matmul_precision precisions[3] = {WGT_MATMUL_PRECISION_HIGHEST, WGT_MATMUL_PRECISION_MEDIUM,
                                                           (wgt_matmul_precision)7};
        wgt_set_matmul_precision(wgt_tensor_context(a), precisions[below(f, 3)]);
        int kind = below(f, 4);
        if (kind == 0) tensor_call(f, "wgt_matmul_ex", wgt_matmul_ex(a, b ? b : a, random_dtype(f)));
        else if (kind == 1) tensor_call(f, "wgt_qlinear", wgt_qlinear(a, b ? b : a, c ? c : a, chance(f, 2) ? 8 : 4));
        else if (kind == 2 && chance(f, 2)) { /* the fusions (int8 x at MEDIUM: the norm's row quantized) */
            const wgt_qlinear_fusion fu = {.norm_weight = chance(f, 2) ? c : NULL,
                                           .norm_eps = chance(f, 8) ? -1.0 : 1e-5,
                                           .bias = chance(f, 3) ? a : NULL, .swiglu = chance(f, 2)};
            tensor_call(f, "wgt_qlinear_ex", wgt_qlinear_ex(a, b ? b : a, c ? c : a, chance(f, 2) ? 8 : 4, &fu));
        } else tensor_call(f, "wgt_matmul", wgt_matmul(a, b ? b : a));
        break;
    }
    case 9: tensor_call(f, "wgt_cast", wgt_cast(a, random_dtype(f))); break;
    case 10: {
        wgt_tensor *parts[4] = {a, b ? b : a, c ? c : a, a};
        int k = chance(f, 10) ? 0 : 1 + below(f, 4);
        bool concat = chance(f, 2);
        if (k == 0) { /* no tensor: no context to record an error on, by contract */
            f->call = concat ? "wgt_concat of none" : "wgt_stack of none";
            f->calls++;
            f->invalid++;
            if (concat ? wgt_concat(parts, 0, 0) != NULL : wgt_stack(parts, 0, 0) != NULL)
                broken(f, "returned a tensor for no inputs%s", "");
        } else if (concat) {
            tensor_call(f, "wgt_concat", wgt_concat(parts, k, axes[0]));
        } else {
            tensor_call(f, "wgt_stack", wgt_stack(parts, k, axes[0]));
        }
        break;
    }
    case 11: {
        int64_t sizes[4] = {size_arg(f), size_arg(f), size_arg(f), size_arg(f)};
        wgt_tensor *out[4] = {NULL, NULL, NULL, NULL};
        int k = 1 + below(f, 4);
        if (n > 0 && chance(f, 2)) { /* often sizes that add up */
            int ax = axes[0] < 0 ? axes[0] + n : axes[0];
            if (ax >= 0 && ax < n) {
                int64_t left = wgt_tensor_shape(a)[ax];
                for (int i = 0; i < k - 1; i++) sizes[i] = left > 0 ? below(f, (int)left + 1) : 0, left -= sizes[i];
                sizes[k - 1] = left;
            }
        }
        wgt_status s = wgt_split(a, axes[0], sizes, k, out);
        status_call(f, "wgt_split", s);
        if (s == WGT_OK)
            for (int i = 0; i < k; i++) adopt(f, out[i]);
        break;
    }
    case 12: {
        int64_t pads[16];
        for (int i = 0; i < 16; i++) pads[i] = chance(f, 8) ? extreme(f) : below(f, 3);
        for (int i = 0; i < 2 * n; i++) /* a bounded output, or one that must be refused */
            if (pads[i] > 64 && pads[i] < P(61)) pads[i] = 2;
        tensor_call(f, "wgt_pad", wgt_pad(a, pads, 1.5));
        break;
    }
    case 13: tensor_call(f, "wgt_gather", wgt_gather(a, axes[0], b ? b : a)); break;
    case 14: tensor_call(f, "wgt_index_select", wgt_index_select(a, axes[0], b ? b : a)); break;
    case 15: {
        int64_t classes = chance(f, 4) ? extreme(f) : below(f, 6);
        if (classes > 64 && classes <= INT32_MAX) classes = 5;
        tensor_call(f, "wgt_one_hot", wgt_one_hot(a, classes, random_dtype(f)));
        break;
    }
    case 16: {
        wgt_tensor *v = NULL, *i = NULL;
        wgt_status s = wgt_topk(a, chance(f, 4) ? extreme(f) : below(f, 4), chance(f, 2), &v, &i);
        status_call(f, "wgt_topk", s);
        adopt(f, v);
        adopt(f, i);
        break;
    }
    case 17: {
        int64_t k = chance(f, 4) ? extreme(f) : below(f, 5) - 2;
        if (chance(f, 2)) tensor_call(f, "wgt_tril", wgt_tril(a, k));
        else tensor_call(f, "wgt_triu", wgt_triu(a, k));
        break;
    }
    case 18: status_call(f, "wgt_assign", wgt_assign(a, b ? b : a)); break;
    case 19: status_call(f, "wgt_fill", wgt_fill(a, chance(f, 3) ? INFINITY : -2)); break;
    case 20: tensor_call(f, "wgt_layer_norm", wgt_layer_norm(a, b, c, chance(f, 4) ? -1 : 1e-5)); break;
    case 21: { /* the decode rope projections: pool tensors in every role, pass ranges in and out of range */
        wgt_tensor *t = small(f), *dst = small(f), *w = small(f);
        int64_t pb = chance(f, 4) ? extreme(f) : below(f, 3), pe = chance(f, 4) ? extreme(f) : below(f, 4);
        if (chance(f, 2))
            status_call(f, "wgt_rms_norm_linear_rope_into",
                        wgt_rms_norm_linear_rope_into(dst ? dst : a, a, b ? b : a, chance(f, 4) ? -1 : 1e-5,
                                                      c ? c : a, t ? t : a, pb, pe));
        else
            status_call(f, "wgt_qlinear_rope_into",
                        wgt_qlinear_rope_into(dst ? dst : a, a, b ? b : a, c ? c : a, chance(f, 2) ? 4 : 3,
                                              t ? t : a, 1e-5, w ? w : a, pb, pe));
        break;
    }
    case 22: { /* the decode fusions of the GEMVs, and the attention with its projection (float or 8-bit
                * keys and values): pool tensors in every role, NULL biases, bad bit widths */
        const int kind = below(f, 4);
        wgt_tensor *d = small(f), *e = small(f), *g = small(f), *h = small(f);
        if (kind == 0) {
            tensor_call(f, "wgt_rms_norm_linear_ex",
                        wgt_rms_norm_linear_ex(a, b ? b : a, 1e-5, c ? c : a, random_dtype(f), chance(f, 2)));
        } else if (kind == 1) {
            tensor_call(f, "wgt_linear_swiglu_ex", wgt_linear_swiglu_ex(a, b ? b : a, random_dtype(f)));
        } else if (kind == 2 && chance(f, 2)) {
            tensor_call(f, "wgt_attention_linear_ex",
                        wgt_attention_linear_ex(a, b ? b : a, c ? c : a, chance(f, 2), d ? d : a, chance(f, 2) ? e : NULL,
                                                random_dtype(f)));
        } else if (kind == 2) {
            tensor_call(f, "wgt_attention_qlinear_ex",
                        wgt_attention_qlinear_ex(a, b ? b : a, c ? c : a, chance(f, 2), d ? d : a, e ? e : a,
                                                 chance(f, 2) ? 4 : 3, chance(f, 2) ? g : NULL));
        } else if (chance(f, 2)) {
            tensor_call(f, "wgt_attention_q8_linear_ex",
                        wgt_attention_q8_linear_ex(a, b ? b : a, c ? c : a, d ? d : a, e ? e : a, chance(f, 2),
                                                   g ? g : a, chance(f, 2) ? h : NULL, random_dtype(f)));
        } else {
            tensor_call(f, "wgt_attention_q8_qlinear_ex",
                        wgt_attention_q8_qlinear_ex(a, b ? b : a, c ? c : a, d ? d : a, e ? e : a, chance(f, 2),
                                                    g ? g : a, h ? h : a, chance(f, 2) ? 8 : 5, chance(f, 2) ? b : NULL));
        }
        break;
    }
    default: tensor_call(f, "wgt_dropout", wgt_dropout(a, chance(f, 4) ? 1.5 : 0.25, fuzz_next(&f->rng))); break;
    }
}

static void call_fused(fuzzer *f)
{
    wgt_tensor *in[4] = {small(f), small(f), small(f), small(f)};
    int n = below(f, 5);
    for (int i = 0; i < n; i++)
        if (!in[i]) n = i;
    int n_params = chance(f, 3) ? below(f, 18) : 0;
    double params[18];
    for (int i = 0; i < 18; i++) params[i] = (double)below(f, 100) / 7.0;
    char *expr = fuzz_expression(&f->rng, n, n_params);
    if (!expr) return;
    if (n_params > 0 || chance(f, 10))
        tensor_call(f, "wgt_fused_params", wgt_fused_params(f->ctx, expr, in, n, params, n_params));
    else
        tensor_call(f, "wgt_fused", wgt_fused(f->ctx, chance(f, 50) ? NULL : expr, in, n));
    free(expr);
}

static void call_custom_kernel(fuzzer *f)
{
    wgt_tensor *buffers[8];
    int n = below(f, 4);
    for (int i = 0; i < n; i++) {
        buffers[i] = small(f);
        if (!buffers[i]) return;
    }
    if (n > 1 && chance(f, 6)) buffers[1] = buffers[0]; /* the same tensor bound twice */
    bool read_only[8] = {false};
    for (int i = 0; i < n; i++) read_only[i] = chance(f, 4);
    int uniform = chance(f, 3);
    float u[2] = {2, 3};
    char *wgsl = fuzz_wgsl(&f->rng, n, uniform);
    if (!wgsl) return;
    char long_entry[300];
    memset(long_entry, 'm', sizeof long_entry - 1);
    long_entry[sizeof long_entry - 1] = 0;
    wgt_custom_kernel k = {0};
    k.wgsl = wgsl;
    k.entry_point = chance(f, 12) ? long_entry : chance(f, 12) ? "nope" : "main";
    k.buffers = buffers;
    k.read_only = chance(f, 2) ? read_only : NULL;
    k.n_buffers = n;
    k.uniform = uniform ? u : NULL;
    k.uniform_size = uniform ? (chance(f, 6) ? 4 : sizeof u) : 0;
    for (int d = 0; d < 3; d++) k.workgroups[d] = chance(f, 10) ? (uint32_t)fuzz_next(&f->rng) : (uint32_t)(d == 0 ? 1 + below(f, 4) : 1);
    status_call(f, "wgt_custom_kernel_run", wgt_custom_kernel_run(f->ctx, &k));
    free(wgsl);
}

static void call_runtime(fuzzer *f)
{
    switch (below(f, 9)) {
    case 0: {
        static const uint64_t budgets[] = {0, 1, 4096, 65536, 1 << 20, 16 << 20, UINT64_MAX};
        status_call(f, "wgt_memory_set_budget", wgt_memory_set_budget(f->ctx, budgets[below(f, 7)]));
        break;
    }
    case 1: status_call(f, "wgt_memory_trim", wgt_memory_trim(f->ctx)); break;
    case 2: status_call(f, "wgt_synchronize", wgt_synchronize(f->ctx)); break;
    case 3:
        if (f->scopes < 6 && wgt_scope_push(f->ctx) == WGT_OK) f->scopes++;
        f->call = "wgt_scope_push";
        after(f, false);
        break;
    case 4: {
        /* Pop one scope: its tensors lose the scope's reference, the pool keeps its own. */
        wgt_status s = wgt_scope_pop(f->ctx);
        if (f->scopes > 0) {
            for (int i = 0; i < POOL; i++)
                if (f->depth[i] >= f->scopes) f->pool[i] = NULL; /* freed by the pop */
            f->scopes--;
        }
        status_call(f, "wgt_scope_pop", s);
        break;
    }
    case 5: {
        /* Keep one tensor past its scope: it moves to the enclosing one. */
        int slot = below(f, POOL);
        if (!f->pool[slot]) return;
        wgt_scope_keep(f->pool[slot]);
        if (f->depth[slot] > 0) f->depth[slot]--;
        f->call = "wgt_scope_keep";
        after(f, false);
        break;
    }
    default: {
        /* Read back into a buffer with canaries after the tensor's bytes. */
        wgt_tensor *t = small(f);
        if (!t) return;
        static const size_t dsize[] = {4, 2, 4, 1, 1}; /* f32 f16 i32 u8 bool */
        int dt = wgt_tensor_dtype(t);
        size_t need = (size_t)pool_numel(t) * (dt >= 0 && dt < 5 ? dsize[dt] : 4);
        size_t give = chance(f, 5) && need > 0 ? need - 1 : need;
        unsigned char *buf = malloc(give + 64);
        if (!buf) return;
        memset(buf, 0xCD, give + 64);
        wgt_status s = wgt_tensor_read(t, buf, give);
        status_call(f, "wgt_tensor_read", s);
        for (size_t i = give; i < give + 64; i++)
            if (buf[i] != 0xCD) {
                broken(f, "wgt_tensor_read wrote past the bytes it was given%s", "");
                break;
            }
        if (s == WGT_OK && give < need) broken(f, "wgt_tensor_read accepted a buffer too small%s", "");
        free(buf);
        break;
    }
    }
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    fuzzer f = {0};
    uint64_t seed = 1;
    long max_calls = 10000;
    double seconds = 0;
    const char *backend = "cpu";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) max_calls = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--verbose")) f.verbose = true;
        else {
            fprintf(stderr, "usage: %s [--backend cpu|webgpu] [--seed N] [--calls N] [--seconds S] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    f.webgpu = strcmp(backend, "webgpu") == 0;
    f.rng = seed;
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = f.webgpu ? WGT_BACKEND_WEBGPU : WGT_BACKEND_CPU;
    o.debug_guards = seed % 2 == 0; /* guard bytes around every tensor on even seeds */
    f.ctx = wgt_context_create(&o);
    if (!f.ctx || wgt_context_status(f.ctx) != WGT_OK) {
        fprintf(stderr, "cannot create a %s context: %s\n0 passed, 1 failed\n", backend,
                f.ctx ? wgt_context_error_message(f.ctx) : "out of memory");
        wgt_context_destroy(f.ctx);
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double last = 0;
    while (f.calls < max_calls) {
        long before = f.calls;
        int k = below(&f, 100);
        if (k < 22) call_create(&f);
        else if (k < 45) call_view(&f);
        else if (k < 75) call_compute(&f);
        else if (k < 85) call_fused(&f);
        else if (k < 90) call_custom_kernel(&f);
        else call_runtime(&f);
        clock_gettime(CLOCK_MONOTONIC, &t);
        double elapsed = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        if (f.calls > before && elapsed - last > f.slowest_s) {
            f.slowest_s = elapsed - last;
            f.slowest_call = f.calls;
            f.slowest_name = f.call;
        }
        last = elapsed;
        if (seconds > 0 && elapsed > seconds) break;
    }
    /* Everything released: no tensor may be left behind. */
    for (; f.scopes > 0; f.scopes--) {
        wgt_context_clear_error(f.ctx);
        wgt_scope_pop(f.ctx);
        for (int i = 0; i < POOL; i++)
            if (f.depth[i] >= f.scopes) f.pool[i] = NULL;
    }
    wgt_context_clear_error(f.ctx);
    for (int i = 0; i < POOL; i++) wgt_tensor_release(f.pool[i]);
    int64_t live = wgt_context_live_tensors(f.ctx);
    f.call = "(end)";
    if (live != 0) broken(&f, "tensors left alive after releasing every handle%s", "");
    wgt_context_destroy(f.ctx);
    clock_gettime(CLOCK_MONOTONIC, &t);
    printf("api_fuzzer backend=%s seed=%llu: %ld calls, %ld invalid (refused with an error), %ld broken contracts, "
           "%.1f s\n",
           backend, (unsigned long long)seed, f.calls, f.invalid, f.broken,
           (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec));
    if (f.slowest_name) printf("slowest: call #%ld %s, %.3f s\n", f.slowest_call, f.slowest_name, f.slowest_s);
    printf("%ld passed, %ld failed\n", f.calls - f.broken, f.broken);
    return f.broken == 0 ? 0 : 1;
}
