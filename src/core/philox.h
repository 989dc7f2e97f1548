/*
 * Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
 * the counter-based generator behind wgt_rand / wgt_randn and dropout. The WGSL
 * twin lives in src/webgpu/kernels/philox.wgsl (used by elementwise_philox.wgsl
 * and attention_common.wgsl); both must produce identical words for the same
 * (key, counter). tests/test_tensor.c
 * checks this one against Random123's published known answers and both backends'
 * rand/randn against them.
 */
#ifndef WGT_PHILOX_H
#define WGT_PHILOX_H

#include <stdint.h>

#define WGT_PHILOX_M0 0xD2511F53u
#define WGT_PHILOX_M1 0xCD9E8D57u
#define WGT_PHILOX_W0 0x9E3779B9u
#define WGT_PHILOX_W1 0xBB67AE85u

/* out[4] = philox(key = (k0, k1), counter = (c0, c1, c2, c3)) */
static inline void wgt_philox4x32_10(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t c2,
                                     uint32_t c3, uint32_t out[4])
{
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)WGT_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)WGT_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += WGT_PHILOX_W0;
        k1 += WGT_PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Attention dropout (WGT_KERNEL_ATTENTION): weight (row, col) of the attention
 * matrix, row = (b * H + h) * Tq + i and col = key j, is kept when the top 24
 * bits of word col % 4 of philox(seed, (col / 4, row, 0, "atte")) are >=
 * threshold, with threshold = wgt_attention_dropout_threshold(p): one Philox
 * call gives four neighbouring keys. Integer arithmetic only, so the WGSL twin
 * (kernels/attention_common.wgsl) draws the same mask. */
#define WGT_ATTENTION_DROPOUT_TAG 0x61747465u
static inline uint32_t wgt_attention_dropout_threshold(double p)
{
    double t = p * 16777216.0;
    return t <= 0 ? 0u : t >= 16777216.0 ? 16777216u : (uint32_t)t;
}
static inline int wgt_attention_dropout_keep(uint64_t seed, uint32_t threshold, uint32_t row, uint32_t col)
{
    uint32_t w[4];
    wgt_philox4x32_10((uint32_t)seed, (uint32_t)(seed >> 32), col >> 2, row, 0u, WGT_ATTENTION_DROPOUT_TAG, w);
    return (w[col & 3u] >> 8) >= threshold;
}

#endif /* WGT_PHILOX_H */
