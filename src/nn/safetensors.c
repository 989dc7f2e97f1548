/*
 * safetensors checkpoints: reading (memory-mapped, validated by
 * safetensors_header.c before any data byte is used) and atomic writing.
 *
 * File layout: u64 little-endian N, N bytes of JSON header (padded with
 * spaces so the data starts 8-byte aligned), then the data section, each
 * tensor's bytes little-endian and row-major at its data_offsets.
 * The library assumes a little-endian host (every platform wgpu-native runs on).
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fsync, mmap */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/safetensors_internal.h"
#include "ops/op_common.h"

struct wgt_safetensors {
    wgt_context *ctx;
    char *what;                 /* path (or the caller's name) for messages */
    const unsigned char *base;  /* whole file */
    size_t size;
    bool mapped;                /* base is our mmap */
    const unsigned char *data;  /* data section */
    st_header header;
};

/* ------------------------------------------------------------------ reading */

static wgt_safetensors *open_bytes(wgt_context *ctx, const unsigned char *base, size_t size, bool mapped,
                                   const char *what)
{
    const char *op = "wgt_safetensors_open";
    wgt_safetensors *f = calloc(1, sizeof(*f));
    char *name = strdup(what);
    if (!f || !name) {
        free(f), free(name);
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: %s: out of host memory", op, what);
        return NULL;
    }
    f->ctx = ctx, f->what = name, f->base = base, f->size = size, f->mapped = mapped;
    wgt_status s = WGT_OK;
    if (size < 8) {
        s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: truncated: %zu bytes, less than the 8-byte header length",
                      op, what, size);
    } else {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = (n << 8) | base[i]; /* little-endian */
        if (n > ST_HEADER_MAX_BYTES) {
            s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: header of %llu bytes is over the %u-byte limit", op, what,
                          (unsigned long long)n, ST_HEADER_MAX_BYTES);
        } else if (n > size - 8) {
            s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: header length %llu runs past the end of the %zu-byte file",
                          op, what, (unsigned long long)n, size);
        } else {
            char reason[512];
            f->data = base + 8 + n;
            s = st_header_parse((const char *)base + 8, (size_t)n, (uint64_t)(size - 8 - n), &f->header, reason,
                                sizeof(reason));
            if (s != WGT_OK) s = wgt_error(ctx, s, "%s: %s: %s", op, what, reason);
        }
    }
    if (s != WGT_OK) {
        f->mapped = mapped; /* close unmaps */
        wgt_safetensors_close(f);
        return NULL;
    }
    return f;
}

wgt_safetensors *wgt_safetensors_open(wgt_context *ctx, const char *path)
{
    const char *op = "wgt_safetensors_open";
    if (!ctx || ctx->status != WGT_OK) return NULL;
    if (!path) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: path is NULL", op);
        return NULL;
    }
    /* O_NONBLOCK: a FIFO named as a checkpoint must not block the open (it is
     * then refused as not a regular file); no effect on regular files. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        wgt_error(ctx, WGT_ERR_IO, "%s: cannot open %s: %s", op, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        wgt_error(ctx, WGT_ERR_IO, "%s: %s is not a regular file", op, path);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    void *base = NULL;
    if (size > 0) {
        base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            close(fd);
            wgt_error(ctx, WGT_ERR_IO, "%s: cannot map %s: %s", op, path, strerror(errno));
            return NULL;
        }
    }
    close(fd); /* the mapping stays valid */
    static const unsigned char empty[1];
    return open_bytes(ctx, base ? base : empty, size, base != NULL, path);
}

wgt_safetensors *wgt_safetensors_open_memory(wgt_context *ctx, const void *data, size_t size, const char *what)
{
    if (!ctx || ctx->status != WGT_OK) return NULL;
    if (!data && size > 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_safetensors_open_memory: data is NULL");
        return NULL;
    }
    static const unsigned char empty[1];
    return open_bytes(ctx, data ? data : empty, size, false, what ? what : "<memory>");
}

void wgt_safetensors_close(wgt_safetensors *f)
{
    if (!f) return;
    if (f->mapped) munmap((void *)f->base, f->size);
    st_header_free(&f->header);
    free(f->what);
    free(f);
}

int wgt_safetensors_count(const wgt_safetensors *f) { return f ? f->header.n_entries : 0; }

