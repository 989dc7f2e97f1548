/*
 * The safetensors header: parsing its JSON and the validation the
 * specification asks for before a single data byte is trusted.
 *
 *   { "__metadata__": { "key": "value", ... },                  (optional)
 *     "<name>": { "dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end] },
 *     ... }
 *
 * The JSON reader is our own (json_reader.c, RFC 8259): the whole header must be
 * valid UTF-8; strings have their escapes decoded (\uXXXX with surrogate
 * pairs, a lone surrogate refused); numbers in shape and data_offsets must be
 * non-negative integers without fraction or exponent that fit in 63 bits;
 * other members of a tensor object are parsed and ignored (as the reference
 * implementation does), nested at most JSON_MAX_DEPTH deep; duplicate keys
 * anywhere are refused; only whitespace may follow the object.
 *
 * Validation: known dtype, shape product x dtype size == end - begin (no
 * overflow), ranges inside the data, and sorted by offset they are contiguous
 * from 0, do not overlap and end exactly at the end of the data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/json_reader.h"
#include "nn/safetensors_internal.h"

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

/* ------------------------------------------------------------------ header */

static bool add_entry(json_reader *r, st_header *h, st_entry *e)
{
    if (h->n_entries == h->cap_entries) {
        int cap = h->cap_entries ? h->cap_entries * 2 : 16;
        st_entry *grown = realloc(h->entries, (size_t)cap * sizeof(*grown));
        if (!grown) return json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for tensor entries%s", NULL);
        h->entries = grown;
        h->cap_entries = cap;
    }
    h->entries[h->n_entries++] = *e;
    return true;
}

/* "__metadata__": an object of string values (null: none). */
static bool read_metadata(json_reader *r, st_header *h)
{
    if (json_peek(r) == 'n') return json_read_literal(r, "null");
    if (!json_expect(r, '{')) return false;
    if (json_peek(r) == '}') return ++r->pos, true;
    do {
        char *key = NULL, *value = NULL;
        if (!json_read_string(r, &key)) return false;
        if (!json_expect(r, ':') || json_peek(r) != '"') {
            free(key);
            return json_fail(r, WGT_ERR_BAD_FORMAT, "__metadata__ values must be strings%s", NULL);
        }
        if (!json_read_string(r, &value)) {
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
                return json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory for metadata%s", NULL);
            }
            h->cap_meta = cap;
        }
        h->meta_keys[h->n_meta] = key;
        h->meta_values[h->n_meta++] = value;
    } while (json_peek(r) == ',' && ++r->pos);
    return json_expect(r, '}') && json_keys_unique(r, h->meta_keys, h->n_meta, "__metadata__");
}

/* [d0, d1, ...] into e (every dim counted; the first WGT_MAX_DIMS kept). */
static bool read_shape(json_reader *r, st_entry *e)
{
    if (!json_expect(r, '[')) return false;
    e->ndim = 0;
    e->numel = 1;
    bool overflow = false, has_zero = false;
    if (json_peek(r) == ']') return ++r->pos, true;
    do {
        uint64_t d;
        if (!json_read_number(r, &d, "shape")) return false;
        if (e->ndim < WGT_MAX_DIMS) e->shape[e->ndim] = (int64_t)d;
        if (e->ndim == 1000000) return json_fail(r, WGT_ERR_BAD_FORMAT, "shape has over a million dims%s", NULL);
        e->ndim++;
        if (d == 0) has_zero = true;
        if (d != 0 && e->numel > UINT64_C(0x7fffffffffffffff) / d) overflow = true;
        else e->numel *= d;
    } while (json_peek(r) == ',' && ++r->pos);
    if (!json_expect(r, ']')) return false;
    /* A zero dim makes the tensor empty whatever the others say. */
    if (has_zero) e->numel = 0, overflow = false;
    if (overflow) return json_fail(r, WGT_ERR_BAD_FORMAT, "shape of \"%s\" overflows 64-bit element counts", e->name);
    return true;
}

static bool read_offsets(json_reader *r, st_entry *e)
{
    if (!json_expect(r, '[') || !json_read_number(r, &e->begin, "data_offsets") || !json_expect(r, ',') ||
        !json_read_number(r, &e->end, "data_offsets"))
        return false;
    if (json_peek(r) != ']')
        return json_fail(r, WGT_ERR_BAD_FORMAT, "data_offsets of \"%s\" must have exactly two entries", e->name);
    r->pos++;
    return true;
}

