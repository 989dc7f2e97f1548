/* Private layout of the tokenizer, shared by llm_tokenizer.c (loading,
 * validation) and llm_tokenizer_encode.c (encode, decode). */
#ifndef WGT_MODELS_LLM_TOKENIZER_INTERNAL_H
#define WGT_MODELS_LLM_TOKENIZER_INTERNAL_H

#include "llm_tokenizer.h"

/* Open-addressing hash tables: token text -> id, and merge pair -> rank. */
typedef struct str_slot {
    const char *key; /* NULL: empty */
    int32_t id;
} str_slot;

typedef struct pair_slot {
    uint64_t key; /* (left id << 32 | right id) + 1; 0: empty */
    int32_t rank, merged;
} pair_slot;

typedef struct added_token {
    char *content;
    size_t len;
    int32_t id;
} added_token;

struct llm_tokenizer {
    int vocab_size;
    char **text;      /* [vocab_size]: the token's text as stored (byte-level characters), NULL for holes */
    char **bytes;     /* [vocab_size]: the decoded bytes */
    size_t *nbytes;
    str_slot *vocab;  /* model vocabulary (not the added tokens) */
    size_t vocab_cap;
    pair_slot *merges;
    size_t merges_cap;
    added_token *added;
    int n_added;
    int32_t byte_id[256]; /* token of each byte's byte-level character, or -1 */
    uint32_t byte_char[256];
    int16_t char_byte[512]; /* the inverse: byte of a byte-level character, or -1 */
    int32_t unk_id, bos_id;
    bool byte_fallback, ignore_merges, add_prefix_space, regex_in_sequence;
    bool spm; /* SentencePiece-style BPE (Llama 2, TinyLlama): "▁" for spaces, no pre-tokenizer */
    /* when a segment gets a leading "▁": the Prepend normalizer always; a
     * Metaspace pre-tokenizer unless it starts with a space ("always"), only
     * for the text's first segment ("first"), or never */
    enum { SPM_PREPEND_ALWAYS, SPM_PREPEND_UNLESS_SPACE, SPM_PREPEND_FIRST, SPM_PREPEND_NEVER } spm_prepend;
    bool spm_metaspace;
    bool nfc; /* normalizer NFC (Qwen2): texts that pass the NFC quick check are encoded as they are */ /* the Metaspace form (its decoder's rules) rather than the normalizer form */
    llm_pretok_kind pretok;
};

/* Token id of text s[0..n) in the model vocabulary, or -1. */
int32_t llm_tok_vocab_find(const llm_tokenizer *t, const char *s, size_t n);
/* The merge slot of pair (a, b): key 0 when no merge applies. */
pair_slot *llm_tok_merge_slot(const llm_tokenizer *t, int32_t a, int32_t b);
/* Writes "tokenizer.json: what" into msg; returns false. */
bool llm_tok_bad(char *msg, size_t msg_size, const char *what);

#endif
