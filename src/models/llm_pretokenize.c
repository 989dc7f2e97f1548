/* The pre-tokenizer regexes of byte-level BPE models, matched by hand with the
 * leftmost-first semantics of the regex engine `tokenizers` uses (each
 * alternative tried in order at the current position, greedy quantifiers
 * backing off only as far as the rest of the alternative needs):
 *
 * Llama 3 (Qwen2: \p{N} instead of \p{N}{1,3}):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * GPT-2:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#include "llm_tokenizer.h"
#include "llm_unicode.h"

static bool is_other(uint32_t c) { return !llm_is_space(c) && !llm_is_letter(c) && !llm_is_number(c); }
static bool is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

/* 's 't 're 've 'm 'll 'd at cp[i] (folding case when fold): match length or 0. */
static size_t contraction(const uint32_t *cp, size_t n, size_t i, bool fold)
{
    if (cp[i] != '\'' || i + 1 >= n) return 0;
    uint32_t a = cp[i + 1], b = i + 2 < n ? cp[i + 2] : 0;
    if (fold) {
        if (a < 128) a |= 32 * (a >= 'A' && a <= 'Z');
        if (b < 128) b |= 32 * (b >= 'A' && b <= 'Z');
    }
    if (a == 's' || a == 't') return 2;
    if ((a == 'r' || a == 'v') && b == 'e') return 3;
    if (a == 'm') return 2;
    if (a == 'l' && b == 'l') return 3;
    if (a == 'd') return 2;
    return 0;
}

static size_t run(const uint32_t *cp, size_t n, size_t i, bool (*pred)(uint32_t))
{
    size_t j = i;
    while (j < n && pred(cp[j])) j++;
    return j - i;
}

/* \s+(?!\S) then \s+: a whitespace run, leaving its last character to the
 * next piece when a non-space follows it (so " word" keeps its space). */
static size_t space_run(const uint32_t *cp, size_t n, size_t i)
{
    size_t len = run(cp, n, i, llm_is_space);
    if (i + len < n && len > 1) return len - 1;
    return len;
}

size_t llm_pretok_match(llm_pretok_kind kind, const uint32_t *cp, size_t n, size_t i)
{
    if (i >= n) return 0;
    size_t m;
    if (kind == LLM_PRETOK_GPT2) {
        if ((m = contraction(cp, n, i, false))) return m;
        const size_t sp = cp[i] == ' ' && i + 1 < n ? 1 : 0;
        if ((m = run(cp, n, i + sp, llm_is_letter))) return sp + m;
        if ((m = run(cp, n, i + sp, llm_is_number))) return sp + m;
        if ((m = run(cp, n, i + sp, is_other))) return sp + m;
        return space_run(cp, n, i);
    }
    if ((m = contraction(cp, n, i, true))) return m;
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!is_crlf(cp[i]) && !llm_is_letter(cp[i]) && !llm_is_number(cp[i]) && i + 1 < n && llm_is_letter(cp[i + 1]))
        return 1 + run(cp, n, i + 1, llm_is_letter);
    if ((m = run(cp, n, i, llm_is_letter))) return m;
    /* \p{N}{1,3} (Qwen2: \p{N}) */
    if ((m = run(cp, n, i, llm_is_number))) return m < (kind == LLM_PRETOK_QWEN2 ? 1u : 3u) ? m : (kind == LLM_PRETOK_QWEN2 ? 1 : 3);
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    const size_t sp = cp[i] == ' ' && i + 1 < n && is_other(cp[i + 1]) ? 1 : 0;
    if ((m = run(cp, n, i + sp, is_other))) return sp + m + run(cp, n, i + sp + m, is_crlf);
    /* \s*[\r\n]+: up to the last \r or \n of the whitespace run */
    const size_t ws = run(cp, n, i, llm_is_space);
    for (size_t k = ws; k > 0; k--)
        if (is_crlf(cp[i + k - 1])) return k;
    return space_run(cp, n, i);
}
