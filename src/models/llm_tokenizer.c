#define _POSIX_C_SOURCE 200809L /* strdup */
/* tokenizer.json -> llm_tokenizer (llm_tokenizer.h): loading and validation.
 * Encoding and decoding are in llm_tokenizer_encode.c, the pre-tokenizer
 * regexes in llm_pretokenize.c. */
#include "llm_tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_json.h"
#include "llm_unicode.h"

#define MAX_TOKENIZER_BYTES ((size_t)64 << 20)

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int32_t llm_tok_vocab_find(const llm_tokenizer *t, const char *s, size_t n)
{
    for (size_t i = fnv1a(s, n) & (t->vocab_cap - 1);; i = (i + 1) & (t->vocab_cap - 1)) {
        const str_slot *e = &t->vocab[i];
        if (!e->key) return -1;
        if (strlen(e->key) == n && memcmp(e->key, s, n) == 0) return e->id;
    }
}

static bool vocab_insert(llm_tokenizer *t, const char *key, int32_t id)
{
    const size_t n = strlen(key);
    for (size_t i = fnv1a(key, n) & (t->vocab_cap - 1);; i = (i + 1) & (t->vocab_cap - 1)) {
        str_slot *e = &t->vocab[i];
        if (!e->key) return e->key = key, e->id = id, true;
        if (strcmp(e->key, key) == 0) return false;
    }
}

pair_slot *llm_tok_merge_slot(const llm_tokenizer *t, int32_t a, int32_t b)
{
    const uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    for (size_t i = (key * 0x9E3779B97F4A7C15ull >> 20) & (t->merges_cap - 1);; i = (i + 1) & (t->merges_cap - 1)) {
        pair_slot *e = &t->merges[i];
        if (e->key == 0 || e->key == key) return e;
    }
}

static size_t pow2_above(size_t n)
{
    size_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

/* GPT-2's reversible map of bytes to printable code points. */
static void byte_level_alphabet(uint32_t out[256])
{
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        out[b] = printable ? (uint32_t)b : next++;
    }
}

void llm_tokenizer_free(llm_tokenizer *t)
{
    if (!t) return;
    for (int i = 0; t->text && i < t->vocab_size; i++) free(t->text[i]);
    for (int i = 0; t->bytes && i < t->vocab_size; i++) free(t->bytes[i]);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->text), free(t->bytes), free(t->nbytes), free(t->vocab), free(t->merges), free(t->added);
    free(t);
}

bool llm_tok_bad(char *msg, size_t msg_size, const char *what)
{
    snprintf(msg, msg_size, "tokenizer.json: %s", what);
    return false;
}

static const char *str_of(const llm_json *obj, const char *key)
{
    const llm_json *v = llm_json_get(obj, key);
    return v && v->type == LLM_JSON_STRING ? v->string : NULL;
}

static bool flag_of(const llm_json *obj, const char *key, bool def)
{
    const llm_json *v = llm_json_get(obj, key);
    return v && v->type == LLM_JSON_BOOL ? v->boolean : def;
}

static const char REGEX_LLAMA3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char REGEX_QWEN2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The pre-tokenizer: ByteLevel alone (GPT-2 regex), or Sequence [Split(regex,
 * Isolated), ByteLevel(use_regex false)]. */
