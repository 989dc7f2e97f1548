/*
 * libFuzzer target for the safetensors reader (src/nn/safetensors*.c): every
 * input is a candidate file, opened from memory on a CPU context.
 *
 * Contract checked (beyond what ASan/UBSan catch): a refused file gives
 * WGT_ERR_BAD_FORMAT with a message naming the call (or OUT_OF_MEMORY, never
 * anything else); an accepted one has byte ranges that tile its data and every
 * tensor loads (or is UNSUPPORTED / a BOOL byte outside 0..1 is BAD_FORMAT)
 * with exactly the shape the header gave; the context works again after
 * clearing. Any broken contract traps, so libFuzzer reports it with the input.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_safetensors
 * Run:   build-fuzz/bin/fuzz_safetensors -max_total_time=120 \
 *            -dict=tests/fuzz/safetensors.dict tests/fuzz/corpus_safetensors
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wgtensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static wgt_context *fuzz_context(void)
{
    static wgt_context *ctx;
    if (!ctx) {
        wgt_context_options o;
        wgt_context_options_init(&o);
        o.backend = WGT_BACKEND_CPU;
        o.cpu_threads = 1;
        ctx = wgt_context_create(&o);
        if (!ctx || wgt_context_status(ctx) != WGT_OK) abort();
    }
    return ctx;
}

static void require(int cond)
{
    if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wgt_context *ctx = fuzz_context();
    wgt_safetensors *f = wgt_safetensors_open_memory(ctx, data, size, "fuzz input");
    if (!f) {
        wgt_status s = wgt_context_status(ctx);
        require(s == WGT_ERR_BAD_FORMAT || s == WGT_ERR_OUT_OF_MEMORY);
        require(strncmp(wgt_context_error_message(ctx), "wgt_safetensors_open", 20) == 0);
        require(wgt_context_clear_error(ctx) == WGT_OK);
        return 0;
    }
    uint64_t covered = 0;
    int n = wgt_safetensors_count(f);
    for (int i = 0; i < n; i++) {
        wgt_safetensors_info info;
        require(wgt_safetensors_info_get(f, i, &info) == WGT_OK);
        covered += info.data_bytes;
        require(wgt_safetensors_find(f, info.name) == i); /* names are unique */
        if (info.data_bytes > (1u << 20)) continue;       /* keep each run fast */
        wgt_tensor *t = wgt_safetensors_load(f, info.name);
        if (t) {
            require(wgt_tensor_ndim(t) == info.ndim);
            for (int d = 0; d < info.ndim; d++) require(wgt_tensor_shape(t)[d] == info.shape[d]);
            wgt_tensor_release(t);
        } else {
            wgt_status s = wgt_context_status(ctx);
            require(s == WGT_ERR_UNSUPPORTED || s == WGT_ERR_BAD_FORMAT || s == WGT_ERR_OUT_OF_MEMORY);
            require(wgt_context_clear_error(ctx) == WGT_OK);
        }
    }
    require(covered <= size);
    for (int i = 0; i < wgt_safetensors_metadata_count(f); i++) {
        const char *key, *value;
        require(wgt_safetensors_metadata_get(f, i, &key, &value) == WGT_OK);
        require(wgt_safetensors_metadata_find(f, key) != NULL);
    }
    wgt_safetensors_close(f);
    require(wgt_context_status(ctx) == WGT_OK);
    require(wgt_context_live_tensors(ctx) == 0);
    return 0;
}
