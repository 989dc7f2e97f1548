/* Strict JSON into a tree (llm_json.h). Recursion is bounded by
 * LLM_JSON_MAX_DEPTH, so hostile nesting cannot exhaust the stack. */
#include "llm_json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_unicode.h"

typedef struct parser {
    const char *s;
    size_t n, pos;
    char *msg;
    size_t msg_size;
    bool failed;
} parser;

static bool fail(parser *p, const char *what)
{
    if (!p->failed) snprintf(p->msg, p->msg_size, "invalid JSON at byte %zu: %s", p->pos, what);
    p->failed = true;
    return false;
}

static void skip_space(parser *p)
{
    while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int hex4(parser *p, uint32_t *v)
{
    if (p->n - p->pos < 4) return fail(p, "truncated \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
        if (d < 0) return fail(p, "bad hex digit in \\u escape");
        *v = *v * 16 + (uint32_t)d;
    }
    return true;
}

static bool parse_string(parser *p, char **out, size_t *len)
{
    p->pos++; /* opening quote */
    /* the decoded string is never longer than the raw text */
    size_t start = p->pos, cap = 1;
    for (size_t i = start; i < p->n && p->s[i] != '"'; i++) {
        if (p->s[i] == '\\') i++; /* an escaped quote does not end the string */
        cap += 2;
    }
    char *buf = malloc(cap + 4);
    if (!buf) return fail(p, "out of memory");
    size_t k = 0;
    for (;;) {
        if (p->pos >= p->n) return free(buf), fail(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') break;
        if (c < 0x20) return free(buf), fail(p, "raw control character in string");
        if (c != '\\') {
            uint32_t cp;
            int l = llm_utf8_decode((const unsigned char *)p->s + p->pos, p->n - p->pos, &cp);
            if (!l) return free(buf), fail(p, "invalid UTF-8 in string");
            memcpy(buf + k, p->s + p->pos, (size_t)l);
            k += (size_t)l, p->pos += (size_t)l;
            continue;
        }
        if (++p->pos >= p->n) return free(buf), fail(p, "truncated escape");
        char e = p->s[p->pos++];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            buf[k++] = map[simple - "\"\\/bfnrt"];
            continue;
        }
        if (e != 'u') return free(buf), fail(p, "unknown escape");
        uint32_t cp;
        if (!hex4(p, &cp)) return free(buf), false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (p->n - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                return free(buf), fail(p, "lone high surrogate");
            p->pos += 2;
            if (!hex4(p, &lo)) return free(buf), false;
            if (lo < 0xDC00 || lo > 0xDFFF) return free(buf), fail(p, "bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return free(buf), fail(p, "lone low surrogate");
        }
        if (cp == 0) return free(buf), fail(p, "\\u0000 in string");
        k += (size_t)llm_utf8_encode(cp, buf + k);
    }
    p->pos++; /* closing quote */
    buf[k] = 0;
    *out = buf;
    *len = k;
    return true;
}

static bool parse_number(parser *p, double *out)
{
    size_t start = p->pos;
    if (p->s[p->pos] == '-') p->pos++;
    if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad number");
    if (p->s[p->pos] == '0' && p->pos + 1 < p->n && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9')
        return fail(p, "leading zero in number");
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos < p->n && p->s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad fraction");
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad exponent");
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    char tmp[64];
    size_t len = p->pos - start;
    if (len >= sizeof(tmp)) return fail(p, "number too long");
    memcpy(tmp, p->s + start, len);
    tmp[len] = 0;
    *out = strtod(tmp, NULL);
    if (!isfinite(*out)) return fail(p, "number out of range");
    return true;
}

static bool parse_value(parser *p, llm_json *v, int depth);

/* Appends a zeroed child to an array / object (doubling capacity). */
static llm_json *push_child(parser *p, llm_json *v, size_t *cap)
{
    if (v->length == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        llm_json *items = realloc(v->items, nc * sizeof(*items));
        if (!items) return fail(p, "out of memory"), NULL;
        v->items = items;
        if (v->type == LLM_JSON_OBJECT) {
            char **keys = realloc(v->keys, nc * sizeof(*keys));
            if (!keys) return fail(p, "out of memory"), NULL;
            v->keys = keys;
        }
        *cap = nc;
    }
    llm_json *c = &v->items[v->length];
    memset(c, 0, sizeof(*c));
    if (v->keys) v->keys[v->length] = NULL;
    v->length++;
    return c;
}

static bool parse_container(parser *p, llm_json *v, int depth)
{
    const bool object = p->s[p->pos] == '{';
    const char close = object ? '}' : ']';
    v->type = object ? LLM_JSON_OBJECT : LLM_JSON_ARRAY;
    p->pos++;
    size_t cap = 0;
    skip_space(p);
    if (p->pos < p->n && p->s[p->pos] == close) return p->pos++, true;
    for (;;) {
        skip_space(p);
        char *key = NULL;
        size_t klen;
        if (object) {
            if (p->pos >= p->n || p->s[p->pos] != '"') return fail(p, "expected a string key");
            if (!parse_string(p, &key, &klen)) return false;
            skip_space(p);
            if (p->pos >= p->n || p->s[p->pos] != ':') return free(key), fail(p, "expected ':'");
            p->pos++;
        }
        llm_json *c = push_child(p, v, &cap);
        if (!c) return free(key), false;
        if (object) v->keys[v->length - 1] = key;
        if (!parse_value(p, c, depth + 1)) return false;
        skip_space(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->n && p->s[p->pos] == close) return p->pos++, true;
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool parse_value(parser *p, llm_json *v, int depth)
{
    if (depth > LLM_JSON_MAX_DEPTH) return fail(p, "nesting too deep");
    skip_space(p);
    if (p->pos >= p->n) return fail(p, "unexpected end");
    char c = p->s[p->pos];
    if (c == '{' || c == '[') return parse_container(p, v, depth);
    if (c == '"') {
        v->type = LLM_JSON_STRING;
        return parse_string(p, &v->string, &v->length);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = LLM_JSON_NUMBER;
        return parse_number(p, &v->number);
    }
    static const struct { const char *word; llm_json_type type; bool value; } lits[] = {
        {"true", LLM_JSON_BOOL, true}, {"false", LLM_JSON_BOOL, false}, {"null", LLM_JSON_NULL, false}};
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(lits[i].word);
        if (p->n - p->pos >= l && memcmp(p->s + p->pos, lits[i].word, l) == 0) {
            p->pos += l;
            v->type = lits[i].type;
            v->boolean = lits[i].value;
            return true;
        }
    }
    return fail(p, "unexpected character");
}

bool llm_json_parse(const char *text, size_t size, llm_json *out, char *msg, size_t msg_size)
{
    parser p = {.s = text, .n = size, .msg = msg, .msg_size = msg_size};
    memset(out, 0, sizeof(*out));
    bool ok = parse_value(&p, out, 0);
    if (ok) {
        skip_space(&p);
        if (p.pos != p.n) ok = fail(&p, "trailing characters after the value");
    }
    if (!ok) llm_json_free(out);
    return ok;
}

void llm_json_free(llm_json *v)
{
    if (!v) return;
    free(v->string);
    for (size_t i = 0; i < v->length && v->items; i++) {
        llm_json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof(*v));
}

const llm_json *llm_json_get(const llm_json *obj, const char *key)
{
    if (!obj || obj->type != LLM_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->length; i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

char *llm_read_file(const char *path, size_t max_bytes, size_t *size, char *msg, size_t msg_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msg_size, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= max_bytes) {
                snprintf(msg, msg_size, "%s is larger than %zu bytes", path, max_bytes);
                free(buf), fclose(f);
                return NULL;
            }
            cap = cap ? cap * 2 : 65536;
            if (cap > max_bytes) cap = max_bytes;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                snprintf(msg, msg_size, "out of memory reading %s", path);
                free(buf), fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        snprintf(msg, msg_size, "read error on %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *size = n;
    return buf;
}
