/* Encoding and decoding of llm_tokenizer.h: added tokens split first, then
 * each segment pre-tokenized (llm_pretokenize.c) and merged by BPE, or, for
 * SentencePiece-style models, merged whole. */
#include "llm_tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_unicode.h"

/* A growable id list. */
typedef struct id_list {
    int32_t *v;
    size_t n, cap;
} id_list;

static bool push_id(id_list *l, int32_t id)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        int32_t *nv = realloc(l->v, nc * sizeof(int32_t));
        if (!nv) return false;
        l->v = nv, l->cap = nc;
    }
    l->v[l->n++] = id;
    return true;
}

/* BPE over one pre-tokenized piece (raw bytes). */
static size_t merge_symbols(const llm_tokenizer *t, int32_t *sym, size_t m);

static bool bpe_piece(const llm_tokenizer *t, const unsigned char *s, size_t n, id_list *out, char *msg, size_t msg_size)
{
    if (t->ignore_merges) { /* the whole piece as one token when the vocabulary has it */
        char *chars = malloc(n * 4 + 1);
        if (!chars) return llm_tok_bad(msg, msg_size, "out of memory");
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += (size_t)llm_utf8_encode(t->byte_char[s[i]], chars + k);
        int32_t id = llm_tok_vocab_find(t, chars, k);
        free(chars);
        if (id >= 0) return push_id(out, id) || llm_tok_bad(msg, msg_size, "out of memory");
    }
    int32_t *sym = malloc((n + 1) * sizeof(int32_t));
    if (!sym) return llm_tok_bad(msg, msg_size, "out of memory");
    size_t m = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        int32_t id = t->byte_id[s[i]];
        if (id < 0 && t->byte_fallback) {
            char hex[8];
            snprintf(hex, sizeof(hex), "<0x%02X>", s[i]);
            id = llm_tok_vocab_find(t, hex, 6);
        }
        if (id < 0) id = t->unk_id;
        if (id < 0) {
            snprintf(msg, msg_size, "tokenizer: byte 0x%02X has no token (no byte fallback, no unk token)", s[i]);
            ok = false;
        }
        sym[m++] = id;
    }
    if (ok) m = merge_symbols(t, sym, m);
    for (size_t i = 0; i < m && ok; i++) ok = push_id(out, sym[i]) || llm_tok_bad(msg, msg_size, "out of memory");
    free(sym);
    return ok;
}

/* Merges the lowest-ranked pair, leftmost first, until none applies; returns
 * the new symbol count. */
static size_t merge_symbols(const llm_tokenizer *t, int32_t *sym, size_t m)
{
    while (m > 1) {
        int32_t best = -1, merged = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            const pair_slot *e = llm_tok_merge_slot(t, sym[i], sym[i + 1]);
            if (e->key && (best < 0 || e->rank < best)) best = e->rank, merged = e->merged, at = i;
        }
        if (best < 0) break;
        sym[at] = merged;
        memmove(sym + at + 1, sym + at + 2, (m - at - 2) * sizeof(int32_t));
        m--;
    }
    return m;
}

/* SentencePiece-style BPE over a whole segment: "▁" prepended, spaces as
 * "▁", one symbol per character, unknown characters as <0xXX> bytes. */
static bool spm_segment(const llm_tokenizer *t, const char *text, size_t len, bool first, id_list *out, char *msg,
                        size_t msg_size)
{
    int32_t *sym = malloc((len + 2) * 4 * sizeof(int32_t));
    if (!sym) return llm_tok_bad(msg, msg_size, "out of memory");
    size_t m = 0;
    bool ok = true;
    bool prepend = t->spm_prepend == SPM_PREPEND_ALWAYS ||
                   (t->spm_prepend == SPM_PREPEND_UNLESS_SPACE && text[0] != ' ') ||
                   (t->spm_prepend == SPM_PREPEND_FIRST && first && text[0] != ' ');
    for (size_t i = 0; ok && i <= len;) {
        uint32_t cp = 0x2581;
        int l = 0;
        if (prepend) {
            prepend = false; /* the "▁" before the text, then the text itself */
        } else {
            if (i == len) break;
            l = llm_utf8_decode((const unsigned char *)text + i, len - i, &cp);
            if (!l) {
                snprintf(msg, msg_size, "tokenizer: invalid UTF-8 at byte %zu of the text", i);
                ok = false;
                break;
            }
            if (cp == ' ') cp = 0x2581;
        }
        char s[8];
        const int sl = llm_utf8_encode(cp, s);
        int32_t id = llm_tok_vocab_find(t, s, (size_t)sl);
        if (id >= 0) sym[m++] = id;
        else if (t->byte_fallback) {
            for (int k = 0; ok && k < sl; k++) {
                char hex[8];
                snprintf(hex, sizeof(hex), "<0x%02X>", (unsigned char)s[k]);
                id = llm_tok_vocab_find(t, hex, 6);
                if (id < 0) id = t->unk_id;
                if (id < 0) ok = llm_tok_bad(msg, msg_size, "a byte-fallback token <0xXX> is missing from the vocab");
                sym[m++] = id;
            }
        } else if (t->unk_id >= 0) {
            sym[m++] = t->unk_id;
        } else {
            snprintf(msg, msg_size, "tokenizer: character U+%04X has no token (no byte fallback, no unk token)", cp);
            ok = false;
        }
        i += (size_t)l;
    }
    if (ok) m = merge_symbols(t, sym, m);
    for (size_t i = 0; i < m && ok; i++) ok = push_id(out, sym[i]) || llm_tok_bad(msg, msg_size, "out of memory");
    free(sym);
    return ok;
}