wgt_status wgt_safetensors_info_get(const wgt_safetensors *f, int i, wgt_safetensors_info *info)
{
    if (!f || !info) return WGT_ERR_INVALID_ARGUMENT;
    if (i < 0 || i >= f->header.n_entries)
        return wgt_error(f->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_safetensors_info_get: %s: index %d outside [0, %d)",
                         f->what, i, f->header.n_entries);
    const st_entry *e = &f->header.entries[i];
    memset(info, 0, sizeof(*info));
    info->name = e->name;
    info->dtype = e->dtype;
    info->ndim = e->ndim;
    for (int k = 0; k < e->ndim && k < WGT_MAX_DIMS; k++) info->shape[k] = e->shape[k];
    info->data_bytes = e->end - e->begin;
    return WGT_OK;
}

int wgt_safetensors_find(const wgt_safetensors *f, const char *name)
{
    if (!f || !name) return -1;
    for (int i = 0; i < f->header.n_entries; i++)
        if (strcmp(f->header.entries[i].name, name) == 0) return i;
    return -1;
}

int wgt_safetensors_metadata_count(const wgt_safetensors *f) { return f ? f->header.n_meta : 0; }

wgt_status wgt_safetensors_metadata_get(const wgt_safetensors *f, int i, const char **key, const char **value)
{
    if (!f) return WGT_ERR_INVALID_ARGUMENT;
    if (i < 0 || i >= f->header.n_meta)
        return wgt_error(f->ctx, WGT_ERR_INVALID_ARGUMENT,
                         "wgt_safetensors_metadata_get: %s: index %d outside [0, %d)", f->what, i, f->header.n_meta);
    if (key) *key = f->header.meta_keys[i];
    if (value) *value = f->header.meta_values[i];
    return WGT_OK;
}

const char *wgt_safetensors_metadata_find(const wgt_safetensors *f, const char *key)
{
    if (!f || !key) return NULL;
    for (int i = 0; i < f->header.n_meta; i++)
        if (strcmp(f->header.meta_keys[i], key) == 0) return f->header.meta_values[i];
    return NULL;
}

static wgt_dtype library_dtype(const char *dtype, bool *ok)
{
    *ok = true;
    if (strcmp(dtype, "F32") == 0 || strcmp(dtype, "BF16") == 0) return WGT_F32;
    if (strcmp(dtype, "F16") == 0) return WGT_F16;
    if (strcmp(dtype, "I32") == 0) return WGT_I32;
    if (strcmp(dtype, "U8") == 0) return WGT_U8;
    if (strcmp(dtype, "BOOL") == 0) return WGT_BOOL;
    *ok = false;
    return WGT_F32;
}

wgt_tensor *wgt_safetensors_load(wgt_safetensors *f, const char *name)
{
    const char *op = "wgt_safetensors_load";
    if (!f || f->ctx->status != WGT_OK) return NULL;
    wgt_context *ctx = f->ctx;
    int i = wgt_safetensors_find(f, name);
    if (i < 0) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s has no tensor \"%s\"", op, f->what, name ? name : "(NULL)");
        return NULL;
    }
    const st_entry *e = &f->header.entries[i];
    bool known;
    wgt_dtype dtype = library_dtype(e->dtype, &known);
    if (!known) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: %s: tensor \"%s\" is %s; wgtensor loads F32, F16, BF16 (as f32), "
                  "I32, U8 and BOOL", op, f->what, e->name, e->dtype);
        return NULL;
    }
    if (e->ndim > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: %s: tensor \"%s\" has %d dims, more than %d", op, f->what, e->name,
                  e->ndim, WGT_MAX_DIMS);
        return NULL;
    }
    const unsigned char *src = f->data + e->begin;
    if (strcmp(e->dtype, "BOOL") == 0) {
        for (uint64_t k = 0; k < e->numel; k++)
            if (src[k] > 1) {
                wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: tensor \"%s\" holds %u at element %llu; BOOL is 0 or 1",
                          op, f->what, e->name, src[k], (unsigned long long)k);
                return NULL;
            }
    }
    if (strcmp(e->dtype, "BF16") != 0) return wgt_tensor_from_host(ctx, dtype, e->ndim, e->shape, src);
    /* bf16 is the upper half of an f32: exact. */
    float *wide = malloc(e->numel ? (size_t)e->numel * sizeof(float) : 1);
    if (!wide) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: %s: no host memory to widen \"%s\"", op, f->what, e->name);
        return NULL;
    }
    for (uint64_t k = 0; k < e->numel; k++) {
        uint32_t bits = ((uint32_t)src[2 * k] | (uint32_t)src[2 * k + 1] << 8) << 16;
        memcpy(&wide[k], &bits, 4);
    }
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, e->ndim, e->shape, wide);
    free(wide);
    return t;
}
