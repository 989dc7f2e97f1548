/*
 * ATTENTION, ATTENTION_BACKWARD and ROPE on the CPU: the reference the WebGPU
 * kernels are checked against, written for clarity (double arithmetic, one row
 * of scores at a time), not speed.
 *
 *   q [B, H, Tq, D], k, v [B, Hkv, Tk, D] (any strides, H % Hkv == 0)
 *   out [B, H, Tq, D] (q's dtype, any strides), lse f32 [B, H, Tq]
 *   backward: dq [B, H, Tq, D], dk, dv [B, Hkv, Tk, D], f32, any strides (the
 *   autograd engine may hand windows of one [B, T, 3C] gradient)
 *
 * Forward, per query row i of head h (kv head g = h / (H / Hkv)):
 *   s_j = scale * q_i . k_j for the visible keys (causal: j <= i + Tk - Tq)
 *   p_j = exp(s_j - lse_i), lse_i = log sum_j exp(s_j)
 *   out_i = sum_j p_j z_j v_j, z_j = keep(i, j) / (1 - dropout_p)
 * Backward (the flash-attention-2 equations, the same the GPU uses):
 *   D_i = dout_i . out_i,  dp_j = z_j (dout_i . v_j),  ds_j = p_j (dp_j - D_i)
 *   dq_i = scale * sum_j ds_j k_j,  dk_j += scale * ds_j q_i,  dv_j += p_j z_j dout_i
 */
#include <math.h>
#include <stdlib.h>

#include "core/philox.h"
#include "cpu/cpu_internal.h"

/* ATTENTION with 8-bit keys and values (5 inputs, backend.h): q float, k and
 * v codes i32 [B, Hkv, Tk, D/4] and scales f32 [B, Hkv, Tk, D/32] with unit
 * last strides, no dropout */
static bool q8_supported(const wgt_kernel_call *call)
{
    const wgt_tensor_view *q = &call->inputs[0];
    const int64_t D = q->shape[3];
    if (call->attention.dropout_p != 0.0 || D % 32 != 0) return false;
    for (int i = 1; i < 5; i++) {
        const wgt_tensor_view *v = &call->inputs[i];
        if (v->ndim != 4 || v->dtype != (i < 3 ? WGT_I32 : WGT_F32) || v->shape[3] != (i < 3 ? D / 4 : D / 32) ||
            v->strides[3] != 1 || v->shape[0] != q->shape[0])
            return false;
        for (int d = 1; d < 3; d++)
            if (v->shape[d] != call->inputs[1].shape[d]) return false;
    }
    return true;
}

bool cpu_attention_supports(const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0];
    if (x->ndim != 4 || (x->dtype != WGT_F32 && x->dtype != WGT_F16)) return false;
    if (call->kind == WGT_KERNEL_ATTENTION && call->n_inputs == 5) return q8_supported(call);
    for (int i = 1; i < call->n_inputs; i++) {
        wgt_dtype want = call->kind == WGT_KERNEL_ATTENTION_BACKWARD && i == 5 ? WGT_F32 : x->dtype;
        if (call->inputs[i].dtype != want) return false;
    }
    return true;
}

/* Element (b, h, t, d) of a 4-D view as a double. */
static inline double at4(const wgt_tensor_view *v, const char *base, int64_t b, int64_t h, int64_t t, int64_t d)
{
    int64_t i = b * v->strides[0] + h * v->strides[1] + t * v->strides[2] + d * v->strides[3];
    return cpu_load_f64(base + i * (int64_t)cpu_dtype_size(v->dtype), v->dtype);
}

/* Key (which 1) or value (2) element (b, g, t, d): of a float view, or of the
 * 8-bit codes and scales of an ATTENTION call with 5 inputs. */
static inline double kv_at(const wgt_kernel_call *call, int which, const char *base, int64_t b, int64_t g, int64_t t,
                           int64_t d)
{
    if (call->n_inputs == 5) return cpu_q8_element(&call->inputs[which], &call->inputs[which + 2], b, g, t, d);
    return at4(&call->inputs[which], base, b, g, t, d);
}

