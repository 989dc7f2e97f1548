/*
 * The fused neural-network ops on both backends: layer_norm, rms_norm,
 * cross_entropy, mse_loss, dropout, forward and backward.
 *
 *   forward   vs a reference computed here in double from the same (f16-rounded
 *             where the input is f16) host data, not by the library
 *   backward  vs the analytic formula computed here in double, and vs central
 *             finite differences of the forward through the public API
 *             (loss = sum(out * r) for a fixed random r, so d loss / d out = r)
 *   autograd  the same gradients through wgt_backward (the tape records a node)
 *   bad input wrong shapes/dtypes, eps < 0, p outside [0, 1), unknown reduction:
 *             the right status, and the context stays usable
 *
 * Tolerances (stated per check): forward f32 |got - ref| <= 1e-4 (1 + |ref|);
 * f16 outputs 4e-3 (1 + |ref|) (half precision rounding of the result);
 * backward vs formula 2e-4 (1 + |ref|); finite differences use h = 1e-2 on f32
 * and |fd - analytic| <= 3e-3 (1 + |analytic|) (truncation O(h^2) plus f32
 * rounding of the forward amplified by 1 / 2h).
 * Sizes: D = 1, 3, 769 (odd, scalar path), 1024 and 4100 (vec4 rows in
 * registers), 2046 and 8192 (the most slots a thread keeps), 3001 and 8200
 * (too long for registers: read again); row counts that are not a multiple of
 * anything (37), 601 rows of 384 (chunks of 3 rows in the one-pass backward)
 * and 2101 (every lane of the partial-sums kernel); views at aligned and odd
 * offsets, transposed, strided weights; the norms again on a context with
 * WGT_NORM_SUBGROUP=0 (a row per workgroup: lavapipe has subgroups, so by
 * default vec4 rows take a row per subgroup). Dropout's mask is checked against a
 * Philox written here from the paper's constants, and bit for bit across the
 * backends. A malformed kernel call is refused before any read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ops/nn_internal.h"
#include "test_util.h"

static uint32_t rng_state = 12345u;

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(test_xorshift(&rng_state) >> 8) / 16777216.0;
}

/* Host data of n values in [lo, hi), rounded to what dtype can hold. */
static double *random_values(int64_t n, double lo, double hi, wgt_dtype dtype)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        float f = (float)uniform(lo, hi);
        v[i] = dtype == WGT_F16 ? test_f16_to_f32(test_f32_to_f16(f)) : f;
    }
    return v;
}

static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const double *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *buf = malloc((size_t)(n ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == WGT_F16) ((uint16_t *)buf)[i] = test_f32_to_f16((float)v[i]);
        else ((float *)buf)[i] = (float)v[i];
    }
    wgt_tensor *t = wgt_tensor_from_host(ctx, dtype, ndim, shape, buf);
    free(buf);
    return t;
}

static wgt_tensor *upload_i32(wgt_context *ctx, int ndim, const int64_t *shape, const int32_t *v)
{
    return wgt_tensor_from_host(ctx, WGT_I32, ndim, shape, v);
}

/* Reads t (f32 or f16) as doubles; NULL (and a failed CHECK) on error. */
static double *download(wgt_tensor *t)
{
    if (!t) return NULL;
    int64_t n = wgt_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    void *buf = malloc((size_t)(n ? n : 1) * 4);
    wgt_dtype dt = wgt_tensor_dtype(t);
    wgt_status s = wgt_tensor_read(t, buf, (size_t)n * wgt_dtype_size(dt));
    CHECK(s == WGT_OK, "read: %s", wgt_context_error_message(wgt_tensor_context(t)));
    for (int64_t i = 0; i < n; i++)
        out[i] = dt == WGT_F16 ? test_f16_to_f32(((uint16_t *)buf)[i]) : ((float *)buf)[i];
    free(buf);
    return out;
}

/* Largest |got - ref| / (1 + |ref|); NaN positions must agree. */
static double compare(const double *got, const double *ref, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(ref[i]) || isnan(got[i])) {
            if (isnan(ref[i]) != isnan(got[i])) return INFINITY;
            continue;
        }
        double e = fabs(got[i] - ref[i]) / (1 + fabs(ref[i]));
        if (e > worst) worst = e;
    }
    return worst;
}

static double out_tolerance(wgt_dtype d) { return d == WGT_F16 ? 4e-3 : 1e-4; }

static const char *backend_name(wgt_context *ctx) { return wgt_context_backend(ctx) == WGT_BACKEND_CPU ? "cpu" : "webgpu"; }

/* ================================================================= norms */

/* Host reference of layer/rms norm forward (y) and of its backward for upstream
 * dy (dx, dw, db), all in double. */
static void norm_reference(bool rms, int64_t rows, int64_t d, const double *x, const double *w, const double *b,
                           double eps, const double *dy, double *y, double *dx, double *dw, double *db)
{
    for (int64_t i = 0; i < d; i++) dw[i] = db[i] = 0;
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * d, *gr = dy + r * d;
        double mean = 0, var = 0;
        if (!rms) {
            for (int64_t i = 0; i < d; i++) mean += xr[i];
            mean /= (double)d;
        }
        for (int64_t i = 0; i < d; i++) var += (xr[i] - mean) * (xr[i] - mean);
        double rstd = 1 / sqrt(var / (double)d + eps);
        double sg = 0, sgh = 0;
        for (int64_t i = 0; i < d; i++) {
            double h = (xr[i] - mean) * rstd, g = gr[i] * (w ? w[i] : 1);
            y[r * d + i] = h * (w ? w[i] : 1) + (b ? b[i] : 0);
            sg += g;
            sgh += g * h;
            dw[i] += gr[i] * h;
            db[i] += gr[i];
        }
        for (int64_t i = 0; i < d; i++) {
            double h = (xr[i] - mean) * rstd, g = gr[i] * (w ? w[i] : 1);
            dx[r * d + i] = rstd * (g - h * sgh / (double)d - (rms ? 0 : sg / (double)d));
        }
    }
}

static wgt_tensor *norm_run(bool rms, wgt_tensor *x, wgt_tensor *w, wgt_tensor *b, double eps)
{
    return rms ? wgt_rms_norm(x, w, eps) : wgt_layer_norm(x, w, b, eps);
}

/* sum(norm(x) * r) in double from the device's forward. */
static double norm_loss(bool rms, wgt_context *ctx, wgt_dtype dt, int ndim, const int64_t *shape, const double *x,
                        wgt_tensor *w, wgt_tensor *b, double eps, const double *r, int64_t n)
{
    wgt_tensor *xt = upload(ctx, dt, ndim, shape, x);
    wgt_tensor *y = norm_run(rms, xt, w, b, eps);
    double *yv = download(y), loss = 0;
    for (int64_t i = 0; yv && i < n; i++) loss += yv[i] * r[i];
    free(yv);
    wgt_tensor_release(y);
    wgt_tensor_release(xt);
    return loss;
}

