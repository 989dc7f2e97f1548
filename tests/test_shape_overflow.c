/* Shape arithmetic near INT64_MAX (issue 9, defects 9 and 10), on the CPU and
 * WebGPU backends. Each case is one that failed before src/core/checked.h:
 * some returned WGT_OK with a wrapped shape (the checks marked "wrapped"), some
 * crashed or are signed overflows that only UBSan reports (marked "UBSan": the
 * ASan/UBSan run of CI halts on them). Every refusal must name the call and
 * leave the context usable. */
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/internal.h"
#include "test_util.h"

#define P40 ((int64_t)1 << 40)
#define P31 ((int64_t)1 << 31)
/* 7 * INV7 == 1 (mod 2^64) and both are positive int64: a shape {7, INV7}
 * has a product that wraps to exactly 1, so unchecked arithmetic calls it a
 * 1-element shape. */
#define INV7 ((int64_t)0x6DB6DB6DB6DB6DB7LL)

/* The call returned failure, the context holds one of the two statuses and
 * its message names call (and needle, if given); then clear and recover. */
static void expect_refused(wgt_context *ctx, bool failed, wgt_status status, wgt_status or_status, const char *call,
                           const char *needle, const char *what)
{
    wgt_status got = wgt_context_status(ctx);
    const char *msg = wgt_context_error_message(ctx);
    CHECK(failed, "%s: the call did not fail (status %s)", what, wgt_status_string(got));
    CHECK(got == status || got == or_status, "%s: status %s (%s)", what, wgt_status_string(got), msg);
    CHECK(strstr(msg, call) != NULL, "%s: message does not name %s: \"%s\"", what, call, msg);
    if (needle) CHECK(strstr(msg, needle) != NULL, "%s: message lacks \"%s\": \"%s\"", what, needle, msg);
    check_error_and_recover(ctx, got, what);
}

static void expect_ok(wgt_context *ctx, const char *what)
{
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", what, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
}

/* f32 [n] holding 0, 1, ..., n-1. */
static wgt_tensor *iota(wgt_context *ctx, int64_t n)
{
    float v[64];
    for (int64_t i = 0; i < n; i++) v[i] = (float)i;
    return wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
}

static void check_values(wgt_tensor *t, const float *want, int n, const char *what)
{
    float got[16] = {0};
    wgt_status s = t ? wgt_tensor_read(t, got, sizeof(float) * (size_t)n) : WGT_ERR_INVALID_ARGUMENT;
    CHECK(s == WGT_OK, "%s: read failed", what);
    for (int i = 0; s == WGT_OK && i < n; i++) CHECK(got[i] == want[i], "%s: [%d] = %g, want %g", what, i, got[i], want[i]);
}

