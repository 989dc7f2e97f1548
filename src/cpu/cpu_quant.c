/* QMATMUL on the CPU, the reference for the WebGPU kernel:
 *   x [M, K] f32 (or f16 in a fused call), qweight i32 [N, K * bits / 32],
 *   scales f32 [N, K / 32] -> out [M, N] f32
 * out[m, n] = sum over groups g of scales[n, g] * sum_{j < 32} x[m, 32 g + j] code(n, 32 g + j),
 * each group's integer-weighted sum formed first in f32, then scaled (the
 * order the WGSL kernel uses too), accumulated over groups in f64.
 * Fused calls (wgt_qlinear_ex, see backend.h): x's row RMS-normalized first
 * (f64 mean of squares, as cpu_nn.c's norm), a bias added to the sums, or the
 * SwiGLU of rows 2i and 2i + 1 (out [M, N / 2]). With int8_x (backend.h),
 * x (normalized first in a fused call) is quantized per group and the
 * groups' sums are integers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

bool cpu_quant_supports(const wgt_kernel_call *call)
{
    const bool aux = call->quant.norm || call->quant.bias;
    const wgt_dtype xt = call->inputs[0].dtype;
    if (call->quant.rope) { /* with the norm: one row, a [4, D/2] float table, f32 or f16 out */
        const wgt_tensor_view *t = &call->inputs[4], *o = &call->outputs[0];
        if (!call->quant.norm || call->n_inputs != 5 || call->quant.swiglu || t->ndim != 2 || t->shape[0] != 4 ||
            (t->dtype != WGT_F32 && t->dtype != WGT_F16) || (o->dtype != WGT_F32 && o->dtype != WGT_F16) ||
            call->inputs[0].shape[0] != 1)
            return false;
        wgt_kernel_call plain = *call;
        plain.n_inputs = 4;
        plain.quant.rope = false;
        plain.outputs[0].dtype = WGT_F32;
        return cpu_quant_supports(&plain);
    }
    return call->n_inputs == 3 + aux && !(call->quant.norm && call->quant.bias) &&
           (xt == WGT_F32 || (xt == WGT_F16 && (aux || call->quant.swiglu))) && call->inputs[1].dtype == WGT_I32 &&
           call->inputs[2].dtype == WGT_F32 && call->outputs[0].dtype == WGT_F32 && (!aux || call->inputs[3].dtype == WGT_F32) &&
           (call->quant.bits == 8 || call->quant.bits == 4);
}

/* x's rows as f32, normalized when the call says so: a new [M, K] array (NULL: out of memory) */
static float *fused_rows(const wgt_kernel_call *call, int64_t M, int64_t K)
{
    const wgt_tensor_view *x = &call->inputs[0];
    float *rows = malloc((size_t)(M * K) * sizeof(float));
    if (!rows) return NULL;
    const unsigned char *xd = (const unsigned char *)cpu_view_data(x);
    for (int64_t i = 0; i < M * K; i++) {
        if (x->dtype == WGT_F16) {
            uint16_t h;
            memcpy(&h, xd + 2 * i, 2);
            rows[i] = cpu_f16_to_f32(h);
        } else {
            memcpy(&rows[i], xd + 4 * i, 4);
        }
    }
    if (!call->quant.norm) return rows;
    const float *w = (const float *)cpu_view_data(&call->inputs[3]);
    for (int64_t m = 0; m < M; m++) {
        float *r = rows + m * K;
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += (double)r[k] * r[k];
        const float rstd = (float)(1.0 / sqrt(ss / (double)K + (double)call->quant.eps));
        for (int64_t k = 0; k < K; k++) r[k] = (r[k] * rstd) * w[k];
    }
    return rows;
}

/* The 32 codes of group g of row n, as floats (4-bit codes already minus 8). */
static void group_codes(const int32_t *row, int bits, int64_t g, float codes[32])
{
    if (bits == 8) {
        for (int w = 0; w < 8; w++) {
            uint32_t word = (uint32_t)row[g * 8 + w];
            for (int j = 0; j < 4; j++) codes[w * 4 + j] = (float)(int8_t)(uint8_t)(word >> (8 * j));
        }
    } else {
        for (int w = 0; w < 4; w++) {
            uint32_t word = (uint32_t)row[g * 4 + w];
            for (int j = 0; j < 8; j++) codes[w * 8 + j] = (float)((int)((word >> (4 * j)) & 15u) - 8);
        }
    }
}