static bool read_pretokenizer(llm_tokenizer *t, const llm_json *pre, char *msg, size_t msg_size)
{
    const char *type = str_of(pre, "type");
    if (!type) return llm_tok_bad(msg, msg_size, "pre_tokenizer has no type (only byte-level BPE is supported)");
    if (strcmp(type, "Metaspace") == 0) { /* newer Llama 2 conversions: SentencePiece-style, unsplit */
        const char *rep = str_of(pre, "replacement"), *scheme = str_of(pre, "prepend_scheme");
        if (!rep || strcmp(rep, "\xE2\x96\x81") != 0 || flag_of(pre, "split", true))
            return llm_tok_bad(msg, msg_size, "a Metaspace pre_tokenizer must use U+2581 and split: false");
        t->spm = t->spm_metaspace = true;
        if (!scheme) t->spm_prepend = flag_of(pre, "add_prefix_space", true) ? SPM_PREPEND_UNLESS_SPACE : SPM_PREPEND_NEVER;
        else if (strcmp(scheme, "always") == 0) t->spm_prepend = SPM_PREPEND_UNLESS_SPACE;
        else if (strcmp(scheme, "first") == 0) t->spm_prepend = SPM_PREPEND_FIRST;
        else if (strcmp(scheme, "never") == 0) t->spm_prepend = SPM_PREPEND_NEVER;
        else return llm_tok_bad(msg, msg_size, "Metaspace prepend_scheme must be always, first or never");
        return true;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        if (!flag_of(pre, "use_regex", true))
            return llm_tok_bad(msg, msg_size, "a ByteLevel pre_tokenizer without its regex is not supported");
        t->pretok = LLM_PRETOK_GPT2;
        t->add_prefix_space = flag_of(pre, "add_prefix_space", false);
        return true;
    }
    const llm_json *seq = llm_json_get(pre, "pretokenizers");
    if (strcmp(type, "Sequence") != 0 || !seq || seq->type != LLM_JSON_ARRAY || seq->length != 2) {
        snprintf(msg, msg_size, "tokenizer.json: pre_tokenizer \"%s\" is not supported (byte-level BPE only: "
                 "ByteLevel, or Sequence of Split and ByteLevel)", type);
        return false;
    }
    const llm_json *split = &seq->items[0], *bl = &seq->items[1];
    const char *st = str_of(split, "type"), *bt = str_of(bl, "type"), *behavior = str_of(split, "behavior");
    const char *regex = str_of(llm_json_get(split, "pattern"), "Regex");
    if (!st || strcmp(st, "Split") != 0 || !bt || strcmp(bt, "ByteLevel") != 0 || flag_of(bl, "use_regex", true))
        return llm_tok_bad(msg, msg_size, "pre_tokenizer Sequence must be [Split, ByteLevel(use_regex: false)]");
    if (!behavior || strcmp(behavior, "Isolated") != 0 || flag_of(split, "invert", false))
        return llm_tok_bad(msg, msg_size, "the Split pre_tokenizer must be Isolated and not inverted");
    if (regex && strcmp(regex, REGEX_LLAMA3) == 0) t->pretok = LLM_PRETOK_LLAMA3;
    else if (regex && strcmp(regex, REGEX_QWEN2) == 0) t->pretok = LLM_PRETOK_QWEN2;
    else return llm_tok_bad(msg, msg_size, "the Split regex is not one of the supported ones (Llama 3, Qwen2)");
    t->regex_in_sequence = true;
    t->add_prefix_space = flag_of(bl, "add_prefix_space", false);
    return true;
}

/* Llama 2's normalizer: Sequence [Prepend "▁", Replace " " -> "▁"]. */
static bool is_spm_normalizer(const llm_json *norm)
{
    const char *type = str_of(norm, "type");
    const llm_json *list = llm_json_get(norm, "normalizers");
    if (!type || strcmp(type, "Sequence") != 0 || !list || list->type != LLM_JSON_ARRAY || list->length != 2) return false;
    const llm_json *a = &list->items[0], *b = &list->items[1];
    const char *at = str_of(a, "type"), *bt = str_of(b, "type"), *prepend = str_of(a, "prepend");
    const char *pattern = str_of(llm_json_get(b, "pattern"), "String"), *content = str_of(b, "content");
    return at && strcmp(at, "Prepend") == 0 && prepend && strcmp(prepend, "\xE2\x96\x81") == 0 && bt &&
           strcmp(bt, "Replace") == 0 && pattern && strcmp(pattern, " ") == 0 && content &&
           strcmp(content, "\xE2\x96\x81") == 0;
}

/* Decoded bytes of a vocabulary token: byte-level characters back to bytes,
 * <0xXX> to its byte. */
static bool token_to_bytes(const llm_tokenizer *t, const char *s, char **out, size_t *len)
{
    const size_t n = strlen(s);
    char *b = malloc(n + 1);
    if (!b) return false;
    unsigned hex;
    if (n == 6 && sscanf(s, "<0x%2X>", &hex) == 1 && s[5] == '>') {
        b[0] = (char)hex;
        *out = b, *len = 1;
        return true;
    }
    size_t k = 0;
    if (t->spm) { /* "▁" (U+2581, E2 96 81) is a space; everything else as written */
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) b[k++] = ' ', i += 3;
            else b[k++] = s[i++];
        }
        *out = b, *len = k;
        return true;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = llm_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        /* the alphabet's code points are below 512 (256 + 68 remapped bytes) */
        const int byte = l && cp < 512 ? t->char_byte[cp] : -1;
        if (byte < 0) { /* not a byte-level character: keep the text as it is */
            memcpy(b, s, n);
            *out = b, *len = n;
            return true;
        }
        b[k++] = (char)byte;
        i += (size_t)l;
    }
    *out = b, *len = k;
    return true;
}