typedef struct attention_shape {
    int64_t B, H, Hkv, Tq, Tk, D, group; /* group: query heads per kv head */
    double scale, keep_scale;            /* keep_scale: 1 / (1 - dropout_p) */
    uint32_t threshold;                  /* dropout threshold (0: none) */
    uint64_t seed;
} attention_shape;

static wgt_status attention_shape_of(cpu_backend *b, const wgt_kernel_call *call, attention_shape *s)
{
    const wgt_tensor_view *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    s->B = q->shape[0];
    s->H = q->shape[1];
    s->Tq = q->shape[2];
    s->D = q->shape[3];
    s->Hkv = k->shape[1];
    s->Tk = k->shape[2];
    const int64_t k_per_d = call->n_inputs == 5 ? 4 : 1; /* 8-bit: one code word per 4 elements */
    bool ok = k->ndim == 4 && v->ndim == 4 && k->shape[0] == s->B && k->shape[3] * k_per_d == s->D && s->Hkv > 0 &&
              s->H % s->Hkv == 0;
    for (int d = 0; ok && d < 4; d++) ok = v->shape[d] == k->shape[d];
    if (!ok) {
        char qs[96], ks[96], vs[96];
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "q %s, k %s, v %s: need [B, H, Tq, D], [B, Hkv, Tk, D] x2",
                        cpu_shape_string(4, q->shape, qs, sizeof qs), cpu_shape_string(k->ndim, k->shape, ks, sizeof ks),
                        cpu_shape_string(v->ndim, v->shape, vs, sizeof vs));
    }
    s->group = s->H / s->Hkv;
    s->scale = call->attention.scale;
    s->threshold = wgt_attention_dropout_threshold(call->attention.dropout_p);
    s->keep_scale = s->threshold ? 1.0 / (1.0 - call->attention.dropout_p) : 1.0;
    s->seed = call->attention.seed;
    return WGT_OK;
}

/* Keys row i may see: [0, visible). */
static int64_t visible_keys(const wgt_kernel_call *call, const attention_shape *s, int64_t i)
{
    if (!call->attention.causal) return s->Tk;
    int64_t last = i + s->Tk - s->Tq;
    return last < 0 ? 0 : last + 1 < s->Tk ? last + 1 : s->Tk;
}

/* Dropout factor z of weight (row, j): 0 or 1 / (1 - p). */
static inline double dropout_factor(const attention_shape *s, int64_t row, int64_t j)
{
    if (!s->threshold) return 1.0;
    return wgt_attention_dropout_keep(s->seed, s->threshold, (uint32_t)row, (uint32_t)j) ? s->keep_scale : 0.0;
}

/* Scores of row i against keys [0, n) into p, turned into probabilities
 * exp(s - lse); returns lse (-inf when n == 0). */
static double row_probabilities(const wgt_kernel_call *call, const attention_shape *s, int64_t bi, int64_t h,
                                int64_t i, int64_t n, double *p)
{
    const wgt_tensor_view *q = &call->inputs[0];
    const char *qd = cpu_view_data(q), *kd = cpu_view_data(&call->inputs[1]);
    int64_t g = h / s->group;
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double dot = 0;
        for (int64_t d = 0; d < s->D; d++) dot += at4(q, qd, bi, h, i, d) * kv_at(call, 1, kd, bi, g, j, d);
        p[j] = dot * s->scale;
        if (p[j] > m) m = p[j];
    }
    if (n == 0) return -INFINITY;
    double l = 0;
    for (int64_t j = 0; j < n; j++) l += exp(p[j] - m);
    double lse = m + log(l);
    for (int64_t j = 0; j < n; j++) p[j] = exp(p[j] - lse);
    return lse;
}