static void empty_shapes(wgt_context *ctx)
{
    /* {0, 2^40, 2^40} has 0 elements; its outer stride 2^80 does not fit (UBSan). */
    int64_t s0[3] = {0, P40, P40}, s1[3] = {P40, P40, 0};
    wgt_tensor *z = wgt_zeros(ctx, WGT_F32, 3, s0);
    expect_ok(ctx, "zeros {0, 2^40, 2^40}");
    CHECK(z && wgt_tensor_numel(z) == 0, "zeros {0, 2^40, 2^40}: numel %lld", (long long)wgt_tensor_numel(z));
    /* The same with the 0 last: was refused as "too large" (OUT_OF_MEMORY). */
    wgt_tensor *z1 = wgt_zeros(ctx, WGT_F32, 3, s1);
    expect_ok(ctx, "zeros {2^40, 2^40, 0}");
    CHECK(z1 && wgt_tensor_numel(z1) == 0, "zeros {2^40, 2^40, 0}: numel %lld", (long long)wgt_tensor_numel(z1));
    if (z) {
        /* offset start * stride = 2^39 * 2^40 (UBSan) */
        wgt_tensor *s = wgt_slice(z, 1, P40 / 2, P40, 3);
        expect_ok(ctx, "slice of an empty tensor");
        CHECK(s && wgt_tensor_dim(s, 1) == (P40 / 2 + 2) / 3, "slice of an empty tensor: dim %lld",
              (long long)wgt_tensor_dim(s, 1));
        wgt_tensor_release(s);
        /* stride 2^40 * 2^40 of the new axis (UBSan) */
        wgt_tensor *u = wgt_unsqueeze(z, 1);
        expect_ok(ctx, "unsqueeze of an empty tensor");
        CHECK(u && wgt_tensor_ndim(u) == 4 && wgt_tensor_numel(u) == 0, "unsqueeze of an empty tensor");
        wgt_tensor_release(u);
        wgt_tensor *pair[2] = {z, z};
        wgt_tensor *st = wgt_stack(pair, 2, 1);
        expect_ok(ctx, "stack of empty tensors");
        CHECK(st && wgt_tensor_dim(st, 1) == 2 && wgt_tensor_numel(st) == 0, "stack of empty tensors");
        wgt_tensor_release(st);
        int64_t flat = -1, zero_by_any[2] = {0, -1};
        wgt_tensor *r = wgt_reshape(z, 1, &flat);
        expect_ok(ctx, "reshape of an empty tensor to {-1}");
        CHECK(r && wgt_tensor_dim(r, 0) == 0, "reshape of an empty tensor to {-1}: dim %lld", (long long)wgt_tensor_dim(r, 0));
        wgt_tensor_release(r);
        r = wgt_reshape(z, 2, zero_by_any);
        CHECK(!r && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH, "reshape of 0 elements to {0, -1} is ambiguous");
        wgt_context_clear_error(ctx);
        wgt_tensor_release(r);
        wgt_tensor *c = wgt_contiguous(z);
        expect_ok(ctx, "contiguous of an empty tensor");
        wgt_tensor_release(c);
        /* reductions of empty views whose dims' strides x sizes do not fit
         * (the CPU walk's merge of dims, found by the api_fuzzer under UBSan) */
        int axes[2] = {1, 2};
        wgt_tensor *t = wgt_transpose(z, 1, 2);
        wgt_tensor *sums[3] = {wgt_sum(z, axes, 2, false), t ? wgt_sum(t, axes, 1, true) : NULL,
                               t ? wgt_max(t, axes, 1, false) : NULL};
        for (int i = 0; i < 3; i++) {
            CHECK(sums[i] != NULL, "reduction %d of an empty view: %s", i, wgt_context_error_message(ctx));
            wgt_context_clear_error(ctx);
            wgt_tensor_release(sums[i]);
        }
        wgt_tensor_release(t);
        /* an empty reduction keeping dims whose strides walk past int64 (x
         * [0, 13, 2^30, 2^30, 5]: its dim of 13 has stride 5 2^60), and a
         * gather along an empty axis of such an x (every index out of range):
         * the CPU walked x's offsets (api_fuzzer seeds 149 and 271, UBSan) */
        int64_t xs5[5] = {0, 13, (int64_t)1 << 30, (int64_t)1 << 30, 5};
        wgt_tensor *x5 = wgt_zeros(ctx, WGT_F32, 5, xs5);
        int kept_out[3] = {0, 2, 3};
        wgt_tensor *r5 = x5 ? wgt_sum(x5, kept_out, 3, false) : NULL;
        expect_ok(ctx, "sum of x [0, 13, 2^30, 2^30, 5] over its dims 0, 2, 3");
        float r5v[65] = {1};
        CHECK(r5 && wgt_tensor_numel(r5) == 65 && wgt_tensor_read(r5, r5v, sizeof(r5v)) == WGT_OK && r5v[0] == 0 &&
                  r5v[64] == 0,
              "empty sums over x [0, 13, 2^30, 2^30, 5]: 13 x 5 zeros");
        wgt_tensor_release(r5);
        int64_t xg[4] = {0, 13, (int64_t)1 << 60, 1}, ig[4] = {1, 13, 1, 1};
        wgt_tensor *x4 = wgt_zeros(ctx, WGT_F32, 4, xg), *i4 = wgt_zeros(ctx, WGT_I32, 4, ig);
        expect_ok(ctx, "x [0, 13, 2^60, 1], index [1, 13, 1, 1]");
        wgt_tensor *g4 = x4 && i4 ? wgt_gather(x4, 0, i4) : NULL;
        wgt_status gs = g4 ? wgt_tensor_read(g4, r5v, 13 * sizeof(float)) : wgt_context_status(ctx);
        /* (the CPU: the index is out of range; WebGPU refuses x's size past its binding limit) */
        CHECK((gs == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_error_message(ctx), "out of range")) ||
                  (gs == WGT_ERR_UNSUPPORTED && strstr(wgt_context_error_message(ctx), "wgt_gather")),
              "gather along an empty axis: %s (%s)", wgt_status_string(gs), wgt_context_error_message(ctx));
        wgt_context_clear_error(ctx);
        wgt_tensor_release(g4), wgt_tensor_release(x4), wgt_tensor_release(i4), wgt_tensor_release(x5);
        /* an attention with projection over q [0, 2^40, 1, 2^40]: H D does not
         * fit (UBSan), refused */
        int64_t qs[4] = {0, P40, 1, P40}, ks[4] = {1, 1, 4, 32};
        wgt_tensor *q = wgt_zeros(ctx, WGT_F16, 4, qs), *k = wgt_zeros(ctx, WGT_F16, 4, ks);
        wgt_tensor *w = wgt_zeros(ctx, WGT_F32, 2, (int64_t[]){4, 32}), *qw = NULL, *qsc = NULL;
        if (w) wgt_quantize_weight(w, 8, &qw, &qsc);
        expect_ok(ctx, "q [0, 2^40, 1, 2^40], k, v, an 8-bit weight");
        expect_refused(ctx, !wgt_attention_qlinear_ex(q, k, k, true, qw, qsc, 8, NULL), WGT_ERR_SHAPE_MISMATCH,
                       WGT_ERR_INVALID_ARGUMENT, "wgt_attention_qlinear_ex", NULL,
                       "attention_qlinear_ex, H D overflows");
        /* the same q against keys of its H and D (no elements either): the
         * attention runs, its heads merged [B Tq, H D] do not fit (UBSan) */
        int64_t kbig[4] = {0, P40, 4, P40};
        wgt_tensor *kb = wgt_zeros(ctx, WGT_F16, 4, kbig), *wf = wgt_zeros(ctx, WGT_F16, 2, (int64_t[]){4, 32});
        expect_ok(ctx, "k [0, 2^40, 4, 2^40], an f16 weight");
        expect_refused(ctx, !wgt_attention_linear_ex(q, kb, kb, true, wf, NULL, WGT_F32), WGT_ERR_SHAPE_MISMATCH,
                       WGT_ERR_INVALID_ARGUMENT, "wgt_attention_linear_ex", NULL,
                       "attention_linear_ex, merged heads overflow");
        wgt_tensor_release(kb), wgt_tensor_release(wf);
        wgt_tensor_release(q), wgt_tensor_release(k), wgt_tensor_release(w);
        wgt_tensor_release(qw), wgt_tensor_release(qsc);
    }
    wgt_tensor_release(z);
    wgt_tensor_release(z1);
    int64_t too_big[2] = {P40, P40};
    expect_refused(ctx, !wgt_zeros(ctx, WGT_F32, 2, too_big), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_OUT_OF_MEMORY, "wgt_",
                   "1099511627776", "zeros {2^40, 2^40}");
    int64_t wraps[2] = {7, INV7};
    expect_refused(ctx, !wgt_tensor_empty(ctx, WGT_F32, 2, wraps), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_OUT_OF_MEMORY,
                   "wgt_tensor_empty", NULL, "empty {7, INV7}");
}

