/* Unicode classes for the byte-level BPE pre-tokenizer (llm_tokenizer.c):
 * UTF-8 decoding and the categories \p{L}, \p{N} and \s of the Llama-3 regex.
 * The range tables are generated (tests/llm/make_unicode_tables.py). */
#ifndef WGT_MODELS_LLM_UNICODE_H
#define WGT_MODELS_LLM_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct llm_cp_range {
    uint32_t lo, hi;
} llm_cp_range;

extern const llm_cp_range llm_letter_ranges[];
extern const int llm_letter_ranges_count;
extern const llm_cp_range llm_number_ranges[];
extern const int llm_number_ranges_count;
extern const llm_cp_range llm_space_ranges[];
extern const int llm_space_ranges_count;
extern const llm_cp_range llm_nfc_unsafe_ranges[];
extern const int llm_nfc_unsafe_ranges_count;

typedef struct llm_cp_value {
    uint32_t lo, hi;
    int value;
} llm_cp_value;
extern const llm_cp_value llm_ccc_ranges[];
extern const int llm_ccc_ranges_count;

/* Whether text[0..n) (valid UTF-8) is certainly in NFC by the quick check:
 * no code point with NFC_QC No or Maybe, combining marks in canonical order.
 * false: it may need normalizing (*bad_offset: the byte that decided). */
bool llm_nfc_quick_check(const unsigned char *text, size_t n, size_t *bad_offset);

bool llm_is_letter(uint32_t cp);
bool llm_is_number(uint32_t cp);
bool llm_is_space(uint32_t cp);

/* Decodes one UTF-8 sequence at s[0..n): its length (1..4) and *cp, or 0 for
 * an invalid sequence (overlong, surrogate, above U+10FFFF, truncated). */
int llm_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Encodes cp (<= U+10FFFF) into out[4]; returns the length. */
int llm_utf8_encode(uint32_t cp, char *out);

#endif
