/* Tensors on both backends: creation, views (checked against offsets computed
 * here by hand), contiguous copies, scopes and reference counting, and the
 * execution model (1000 small ops go out in a handful of submits). */
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/philox.h"
#include "test_util.h"

/* x[i][j] = 10 i + j as f32, shape [r, c] */
static wgt_tensor *grid(wgt_context *ctx, int64_t r, int64_t c)
{
    float v[64];
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) v[i * c + j] = (float)(10 * i + j);
    int64_t shape[2] = {r, c};
    return wgt_tensor_from_host(ctx, WGT_F32, 2, shape, v);
}

static void expect_values(wgt_tensor *t, const float *want, int n, const char *what)
{
    float got[64] = {0};
    wgt_status s = t ? wgt_tensor_read(t, got, sizeof(got)) : WGT_ERR_INTERNAL;
    bool ok = s == WGT_OK && wgt_tensor_numel(t) == n;
    for (int i = 0; ok && i < n; i++) ok = got[i] == want[i];
    CHECK(ok, "%s: status %s, numel %lld", what, wgt_status_string(s), (long long)(t ? wgt_tensor_numel(t) : -1));
}

static void test_views(wgt_context *ctx, const char *backend)
{
    char what[128];
    wgt_tensor *x = grid(ctx, 3, 4); /* [[0,1,2,3],[10..13],[20..23]] */
    CHECK(x && wgt_tensor_is_contiguous(x), "%s grid", backend);

    wgt_tensor *t = wgt_transpose(x, 0, 1);
    CHECK(!wgt_tensor_is_contiguous(t) && wgt_tensor_dim(t, 0) == 4 && wgt_tensor_strides(t)[0] == 1, "transpose strides");
    float tw[12] = {0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23};
    snprintf(what, sizeof(what), "%s transpose", backend);
    expect_values(t, tw, 12, what);

    wgt_tensor *s = wgt_slice(x, 1, 1, 4, 2); /* columns 1 and 3 */
    float sw[6] = {1, 3, 11, 13, 21, 23};
    snprintf(what, sizeof(what), "%s slice step 2", backend);
    expect_values(s, sw, 6, what);
    CHECK(wgt_tensor_offset(s) == 1 && wgt_tensor_strides(s)[1] == 2, "slice offset/stride");

    wgt_tensor *neg = wgt_slice(x, 0, -2, 100, 1); /* Python clamping: rows 1..2 */
    float nw[8] = {10, 11, 12, 13, 20, 21, 22, 23};
    snprintf(what, sizeof(what), "%s slice negative start", backend);
    expect_values(neg, nw, 8, what);

    int64_t flat = 12, two_six[2] = {2, -1};
    wgt_tensor *v = wgt_view(x, 2, two_six);
    CHECK(v && wgt_tensor_dim(v, 1) == 6, "view with -1");
    wgt_tensor *bad = wgt_view(t, 1, &flat); /* transposed: not viewable */
    CHECK(!bad, "view of a transpose must fail");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "view of transpose");
    wgt_tensor *r = wgt_reshape(t, 1, &flat); /* copies */
    snprintf(what, sizeof(what), "%s reshape copies a transpose", backend);
    expect_values(r, tw, 12, what);

    int perm[2] = {1, 0};
    wgt_tensor *p = wgt_permute(x, perm);
    snprintf(what, sizeof(what), "%s permute", backend);
    expect_values(p, tw, 12, what);

    wgt_tensor *u = wgt_unsqueeze(s, 1); /* [3, 1, 2] */
    int64_t big[3] = {3, 2, 2};
    wgt_tensor *e = wgt_expand(u, 3, big);
    float ew[12] = {1, 3, 1, 3, 11, 13, 11, 13, 21, 23, 21, 23};
    snprintf(what, sizeof(what), "%s unsqueeze+expand", backend);
    expect_values(e, ew, 12, what);
    CHECK(wgt_tensor_strides(e)[1] == 0, "expanded stride 0");
    wgt_tensor *sq = wgt_squeeze(u, 1);
    snprintf(what, sizeof(what), "%s squeeze", backend);
    expect_values(sq, sw, 6, what);
    CHECK(!wgt_squeeze(x, 0), "squeeze of size 3 must fail");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "squeeze");

    wgt_tensor *c = wgt_contiguous(t);
    CHECK(c && wgt_tensor_is_contiguous(c), "contiguous");
    snprintf(what, sizeof(what), "%s contiguous", backend);
    expect_values(c, tw, 12, what);

    /* Writes through a strided view land in the right places. */
    float ones[6] = {-1, -2, -3, -4, -5, -6};
    CHECK(wgt_tensor_write(s, ones, sizeof(ones)) == WGT_OK, "write through view: %s", wgt_context_error_message(ctx));
    float xw[12] = {0, -1, 2, -2, 10, -3, 12, -4, 20, -5, 22, -6};
    snprintf(what, sizeof(what), "%s write through view", backend);
    expect_values(x, xw, 12, what);
    CHECK(wgt_tensor_write(e, ew, sizeof(ew)) != WGT_OK, "writing a broadcast view must fail");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "write broadcast view");

    wgt_tensor *all[] = {x, t, s, neg, v, r, p, u, e, sq, c};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) wgt_tensor_release(all[i]);
}