static bool set_token(llm_tokenizer *t, int32_t id, const char *text, char *msg, size_t msg_size)
{
    if (id < 0 || id >= t->vocab_size) return llm_tok_bad(msg, msg_size, "token id out of range");
    if (t->text[id] && strcmp(t->text[id], text) != 0) {
        snprintf(msg, msg_size, "tokenizer.json: id %d names two tokens", (int)id);
        return false;
    }
    if (t->text[id]) return true;
    t->text[id] = strdup(text);
    return t->text[id] != NULL || llm_tok_bad(msg, msg_size, "out of memory");
}

static bool read_model(llm_tokenizer *t, const llm_json *root, char *msg, size_t msg_size)
{
    const llm_json *model = llm_json_get(root, "model"), *added = llm_json_get(root, "added_tokens");
    const char *type = str_of(model, "type");
    if (!type || strcmp(type, "BPE") != 0) return llm_tok_bad(msg, msg_size, "model.type must be \"BPE\"");
    const llm_json *vocab = llm_json_get(model, "vocab"), *merges = llm_json_get(model, "merges");
    if (!vocab || vocab->type != LLM_JSON_OBJECT || vocab->length == 0)
        return llm_tok_bad(msg, msg_size, "model.vocab must be a non-empty object");
    if (!merges || merges->type != LLM_JSON_ARRAY) return llm_tok_bad(msg, msg_size, "model.merges must be an array");
    if (added && added->type != LLM_JSON_ARRAY) return llm_tok_bad(msg, msg_size, "added_tokens must be an array");
    /* ids: vocabulary values and added tokens, each in [0, 2^24) */
    double max_id = -1;
    for (size_t i = 0; i < vocab->length; i++) {
        const llm_json *v = &vocab->items[i];
        if (v->type != LLM_JSON_NUMBER || v->number < 0 || v->number >= (1 << 24) || v->number != (int32_t)v->number)
            return llm_tok_bad(msg, msg_size, "a vocab id is not an integer in [0, 2^24)");
        if (v->number > max_id) max_id = v->number;
    }
    for (size_t i = 0; added && i < added->length; i++) {
        const llm_json *id = llm_json_get(&added->items[i], "id");
        if (!id || id->type != LLM_JSON_NUMBER || id->number < 0 || id->number >= (1 << 24) ||
            id->number != (int32_t)id->number || !str_of(&added->items[i], "content") ||
            !*str_of(&added->items[i], "content"))
            return llm_tok_bad(msg, msg_size, "an added token lacks an integer id in [0, 2^24) or a non-empty content");
        if (id->number > max_id) max_id = id->number;
    }
    t->vocab_size = (int)max_id + 1;
    /* ids are dense in real files; a few huge ids must not make us allocate
     * tables of 2^24 entries for a tiny hostile file */
    const size_t entries = vocab->length + (added ? added->length : 0);
    if ((size_t)t->vocab_size > 2 * entries + 1024)
        return llm_tok_bad(msg, msg_size, "token ids are sparse (the largest id is far above the number of tokens)");
    t->text = calloc((size_t)t->vocab_size, sizeof(char *));
    t->bytes = calloc((size_t)t->vocab_size, sizeof(char *));
    t->nbytes = calloc((size_t)t->vocab_size, sizeof(size_t));
    t->vocab_cap = pow2_above(vocab->length);
    t->vocab = calloc(t->vocab_cap, sizeof(str_slot));
    t->merges_cap = pow2_above(merges->length);
    t->merges = calloc(t->merges_cap, sizeof(pair_slot));
    t->added = calloc(added ? added->length + 1 : 1, sizeof(added_token));
    if (!t->text || !t->bytes || !t->nbytes || !t->vocab || !t->merges || !t->added)
        return llm_tok_bad(msg, msg_size, "out of memory");
    for (size_t i = 0; i < vocab->length; i++) {
        const int32_t id = (int32_t)vocab->items[i].number;
        if (!set_token(t, id, vocab->keys[i], msg, msg_size)) return false;
        if (!vocab_insert(t, t->text[id], id)) return llm_tok_bad(msg, msg_size, "duplicate vocab entry");
    }
    for (size_t i = 0; added && i < added->length; i++) {
        const int32_t id = (int32_t)llm_json_get(&added->items[i], "id")->number;
        const char *content = str_of(&added->items[i], "content");
        if (!set_token(t, id, content, msg, msg_size)) return false;
        added_token *a = &t->added[t->n_added++];
        a->id = id, a->len = strlen(content), a->content = strdup(content);
        if (!a->content) return llm_tok_bad(msg, msg_size, "out of memory");
    }
    /* merges: "a b" strings or ["a", "b"] pairs; rank = position */
    for (size_t r = 0; r < merges->length; r++) {
        const llm_json *m = &merges->items[r];
        char left[512], right[512];
        if (m->type == LLM_JSON_STRING) {
            const char *sp = strchr(m->string, ' ');
            if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - m->string) >= sizeof(left) || strlen(sp + 1) >= sizeof(right))
                return llm_tok_bad(msg, msg_size, "a merge string is not \"left right\"");
            memcpy(left, m->string, (size_t)(sp - m->string));
            left[sp - m->string] = 0;
            strcpy(right, sp + 1);
        } else if (m->type == LLM_JSON_ARRAY && m->length == 2 && m->items[0].type == LLM_JSON_STRING &&
                   m->items[1].type == LLM_JSON_STRING && m->items[0].length < sizeof(left) &&
                   m->items[1].length < sizeof(right)) {
            strcpy(left, m->items[0].string);
            strcpy(right, m->items[1].string);
        } else {
            return llm_tok_bad(msg, msg_size, "a merge is neither \"left right\" nor [left, right]");
        }
        char joined[1024];
        snprintf(joined, sizeof(joined), "%s%s", left, right);
        const int32_t a = llm_tok_vocab_find(t, left, strlen(left)), b = llm_tok_vocab_find(t, right, strlen(right));
        const int32_t ab = llm_tok_vocab_find(t, joined, strlen(joined));
        if (a < 0 || b < 0 || ab < 0) {
            snprintf(msg, msg_size, "tokenizer.json: merge %zu (\"%s\" \"%s\") uses or makes a token not in the vocab", r,
                     left, right);
            return false;
        }
        pair_slot *slot = llm_tok_merge_slot(t, a, b);
        if (slot->key) continue; /* a repeated merge keeps its first rank */
        slot->key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
        slot->rank = (int32_t)r;
        slot->merged = ab;
    }
    t->byte_fallback = flag_of(model, "byte_fallback", false);
    t->ignore_merges = flag_of(model, "ignore_merges", false);
    const char *unk = str_of(model, "unk_token");
    t->unk_id = unk ? llm_tok_vocab_find(t, unk, strlen(unk)) : -1;
    return true;
}

