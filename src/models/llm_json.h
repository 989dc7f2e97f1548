/* A small JSON document tree for the files of a Hugging Face model folder
 * (config.json, tokenizer.json). The whole text is parsed strictly (RFC 8259:
 * no trailing commas, no comments, valid UTF-8, escapes checked, nesting at
 * most LLM_JSON_MAX_DEPTH levels) into nodes the loader then walks; a failure
 * gives a message with the byte offset. Strings are NUL-terminated UTF-8
 * (\u0000 is refused, so no string has an embedded NUL). */
#ifndef WGT_MODELS_LLM_JSON_H
#define WGT_MODELS_LLM_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define LLM_JSON_MAX_DEPTH 64

typedef enum llm_json_type {
    LLM_JSON_NULL,
    LLM_JSON_BOOL,
    LLM_JSON_NUMBER,
    LLM_JSON_STRING,
    LLM_JSON_ARRAY,
    LLM_JSON_OBJECT
} llm_json_type;

typedef struct llm_json llm_json;
struct llm_json {
    llm_json_type type;
    bool boolean;
    double number;
    char *string;     /* STRING */
    size_t length;    /* STRING: bytes; ARRAY / OBJECT: children */
    llm_json *items;  /* ARRAY / OBJECT children */
    char **keys;      /* OBJECT: keys[i] names items[i] */
};

/* Parses text[0..size) into *out (freed with llm_json_free). false with the
 * cause in msg for invalid JSON or no memory. */
bool llm_json_parse(const char *text, size_t size, llm_json *out, char *msg, size_t msg_size);
void llm_json_free(llm_json *value);
/* The member named key of an object, or NULL (also when obj is not an object). */
const llm_json *llm_json_get(const llm_json *obj, const char *key);
/* Reads a whole file (at most max_bytes) into a new buffer; NULL with msg. */
char *llm_read_file(const char *path, size_t max_bytes, size_t *size, char *msg, size_t msg_size);

#endif