static void test_creation(wgt_context *ctx, const char *backend)
{
    char what[128];
    int64_t shape[2] = {2, 3};
    float z[6] = {0}, o[6] = {1, 1, 1, 1, 1, 1}, f[6] = {2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f};
    wgt_tensor *a = wgt_zeros(ctx, WGT_F32, 2, shape), *b = wgt_ones(ctx, WGT_F32, 2, shape),
               *c = wgt_full(ctx, WGT_F32, 2, shape, 2.5);
    snprintf(what, sizeof(what), "%s zeros", backend);
    expect_values(a, z, 6, what);
    snprintf(what, sizeof(what), "%s ones", backend);
    expect_values(b, o, 6, what);
    snprintf(what, sizeof(what), "%s full", backend);
    expect_values(c, f, 6, what);
    wgt_tensor *r = wgt_arange(ctx, WGT_F32, 1, 2.2, 0.5);
    float rw[3] = {1, 1.5f, 2};
    snprintf(what, sizeof(what), "%s arange", backend);
    expect_values(r, rw, 3, what);
    wgt_tensor *l = wgt_linspace(ctx, WGT_F32, 0, 1, 5);
    float lw[5] = {0, 0.25f, 0.5f, 0.75f, 1};
    snprintf(what, sizeof(what), "%s linspace", backend);
    expect_values(l, lw, 5, what);
    wgt_tensor *e = wgt_eye(ctx, WGT_F32, 2, 3);
    float eww[6] = {1, 0, 0, 0, 1, 0};
    snprintf(what, sizeof(what), "%s eye", backend);
    expect_values(e, eww, 6, what);

    /* rand: in [0, 1), mean near 1/2; randn: mean near 0, variance near 1 */
    int64_t n = 4096;
    wgt_tensor *u = wgt_rand(ctx, WGT_F32, 1, &n, 5), *g = wgt_randn(ctx, WGT_F32, 1, &n, 5);
    static float uh[4096], gh[4096];
    CHECK(wgt_tensor_read(u, uh, sizeof(uh)) == WGT_OK && wgt_tensor_read(g, gh, sizeof(gh)) == WGT_OK, "read rand");
    double su = 0, sg = 0, sg2 = 0;
    bool in_range = true;
    for (int i = 0; i < 4096; i++) {
        in_range &= uh[i] >= 0 && uh[i] < 1;
        su += uh[i];
        sg += gh[i];
        sg2 += (double)gh[i] * gh[i];
    }
    CHECK(in_range && su / 4096 > 0.47 && su / 4096 < 0.53, "%s rand mean %g", backend, su / 4096);
    CHECK(sg / 4096 > -0.06 && sg / 4096 < 0.06 && sg2 / 4096 > 0.9 && sg2 / 4096 < 1.1, "%s randn mean %g var %g",
          backend, sg / 4096, sg2 / 4096);
    /* Seed 0, counter 0 is Philox-4x32-10 at key (0, 0), counter (0, 0, 0, 0):
     * Random123's published known-answer words 6627e8d5 e169c58d bc57ac4c
     * 9b00dbd8. rand's elements 0..3 are the four words' top 24 bits / 2^24;
     * randn's elements 0 and 1 are Box-Muller on words (0, 1) and (2, 3) (u1 =
     * (w0 >> 8) + 1, u2 = w1 >> 8, both / 2^24), in double here */
    const uint32_t kat[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    int64_t four = 4, two = 2;
    wgt_tensor *u0 = wgt_rand(ctx, WGT_F32, 1, &four, 0), *g0 = wgt_randn(ctx, WGT_F32, 1, &two, 0);
    float u0h[4] = {-1, -1, -1, -1}, g0h[2] = {-1, -1};
    CHECK(wgt_tensor_read(u0, u0h, sizeof(u0h)) == WGT_OK && wgt_tensor_read(g0, g0h, sizeof(g0h)) == WGT_OK,
          "read rand seed 0");
    for (int w = 0; w < 4; w++) {
        const double kat_u = (double)(kat[w] >> 8) / 16777216.0;
        CHECK(u0h[w] == (float)kat_u, "%s rand(seed 0)[%d] = %.9g, Philox's known answer gives %.9g", backend, w,
              u0h[w], kat_u);
    }
    for (int w = 0; w < 2; w++) {
        const double kat_g = sqrt(-2.0 * log((double)((kat[2 * w] >> 8) + 1u) / 16777216.0)) *
                             cos(6.283185307179586 * (double)(kat[2 * w + 1] >> 8) / 16777216.0);
        CHECK(fabs(g0h[w] - kat_g) < 2e-5, "%s randn(seed 0)[%d] = %.9g, Philox's known answer gives %.9g", backend,
              w, g0h[w], kat_g);
    }
    wgt_tensor_release(u0), wgt_tensor_release(g0);
    wgt_tensor *all[] = {a, b, c, r, l, e, u, g};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) wgt_tensor_release(all[i]);
}

