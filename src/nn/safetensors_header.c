/*
 * The safetensors header: a strict parser for its JSON and the validation the
 * specification asks for before a single data byte is trusted.
 *
 *   { "__metadata__": { "key": "value", ... },                  (optional)
 *     "<name>": { "dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end] },
 *     ... }
 *
 * The parser is our own (RFC 8259 for this subset): the whole header must be
 * valid UTF-8; strings have their escapes decoded (\uXXXX with surrogate
 * pairs, a lone surrogate refused); numbers in shape and data_offsets must be
 * non-negative integers without fraction or exponent that fit in 63 bits;
 * other members of a tensor object are parsed and ignored (as the reference
 * implementation does), nested at most ST_JSON_MAX_DEPTH deep; duplicate keys
 * anywhere are refused; only whitespace may follow the object.
 *
 * Validation: known dtype, shape product x dtype size == end - begin (no
 * overflow), ranges inside the data, and sorted by offset they are contiguous
 * from 0, do not overlap and end exactly at the end of the data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/safetensors_internal.h"

typedef struct json_reader {
    const char *s;
    size_t len, pos;
    char *err;
    size_t err_size;
    wgt_status status; /* first failure */
} json_reader;

static bool fail(json_reader *r, wgt_status status, const char *fmt, const char *arg)
{
    if (r->status == WGT_OK) {
        r->status = status;
        char what[400];
        snprintf(what, sizeof(what), fmt, arg ? arg : "");
        snprintf(r->err, r->err_size, "%s (header byte %zu)", what, r->pos);
    }
    return false;
}

static void skip_space(json_reader *r)
{
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->pos++;
    }
}

static bool expect(json_reader *r, char c)
{
    skip_space(r);
    if (r->pos >= r->len || r->s[r->pos] != c) {
        char want[2] = {c, 0};
        return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: expected '%s'", want);
    }
    r->pos++;
    return true;
}

/* Peeks the next non-space character (0 at the end). */
static char peek(json_reader *r)
{
    skip_space(r);
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
    if (r->len - r->pos < 4) return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: truncated \\u escape%s", NULL);
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(r->s[r->pos + (size_t)i]);
        if (d < 0) return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad \\u escape%s", NULL);
        v = v * 16 + (uint32_t)d;
    }
    r->pos += 4;
    *out = v;
    return true;
}

/* A string into a new NUL-terminated buffer (*out, caller frees), or, when out
 * is NULL, only checked. The header was checked to be UTF-8 as a whole, so raw
 * bytes are copied through. */
static bool read_string(json_reader *r, char **out)
{
    if (out) *out = NULL;
    if (!expect(r, '"')) return false;
    size_t start = r->pos, cap = 16, n = 0;
    while (r->pos < r->len && r->s[r->pos] != '"') r->pos += r->s[r->pos] == '\\' ? 2 : 1;
    if (r->pos >= r->len) return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unterminated string%s", NULL);
    cap = r->pos - start + 1; /* decoding never grows a string */
    r->pos = start;
    char *buf = out ? malloc(cap) : NULL;
    if (out && !buf) return fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a string%s", NULL);
    while (r->s[r->pos] != '"') {
        unsigned char c = (unsigned char)r->s[r->pos++];
        uint32_t cp;
        if (c < 0x20) {
            free(buf);
            return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: control character in a string%s", NULL);
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
                return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: lone low surrogate in a \\u escape%s", NULL);
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t low;
                if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u') {
                    free(buf);
                    return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: high surrogate without a low one%s", NULL);
                }
                r->pos += 2;
                if (!read_hex4(r, &low)) {
                    free(buf);
                    return false;
                }
                if (low < 0xdc00 || low > 0xdfff) {
                    free(buf);
                    return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: high surrogate without a low one%s", NULL);
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            if (cp == 0) {
                free(buf);
                return fail(r, WGT_ERR_BAD_FORMAT, "a string contains \\u0000%s", NULL);
            }
            break;
        }
        default:
            free(buf);
            return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unknown escape in a string%s", NULL);
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
            return fail(r, WGT_ERR_BAD_FORMAT, "a string contains NUL%s", NULL);
        }
        *out = buf;
    }
    return true;
}