wgt_status cpu_run_attention(cpu_backend *b, const wgt_kernel_call *call)
{
    attention_shape s;
    wgt_status st = attention_shape_of(b, call, &s);
    if (st != WGT_OK) return st;
    const wgt_tensor_view *out = &call->outputs[0], *lse = &call->outputs[1];
    const char *vd = cpu_view_data(&call->inputs[2]);
    char *od = cpu_view_data(out);
    float *ld = (float *)cpu_view_data(lse);
    int64_t rows = s.B * s.H * s.Tq;
    size_t osize = cpu_dtype_size(out->dtype);
    bool failed = false;
#pragma omp parallel num_threads(b->threads) if (rows * s.Tk * s.D > CPU_PARALLEL_THRESHOLD)
    {
        double *p = malloc((size_t)(s.Tk + 1) * sizeof(double)), *acc = malloc((size_t)s.D * sizeof(double));
        if (!p || !acc) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(dynamic, 16)
        for (int64_t row = 0; row < rows; row++) {
            if (!p || !acc) continue;
            int64_t i = row % s.Tq, h = (row / s.Tq) % s.H, bi = row / (s.Tq * s.H), g = h / s.group;
            int64_t n = visible_keys(call, &s, i);
            ld[row] = (float)row_probabilities(call, &s, bi, h, i, n, p);
            for (int64_t d = 0; d < s.D; d++) acc[d] = 0;
            for (int64_t j = 0; j < n; j++) {
                double w = p[j] * dropout_factor(&s, row, j);
                if (w == 0) continue;
                for (int64_t d = 0; d < s.D; d++) acc[d] += w * kv_at(call, 2, vd, bi, g, j, d);
            }
            int64_t at = bi * out->strides[0] + h * out->strides[1] + i * out->strides[2];
            for (int64_t d = 0; d < s.D; d++)
                cpu_store_f64(od + (at + d * out->strides[3]) * (int64_t)osize, out->dtype, acc[d]);
        }
        free(p);
        free(acc);
    }
    if (failed) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate a row of %lld scores", (long long)s.Tk);
    return WGT_OK;
}

/* Element (b, h, t, d) of a 4-D f32 view, for writing. */
static inline float *f32_at4(const wgt_tensor_view *v, int64_t b, int64_t h, int64_t t, int64_t d)
{
    return (float *)cpu_view_data(v) + b * v->strides[0] + h * v->strides[1] + t * v->strides[2] + d * v->strides[3];
}

/* One (batch, kv head) group: every query row of its query heads. dk and dv
 * of the group are summed in dk_acc / dv_acc ([Tk, D] doubles). */
static void backward_group(const wgt_kernel_call *call, const attention_shape *s, int64_t bi, int64_t g, double *p,
                           double *dp, double *dk_acc, double *dv_acc, double *dq_row)
{
    const wgt_tensor_view *q = &call->inputs[0], *k = &call->inputs[1], *v = &call->inputs[2];
    const wgt_tensor_view *o = &call->inputs[3], *dout = &call->inputs[4];
    const char *qd = cpu_view_data(q), *kd = cpu_view_data(k), *vd = cpu_view_data(v);
    const char *od = cpu_view_data(o), *dod = cpu_view_data(dout);
    for (int64_t j = 0; j < s->Tk * s->D; j++) dk_acc[j] = dv_acc[j] = 0;
    for (int64_t h = g * s->group; h < (g + 1) * s->group; h++) {
        for (int64_t i = 0; i < s->Tq; i++) {
            int64_t row = (bi * s->H + h) * s->Tq + i;
            int64_t n = visible_keys(call, s, i);
            row_probabilities(call, s, bi, h, i, n, p);
            double Di = 0;
            for (int64_t d = 0; d < s->D; d++) Di += at4(dout, dod, bi, h, i, d) * at4(o, od, bi, h, i, d);
            for (int64_t d = 0; d < s->D; d++) dq_row[d] = 0;
            for (int64_t j = 0; j < n; j++) {
                double z = dropout_factor(s, row, j), dot = 0;
                for (int64_t d = 0; d < s->D; d++) dot += at4(dout, dod, bi, h, i, d) * at4(v, vd, bi, g, j, d);
                dp[j] = z * dot;
                double ds = p[j] * (dp[j] - Di) * s->scale, pz = p[j] * z;
                for (int64_t d = 0; d < s->D; d++) {
                    dq_row[d] += ds * at4(k, kd, bi, g, j, d);
                    dk_acc[j * s->D + d] += ds * at4(q, qd, bi, h, i, d);
                    dv_acc[j * s->D + d] += pz * at4(dout, dod, bi, h, i, d);
                }
            }
            for (int64_t d = 0; d < s->D; d++) *f32_at4(&call->outputs[0], bi, h, i, d) = (float)dq_row[d];
        }
    }
    for (int64_t j = 0; j < s->Tk; j++)
        for (int64_t d = 0; d < s->D; d++) {
            *f32_at4(&call->outputs[1], bi, g, j, d) = (float)dk_acc[j * s->D + d];
            *f32_at4(&call->outputs[2], bi, g, j, d) = (float)dv_acc[j * s->D + d];
        }
}