static void test_scopes(wgt_context *ctx, const char *backend)
{
    int64_t base = wgt_context_live_tensors(ctx);
    int64_t n = 16;
    wgt_tensor *keep = NULL;
    CHECK(wgt_scope_push(ctx) == WGT_OK, "push");
    for (int step = 0; step < 50; step++) {
        CHECK(wgt_scope_push(ctx) == WGT_OK, "inner push");
        wgt_tensor *a = wgt_ones(ctx, WGT_F32, 1, &n);
        wgt_tensor *b = wgt_add(a, a);
        wgt_tensor *c = wgt_mul(b, b);
        wgt_tensor *released = wgt_exp(c);
        wgt_tensor_release(released); /* a release inside a scope must not double-free at pop */
        if (step == 49) keep = wgt_scope_keep(c);
        CHECK(wgt_scope_pop(ctx) == WGT_OK, "inner pop");
    }
    CHECK(wgt_context_live_tensors(ctx) == base + 1, "%s: %lld live tensors inside the outer scope, want %lld", backend,
          (long long)wgt_context_live_tensors(ctx), (long long)base + 1);
    CHECK(wgt_scope_pop(ctx) == WGT_OK, "outer pop");
    CHECK(wgt_context_live_tensors(ctx) == base, "%s: kept tensor must be released by the outer scope (%lld live)",
          backend, (long long)wgt_context_live_tensors(ctx));
    (void)keep;

    /* A tensor kept out of the outermost scope belongs to the caller. */
    wgt_scope_push(ctx);
    wgt_tensor *mine = wgt_scope_keep(wgt_ones(ctx, WGT_F32, 1, &n));
    wgt_scope_pop(ctx);
    float v[16];
    CHECK(wgt_tensor_read(mine, v, sizeof(v)) == WGT_OK && v[15] == 1, "kept tensor alive");
    wgt_tensor_release(mine);
    CHECK(wgt_context_live_tensors(ctx) == base, "caller released it");
    CHECK(wgt_scope_pop(ctx) == WGT_ERR_INVALID_ARGUMENT, "pop without push");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "pop without push");
}

/* 1000 small dependent ops must go out in batches, not a submit per op: the
 * backend submits every 64 dispatches (WEBGPU_BATCH_DISPATCHES), so 1000 ops
 * are 16 submits, plus the read's. */
