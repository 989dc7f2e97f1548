/* Tiny test harness: CHECK counts passes and failures; the summary line is the
 * one CTest logs and CI reads ("N passed, M failed"). */
#ifndef WGT_TEST_UTIL_H
#define WGT_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "wgtensor.h"

extern int test_passed, test_failed;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            test_passed++;                                                   \
        } else {                                                             \
            test_failed++;                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* CHECK that ctx holds status, then clear it and CHECK the context is usable. */
void check_error_and_recover(wgt_context *ctx, wgt_status expected, const char *what);

/* A WebGPU context on the default adapter, or NULL after printing why (the
 * test then fails: CI always has lavapipe). */
wgt_context *test_webgpu_context(void);
/* A context with the environment changed while it is created, which is when
 * the library reads its kernel-choice knobs (WGT_SPLITK, WGT_CONV_TILE, ...):
 * env lists name, value pairs, NULL-terminated (a NULL value unsets the name;
 * at most 8 pairs). The environment is as before when it returns. options:
 * NULL for a default WebGPU context. NULL after printing why, as
 * test_webgpu_context. */
wgt_context *test_context_env(const wgt_context_options *options, const char *const *env);
wgt_context *test_cpu_context(void);
/* Whether two kernels computing the same float expression (a fused epilogue
 * and the separate kernels it replaces) must agree bit for bit on ctx: on the
 * CPU backend and on a CPU adapter (lavapipe) they do; a GPU driver's shader
 * compiler may contract multiply-adds differently in the two (on an H100, 16
 * of 140 f16 SwiGLU outputs differed by one ulp), so there the tests allow
 * test_ulps(ctx) units in the last place. */
bool test_exact_kernels(wgt_context *ctx);
int test_ulps(wgt_context *ctx);
/* |a - b| in units in the last place of the wider, for values of dtype (f32 or f16). */
double test_ulp_distance(float a, float b, wgt_dtype dtype);

/* xorshift32: deterministic test data independent of the library's Philox. */
uint32_t test_xorshift(uint32_t *state);
/* f32 -> IEEE half bits (round to nearest even) and back. */
uint16_t test_f32_to_f16(float f);
float test_f16_to_f32(uint16_t h);

/* Prints "N passed, M failed" and returns the process exit code. */
int test_summary(void);

#endif
