/* Byte-level BPE tokenizer (src/models/llm_tokenizer.c) against the
 * `tokenizers` library: encode (with and without the special tokens of the
 * post-processor) and decode of varied texts, from expectations the library
 * wrote (tests/llm/make_tokenizer.py; --cases FILE takes a fresh set, which
 * the CTest tokenizer_vs_library makes with the library at test time). Then
 * malformed and unsupported tokenizer files, each refused with a message.
 * Four fixtures, one per supported style: Llama 3's regex, GPT-2's ByteLevel
 * regex (SmolLM), Qwen2's single-digit regex, and Llama 2 / TinyLlama's
 * SentencePiece-style BPE (U+2581 for spaces, byte fallback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_json.h"
#include "llm_tokenizer.h"
#include "test_util.h"

static void check_cases(const llm_tokenizer *t, const char *cases_path)
{
    char msg[256];
    size_t size;
    char *text = llm_read_file(cases_path, 1 << 24, &size, msg, sizeof(msg));
    CHECK(text != NULL, "%s", msg);
    if (!text) return;
    llm_json root;
    bool parsed = llm_json_parse(text, size, &root, msg, sizeof(msg));
    free(text);
    CHECK(parsed && root.type == LLM_JSON_ARRAY && root.length >= 10, "cases file: %s", parsed ? "too few cases" : msg);
    if (!parsed) return;
    for (size_t c = 0; c < root.length; c++) {
        const llm_json *cs = &root.items[c], *txt = llm_json_get(cs, "text");
        const char *want_names[2] = {"ids", "ids_special"};
        for (int special = 0; special < 2; special++) {
            const llm_json *want = llm_json_get(cs, want_names[special]);
            if (!txt || !want || want->type != LLM_JSON_ARRAY) {
                CHECK(false, "case %zu is malformed", c);
                continue;
            }
            int32_t *ids = NULL;
            size_t n = 0;
            bool ok = llm_tokenizer_encode(t, txt->string, txt->length, special, &ids, &n, msg, sizeof(msg));
            CHECK(ok, "encode case %zu: %s", c, msg);
            bool same = ok && n == want->length;
            size_t first = 0;
            for (size_t i = 0; same && i < n; i++)
                if (ids[i] != (int32_t)want->items[i].number) same = false, first = i;
            CHECK(same, "case %zu (\"%.40s\") %s: %zu ids, library %zu; first difference at %zu (ours %d, library %d)", c,
                  txt->string, want_names[special], n, want->length, first, ok && first < n ? ids[first] : -1,
                  first < want->length ? (int)want->items[first].number : -1);
            free(ids);
        }
        /* decode of the library's ids gives the library's text */
        const llm_json *want = llm_json_get(cs, "ids"), *decoded = llm_json_get(cs, "decoded");
        if (!want || !decoded) continue;
        int32_t *wids = malloc((want->length + 1) * sizeof(int32_t));
        for (size_t i = 0; wids && i < want->length; i++) wids[i] = (int32_t)want->items[i].number;
        char *out = NULL;
        size_t len = 0;
        bool ok = wids && llm_tokenizer_decode(t, wids, want->length, &out, &len);
        CHECK(ok && len == decoded->length && memcmp(out, decoded->string, len) == 0,
              "decode case %zu: \"%.60s\" vs library \"%.60s\"", c, ok ? out : "(failed)", decoded->string);
        free(out);
        free(wids);
    }
    llm_json_free(&root);
}

static void check_refused(const char *json, const char *expect, const char *what)
{
    char msg[256] = "";
    llm_tokenizer *t = llm_tokenizer_parse(json, strlen(json), msg, sizeof(msg));
    CHECK(t == NULL && strstr(msg, expect) != NULL, "%s: expected a refusal naming \"%s\", got \"%s\"", what, expect, msg);
    llm_tokenizer_free(t);
}

#define PRE "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}"
#define MODEL(vocab, merges) "\"model\":{\"type\":\"BPE\",\"vocab\":" vocab ",\"merges\":" merges "}"

