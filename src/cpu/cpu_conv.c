/*
 * CPU reference of the convolution-family kernels (WGT_KERNEL_CONV; contracts
 * in src/core/backend.h): conv2d forward and both backward passes, max / avg /
 * adaptive avg pooling forward and backward, batch norm forward and backward.
 *
 * This backend is what the GPU is compared with, so it is written as the
 * formulas read: direct loops, values loaded as double, every sum in double.
 * Every view is contiguous (the front-end makes it so). Work is split over
 * threads by output element groups that no two threads share, so there are
 * no atomics and the result does not depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "core/conv_call.h"
#include "cpu/cpu_internal.h"

static bool is_float(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16; }

bool cpu_conv_supports(const wgt_kernel_call *call)
{
    if ((unsigned)call->conv.kernel >= WGT_CONV_KERNEL_COUNT) return false;
    if (call->n_inputs != wgt_conv_call_inputs(call) || call->n_outputs < wgt_conv_call_outputs(call)) return false;
    bool pool_max = call->conv.pool_mode == WGT_POOL_MAX;
    for (int i = 0; i < call->n_inputs; i++) {
        bool argmax = call->conv.kernel == WGT_POOL_BACKWARD && pool_max && i == 1;
        if (argmax ? call->inputs[i].dtype != WGT_I32 : !is_float(call->inputs[i].dtype)) return false;
    }
    for (int i = 0; i < wgt_conv_call_outputs(call); i++) {
        bool argmax = call->conv.kernel == WGT_POOL_FORWARD && pool_max && i == 1;
        if (argmax ? call->outputs[i].dtype != WGT_I32 : !is_float(call->outputs[i].dtype)) return false;
    }
    return true;
}

/* Element i of a contiguous view. */
static inline double ld(const wgt_tensor_view *v, int64_t i)
{
    return cpu_load_f64(cpu_view_data(v) + (size_t)i * cpu_dtype_size(v->dtype), v->dtype);
}

static inline void st(const wgt_tensor_view *v, int64_t i, double value)
{
    cpu_store_f64(cpu_view_data(v) + (size_t)i * cpu_dtype_size(v->dtype), v->dtype, value);
}

/* ------------------------------------------------------------ convolution */

/* Parallel loops only pay off with this many multiply-adds; below it the
 * threads' start and barrier (which spin on busy cores) cost more. */
#define CONV_PARALLEL_MACS 2000000.0

/* The view's elements as doubles (NULL when out of memory). Loading once
 * keeps the dtype switch out of the inner loops. */
static double *load_all(const wgt_tensor_view *v)
{
    int64_t n = cpu_numel(v->ndim, v->shape);
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; d && i < n; i++) d[i] = ld(v, i);
    return d;
}

static wgt_status no_memory(cpu_backend *b, const wgt_kernel_call *call)
{
    return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "no host memory for the convolution's operands");
}

static wgt_status conv_forward(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *y = &call->outputs[0];
    int64_t N = call->conv.n, C = call->conv.c, H = call->conv.h, W = call->conv.w, K = call->conv.k;
    int64_t OH = call->conv.oh, OW = call->conv.ow, KH = call->conv.kh, KW = call->conv.kw;
    int64_t sh = call->conv.stride_h, sw = call->conv.stride_w, pt = call->conv.pad_top, pl = call->conv.pad_left;
    int64_t dh = call->conv.dil_h, dw = call->conv.dil_w, cg = C / call->conv.groups, kg = K / call->conv.groups;
    double *x = load_all(&call->inputs[0]), *w = load_all(&call->inputs[1]);
    double *bias = call->conv.has_bias ? load_all(&call->inputs[2]) : NULL;
    if (!x || !w || (call->conv.has_bias && !bias)) {
        free(x), free(w), free(bias);
        return no_memory(b, call);
    }
    bool parallel = (double)N * K * OH * OW * cg * KH * KW > CONV_PARALLEL_MACS;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t nk = 0; nk < N * K; nk++) {
        int64_t n = nk / K, co = nk % K, g = co / kg;
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double acc = bias ? bias[co] : 0.0;
                for (int64_t ci = 0; ci < cg; ci++) {
                    const double *xp = x + (n * C + g * cg + ci) * H * W, *wp = w + (co * cg + ci) * KH * KW;
                    for (int64_t a = 0; a < KH; a++) {
                        int64_t ih = i * sh - pt + a * dh;
                        if (ih < 0 || ih >= H) continue;
                        for (int64_t e = 0; e < KW; e++) {
                            int64_t iw = j * sw - pl + e * dw;
                            if (iw >= 0 && iw < W) acc += wp[a * KW + e] * xp[ih * W + iw];
                        }
                    }
                }
                st(y, ((n * K + co) * OH + i) * OW + j, acc);
            }
    }
    free(x), free(w), free(bias);
    return WGT_OK;
}

