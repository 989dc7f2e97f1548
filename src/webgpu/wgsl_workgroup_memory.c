/*
 * How much workgroup memory a WGSL module declares, by the WebGPU rule: the
 * sum over its var<workgroup> variables of roundUp(16, SizeOf(T)).
 *
 * Why: wgpu-native does not check maxComputeWorkgroupStorageSize at pipeline
 * creation (gfx-rs/wgpu#8946), and NVIDIA's Vulkan driver, given a kernel
 * over its 48 KiB, hung the process (an H100 attention experiment sat until
 * its 300 s timeout instead of failing). webgpu_pipeline_create_ex checks
 * every module here first, so a kernel of ours with a wrong tile size or a
 * user's custom WGSL gets an error instead.
 *
 * The parser knows what WGSL kernels declare in practice: scalars (f32, i32,
 * u32, f16, bool), vectors and matrices (with the f/i/u/h shorthands),
 * atomic<T>, fixed-size arrays whose counts are integer expressions of
 * literals and module-scope `const`/`override` integers (+ - * / %,
 * parentheses, max, min, and select on a bool literal or const), structs (with
 * @align and @size) and aliases. A variable whose size it cannot work out
 * makes the result unknown (-1): the module is then created unchecked, as
 * before. Only variables referenced somewhere besides their declaration
 * count (the spec counts those statically used by the entry point; a module
 * with several entry points may be over-counted by the ones another uses).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

typedef struct {
    uint64_t size, align;
} wgsl_layout;

typedef struct {
    char *text;    /* the source with comments blanked */
    size_t length;
    int depth;     /* recursion guard (aliases, structs, const expressions) */
} wgsl_module;

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
static uint64_t round_up(uint64_t k, uint64_t n) { return (n + k - 1) / k * k; }

static const char *skip_space(const char *p)
{
    while (*p && isspace((unsigned char)*p)) p++;
    return p;
}

/* Copies an identifier at p into buf; returns the position after it (p when none). */
static const char *read_ident(const char *p, char *buf, size_t size)
{
    size_t n = 0;
    while (ident_char(p[n]) && n + 1 < size) n++;
    if (n == 0 || isdigit((unsigned char)p[0])) return p;
    memcpy(buf, p, n);
    buf[n] = 0;
    return p + n;
}

/* The first module-scope "keyword NAME" (NAME followed by end) in the text,
 * with the keyword at an identifier boundary; NULL when none. */
static const char *find_decl(const wgsl_module *m, const char *keyword, const char *name)
{
    size_t kl = strlen(keyword), nl = strlen(name);
    for (const char *p = strstr(m->text, keyword); p; p = strstr(p + 1, keyword)) {
        if ((p > m->text && ident_char(p[-1])) || ident_char(p[kl])) continue;
        const char *q = skip_space(p + kl);
        if (strncmp(q, name, nl) == 0 && !ident_char(q[nl])) return q + nl;
    }
    return NULL;
}

static bool eval_int(wgsl_module *m, const char **pp, int64_t *out);

/* Skips spaces and the character c; false when c is not next. */
static bool expect(const char **pp, char c)
{
    const char *p = skip_space(*pp);
    if (*p != c) return false;
    *pp = p + 1;
    return true;
}

/* The expression after "=" of the module-scope const (or override) name:
 * [*from, *semi) (false when there is none). */
static bool const_definition(const wgsl_module *m, const char *name, bool overrides, const char **from,
                             const char **semi)
{
    const char *d = find_decl(m, "const", name);
    if (!d && overrides) d = find_decl(m, "override", name);
    d = d ? strchr(d, '=') : NULL;
    *semi = d ? strchr(d, ';') : NULL;
    *from = d ? d + 1 : NULL;
    return *semi != NULL;
}

