/*
 * wgt_layer_norm_linear and the NORM kernel's transposed output (nn.transposed)
 * on both backends.
 *
 *   kernel    wgt_norm_forward with a transposed output: y against a layer
 *             (rms) norm computed here in double from the same host data,
 *             |got - ref| <= 1e-4 (1 + |ref|) for f32 (4e-3 for f16 outputs);
 *             yt[c][r] equal to y[r][c] bit for bit; the (mean, rstd) rows.
 *             Shapes: 32-row workgroups with a partial last one (37, 70
 *             rows), D = 4 .. 512 (1 to 16 vec4 slots a lane, D not a
 *             multiple of 32), and the copy fallback (D = 520: 17 slots;
 *             D = 6: no vec4 rows); weight and bias on and off, rms, f16.
 *   op        wgt_layer_norm_linear against wgt_linear(wgt_layer_norm(..)):
 *             the output and the five gradients of sum(out * r) (tape), equal
 *             bit for bit on the CPU (it runs the two calls), within 1e-4 (1 +
 *             |ref|) on WebGPU (the norm's sums run in another order). With
 *             WGT_MATMUL_CONFIG=tile128x128k8t the GEMM copies a row-major a
 *             transposed first (N >= 1024); the fused op must leave that copy
 *             out: one tiled transpose fewer than the two calls (a mutation
 *             that keeps the copy fails this).
 *   bad input wrong shapes, dtypes and eps: the status, a message naming
 *             wgt_layer_norm_linear, and a usable context.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ops/nn_internal.h"
#include "test_util.h"
#include "webgpu/webgpu_transpose.h"

static uint32_t rng_state = 2024u;

static float *random_floats(int64_t n, float lo, float hi)
{
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(test_xorshift(&rng_state) >> 8) / 16777216.0f;
    return v;
}

/* An f32 or f16 tensor of host floats (rounded to f16 when dtype is f16; v then holds the rounded values). */
static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, float *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (dtype == WGT_F32) return wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, v);
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        h[i] = test_f32_to_f16(v[i]);
        v[i] = test_f16_to_f32(h[i]);
    }
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F16, ndim, shape, h);
    free(h);
    return t;
}