static wgt_status conv_backward_input(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *dx = &call->outputs[0];
    int64_t N = call->conv.n, C = call->conv.c, H = call->conv.h, W = call->conv.w, K = call->conv.k;
    int64_t OH = call->conv.oh, OW = call->conv.ow, KH = call->conv.kh, KW = call->conv.kw;
    int64_t sh = call->conv.stride_h, sw = call->conv.stride_w, pt = call->conv.pad_top, pl = call->conv.pad_left;
    int64_t dh = call->conv.dil_h, dw = call->conv.dil_w, cg = C / call->conv.groups, kg = K / call->conv.groups;
    double *dy = load_all(&call->inputs[0]), *w = load_all(&call->inputs[1]);
    if (!dy || !w) {
        free(dy), free(w);
        return no_memory(b, call);
    }
    bool parallel = (double)N * C * H * W * kg * KH * KW > CONV_PARALLEL_MACS;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t nc = 0; nc < N * C; nc++) {
        int64_t n = nc / C, c = nc % C, g = c / cg, ci = c % cg;
        for (int64_t ih = 0; ih < H; ih++)
            for (int64_t iw = 0; iw < W; iw++) {
                double acc = 0;
                for (int64_t a = 0; a < KH; a++) {
                    int64_t t = ih + pt - a * dh;
                    if (t < 0 || t % sh) continue;
                    int64_t i = t / sh;
                    if (i >= OH) continue;
                    for (int64_t e = 0; e < KW; e++) {
                        int64_t u = iw + pl - e * dw;
                        if (u < 0 || u % sw) continue;
                        int64_t j = u / sw;
                        if (j >= OW) continue;
                        for (int64_t co = g * kg; co < (g + 1) * kg; co++)
                            acc += dy[((n * K + co) * OH + i) * OW + j] * w[((co * cg + ci) * KH + a) * KW + e];
                    }
                }
                st(dx, ((n * C + c) * H + ih) * W + iw, acc);
            }
    }
    free(dy), free(w);
    return WGT_OK;
}

/* Per (split, output channel): walk the split's (n, i, j) once and add each
 * dy element times its input window into that channel's weights. */