static void test_norm_case(wgt_context *ctx, bool rms, int64_t rows, int64_t d, wgt_dtype dt, bool affine,
                           int layout)
{
    const char *name = rms ? "rms_norm" : "layer_norm";
    int64_t n = rows * d;
    double eps = 1e-5;
    /* an offset so the mean matters; weights around 1 */
    double *x = random_values(n, -1.5, 2.5, dt), *w = random_values(d, 0.5, 1.5, dt), *b = random_values(d, -1, 1, dt);
    double *r = random_values(n, -1, 1, dt); /* the upstream gradient, in x's dtype */
    double *y = malloc(sizeof(double) * (size_t)n), *dx = malloc(sizeof(double) * (size_t)n);
    double *dw = malloc(sizeof(double) * (size_t)d), *db = malloc(sizeof(double) * (size_t)d);
    norm_reference(rms, rows, d, x, affine ? w : NULL, affine && !rms ? b : NULL, eps, r, y, dx, dw, db);

    int64_t shape[2] = {rows, d}, tshape[2] = {d, rows}, dshape[1] = {d};
    wgt_tensor *xt;
    bool transposed = layout == 1, sliced = layout == 2;
    if (transposed) { /* a transposed view: the op must read it through its strides */
        double *xtr = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < d; j++) xtr[j * rows + i] = x[i * d + j];
        wgt_tensor *base = upload(ctx, dt, 2, tshape, xtr);
        xt = wgt_transpose(base, 0, 1);
        wgt_tensor_release(base);
        free(xtr);
    } else if (sliced) { /* rows 1.. of a bigger tensor: contiguous, at an offset of d elements */
        double *xs = malloc(sizeof(double) * (size_t)(n + d));
        for (int64_t i = 0; i < d; i++) xs[i] = 1e3; /* not part of the view */
        memcpy(xs + d, x, sizeof(double) * (size_t)n);
        wgt_tensor *base = upload(ctx, dt, 2, (int64_t[]){rows + 1, d}, xs);
        xt = wgt_slice(base, 0, 1, rows + 1, 1);
        wgt_tensor_release(base);
        free(xs);
    } else {
        xt = upload(ctx, dt, 2, shape, x);
    }
    wgt_tensor *wt = NULL, *bt = NULL;
    if (affine && sliced) { /* weight through a step-2 slice, bias at an offset of 4 */
        double *ws = malloc(sizeof(double) * (size_t)(2 * d)), *bs = malloc(sizeof(double) * (size_t)(d + 4));
        for (int64_t i = 0; i < d; i++) ws[2 * i] = w[i], ws[2 * i + 1] = -7;
        for (int64_t i = 0; i < 4; i++) bs[i] = 9;
        memcpy(bs + 4, b, sizeof(double) * (size_t)d);
        wgt_tensor *wbase = upload(ctx, dt, 1, (int64_t[]){2 * d}, ws), *bbase = upload(ctx, dt, 1, (int64_t[]){d + 4}, bs);
        wt = wgt_slice(wbase, 0, 0, 2 * d, 2);
        bt = rms ? NULL : wgt_slice(bbase, 0, 4, d + 4, 1);
        wgt_tensor_release(wbase), wgt_tensor_release(bbase);
        free(ws), free(bs);
    } else if (affine) {
        wt = upload(ctx, dt, 1, dshape, w);
        bt = rms ? NULL : upload(ctx, dt, 1, dshape, b);
    }
    wgt_tensor *yt = norm_run(rms, xt, wt, bt, eps);
    CHECK(yt && wgt_tensor_dtype(yt) == dt, "%s %s [%lld, %lld]: %s", name, backend_name(ctx), (long long)rows,
          (long long)d, wgt_context_error_message(ctx));
    double *yv = download(yt);
    double e = yv ? compare(yv, y, n) : INFINITY;
    CHECK(e <= out_tolerance(dt), "%s %s %s [%lld, %lld]%s%s forward: error %g", name, backend_name(ctx),
          wgt_dtype_name(dt), (long long)rows, (long long)d, affine ? " affine" : "", transposed ? " transposed" : sliced ? " sliced" : "", e);

    /* backward kernels vs the formula; f16: dy is f16 and dx is rounded to f16 */
    {
        double btol = dt == WGT_F16 ? 4e-3 : 2e-4;
        wgt_tensor *rt = upload(ctx, dt, 2, shape, r);
        /* stats as the forward saves them: run the tape-free forward again via autograd-less path */
        wgt_tensor *stats = NULL;
        int64_t sshape[2] = {rows, 2};
        double *sv = malloc(sizeof(double) * (size_t)(2 * rows));
        for (int64_t i = 0; i < rows; i++) { /* from the reference, in double: the kernel takes them as given */
            double mean = 0, var = 0;
            if (!rms) {
                for (int64_t j = 0; j < d; j++) mean += x[i * d + j];
                mean /= (double)d;
            }
            for (int64_t j = 0; j < d; j++) var += (x[i * d + j] - mean) * (x[i * d + j] - mean);
            sv[2 * i] = mean;
            sv[2 * i + 1] = 1 / sqrt(var / (double)d + eps);
        }
        stats = upload(ctx, WGT_F32, 2, sshape, sv);
        wgt_tensor *gx = NULL, *gw = NULL, *gb = NULL;
        wgt_status s = wgt_norm_backward(xt, wt, stats, rt, rms, &gx, NULL, affine ? &gw : NULL, affine && !rms ? &gb : NULL);
        CHECK(s == WGT_OK, "%s backward: %s", name, wgt_context_error_message(ctx));
        double *gxv = download(gx), *gwv = download(gw), *gbv = download(gb);
        double ex = gxv ? compare(gxv, dx, n) : INFINITY;
        CHECK(ex <= btol, "%s %s %s [%lld, %lld] dx vs formula: error %g", name, backend_name(ctx), wgt_dtype_name(dt),
              (long long)rows, (long long)d, ex);
        /* dx added into a gradient in place (dx_into, the autograd engine's
         * residual fold): each element the f32 sum of that gradient and the
         * dx the same kernel gives alone (with the weight gradients: the
         * fused kernel; without: the dx kernel, whose sums may round
         * differently), as a separate add gives; wrong dx_into is refused */
        if (dt == WGT_F32 && gxv && n > 0) {
            double *q = malloc(sizeof(double) * (size_t)n);
            for (int64_t i = 0; i < n; i++) q[i] = (double)((i * 7) % 13) / 5.0 - 1.2;
            for (int params = 0; params < 1 + affine; params++) {
                wgt_tensor *alone = NULL, *acc = upload(ctx, WGT_F32, 2, shape, q), *gx2 = NULL, *pw = NULL, *pb = NULL;
                s = wgt_norm_backward(xt, wt, stats, rt, rms, &alone, NULL, params ? &pw : NULL, NULL);
                double *dv = s == WGT_OK ? download(alone) : NULL;
                wgt_tensor_release(pw), pw = NULL;
                s = wgt_norm_backward(xt, wt, stats, rt, rms, &gx2, acc, params ? &pw : NULL, NULL);
                double *av = s == WGT_OK && gx2 == acc && dv ? download(acc) : NULL;
                int64_t off = av ? 0 : n;
                for (int64_t i = 0; av && i < n; i++) off += (float)av[i] != (float)q[i] + (float)dv[i];
                CHECK(s == WGT_OK && gx2 == acc && off == 0, "%s %s [%lld, %lld]%s dx into a gradient: %lld of %lld "
                      "elements differ from the f32 sums (%s)", name, backend_name(ctx), (long long)rows, (long long)d,
                      params ? " with dweight" : "", (long long)off, (long long)n, wgt_context_error_message(ctx));
                free(av), free(dv);
                wgt_tensor_release(pw), wgt_tensor_release(pb), wgt_tensor_release(alone), wgt_tensor_release(acc);
            }
            wgt_tensor *wrong = wgt_zeros(ctx, WGT_F16, 2, shape), *gx3 = NULL;
            s = wgt_norm_backward(xt, wt, stats, rt, rms, &gx3, wrong, NULL, NULL);
            CHECK(s == WGT_ERR_INVALID_ARGUMENT && gx3 == NULL && strstr(wgt_context_error_message(ctx), "f16"),
                  "%s %s: an f16 gradient to add into is refused with its dtype named: %s", name, backend_name(ctx),
                  wgt_context_error_message(ctx));
            wgt_context_clear_error(ctx);
            wgt_tensor_release(wrong);
            free(q);
        }
        if (affine) {
            double ew = gwv ? compare(gwv, dw, d) : INFINITY;
            CHECK(ew <= btol, "%s %s [%lld, %lld] dweight vs formula: error %g", name, backend_name(ctx),
                  (long long)rows, (long long)d, ew);
        }
        if (affine) { /* weight/bias gradients alone (x needs none): the partial-sums kernel without dx */
            wgt_tensor *gw2 = NULL, *gb2 = NULL;
            s = wgt_norm_backward(xt, wt, stats, rt, rms, NULL, NULL, &gw2, rms ? NULL : &gb2);
            double *gw2v = download(gw2), *gb2v = download(gb2);
            double e2 = gw2v ? compare(gw2v, dw, d) : INFINITY;
            if (!rms) e2 = fmax(e2, gb2v ? compare(gb2v, db, d) : INFINITY);
            CHECK(s == WGT_OK && e2 <= btol, "%s %s [%lld, %lld] dweight/dbias without dx: error %g", name,
                  backend_name(ctx), (long long)rows, (long long)d, e2);
            free(gw2v), free(gb2v);
            wgt_tensor_release(gw2), wgt_tensor_release(gb2);
        }
        if (affine && !rms) {
            double eb = gbv ? compare(gbv, db, d) : INFINITY;
            CHECK(eb <= btol, "%s %s [%lld, %lld] dbias vs formula: error %g", name, backend_name(ctx),
                  (long long)rows, (long long)d, eb);
        }
        /* central differences through the public forward, at a few elements of x, extrapolated
         * (Richardson: (4 D(h/2) - D(h)) / 3, error O(h^4)): a row of 3 can be curved enough that
         * D(1e-2) alone misses by 2% (layer_norm [37, 3], one element of a draw) */
        if (dt == WGT_F32 && layout == 0 && n <= 4096) {
            const double h = 1e-2;
            double *xp = malloc(sizeof(double) * (size_t)n);
            for (int k = 0; k < 4; k++) {
                int64_t i = (int64_t)(test_xorshift(&rng_state) % (uint32_t)n);
                double d_at[2];
                for (int half = 0; half < 2; half++) {
                    const double step = half ? h / 2 : h;
                    memcpy(xp, x, sizeof(double) * (size_t)n);
                    xp[i] = x[i] + step;
                    double lp = norm_loss(rms, ctx, dt, 2, shape, xp, wt, bt, eps, r, n);
                    xp[i] = x[i] - step;
                    double lm = norm_loss(rms, ctx, dt, 2, shape, xp, wt, bt, eps, r, n);
                    d_at[half] = (lp - lm) / (2 * step);
                }
                double fd = (4 * d_at[1] - d_at[0]) / 3, an = gxv ? gxv[i] : NAN;
                CHECK(fabs(fd - an) <= 3e-3 * (1 + fabs(an)), "%s %s [%lld, %lld] dx[%lld]: finite difference %g, analytic %g",
                      name, backend_name(ctx), (long long)rows, (long long)d, (long long)i, fd, an);
            }
            free(xp);
        }
        free(gxv), free(gwv), free(gbv), free(sv);
        wgt_tensor_release(gx), wgt_tensor_release(gw), wgt_tensor_release(gb);
        wgt_tensor_release(stats), wgt_tensor_release(rt);
    }
    free(yv);
    wgt_tensor_release(yt), wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(bt);
    free(x), free(w), free(b), free(r), free(y), free(dx), free(dw), free(db);
}