/* The elements of t as floats (f32 or f16), or NULL after a failed CHECK. */
static float *read_floats(wgt_tensor *t, int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    wgt_status s;
    if (wgt_tensor_dtype(t) == WGT_F16) {
        uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
        s = wgt_tensor_read(t, h, sizeof(uint16_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) v[i] = test_f16_to_f32(h[i]);
        free(h);
    } else {
        s = wgt_tensor_read(t, v, sizeof(float) * (size_t)n);
    }
    CHECK(s == WGT_OK, "read: %s", wgt_context_error_message(t->ctx));
    if (s != WGT_OK) {
        free(v);
        return NULL;
    }
    return v;
}

static const char *backend_name(wgt_context *ctx) { return ctx->backend->vt->name; }

/* ------------------------------------------------------------- the kernel */

static void test_kernel_case(wgt_context *ctx, int64_t rows, int64_t d, bool affine, bool rms, wgt_dtype dt)
{
    int64_t xs[2] = {rows, d}, ws[1] = {d};
    float *xv = random_floats(rows * d, -3.0f, 3.0f), *wv = random_floats(d, 0.5f, 1.5f), *bv = random_floats(d, -1, 1);
    wgt_tensor *x = upload(ctx, dt, 2, xs, xv);
    wgt_tensor *w = affine ? upload(ctx, dt, 1, ws, wv) : NULL, *b = affine && !rms ? upload(ctx, dt, 1, ws, bv) : NULL;
    wgt_tensor *yt = NULL;
    wgt_tensor *y = wgt_norm_forward(x, w, b, 1e-5, rms, &yt, "test_norm_transposed");
    char what[160];
    snprintf(what, sizeof(what), "%s: norm %lld x %lld%s%s %s", backend_name(ctx), (long long)rows, (long long)d,
             affine ? " affine" : "", rms ? " rms" : "", wgt_dtype_name(dt));
    CHECK(y && yt, "%s: %s", what, wgt_context_error_message(ctx));
    if (y && yt) {
        CHECK(wgt_tensor_ndim(yt) == 2 && wgt_tensor_dim(yt, 0) == d && wgt_tensor_dim(yt, 1) == rows,
              "%s: yt shape", what);
        float *got = read_floats(y, rows * d), *got_t = read_floats(yt, rows * d);
        int bad = 0, bad_t = 0;
        double tol = dt == WGT_F16 ? 4e-3 : 1e-4;
        for (int64_t r = 0; got && got_t && r < rows; r++) {
            double mean = 0, sq = 0;
            if (!rms) {
                for (int64_t i = 0; i < d; i++) mean += xv[r * d + i];
                mean /= (double)d;
            }
            for (int64_t i = 0; i < d; i++) sq += (xv[r * d + i] - mean) * (xv[r * d + i] - mean);
            double rstd = 1.0 / sqrt(sq / (double)d + 1e-5);
            for (int64_t i = 0; i < d; i++) {
                double ref = (xv[r * d + i] - mean) * rstd * (affine ? wv[i] : 1.0) + (affine && !rms ? bv[i] : 0.0);
                float g = got[r * d + i], gt = got_t[i * rows + r];
                if (!(fabs(g - ref) <= tol * (1 + fabs(ref))) && bad++ < 3)
                    fprintf(stderr, "  %s: y[%lld][%lld] = %.7g, expected %.7g\n", what, (long long)r, (long long)i, g, ref);
                if (memcmp(&g, &gt, sizeof(g)) != 0 && bad_t++ < 3)
                    fprintf(stderr, "  %s: yt[%lld][%lld] = %.9g, y = %.9g\n", what, (long long)i, (long long)r, gt, g);
            }
        }
        CHECK(got && bad == 0, "%s: %d outputs off the double reference", what, bad);
        CHECK(got_t && bad_t == 0, "%s: %d transposed outputs differ from y", what, bad_t);
        free(got), free(got_t);
    }
    wgt_tensor_release(y), wgt_tensor_release(yt);
    wgt_tensor_release(x), wgt_tensor_release(w), wgt_tensor_release(b);
    free(xv), free(wv), free(bv);
}

static void test_kernel(wgt_context *ctx)
{
    static const int64_t shapes[][2] = {{37, 384}, {64, 36}, {5, 4}, {70, 512}, {33, 32}, {33, 520}, {10, 6}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        test_kernel_case(ctx, shapes[i][0], shapes[i][1], i % 2 == 0, false, WGT_F32);
    test_kernel_case(ctx, 37, 384, true, true, WGT_F32);
    test_kernel_case(ctx, 41, 64, false, true, WGT_F32);
    test_kernel_case(ctx, 37, 96, true, false, WGT_F16);
}

/* ------------------------------------------------------------------ the op */

typedef struct op_run {
    float *out, *grads[5]; /* x, norm weight, norm bias, weight, bias */
    uint64_t transposes;   /* tiled transposes the forward and backward recorded */
} op_run;

static void op_run_free(op_run *r)
{
    free(r->out);
    for (int i = 0; i < 5; i++) free(r->grads[i]);
}

/* out = layer_norm_linear(x) (fused) or linear(layer_norm(x)); then the
 * gradients of sum(out * rv). */
static op_run run_op(wgt_context *ctx, bool fused, int64_t B, int64_t T, int64_t D, int64_t N, const float *const *data)
{
    op_run run;
    memset(&run, 0, sizeof(run));
    wgt_scope_push(ctx);
    int64_t shapes[6][3] = {{B, T, D}, {D}, {D}, {N, D}, {N}, {B, T, N}};
    int ndims[6] = {3, 1, 1, 2, 1, 3};
    wgt_tensor *t[6];
    for (int i = 0; i < 6; i++) {
        t[i] = wgt_tensor_from_host(ctx, WGT_F32, ndims[i], shapes[i], data[i]);
        if (i < 5) wgt_tensor_set_requires_grad(t[i], true);
    }
    uint64_t before = webgpu_transpose_count();
    wgt_tensor *out = fused ? wgt_layer_norm_linear(t[0], t[1], t[2], 1e-5, t[3], t[4])
                            : wgt_linear(wgt_layer_norm(t[0], t[1], t[2], 1e-5), t[3], t[4]);
    wgt_tensor *loss = wgt_sum(wgt_mul(out, t[5]), NULL, 0, false);
    wgt_status s = loss ? wgt_backward(loss) : wgt_context_status(ctx);
    CHECK(s == WGT_OK, "%s: %s backward: %s", backend_name(ctx), fused ? "fused" : "composed",
          wgt_context_error_message(ctx));
    if (s == WGT_OK) {
        run.out = read_floats(out, B * T * N);
        run.transposes = webgpu_transpose_count() - before;
        int64_t sizes[5] = {B * T * D, D, D, N * D, N};
        for (int i = 0; i < 5; i++) {
            wgt_tensor *g = wgt_tensor_grad(t[i]);
            run.grads[i] = g ? read_floats(g, sizes[i]) : NULL;
        }
    }
    wgt_scope_pop(ctx);
    return run;
}

static int count_off(const float *got, const float *ref, int64_t n, bool exact)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (exact ? memcmp(&got[i], &ref[i], sizeof(float)) != 0 : !(fabs(got[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i]))))
            bad++;
    return bad;
}

