/* Shared pieces of the parity suite (tests/test_parity.c): host data
 * generation, f16 conversion, and the GPU-vs-CPU comparison. */
#ifndef WGT_PARITY_SUPPORT_H
#define WGT_PARITY_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "wgtensor.h"

/* How inputs are drawn. */
typedef enum input_domain {
    DOMAIN_SIGNED,   /* floats in [-3, 3], ints in [-50, 50] (u8/bool: their range) */
    DOMAIN_POSITIVE, /* floats in (0.05, 4], ints in [1, 50] */
    DOMAIN_INDEX     /* ints in [-D, D) for an axis of size D (set by the caller) */
} input_domain;

/* Fills count elements of dtype at out (f16 as bits). special: the first
 * elements are NaN, +-inf, -0, 0, huge and tiny (floats only). */
void parity_fill(void *out, wgt_dtype dtype, int64_t count, input_domain domain, bool special, uint64_t seed);
void parity_fill_indices(int32_t *out, int64_t count, int64_t low, int64_t high, uint64_t seed);

/* Element i of a host buffer of dtype as a double. */
double parity_element(const void *data, wgt_dtype dtype, int64_t i);

/* Result of comparing two outputs. */
typedef struct parity_compare {
    bool ok;
    double error;          /* ||gpu - cpu|| / ||cpu|| over finite elements */
    int64_t special_mismatches; /* NaN/inf positions or signs that differ */
    int64_t first_bad;
    char detail[256];
} parity_compare;

/* Compares outputs of the same shape/dtype read from both contexts. */
parity_compare parity_compare_tensors(wgt_tensor *gpu, wgt_tensor *cpu, double tolerance);

#endif
