/*
 * What every CPU kernel file calls: its scratch buffer, error messages naming
 * the call, the strided walk over views and streaming stores. Apart from
 * cpu_backend.c, which dispatches to the kernels, so that calls only run from
 * the backend down to the kernels and from the kernels down to this file.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/checked.h"
#include "cpu/cpu_internal.h"

/* ----------------------------------------------------------------- scratch */

/* A cache line, as cpu_scratch promises (cpu_internal.h): vector loads never split one. */
#define SCRATCH_ALIGNMENT 64

void *cpu_scratch(cpu_backend *b, size_t bytes)
{
    if (bytes <= b->scratch_bytes) return b->scratch;
    free(b->scratch);
    size_t rounded = (bytes + SCRATCH_ALIGNMENT - 1) / SCRATCH_ALIGNMENT * SCRATCH_ALIGNMENT;
    b->scratch = aligned_alloc(SCRATCH_ALIGNMENT, rounded);
    b->scratch_bytes = b->scratch ? rounded : 0;
    return b->scratch;
}

/* --------------------------------------------------------------- messages */

const char *cpu_call_name(const wgt_kernel_call *call, char *buf, size_t size)
{
    static const char *const kind_names[WGT_KERNEL_COUNT] = {
        "elementwise", "reduce", "cumsum", "softmax", "matmul", "gather", "scatter_add", "topk",
        [WGT_KERNEL_ATTENTION] = "attention", [WGT_KERNEL_ATTENTION_BACKWARD] = "attention_backward",
        [WGT_KERNEL_ROPE] = "rope", [WGT_KERNEL_NN] = "nn", [WGT_KERNEL_CONV] = "conv",
        [WGT_KERNEL_QMATMUL] = "qmatmul", [WGT_KERNEL_QROWS] = "qrows"};
    const char *name = call ? call->op_name : NULL;
    if (!name || !*name) {
        name = call && (unsigned)call->kind < WGT_KERNEL_COUNT ? kind_names[call->kind] : "cpu_kernel";
    }
    snprintf(buf, size, "%s%s", strncmp(name, "wgt_", 4) == 0 ? "" : "wgt_", name);
    return buf;
}

const char *cpu_shape_string(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++) {
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    }
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

wgt_status cpu_fail(cpu_backend *b, const wgt_kernel_call *call, wgt_status status, const char *fmt, ...)
{
    char name[64], message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return wgt_error(b->base.ctx, status, "%s: %s (cpu backend)", cpu_call_name(call, name, sizeof name), message);
}

/* ------------------------------------------------------------ strided walk */

void cpu_walk_init(cpu_walk *w, int ndim, const int64_t *shape, int n_views, const int64_t *const *strides)
{
    w->n_views = n_views;
    w->ndim = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue; /* size-1 dims never move */
        int k = w->ndim;
        bool merges = k > 0;
        /* dim d continues dim k-1 when stepping k-1 equals stepping d all the
         * way; products that overflow (a view of no elements may have any
         * sizes and strides: the api_fuzzer under UBSan) never merge */
        int64_t merged_size = 0;
        merges = merges && wgt_checked_mul(w->shape[k - 1], shape[d], &merged_size);
        for (int v = 0; v < n_views && merges; v++) {
            int64_t span;
            merges = wgt_checked_mul(strides[v][d], shape[d], &span) && w->strides[v][k - 1] == span;
        }
        if (merges) {
            w->shape[k - 1] = merged_size;
            for (int v = 0; v < n_views; v++) w->strides[v][k - 1] = strides[v][d];
        } else {
            w->shape[k] = shape[d];
            for (int v = 0; v < n_views; v++) w->strides[v][k] = strides[v][d];
            w->ndim++;
        }
    }
    if (w->ndim == 0) { /* a scalar, or all dims of size 1: one element */
        w->ndim = 1;
        w->shape[0] = 1;
        for (int v = 0; v < n_views; v++) w->strides[v][0] = 0;
    }
}

void cpu_walk_seek(const cpu_walk *w, int64_t linear, cpu_walk_position *pos)
{
    for (int v = 0; v < w->n_views; v++) pos->offsets[v] = 0;
    if (linear == 0) { /* the common case, without a division per dim */
        for (int d = 0; d < w->ndim; d++) pos->coord[d] = 0;
        return;
    }
    for (int d = w->ndim - 1; d >= 0; d--) {
        int64_t c = w->shape[d] > 0 ? linear % w->shape[d] : 0;
        linear = w->shape[d] > 0 ? linear / w->shape[d] : 0;
        pos->coord[d] = c;
        for (int v = 0; v < w->n_views; v++) pos->offsets[v] += c * w->strides[v][d];
    }
}

/* -------------------------------------------------------- streaming stores */

void cpu_copy_out(void *dst, const void *src, size_t bytes, bool stream)
{
#if defined(__SSE2__)
    if (stream) {
        char *d = dst;
        const char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15; /* streaming stores want 16-byte aligned addresses */
        if (head > bytes) head = bytes;
        memcpy(d, s, head);
        d += head, s += head, bytes -= head;
        for (; bytes >= 64; d += 64, s += 64, bytes -= 64) { /* a cache line at a time */
            __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, s, bytes);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

void cpu_stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence(); /* streaming stores are weakly ordered: make them visible */
#endif
}
