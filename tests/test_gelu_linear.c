/*
 * wgt_gelu_linear (an MLP's activation and second projection as one op)
 * against the two calls it stands for, wgt_linear(wgt_gelu(h), w, b), on the
 * CPU backend and on WebGPU with and without the GEMM's GELU-gradient
 * epilogue (WGT_GELU_EPILOGUE=0: the product, then the elementwise slope).
 *
 * The two calls' gradients come from other rules (GELU's elementwise rule,
 * linear's), each checked against finite differences (test_autograd) and
 * PyTorch fixtures (test_golden), so they are an independent reference here.
 * Checked: out equals the two calls' bit for bit (it is them); dh, dw, db
 * agree within f32 rounding of a reordered formula; the epilogue path runs
 * one dispatch fewer in the backward than the two calls, and the knob-off
 * path as many; shapes with edge tiles, a bias and none, rows that do not
 * fold (a transposed h), and bad arguments (named in the message, context
 * usable after).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct run {
    float *out, *dh, *dw, *db;
    uint64_t backward_dispatches;
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->dh);
    free(r->dw);
    free(r->db);
    memset(r, 0, sizeof(*r));
}

static float *read_all(wgt_tensor *t)
{
    int64_t n = t ? wgt_tensor_numel(t) : 0;
    float *host = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (t && host && wgt_tensor_read(t, host, sizeof(float) * (size_t)n) != WGT_OK) {
        free(host);
        return NULL;
    }
    return host;
}

static wgt_tensor *upload(wgt_context *ctx, int ndim, const int64_t *shape, uint32_t seed)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *host = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) host[i] = (float)(test_xorshift(&seed) % 4001) / 1000.0f - 2.0f;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, ndim, shape, host);
    free(host);
    return t;
}

/* h [rows.., in] (transposed: h is the transpose of an [in, rows] upload),
 * w [out, in], b [out] or none; fused: wgt_gelu_linear, else the two calls.
 * Backward of sum(out * g) for a fixed g. */
static bool forward_backward(wgt_context *ctx, int ndim, const int64_t *h_shape, int64_t out_f, bool bias,
                             bool transposed, bool fused, run *r)
{
    wgt_scope_push(ctx);
    int64_t in = h_shape[ndim - 1], rows = 1;
    for (int d = 0; d < ndim - 1; d++) rows *= h_shape[d];
    wgt_tensor *h = NULL;
    if (transposed) { /* 2-D only: an [in, rows] tensor read as [rows, in] */
        wgt_tensor *base = upload(ctx, 2, (int64_t[]){in, rows}, 11);
        h = base ? wgt_transpose(base, 0, 1) : NULL;
    } else {
        h = upload(ctx, ndim, h_shape, 11);
    }
    wgt_tensor *w = upload(ctx, 2, (int64_t[]){out_f, in}, 12);
    wgt_tensor *b = bias ? upload(ctx, 1, (int64_t[]){out_f}, 13) : NULL;
    int64_t out_shape[4];
    memcpy(out_shape, h_shape, sizeof(int64_t) * (size_t)ndim);
    out_shape[ndim - 1] = out_f;
    wgt_tensor *g = upload(ctx, ndim, out_shape, 14);
    bool ok = h && w && (!bias || b) && g;
    if (ok) {
        /* h a leaf here (a transposed view's gradient goes to the view's base) */
        wgt_tensor *leaf = h;
        wgt_tensor_set_requires_grad(leaf, true);
        wgt_tensor_set_requires_grad(w, true);
        if (b) wgt_tensor_set_requires_grad(b, true);
        wgt_tensor *out = fused ? wgt_gelu_linear(leaf, w, b) : wgt_linear(wgt_gelu(leaf), w, b);
        wgt_execution_stats before = {0}, after = {0};
        wgt_execution_stats_get(ctx, &before);
        ok = out && wgt_backward_ex(out, g, false) == WGT_OK;
        wgt_execution_stats_get(ctx, &after);
        r->backward_dispatches = after.dispatches - before.dispatches;
        if (ok) {
            r->out = read_all(out);
            r->dh = read_all(wgt_tensor_grad(leaf));
            r->dw = read_all(wgt_tensor_grad(w));
            r->db = b ? read_all(wgt_tensor_grad(b)) : NULL;
            ok = r->out && r->dh && r->dw && (!b || r->db);
        }
    }
    CHECK(ok, "%s: %s", fused ? "wgt_gelu_linear" : "linear(gelu)", wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_scope_pop(ctx);
    return ok;
}

/* max |x - y| / (1 + |y|) over n */
static double worst(const float *x, const float *y, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]) / (1.0 + fabs((double)y[i]));
        if (!(d <= e)) e = d; /* NaN sticks */
    }
    return e;
}

/* One shape on one context: fused against the two calls. dispatch_delta: the
 * two calls' backward dispatches minus the fused op's that must be seen (-1:
 * not checked). */