static void test_norms(wgt_context *ctx)
{
    /* slots per thread of 256: 2046 scalar and 8192 vec4 have 8 (the most kept
     * in registers); 3001 scalar and 8200 vec4 are too long and read again */
    static const int64_t cases[][2] = {{5, 1},    {37, 3},   {3, 769},  {4, 1024}, {2, 3001},
                                       {2, 4100}, {9, 64},   {3, 2046}, {2, 8192}, {2, 8200},
                                       {2101, 24}, /* 2101 partial rows to sum (every lane of PARTIALS_SUM) */
                                       {601, 384}, /* chunks of 3 rows (the last of 1) in the one-pass backward */
                                       {3, 512},   {3, 516}}; /* the longest vec4 rows a subgroup takes, the next */
    for (int rms = 0; rms < 2; rms++) {
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            test_norm_case(ctx, rms, cases[c][0], cases[c][1], WGT_F32, true, 0);
        }
        test_norm_case(ctx, rms, 37, 3, WGT_F32, false, 0);
        test_norm_case(ctx, rms, 6, 40, WGT_F32, true, 1);  /* transposed x */
        test_norm_case(ctx, rms, 6, 40, WGT_F32, true, 2);  /* x at an aligned offset: vec4 rows from there */
        test_norm_case(ctx, rms, 5, 21, WGT_F32, true, 2);  /* x at an odd offset */
        test_norm_case(ctx, rms, 7, 769, WGT_F16, true, 0);
        test_norm_case(ctx, rms, 5, 256, WGT_F16, false, 0);
        test_norm_case(ctx, rms, 4, 48, WGT_F16, true, 2);
    }
}

/* ======================================================== cross-entropy */

/* Per-row loss (NAN for out-of-range, 0 for ignored) and dlogits for per-row
 * scale g (0 where ignored), in double. */
static void ce_reference(int64_t rows, int64_t c, const double *logits, const int32_t *t, int64_t ignore,
                         const double *g, double *loss, double *dl)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *l = logits + r * c;
        double m = l[0], s = 0;
        for (int64_t i = 1; i < c; i++) m = l[i] > m ? l[i] : m;
        for (int64_t i = 0; i < c; i++) s += exp(l[i] - m);
        double lse = m + log(s);
        bool ignored = t[r] == ignore;
        loss[r] = ignored ? 0 : (t[r] < 0 || t[r] >= c) ? NAN : lse - l[t[r]];
        for (int64_t i = 0; i < c && dl; i++)
            dl[r * c + i] = ignored ? 0 : (exp(l[i] - lse) - (i == t[r])) * g[r];
    }
}

static double ce_loss_host(wgt_context *ctx, int64_t rows, int64_t c, const double *logits, wgt_tensor *targets,
                           wgt_reduction red, int64_t ignore)
{
    int64_t shape[2] = {rows, c};
    wgt_tensor *lt = upload(ctx, WGT_F32, 2, shape, logits);
    wgt_tensor *l = wgt_cross_entropy(lt, targets, red, ignore);
    double *v = download(l), out = v ? v[0] : NAN;
    free(v);
    wgt_tensor_release(l), wgt_tensor_release(lt);
    return out;
}