/* A bool: true, false, !b, or a module-scope const bool defined as one. */
static bool eval_bool(wgsl_module *m, const char **pp, bool *out)
{
    const char *p = skip_space(*pp);
    if (*p == '!') {
        p++;
        if (!eval_bool(m, &p, out)) return false;
        *out = !*out;
        *pp = p;
        return true;
    }
    char name[64];
    const char *q = read_ident(p, name, sizeof name);
    if (q == p || m->depth > 16) return false;
    if (!strcmp(name, "true") || !strcmp(name, "false")) {
        *out = name[0] == 't';
        *pp = q;
        return true;
    }
    const char *d, *semi;
    if (!const_definition(m, name, false, &d, &semi)) return false;
    m->depth++;
    bool ok = eval_bool(m, &d, out) && skip_space(d) == semi;
    m->depth--;
    *pp = q;
    return ok;
}

/* A primary: a literal (with an i/u suffix), a const or override name, or a
 * parenthesized expression. */
static bool eval_primary(wgsl_module *m, const char **pp, int64_t *out)
{
    const char *p = skip_space(*pp);
    if (*p == '(') {
        p++;
        if (!eval_int(m, &p, out)) return false;
        p = skip_space(p);
        if (*p != ')') return false;
        *pp = p + 1;
        return true;
    }
    if (*p == '-') {
        p++;
        if (!eval_primary(m, &p, out)) return false;
        *out = -*out;
        *pp = p;
        return true;
    }
    if (isdigit((unsigned char)*p)) {
        char *end;
        long long v = strtoll(p, &end, 0);
        if (*end == 'u' || *end == 'i') end++;
        if (ident_char(*end)) return false; /* 1.5, 2e3, 3f: not an integer */
        *out = v;
        *pp = end;
        return true;
    }
    char name[64];
    const char *q = read_ident(p, name, sizeof name);
    if (q == p || m->depth > 16) return false;
    int64_t a, b;
    bool c;
    if (!strcmp(name, "select")) { /* select(f, t, condition) */
        if (!expect(&q, '(') || !eval_int(m, &q, &a) || !expect(&q, ',') || !eval_int(m, &q, &b) ||
            !expect(&q, ',') || !eval_bool(m, &q, &c) || !expect(&q, ')'))
            return false;
        *out = c ? b : a;
        *pp = q;
        return true;
    }
    if (!strcmp(name, "max") || !strcmp(name, "min")) { /* max(a, b), min(a, b) */
        if (!expect(&q, '(') || !eval_int(m, &q, &a) || !expect(&q, ',') || !eval_int(m, &q, &b) || !expect(&q, ')'))
            return false;
        *out = !strcmp(name, "max") ? (a > b ? a : b) : (a < b ? a : b);
        *pp = q;
        return true;
    }
    const char *d, *semi;
    if (!const_definition(m, name, true, &d, &semi)) return false;
    m->depth++;
    bool ok = eval_int(m, &d, out) && skip_space(d) == semi;
    m->depth--;
    *pp = q;
    return ok;
}

static bool eval_term(wgsl_module *m, const char **pp, int64_t *out)
{
    if (!eval_primary(m, pp, out)) return false;
    for (;;) {
        const char *p = skip_space(*pp);
        if (*p != '*' && *p != '/' && *p != '%') return true;
        int64_t r;
        const char *q = p + 1;
        if (!eval_primary(m, &q, &r)) return false;
        if ((*p == '/' || *p == '%') && r == 0) return false;
        *out = *p == '*' ? *out * r : *p == '/' ? *out / r : *out % r;
        *pp = q;
    }
}

/* An integer expression: terms joined by + and -. */
static bool eval_int(wgsl_module *m, const char **pp, int64_t *out)
{
    if (!eval_term(m, pp, out)) return false;
    for (;;) {
        const char *p = skip_space(*pp);
        if (*p != '+' && *p != '-') return true;
        int64_t r;
        const char *q = p + 1;
        if (!eval_term(m, &q, &r)) return false;
        *out = *p == '+' ? *out + r : *out - r;
        *pp = q;
    }
}

static bool type_layout(wgsl_module *m, const char **pp, wgsl_layout *out);