static void check_malformed(void)
{
    check_refused("{", "invalid JSON", "truncated JSON");
    check_refused("{\"model\":1,}", "invalid JSON", "trailing comma");
    check_refused("{\"a\":\"\\ud800\"}", "surrogate", "lone surrogate");
    check_refused("[1]", "not an object", "top level array");
    check_refused("{" PRE "," MODEL("{\"a\":0}", "[]") ",\"normalizer\":{\"type\":\"NFKC\"}}", "normalizer \"NFKC\"",
                  "normalizer");
    check_refused("{" PRE "," MODEL("{\"a\":0}", "[]") ",\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
                  "{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                  "\"content\":\"\xE2\x96\x81\"}]}}", "with a pre_tokenizer", "SentencePiece normalizer plus a pre-tokenizer");
    check_refused("{\"pre_tokenizer\":{\"type\":\"Metaspace\"}," MODEL("{\"a\":0}", "[]") "}", "Metaspace",
                  "SentencePiece pre-tokenizer");
    check_refused("{" PRE ",\"model\":{\"type\":\"Unigram\"}}", "BPE", "Unigram model");
    check_refused("{" PRE "," MODEL("{\"a\":-1}", "[]") "}", "vocab id", "negative id");
    check_refused("{" PRE "," MODEL("{\"a\":0.5}", "[]") "}", "vocab id", "fractional id");
    check_refused("{" PRE "," MODEL("{\"a\":16000000}", "[]") "}", "sparse", "a huge id in a tiny file");
    check_refused("{" PRE "," MODEL("{\"a\":0,\"b\":0}", "[]") "}", "names two tokens", "one id, two tokens");
    check_refused("{" PRE "," MODEL("{\"a\":0,\"b\":1}", "[\"a b\"]") "}", "not in the vocab", "merge result missing");
    check_refused("{" PRE "," MODEL("{\"a\":0,\"b\":1,\"ab\":2}", "[\"ab\"]") "}", "left right", "merge without space");
    check_refused("{" PRE "," MODEL("{\"a\":0}", "[]") ",\"added_tokens\":[{\"id\":5}]}", "added token",
                  "added token without content");
    check_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                  "{\"Regex\":\"\\\\w+\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
                  "\"use_regex\":false}]}," MODEL("{\"a\":0}", "[]") "}",
                  "regex", "unknown regex");
    /* a tiny valid file works, and a byte without a token is an encode error */
    char msg[256] = "";
    const char *ok = "{" PRE "," MODEL("{\"a\":0,\"b\":1,\"ab\":2}", "[[\"a\",\"b\"]]") "}";
    llm_tokenizer *t = llm_tokenizer_parse(ok, strlen(ok), msg, sizeof(msg));
    CHECK(t != NULL, "tiny tokenizer: %s", msg);
    int32_t *ids = NULL;
    size_t n = 0;
    if (t) {
        bool enc = llm_tokenizer_encode(t, "abab", 4, false, &ids, &n, msg, sizeof(msg));
        CHECK(enc && n == 2 && ids[0] == 2 && ids[1] == 2, "tiny tokenizer encodes abab as [2, 2]");
        free(ids);
        ids = NULL;
        enc = llm_tokenizer_encode(t, "abc", 3, false, &ids, &n, msg, sizeof(msg));
        CHECK(!enc && strstr(msg, "0x63"), "a byte without a token is refused: %s", msg);
        enc = llm_tokenizer_encode(t, "a\xff", 2, false, &ids, &n, msg, sizeof(msg));
        CHECK(!enc && strstr(msg, "UTF-8"), "invalid UTF-8 is refused: %s", msg);
        size_t len;
        CHECK(llm_tokenizer_token_bytes(t, 3, &len) == NULL && llm_tokenizer_token_bytes(t, -1, &len) == NULL,
              "ids outside the vocabulary have no bytes");
    }
    llm_tokenizer_free(t);
}

static void check_tokenizer(const char *tokenizer_path, const char *cases_path)
{
    char msg[256] = "";
    llm_tokenizer *t = llm_tokenizer_load(tokenizer_path, msg, sizeof(msg));
    CHECK(t != NULL, "loading %s: %s", tokenizer_path, msg);
    if (t) {
        CHECK(llm_tokenizer_vocab_size(t) == 1024, "the fixture has 1024 tokens, got %d", llm_tokenizer_vocab_size(t));
        const int32_t bos = llm_tokenizer_bos(t);
        CHECK(bos >= 0 && (bos == llm_tokenizer_find(t, "<|begin_of_text|>") || bos == llm_tokenizer_find(t, "<s>")),
              "%s: the post-processor's first token is <|begin_of_text|> or <s>", tokenizer_path);
        check_cases(t, cases_path);
    }
    llm_tokenizer_free(t);
}

int main(int argc, char **argv)
{
    /* the three pre-tokenizer styles (tests/llm/make_tokenizer.py), or the
     * one pair given by --tokenizer FILE --cases FILE */
    const char *tokenizer_path = NULL, *cases_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--tokenizer") == 0) tokenizer_path = argv[i + 1];
        else if (strcmp(argv[i], "--cases") == 0) cases_path = argv[i + 1];
    }
    if (tokenizer_path && cases_path) {
        check_tokenizer(tokenizer_path, cases_path);
    } else {
        static const char *const styles[5][2] = {{"tokenizer.json", "tokenizer_cases.json"},
                                                 {"tokenizer_gpt2.json", "tokenizer_gpt2_cases.json"},
                                                 {"tokenizer_qwen2.json", "tokenizer_qwen2_cases.json"},
                                                 {"tokenizer_llama2.json", "tokenizer_llama2_cases.json"},
                                                 {"tokenizer_metaspace.json", "tokenizer_metaspace_cases.json"}};
        for (int s = 0; s < 5; s++) {
            char tp[1024], cp[1024];
            snprintf(tp, sizeof(tp), "%s/tests/llm/%s", WGT_SOURCE_DIR, styles[s][0]);
            snprintf(cp, sizeof(cp), "%s/tests/llm/%s", WGT_SOURCE_DIR, styles[s][1]);
            check_tokenizer(tp, cp);
        }
    }
    check_malformed();
    /* NFC (the Qwen2 fixture): decomposed text is refused, not encoded differently */
    char msg[256] = "";
    llm_tokenizer *q = llm_tokenizer_load(WGT_SOURCE_DIR "/tests/llm/tokenizer_qwen2.json", msg, sizeof(msg));
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(q && !llm_tokenizer_encode(q, "cafe\xCC\x81", 6, false, &ids, &n, msg, sizeof(msg)) && strstr(msg, "NFC") &&
              strstr(msg, "byte 4"), "a combining accent after e is refused naming NFC and byte 4: %s", msg);
    CHECK(q && !llm_tokenizer_encode(q, "\xE2\x84\xA6", 3, false, &ids, &n, msg, sizeof(msg)) && strstr(msg, "NFC"),
          "U+2126 OHM SIGN (NFC: U+03A9) is refused: %s", msg);
    CHECK(q && llm_tokenizer_encode(q, "caf\xC3\xA9 \xD7\xA9\xD7\x81", 10, false, &ids, &n, msg, sizeof(msg)),
          "precomposed text passes the quick check: %s", msg);
    free(ids);
    llm_tokenizer_free(q);
    return test_summary();
}
