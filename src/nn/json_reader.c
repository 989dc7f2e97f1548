/*
 * A strict reader for JSON text (RFC 8259), the pieces the safetensors header
 * parser (safetensors_header.c) is built from; see json_reader.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/json_reader.h"

bool json_fail(json_reader *r, wgt_status status, const char *fmt, const char *arg)
{
    if (r->status == WGT_OK) {
        r->status = status;
        char what[400];
        snprintf(what, sizeof(what), fmt, arg ? arg : "");
        snprintf(r->err, r->err_size, "%s (header byte %zu)", what, r->pos);
    }
    return false;
}

void json_skip_space(json_reader *r)
{
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->pos++;
    }
}

bool json_expect(json_reader *r, char c)
{
    json_skip_space(r);
    if (r->pos >= r->len || r->s[r->pos] != c) {
        char want[2] = {c, 0};
        return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: expected '%s'", want);
    }
    r->pos++;
    return true;
}

/* Peeks the next non-space character (0 at the end). */
char json_peek(json_reader *r)
{
    json_skip_space(r);
    return r->pos < r->len ? r->s[r->pos] : 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(json_reader *r, uint32_t *out)
{
    if (r->len - r->pos < 4) return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: truncated \\u escape%s", NULL);
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(r->s[r->pos + (size_t)i]);
        if (d < 0) return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad \\u escape%s", NULL);
        v = v * 16 + (uint32_t)d;
    }
    r->pos += 4;
    *out = v;
    return true;
}

/* A string into a new NUL-terminated buffer (*out, caller frees), or, when out
 * is NULL, only checked. The header was checked to be UTF-8 as a whole, so raw
 * bytes are copied through. */
bool json_read_string(json_reader *r, char **out)
{
    if (out) *out = NULL;
    if (!json_expect(r, '"')) return false;
    size_t start = r->pos, cap = 16, n = 0;
    while (r->pos < r->len && r->s[r->pos] != '"') r->pos += r->s[r->pos] == '\\' ? 2 : 1;
    if (r->pos >= r->len) return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unterminated string%s", NULL);
    cap = r->pos - start + 1; /* decoding never grows a string */
    r->pos = start;
    char *buf = out ? malloc(cap) : NULL;
    if (out && !buf) return json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a string%s", NULL);
    while (r->s[r->pos] != '"') {
        unsigned char c = (unsigned char)r->s[r->pos++];
        uint32_t cp;
        if (c < 0x20) {
            free(buf);
            return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: control character in a string%s", NULL);
        }
        if (c != '\\') {
            if (buf) buf[n++] = (char)c;
            continue;
        }
        char e = r->s[r->pos++];
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            if (!read_hex4(r, &cp)) {
                free(buf);
                return false;
            }
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                free(buf);
                return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: lone low surrogate in a \\u escape%s", NULL);
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t low;
                if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u') {
                    free(buf);
                    return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: high surrogate without a low one%s", NULL);
                }
                r->pos += 2;
                if (!read_hex4(r, &low)) {
                    free(buf);
                    return false;
                }
                if (low < 0xdc00 || low > 0xdfff) {
                    free(buf);
                    return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: high surrogate without a low one%s", NULL);
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            if (cp == 0) {
                free(buf);
                return json_fail(r, WGT_ERR_BAD_FORMAT, "a string contains \\u0000%s", NULL);
            }
            break;
        }
        default:
            free(buf);
            return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unknown escape in a string%s", NULL);
        }
        if (!buf) continue;
        /* UTF-8 of cp; at most 6 escaped bytes became at most 4. */
        if (cp < 0x80) {
            buf[n++] = (char)cp;
        } else if (cp < 0x800) {
            buf[n++] = (char)(0xc0 | (cp >> 6));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            buf[n++] = (char)(0xe0 | (cp >> 12));
            buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            buf[n++] = (char)(0xf0 | (cp >> 18));
            buf[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    r->pos++; /* closing quote */
    if (buf) {
        buf[n] = 0;
        if (memchr(buf, 0, n)) { /* raw NUL cannot pass the control check; kept as a guard */
            free(buf);
            return json_fail(r, WGT_ERR_BAD_FORMAT, "a string contains NUL%s", NULL);
        }
        *out = buf;
    }
    return true;
}

/* A JSON number. With out: a non-negative integer < 2^63 is required. */
bool json_read_number(json_reader *r, uint64_t *out, const char *what)
{
    json_skip_space(r);
    size_t start = r->pos;
    bool negative = false, fraction = false;
    if (r->pos < r->len && r->s[r->pos] == '-') negative = true, r->pos++;
    if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
        return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad number in %s", what);
    if (r->s[r->pos] == '0' && r->pos + 1 < r->len && r->s[r->pos + 1] >= '0' && r->s[r->pos + 1] <= '9')
        return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: leading zero in %s", what);
    uint64_t v = 0;
    bool overflow = false;
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
        uint64_t d = (uint64_t)(r->s[r->pos++] - '0');
        if (v > (UINT64_C(0x7fffffffffffffff) - d) / 10) overflow = true;
        else v = v * 10 + d;
    }
    if (r->pos < r->len && r->s[r->pos] == '.') {
        fraction = true;
        r->pos++;
        if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
            return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad fraction in %s", what);
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    }
    if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
        fraction = true;
        r->pos++;
        if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-')) r->pos++;
        if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
            return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad exponent in %s", what);
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    }
    if (!out) return true;
    r->pos = start;
    if (negative) return json_fail(r, WGT_ERR_BAD_FORMAT, "negative value in %s", what);
    if (fraction) return json_fail(r, WGT_ERR_BAD_FORMAT, "non-integer value in %s", what);
    if (overflow) return json_fail(r, WGT_ERR_BAD_FORMAT, "value over 2^63 - 1 in %s", what);
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    *out = v;
    return true;
}

