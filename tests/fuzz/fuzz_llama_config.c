/*
 * libFuzzer target for the Llama config.json reader (src/models/llama_config.c
 * over llm_json.c): every input is a candidate config.json.
 *
 * Contract checked (beyond what ASan/UBSan catch): a refused file gives a
 * message; an accepted one describes a model the forward pass can shape:
 * positive sizes, whole grouped-query groups (heads a multiple of kv heads),
 * a finite eps >= 0 and a finite positive rope theta, special token ids -1
 * (absent) or below 2^24 (only compared, never indexed). Any broken contract
 * traps.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_llama_config
 * Run:   build-fuzz/bin/fuzz_llama_config -max_total_time=600 \
 *            -dict=tests/fuzz/json.dict tests/fuzz/corpus_llama_config
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "llama.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond)
{
    if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256] = "";
    llama_config c;
    if (!llama_config_parse((const char *)data, size, &c, msg, sizeof(msg))) {
        require(msg[0] != '\0');
        return 0;
    }
    require(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0 && c.n_layers > 0);
    require(c.n_heads > 0 && c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0 && c.head_dim > 0);
    require(c.max_position > 0);
    require(isfinite(c.rms_eps) && c.rms_eps >= 0 && isfinite(c.rope_theta) && c.rope_theta > 0);
    require(c.bos_token_id >= -1 && c.bos_token_id < (1 << 24));
    require(c.eos_token_id >= -1 && c.eos_token_id < (1 << 24));
    return 0;
}
