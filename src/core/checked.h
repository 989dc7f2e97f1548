/*
 * Checked int64 arithmetic for shapes, strides, offsets, element and byte
 * counts. Every such number can come from a caller (a shape, a slice bound, a
 * split size, a padding) or from a file, so a product or sum of two of them can
 * overflow; signed overflow is undefined behaviour in C and, in practice, wraps
 * to a small or negative size that then passes later checks. Each helper
 * returns false instead of overflowing and leaves *out unspecified; the caller
 * records an error naming its call and the shapes.
 */
#ifndef WGT_CHECKED_H
#define WGT_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest element count a tensor may have: numel * 8 bytes (the widest dtype
 * and the backends' byte arithmetic) must still fit in int64. */
#define WGT_MAX_NUMEL (INT64_MAX / 8)

static inline bool wgt_checked_add(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool wgt_checked_sub(int64_t a, int64_t b, int64_t *out) { return !__builtin_sub_overflow(a, b, out); }
static inline bool wgt_checked_mul(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Element count of shape into *numel; false when a size is negative or the
 * count exceeds WGT_MAX_NUMEL. A zero size anywhere makes the count 0 even when
 * the other sizes alone would overflow ({0, 2^40, 2^40} has 0 elements). */
static inline bool wgt_checked_numel(int ndim, const int64_t *shape, int64_t *numel)
{
    *numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return false;
        if (shape[i] == 0) {
            *numel = 0;
            return true;
        }
    }
    for (int i = 0; i < ndim; i++)
        if (!wgt_checked_mul(*numel, shape[i], numel) || *numel > WGT_MAX_NUMEL) return false;
    return true;
}

/* numel elements of elem_size bytes as a size_t; false when it does not fit. */
static inline bool wgt_checked_bytes(int64_t numel, size_t elem_size, size_t *bytes)
{
    if (numel < 0) return false;
    return !__builtin_mul_overflow((uint64_t)numel, (uint64_t)elem_size, bytes);
}

#endif /* WGT_CHECKED_H */