static void views(wgt_context *ctx)
{
    wgt_tensor *x = iota(ctx, 10), *one = iota(ctx, 1);
    CHECK(x && one, "setup: %s", wgt_context_error_message(ctx));
    if (!x || !one) return;
    /* wrapped: [1] expanded to [2^31, 2^31, 2^31] had numel 0 */
    int64_t cube[3] = {P31, P31, P31};
    expect_refused(ctx, !wgt_expand(one, 3, cube), WGT_ERR_INVALID_ARGUMENT, WGT_ERR_OUT_OF_MEMORY, "wgt_expand",
                   "2147483648", "expand to [2^31, 2^31, 2^31]");
    int64_t wide[2] = {(int64_t)1 << 62, 5};
    expect_refused(ctx, !wgt_expand(one, 2, wide), WGT_ERR_INVALID_ARGUMENT, WGT_ERR_OUT_OF_MEMORY, "wgt_expand",
                   NULL, "expand to [2^62, 5]");
    int64_t seven[2] = {7, INV7}; /* wrapped: numel 1 */
    expect_refused(ctx, !wgt_expand(one, 2, seven), WGT_ERR_INVALID_ARGUMENT, WGT_ERR_OUT_OF_MEMORY, "wgt_expand",
                   NULL, "expand to [7, INV7]");
    /* A large broadcast that fits is still a view, with its true numel. */
    int64_t big[2] = {(int64_t)1 << 29, (int64_t)1 << 30};
    wgt_tensor *e = wgt_expand(one, 2, big);
    expect_ok(ctx, "expand to [2^29, 2^30]");
    CHECK(e && wgt_tensor_numel(e) == ((int64_t)1 << 59), "expand to [2^29, 2^30]: numel %lld",
          (long long)wgt_tensor_numel(e));
    wgt_tensor_release(e);

    /* wrapped: 6 elements viewed as {6, 7, INV7} (product wraps to 6) */
    wgt_tensor *six = wgt_slice(x, 0, 0, 6, 1);
    int64_t v3[3] = {6, 7, INV7}, vinf[3] = {-1, 7, INV7}, vbig[3] = {-1, P40, P40};
    expect_refused(ctx, !wgt_view(six, 3, v3), WGT_ERR_SHAPE_MISMATCH, WGT_ERR_SHAPE_MISMATCH, "wgt_view", NULL,
                   "view 6 as {6, 7, INV7}");
    expect_refused(ctx, !wgt_view(six, 3, vinf), WGT_ERR_SHAPE_MISMATCH, WGT_ERR_SHAPE_MISMATCH, "wgt_view", NULL,
                   "view 6 as {-1, 7, INV7}");
    expect_refused(ctx, !wgt_reshape(six, 3, vinf), WGT_ERR_SHAPE_MISMATCH, WGT_ERR_SHAPE_MISMATCH, "wgt_reshape",
                   NULL, "reshape 6 as {-1, 7, INV7}");
    expect_refused(ctx, !wgt_view(six, 3, vbig), WGT_ERR_SHAPE_MISMATCH, WGT_ERR_SHAPE_MISMATCH, "wgt_view", NULL,
                   "view 6 as {-1, 2^40, 2^40}");
    int64_t v23[2] = {-1, 3};
    wgt_tensor *ok = wgt_view(six, 2, v23);
    expect_ok(ctx, "view 6 as {-1, 3}");
    CHECK(ok && wgt_tensor_dim(ok, 0) == 2, "view 6 as {-1, 3}: dim 0");
    wgt_tensor_release(ok);
    wgt_tensor_release(six);

    /* wrapped: (stop - start + step - 1) / step with step near INT64_MAX */
    wgt_tensor *s = wgt_slice(x, 0, 2, INT64_MAX, INT64_MAX);
    expect_ok(ctx, "slice [2:MAX:MAX]");
    CHECK(s && wgt_tensor_numel(s) == 1, "slice [2:MAX:MAX]: numel %lld", (long long)wgt_tensor_numel(s));
    check_values(s, (const float[]){2}, 1, "slice [2:MAX:MAX]");
    wgt_tensor_release(s);
    s = wgt_slice(x, 0, INT64_MIN, INT64_MAX, 3);
    expect_ok(ctx, "slice [MIN:MAX:3]");
    CHECK(s && wgt_tensor_numel(s) == 4, "slice [MIN:MAX:3]: numel %lld", (long long)wgt_tensor_numel(s));
    check_values(s, (const float[]){0, 3, 6, 9}, 4, "slice [MIN:MAX:3]");
    wgt_tensor_release(s);
    s = wgt_slice(x, 0, -3, INT64_MAX, INT64_MAX - 1);
    expect_ok(ctx, "slice [-3:MAX:MAX-1]");
    check_values(s, (const float[]){7}, 1, "slice [-3:MAX:MAX-1]");
    wgt_tensor_release(s);
    s = wgt_slice(x, 0, INT64_MAX, INT64_MIN, 1);
    expect_ok(ctx, "slice [MAX:MIN]");
    CHECK(s && wgt_tensor_numel(s) == 0, "slice [MAX:MIN]: numel %lld", (long long)wgt_tensor_numel(s));
    wgt_tensor_release(s);

    wgt_tensor_release(x);
    wgt_tensor_release(one);
}

