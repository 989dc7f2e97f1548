/* QROWS on the CPU, the reference for WebGPU's quant_rows kernel: rows of D
 * floats and their 8-bit form (an LLM's 8-bit KV cache, wgt_quantize_rows_into
 * and wgt_dequantize_rows):
 *   x [.., D] f32 or f16 <-> codes i32 [.., D/4], scales f32 [.., D/32]
 * Views of up to 4 dims, one shape but the last, any strides on the leading
 * dims and unit stride on the last. Per group of 32 values: s = max|x| * (1/127),
 * code = round-to-even(x / s) clamped to [-127, 127] as int8 byte k % 4 of word
 * k / 4; a group of zeros gets s = 0 and codes 0, one holding a NaN or an
 * infinity s = NaN and codes 0 (QMATMUL's int8_x rule, backend.h).
 * Also the 8-bit keys and values of ATTENTION with 5 inputs (cpu_attention.c
 * reads them through cpu_q8_element). */
#include <math.h>
#include <string.h>

#include "core/quant_call.h"
#include "cpu/cpu_internal.h"

#define QGROUP 32

bool cpu_quant_rows_supports(const wgt_kernel_call *call) { return wgt_qrows_call_ok(call); }

/* Element index of the start of row r (leading dims in row-major order) of v. */
static int64_t row_start(const wgt_tensor_view *v, int64_t r)
{
    int64_t at = v->offset;
    for (int d = v->ndim - 2; d >= 0; d--) {
        at += (r % v->shape[d]) * v->strides[d];
        r /= v->shape[d];
    }
    return at;
}

/* One group of 32 values into codes (4 bytes a word, low byte first); returns s. */
static float quantize_group32(const float *x, uint32_t *words)
{
    int8_t codes[QGROUP];
    const float s = cpu_quantize_group8(x, codes); /* cpu_quant.c: the rule QMATMUL's int8_x shares */
    memset(words, 0, QGROUP / 4 * sizeof(uint32_t));
    for (int j = 0; j < QGROUP; j++) words[j / 4] |= (uint32_t)(uint8_t)codes[j] << (8 * (j % 4));
    return s;
}

wgt_status cpu_run_quant_rows(cpu_backend *b, const wgt_kernel_call *call)
{
    (void)b;
    const bool deq = call->quant.dequantize;
    const wgt_tensor_view *x, *codes, *scales;
    wgt_qrows_views(call, &x, &codes, &scales);
    const int nd = x->ndim;
    const int64_t D = x->shape[nd - 1], rows = wgt_shape_numel(nd - 1, x->shape);
    char *xd = (char *)x->storage->handle;
    uint32_t *cd = (uint32_t *)codes->storage->handle;
    float *sd = (float *)scales->storage->handle;
    const size_t xs = cpu_dtype_size(x->dtype);
    for (int64_t r = 0; r < rows && D > 0; r++) {
        const int64_t xa = row_start(x, r), ca = row_start(codes, r), sa = row_start(scales, r);
        for (int64_t g = 0; g < D / QGROUP; g++) {
            float vals[QGROUP];
            uint32_t *words = cd + ca + g * (QGROUP / 4);
            if (deq) {
                const float s = sd[sa + g];
                for (int j = 0; j < QGROUP; j++) {
                    const int8_t c = (int8_t)(uint8_t)(words[j / 4] >> (8 * (j % 4)));
                    cpu_store_f64(xd + (xa + g * QGROUP + j) * (int64_t)xs, x->dtype, (double)((float)c * s));
                }
                continue;
            }
            for (int j = 0; j < QGROUP; j++)
                vals[j] = (float)cpu_load_f64(xd + (xa + g * QGROUP + j) * (int64_t)xs, x->dtype);
            sd[sa + g] = quantize_group32(vals, words);
        }
    }
    return WGT_OK;
}

double cpu_q8_element(const wgt_tensor_view *codes, const wgt_tensor_view *scales, int64_t b, int64_t h, int64_t t,
                      int64_t d)
{
    const uint32_t *cd = (const uint32_t *)codes->storage->handle;
    const float *sd = (const float *)scales->storage->handle;
    const uint32_t w = cd[codes->offset + b * codes->strides[0] + h * codes->strides[1] + t * codes->strides[2] + d / 4];
    const float s = sd[scales->offset + b * scales->strides[0] + h * scales->strides[1] + t * scales->strides[2] +
                       d / QGROUP];
    return (double)((float)(int8_t)(uint8_t)(w >> (8 * (d % 4))) * s);
}
