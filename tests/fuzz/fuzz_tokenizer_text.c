/*
 * libFuzzer target for BPE encoding (src/models/llm_tokenizer_encode.c,
 * llm_pretokenize.c, llm_unicode*.c): every input is a text, encoded with the
 * fixtures' byte-level tokenizers (tests/llm/tokenizer.json, Llama 3 style;
 * tokenizer_gpt2.json, GPT-2 style), which reach every byte sequence.
 *
 * Contract checked (beyond what ASan/UBSan catch): valid UTF-8 encodes, into
 * ids inside the vocabulary, and decodes back to exactly the same bytes;
 * invalid UTF-8 is refused with a message. Any broken contract traps.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_tokenizer_text
 * Run:   build-fuzz/bin/fuzz_tokenizer_text -max_total_time=480 tests/fuzz/corpus_tokenizer_text
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond)
{
    if (!cond) __builtin_trap();
}

/* Whether s[0..n) is valid UTF-8 (shortest forms, no surrogates, <= U+10FFFF):
 * written apart from llm_utf8_decode, whose acceptance it is the oracle for. */
static int valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n) return 0;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

static llm_tokenizer *tokenizers[2];

static void load(void)
{
    static const char *const files[2] = {WGT_SOURCE_DIR "/tests/llm/tokenizer.json",
                                         WGT_SOURCE_DIR "/tests/llm/tokenizer_gpt2.json"};
    for (int i = 0; i < 2; i++) {
        char msg[256];
        tokenizers[i] = llm_tokenizer_load(files[i], msg, sizeof(msg));
        if (!tokenizers[i]) {
            fprintf(stderr, "fuzz_tokenizer_text: %s\n", msg);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tokenizers[0]) load();
    const int valid = valid_utf8(data, size);
    for (int i = 0; i < 2; i++) {
        const llm_tokenizer *t = tokenizers[i];
        char msg[256] = "";
        int32_t *ids = NULL;
        size_t n = 0;
        const int ok = llm_tokenizer_encode(t, (const char *)data, size, false, &ids, &n, msg, sizeof(msg));
        if (!valid) {
            require(!ok && msg[0] != '\0');
            free(ids);
            continue;
        }
        require(ok);
        for (size_t j = 0; j < n; j++) require(ids[j] >= 0 && ids[j] < llm_tokenizer_vocab_size(t));
        char *back = NULL;
        size_t back_len = 0;
        require(llm_tokenizer_decode(t, ids, n, &back, &back_len));
        require(back_len == size && (size == 0 || memcmp(back, data, size) == 0));
        free(back);
        free(ids);
    }
    return 0;
}