static void test_ce_case(wgt_context *ctx, int64_t rows, int64_t c, wgt_dtype dt, bool with_ignored)
{
    const int64_t ignore = -100;
    int64_t n = rows * c, shape[2] = {rows, c}, tshape[1] = {rows};
    double *logits = random_values(n, -4, 4, dt);
    int32_t *t = malloc(sizeof(int32_t) * (size_t)rows);
    int64_t valid = 0;
    for (int64_t r = 0; r < rows; r++) {
        t[r] = (int32_t)(test_xorshift(&rng_state) % (uint32_t)c);
        if (with_ignored && r % 3 == 1) t[r] = (int32_t)ignore;
        valid += t[r] != ignore;
    }
    double *loss = malloc(sizeof(double) * (size_t)rows), *dl = malloc(sizeof(double) * (size_t)n);
    double *ones = malloc(sizeof(double) * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) ones[r] = 1.0 / (double)valid; /* MEAN's scale */
    ce_reference(rows, c, logits, t, ignore, ones, loss, dl);
    double sum = 0;
    for (int64_t r = 0; r < rows; r++) sum += loss[r];

    wgt_tensor *lt = upload(ctx, dt, 2, shape, logits), *tt = upload_i32(ctx, 1, tshape, t);
    wgt_tensor *none = wgt_cross_entropy(lt, tt, WGT_REDUCTION_NONE, ignore);
    wgt_tensor *total = wgt_cross_entropy(lt, tt, WGT_REDUCTION_SUM, ignore);
    wgt_tensor *mean = wgt_cross_entropy(lt, tt, WGT_REDUCTION_MEAN, ignore);
    CHECK(none && total && mean, "cross_entropy %s [%lld, %lld]: %s", backend_name(ctx), (long long)rows, (long long)c,
          wgt_context_error_message(ctx));
    CHECK(none && wgt_tensor_ndim(none) == 1 && wgt_tensor_dim(none, 0) == rows && mean && wgt_tensor_ndim(mean) == 0,
          "cross_entropy shapes");
    double *nv = download(none), *sv = download(total), *mv = download(mean);
    double tol = dt == WGT_F16 ? 1e-3 : 1e-4; /* the loss is f32 either way; f16 only rounds the inputs */
    double e = nv ? compare(nv, loss, rows) : INFINITY;
    CHECK(e <= tol, "cross_entropy %s %s [%lld, %lld] NONE: error %g", backend_name(ctx), wgt_dtype_name(dt),
          (long long)rows, (long long)c, e);
    double mref = sum / (double)valid;
    CHECK(sv && fabs(sv[0] - sum) <= tol * (1 + fabs(sum)), "cross_entropy SUM %g vs %g", sv ? sv[0] : NAN, sum);
    CHECK(mv && fabs(mv[0] - mref) <= tol * (1 + fabs(mref)), "cross_entropy MEAN %g vs %g", mv ? mv[0] : NAN, mref);

    /* backward of MEAN: the rule's scale g = 1 / count on every row */
    int64_t one[1] = {1};
    double inv = 1.0 / (double)valid;
    wgt_tensor *g = upload(ctx, WGT_F32, 0, one, &inv);
    wgt_tensor *lse = NULL;
    { /* lse from the reference, as the forward saves it */
        double *lsev = malloc(sizeof(double) * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) {
            double m = logits[r * c], s = 0;
            for (int64_t i = 1; i < c; i++) m = logits[r * c + i] > m ? logits[r * c + i] : m;
            for (int64_t i = 0; i < c; i++) s += exp(logits[r * c + i] - m);
            lsev[r] = m + log(s);
        }
        lse = upload(ctx, WGT_F32, 1, tshape, lsev);
        free(lsev);
    }
    wgt_tensor *dlt = wgt_cross_entropy_backward(lt, tt, lse, g, ignore);
    CHECK(dlt && wgt_tensor_dtype(dlt) == dt, "cross_entropy backward: %s", wgt_context_error_message(ctx));
    double *dlv = download(dlt);
    double ed = dlv ? compare(dlv, dl, n) : INFINITY;
    CHECK(ed <= (dt == WGT_F16 ? 4e-3 : 2e-4), "cross_entropy %s %s [%lld, %lld] dlogits vs formula: error %g",
          backend_name(ctx), wgt_dtype_name(dt), (long long)rows, (long long)c, ed);
    if (dt == WGT_F32 && n <= 4096) {
        const double h = 1e-2;
        double *lp = malloc(sizeof(double) * (size_t)n);
        for (int k = 0; k < 4; k++) {
            int64_t i = (int64_t)(test_xorshift(&rng_state) % (uint32_t)n);
            memcpy(lp, logits, sizeof(double) * (size_t)n);
            lp[i] = logits[i] + h;
            double up = ce_loss_host(ctx, rows, c, lp, tt, WGT_REDUCTION_MEAN, ignore);
            lp[i] = logits[i] - h;
            double down = ce_loss_host(ctx, rows, c, lp, tt, WGT_REDUCTION_MEAN, ignore);
            double fd = (up - down) / (2 * h), an = dlv ? dlv[i] : NAN;
            CHECK(fabs(fd - an) <= 3e-3 * (1 + fabs(an)), "cross_entropy %s [%lld, %lld] dlogits[%lld]: fd %g, analytic %g",
                  backend_name(ctx), (long long)rows, (long long)c, (long long)i, fd, an);
        }
        free(lp);
    }
    free(nv), free(sv), free(mv), free(dlv);
    wgt_tensor_release(none), wgt_tensor_release(total), wgt_tensor_release(mean);
    wgt_tensor_release(g), wgt_tensor_release(lse), wgt_tensor_release(dlt);
    wgt_tensor_release(lt), wgt_tensor_release(tt);
    free(logits), free(t), free(loss), free(dl), free(ones);
}

static void test_ce_special(wgt_context *ctx)
{
    /* an out-of-range target gives NaN for its row (and the mean); all ignored
     * gives a NaN mean (0 / 0, as PyTorch) and a zero sum */
    int64_t shape[2] = {3, 4}, tshape[1] = {3};
    double logits[12] = {1, 2, 3, 4, 0, 0, 0, 0, -1, 5, 2, 0};
    int32_t bad[3] = {0, 7, 2}, ignored[3] = {-1, -1, -1};
    wgt_tensor *lt = upload(ctx, WGT_F32, 2, shape, logits);
    wgt_tensor *bt = upload_i32(ctx, 1, tshape, bad), *it = upload_i32(ctx, 1, tshape, ignored);
    wgt_tensor *l1 = wgt_cross_entropy(lt, bt, WGT_REDUCTION_NONE, -100);
    wgt_tensor *l2 = wgt_cross_entropy(lt, it, WGT_REDUCTION_MEAN, -1);
    wgt_tensor *l3 = wgt_cross_entropy(lt, it, WGT_REDUCTION_SUM, -1);
    double *v1 = download(l1), *v2 = download(l2), *v3 = download(l3);
    CHECK(v1 && !isnan(v1[0]) && isnan(v1[1]) && !isnan(v1[2]), "cross_entropy %s: out-of-range target -> NaN row",
          backend_name(ctx));
    CHECK(v2 && isnan(v2[0]), "cross_entropy %s: all ignored MEAN is NaN", backend_name(ctx));
    CHECK(v3 && v3[0] == 0, "cross_entropy %s: all ignored SUM is 0", backend_name(ctx));
    free(v1), free(v2), free(v3);
    wgt_tensor_release(l1), wgt_tensor_release(l2), wgt_tensor_release(l3);
    /* strided views: logits read through a transpose, targets through a step-2 slice */
    {
        double lt_host[12];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) lt_host[j * 3 + i] = logits[i * 4 + j];
        int32_t t6[6] = {1, 9, 3, 9, 0, 9};
        wgt_tensor *base = upload(ctx, WGT_F32, 2, (int64_t[]){4, 3}, lt_host), *tr = wgt_transpose(base, 0, 1);
        wgt_tensor *tall = upload_i32(ctx, 1, (int64_t[]){6}, t6), *ts2 = wgt_slice(tall, 0, 0, 6, 2);
        int32_t tc[3] = {1, 3, 0};
        wgt_tensor *tcont = upload_i32(ctx, 1, tshape, tc);
        wgt_tensor *a1 = wgt_cross_entropy(tr, ts2, WGT_REDUCTION_NONE, -100);
        wgt_tensor *a2 = wgt_cross_entropy(lt, tcont, WGT_REDUCTION_NONE, -100);
        double *v5 = download(a1), *v6 = download(a2);
        CHECK(v5 && v6 && compare(v5, v6, 3) == 0, "cross_entropy %s: strided logits and targets give the contiguous result",
              backend_name(ctx));
        free(v5), free(v6);
        wgt_tensor_release(a1), wgt_tensor_release(a2), wgt_tensor_release(base), wgt_tensor_release(tr);
        wgt_tensor_release(tall), wgt_tensor_release(ts2), wgt_tensor_release(tcont);
    }
    /* logits at an offset (rows 1.. of a bigger tensor), C = 8 (vec4 rows) and 5:
     * forward and backward equal those of the same values at offset 0 */
    for (int64_t c = 5; c <= 8; c += 3) {
        double *big = random_values(4 * c, -2, 2, WGT_F32);
        int32_t tv[3] = {1, 4, 0};
        wgt_tensor *base = upload(ctx, WGT_F32, 2, (int64_t[]){4, c}, big), *sl = wgt_slice(base, 0, 1, 4, 1);
        wgt_tensor *flat = upload(ctx, WGT_F32, 2, (int64_t[]){3, c}, big + c), *tg = upload_i32(ctx, 1, tshape, tv);
        wgt_tensor *la = wgt_cross_entropy(sl, tg, WGT_REDUCTION_NONE, -100), *lb = wgt_cross_entropy(flat, tg, WGT_REDUCTION_NONE, -100);
        double one = 1;
        wgt_tensor *g1 = upload(ctx, WGT_F32, 0, tshape, &one);
        double lsev[3];
        for (int r = 0; r < 3; r++) {
            double m = -INFINITY, sum = 0;
            for (int64_t i = 0; i < c; i++) m = fmax(m, big[(r + 1) * c + i]);
            for (int64_t i = 0; i < c; i++) sum += exp(big[(r + 1) * c + i] - m);
            lsev[r] = m + log(sum);
        }
        wgt_tensor *lse3 = upload(ctx, WGT_F32, 1, tshape, lsev);
        wgt_tensor *da = wgt_cross_entropy_backward(sl, tg, lse3, g1, -100), *dbk = wgt_cross_entropy_backward(flat, tg, lse3, g1, -100);
        double *va = download(la), *vb = download(lb), *dav = download(da), *dbv = download(dbk);
        CHECK(va && vb && compare(va, vb, 3) == 0 && dav && dbv && compare(dav, dbv, 3 * c) == 0,
              "cross_entropy %s: logits at an offset (C = %lld) give the same loss and dlogits", backend_name(ctx),
              (long long)c);
        free(va), free(vb), free(dav), free(dbv), free(big);
        wgt_tensor_release(base), wgt_tensor_release(sl), wgt_tensor_release(flat), wgt_tensor_release(tg);
        wgt_tensor_release(la), wgt_tensor_release(lb), wgt_tensor_release(g1), wgt_tensor_release(lse3);
        wgt_tensor_release(da), wgt_tensor_release(dbk);
    }
    /* logits [2, 3, 2] and targets [2, 3]: the same rows as [6, 2] and [6] */
    {
        double lg3[12] = {0.5, -1, 2, 0.25, -0.5, 1.5, 3, -2, 0, 1, 1, 1};
        int32_t t3v[6] = {1, 0, 1, 0, 1, 1};
        wgt_tensor *a3 = upload(ctx, WGT_F32, 3, (int64_t[]){2, 3, 2}, lg3), *b3 = upload_i32(ctx, 2, (int64_t[]){2, 3}, t3v);
        wgt_tensor *a2 = upload(ctx, WGT_F32, 2, (int64_t[]){6, 2}, lg3), *b2 = upload_i32(ctx, 1, (int64_t[]){6}, t3v);
        wgt_tensor *r3 = wgt_cross_entropy(a3, b3, WGT_REDUCTION_NONE, -100), *r2 = wgt_cross_entropy(a2, b2, WGT_REDUCTION_NONE, -100);
        double *w3v = download(r3), *w2v = download(r2);
        CHECK(r3 && wgt_tensor_ndim(r3) == 2 && w3v && w2v && compare(w3v, w2v, 6) == 0,
              "cross_entropy %s: [2, 3, C] logits give the [6, C] rows in shape [2, 3]", backend_name(ctx));
        free(w3v), free(w2v);
        wgt_tensor_release(a3), wgt_tensor_release(b3), wgt_tensor_release(a2), wgt_tensor_release(b2);
        wgt_tensor_release(r3), wgt_tensor_release(r2);
    }
    /* unbatched logits [C] with a scalar target */
    int64_t cshape[1] = {4};
    int32_t t0 = 3;
    wgt_tensor *row = upload(ctx, WGT_F32, 1, cshape, logits), *ts = upload_i32(ctx, 0, cshape, &t0);
    wgt_tensor *l4 = wgt_cross_entropy(row, ts, WGT_REDUCTION_NONE, -100);
    double *v4 = download(l4), ref = log(exp(1) + exp(2) + exp(3) + exp(4)) - 4;
    CHECK(v4 && wgt_tensor_ndim(l4) == 0 && fabs(v4[0] - ref) < 1e-5, "cross_entropy %s [C] -> []: %g vs %g",
          backend_name(ctx), v4 ? v4[0] : NAN, ref);
    free(v4);
    wgt_tensor_release(l4), wgt_tensor_release(row), wgt_tensor_release(ts);
    wgt_tensor_release(lt), wgt_tensor_release(bt), wgt_tensor_release(it);
}

