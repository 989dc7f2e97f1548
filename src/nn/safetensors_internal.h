/*
 * Private to the safetensors reader and writer (src/nn/safetensors*.c): the
 * parsed header and the strict parser of its JSON subset.
 */
#ifndef WGT_SAFETENSORS_INTERNAL_H
#define WGT_SAFETENSORS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "wgtensor.h"

/* The reference implementation's limit on the JSON header. */
#define ST_HEADER_MAX_BYTES 100000000u

typedef struct st_entry {
    char *name;                 /* decoded UTF-8, no NUL inside */
    char dtype[12];             /* as in the file, e.g. "BF16" */
    size_t dtype_size;          /* bytes per element */
    int ndim;                   /* as in the file (may exceed WGT_MAX_DIMS) */
    int64_t shape[WGT_MAX_DIMS];/* the first WGT_MAX_DIMS dims */
    uint64_t numel;
    uint64_t begin, end;        /* byte range in the data section */
} st_entry;

typedef struct st_header {
    st_entry *entries;          /* sorted by begin once validated */
    int n_entries, cap_entries;
    char **meta_keys, **meta_values;
    int n_meta, cap_meta;
} st_header;

/* Bytes per element of a safetensors dtype name, 0 if unknown. */
size_t st_dtype_size(const char *dtype);

/* Parses and validates a header: json[0..len) against a data section of
 * data_size bytes. Returns WGT_OK or WGT_ERR_BAD_FORMAT (reason in err, naming
 * the tensor when one is at fault) or WGT_ERR_OUT_OF_MEMORY. On success the
 * entries are sorted by offset, contiguous from 0 and cover the data exactly. */
wgt_status st_header_parse(const char *json, size_t len, uint64_t data_size, st_header *out, char *err,
                           size_t err_size);
void st_header_free(st_header *h);

#endif /* WGT_SAFETENSORS_INTERNAL_H */