/* "<T>" after a generic name: the layout of T. */
static bool template_arg(wgsl_module *m, const char **pp, wgsl_layout *out)
{
    const char *p = skip_space(*pp);
    if (*p != '<') return false;
    p++;
    if (!type_layout(m, &p, out)) return false;
    p = skip_space(p);
    if (*p != '>') return false;
    *pp = p + 1;
    return true;
}

static bool scalar_layout(const char *name, wgsl_layout *out)
{
    if (!strcmp(name, "f32") || !strcmp(name, "i32") || !strcmp(name, "u32") || !strcmp(name, "bool")) {
        *out = (wgsl_layout){4, 4};
        return true;
    }
    if (!strcmp(name, "f16")) {
        *out = (wgsl_layout){2, 2};
        return true;
    }
    return false;
}

/* vecN of an element layout e (WGSL: vec3's alignment is that of vec4). */
static wgsl_layout vector_layout(int n, wgsl_layout e)
{
    return (wgsl_layout){n * e.size, (n == 3 ? 4 : n) * e.size};
}

/* A struct's layout from its members "name: type," with optional @align(n)
 * and @size(n) attributes. */
static bool struct_layout(wgsl_module *m, const char *body, wgsl_layout *out)
{
    const char *p = skip_space(body);
    if (*p != '{') return false;
    p++;
    uint64_t offset = 0, align = 1;
    for (;;) {
        p = skip_space(p);
        if (*p == '}') break;
        uint64_t force_align = 0, force_size = 0;
        while (*p == '@') {
            char attr[16];
            const char *q = read_ident(p + 1, attr, sizeof attr);
            q = skip_space(q);
            int64_t v = 0;
            if (*q != '(') return false;
            q++;
            if (!eval_int(m, &q, &v) || v <= 0) return false;
            q = skip_space(q);
            if (*q != ')') return false;
            if (!strcmp(attr, "align")) force_align = (uint64_t)v;
            else if (!strcmp(attr, "size")) force_size = (uint64_t)v;
            else return false;
            p = skip_space(q + 1);
        }
        char member[64];
        const char *q = read_ident(p, member, sizeof member);
        if (q == p) return false;
        q = skip_space(q);
        if (*q != ':') return false;
        q++;
        wgsl_layout t;
        if (!type_layout(m, &q, &t)) return false;
        if (force_align) t.align = force_align;
        if (force_size) t.size = force_size;
        offset = round_up(t.align, offset) + t.size;
        if (t.align > align) align = t.align;
        p = skip_space(q);
        if (*p == ',') p++;
        else if (*p != '}') return false;
    }
    *out = (wgsl_layout){round_up(align, offset), align};
    return true;
}

