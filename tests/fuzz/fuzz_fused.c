/*
 * libFuzzer target for the wgt_fused expression parser and code generation
 * (src/core/expr.c and the elementwise front-end): every input is an
 * expression text, compiled and run on a CPU context over three small inputs
 * a: f32 [2, 3], b: f32 [3], c: i32 [2, 1] and four parameters p0..p3.
 *
 * Contract checked (beyond what ASan/UBSan catch): a refused expression records
 * an error whose message names the call ("wgt_fused"); an accepted one gives a
 * [2, 3] result that reads back; a call never both fails and records nothing,
 * or succeeds and records an error; the context works again after clearing.
 * Any broken contract traps, so libFuzzer reports it with the input.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_fused
 * Run:   build-fuzz/bin/fuzz_fused -max_total_time=120 -dict=tests/fuzz/fused.dict \
 *            <an empty work folder> tests/fuzz/corpus_fused
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wgtensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static wgt_context *ctx;
static wgt_tensor *inputs[3];

static void setup(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_CPU;
    o.cpu_threads = 1; /* libFuzzer runs one input at a time: threads only add noise */
    ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) __builtin_trap();
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1};
    inputs[0] = wgt_tensor_from_host(ctx, WGT_F32, 2, s23, (const float[]){-2, -0.5f, 0, 0.5f, 2, 100});
    inputs[1] = wgt_tensor_from_host(ctx, WGT_F32, 1, s3, (const float[]){1, -1, 3});
    inputs[2] = wgt_tensor_from_host(ctx, WGT_I32, 2, s21, (const int32_t[]){7, -3});
    if (!inputs[0] || !inputs[1] || !inputs[2]) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx) setup();
    if (size > 1 << 20) return 0; /* the parser's length is not what is under test */
    char *expr = malloc(size + 1);
    if (!expr) return 0;
    memcpy(expr, data, size);
    expr[size] = 0;
    static const double params[4] = {0.5, -2, 1e30, 3};
    wgt_tensor *out = wgt_fused_params(ctx, expr, inputs, 3, params, 4);
    wgt_status s = wgt_context_status(ctx);
    if ((out == NULL) != (s != WGT_OK)) __builtin_trap();
    if (s != WGT_OK) {
        if (strncmp(wgt_context_error_message(ctx), "wgt_fused", 9) != 0) __builtin_trap();
        if (s == WGT_ERR_INTERNAL) __builtin_trap();
        if (wgt_context_clear_error(ctx) != WGT_OK) __builtin_trap();
    } else {
        /* Broadcast of [2, 3], [3] and [2, 1], or fewer when some are unused. */
        unsigned char bytes[6 * 4];
        if (wgt_tensor_numel(out) > 6) __builtin_trap();
        if (wgt_tensor_read(out, bytes, sizeof bytes) != WGT_OK) __builtin_trap();
    }
    wgt_tensor_release(out);
    free(expr);
    return 0;
}
