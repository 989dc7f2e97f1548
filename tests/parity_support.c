/* Host-side helpers of the parity suite: deterministic inputs with special
 * values, f16 conversion, and the normalized-error comparison. */
#include "parity_support.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s)
{
    /* splitmix64: deterministic, independent of the library's Philox */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0); }

static const float special_values[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e30f, -1e-30f, 65504.0f, -7.5f, 0.5f};

void parity_fill(void *out, wgt_dtype dtype, int64_t count, input_domain domain, bool special, uint64_t seed)
{
    uint64_t s = seed * 7919 + 17;
    int n_special = special ? (int)(sizeof(special_values) / sizeof(special_values[0])) : 0;
    for (int64_t i = 0; i < count; i++) {
        double u = uniform(&s);
        double f = domain == DOMAIN_POSITIVE ? 0.05 + u * 3.95 : u * 6.0 - 3.0;
        /* Round some floats to a few decimals so ties (round half even, argmax) occur. */
        if (i % 5 == 0) f = floor(f * 2.0 + 0.5) / 2.0;
        int64_t k = domain == DOMAIN_POSITIVE ? 1 + (int64_t)(u * 50) : (int64_t)(u * 101) - 50;
        switch (dtype) {
        case WGT_F32: ((float *)out)[i] = i < n_special ? special_values[i] : (float)f; break;
        case WGT_F16:
            ((uint16_t *)out)[i] = test_f32_to_f16(i < n_special ? special_values[i] : (float)f);
            break;
        case WGT_I32: ((int32_t *)out)[i] = (int32_t)k; break;
        case WGT_U8: ((uint8_t *)out)[i] = (uint8_t)(domain == DOMAIN_POSITIVE ? 1 + next(&s) % 200 : next(&s) % 256); break;
        case WGT_BOOL: ((uint8_t *)out)[i] = (uint8_t)(next(&s) & 1); break;
        default: break;
        }
    }
}

void parity_fill_indices(int32_t *out, int64_t count, int64_t low, int64_t high, uint64_t seed)
{
    uint64_t s = seed * 104729 + 3;
    for (int64_t i = 0; i < count; i++) out[i] = (int32_t)(low + (int64_t)(next(&s) % (uint64_t)(high - low)));
}

double parity_element(const void *data, wgt_dtype dtype, int64_t i)
{
    switch (dtype) {
    case WGT_F32: return ((const float *)data)[i];
    case WGT_F16: return test_f16_to_f32(((const uint16_t *)data)[i]);
    case WGT_I32: return ((const int32_t *)data)[i];
    case WGT_U8:
    case WGT_BOOL: return ((const uint8_t *)data)[i];
    default: return 0;
    }
}

parity_compare parity_compare_tensors(wgt_tensor *gpu, wgt_tensor *cpu, double tolerance)
{
    parity_compare r;
    memset(&r, 0, sizeof(r));
    r.first_bad = -1;
    char a[160], b[160];
    if (wgt_tensor_dtype(gpu) != wgt_tensor_dtype(cpu) || wgt_tensor_ndim(gpu) != wgt_tensor_ndim(cpu) ||
        memcmp(wgt_tensor_shape(gpu), wgt_tensor_shape(cpu), sizeof(int64_t) * (size_t)wgt_tensor_ndim(gpu)) != 0) {
        snprintf(r.detail, sizeof(r.detail), "gpu output %s, cpu output %s", wgt_tensor_describe(gpu, a, sizeof(a)),
                 wgt_tensor_describe(cpu, b, sizeof(b)));
        return r;
    }
    int64_t n = wgt_tensor_numel(gpu);
    wgt_dtype dt = wgt_tensor_dtype(gpu);
    size_t bytes = (size_t)n * wgt_dtype_size(dt) + 4;
    void *g = malloc(bytes), *c = malloc(bytes);
    if (wgt_tensor_read(gpu, g, bytes) != WGT_OK || wgt_tensor_read(cpu, c, bytes) != WGT_OK) {
        snprintf(r.detail, sizeof(r.detail), "read failed: %s / %s", wgt_context_error_message(wgt_tensor_context(gpu)),
                 wgt_context_error_message(wgt_tensor_context(cpu)));
        free(g);
        free(c);
        return r;
    }
    bool exact = dt == WGT_I32 || dt == WGT_U8 || dt == WGT_BOOL;
    double diff2 = 0, ref2 = 0;
    int64_t exact_mismatches = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = parity_element(g, dt, i), y = parity_element(c, dt, i);
        if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
            bool same = (isnan(x) && isnan(y)) || (isinf(x) && isinf(y) && (x > 0) == (y > 0));
            if (!same) {
                if (r.first_bad < 0) r.first_bad = i;
                r.special_mismatches++;
            }
            continue;
        }
        if (exact && x != y) {
            if (r.first_bad < 0) r.first_bad = i;
            exact_mismatches++;
        }
        diff2 += (x - y) * (x - y);
        ref2 += y * y;
    }
    r.error = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    r.ok = r.special_mismatches == 0 && exact_mismatches == 0 && r.error <= tolerance;
    if (!r.ok) {
        int64_t k = r.first_bad >= 0 ? r.first_bad : 0;
        snprintf(r.detail, sizeof(r.detail),
                 "error %.3g (tolerance %.1g), %lld NaN/inf mismatches, %lld exact mismatches; element %lld: gpu %.9g cpu %.9g",
                 r.error, tolerance, (long long)r.special_mismatches, (long long)exact_mismatches, (long long)k,
                 n ? parity_element(g, dt, k) : 0.0, n ? parity_element(c, dt, k) : 0.0);
    }
    free(g);
    free(c);
    return r;
}