static void test_cross_entropy(wgt_context *ctx)
{
    test_ce_case(ctx, 37, 1, WGT_F32, false);
    test_ce_case(ctx, 37, 3, WGT_F32, true);
    test_ce_case(ctx, 5, 769, WGT_F32, true);
    test_ce_case(ctx, 4, 1000, WGT_F32, true);
    test_ce_case(ctx, 3, 5003, WGT_F32, false);
    test_ce_case(ctx, 6, 1000, WGT_F16, true);
    test_ce_special(ctx);
}

/* ============================================================== mse_loss */

static void test_mse(wgt_context *ctx)
{
    int64_t shape[2] = {7, 13}, n = 91;
    double *a = random_values(n, -2, 2, WGT_F32), *b = random_values(n, -2, 2, WGT_F32);
    wgt_tensor *at = upload(ctx, WGT_F32, 2, shape, a), *bt = upload(ctx, WGT_F32, 2, shape, b);
    double sum = 0, *sq = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) sum += (sq[i] = (a[i] - b[i]) * (a[i] - b[i]));
    wgt_tensor *none = wgt_mse_loss(at, bt, WGT_REDUCTION_NONE), *s = wgt_mse_loss(at, bt, WGT_REDUCTION_SUM);
    wgt_tensor *m = wgt_mse_loss(at, bt, WGT_REDUCTION_MEAN);
    double *nv = download(none), *sv = download(s), *mv = download(m);
    CHECK(nv && compare(nv, sq, n) <= 1e-6, "mse_loss %s NONE", backend_name(ctx));
    CHECK(sv && fabs(sv[0] - sum) <= 1e-5 * sum, "mse_loss %s SUM %g vs %g", backend_name(ctx), sv ? sv[0] : NAN, sum);
    CHECK(mv && fabs(mv[0] - sum / (double)n) <= 1e-5 * sum / (double)n, "mse_loss %s MEAN", backend_name(ctx));
    /* backward of MEAN with upstream 1: d input = 2 (a - b) / n, d target its negation */
    int64_t one[1] = {1};
    double up = 1;
    wgt_tensor *g = upload(ctx, WGT_F32, 0, one, &up), *da = NULL, *db = NULL;
    wgt_status st = wgt_mse_loss_backward(at, bt, g, WGT_REDUCTION_MEAN, &da, &db);
    CHECK(st == WGT_OK, "mse_loss backward: %s", wgt_context_error_message(ctx));
    double *dav = download(da), *dbv = download(db), *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ref[i] = 2 * (a[i] - b[i]) / (double)n;
    CHECK(dav && compare(dav, ref, n) <= 1e-6, "mse_loss %s d input", backend_name(ctx));
    for (int64_t i = 0; i < n; i++) ref[i] = -ref[i];
    CHECK(dbv && compare(dbv, ref, n) <= 1e-6, "mse_loss %s d target", backend_name(ctx));
    /* one finite difference through the public forward */
    const double h = 1e-2;
    double keep = a[5];
    a[5] = keep + h;
    wgt_tensor *ap = upload(ctx, WGT_F32, 2, shape, a);
    a[5] = keep - h;
    wgt_tensor *am = upload(ctx, WGT_F32, 2, shape, a);
    a[5] = keep;
    wgt_tensor *lp = wgt_mse_loss(ap, bt, WGT_REDUCTION_MEAN), *lm = wgt_mse_loss(am, bt, WGT_REDUCTION_MEAN);
    double *lpv = download(lp), *lmv = download(lm);
    double fd = lpv && lmv ? (lpv[0] - lmv[0]) / (2 * h) : NAN;
    CHECK(dav && fabs(fd - dav[5]) <= 1e-3 * (1 + fabs(dav[5])), "mse_loss %s fd %g vs %g", backend_name(ctx), fd,
          dav ? dav[5] : NAN);
    free(lpv), free(lmv), free(nv), free(sv), free(mv), free(dav), free(dbv), free(ref), free(sq), free(a), free(b);
    wgt_tensor_release(ap), wgt_tensor_release(am), wgt_tensor_release(lp), wgt_tensor_release(lm);
    wgt_tensor_release(none), wgt_tensor_release(s), wgt_tensor_release(m), wgt_tensor_release(g);
    wgt_tensor_release(da), wgt_tensor_release(db), wgt_tensor_release(at), wgt_tensor_release(bt);
}

/* =============================================================== dropout */

/* Philox-4x32-10, written here from the paper's constants (not the library's
 * header), to check the mask is the documented one. */
static uint32_t philox_word(uint64_t seed, uint32_t counter, int word)
{
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32), c0 = counter, c1 = 0, c2 = 0, c3 = 0;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    uint32_t w[4] = {c0, c1, c2, c3};
    return w[word];
}