/* QMATMUL with the rope epilogue (wgt_qlinear_rope_into): the product (with
 * its norm) into an f32 temporary, then the ELEMENTWISE calls of
 * wgt_rope_rows_elementwise_calls into out: the definition, and the
 * reference for WebGPU's fused epilogue. */
static wgt_status qmatmul_rope(cpu_backend *b, const wgt_kernel_call *call)
{
    wgt_kernel_call q = *call;
    q.n_inputs = 4;
    q.quant.rope = false;
    return cpu_run_rope_epilogue(b, call, &q, WGT_F32, &call->inputs[4], call->quant.rope_pass_begin,
                                 call->quant.rope_pass_end, cpu_run_qmatmul);
}

/* Row m's group g of x as 8-bit codes (backend.h's int8_x): s = max|x| * (1/127),
 * code = round-to-even(x / s), all 0 for a group of zeros; a group holding a
 * NaN or an infinity gets s = NaN and codes 0 (its sums are NaN). Returns s. */
float cpu_quantize_group8(const float *x, int8_t codes[32])
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (!isfinite(x[j])) {
            memset(codes, 0, 32);
            return NAN;
        }
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    }
    /* a product with 1/127 rounded to f32, not amax / 127: WGSL's division may
     * miss the rounded quotient by an ulp on a GPU, the product rounds alike */
    const float s = amax * (1.0f / 127.0f);
    for (int j = 0; j < 32; j++) {
        float c = amax > 0.0f ? nearbyintf(x[j] / s) : 0.0f;
        codes[j] = (int8_t)(c > 127.0f ? 127.0f : c < -127.0f ? -127.0f : c);
    }
    return s;
}

/* QMATMUL's sums with int8_x (wgt_set_matmul_precision MEDIUM): the rows of
 * x (xd [M, K] f32: the call's x, or its normalized rows in a fused call)
 * quantized per row and group, integer sums of code products per group, then
 * the f32 sum over groups in order of isum * (s_x * s_w) into od [M, N]: the
 * reference for WebGPU's quant_matmul_dp4a and quant_gemv_rows' INT8_X. */
static wgt_status qmatmul_int8_x(cpu_backend *b, const wgt_kernel_call *call, const float *xd, float *od, int64_t M,
                                 int64_t K, int64_t N)
{
    const int64_t G = K / 32, words = K * call->quant.bits / 32;
    int8_t *xc = malloc((size_t)(M * K));
    float *xs = malloc((size_t)(M * G) * sizeof(float));
    if (!xc || !xs) {
        free(xc), free(xs);
        return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "qmatmul: host buffers for [%lld, %lld]", (long long)M,
                        (long long)K);
    }
    const float *sd = (const float *)cpu_view_data(&call->inputs[2]);
    const int32_t *qd = (const int32_t *)cpu_view_data(&call->inputs[1]);
    for (int64_t m = 0; m < M; m++)
        for (int64_t g = 0; g < G; g++) xs[m * G + g] = cpu_quantize_group8(xd + m * K + g * 32, xc + m * K + g * 32);
#pragma omp parallel for num_threads(b->threads) schedule(static) if (M * N * K > CPU_PARALLEL_THRESHOLD)
    for (int64_t n = 0; n < N; n++) {
        float codes[32];
        int32_t wc[32];
        float acc[8];
        for (int64_t m0 = 0; m0 < M; m0 += 8) {
            const int64_t mm = M - m0 < 8 ? M - m0 : 8;
            for (int64_t i = 0; i < mm; i++) acc[i] = 0.0f;
            for (int64_t g = 0; g < G; g++) {
                group_codes(qd + n * words, call->quant.bits, g, codes);
                for (int j = 0; j < 32; j++) wc[j] = (int32_t)codes[j];
                const float sw = sd[n * G + g];
                for (int64_t i = 0; i < mm; i++) {
                    const int8_t *c = xc + (m0 + i) * K + g * 32;
                    int32_t isum = 0;
                    for (int j = 0; j < 32; j++) isum += (int32_t)c[j] * wc[j];
                    acc[i] += (float)isum * (xs[(m0 + i) * G + g] * sw);
                }
            }
            for (int64_t i = 0; i < mm; i++) od[(m0 + i) * N + n] = acc[i];
        }
    }
    free(xc), free(xs);
    return WGT_OK;
}

