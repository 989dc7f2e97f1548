#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int test_passed, test_failed;

void check_error_and_recover(wgt_context *ctx, wgt_status expected, const char *what)
{
    wgt_status got = wgt_context_status(ctx);
    CHECK(got == expected, "%s: expected %s, got %s (%s)", what, wgt_status_string(expected), wgt_status_string(got),
          wgt_context_error_message(ctx));
    if (got != WGT_OK) CHECK(strlen(wgt_context_error_message(ctx)) > 0, "%s: empty error message", what);
    wgt_context_clear_error(ctx);
    /* The context must work again: a small op round trip. */
    float v[3] = {1, 2, 3}, out[3] = {0};
    int64_t n = 3;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_tensor *s = t ? wgt_binary_scalar(WGT_OP_MUL, t, 2.0) : NULL;
    wgt_status rs = s ? wgt_tensor_read(s, out, sizeof(out)) : wgt_context_status(ctx);
    CHECK(rs == WGT_OK && out[0] == 2 && out[1] == 4 && out[2] == 6, "%s: context not usable after clear: %s", what,
          wgt_context_error_message(ctx));
    wgt_tensor_release(s);
    wgt_tensor_release(t);
    wgt_context_clear_error(ctx); /* a failure above must not cascade into later checks */
}

static wgt_context *create(const wgt_context_options *o)
{
    wgt_context *ctx = wgt_context_create(o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "FAIL: cannot create %s context: %s\n", o->backend == WGT_BACKEND_CPU ? "cpu" : "webgpu",
                ctx ? wgt_context_error_message(ctx) : "out of memory");
        test_failed++;
        wgt_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static wgt_context *make(wgt_backend_kind kind)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = kind;
    return create(&o);
}

#define TEST_ENV_MAX 8

wgt_context *test_context_env(const wgt_context_options *options, const char *const *env)
{
    wgt_context_options o;
    if (options) o = *options;
    else wgt_context_options_init(&o), o.backend = WGT_BACKEND_WEBGPU;
    char *saved[TEST_ENV_MAX];
    int n = 0;
    for (; env && env[2 * n] && n < TEST_ENV_MAX; n++) {
        const char *name = env[2 * n], *value = env[2 * n + 1], *was = getenv(name);
        saved[n] = was ? strdup(was) : NULL;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    wgt_context *ctx = create(&o);
    for (int i = n - 1; i >= 0; i--) { /* as it was, last first (a name given twice ends as before) */
        if (saved[i]) setenv(env[2 * i], saved[i], 1);
        else unsetenv(env[2 * i]);
        free(saved[i]);
    }
    return ctx;
}

wgt_context *test_webgpu_context(void) { return make(WGT_BACKEND_WEBGPU); }
wgt_context *test_cpu_context(void) { return make(WGT_BACKEND_CPU); }

int test_summary(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed == 0 && test_passed > 0 ? 0 : 1;
}

uint32_t test_xorshift(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* IEEE half conversions with round to nearest even (the oracle for f16 data). */
uint16_t test_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)(sign | half);
}

float test_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do {
                mant <<= 1;
                e++;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}


bool test_exact_kernels(wgt_context *ctx)
{
    if (wgt_context_backend(ctx) != WGT_BACKEND_WEBGPU) return true;
    wgt_adapter_info info;
    return wgt_context_adapter_info(ctx, &info) == WGT_OK && info.type == WGT_ADAPTER_CPU;
}

int test_ulps(wgt_context *ctx) { return test_exact_kernels(ctx) ? 0 : 2; }

double test_ulp_distance(float a, float b, wgt_dtype dtype)
{
    if (a == b) return 0;
    if (!isfinite(a) || !isfinite(b)) return INFINITY;
    const double m = fmax(fabs((double)a), fabs((double)b));
    const int mantissa = dtype == WGT_F16 ? 10 : 23, min_exp = dtype == WGT_F16 ? -14 : -126;
    int e;
    frexp(m, &e); /* m in [2^(e-1), 2^e) */
    const double ulp = ldexp(1.0, (e - 1 > min_exp ? e - 1 : min_exp) - mantissa);
    return fabs((double)a - (double)b) / ulp;
}