static void test_op(wgt_context *ctx, bool expect_direct)
{
    const int64_t B = 2, T = 32, D = 48, N = 1024;
    int64_t sizes[6] = {B * T * D, D, D, N * D, N, B * T * N};
    float lo[6] = {-2, 0.5f, -0.5f, -0.2f, -0.5f, -1}, hi[6] = {2, 1.5f, 0.5f, 0.2f, 0.5f, 1};
    float *data[6];
    for (int i = 0; i < 6; i++) data[i] = random_floats(sizes[i], lo[i], hi[i]);
    op_run fused = run_op(ctx, true, B, T, D, N, (const float *const *)data);
    op_run composed = run_op(ctx, false, B, T, D, N, (const float *const *)data);
    bool exact = ctx->backend_kind == WGT_BACKEND_CPU;
    static const char *names[5] = {"x", "norm weight", "norm bias", "weight", "bias"};
    if (fused.out && composed.out) {
        int bad = count_off(fused.out, composed.out, sizes[5], exact);
        CHECK(bad == 0, "%s: %d of %lld outputs differ (%s)", backend_name(ctx), bad, (long long)sizes[5],
              exact ? "bit for bit" : "1e-4");
        for (int i = 0; i < 5; i++) {
            CHECK(fused.grads[i] && composed.grads[i], "%s: gradient of %s", backend_name(ctx), names[i]);
            if (!fused.grads[i] || !composed.grads[i]) continue;
            bad = count_off(fused.grads[i], composed.grads[i], sizes[i], exact);
            CHECK(bad == 0, "%s: %d of %lld gradients of the %s differ", backend_name(ctx), bad, (long long)sizes[i],
                  names[i]);
        }
        if (expect_direct)
            CHECK(fused.transposes + 1 == composed.transposes,
                  "%s: the fused op ran %llu tiled transposes, the two calls %llu: the norm's transposed output "
                  "should replace one", backend_name(ctx), (unsigned long long)fused.transposes,
                  (unsigned long long)composed.transposes);
    }
    op_run_free(&fused), op_run_free(&composed);
    for (int i = 0; i < 6; i++) free(data[i]);
}

/* ------------------------------------------------------------- bad input */

static void expect_refused(wgt_context *ctx, wgt_tensor *out, wgt_status status, const char *what)
{
    CHECK(out == NULL, "%s: refused", what);
    CHECK(strstr(wgt_context_error_message(ctx), "wgt_layer_norm_linear") != NULL, "%s: the message names the call: %s",
          what, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, status, what);
}

static void test_bad_input(wgt_context *ctx)
{
    float v[64] = {0};
    wgt_tensor *x = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){4, 8}, v);
    wgt_tensor *w8 = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){8}, v);
    wgt_tensor *w7 = wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){7}, v);
    wgt_tensor *lin = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){6, 8}, v);
    wgt_tensor *lin_bad = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){6, 7}, v);
    wgt_tensor *xi = wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){4, 8}, v);
    expect_refused(ctx, wgt_layer_norm_linear(x, w7, NULL, 1e-5, lin, NULL), WGT_ERR_SHAPE_MISMATCH, "norm weight [7]");
    expect_refused(ctx, wgt_layer_norm_linear(x, w8, NULL, 1e-5, lin_bad, NULL), WGT_ERR_SHAPE_MISMATCH, "weight [6, 7]");
    expect_refused(ctx, wgt_layer_norm_linear(x, w8, w8, 1e-5, lin, w8), WGT_ERR_SHAPE_MISMATCH, "bias [8] for 6 outputs");
    expect_refused(ctx, wgt_layer_norm_linear(x, w8, NULL, -1, lin, NULL), WGT_ERR_INVALID_ARGUMENT, "eps -1");
    expect_refused(ctx, wgt_layer_norm_linear(xi, NULL, NULL, 1e-5, lin, NULL), WGT_ERR_DTYPE, "i32 x");
    CHECK(wgt_layer_norm_linear(NULL, w8, NULL, 1e-5, lin, NULL) == NULL, "NULL x");
    wgt_context_clear_error(ctx);
    wgt_tensor *ok = wgt_layer_norm_linear(x, w8, NULL, 1e-5, lin, NULL);
    CHECK(ok != NULL && wgt_tensor_dim(ok, 1) == 6, "a good call after the errors: %s", wgt_context_error_message(ctx));
    wgt_tensor_release(ok);
    wgt_tensor_release(x), wgt_tensor_release(w8), wgt_tensor_release(w7), wgt_tensor_release(lin);
    wgt_tensor_release(lin_bad), wgt_tensor_release(xi);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    /* the transposing 128 x 128 config for every product, so the small op test takes the copy path */
    wgt_context *forced = test_context_env(NULL, (const char *const[]){"WGT_MATMUL_CONFIG", "tile128x128k8t", NULL});
    CHECK(cpu && gpu && forced, "contexts");
    wgt_context *ctxs[2] = {cpu, gpu};
    for (int k = 0; k < 2; k++) {
        wgt_context *ctx = ctxs[k];
        if (!ctx) continue;
        int before = test_failed;
        int64_t live = wgt_context_live_tensors(ctx);
        test_kernel(ctx);
        test_op(ctx, false);
        test_bad_input(ctx);
        CHECK(wgt_context_live_tensors(ctx) == live, "%s: %lld tensors leaked", backend_name(ctx),
              (long long)(wgt_context_live_tensors(ctx) - live));
        printf("%s: %s\n", backend_name(ctx), test_failed == before ? "ok" : "FAILED");
        fflush(stdout);
    }
    if (forced) {
        int before = test_failed;
        test_op(forced, true);
        printf("webgpu, tile128x128k8t: %s\n", test_failed == before ? "ok" : "FAILED");
        wgt_context_destroy(forced);
    }
    if (gpu) wgt_context_destroy(gpu);
    if (cpu) wgt_context_destroy(cpu);
    return test_summary();
}