static void test_batching(wgt_context *ctx)
{
    int64_t n = 1024;
    wgt_tensor *x = wgt_zeros(ctx, WGT_F32, 1, &n), *one = wgt_ones(ctx, WGT_F32, 1, &n);
    wgt_synchronize(ctx);
    wgt_execution_stats before, after;
    wgt_execution_stats_get(ctx, &before);
    for (int i = 0; i < 1000; i++) {
        wgt_tensor *y = wgt_add(x, one);
        wgt_tensor_release(x);
        x = y;
    }
    float v[1024];
    CHECK(wgt_tensor_read(x, v, sizeof(v)) == WGT_OK && v[0] == 1000 && v[1023] == 1000, "1000 adds: %g",
          (double)v[0]);
    wgt_execution_stats_get(ctx, &after);
    uint64_t submits = after.submits - before.submits, dispatches = after.dispatches - before.dispatches;
    printf("1000 dependent adds: %llu dispatches in %llu submits\n", (unsigned long long)dispatches,
           (unsigned long long)submits);
    CHECK(dispatches >= 1000 && submits <= 1000 / 64 + 2, "%llu submits for 1000 ops", (unsigned long long)submits);
    /* A chain of dependent adds alternates two buffers: after the first
     * two, every dispatch binds a pair it bound before, and reuses its group */
    CHECK(after.bind_groups - before.bind_groups <= 8, "1000 adds created %llu bind groups (at most 8 expected)",
          (unsigned long long)(after.bind_groups - before.bind_groups));
    /* The same work in a scope, pass after pass (a training step, a decoded
     * token): the scope gives its buffers back in reverse order, so the next
     * pass gets each in the same role and creates no bind group */
    uint64_t created[4] = {0};
    for (int pass = 0; pass < 4; pass++) {
        wgt_execution_stats_get(ctx, &before);
        wgt_scope_push(ctx);
        wgt_tensor *a = wgt_add(x, one), *b = wgt_mul(a, one), *c = wgt_sub(b, x), *d = wgt_add(c, a);
        wgt_tensor *e = wgt_mul(d, b);
        (void)e;
        wgt_scope_pop(ctx);
        wgt_execution_stats_get(ctx, &after);
        created[pass] = after.bind_groups - before.bind_groups;
    }
    CHECK(created[1] == 0 && created[2] == 0 && created[3] == 0, "repeated scoped work created %llu, %llu, %llu, "
          "%llu bind groups (none expected after the first pass)", (unsigned long long)created[0], (unsigned long long)created[1],
          (unsigned long long)created[2], (unsigned long long)created[3]);
    wgt_tensor_release(x);
    wgt_tensor_release(one);
}

/* wgt_tensor_read_start / wgt_read_finish: the copy is queued at start, so
 * work recorded after it (here: filling the tensor) does not change what is
 * read; views that need a contiguous copy or a word-aligned widening read the
 * right elements; a short buffer is refused with a message; a read dropped
 * (data NULL) or left unfinished at context destroy frees everything (the
 * ASan build checks the leak). */
