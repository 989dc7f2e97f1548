/*
 * Private to the CPU backend: exp functions that vectorize, and the bit casts
 * they use.
 *
 * libm's expf and exp are calls the compiler cannot vectorize (glibc declares
 * its vector variants only under -ffast-math), so a loop of them runs one
 * element at a time. These are plain arithmetic without tables or branches, so
 * an `omp simd` loop of them runs several elements per instruction.
 *
 * Both reduce e^x = 2^n * e^r with n = round(x / ln 2) and |r| <= ln(2) / 2,
 * take e^r from its Taylor series, and build 2^n from its bits. Everything is
 * in double, with mul and add only (no FMA, so every compiler and ISA level
 * gives the same bits):
 *
 *  cpu_expf  float in, float out. Degree 8: relative error < 3e-10 before the
 *            one rounding to float, so the result is the correctly rounded e^x
 *            except where e^x lies within 3e-10 (relative) of a halfway point
 *            (error then just over 0.5 ulp; glibc's expf is within 0.502 ulp).
 *            Overflow gives inf, underflow subnormals or 0, NaN stays the same
 *            NaN, exp(-inf) = 0, exp(inf) = inf.
 *            Measured over every float: 1 ulp at most, and 40k results that
 *            differ from the correctly rounded one (glibc's expf: 170k).
 *  cpu_exp   double, for softmax's exp(x - max), x <= 0. Degree 12: relative
 *            error < 5e-16 (two double ulps; measured). For x < -708 (e^x <
 *            3.3e-308, near the subnormals) the result is 0: softmax only adds
 *            such values to, or divides them by, a sum >= 1 and stores floats;
 *            above 709 it is inf.
 */
#ifndef WGT_CPU_MATH_H
#define WGT_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ln 2 in two parts: n * CPU_LN2_HI is exact for |n| < 2^11 (the low 21 bits of
 * its significand are zero), so x - n ln 2 loses nothing (fdlibm's split). */
#define CPU_LN2_HI 6.93147180369123816490e-01
#define CPU_LN2_LO 1.90821492927058770002e-10
#define CPU_INV_LN2 1.44269504088896338700e+00
/* Adding 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer, which
 * then sits in the low bits of the sum's significand. */
#define CPU_ROUND_SHIFTER 0x1.8p52

static inline uint64_t cpu_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static inline uint32_t cpu_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float cpu_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double cpu_bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* 2^n * e^r for x = n ln 2 + r; meaningful for x in [-708, 709], where 2^n is
 * a normal double. degree is 8 or 12 (a constant after inlining). */
static inline double cpu_exp_reduced(double x, int degree)
{
    double shifted = x * CPU_INV_LN2 + CPU_ROUND_SHIFTER;
    uint64_t n_bits = cpu_f64_bits(shifted); /* n in the low bits, two's complement */
    double n = shifted - CPU_ROUND_SHIFTER;
    double r = (x - n * CPU_LN2_HI) - n * CPU_LN2_LO;
    /* Horner on the Taylor series 1 + r + r^2/2! + ... */
    double p;
    if (degree > 8) {
        p = 1.0 / 479001600.0;                 /* 1/12! */
        p = p * r + 1.0 / 39916800.0;          /* 1/11! */
        p = p * r + 1.0 / 3628800.0;
        p = p * r + 1.0 / 362880.0;
        p = p * r + 1.0 / 40320.0;             /* 1/8! */
    } else {
        p = 1.0 / 40320.0;
    }
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* 2^n: the exponent field holds n + 1023; the low 12 bits of n_bits are n
     * modulo 2^12 and the shift drops the rest. */
    double scale = cpu_bits_f64((n_bits + 1023) << 52);
    return p * scale;
}

/* Lanes of all ones where cond holds: selects by bit masks. A plain ?: after
 * the arithmetic invites the compiler to move the arithmetic into a branch
 * (it is dead on the other side), and a loop with branches does not vectorize. */
static inline uint32_t cpu_mask32(int cond) { return 0u - (uint32_t)cond; }
static inline uint64_t cpu_mask64(int cond) { return 0u - (uint64_t)cond; }

static inline float cpu_expf(float x)
{
    /* Outside [-104, 89] the float result is 0 or inf whatever the exact value
     * (and 2^n would leave the normal doubles): replace what was computed. */
    uint32_t e = cpu_f32_bits((float)cpu_exp_reduced(x, 8));
    e &= ~cpu_mask32(x < -104.0f);
    uint32_t overflow = cpu_mask32(x > 89.0f), nan = cpu_mask32(x != x);
    e = (e & ~overflow) | (0x7f800000u & overflow);
    e = (e & ~nan) | (cpu_f32_bits(x) & nan); /* NaN stays the same NaN */
    return cpu_bits_f32(e);
}

static inline double cpu_exp(double x)
{
    uint64_t e = cpu_f64_bits(cpu_exp_reduced(x, 12));
    e &= ~cpu_mask64(x < -708.0);
    uint64_t overflow = cpu_mask64(x > 709.0), nan = cpu_mask64(x != x);
    e = (e & ~overflow) | (0x7ff0000000000000u & overflow);
    e = (e & ~nan) | (cpu_f64_bits(x) & nan);
    return cpu_bits_f64(e);
}

#endif /* WGT_CPU_MATH_H */