bool json_read_literal(json_reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0)
        return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unexpected character%s", NULL);
    r->pos += n;
    return true;
}

bool json_key_list_add(json_reader *r, json_key_list *l, char *key)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        char **grown = realloc(l->keys, (size_t)cap * sizeof(*grown));
        if (!grown) {
            free(key);
            return json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for object keys%s", NULL);
        }
        l->keys = grown;
        l->cap = cap;
    }
    l->keys[l->n++] = key;
    return true;
}

void json_key_list_free(json_key_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->keys[i]);
    free(l->keys);
}

/* Any value, checked and dropped (unknown members). */
bool json_skip_value(json_reader *r, int depth)
{
    if (depth > JSON_MAX_DEPTH) return json_fail(r, WGT_ERR_BAD_FORMAT, "JSON nested deeper than the limit%s", NULL);
    char c = json_peek(r);
    if (c == '"') return json_read_string(r, NULL);
    if (c == 't') return json_read_literal(r, "true");
    if (c == 'f') return json_read_literal(r, "false");
    if (c == 'n') return json_read_literal(r, "null");
    if (c == '-' || (c >= '0' && c <= '9')) return json_read_number(r, NULL, "a value");
    if (c == '[') {
        r->pos++;
        if (json_peek(r) == ']') return ++r->pos, true;
        do {
            if (!json_skip_value(r, depth + 1)) return false;
        } while (json_peek(r) == ',' && ++r->pos);
        return json_expect(r, ']');
    }
    if (c == '{') {
        r->pos++;
        if (json_peek(r) == '}') return ++r->pos, true;
        json_key_list keys = {0};
        bool ok = true;
        do {
            char *key;
            if (!json_read_string(r, &key) || !json_key_list_add(r, &keys, key)) { ok = false; break; }
            if (!json_expect(r, ':') || !json_skip_value(r, depth + 1)) { ok = false; break; }
        } while (json_peek(r) == ',' && ++r->pos);
        ok = ok && json_keys_unique(r, keys.keys, keys.n, "a nested object") && json_expect(r, '}');
        json_key_list_free(&keys);
        return ok;
    }
    return json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unexpected character%s", NULL);
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

bool json_keys_unique(json_reader *r, char **keys, int n, const char *where)
{
    if (n < 2) return true;
    char **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted) return json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory%s", NULL);
    memcpy(sorted, keys, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_strings);
    bool ok = true;
    for (int i = 1; i < n && ok; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            char what[150];
            snprintf(what, sizeof(what), "duplicate key \"%.60s\" in %s", sorted[i], where);
            ok = json_fail(r, WGT_ERR_BAD_FORMAT, "%s", what);
        }
    free(sorted);
    return ok;
}

int json_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}
