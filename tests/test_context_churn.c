/*
 * Many WebGPU contexts, one after another, in one process: each must land on
 * the same adapter as the first and run a matrix product correctly.
 *
 * Why: with an instance per context, NVIDIA's Vulkan driver stopped
 * enumerating adapters after ~28 contexts of one process (H100 and H200,
 * driver 580.159.04), and context creation then fell back to GL, whose
 * compute the driver refused: test_webgpu_matmul, which makes a context per
 * kernel knob, failed its last groups there with "Validation Error". Contexts
 * now share one instance per process (native_extras.c). lavapipe never had
 * the limit, so on CI this checks that the sharing keeps contexts
 * independent: a context destroyed leaves the next one working, two live
 * contexts at once (same instance) do not disturb each other, and the
 * adapter list stays the same.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define CONTEXTS 40

/* x [4, 4] @ x with x[i][j] = i - j + seed: row 0 of the product against a
 * direct sum (exact in f32: small integers). */
static void check_product(wgt_context *ctx, int seed, const char *what)
{
    float x[16], y[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) x[4 * i + j] = (float)(i - j + seed);
    wgt_scope_push(ctx);
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){4, 4}, x);
    wgt_status s = wgt_tensor_read(wgt_matmul(t, t), y, sizeof(y));
    wgt_scope_pop(ctx);
    CHECK(s == WGT_OK, "%s: the product failed: %s", what, wgt_context_error_message(ctx));
    if (s != WGT_OK) return;
    for (int j = 0; j < 4; j++) {
        float want = 0;
        for (int k = 0; k < 4; k++) want += x[k] * x[4 * k + j];
        CHECK(y[j] == want, "%s: y[0][%d] = %g, want %g", what, j, (double)y[j], (double)want);
    }
}

static wgt_context *webgpu_context(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    return wgt_context_create(&o);
}

int main(void)
{
    wgt_adapter_info *before = NULL, first;
    size_t n_before = 0;
    CHECK(wgt_adapters_enumerate(&before, &n_before) == WGT_OK && n_before > 0, "no adapter to start with");
    memset(&first, 0, sizeof(first));
    for (int i = 0; i < CONTEXTS; i++) {
        char what[64];
        snprintf(what, sizeof(what), "context %d of %d", i + 1, CONTEXTS);
        wgt_context *ctx = webgpu_context();
        bool ok = ctx && wgt_context_status(ctx) == WGT_OK;
        CHECK(ok, "%s: not created: %s", what, ctx ? wgt_context_error_message(ctx) : "out of memory");
        if (!ok) {
            wgt_context_destroy(ctx);
            break;
        }
        wgt_adapter_info info;
        wgt_context_adapter_info(ctx, &info);
        if (i == 0) first = info;
        CHECK(strcmp(info.backend, first.backend) == 0 && strcmp(info.name, first.name) == 0,
              "%s: on %s (%s), the first was on %s (%s)", what, info.name, info.backend, first.name, first.backend);
        check_product(ctx, i, what);
        if (i % 10 == 5) { /* a second context alive at the same time, then the first used after it is gone */
            wgt_context *other = webgpu_context();
            CHECK(other && wgt_context_status(other) == WGT_OK, "%s: a second live context failed", what);
            if (other && wgt_context_status(other) == WGT_OK) check_product(other, i + 100, "the second context");
            wgt_context_destroy(other);
            check_product(ctx, i + 200, "the first context after the second was destroyed");
        }
        wgt_context_destroy(ctx);
    }
    wgt_adapter_info *after = NULL;
    size_t n_after = 0;
    CHECK(wgt_adapters_enumerate(&after, &n_after) == WGT_OK && n_after == n_before,
          "adapters after %d contexts: %zu, before: %zu", CONTEXTS, n_after, n_before);
    wgt_adapters_free(before);
    wgt_adapters_free(after);
    return test_summary();
}
