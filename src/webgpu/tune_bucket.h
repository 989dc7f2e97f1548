/* The GEMM size buckets: the tuner (tuner.c) times each tiled config per
 * bucket, and webgpu_matmul.c looks up the tuned config of a product's bucket.
 * Inline in a header of its own so that the matmul does not call into the
 * tuner, which calls the matmul to time it. */
#ifndef WGT_WEBGPU_TUNE_BUCKET_H
#define WGT_WEBGPU_TUNE_BUCKET_H

#include <math.h>
#include <stdint.h>

#define WEBGPU_TUNE_BUCKETS 6 /* GEMM size buckets 256..8192 */

static inline int webgpu_tune_bucket(int64_t m, int64_t n)
{
    /* the geometric mean of M and N, rounded to a power of two from 256 (0) to 8192 (5) */
    double g = sqrt((double)m * (double)n), size = 256;
    int bucket = 0;
    while (bucket < WEBGPU_TUNE_BUCKETS - 1 && g > size * 1.41421356) {
        size *= 2;
        bucket++;
    }
    return bucket;
}

#endif