static void test_dropout(wgt_context *ctx, wgt_context *other)
{
    int64_t shape[2] = {33, 61}, n = 33 * 61;
    double *x = random_values(n, 0.5, 2, WGT_F32); /* nonzero, so a zero output means dropped */
    const double p = 0.3;
    const uint64_t seed = 0x123456789abcull;
    wgt_tensor *xt = upload(ctx, WGT_F32, 2, shape, x);
    wgt_tensor *y = wgt_dropout(xt, p, seed);
    double *yv = download(y);
    int64_t dropped = 0, wrong = 0;
    float scale = (float)(1.0 / (1.0 - p));
    for (int64_t i = 0; yv && i < n; i++) {
        /* element i's uniform: word i % 4 of counter i / 4 */
        double u = (double)(philox_word(seed, (uint32_t)(i / 4), (int)(i % 4)) >> 8) / 16777216.0;
        bool keep = (float)u >= (float)p;
        dropped += !keep;
        double expect = keep ? (double)((float)x[i] * scale) : 0.0;
        wrong += yv[i] != expect;
    }
    CHECK(yv && wrong == 0, "dropout %s: %lld elements differ from the documented Philox mask", backend_name(ctx),
          (long long)wrong);
    double sigma = sqrt(p * (1 - p) * (double)n);
    CHECK(fabs((double)dropped - p * (double)n) <= 4 * sigma, "dropout %s: %lld of %lld dropped, p = %g",
          backend_name(ctx), (long long)dropped, (long long)n, p);
    /* the other backend gives the same bits */
    if (other) {
        wgt_tensor *xo = upload(other, WGT_F32, 2, shape, x), *yo = wgt_dropout(xo, p, seed);
        double *yov = download(yo);
        CHECK(yov && yv && memcmp(yov, yv, sizeof(double) * (size_t)n) == 0, "dropout: backends disagree");
        free(yov);
        wgt_tensor_release(xo), wgt_tensor_release(yo);
    }
    /* p = 0: a copy */
    wgt_tensor *y0 = wgt_dropout(xt, 0.0, seed);
    double *y0v = download(y0);
    CHECK(y0v && compare(y0v, x, n) == 0, "dropout %s p = 0 is a copy", backend_name(ctx));
    /* backward: the same mask and scale applied to the upstream gradient */
    double *ones = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ones[i] = 1;
    wgt_tensor *gt = upload(ctx, WGT_F32, 2, shape, ones), *dx = wgt_dropout_apply(gt, p, seed, "test");
    double *dxv = download(dx);
    int64_t mismatch = 0;
    for (int64_t i = 0; dxv && yv && i < n; i++) mismatch += (dxv[i] != 0) != (yv[i] != 0);
    CHECK(dxv && mismatch == 0, "dropout %s backward mask: %lld mismatches", backend_name(ctx), (long long)mismatch);
    /* dropout_add(r, x) = r + dropout(x): the same mask, one kernel; equal to
     * the host's float sum and to the two ops on this backend, bit for bit */
    double *r = random_values(n, -1, 1, WGT_F32);
    wgt_tensor *rt = upload(ctx, WGT_F32, 2, shape, r);
    wgt_tensor *ya = wgt_dropout_add(rt, xt, p, seed), *yb = wgt_add(rt, y);
    double *yav = download(ya), *ybv = download(yb);
    int64_t off = 0;
    for (int64_t i = 0; yav && yv && i < n; i++) off += yav[i] != (double)((float)r[i] + (float)yv[i]);
    CHECK(yav && off == 0, "dropout_add %s: %lld elements differ from r + dropout(x)", backend_name(ctx),
          (long long)off);
    CHECK(yav && ybv && memcmp(yav, ybv, sizeof(double) * (size_t)n) == 0,
          "dropout_add %s: differs from wgt_add(r, wgt_dropout(x))", backend_name(ctx));
    if (other) {
        wgt_tensor *xo = upload(other, WGT_F32, 2, shape, x), *ro = upload(other, WGT_F32, 2, shape, r);
        wgt_tensor *yo = wgt_dropout_add(ro, xo, p, seed);
        double *yov = download(yo);
        CHECK(yov && yav && memcmp(yov, yav, sizeof(double) * (size_t)n) == 0, "dropout_add: backends disagree");
        free(yov);
        wgt_tensor_release(xo), wgt_tensor_release(ro), wgt_tensor_release(yo);
    }
    free(yav), free(ybv), free(r);
    wgt_tensor_release(ya), wgt_tensor_release(yb), wgt_tensor_release(rt);
    free(ones), free(dxv), free(y0v), free(yv), free(x);
    wgt_tensor_release(gt), wgt_tensor_release(dx), wgt_tensor_release(y0), wgt_tensor_release(y);
    wgt_tensor_release(xt);
}

/* ============================================================== autograd */

/* The tape: loss = cross_entropy(layer_norm(x, w, b)) and mse(dropout(rms_norm)) gradients
 * through wgt_backward match the backward functions called directly. */
static void test_autograd(wgt_context *ctx)
{
    int64_t rows = 6, d = 8, shape[2] = {6, 8}, dshape[1] = {8}, tshape[1] = {6};
    double *x = random_values(rows * d, -1, 1, WGT_F32), *w = random_values(d, 0.5, 1.5, WGT_F32);
    double *b = random_values(d, -0.5, 0.5, WGT_F32);
    int32_t t[6] = {0, 7, 3, -100, 5, 1};
    wgt_tensor *xt = upload(ctx, WGT_F32, 2, shape, x), *wt = upload(ctx, WGT_F32, 1, dshape, w);
    wgt_tensor *bt = upload(ctx, WGT_F32, 1, dshape, b), *tt = upload_i32(ctx, 1, tshape, t);
    wgt_tensor_set_requires_grad(xt, true);
    wgt_tensor_set_requires_grad(wt, true);
    wgt_tensor_set_requires_grad(bt, true);
    wgt_tensor *y = wgt_layer_norm(xt, wt, bt, 1e-5);
    wgt_tensor *loss = wgt_cross_entropy(y, tt, WGT_REDUCTION_MEAN, -100);
    wgt_status s = wgt_backward(loss);
    CHECK(s == WGT_OK, "autograd %s: backward through layer_norm + cross_entropy: %s", backend_name(ctx),
          wgt_context_error_message(ctx));
    /* the same by finite differences of the whole loss, for a few x, w, b entries */
    double *gx = download(wgt_tensor_grad(xt)), *gw = download(wgt_tensor_grad(wt)), *gb = download(wgt_tensor_grad(bt));
    const double h = 1e-2;
    double *vals[3] = {x, w, b}, *grads[3] = {gx, gw, gb};
    int64_t sizes[3] = {rows * d, d, d};
    for (int which = 0; which < 3; which++) {
        for (int k = 0; k < 2; k++) {
            int64_t i = (int64_t)(test_xorshift(&rng_state) % (uint32_t)sizes[which]);
            double keep = vals[which][i], l[2];
            for (int side = 0; side < 2; side++) {
                vals[which][i] = keep + (side ? -h : h);
                wgt_tensor *x2 = upload(ctx, WGT_F32, 2, shape, x), *w2 = upload(ctx, WGT_F32, 1, dshape, w);
                wgt_tensor *b2 = upload(ctx, WGT_F32, 1, dshape, b);
                wgt_tensor *y2 = wgt_layer_norm(x2, w2, b2, 1e-5), *l2 = wgt_cross_entropy(y2, tt, WGT_REDUCTION_MEAN, -100);
                double *lv = download(l2);
                l[side] = lv ? lv[0] : NAN;
                free(lv);
                wgt_tensor_release(x2), wgt_tensor_release(w2), wgt_tensor_release(b2), wgt_tensor_release(y2),
                    wgt_tensor_release(l2);
            }
            vals[which][i] = keep;
            double fd = (l[0] - l[1]) / (2 * h), an = grads[which] ? grads[which][i] : NAN;
            CHECK(fabs(fd - an) <= 3e-3 * (1 + fabs(an)), "autograd %s: %s[%lld] fd %g vs grad %g", backend_name(ctx),
                  which == 0 ? "x" : which == 1 ? "weight" : "bias", (long long)i, fd, an);
        }
    }
    free(gx), free(gw), free(gb);
    wgt_tensor_release(y), wgt_tensor_release(loss);

    /* mse(dropout(rms_norm(x, w)), target): analytic chain on the host */
    wgt_zero_grad((wgt_tensor *const[]){xt, wt}, 2);
    double *target = random_values(rows * d, -1, 1, WGT_F32);
    wgt_tensor *tg = upload(ctx, WGT_F32, 2, shape, target);
    wgt_tensor *r = wgt_rms_norm(xt, wt, 1e-6), *dr = wgt_dropout(r, 0.25, 99), *ml = wgt_mse_loss(dr, tg, WGT_REDUCTION_SUM);
    s = wgt_backward(ml);
    CHECK(s == WGT_OK, "autograd %s: backward through rms_norm + dropout + mse: %s", backend_name(ctx),
          wgt_context_error_message(ctx));
    double *rv = download(r), *drv = download(dr), *gw2 = download(wgt_tensor_grad(wt));
    double *dy = malloc(sizeof(double) * (size_t)(rows * d)), *ry = malloc(sizeof(double) * (size_t)(rows * d));
    double *rdx = malloc(sizeof(double) * (size_t)(rows * d)), *rdw = malloc(sizeof(double) * (size_t)d);
    double *rdb = malloc(sizeof(double) * (size_t)d);
    for (int64_t i = 0; rv && drv && i < rows * d; i++) { /* d loss / d r = 2 (dr - target) * mask / (1 - p) */
        bool kept = drv[i] != 0;
        dy[i] = kept ? 2 * (drv[i] - target[i]) / 0.75 : 0;
    }
    norm_reference(true, rows, d, x, w, NULL, 1e-6, dy, ry, rdx, rdw, rdb);
    CHECK(gw2 && compare(gw2, rdw, d) <= 1e-4, "autograd %s: rms_norm weight grad through dropout and mse: error %g",
          backend_name(ctx), gw2 ? compare(gw2, rdw, d) : INFINITY);
    free(rv), free(drv), free(gw2), free(dy), free(ry), free(rdx), free(rdw), free(rdb), free(target);
    wgt_tensor_release(r), wgt_tensor_release(dr), wgt_tensor_release(ml), wgt_tensor_release(tg);
    wgt_tensor_release(xt), wgt_tensor_release(wt), wgt_tensor_release(bt), wgt_tensor_release(tt);
    free(x), free(w), free(b);
}