wgt_status cpu_run_qmatmul(cpu_backend *b, const wgt_kernel_call *call)
{
    if (call->quant.rope) return qmatmul_rope(b, call);
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2], *out = &call->outputs[0];
    if (!cpu_quant_supports(call)) return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "qmatmul: dtypes or bits unsupported");
    const int64_t M = x->shape[0], K = x->shape[1], N = q->shape[0], G = K / 32;
    const int bits = call->quant.bits;
    const bool fused = call->n_inputs == 4 || call->quant.swiglu;
    if (K % 32 != 0 || q->shape[1] != K * bits / 32 || s->shape[0] != N || s->shape[1] != G || out->shape[0] != M ||
        out->shape[1] != (call->quant.swiglu ? N / 2 : N) || (call->quant.swiglu && N % 2) ||
        (call->quant.norm && call->inputs[3].shape[0] != K) || (call->quant.bias && call->inputs[3].shape[0] != N))
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "qmatmul: inconsistent shapes");
    float *rows = fused ? fused_rows(call, M, K) : NULL;
    /* fused: the sums go to a temporary [M, N], the epilogue writes out */
    float *sums = fused ? malloc((size_t)(M * N) * sizeof(float)) : NULL;
    if (fused && (!rows || !sums)) {
        free(rows), free(sums);
        return cpu_fail(b, call, WGT_ERR_OUT_OF_MEMORY, "qmatmul: host buffers for [%lld, %lld]", (long long)M,
                        (long long)(N > K ? N : K));
    }
    const float *xd = fused ? rows : (const float *)cpu_view_data(x), *sd = (const float *)cpu_view_data(s);
    const int32_t *qd = (const int32_t *)cpu_view_data(q);
    float *od = fused ? sums : (float *)cpu_view_data(out);
    wgt_status st = WGT_OK;
    if (call->quant.int8_x) {
        st = qmatmul_int8_x(b, call, xd, od, M, K, N);
    } else {
        const int64_t words = K * bits / 32;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (M * N * K > CPU_PARALLEL_THRESHOLD)
        for (int64_t n = 0; n < N; n++) {
            float codes[32];
            for (int64_t m0 = 0; m0 < M; m0 += 8) {
                double sum[8] = {0};
                const int64_t mm = M - m0 < 8 ? M - m0 : 8;
                for (int64_t g = 0; g < G; g++) {
                    group_codes(qd + n * words, bits, g, codes);
                    const float scale = sd[n * G + g];
                    for (int64_t i = 0; i < mm; i++) {
                        const float *xr = xd + (m0 + i) * K + g * 32;
                        float dot = 0.0f;
                        for (int j = 0; j < 32; j++) dot += xr[j] * codes[j];
                        sum[i] += (double)(dot * scale);
                    }
                }
                for (int64_t i = 0; i < mm; i++) od[(m0 + i) * N + n] = (float)sum[i];
            }
        }
    }
    if (!fused || st != WGT_OK) {
        free(rows), free(sums);
        return st;
    }
    float *o = (float *)cpu_view_data(out);
    const float *bias = call->quant.bias ? (const float *)cpu_view_data(&call->inputs[3]) : NULL;
    for (int64_t m = 0; m < M; m++) {
        float *r = sums + m * N;
        if (bias)
            for (int64_t n = 0; n < N; n++) r[n] += bias[n];
        if (!call->quant.swiglu) {
            memcpy(o + m * N, r, (size_t)N * sizeof(float));
            continue;
        }
        for (int64_t i = 0; i < N / 2; i++) { /* silu(g) * u as the elementwise program a / (1 + exp(-a)) * b */
            const float g = r[2 * i], u = r[2 * i + 1];
            o[m * (N / 2) + i] = g / (1.0f + expf(-g)) * u;
        }
    }
    free(rows), free(sums);
    return WGT_OK;
}