/* A JSON number. With out: a non-negative integer < 2^63 is required. */
static bool read_number(json_reader *r, uint64_t *out, const char *what)
{
    skip_space(r);
    size_t start = r->pos;
    bool negative = false, fraction = false;
    if (r->pos < r->len && r->s[r->pos] == '-') negative = true, r->pos++;
    if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
        return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad number in %s", what);
    if (r->s[r->pos] == '0' && r->pos + 1 < r->len && r->s[r->pos + 1] >= '0' && r->s[r->pos + 1] <= '9')
        return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: leading zero in %s", what);
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
            return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad fraction in %s", what);
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    }
    if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
        fraction = true;
        r->pos++;
        if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-')) r->pos++;
        if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
            return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bad exponent in %s", what);
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    }
    if (!out) return true;
    r->pos = start;
    if (negative) return fail(r, WGT_ERR_BAD_FORMAT, "negative value in %s", what);
    if (fraction) return fail(r, WGT_ERR_BAD_FORMAT, "non-integer value in %s", what);
    if (overflow) return fail(r, WGT_ERR_BAD_FORMAT, "value over 2^63 - 1 in %s", what);
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
    *out = v;
    return true;
}

static bool read_literal(json_reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0)
        return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unexpected character%s", NULL);
    r->pos += n;
    return true;
}

static bool object_keys_unique(json_reader *r, char **keys, int n, const char *where);

/* The keys of one object, kept to refuse duplicates. */
typedef struct key_list {
    char **keys;
    int n, cap;
} key_list;

static bool key_list_add(json_reader *r, key_list *l, char *key)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        char **grown = realloc(l->keys, (size_t)cap * sizeof(*grown));
        if (!grown) {
            free(key);
            return fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for object keys%s", NULL);
        }
        l->keys = grown;
        l->cap = cap;
    }
    l->keys[l->n++] = key;
    return true;
}

static void key_list_free(key_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->keys[i]);
    free(l->keys);
}

/* Any value, checked and dropped (unknown members). */
static bool skip_value(json_reader *r, int depth)
{
    if (depth > ST_JSON_MAX_DEPTH) return fail(r, WGT_ERR_BAD_FORMAT, "JSON nested deeper than the limit%s", NULL);
    char c = peek(r);
    if (c == '"') return read_string(r, NULL);
    if (c == 't') return read_literal(r, "true");
    if (c == 'f') return read_literal(r, "false");
    if (c == 'n') return read_literal(r, "null");
    if (c == '-' || (c >= '0' && c <= '9')) return read_number(r, NULL, "a value");
    if (c == '[') {
        r->pos++;
        if (peek(r) == ']') return ++r->pos, true;
        do {
            if (!skip_value(r, depth + 1)) return false;
        } while (peek(r) == ',' && ++r->pos);
        return expect(r, ']');
    }
    if (c == '{') {
        r->pos++;
        if (peek(r) == '}') return ++r->pos, true;
        key_list keys = {0};
        bool ok = true;
        do {
            char *key;
            if (!read_string(r, &key) || !key_list_add(r, &keys, key)) { ok = false; break; }
            if (!expect(r, ':') || !skip_value(r, depth + 1)) { ok = false; break; }
        } while (peek(r) == ',' && ++r->pos);
        ok = ok && object_keys_unique(r, keys.keys, keys.n, "a nested object") && expect(r, '}');
        key_list_free(&keys);
        return ok;
    }
    return fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: unexpected character%s", NULL);
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool object_keys_unique(json_reader *r, char **keys, int n, const char *where)
{
    if (n < 2) return true;
    char **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted) return fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory%s", NULL);
    memcpy(sorted, keys, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_strings);
    bool ok = true;
    for (int i = 1; i < n && ok; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            char what[150];
            snprintf(what, sizeof(what), "duplicate key \"%.60s\" in %s", sorted[i], where);
            ok = fail(r, WGT_ERR_BAD_FORMAT, "%s", what);
        }
    free(sorted);
    return ok;
}

/* ------------------------------------------------------------------ dtypes */

static const struct { const char *name; size_t size; } st_dtypes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
    {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

size_t st_dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++)
        if (strcmp(dtype, st_dtypes[i].name) == 0) return st_dtypes[i].size;
    return 0;
}

int st_utf8_valid(const unsigned char *s, size_t n)
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

/* ------------------------------------------------------------------ header */

static bool add_entry(json_reader *r, st_header *h, st_entry *e)
{
    if (h->n_entries == h->cap_entries) {
        int cap = h->cap_entries ? h->cap_entries * 2 : 16;
        st_entry *grown = realloc(h->entries, (size_t)cap * sizeof(*grown));
        if (!grown) return fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for tensor entries%s", NULL);
        h->entries = grown;
        h->cap_entries = cap;
    }
    h->entries[h->n_entries++] = *e;
    return true;
}