static wgt_status conv_backward_weight(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *dwt = &call->outputs[0];
    int64_t C = call->conv.c, H = call->conv.h, W = call->conv.w, K = call->conv.k;
    int64_t OH = call->conv.oh, OW = call->conv.ow, KH = call->conv.kh, KW = call->conv.kw;
    int64_t sh = call->conv.stride_h, sw = call->conv.stride_w, pt = call->conv.pad_top, pl = call->conv.pad_left;
    int64_t dh = call->conv.dil_h, dw = call->conv.dil_w, cg = C / call->conv.groups, kg = K / call->conv.groups;
    int64_t total = call->conv.n * OH * OW, len = call->conv.split_len > 0 ? call->conv.split_len : total;
    int64_t splits = total ? (total + len - 1) / len : 1, wsize = K * cg * KH * KW, per = cg * KH * KW;
    double *x = load_all(&call->inputs[0]), *dy = load_all(&call->inputs[1]);
    double *acc_all = calloc((size_t)(splits * K * per > 0 ? splits * K * per : 1), sizeof(double));
    if (!x || !dy || !acc_all) {
        free(x), free(dy), free(acc_all);
        return no_memory(b, call);
    }
    bool parallel = (double)total * K * per > CONV_PARALLEL_MACS;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t sk = 0; sk < splits * K; sk++) {
        int64_t s = sk / K, co = sk % K, g = co / kg;
        int64_t r0 = s * len, r1 = r0 + len < total ? r0 + len : total;
        double *acc = acc_all + sk * per;
        for (int64_t r = r0; r < r1; r++) {
            int64_t n = r / (OH * OW), i = r / OW % OH, j = r % OW;
            double gy = dy[((n * K + co) * OH + i) * OW + j];
            if (gy == 0) continue;
            for (int64_t ci = 0; ci < cg; ci++) {
                const double *xp = x + (n * C + g * cg + ci) * H * W;
                for (int64_t a = 0; a < KH; a++) {
                    int64_t ih = i * sh - pt + a * dh;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t e = 0; e < KW; e++) {
                        int64_t iw = j * sw - pl + e * dw;
                        if (iw >= 0 && iw < W) acc[(ci * KH + a) * KW + e] += gy * xp[ih * W + iw];
                    }
                }
            }
        }
        for (int64_t q = 0; q < per; q++) st(dwt, s * wsize + co * per + q, acc[q]);
    }
    free(x), free(dy), free(acc_all);
    return WGT_OK;
}

/* ---------------------------------------------------------------- pooling */

/* The window of output (i, j), PyTorch's arithmetic: rows [*h0, *h1) stepping
 * by the dilation, *size the avg divisor. */
typedef struct pool_window {
    int64_t h0, h1, w0, w1, divisor;
} pool_window;

static pool_window window_of(const wgt_kernel_call *call, int64_t i, int64_t j)
{
    const int64_t H = call->conv.h, W = call->conv.w;
    pool_window win;
    if (call->conv.pool_mode == WGT_POOL_ADAPTIVE_AVG) {
        int64_t OH = call->conv.oh, OW = call->conv.ow;
        win.h0 = i * H / OH, win.h1 = ((i + 1) * H + OH - 1) / OH;
        win.w0 = j * W / OW, win.w1 = ((j + 1) * W + OW - 1) / OW;
        win.divisor = (win.h1 - win.h0) * (win.w1 - win.w0);
        return win;
    }
    int64_t h0 = i * call->conv.stride_h - call->conv.pad_top, w0 = j * call->conv.stride_w - call->conv.pad_left;
    if (call->conv.pool_mode == WGT_POOL_MAX) {
        int64_t h1 = h0 + (call->conv.kh - 1) * call->conv.dil_h + 1, w1 = w0 + (call->conv.kw - 1) * call->conv.dil_w + 1;
        win.h1 = h1 < H ? h1 : H, win.w1 = w1 < W ? w1 : W;
        while (h0 < 0) h0 += call->conv.dil_h;
        while (w0 < 0) w0 += call->conv.dil_w;
        win.h0 = h0, win.w0 = w0, win.divisor = 1;
        return win;
    }
    int64_t h1 = h0 + call->conv.kh, w1 = w0 + call->conv.kw;
    if (h1 > H + call->conv.pad_top) h1 = H + call->conv.pad_top;
    if (w1 > W + call->conv.pad_left) w1 = W + call->conv.pad_left;
    int64_t size = (h1 - h0) * (w1 - w0);
    win.h0 = h0 > 0 ? h0 : 0, win.w0 = w0 > 0 ? w0 : 0;
    win.h1 = h1 < H ? h1 : H, win.w1 = w1 < W ? w1 : W;
    win.divisor = call->conv.count_include_pad ? size : (win.h1 - win.h0) * (win.w1 - win.w0);
    return win;
}