/* Every NN op through the tape: loss = sum(f(inputs) * W) for a fixed random W,
 * wgt_backward, and each input's gradient against central differences
 * (h = 1e-2, |fd - grad| <= 3e-3 (1 + |grad|)) at up to 6 elements per input. */
enum { NN_LAYER_NORM_3D, NN_RMS_NORM, NN_RMS_NORM_PLAIN, NN_XENT_NONE, NN_XENT_SUM, NN_MSE_MEAN, NN_MSE_NONE, NN_DROPOUT,
       NN_LAYER_NORM_BIAS, NN_DROPOUT_ADD, NN_CASES };

static wgt_tensor *nn_case_forward(int id, wgt_tensor **in, wgt_tensor *targets)
{
    switch (id) {
    case NN_LAYER_NORM_3D: return wgt_layer_norm(in[0], in[1], in[2], 1e-5);
    case NN_RMS_NORM: return wgt_rms_norm(in[0], in[1], 1e-6);
    case NN_RMS_NORM_PLAIN: return wgt_rms_norm(in[0], NULL, 1e-6);
    case NN_XENT_NONE: return wgt_cross_entropy(in[0], targets, WGT_REDUCTION_NONE, 2);
    case NN_XENT_SUM: return wgt_cross_entropy(in[0], targets, WGT_REDUCTION_SUM, 2);
    case NN_MSE_MEAN: return wgt_mse_loss(in[0], in[1], WGT_REDUCTION_MEAN);
    case NN_MSE_NONE: return wgt_mse_loss(in[0], in[1], WGT_REDUCTION_NONE);
    case NN_DROPOUT: return wgt_dropout(in[0], 0.4, 5);
    case NN_LAYER_NORM_BIAS: return wgt_layer_norm(in[0], NULL, in[1], 1e-5); /* a bias without a weight */
    case NN_DROPOUT_ADD: return wgt_dropout_add(in[0], in[1], 0.4, 5);
    default: return NULL;
    }
}

static void tape_gradcheck(wgt_context *ctx, int id)
{
    static const char *const names[NN_CASES] = {"layer_norm 3-D", "rms_norm", "rms_norm without weight",
                                                "cross_entropy NONE", "cross_entropy SUM", "mse_loss MEAN",
                                                "mse_loss NONE", "dropout", "layer_norm bias only",
                                                "dropout_add"};
    int n_in = id == NN_LAYER_NORM_3D                                                                  ? 3
               : id == NN_RMS_NORM || id == NN_MSE_MEAN || id == NN_MSE_NONE || id == NN_LAYER_NORM_BIAS ||
                       id == NN_DROPOUT_ADD
                   ? 2
                                                                                                         : 1;
    int ndim[3] = {2, 1, 1};
    int64_t shapes[3][3] = {{4, 6}, {6}, {6}};
    if (id == NN_LAYER_NORM_3D) ndim[0] = 3, shapes[0][0] = 2, shapes[0][1] = 3, shapes[0][2] = 5, shapes[1][0] = shapes[2][0] = 5;
    if (id == NN_MSE_MEAN || id == NN_MSE_NONE || id == NN_DROPOUT_ADD) ndim[1] = 2, shapes[1][0] = 4, shapes[1][1] = 6;
    int32_t t[4] = {0, 5, 2, 3}; /* 2 is the ignore_index */
    wgt_scope_push(ctx);
    wgt_tensor *targets = upload_i32(ctx, 1, (int64_t[]){4}, t);
    double *vals[3];
    int64_t sizes[3];
    wgt_tensor *in[3] = {NULL};
    for (int k = 0; k < n_in; k++) {
        sizes[k] = 1;
        for (int d = 0; d < ndim[k]; d++) sizes[k] *= shapes[k][d];
        vals[k] = random_values(sizes[k], k == 1 && id == NN_RMS_NORM ? 0.5 : -2, 2, WGT_F32);
        in[k] = upload(ctx, WGT_F32, ndim[k], shapes[k], vals[k]);
        wgt_tensor_set_requires_grad(in[k], true);
    }
    wgt_tensor *out = nn_case_forward(id, in, targets);
    int64_t n_out = out ? wgt_tensor_numel(out) : 0;
    double *wv = random_values(n_out, -1, 1, WGT_F32);
    wgt_tensor *w = out ? upload(ctx, WGT_F32, wgt_tensor_ndim(out), wgt_tensor_shape(out), wv) : NULL;
    wgt_tensor *loss = w ? wgt_sum(wgt_mul(out, w), NULL, 0, false) : NULL;
    wgt_status s = loss ? wgt_backward(loss) : WGT_ERR_INTERNAL;
    CHECK(s == WGT_OK, "tape %s %s: %s", names[id], backend_name(ctx), wgt_context_error_message(ctx));
    for (int k = 0; k < n_in && s == WGT_OK; k++) {
        double *grad = download(wgt_tensor_grad(in[k]));
        CHECK(grad != NULL, "tape %s %s: input %d has no gradient", names[id], backend_name(ctx), k);
        for (int e = 0; grad && e < 6 && e < sizes[k]; e++) {
            int64_t i = (int64_t)(test_xorshift(&rng_state) % (uint32_t)sizes[k]);
            double keep = vals[k][i], l[2];
            for (int side = 0; side < 2; side++) {
                vals[k][i] = keep + (side ? -1e-2 : 1e-2);
                wgt_tensor *pin[3] = {NULL};
                for (int j = 0; j < n_in; j++) pin[j] = upload(ctx, WGT_F32, ndim[j], shapes[j], vals[j]);
                wgt_tensor *po = nn_case_forward(id, pin, targets);
                double *ov = download(po);
                l[side] = 0;
                for (int64_t q = 0; ov && q < n_out; q++) l[side] += ov[q] * wv[q];
                free(ov);
            }
            vals[k][i] = keep;
            double fd = (l[0] - l[1]) / 2e-2;
            CHECK(fabs(fd - grad[i]) <= 3e-3 * (1 + fabs(grad[i])), "tape %s %s: d/d input %d [%lld]: fd %g, grad %g",
                  names[id], backend_name(ctx), k, (long long)i, fd, grad[i]);
        }
        free(grad);
    }
    for (int k = 0; k < n_in; k++) free(vals[k]);
    free(wv);
    wgt_scope_pop(ctx);
}