/* "__metadata__": an object of string values (null: none). */
static bool read_metadata(json_reader *r, st_header *h)
{
    if (peek(r) == 'n') return read_literal(r, "null");
    if (!expect(r, '{')) return false;
    if (peek(r) == '}') return ++r->pos, true;
    do {
        char *key = NULL, *value = NULL;
        if (!read_string(r, &key)) return false;
        if (!expect(r, ':') || peek(r) != '"') {
            free(key);
            return fail(r, WGT_ERR_BAD_FORMAT, "__metadata__ values must be strings%s", NULL);
        }
        if (!read_string(r, &value)) {
            free(key);
            return false;
        }
        if (h->n_meta == h->cap_meta) {
            int cap = h->cap_meta ? h->cap_meta * 2 : 8;
            char **k = realloc(h->meta_keys, (size_t)cap * sizeof(*k));
            if (k) h->meta_keys = k;
            char **v = k ? realloc(h->meta_values, (size_t)cap * sizeof(*v)) : NULL;
            if (v) h->meta_values = v;
            if (!k || !v) {
                free(key), free(value);
                return fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for metadata%s", NULL);
            }
            h->cap_meta = cap;
        }
        h->meta_keys[h->n_meta] = key;
        h->meta_values[h->n_meta++] = value;
    } while (peek(r) == ',' && ++r->pos);
    return expect(r, '}') && object_keys_unique(r, h->meta_keys, h->n_meta, "__metadata__");
}

/* [d0, d1, ...] into e (every dim counted; the first WGT_MAX_DIMS kept). */
static bool read_shape(json_reader *r, st_entry *e)
{
    if (!expect(r, '[')) return false;
    e->ndim = 0;
    e->numel = 1;
    bool overflow = false, has_zero = false;
    if (peek(r) == ']') return ++r->pos, true;
    do {
        uint64_t d;
        if (!read_number(r, &d, "shape")) return false;
        if (e->ndim < WGT_MAX_DIMS) e->shape[e->ndim] = (int64_t)d;
        if (e->ndim == 1000000) return fail(r, WGT_ERR_BAD_FORMAT, "shape has over a million dims%s", NULL);
        e->ndim++;
        if (d == 0) has_zero = true;
        if (d != 0 && e->numel > UINT64_C(0x7fffffffffffffff) / d) overflow = true;
        else e->numel *= d;
    } while (peek(r) == ',' && ++r->pos);
    if (!expect(r, ']')) return false;
    /* A zero dim makes the tensor empty whatever the others say. */
    if (has_zero) e->numel = 0, overflow = false;
    if (overflow) return fail(r, WGT_ERR_BAD_FORMAT, "shape of \"%s\" overflows 64-bit element counts", e->name);
    return true;
}

static bool read_offsets(json_reader *r, st_entry *e)
{
    if (!expect(r, '[') || !read_number(r, &e->begin, "data_offsets") || !expect(r, ',') ||
        !read_number(r, &e->end, "data_offsets"))
        return false;
    if (peek(r) != ']')
        return fail(r, WGT_ERR_BAD_FORMAT, "data_offsets of \"%s\" must have exactly two entries", e->name);
    r->pos++;
    return true;
}

/* { "dtype": ..., "shape": [...], "data_offsets": [b, e], other members ignored } */
static bool read_tensor_info(json_reader *r, st_entry *e)
{
    bool have_dtype = false, have_shape = false, have_offsets = false;
    if (!expect(r, '{')) return false;
    if (peek(r) == '}') return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has no dtype, shape or data_offsets", e->name);
    key_list keys = {0};
    bool ok = true;
    do {
        char *key;
        if (!read_string(r, &key) || !key_list_add(r, &keys, key)) { ok = false; break; }
        if (!expect(r, ':')) { ok = false; break; }
        const char *k = key;
        if (strcmp(k, "dtype") == 0) {
            char *dtype;
            if (peek(r) != '"') { ok = fail(r, WGT_ERR_BAD_FORMAT, "dtype of \"%s\" is not a string", e->name); break; }
            if (!read_string(r, &dtype)) { ok = false; break; }
            size_t size = st_dtype_size(dtype);
            if (size) snprintf(e->dtype, sizeof(e->dtype), "%s", dtype);
            free(dtype);
            if (!size) { ok = fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has an unknown dtype", e->name); break; }
            e->dtype_size = size;
            have_dtype = true;
        } else if (strcmp(k, "shape") == 0) {
            if (!read_shape(r, e)) { ok = false; break; }
            have_shape = true;
        } else if (strcmp(k, "data_offsets") == 0) {
            if (!read_offsets(r, e)) { ok = false; break; }
            have_offsets = true;
        } else if (!skip_value(r, 3)) {
            ok = false;
            break;
        }
    } while (peek(r) == ',' && ++r->pos);
    ok = ok && object_keys_unique(r, keys.keys, keys.n, "a tensor entry") && expect(r, '}');
    key_list_free(&keys);
    if (ok && (!have_dtype || !have_shape || !have_offsets))
        return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" lacks dtype, shape or data_offsets", e->name);
    return ok;
}