static void test_read_start(wgt_context *ctx, const char *backend)
{
    wgt_tensor *x = grid(ctx, 3, 4);
    wgt_read *r = wgt_tensor_read_start(x);
    CHECK(r != NULL, "%s read_start: %s", backend, wgt_context_error_message(ctx));
    wgt_fill(x, -1.0); /* recorded after the read: must not be seen by it */
    wgt_tensor *xt = wgt_transpose(x, 0, 1);
    wgt_read *rt = wgt_tensor_read_start(xt); /* after the fill: all -1 */
    float got[12] = {0}, want[12];
    for (int i = 0; i < 12; i++) want[i] = (float)(10 * (i / 4) + i % 4);
    CHECK(r && wgt_read_finish(r, got, sizeof(got)) == WGT_OK && memcmp(got, want, sizeof(got)) == 0,
          "%s read_start: got %g %g .. %g", backend, (double)got[0], (double)got[1], (double)got[11]);
    float t[12] = {0};
    bool all = rt && wgt_read_finish(rt, t, sizeof(t)) == WGT_OK;
    for (int i = 0; all && i < 12; i++) all = t[i] == -1.0f;
    CHECK(all, "%s read_start of a transposed view after a fill: %g", backend, (double)t[0]);
    /* i32 elements 1..2 of 5 are word aligned; f16 element 1 of 6 is not */
    int32_t iv[5] = {7, 8, 9, 10, 11}, ig[2] = {0};
    uint16_t hv[6] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600}, hg[3] = {0};
    wgt_tensor *xi = wgt_tensor_from_host(ctx, WGT_I32, 1, (int64_t[]){5}, iv);
    wgt_tensor *xh = wgt_tensor_from_host(ctx, WGT_F16, 1, (int64_t[]){6}, hv);
    wgt_tensor *si = wgt_slice(xi, 0, 1, 3, 1), *sh = wgt_slice(xh, 0, 1, 4, 1);
    wgt_read *ri = wgt_tensor_read_start(si), *rh = wgt_tensor_read_start(sh);
    CHECK(ri && wgt_read_finish(ri, ig, sizeof(ig)) == WGT_OK && ig[0] == 8 && ig[1] == 9, "%s read_start i32 slice: %d %d",
          backend, ig[0], ig[1]);
    CHECK(rh && wgt_read_finish(rh, hg, sizeof(hg)) == WGT_OK && hg[0] == 0x4000 && hg[1] == 0x4200 && hg[2] == 0x4400,
          "%s read_start unaligned f16 slice: %04x %04x %04x", backend, hg[0], hg[1], hg[2]);
    /* too small a buffer: an error naming the call; the read is still freed */
    wgt_read *rs = wgt_tensor_read_start(x);
    CHECK(rs && wgt_read_finish(rs, got, 8) == WGT_ERR_INVALID_ARGUMENT &&
              strstr(wgt_context_error_message(ctx), "wgt_read_finish") != NULL,
          "%s read_finish with 8 bytes for 48: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_read *rd = wgt_tensor_read_start(x);
    CHECK(rd && wgt_read_finish(rd, NULL, 0) == WGT_OK, "%s read dropped: %s", backend, wgt_context_error_message(ctx));
    CHECK(wgt_read_finish(NULL, got, sizeof(got)) == WGT_ERR_INVALID_ARGUMENT, "%s read_finish(NULL)", backend);
    /* wgt_read_ready: polls without waiting; becomes true once the copy has
     * landed (bounded here by 10 s of 1 ms polls), and finish then has the data */
    wgt_fill(x, 3.0);
    wgt_read *rp = wgt_tensor_read_start(x);
    bool ready = false;
    for (int i = 0; i < 10000 && rp && !(ready = wgt_read_ready(rp)); i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
    CHECK(ready, "%s wgt_read_ready never became true", backend);
    all = rp && wgt_read_finish(rp, got, sizeof(got)) == WGT_OK;
    for (int i = 0; all && i < 12; i++) all = got[i] == 3.0f;
    CHECK(all, "%s read after wgt_read_ready: %g", backend, (double)got[0]);
    CHECK(wgt_read_ready(NULL), "%s wgt_read_ready(NULL) is true", backend);
    CHECK(wgt_tensor_read_start(x) != NULL, "%s read left for destroy", backend); /* context destroy frees it */
    wgt_tensor *views[] = {xt, si, sh, x, xi, xh};
    for (int i = 0; i < 6; i++) wgt_tensor_release(views[i]);
}

/* core/philox.h against the known-answer vectors Random123 publishes for
 * Philox-4x32-10 (counter, key -> words): the generator behind rand, randn,
 * dropout and the attention dropout masks of both backends, checked against an
 * outside reference (the backends are checked against it in test_creation). */
static void test_philox_known_answers(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du, 0x41c83b0eu,
         0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u, 0x94fdccebu,
         0x5001e420u, 0x24126ea1u},
    };
    for (int v = 0; v < 3; v++) {
        const uint32_t *k = kat[v];
        uint32_t w[4];
        wgt_philox4x32_10(k[4], k[5], k[0], k[1], k[2], k[3], w);
        CHECK(memcmp(w, k + 6, sizeof(w)) == 0, "philox known answer %d: %08x %08x %08x %08x", v, w[0], w[1], w[2],
              w[3]);
    }
}

int main(void)
{
    test_philox_known_answers();
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    if (cpu) {
        test_views(cpu, "cpu");
        test_creation(cpu, "cpu");
        test_scopes(cpu, "cpu");
        test_read_start(cpu, "cpu");
        wgt_context_destroy(cpu);
    }
    if (gpu) {
        test_views(gpu, "webgpu");
        test_creation(gpu, "webgpu");
        test_scopes(gpu, "webgpu");
        test_batching(gpu);
        test_read_start(gpu, "webgpu");
        wgt_context_destroy(gpu);
    }
    return test_summary();
}
