/*
 * Writing safetensors files atomically: the header and the data go to a
 * temporary file in the target's folder, which is fsynced and renamed over
 * the target (then the folder is fsynced, so the rename itself is durable).
 * A crash or an error at any point leaves the old file untouched.
 *
 * The header lists the tensors in the caller's order with contiguous
 * data_offsets, "__metadata__" first, padded with spaces to a multiple of 8
 * (as the reference implementation) so the data section starts aligned.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fsync */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/json_reader.h"
#include "nn/safetensors_internal.h"
#include "ops/op_common.h"

static const char *const op = "wgt_safetensors_save";

typedef struct text {
    char *s;
    size_t n, cap;
    bool oom;
} text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->n + n + 1) cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->oom = true;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = 0;
}

static void text_printf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(text *t, const char *fmt, ...)
{
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0) text_add(t, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* A JSON string: quotes, backslashes and control characters escaped; other
 * bytes (valid UTF-8, checked by the caller) as they are. */
static void text_add_string(text *t, const char *s)
{
    text_add(t, "\"", 1);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            text_add(t, esc, 2);
        } else if (c < 0x20) {
            text_printf(t, "\\u%04x", c);
        } else {
            text_add(t, p, 1);
        }
    }
    text_add(t, "\"", 1);
}

static const char *file_dtype(wgt_dtype d)
{
    switch (d) {
    case WGT_F32: return "F32";
    case WGT_F16: return "F16";
    case WGT_I32: return "I32";
    case WGT_U8: return "U8";
    case WGT_BOOL: return "BOOL";
    default: return NULL;
    }
}

static bool valid_string(wgt_context *ctx, const char *s, const char *what, int index)
{
    if (!s) return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s %d is NULL", op, what, index);
    if (!json_utf8_valid((const unsigned char *)s, strlen(s)))
        return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s %d is not valid UTF-8", op, what, index);
    return true;
}

static bool arguments_valid(wgt_context *ctx, const wgt_named_tensor *tensors, int n,
                            const wgt_metadata_entry *metadata, int n_metadata)
{
    for (int i = 0; i < n; i++) {
        if (!valid_string(ctx, tensors[i].name, "tensor name", i)) return false;
        if (!tensors[i].tensor)
            return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: tensor \"%s\" is NULL", op, tensors[i].name);
        if (tensors[i].tensor->ctx != ctx)
            return !wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: tensor \"%s\" belongs to another context", op,
                              tensors[i].name);
        if (!file_dtype(tensors[i].tensor->view.dtype))
            return !wgt_error(ctx, WGT_ERR_DTYPE, "%s: tensor \"%s\" has an unknown dtype", op, tensors[i].name);
        if (strcmp(tensors[i].name, "__metadata__") == 0)
            return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: \"__metadata__\" is reserved, not a tensor name", op);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[j].name, tensors[i].name) == 0)
                return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: tensor name \"%s\" appears twice", op,
                                  tensors[i].name);
    }
    for (int i = 0; i < n_metadata; i++) {
        if (!valid_string(ctx, metadata[i].key, "metadata key", i) ||
            !valid_string(ctx, metadata[i].value, "metadata value", i))
            return false;
        for (int j = 0; j < i; j++)
            if (strcmp(metadata[j].key, metadata[i].key) == 0)
                return !wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: metadata key \"%s\" appears twice", op,
                                  metadata[i].key);
    }
    return true;
}

