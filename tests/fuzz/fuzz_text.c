/* Random expression and WGSL text for the fuzzers (see fuzz_text.h). */
#include "fuzz_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t fuzz_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int fuzz_below(uint64_t *state, int n) { return n <= 0 ? 0 : (int)(fuzz_next(state) % (uint64_t)n); }

/* A growable string. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *s)
{
    size_t n = strlen(s);
    if (!t->s) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            free(t->s);
            t->s = NULL;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n + 1);
    t->len += n;
}

static text text_new(void)
{
    text t = {malloc(64), 0, 64};
    if (t.s) t.s[0] = 0;
    return t;
}

/* Valid vocabulary first; the last BAD entries of each list are not valid
 * (unknown names, operators the language lacks, malformed numbers), drawn for
 * about one token in 40 so most expressions still reach code generation. */
#define BAD_UNARY 3
#define BAD_BINARY 1
#define BAD_OPERATORS 2
#define BAD_LITERALS 5
static const char *const unary_names[] = {"neg", "abs", "sign", "exp", "log", "log1p", "sqrt", "rsqrt",
                                          "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "gelu",
                                          "gelu_tanh", "silu", "softplus", "floor", "ceil", "round",
                                          "logical_not", "nosuchfn", "exp2", ""};
static const char *const binary_names[] = {"pow", "maximum", "minimum", "max", "min", "where", "clamp", "atan2"};
static const char *const operators[] = {"+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "%", "^"};
static const char *const literals[] = {"0", "1", "2.5", "3", "1e30", "1e400", "3000000000", "2147483647",
                                       "2147483648", "1.", ".5", "99999999999999999999999", "0.0000001",
                                       "0x10", "1e", "nan", "inf", "1..2"};
#define COUNT(list) ((int)(sizeof list / sizeof *list))

/* An entry of list; its last `bad` entries only one time in 40. */
static const char *word(uint64_t *r, const char *const *list, int count, int bad)
{
    return list[fuzz_below(r, 40) == 0 ? fuzz_below(r, count) : fuzz_below(r, count - bad)];
}

static void expression(uint64_t *r, text *t, int depth, int n_inputs, int n_params)
{
    int choice = depth > 6 ? fuzz_below(r, 3) : fuzz_below(r, 9);
    char buf[64];
    switch (choice) {
    case 0: /* an input, sometimes one past the last */
        snprintf(buf, sizeof buf, "%c", 'a' + fuzz_below(r, n_inputs + (fuzz_below(r, 40) == 0)));
        put(t, buf);
        break;
    case 1:
        put(t, word(r, literals, COUNT(literals), BAD_LITERALS));
        break;
    case 2: /* a parameter, sometimes out of range */
        snprintf(buf, sizeof buf, "p%d", fuzz_below(r, n_params + (fuzz_below(r, 40) == 0 ? 2 : 0)));
        put(t, n_params > 0 || fuzz_below(r, 40) == 0 ? buf : "a");
        break;
    case 3:
    case 4:
        put(t, "(");
        expression(r, t, depth + 1, n_inputs, n_params);
        put(t, " ");
        put(t, word(r, operators, COUNT(operators), BAD_OPERATORS));
        put(t, " ");
        expression(r, t, depth + 1, n_inputs, n_params);
        put(t, ")");
        break;
    case 5:
    case 6:
        put(t, word(r, unary_names, COUNT(unary_names), BAD_UNARY));
        put(t, "(");
        expression(r, t, depth + 1, n_inputs, n_params);
        put(t, ")");
        break;
    case 7: {
        const char *name = word(r, binary_names, COUNT(binary_names), BAD_BINARY);
        int args = strcmp(name, "where") == 0 || strcmp(name, "clamp") == 0 ? 3 : 2;
        args += fuzz_below(r, 40) == 0 ? (fuzz_below(r, 2) ? 1 : -1) : 0; /* wrong arity */
        put(t, name);
        put(t, "(");
        for (int i = 0; i < args; i++) {
            if (i) put(t, ", ");
            expression(r, t, depth + 1, n_inputs, n_params);
        }
        put(t, ")");
        break;
    }
    default:
        put(t, fuzz_below(r, 2) ? "-" : "!");
        expression(r, t, depth + 1, n_inputs, n_params);
        break;
    }
}

/* Nesting the parsers must refuse, not recurse through: parentheses, unary
 * chains, function calls. */
static void deep(uint64_t *r, text *t)
{
    static const int depths[] = {60, 64, 65, 199, 200, 201, 1000, 20000, 100000};
    int n = depths[fuzz_below(r, (int)(sizeof depths / sizeof *depths))];
    static const char *const open[] = {"(", "-", "!", "abs(", "-(", "max(a, "};
    static const char *const close[] = {")", "", "", ")", ")", ")"};
    int kind = fuzz_below(r, 6);
    for (int i = 0; i < n && t->s; i++) put(t, open[kind]);
    put(t, "a");
    for (int i = 0; i < n && t->s; i++) put(t, close[kind]);
}

void fuzz_mutate(uint64_t *r, char *s, size_t *len, size_t capacity)
{
    int edits = 1 + fuzz_below(r, 4);
    for (int e = 0; e < edits; e++) {
        size_t at = *len ? (size_t)fuzz_next(r) % *len : 0;
        switch (fuzz_below(r, 5)) {
        case 0: /* flip to any byte, often one that is not UTF-8 on its own */
            if (*len) s[at] = (char)(fuzz_below(r, 2) ? 0x80 + fuzz_below(r, 128) : 1 + fuzz_below(r, 127));
            break;
        case 1: /* delete */
            if (*len) {
                memmove(s + at, s + at + 1, *len - at);
                (*len)--;
            }
            break;
        case 2: /* insert an invalid UTF-8 sequence */
            if (*len + 3 < capacity) {
                static const char *const bad[] = {"\xff", "\xc3", "\xed\xa0\x80", "\xe2\x82", "\xc0\xaf"};
                const char *b = bad[fuzz_below(r, 5)];
                size_t n = strlen(b);
                memmove(s + at + n, s + at, *len - at + 1);
                memcpy(s + at, b, n);
                *len += n;
            }
            break;
        case 3: /* truncate */
            *len = at;
            s[at] = 0;
            break;
        default: /* duplicate a byte */
            if (*len && *len + 1 < capacity) {
                memmove(s + at + 1, s + at, *len - at + 1);
                (*len)++;
            }
            break;
        }
    }
    s[*len] = 0;
}

/* Mutations need room to grow: copies t's text into a buffer with slack. */
static char *mutated(uint64_t *r, text *t)
{
    if (!t->s) return NULL;
    size_t cap = t->len + 64;
    char *s = malloc(cap);
    if (!s) {
        free(t->s);
        return NULL;
    }
    memcpy(s, t->s, t->len + 1);
    size_t len = t->len;
    fuzz_mutate(r, s, &len, cap);
    free(t->s);
    return s;
}

char *fuzz_expression(uint64_t *r, int n_inputs, int n_params)
{
    text t = text_new();
    int kind = fuzz_below(r, 10);
    if (kind == 0) deep(r, &t);
    else expression(r, &t, 0, n_inputs, n_params);
    if (kind == 1 || kind == 2) return mutated(r, &t);
    return t.s;
}

char *fuzz_wgsl(uint64_t *r, int n_buffers, int uniform)
{
    text t = text_new();
    char line[256];
    /* The shader may declare more or fewer bindings than the caller binds, a
     * fixed-size array larger than the buffer, or read-only access where the
     * kernel writes. */
    int declared = n_buffers + (fuzz_below(r, 6) == 0 ? (fuzz_below(r, 2) ? 1 : -1) : 0);
    int fixed = fuzz_below(r, 6) == 0;
    int read_only = fuzz_below(r, 8) == 0;
    for (int i = 0; i < declared; i++) {
        if (fixed)
            snprintf(line, sizeof line, "@group(0) @binding(%d) var<storage, %s> b%d: array<f32, %d>;\n", i,
                     read_only ? "read" : "read_write", i, 1 << (4 + fuzz_below(r, 16)));
        else
            snprintf(line, sizeof line, "@group(0) @binding(%d) var<storage, %s> b%d: array<f32>;\n", i,
                     read_only ? "read" : "read_write", i);
        put(&t, line);
    }
    if (uniform) {
        snprintf(line, sizeof line, "struct U { scale: f32, n: u32 }\n@group(0) @binding(%d) var<uniform> u: U;\n",
                 n_buffers);
        put(&t, line);
    }
    int size = 1 << fuzz_below(r, 9);
    snprintf(line, sizeof line,
             "@compute @workgroup_size(%d)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n", size);
    put(&t, line);
    if (declared > 0) {
        /* Unchecked indexing half the time: WGSL clamps it, it must never fault. */
        put(&t, fuzz_below(r, 2) ? "  if (id.x < arrayLength(&b0)) {\n" : "  {\n");
        snprintf(line, sizeof line, "    b0[id.x] = b0[id.x] * %s + %s;\n", uniform ? "u.scale" : "2.0",
                 declared > 1 ? "b1[id.x]" : "1.0");
        put(&t, line);
        put(&t, "  }\n");
    }
    put(&t, "}\n");
    if (fuzz_below(r, 4) == 0) return mutated(r, &t);
    return t.s;
}