static void compare(wgt_context *ctx, const char *label, int ndim, const int64_t *h_shape, int64_t out_f, bool bias,
                    bool transposed, int dispatch_delta)
{
    run f = {0}, c = {0};
    if (!forward_backward(ctx, ndim, h_shape, out_f, bias, transposed, true, &f) ||
        !forward_backward(ctx, ndim, h_shape, out_f, bias, transposed, false, &c)) {
        run_free(&f);
        run_free(&c);
        return;
    }
    int64_t rows = 1, in = h_shape[ndim - 1];
    for (int d = 0; d < ndim - 1; d++) rows *= h_shape[d];
    CHECK(memcmp(f.out, c.out, sizeof(float) * (size_t)(rows * out_f)) == 0, "%s: out differs from linear(gelu(h))",
          label);
    double eh = worst(f.dh, c.dh, rows * in), ew = worst(f.dw, c.dw, out_f * in);
    double eb = bias ? worst(f.db, c.db, out_f) : 0;
    CHECK(eh <= 1e-5, "%s: dh off by %.3g (relative)", label, eh);
    CHECK(ew <= 1e-5, "%s: dw off by %.3g", label, ew);
    CHECK(eb <= 1e-5, "%s: db off by %.3g", label, eb);
    if (dispatch_delta >= 0)
        CHECK(c.backward_dispatches == f.backward_dispatches + (uint64_t)dispatch_delta,
              "%s: backward dispatches %llu fused, %llu for the two calls (expected %d fewer)", label,
              (unsigned long long)f.backward_dispatches, (unsigned long long)c.backward_dispatches, dispatch_delta);
    run_free(&f);
    run_free(&c);
}

static void shapes(wgt_context *ctx, const char *backend, int delta)
{
    char label[96];
    snprintf(label, sizeof label, "%s [3, 40, 48] -> 56, bias", backend);
    compare(ctx, label, 3, (int64_t[]){3, 40, 48}, 56, true, false, delta);
    snprintf(label, sizeof label, "%s [128, 64] -> 64 (whole tiles)", backend);
    compare(ctx, label, 2, (int64_t[]){128, 64}, 64, false, false, delta);
    snprintf(label, sizeof label, "%s [37, 29] -> 19 (edges)", backend);
    compare(ctx, label, 2, (int64_t[]){37, 29}, 19, true, false, delta);
    snprintf(label, sizeof label, "%s [33, 20]^T h -> 24 (rows from a transpose)", backend);
    compare(ctx, label, 2, (int64_t[]){20, 33}, 24, false, true, -1);
    snprintf(label, sizeof label, "%s [1, 16] -> 8 (one row)", backend);
    compare(ctx, label, 2, (int64_t[]){1, 16}, 8, true, false, -1);
}

static void bad_arguments(wgt_context *ctx, const char *backend)
{
    wgt_scope_push(ctx);
    wgt_tensor *h = upload(ctx, 2, (int64_t[]){4, 6}, 1), *w = upload(ctx, 2, (int64_t[]){5, 7}, 2);
    wgt_tensor *b = upload(ctx, 1, (int64_t[]){4}, 3), *w_ok = upload(ctx, 2, (int64_t[]){5, 6}, 4);
    wgt_tensor *out = wgt_gelu_linear(h, w, NULL);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH &&
              strstr(wgt_context_error_message(ctx), "wgt_gelu_linear") &&
              strstr(wgt_context_error_message(ctx), "[5, 7]"),
          "%s: a weight of the wrong width is refused by name: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_gelu_linear(h, w_ok, b);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_SHAPE_MISMATCH && strstr(wgt_context_error_message(ctx), "bias"),
          "%s: a bias of the wrong length is refused: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    wgt_tensor *h16 = wgt_cast(h, WGT_F16), *w16 = wgt_cast(w_ok, WGT_F16);
    wgt_tensor_set_requires_grad(w16, true);
    out = wgt_gelu_linear(h16, w16, NULL);
    CHECK(!out && wgt_context_status(ctx) == WGT_ERR_UNSUPPORTED && strstr(wgt_context_error_message(ctx), "f16"),
          "%s: f16 with a gradient is refused: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
    out = wgt_gelu_linear(h, w_ok, NULL); /* the context is usable */
    CHECK(out != NULL, "%s: a good call after the bad ones: %s", backend, wgt_context_error_message(ctx));
    wgt_scope_pop(ctx);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    if (cpu) {
        shapes(cpu, "cpu", -1); /* the CPU runs the epilogue as two kernels either way */
        bad_arguments(cpu, "cpu");
    }
    if (gpu) {
        shapes(gpu, "webgpu", 1); /* the elementwise slope is gone */
        bad_arguments(gpu, "webgpu");
    }
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    wgt_context *off = test_context_env(&o, (const char *[]){"WGT_GELU_EPILOGUE", "0", NULL});
    if (off) shapes(off, "webgpu epilogue off", 0); /* product + elementwise: as many dispatches */
    CHECK(cpu && gpu && off, "contexts");
    wgt_context_destroy(off);
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