wgt_status cpu_run_attention_backward(cpu_backend *b, const wgt_kernel_call *call)
{
    attention_shape s;
    wgt_status st = attention_shape_of(b, call, &s);
    if (st != WGT_OK) return st;
    for (int i = 0; i < 3; i++)
        if (call->outputs[i].dtype != WGT_F32 || call->outputs[i].ndim != 4)
            return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "gradient %d must be a 4-D f32 view", i);
    int64_t groups = s.B * s.Hkv;
    bool failed = false;
#pragma omp parallel num_threads(b->threads) if (groups > 1 && s.H * s.Tq * s.Tk * s.D > CPU_PARALLEL_THRESHOLD)
    {
        size_t tk = (size_t)s.Tk + 1, kd = (size_t)(s.Tk * s.D) + 1;
        double *p = malloc(tk * sizeof(double)), *dp = malloc(tk * sizeof(double));
        double *dk = malloc(kd * sizeof(double)), *dv = malloc(kd * sizeof(double));
        double *dq = malloc((size_t)(s.D + 1) * sizeof(double));
        bool ok = p && dp && dk && dv && dq;
        if (!ok) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t group = 0; group < groups; group++)
            if (ok) backward_group(call, &s, group / s.Hkv, group % s.Hkv, p, dp, dk, dv, dq);
        free(p);
        free(dp);
        free(dk);
        free(dv);
        free(dq);
    }
    if (failed) return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "cannot allocate gradient rows of %lld x %lld",
                                (long long)s.Tk, (long long)s.D);
    return WGT_OK;
}

/* ------------------------------------------------------------------ rope */

/* The angle of pair i at position pos, in f32 exactly as the WGSL kernel forms
 * it (inv_freq rounded to f32, one f32 product), so both backends turn by the
 * same angle; cos/sin of it are then taken in double. */
static float rope_inv_freq(double theta, int64_t i, int64_t D) { return (float)pow(theta, -2.0 * (double)i / (double)D); }

wgt_status cpu_run_rope(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    int64_t B = x->shape[0], H = x->shape[1], T = x->shape[2], D = x->shape[3], half = D / 2;
    if (D % 2 != 0) return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "head dim %lld is odd", (long long)D);
    const char *xd = cpu_view_data(x);
    char *od = cpu_view_data(out);
    size_t osize = cpu_dtype_size(out->dtype);
    int64_t rows = B * H * T;
    double sign = call->rope.inverse ? -1.0 : 1.0;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (rows * D > CPU_PARALLEL_THRESHOLD)
    for (int64_t row = 0; row < rows; row++) {
        int64_t t = row % T, h = (row / T) % H, bi = row / (T * H);
        float pos = (float)(call->rope.position_offset + t);
        for (int64_t i = 0; i < half; i++) {
            float angle = pos * rope_inv_freq(call->rope.theta, i, D);
            double c = cos((double)angle), sn = sign * sin((double)angle);
            int64_t d0 = call->rope.interleaved ? 2 * i : i, d1 = call->rope.interleaved ? 2 * i + 1 : i + half;
            double x0 = at4(x, xd, bi, h, t, d0), x1 = at4(x, xd, bi, h, t, d1);
            cpu_store_f64(od + (row * D + d0) * (int64_t)osize, out->dtype, x0 * c - x1 * sn);
            cpu_store_f64(od + (row * D + d1) * (int64_t)osize, out->dtype, x0 * sn + x1 * c);
        }
    }
    return WGT_OK;
}