static wgt_status pool_forward(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *y = &call->outputs[0];
    const wgt_tensor_view *arg = call->conv.pool_mode == WGT_POOL_MAX ? &call->outputs[1] : NULL;
    int64_t planes = call->conv.n * call->conv.c, H = call->conv.h, W = call->conv.w;
    int64_t OH = call->conv.oh, OW = call->conv.ow;
    bool max = arg != NULL;
    int64_t dh = max ? call->conv.dil_h : 1, dw = max ? call->conv.dil_w : 1;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (planes * H * W > CPU_PARALLEL_THRESHOLD)
    for (int64_t p = 0; p < planes; p++) {
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                pool_window win = window_of(call, i, j);
                int64_t o = (p * OH + i) * OW + j;
                if (max) {
                    double best = -INFINITY;
                    int64_t where = win.h0 * W + win.w0;
                    for (int64_t ih = win.h0; ih < win.h1; ih += dh)
                        for (int64_t iw = win.w0; iw < win.w1; iw += dw) {
                            double v = ld(x, p * H * W + ih * W + iw);
                            if (v > best || isnan(v)) best = v, where = ih * W + iw;
                        }
                    st(y, o, best);
                    int32_t w32 = (int32_t)where;
                    memcpy(cpu_view_data(arg) + (size_t)o * 4, &w32, 4);
                } else {
                    double sum = 0;
                    for (int64_t ih = win.h0; ih < win.h1; ih++)
                        for (int64_t iw = win.w0; iw < win.w1; iw++) sum += ld(x, p * H * W + ih * W + iw);
                    st(y, o, win.h0 >= win.h1 || win.w0 >= win.w1 ? 0.0 : sum / (double)win.divisor);
                }
            }
    }
    return WGT_OK;
}

static wgt_status pool_backward(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *dy = &call->inputs[0], *dx = &call->outputs[0];
    const wgt_tensor_view *arg = call->conv.pool_mode == WGT_POOL_MAX ? &call->inputs[1] : NULL;
    int64_t planes = call->conv.n * call->conv.c, H = call->conv.h, W = call->conv.w;
    int64_t OH = call->conv.oh, OW = call->conv.ow;
    double *acc_all = calloc((size_t)(planes > 0 ? planes : 1), sizeof(double) * (size_t)(H * W > 0 ? H * W : 1));
    if (!acc_all) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "no host memory for %lld planes", (long long)planes);
#pragma omp parallel for num_threads(b->threads) schedule(static) if (planes * H * W > CPU_PARALLEL_THRESHOLD)
    for (int64_t p = 0; p < planes; p++) {
        double *acc = acc_all + p * H * W;
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                int64_t o = (p * OH + i) * OW + j;
                double g = ld(dy, o);
                if (arg) {
                    int32_t where;
                    memcpy(&where, cpu_view_data(arg) + (size_t)o * 4, 4);
                    if (where >= 0 && where < H * W) acc[where] += g;
                    continue;
                }
                pool_window win = window_of(call, i, j);
                for (int64_t ih = win.h0; ih < win.h1; ih++)
                    for (int64_t iw = win.w0; iw < win.w1; iw++) acc[ih * W + iw] += g / (double)win.divisor;
            }
        for (int64_t e = 0; e < H * W; e++) st(dx, p * H * W + e, acc[e]);
    }
    free(acc_all);
    return WGT_OK;
}

/* ------------------------------------------------------------- batch norm */