/* The layout of the type at *pp; advances past it. */
static bool type_layout(wgsl_module *m, const char **pp, wgsl_layout *out)
{
    const char *p = skip_space(*pp);
    char name[64];
    const char *q = read_ident(p, name, sizeof name);
    if (q == p || m->depth > 16) return false;
    bool ok = false;
    wgsl_layout e;
    size_t len = strlen(name);
    if (scalar_layout(name, out)) {
        ok = true;
    } else if (!strcmp(name, "atomic")) {
        ok = template_arg(m, &q, out);
    } else if (len == 4 && !strncmp(name, "vec", 3) && name[3] >= '2' && name[3] <= '4') {
        ok = template_arg(m, &q, &e);
        if (ok) *out = vector_layout(name[3] - '0', e);
    } else if (len == 5 && !strncmp(name, "vec", 3) && name[3] >= '2' && name[3] <= '4' && strchr("fiuh", name[4])) {
        *out = vector_layout(name[3] - '0', name[4] == 'h' ? (wgsl_layout){2, 2} : (wgsl_layout){4, 4});
        ok = true;
    } else if ((len == 6 || len == 7) && !strncmp(name, "mat", 3) && name[3] >= '2' && name[3] <= '4' &&
               name[4] == 'x' && name[5] >= '2' && name[5] <= '4') {
        /* matCxR: C columns of vecR */
        if (len == 7 && strchr("fh", name[6])) e = name[6] == 'h' ? (wgsl_layout){2, 2} : (wgsl_layout){4, 4}, ok = true;
        else if (len == 6) ok = template_arg(m, &q, &e);
        if (ok) {
            wgsl_layout column = vector_layout(name[5] - '0', e);
            *out = (wgsl_layout){(uint64_t)(name[3] - '0') * round_up(column.align, column.size), column.align};
        }
    } else if (!strcmp(name, "array")) {
        const char *r = skip_space(q);
        int64_t count = 0;
        if (*r == '<') {
            r++;
            ok = type_layout(m, &r, &e);
            r = skip_space(r);
            ok = ok && *r == ',';
            if (ok) {
                r++;
                ok = eval_int(m, &r, &count) && count > 0;
                r = skip_space(r);
                if (*r == ',') r = skip_space(r + 1); /* a trailing comma */
                ok = ok && *r == '>';
            }
            if (ok) {
                q = r + 1;
                *out = (wgsl_layout){(uint64_t)count * round_up(e.align, e.size), e.align};
            }
        }
    } else {
        /* an alias or a struct of this module */
        const char *d = find_decl(m, "alias", name);
        m->depth++;
        if (d) {
            d = skip_space(d);
            if (*d == '=') {
                d++;
                ok = type_layout(m, &d, out);
            }
        } else if ((d = find_decl(m, "struct", name)) != NULL) {
            ok = struct_layout(m, d, out);
        }
        m->depth--;
    }
    if (ok) *pp = q;
    return ok;
}

/* Whether name appears in the text outside [skip, skip + n). */
static bool referenced_elsewhere(const wgsl_module *m, const char *name, const char *skip, size_t n)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(m->text, name); p; p = strstr(p + 1, name)) {
        if ((p > m->text && ident_char(p[-1])) || ident_char(p[nl])) continue;
        if (p >= skip && p < skip + n) continue;
        return true;
    }
    return false;
}

/* Blanks // and block comments (keeping offsets), into a new string. */
static char *strip_comments(const char *src, size_t *length)
{
    size_t n = strlen(src);
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, src, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '/' && t[i + 1] == '/') {
            while (i < n && t[i] != '\n') t[i++] = ' ';
        } else if (t[i] == '/' && t[i + 1] == '*') {
            int depth = 0; /* WGSL block comments nest */
            do {
                if (t[i] == '/' && t[i + 1] == '*') {
                    depth++;
                    t[i] = t[i + 1] = ' ';
                    i += 2;
                } else if (t[i] == '*' && t[i + 1] == '/') {
                    depth--;
                    t[i] = t[i + 1] = ' ';
                    i += 2;
                } else {
                    if (t[i] != '\n') t[i] = ' ';
                    i++;
                }
            } while (i < n && depth > 0);
            i--; /* the loop's i++ */
        }
    }
    *length = n;
    return t;
}

int64_t webgpu_wgsl_workgroup_bytes(const char *source, char *unknown, size_t unknown_size)
{
    if (unknown_size) unknown[0] = 0;
    wgsl_module m = {0};
    m.text = strip_comments(source, &m.length);
    if (!m.text) return -1;
    int64_t total = 0;
    const char *key = "var<workgroup>";
    for (const char *p = strstr(m.text, key); p; p = strstr(p + 1, key)) {
        char name[64];
        const char *q = skip_space(p + strlen(key));
        const char *after = read_ident(q, name, sizeof name);
        const char *colon = skip_space(after);
        wgsl_layout t;
        const char *type = colon + 1;
        if (after == q || *colon != ':' || !type_layout(&m, &type, &t)) {
            if (unknown_size) snprintf(unknown, unknown_size, "%.*s", (int)(after - q), q);
            total = -1;
            break;
        }
        if (referenced_elsewhere(&m, name, p, (size_t)(type - p))) total += (int64_t)round_up(16, t.size);
    }
    free(m.text);
    return total;
}