/* { "dtype": ..., "shape": [...], "data_offsets": [b, e], other members ignored } */
static bool read_tensor_info(json_reader *r, st_entry *e)
{
    bool have_dtype = false, have_shape = false, have_offsets = false;
    if (!json_expect(r, '{')) return false;
    if (json_peek(r) == '}') return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has no dtype, shape or data_offsets", e->name);
    json_key_list keys = {0};
    bool ok = true;
    do {
        char *key;
        if (!json_read_string(r, &key) || !json_key_list_add(r, &keys, key)) { ok = false; break; }
        if (!json_expect(r, ':')) { ok = false; break; }
        const char *k = key;
        if (strcmp(k, "dtype") == 0) {
            char *dtype;
            if (json_peek(r) != '"') { ok = json_fail(r, WGT_ERR_BAD_FORMAT, "dtype of \"%s\" is not a string", e->name); break; }
            if (!json_read_string(r, &dtype)) { ok = false; break; }
            size_t size = st_dtype_size(dtype);
            if (size) snprintf(e->dtype, sizeof(e->dtype), "%s", dtype);
            free(dtype);
            if (!size) { ok = json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has an unknown dtype", e->name); break; }
            e->dtype_size = size;
            have_dtype = true;
        } else if (strcmp(k, "shape") == 0) {
            if (!read_shape(r, e)) { ok = false; break; }
            have_shape = true;
        } else if (strcmp(k, "data_offsets") == 0) {
            if (!read_offsets(r, e)) { ok = false; break; }
            have_offsets = true;
        } else if (!json_skip_value(r, 3)) {
            ok = false;
            break;
        }
    } while (json_peek(r) == ',' && ++r->pos);
    ok = ok && json_keys_unique(r, keys.keys, keys.n, "a tensor entry") && json_expect(r, '}');
    json_key_list_free(&keys);
    if (ok && (!have_dtype || !have_shape || !have_offsets))
        return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" lacks dtype, shape or data_offsets", e->name);
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
        if (e->end < e->begin) return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has data_offsets end < begin", e->name);
        if (e->end > data_size)
            return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" has data_offsets beyond the end of the file", e->name);
        if (e->numel > UINT64_MAX / e->dtype_size || e->numel * e->dtype_size != e->end - e->begin)
            return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\": shape x dtype size differs from its byte range",
                        e->name);
    }
    if (h->n_entries > 1) qsort(h->entries, (size_t)h->n_entries, sizeof(*h->entries), compare_offsets);
    uint64_t expected = 0;
    for (int i = 0; i < h->n_entries; i++) {
        st_entry *e = &h->entries[i];
        if (e->begin > expected)
            return json_fail(r, WGT_ERR_BAD_FORMAT, "gap in the data before tensor \"%s\" (ranges not contiguous)", e->name);
        if (e->begin < expected)
            return json_fail(r, WGT_ERR_BAD_FORMAT, "tensor \"%s\" overlaps the previous tensor's byte range", e->name);
        expected = e->end;
    }
    if (expected != data_size)
        return json_fail(r, WGT_ERR_BAD_FORMAT, "the tensors do not cover the data section exactly (trailing bytes)%s",
                    NULL);
    return true;
}

wgt_status st_header_parse(const char *json, size_t len, uint64_t data_size, st_header *h, char *err, size_t err_size)
{
    memset(h, 0, sizeof(*h));
    json_reader reader = {json, len, 0, err, err_size, WGT_OK}, *r = &reader;
    if (err_size) err[0] = 0;
    if (!json_utf8_valid((const unsigned char *)json, len)) {
        json_fail(r, WGT_ERR_BAD_FORMAT, "the header is not valid UTF-8%s", NULL);
        return r->status;
    }
    bool ok = json_expect(r, '{');
    bool have_metadata = false;
    if (ok && json_peek(r) == '}') {
        r->pos++;
    } else if (ok) {
        do {
            char *name;
            if (!json_read_string(r, &name)) { ok = false; break; }
            if (!json_expect(r, ':')) { free(name); ok = false; break; }
            if (strcmp(name, "__metadata__") == 0) {
                free(name);
                if (have_metadata) { ok = json_fail(r, WGT_ERR_BAD_FORMAT, "duplicate key \"__metadata__\"%s", NULL); break; }
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
        } while (json_peek(r) == ',' && ++r->pos);
        ok = ok && json_expect(r, '}');
    }
    if (ok) {
        json_skip_space(r);
        if (r->pos != r->len) ok = json_fail(r, WGT_ERR_BAD_FORMAT, "invalid JSON: bytes after the header object%s", NULL);
    }
    if (ok && h->n_entries > 1) {
        char **names = malloc((size_t)h->n_entries * sizeof(*names));
        if (!names) {
            ok = json_fail(r, WGT_ERR_OUT_OF_MEMORY, "out of host memory%s", NULL);
        } else {
            for (int i = 0; i < h->n_entries; i++) names[i] = h->entries[i].name;
            ok = json_keys_unique(r, names, h->n_entries, "the tensor names");
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