static void movement(wgt_context *ctx)
{
    wgt_tensor *x = iota(ctx, 4);
    CHECK(x != NULL, "setup: %s", wgt_context_error_message(ctx));
    if (!x) return;
    /* wrapped: {MAX, MAX, d + 2} adds up to d and returned WGT_OK */
    int64_t sizes[3] = {INT64_MAX, INT64_MAX, 6};
    wgt_tensor *parts[3] = {NULL, NULL, NULL};
    expect_refused(ctx, wgt_split(x, 0, sizes, 3, parts) != WGT_OK, WGT_ERR_SHAPE_MISMATCH, WGT_ERR_SHAPE_MISMATCH,
                   "wgt_split", NULL, "split {MAX, MAX, d + 2}");
    CHECK(!parts[0] && !parts[1] && !parts[2], "split {MAX, MAX, d + 2}: outputs written");

    /* The message named wgt_full, the call that made the output. */
    int64_t pads[2] = {0, INT64_MAX - 3};
    expect_refused(ctx, !wgt_pad(x, pads, 0), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_INVALID_ARGUMENT, "wgt_pad", NULL,
                   "pad to INT64_MAX");
    int64_t pads_wrap[2] = {INT64_MAX, INT64_MAX}; /* UBSan: 4 + MAX + MAX */
    expect_refused(ctx, !wgt_pad(x, pads_wrap, 0), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_INVALID_ARGUMENT, "wgt_pad", NULL,
                   "pad by {MAX, MAX}");

    /* A padded result made inside a scope belongs to the scope (pad once
     * released its own internal reference with wgt_tensor_release, which took
     * the result out of the scope: found by the API fuzzer as a leak). */
    int64_t live = wgt_context_live_tensors(ctx), small_pads[2] = {1, 2};
    wgt_scope_push(ctx);
    wgt_tensor *padded = wgt_pad(x, small_pads, 0);
    CHECK(padded && wgt_tensor_numel(padded) == 7, "pad in a scope: %s", wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
    CHECK(wgt_context_live_tensors(ctx) == live, "pad in a scope: %lld tensors outlive the scope",
          (long long)(wgt_context_live_tensors(ctx) - live));

    /* 16 views of 2^59 elements: their sizes along the axis add up past 2^63 (UBSan). */
    wgt_tensor *one = wgt_slice(x, 0, 0, 1, 1);
    int64_t n59 = (int64_t)1 << 59;
    wgt_tensor *e = one ? wgt_expand(one, 1, &n59) : NULL;
    CHECK(e != NULL, "expand to [2^59]: %s", wgt_context_error_message(ctx));
    if (e) {
        wgt_tensor *many[16];
        for (int i = 0; i < 16; i++) many[i] = e;
        expect_refused(ctx, !wgt_concat(many, 16, 0), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_INVALID_ARGUMENT, "wgt_concat",
                       NULL, "concat of 16 x 2^59");
        expect_refused(ctx, !wgt_concat(many, 2, 0), WGT_ERR_OUT_OF_MEMORY, WGT_ERR_OUT_OF_MEMORY, "wgt_concat", NULL,
                       "concat of 2 x 2^59");
    }
    wgt_tensor_release(e);
    wgt_tensor_release(one);
    wgt_tensor_release(x);
}

/* Defect 10: 1025-1027 inputs returned NULL with no error recorded. */
static void stack_many(wgt_context *ctx, int n)
{
    int64_t two = 2;
    wgt_tensor *row = wgt_tensor_from_host(ctx, WGT_F32, 1, &two, (const float[]){1, 2});
    wgt_tensor **rows = malloc(sizeof(*rows) * (size_t)n);
    CHECK(row && rows, "stack setup");
    if (!row || !rows) {
        free(rows);
        wgt_tensor_release(row);
        return;
    }
    for (int i = 0; i < n; i++) rows[i] = row;
    wgt_tensor *st = wgt_stack(rows, n, 0);
    CHECK(st != NULL || wgt_context_status(ctx) != WGT_OK, "stack of %d: NULL without an error", n);
    expect_ok(ctx, "stack of many");
    CHECK(st && wgt_tensor_dim(st, 0) == n && wgt_tensor_dim(st, 1) == 2, "stack of %d: shape", n);
    if (st) {
        wgt_tensor *last = wgt_slice(st, 0, n - 1, n, 1);
        check_values(last, (const float[]){1, 2}, 2, "stack of many: last row");
        wgt_tensor_release(last);
    }
    wgt_tensor_release(st);
    wgt_tensor_release(row);
    free(rows);
}

/* The backends' own view checks, reached with views no public call makes: the
 * extent (2^62 + 1 - 1) * 4 + 1 wraps to 1 and passed, then the kernel ran over
 * 2^63 elements. */
static void backend_view_check(wgt_context *ctx)
{
    int64_t n = 4;
    wgt_tensor *x = wgt_zeros(ctx, WGT_F32, 1, &n), *y = wgt_zeros(ctx, WGT_F32, 1, &n);
    CHECK(x && y, "setup: %s", wgt_context_error_message(ctx));
    if (x && y) {
        wgt_expr e;
        wgt_expr_init(&e);
        wgt_expr_input(&e, 0, WGT_EXPR_F32);
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_ELEMENTWISE;
        call.op_name = "test_shape_overflow";
        call.expr = &e;
        call.n_inputs = 1;
        call.n_outputs = 1;
        wgt_tensor_view hostile = x->view;
        hostile.ndim = 2;
        hostile.shape[0] = 2;
        hostile.strides[0] = 1;
        hostile.shape[1] = ((int64_t)1 << 62) + 1;
        hostile.strides[1] = 4;
        hostile.offset = 0;
        call.inputs[0] = hostile;
        hostile.storage = y->view.storage;
        call.outputs[0] = hostile;
        wgt_status s = wgt_run_kernel(ctx, &call);
        CHECK(s != WGT_OK, "a view whose extent wraps was run");
        wgt_context_clear_error(ctx);
    }
    wgt_tensor_release(x);
    wgt_tensor_release(y);
    check_error_and_recover(ctx, WGT_OK, "backend view check");
}

static void run_all(wgt_context *ctx, const char *name, int stack_n)
{
    if (!ctx) return;
    fprintf(stderr, "-- %s\n", name);
    empty_shapes(ctx);
    views(ctx);
    movement(ctx);
    stack_many(ctx, stack_n);
    backend_view_check(ctx);
    CHECK(wgt_context_live_tensors(ctx) == 0, "%s: %lld tensors leaked", name,
          (long long)wgt_context_live_tensors(ctx));
}

int main(void)
{
    wgt_context *cpu = test_cpu_context();
    run_all(cpu, "cpu", 1027);
    wgt_context_destroy(cpu);
    wgt_context *gpu = test_webgpu_context();
    run_all(gpu, "webgpu", 1025);
    wgt_context_destroy(gpu);
    return test_summary();
}
