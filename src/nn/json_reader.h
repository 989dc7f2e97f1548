/*
 * A strict reader for JSON text (RFC 8259), used to parse the safetensors
 * header (src/nn/safetensors_header.c). It reads in place from a buffer that
 * is not NUL-terminated; the first failure is kept in the reader (status and
 * a message with the byte position) and every later call fails too.
 *
 * Strings: raw control characters, unknown escapes, lone surrogates in \u
 * escapes and \u0000 are refused; escapes are decoded to UTF-8 (the caller
 * checks the whole text is UTF-8 first, json_utf8_valid). Numbers follow the
 * JSON grammar (no leading zeros); json_read_number can require a
 * non-negative integer below 2^63. Values nest at most JSON_MAX_DEPTH deep in
 * json_skip_value, and objects refuse duplicate keys.
 */
#ifndef WGT_JSON_READER_H
#define WGT_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wgtensor.h"

/* The safetensors header needs 3 levels (top, tensor, shape); unknown members
 * may nest a little, not without limit (no recursion driven by input depth). */
#define JSON_MAX_DEPTH 16

typedef struct json_reader {
    const char *s;
    size_t len, pos;
    char *err;           /* message buffer of the caller */
    size_t err_size;
    wgt_status status;   /* first failure: WGT_ERR_BAD_FORMAT or WGT_ERR_OUT_OF_MEMORY */
} json_reader;

/* Records the first failure (fmt has one %s for arg) and returns false. */
bool json_fail(json_reader *r, wgt_status status, const char *fmt, const char *arg);
void json_skip_space(json_reader *r);
/* Skips space, then consumes c or fails. */
bool json_expect(json_reader *r, char c);
/* The next character after space (0 at the end), not consumed. */
char json_peek(json_reader *r);
/* A string into a new NUL-terminated buffer (*out, the caller frees), or only
 * checked when out is NULL. */
bool json_read_string(json_reader *r, char **out);
/* A number; with out, a non-negative integer below 2^63 is required (what
 * names the field in messages). */
bool json_read_number(json_reader *r, uint64_t *out, const char *what);
bool json_read_literal(json_reader *r, const char *word); /* "true", "false", "null" */
/* Any value, checked and dropped; depth counts the levels above it. */
bool json_skip_value(json_reader *r, int depth);

/* The keys of one object, kept to refuse duplicates. */
typedef struct json_key_list {
    char **keys;
    int n, cap;
} json_key_list;
bool json_key_list_add(json_reader *r, json_key_list *l, char *key); /* takes key (freed on failure) */
void json_key_list_free(json_key_list *l);
/* Fails naming the first duplicate of keys[n] (where says which object). */
bool json_keys_unique(json_reader *r, char **keys, int n, const char *where);

/* Whether bytes[0..n) is valid UTF-8 (no overlong forms, no surrogates, at
 * most U+10FFFF). */
int json_utf8_valid(const unsigned char *bytes, size_t n);

#endif /* WGT_JSON_READER_H */