static int compare_offsets(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Byte ranges: each matches its shape, lies in the data, and together they
 * tile [0, data_size) exactly. */
static bool validate_ranges(json_reader *r, st_header *h, uint64_t data_size)
{
    for (int i = 0; i < h->n_entries; i++) {
        st_entry *e = &h->entries[i];
        if (e->end < e->begin) return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has data_offsets end < begin", e->name);
        if (e->end > data_size)
            return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has data_offsets beyond the end of the file", e->name);
        if (e->numel > UINT64_MAX / e->dtype_size || e->numel * e->dtype_size != e->end - e->begin)
            return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\": shape x dtype size differs from its byte range",
                        e->name);
    }
    if (h->n_entries > 1) qsort(h->entries, (size_t)h->n_entries, sizeof(*h->entries), compare_offsets);
    uint64_t expected = 0;
    for (int i = 0; i < h->n_entries; i++) {
        st_entry *e = &h->entries[i];
        if (e->begin > expected)
            return fail(r, WGT_ERR_BAD_FORMAT, "gap in the data before tensor \"%s\" (ranges not contiguous)", e->name);
        if (e->begin < expected)
            return fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" overlaps the previous tensor's byte range", e->name);
        expected = e->end;
    }
    if (expected != data_size)
        return fail(r, WGT_ERR_BAD_FORMAT, "the tensors do not cover the data section exactly (trailing bytes)%s",
                    NULL);
    return true;
}

wgt_status st_header_parse(const char *json, size_t len, uint64_t data_size, st_header *h, char *err, size_t err_size)
{
    memset(h, 0, sizeof(*h));
    json_reader reader = {json, len, 0, err, err_size, WGT_OK}, *r = &reader;
    if (err_size) err[0] = 0;
    if (!st_utf8_valid((const unsigned char *)json, len)) {
        fail(r, WGT_ERR_BAD_FORMAT, "the header is not valid UTF-8%s", NULL);
        return r->status;
    }
    bool ok = expect(r, '{');
    bool have_metadata = false;
    if (ok && peek(r) == '}') {
        r->pos++;
    } else if (ok) {
        do {
            char *name;
            if (!read_string(r, &name)) { ok = false; break; }
            if (!expect(r, ':')) { free(name); ok = false; break; }
            if (strcmp(name, "__metadata__") == 0) {
                free(name);
                if (have_metadata) { ok = fail(r, WGT_ERR_BAD_FORMAT, "duplicate key \"__metadata__\"%s", NULL); break; }
                have_metadata = true;
                if (!read_metadata(r, h)) { ok = false; break; }
                continue;
            }
            st_entry e;
            memset(&e, 0, sizeof(e));
            e.name = name;
            if (!read_tensor_info(r, &e) || !add_entry(r, h, &e)) {
                free(name);
                ok = false;
                break;
            }
        } while (peek(r) == ',' && ++r->pos);
        ok = ok && expect(r, '}');
    }
    if (ok) {
        skip_space(r);
        if (r->pos != r->len) ok = fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bytes after the header object%s", NULL);
    }
    if (ok && h->n_entries > 1) {
        char **names = malloc((size_t)h->n_entries * sizeof(*names));
        if (!names) {
            ok = fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory%s", NULL);
        } else {
            for (int i = 0; i < h->n_entries; i++) names[i] = h->entries[i].name;
            ok = object_keys_unique(r, names, h->n_entries, "the tensor names");
            free(names);
        }
    }
    ok = ok && validate_ranges(r, h, data_size);
    if (!ok) st_header_free(h);
    return ok ? WGT_OK : r->status;
}

void st_header_free(st_header *h)
{
    for (int i = 0; i < h->n_entries; i++) free(h->entries[i].name);
    for (int i = 0; i < h->n_meta; i++) free(h->meta_keys[i]), free(h->meta_values[i]);
    free(h->entries);
    free(h->meta_keys);
    free(h->meta_values);
    memset(h, 0, sizeof(*h));
}