llm_tokenizer *llm_tokenizer_parse(const char *text, size_t size, char *msg, size_t msg_size)
{
    llm_json root;
    char jmsg[256];
    if (!llm_json_parse(text, size, &root, jmsg, sizeof(jmsg))) {
        snprintf(msg, msg_size, "tokenizer.json: %s", jmsg);
        return NULL;
    }
    llm_tokenizer *t = calloc(1, sizeof(*t));
    bool ok = t != NULL;
    if (!ok) snprintf(msg, msg_size, "tokenizer.json: out of memory");
    const llm_json *norm = llm_json_get(&root, "normalizer");
    if (ok && root.type != LLM_JSON_OBJECT) ok = llm_tok_bad(msg, msg_size, "the top level is not an object");
    const char *norm_type = str_of(norm, "type");
    if (ok && norm_type && strcmp(norm_type, "NFC") == 0) {
        t->nfc = true; /* Qwen2: the identity on NFC text; other text is refused at encode */
    } else if (ok && norm && norm->type != LLM_JSON_NULL) {
        t->spm = is_spm_normalizer(norm);
        if (!t->spm) {
            snprintf(msg, msg_size, "tokenizer.json: normalizer \"%s\" is not supported (none, or Llama 2's "
                     "Prepend + Replace of spaces by U+2581, or NFC)", str_of(norm, "type") ? str_of(norm, "type") : "?");
            ok = false;
        }
        const llm_json *pre = llm_json_get(&root, "pre_tokenizer");
        if (ok && pre && pre->type != LLM_JSON_NULL)
            ok = llm_tok_bad(msg, msg_size, "a SentencePiece-style normalizer with a pre_tokenizer is not supported");
    }
    if (ok && !t->spm) {
        const llm_json *pre = llm_json_get(&root, "pre_tokenizer");
        ok = pre && pre->type == LLM_JSON_OBJECT ? read_pretokenizer(t, pre, msg, msg_size)
                                                 : llm_tok_bad(msg, msg_size, "no pre_tokenizer (byte-level BPE needs one)");
    }
    if (ok) {
        byte_level_alphabet(t->byte_char);
        for (int c = 0; c < 512; c++) t->char_byte[c] = -1;
        for (int b = 0; b < 256; b++) t->char_byte[t->byte_char[b]] = (int16_t)b;
    }
    if (ok) ok = read_model(t, &root, msg, msg_size);
    for (int b = 0; ok && b < 256; b++) {
        char s[8];
        int l = llm_utf8_encode(t->byte_char[b], s);
        t->byte_id[b] = llm_tok_vocab_find(t, s, (size_t)l);
    }
    for (int i = 0; ok && i < t->vocab_size; i++) {
        if (t->text[i] && !token_to_bytes(t, t->text[i], &t->bytes[i], &t->nbytes[i]))
            ok = llm_tok_bad(msg, msg_size, "out of memory");
    }
    for (int i = 0; ok && i < t->n_added; i++) { /* added tokens decode to their content as written */
        unsigned hex;
        const char *c = t->added[i].content;
        if (t->byte_fallback && t->added[i].len == 6 && sscanf(c, "<0x%2X>", &hex) == 1 && c[5] == '>')
            continue; /* a byte token added as special still decodes to its byte (HF's ByteFallback decoder) */
        free(t->bytes[t->added[i].id]);
        t->bytes[t->added[i].id] = strdup(t->added[i].content);
        t->nbytes[t->added[i].id] = t->added[i].len;
        if (!t->bytes[t->added[i].id]) ok = llm_tok_bad(msg, msg_size, "out of memory");
    }
    /* post_processor TemplateProcessing: the special token that leads "single" */
    t = ok ? t : (llm_tokenizer_free(t), NULL);
    if (t) {
        t->bos_id = -1;
        const llm_json *post = llm_json_get(&root, "post_processor");
        const llm_json *single = llm_json_get(post, "single");
        const char *ptype = str_of(post, "type");
        if (ptype && strcmp(ptype, "TemplateProcessing") == 0 && single && single->type == LLM_JSON_ARRAY &&
            single->length > 0) {
            const char *first = str_of(llm_json_get(&single->items[0], "SpecialToken"), "id");
            if (first) t->bos_id = llm_tokenizer_find(t, first);
        }
    }
    llm_json_free(&root);
    return t;
}

llm_tokenizer *llm_tokenizer_load(const char *path, char *msg, size_t msg_size)
{
    size_t size;
    char *text = llm_read_file(path, MAX_TOKENIZER_BYTES, &size, msg, msg_size);
    if (!text) return NULL;
    llm_tokenizer *t = llm_tokenizer_parse(text, size, msg, msg_size);
    free(text);
    return t;
}

int llm_tokenizer_vocab_size(const llm_tokenizer *t) { return t ? t->vocab_size : 0; }
int32_t llm_tokenizer_bos(const llm_tokenizer *t) { return t ? t->bos_id : -1; }

int32_t llm_tokenizer_find(const llm_tokenizer *t, const char *token)
{
    if (!t || !token) return -1;
    for (int i = 0; i < t->n_added; i++)
        if (strcmp(t->added[i].content, token) == 0) return t->added[i].id;
    return llm_tok_vocab_find(t, token, strlen(token));
}

const char *llm_tokenizer_token_bytes(const llm_tokenizer *t, int32_t id, size_t *len)
{
    if (!t || id < 0 || id >= t->vocab_size || !t->bytes[id]) return NULL;
    *len = t->nbytes[id];
    return t->bytes[id];
}
