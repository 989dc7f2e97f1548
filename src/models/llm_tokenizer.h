/* Byte-level BPE tokenizer read from a Hugging Face tokenizer.json (the
 * tokenizers library's format): the GPT-2 / Llama 3 / SmolLM family.
 *
 *   text -> split on added (special) tokens, longest first
 *        -> pre-tokenizer regex: Llama 3's (digits in runs of 1..3), Qwen2's
 *           (single digits) or GPT-2's; matched by hand (llm_pretokenize.c)
 *        -> each piece's bytes as GPT-2's byte-level characters
 *        -> BPE merges, lowest rank first, leftmost on ties (ignore_merges:
 *           a piece that is itself in the vocabulary is one token)
 *   A byte whose character is not in the vocabulary becomes <0xXX> when the
 *   model has byte_fallback, else the unk token, else an error.
 *
 * SentencePiece-style BPE as Llama 2 / TinyLlama's tokenizer.json has it
 * (normalizer Prepend "▁" + Replace " " -> "▁", or the newer Metaspace
 * pre-tokenizer with split false; no regex; byte fallback) is encoded over
 * the whole segment, one symbol per character, and decoded with "▁" -> " "
 * and the leading space stripped as each form's decoder does.
 *
 * Qwen2's NFC normalizer is honoured by the NFC quick check: a text that
 * passes it is already NFC and is encoded as it is; one that may not be NFC
 * (decomposed accents, compatibility characters) is refused at encode with a
 * message (no NFC composition here). Anything else (another normalizer, an
 * unknown regex) is refused at load with a message that names it: no silent
 * approximation. decode() gives the raw bytes (a token may end inside a UTF-8
 * sequence; streaming callers print bytes as they come). */
#ifndef WGT_MODELS_LLM_TOKENIZER_H
#define WGT_MODELS_LLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct llm_tokenizer llm_tokenizer;

/* NULL with the cause in msg (file, JSON, or an unsupported / malformed part). */
llm_tokenizer *llm_tokenizer_load(const char *path, char *msg, size_t msg_size);
llm_tokenizer *llm_tokenizer_parse(const char *json, size_t size, char *msg, size_t msg_size);
void llm_tokenizer_free(llm_tokenizer *t);

/* One past the largest id (model vocabulary and added tokens). */
int llm_tokenizer_vocab_size(const llm_tokenizer *t);
/* The id of a token given by its text (e.g. "<|end_of_text|>"), or -1. */
int32_t llm_tokenizer_find(const llm_tokenizer *t, const char *token);
/* The id the post-processor puts first (Llama 3's <|begin_of_text|>), or -1. */
int32_t llm_tokenizer_bos(const llm_tokenizer *t);

/* text[0..len) -> *ids (malloc'd, *n of them; the caller frees). With
 * add_special, the post-processor's leading token (if any) comes first.
 * false with msg for invalid UTF-8, an unencodable byte or no memory. */
bool llm_tokenizer_encode(const llm_tokenizer *t, const char *text, size_t len, bool add_special, int32_t **ids,
                          size_t *n, char *msg, size_t msg_size);
/* The bytes of token id: *len of them, valid until the tokenizer is freed;
 * NULL for an id outside the vocabulary. */
const char *llm_tokenizer_token_bytes(const llm_tokenizer *t, int32_t id, size_t *len);
/* ids -> *text (malloc'd, NUL-terminated, *len bytes). false for an unknown id. */
bool llm_tokenizer_decode(const llm_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);

/* Pre-tokenizer split (exposed for tests): the length in code points of the
 * piece that starts at cp[i]. */
typedef enum llm_pretok_kind { LLM_PRETOK_LLAMA3, LLM_PRETOK_QWEN2, LLM_PRETOK_GPT2 } llm_pretok_kind;
size_t llm_pretok_match(llm_pretok_kind kind, const uint32_t *cp, size_t n, size_t i);

#endif
