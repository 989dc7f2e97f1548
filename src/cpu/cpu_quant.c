/* QMATMUL on the CPU, the reference for the WebGPU kernel:
 *   x [M, K] f32, qweight i32 [N, K * bits / 32], scales f32 [N, K / 32] -> out [M, N] f32
 * out[m, n] = sum over groups g of scales[n, g] * sum_{j < 32} x[m, 32 g + j] code(n, 32 g + j),
 * each group's integer-weighted sum formed first in f32, then scaled (the
 * order the WGSL kernel uses too), accumulated over groups in f64. */
#include <string.h>

#include "cpu/cpu_internal.h"

bool cpu_quant_supports(const wgt_kernel_call *call)
{
    return call->n_inputs == 3 && call->inputs[0].dtype == WGT_F32 && call->inputs[1].dtype == WGT_I32 &&
           call->inputs[2].dtype == WGT_F32 && call->outputs[0].dtype == WGT_F32 &&
           (call->quant.bits == 8 || call->quant.bits == 4);
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

wgt_status cpu_run_qmatmul(cpu_backend *b, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2], *out = &call->outputs[0];
    if (!cpu_quant_supports(call)) return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "qmatmul: dtypes or bits unsupported");
    const int64_t M = x->shape[0], K = x->shape[1], N = q->shape[0], G = K / 32;
    const int bits = call->quant.bits;
    if (K % 32 != 0 || q->shape[1] != K * bits / 32 || s->shape[0] != N || s->shape[1] != G || out->shape[0] != M ||
        out->shape[1] != N)
        return cpu_fail(b, call, WGT_ERR_SHAPE_MISMATCH, "qmatmul: inconsistent shapes");
    const float *xd = (const float *)cpu_view_data(x), *sd = (const float *)cpu_view_data(s);
    const int32_t *qd = (const int32_t *)cpu_view_data(q);
    float *od = (float *)cpu_view_data(out);
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
    return WGT_OK;
}