/* Pre-tokenizes and encodes a segment without added tokens. */
static bool encode_segment(const llm_tokenizer *t, const char *text, size_t len, bool first, id_list *out, char *msg,
                           size_t msg_size)
{
    if (t->spm) return spm_segment(t, text, len, first, out, msg, msg_size);
    const bool prefix = t->add_prefix_space && len > 0 && text[0] != ' ';
    const size_t total = len + (prefix ? 1 : 0);
    uint32_t *cp = malloc((total + 1) * sizeof(uint32_t));
    size_t *off = malloc((total + 2) * sizeof(size_t)); /* byte offset of each code point */
    char *buf = malloc(total + 1);
    bool ok = cp && off && buf;
    if (!ok) llm_tok_bad(msg, msg_size, "out of memory");
    size_t n = 0;
    if (ok) {
        if (prefix) buf[0] = ' ';
        memcpy(buf + (prefix ? 1 : 0), text, len);
        for (size_t i = 0; i < total && ok;) {
            int l = llm_utf8_decode((const unsigned char *)buf + i, total - i, &cp[n]);
            if (!l) {
                snprintf(msg, msg_size, "tokenizer: invalid UTF-8 at byte %zu of the text", i);
                ok = false;
                break;
            }
            off[n++] = i;
            i += (size_t)l;
        }
        off[n] = total;
    }
    for (size_t i = 0; ok && i < n;) {
        size_t m = llm_pretok_match(t->pretok, cp, n, i);
        if (m == 0) m = 1; /* cannot happen: every character matches some branch */
        ok = bpe_piece(t, (const unsigned char *)buf + off[i], off[i + m] - off[i], out, msg, msg_size);
        i += m;
    }
    free(cp), free(off), free(buf);
    return ok;
}

bool llm_tokenizer_encode(const llm_tokenizer *t, const char *text, size_t len, bool add_special, int32_t **ids,
                          size_t *n, char *msg, size_t msg_size)
{
    id_list out = {0};
    bool ok = true;
    if (msg_size) msg[0] = 0;
    size_t at;
    if (t->nfc && !llm_nfc_quick_check((const unsigned char *)text, len, &at)) {
        /* an NFC composition is not implemented: refusing beats encoding differently from the model's tokenizer */
        snprintf(msg, msg_size, "tokenizer: this tokenizer normalizes to NFC and the text may not be NFC (byte %zu: a "
                 "combining or decomposable character, or invalid UTF-8); NFC normalization is not implemented: "
                 "normalize the text first", at);
        return false;
    }
    if (add_special && t->bos_id >= 0) ok = push_id(&out, t->bos_id);
    size_t seg = 0;
    for (size_t i = 0; ok && i <= len;) {
        /* the longest added token at i (HF: leftmost-longest) */
        const added_token *hit = NULL;
        for (int k = 0; i < len && k < t->n_added; k++) {
            const added_token *a = &t->added[k];
            if (a->len <= len - i && memcmp(text + i, a->content, a->len) == 0 && (!hit || a->len > hit->len)) hit = a;
        }
        if (!hit && i < len) {
            i++;
            continue;
        }
        if (i > seg) ok = encode_segment(t, text + seg, i - seg, seg == 0, &out, msg, msg_size);
        if (!hit) break;
        if (ok) ok = push_id(&out, hit->id);
        i += hit->len;
        seg = i;
    }
    if (!ok) {
        if (!msg[0]) llm_tok_bad(msg, msg_size, "out of memory");
        free(out.v);
        return false;
    }
    *ids = out.v;
    *n = out.n;
    return true;
}

static bool is_added(const llm_tokenizer *t, int32_t id)
{
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return true;
    return false;
}

bool llm_tokenizer_decode(const llm_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len)
{
    size_t total = 0, l;
    for (size_t i = 0; i < n; i++) {
        if (!llm_tokenizer_token_bytes(t, ids[i], &l)) return false;
        total += l;
    }
    char *out = malloc(total + 1);
    if (!out) return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *b = llm_tokenizer_token_bytes(t, ids[i], &l);
        /* HF's Metaspace decoder drops every "▁" of the first token (not only
         * a leading one): its bytes are its spaces removed */
        for (size_t j = 0; j < l; j++)
            if (!(i == 0 && t->spm_metaspace && t->spm_prepend != SPM_PREPEND_NEVER && b[j] == ' ' &&
                  !is_added(t, ids[i])))
                out[k++] = b[j];
    }
    out[k] = 0;
    /* the Strip decoder of the normalizer form: one leading space */
    if (t->spm && !t->spm_metaspace && k > 0 && out[0] == ' ') memmove(out, out + 1, k--);
    *text = out;
    *len = k;
    return true;
}
