/*
 * The dropout kernels that keep their mask as bits (WGT_KERNEL_NN's
 * DROPOUT_ADD and DROPOUT_MASKED; contract in src/core/backend.h), the CPU
 * reference of kernels/nn_dropout.wgsl:
 *
 *   DROPOUT_ADD     x [n], h [n] -> out [n] = x + where(u >= p, h * s, 0), mask i32 [W]
 *   DROPOUT_MASKED  g [n], mask [W] -> dh [n] = where(kept, g * s, 0)
 *
 * u is element e's uniform of ELEMENTWISE's rand (cpu_elementwise.c's
 * fill_random: word e % 4 of Philox counter e / 4 keyed by the seed, top 24
 * bits), p and s f32, every product and sum rounded to f32, so out equals
 * wgt_dropout_add's expression bit for bit. Bit 4 j + c of word w belongs to
 * element 4 (w + j W) + c (the layout the WGSL twin writes with coalesced
 * loads); word w is computed whole by one iteration, so no two threads share a
 * word.
 */
#include "core/philox.h"
#include "cpu/cpu_internal.h"

static void quad_keeps(uint64_t seed, uint64_t quad, float p, int keep[4])
{
    uint32_t w[4];
    wgt_philox4x32_10((uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)quad, (uint32_t)(quad >> 32), 0, 0, w);
    for (int c = 0; c < 4; c++) keep[c] = (float)(w[c] >> 8) * 0x1p-24f >= p;
}

wgt_status cpu_run_dropout_add(cpu_backend *b, const wgt_kernel_call *call)
{
    const float *x = (const float *)cpu_view_data(&call->inputs[0]), *h = (const float *)cpu_view_data(&call->inputs[1]);
    float *out = (float *)cpu_view_data(&call->outputs[0]);
    int32_t *mask = (int32_t *)cpu_view_data(&call->outputs[1]);
    const int64_t n = call->inputs[0].shape[0], words = wgt_dropout_mask_words(n), quads = (n + 3) / 4;
    const float p = (float)call->nn.dropout_p, s = (float)(1.0 / (1.0 - call->nn.dropout_p));
    const uint64_t seed = call->nn.seed;
    bool parallel = n >= CPU_PARALLEL_THRESHOLD;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t w = 0; w < words; w++) {
        uint32_t bits = 0;
        for (int64_t j = 0; j < 8; j++) {
            int64_t q = w + j * words;
            if (q >= quads) break;
            int keep[4];
            quad_keeps(seed, (uint64_t)q, p, keep);
            for (int64_t c = 0; c < 4 && 4 * q + c < n; c++) {
                int64_t e = 4 * q + c;
                float dropped = keep[c] ? h[e] * s : 0.0f;
                out[e] = x[e] + dropped;
                bits |= (uint32_t)keep[c] << (4 * j + c);
            }
        }
        mask[w] = (int32_t)bits;
    }
    return WGT_OK;
}

wgt_status cpu_run_dropout_masked(cpu_backend *b, const wgt_kernel_call *call)
{
    const float *g = (const float *)cpu_view_data(&call->inputs[0]);
    const int32_t *mask = (const int32_t *)cpu_view_data(&call->inputs[1]);
    float *dh = (float *)cpu_view_data(&call->outputs[0]);
    const int64_t n = call->inputs[0].shape[0], words = wgt_dropout_mask_words(n);
    const float s = (float)(1.0 / (1.0 - call->nn.dropout_p));
    bool parallel = n >= CPU_PARALLEL_THRESHOLD;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (parallel)
    for (int64_t e = 0; e < n; e++) {
        int64_t q = e / 4, w = q % words, j = q / words;
        bool keep = ((uint32_t)mask[w] >> (4 * j + e % 4)) & 1u;
        dh[e] = keep ? g[e] * s : 0.0f;
    }
    return WGT_OK;
}