/* ============================================================ bad input */

static void test_bad_input(wgt_context *ctx)
{
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s2[1] = {2}, s3[1] = {3};
    wgt_tensor *x = wgt_ones(ctx, WGT_F32, 2, s23), *w4 = wgt_ones(ctx, WGT_F32, 1, s4);
    wgt_tensor *xi = wgt_ones(ctx, WGT_I32, 2, s23), *t2 = wgt_zeros(ctx, WGT_I32, 1, s2);
    wgt_tensor *t3 = wgt_zeros(ctx, WGT_I32, 1, s3), *tf = wgt_zeros(ctx, WGT_F32, 1, s2);
    wgt_tensor *y3 = wgt_ones(ctx, WGT_F32, 1, s3), *scalar = wgt_ones(ctx, WGT_F32, 0, NULL);
    CHECK(!wgt_layer_norm(x, w4, NULL, 1e-5), "layer_norm with weight [4] for D = 3");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "layer_norm weight shape");
    CHECK(!wgt_layer_norm(x, NULL, w4, 1e-5), "layer_norm with bias [4]");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "layer_norm bias shape");
    CHECK(!wgt_layer_norm(xi, NULL, NULL, 1e-5), "layer_norm of i32");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "layer_norm dtype");
    CHECK(!wgt_layer_norm(x, NULL, NULL, -1), "layer_norm eps < 0");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "layer_norm eps");
    CHECK(!wgt_rms_norm(scalar, NULL, 1e-5), "rms_norm of a scalar");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "rms_norm rank 0");
    CHECK(!wgt_layer_norm(NULL, NULL, NULL, 1e-5), "layer_norm(NULL) returns NULL");
    CHECK(!wgt_cross_entropy(x, tf, WGT_REDUCTION_MEAN, -100), "cross_entropy with f32 targets");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "cross_entropy target dtype");
    CHECK(!wgt_cross_entropy(x, t3, WGT_REDUCTION_MEAN, -100), "cross_entropy with targets [3] for 2 rows");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "cross_entropy target shape");
    CHECK(!wgt_cross_entropy(x, t2, (wgt_reduction)7, -100), "cross_entropy with reduction 7");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "cross_entropy reduction");
    CHECK(!wgt_cross_entropy(xi, t2, WGT_REDUCTION_SUM, -100), "cross_entropy of i32 logits");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "cross_entropy logits dtype");
    CHECK(!wgt_mse_loss(x, y3, WGT_REDUCTION_MEAN), "mse_loss of [2, 3] and [3]");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "mse_loss shapes");
    CHECK(!wgt_mse_loss(x, xi, WGT_REDUCTION_MEAN), "mse_loss with an i32 target");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "mse_loss dtype");
    CHECK(!wgt_dropout(x, 1.0, 1), "dropout p = 1");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "dropout p = 1");
    CHECK(!wgt_dropout(x, -0.1, 1), "dropout p < 0");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "dropout p < 0");
    CHECK(!wgt_dropout(x, NAN, 1), "dropout p = NaN");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "dropout p NaN");
    CHECK(!wgt_dropout(xi, 0.5, 1), "dropout of i32");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "dropout dtype");
    CHECK(!wgt_dropout_add(x, y3, 0.5, 1), "dropout_add of [2, 3] and [3]");
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "dropout_add shapes");
    CHECK(!wgt_dropout_add(x, x, 1.0, 1), "dropout_add p = 1");
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "dropout_add p = 1");
    CHECK(!wgt_dropout_add(x, xi, 0.5, 1), "dropout_add of i32");
    check_error_and_recover(ctx, WGT_ERR_DTYPE, "dropout_add dtype");
    /* a malformed kernel call (weight [4] for rows of 3) reaching a backend is
     * refused before anything reads it: the WebGPU kernels index unchecked */
    {
        wgt_tensor *y = wgt_tensor_empty(ctx, WGT_F32, 2, s23), *st = wgt_tensor_empty(ctx, WGT_F32, 2, (int64_t[]){2, 2});
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = "test malformed norm";
        call.nn.kernel = WGT_NN_NORM;
        call.nn.has_weight = true;
        call.n_inputs = 2;
        call.inputs[0] = x->view;
        call.inputs[1] = w4->view;
        call.n_outputs = 2;
        call.outputs[0] = y->view;
        call.outputs[1] = st->view;
        wgt_status st_run = wgt_run_kernel(ctx, &call);
        CHECK(st_run == WGT_ERR_INVALID_ARGUMENT || st_run == WGT_ERR_UNSUPPORTED, "%s: malformed NN call gave %s",
              backend_name(ctx), wgt_status_string(st_run));
        wgt_context_clear_error(ctx);
        call.inputs[1] = y->view; /* [2, 3] as a weight of 3: still not [D] */
        st_run = wgt_run_kernel(ctx, &call);
        CHECK(st_run != WGT_OK, "%s: a [2, 3] weight for D = 3 is refused", backend_name(ctx));
        wgt_context_clear_error(ctx);
        wgt_tensor_release(y), wgt_tensor_release(st);
    }
    /* after all that, the ops still work */
    wgt_tensor *ok = wgt_layer_norm(x, NULL, NULL, 1e-5);
    double *v = download(ok);
    CHECK(v && v[0] == 0, "layer_norm of a constant row is 0 after errors (got %g)", v ? v[0] : NAN);
    free(v);
    wgt_tensor_release(ok);
    wgt_tensor_release(x), wgt_tensor_release(w4), wgt_tensor_release(xi), wgt_tensor_release(t2);
    wgt_tensor_release(t3), wgt_tensor_release(tf), wgt_tensor_release(y3), wgt_tensor_release(scalar);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    CHECK(cpu != NULL, "cpu context");
    CHECK(gpu != NULL, "webgpu context");
    wgt_context *ctxs[2] = {cpu, gpu};
    for (int k = 0; k < 2; k++) {
        wgt_context *ctx = ctxs[k];
        if (!ctx) continue;
        int before = test_failed;
        int64_t live = wgt_context_live_tensors(ctx);
        test_norms(ctx);
        test_cross_entropy(ctx);
        test_mse(ctx);
        test_dropout(ctx, k == 1 ? cpu : NULL);
        test_autograd(ctx);
        for (int id = 0; id < NN_CASES; id++) tape_gradcheck(ctx, id);
        test_bad_input(ctx);
        CHECK(wgt_context_live_tensors(ctx) == live, "%s: %lld tensors leaked", backend_name(ctx),
              (long long)(wgt_context_live_tensors(ctx) - live));
        printf("%s: %s\n", backend_name(ctx), test_failed == before ? "ok" : "FAILED");
        fflush(stdout);
    }
    /* the norms' workgroup-per-row kernel, which adapters with subgroups (lavapipe too) leave for
     * nn_norm_subgroup.wgsl on vec4 rows, and browsers without them still run */
    wgt_context *rows = test_context_env(NULL, (const char *const[]){"WGT_NORM_SUBGROUP", "0", NULL});
    CHECK(rows != NULL, "webgpu context with WGT_NORM_SUBGROUP=0");
    if (rows) {
        int before = test_failed;
        test_norms(rows);
        printf("webgpu, WGT_NORM_SUBGROUP=0: %s\n", test_failed == before ? "ok" : "FAILED");
        wgt_context_destroy(rows);
    }
    if (gpu) wgt_context_destroy(gpu);
    if (cpu) wgt_context_destroy(cpu);
    return test_summary();
}
