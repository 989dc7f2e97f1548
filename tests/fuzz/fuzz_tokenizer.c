/*
 * libFuzzer target for the tokenizer.json reader and the BPE it builds
 * (src/models/llm_tokenizer*.c, llm_json.c, llm_pretokenize.c): every input is
 * a candidate tokenizer.json.
 *
 * Contract checked (beyond what ASan/UBSan catch): a refused file gives a
 * message; an accepted one encodes a fixed set of texts (ASCII, digits,
 * whitespace runs, accents, CJK, an emoji) into ids inside its vocabulary
 * (or refuses one with a message), and every id list it gives decodes. Any
 * broken contract traps, so libFuzzer reports it with the input.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_tokenizer
 * Run:   build-fuzz/bin/fuzz_tokenizer -max_total_time=600 -max_len=65536 \
 *            -dict=tests/fuzz/json.dict tests/fuzz/corpus_tokenizer
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond)
{
    if (!cond) __builtin_trap();
}

static const char *const texts[] = {
    "Hello, world! It's 2026.", "  leading and    runs of   spaces\n\n\ttabs", "numbers 1234567 and 3.14159",
    "caf\xc3\xa9 na\xc3\xafve \xc3\x9c" "ber", "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95", "emoji \xf0\x9f\x98\x80!",
    "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256] = "";
    llm_tokenizer *t = llm_tokenizer_parse((const char *)data, size, msg, sizeof(msg));
    if (!t) {
        require(msg[0] != '\0');
        return 0;
    }
    const int vocab = llm_tokenizer_vocab_size(t);
    require(vocab > 0);
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        const size_t len = strlen(texts[i]);
        if (!llm_tokenizer_encode(t, texts[i], len, true, &ids, &n, msg, sizeof(msg))) {
            require(msg[0] != '\0');
            free(ids);
            continue;
        }
        for (size_t j = 0; j < n; j++) require(ids[j] >= 0 && ids[j] < vocab);
        char *back = NULL;
        size_t back_len = 0;
        require(llm_tokenizer_decode(t, ids, n, &back, &back_len));
        require(back != NULL && back[back_len] == '\0');
        free(back);
        free(ids);
    }
    llm_tokenizer_free(t);
    return 0;
}