/* The header, space-padded so 8 + its length is a multiple of 8. */
static bool build_header(const wgt_named_tensor *tensors, int n, const wgt_metadata_entry *metadata, int n_metadata,
                         text *h)
{
    text_add(h, "{", 1);
    if (n_metadata > 0) {
        text_add(h, "\"__metadata__\":{", 16);
        for (int i = 0; i < n_metadata; i++) {
            if (i) text_add(h, ",", 1);
            text_add_string(h, metadata[i].key);
            text_add(h, ":", 1);
            text_add_string(h, metadata[i].value);
        }
        text_add(h, "}", 1);
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        const wgt_tensor_view *v = &tensors[i].tensor->view;
        uint64_t bytes = (uint64_t)wgt_shape_numel(v->ndim, v->shape) * wgt_dtype_size(v->dtype);
        if (i || n_metadata > 0) text_add(h, ",", 1);
        text_add_string(h, tensors[i].name);
        text_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", file_dtype(v->dtype));
        for (int d = 0; d < v->ndim; d++) text_printf(h, "%s%lld", d ? "," : "", (long long)v->shape[d]);
        text_printf(h, "],\"data_offsets\":[%llu,", (unsigned long long)offset);
        offset += bytes;
        text_printf(h, "%llu]}", (unsigned long long)offset);
    }
    text_add(h, "}", 1);
    while (!h->oom && h->n % 8 != 0) text_add(h, " ", 1);
    return !h->oom;
}

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Header and every tensor's bytes into fd. */
static wgt_status write_contents(wgt_context *ctx, int fd, const char *path, const text *h,
                                 const wgt_named_tensor *tensors, int n)
{
    unsigned char length[8];
    for (int i = 0; i < 8; i++) length[i] = (unsigned char)((uint64_t)h->n >> (8 * i));
    if (!write_all(fd, length, 8) || !write_all(fd, h->s, h->n))
        return wgt_error(ctx, WGT_ERR_IO, "%s: writing %s: %s", op, path, strerror(errno));
    for (int i = 0; i < n; i++) {
        const wgt_tensor_view *v = &tensors[i].tensor->view;
        size_t bytes = (size_t)wgt_shape_numel(v->ndim, v->shape) * wgt_dtype_size(v->dtype);
        if (bytes == 0) continue;
        void *host = malloc(bytes);
        if (!host) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: no host memory for \"%s\" (%zu bytes)", op,
                                    tensors[i].name, bytes);
        wgt_status s = wgt_tensor_read(tensors[i].tensor, host, bytes);
        if (s == WGT_OK && !write_all(fd, host, bytes))
            s = wgt_error(ctx, WGT_ERR_IO, "%s: writing \"%s\" to %s: %s", op, tensors[i].name, path, strerror(errno));
        free(host);
        if (s != WGT_OK) return s;
    }
    if (fsync(fd) != 0) return wgt_error(ctx, WGT_ERR_IO, "%s: fsync of %s: %s", op, path, strerror(errno));
    return WGT_OK;
}

/* fsync of the folder holding path, so the rename survives a crash. */
static void sync_folder(const char *path)
{
    char *folder = strdup(path);
    if (!folder) return;
    char *slash = strrchr(folder, '/');
    if (slash == folder) slash[1] = 0;
    else if (slash) *slash = 0;
    else strcpy(folder, ".");
    int fd = open(folder, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(folder);
}

wgt_status wgt_safetensors_save(wgt_context *ctx, const char *path, const wgt_named_tensor *tensors, int n,
                                const wgt_metadata_entry *metadata, int n_metadata)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->status != WGT_OK) return ctx->status;
    if (!path || n < 0 || (n > 0 && !tensors) || n_metadata < 0 || (n_metadata > 0 && !metadata))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL path or list, or a negative count", op);
    if (!arguments_valid(ctx, tensors, n, metadata, n_metadata)) return ctx->status;
    text h = {0};
    if (!build_header(tensors, n, metadata, n_metadata, &h)) {
        free(h.s);
        return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: no host memory for the header", op);
    }
    size_t n_path = strlen(path);
    char *temp = malloc(n_path + 16);
    if (!temp) {
        free(h.s);
        return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    snprintf(temp, n_path + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(temp);
    wgt_status s;
    if (fd < 0) {
        s = wgt_error(ctx, WGT_ERR_IO, "%s: cannot create a temporary file next to %s: %s", op, path, strerror(errno));
    } else {
        fchmod(fd, 0644); /* mkstemp creates 0600; a checkpoint is an ordinary file */
        s = write_contents(ctx, fd, path, &h, tensors, n);
        if (close(fd) != 0 && s == WGT_OK)
            s = wgt_error(ctx, WGT_ERR_IO, "%s: closing %s: %s", op, temp, strerror(errno));
        if (s == WGT_OK && rename(temp, path) != 0)
            s = wgt_error(ctx, WGT_ERR_IO, "%s: renaming %s to %s: %s", op, temp, path, strerror(errno));
        if (s != WGT_OK) unlink(temp);
        else sync_folder(path);
    }
    free(temp);
    free(h.s);
    return s;
}