static wgt_status batch_norm_forward(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *y = &call->outputs[0];
    int k = 1;
    const wgt_tensor_view *w = call->conv.has_weight ? &call->inputs[k++] : NULL;
    const wgt_tensor_view *bias = call->conv.has_bias ? &call->inputs[k++] : NULL;
    bool training = call->conv.training;
    const wgt_tensor_view *mean_in = training ? NULL : &call->inputs[k++];
    const wgt_tensor_view *var_in = training ? NULL : &call->inputs[k++];
    int64_t N = call->conv.n, C = call->conv.c, L = call->conv.h * call->conv.w;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (C > 1 && N * C * L > CPU_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < C; c++) {
        double mean, var;
        if (training) {
            double s = 0, sq = 0, count = (double)(N * L);
            for (int64_t n = 0; n < N; n++)
                for (int64_t l = 0; l < L; l++) s += ld(x, (n * C + c) * L + l);
            mean = s / count;
            for (int64_t n = 0; n < N; n++)
                for (int64_t l = 0; l < L; l++) {
                    double d = ld(x, (n * C + c) * L + l) - mean;
                    sq += d * d;
                }
            var = sq / count;
            st(&call->outputs[1], c, mean);
            st(&call->outputs[2], c, var);
        } else {
            mean = ld(mean_in, c), var = ld(var_in, c);
        }
        double rstd = 1.0 / sqrt(var + call->conv.eps);
        double scale = w ? ld(w, c) * rstd : rstd, shift = bias ? ld(bias, c) : 0.0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                int64_t e = (n * C + c) * L + l;
                st(y, e, (ld(x, e) - mean) * scale + shift);
            }
    }
    return WGT_OK;
}

static wgt_status batch_norm_backward(cpu_backend *b, const wgt_kernel_call *call)
{
    int k = 0;
    const wgt_tensor_view *x = &call->inputs[k++];
    const wgt_tensor_view *w = call->conv.has_weight ? &call->inputs[k++] : NULL;
    const wgt_tensor_view *mean_v = &call->inputs[k++], *var_v = &call->inputs[k++], *dy = &call->inputs[k++];
    const wgt_tensor_view *dx = &call->outputs[0], *dwt = &call->outputs[1], *db = &call->outputs[2];
    int64_t N = call->conv.n, C = call->conv.c, L = call->conv.h * call->conv.w;
    double count = (double)(N * L);
#pragma omp parallel for num_threads(b->threads) schedule(static) if (C > 1 && N * C * L > CPU_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < C; c++) {
        double mean = ld(mean_v, c), rstd = 1.0 / sqrt(ld(var_v, c) + call->conv.eps);
        double sum_dy = 0, sum_dy_xhat = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                int64_t e = (n * C + c) * L + l;
                double g = ld(dy, e);
                sum_dy += g;
                sum_dy_xhat += g * (ld(x, e) - mean) * rstd;
            }
        st(dwt, c, sum_dy_xhat);
        st(db, c, sum_dy);
        double scale = (w ? ld(w, c) : 1.0) * rstd;
        double m_dy = count > 0 ? sum_dy / count : 0, m_dy_xhat = count > 0 ? sum_dy_xhat / count : 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                int64_t e = (n * C + c) * L + l;
                double g = ld(dy, e);
                double v = call->conv.training ? scale * (g - m_dy - (ld(x, e) - mean) * rstd * m_dy_xhat) : scale * g;
                st(dx, e, v);
            }
    }
    return WGT_OK;
}

wgt_status cpu_run_conv(cpu_backend *b, const wgt_kernel_call *call)
{
    switch (call->conv.kernel) {
    case WGT_CONV_FORWARD: return conv_forward(b, call);
    case WGT_CONV_BACKWARD_INPUT: return conv_backward_input(b, call);
    case WGT_CONV_BACKWARD_WEIGHT: return conv_backward_weight(b, call);
    case WGT_POOL_FORWARD: return pool_forward(b, call);
    case WGT_POOL_BACKWARD: return pool_backward(b, call);
    case WGT_BATCH_NORM_FORWARD: return batch_norm_forward(b, call);
    case WGT_BATCH_NORM_BACKWARD: return batch_norm_backward(b, call);
    default: return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "unknown convolution kernel %d", (int)call->conv.kernel);
    }
}
