/*
 * The CPU backend: the reference every other backend is checked against, and
 * the fallback when no WebGPU adapter exists. Storage is 64-byte aligned host
 * memory, kernels run synchronously on the calling thread (parallel inside with
 * OpenMP), so synchronize has nothing to wait for.
 *
 * This file holds the vtable, storage and the checks every call passes before a
 * kernel sees it; what the kernel files call back (messages, the strided walk,
 * scratch, streaming stores) is in cpu_kernel_support.c, so that the kernels
 * depend on that file and not on the backend that dispatches to them.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, madvise, RUSAGE_THREAD */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <omp.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/conv_call.h"
#include "cpu/cpu_internal.h"

/*
 * Storage is served by a caching allocator, as on the GPU (src/webgpu/memory.c):
 * sizes round up to a size class, freed blocks go on a free list per class and
 * the next request of that class takes one back. A fresh block costs the kernel
 * a page fault and the zeroing of every page on first touch, which for a large
 * elementwise op is as much time as the op itself; a reused block costs nothing.
 * Freed blocks are kept up to cache_limit bytes (a budget also bounds them);
 * memory_trim gives them all back.
 *
 * Every block carries a header with its sizes, so writes and reads can be
 * bounds-checked and statistics kept without a side table. The header is the
 * alignment unit just before the data, so the data stays 64-byte aligned.
 */
#define CPU_ALIGNMENT 64

/* Under AddressSanitizer every block comes from the C library at its own size
 * and goes straight back when freed, so a kernel that writes past its output
 * or into freed storage still reports. */
#if defined(__SANITIZE_ADDRESS__)
#define CPU_CACHING 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPU_CACHING 0
#endif
#endif
#ifndef CPU_CACHING
#define CPU_CACHING 1
#endif

/* Blocks from here up are mapped directly, 2 MiB aligned and marked for
 * transparent huge pages: fewer page faults and TLB misses on large streams. */
#define CPU_HUGE_BLOCK ((size_t)4 << 20)
#define CPU_HUGE_PAGE ((size_t)2 << 20)

struct cpu_block {
    size_t bytes;         /* as requested */
    size_t reserved;      /* the size class: usable bytes after the header */
    void *mapping;        /* start of the mmap of a huge block, else NULL (block from aligned_alloc) */
    size_t mapping_bytes;
    cpu_block *next_free; /* in its free list while cached */
    int size_class;
};
_Static_assert(sizeof(cpu_block) <= CPU_ALIGNMENT, "the block header fits in one alignment unit");

static cpu_block *block_of(void *handle)
{
    return (cpu_block *)((char *)handle - CPU_ALIGNMENT);
}

/* Size classes: 256 bytes, then four steps per power of two (waste <= 25%)
 * up to 1 MiB and eight from there (waste <= 12.5%): a large block's rounding
 * is memory a training step's peak pays in full (a [B, T, 3C] projection of
 * 72 MiB was an 80 MiB block), and eight classes per power of two still
 * serve a loop's repeated shapes from the cache. 0 when bytes is too large to
 * round up. */
static size_t size_class(size_t bytes, int *index)
{
    if (bytes <= 256) {
        *index = 0;
        return 256;
    }
    int e = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^e < bytes <= 2^(e+1) */
    if (e >= 63) return 0;
    int steps = e >= 20 ? 8 : 4;
    size_t base = (size_t)1 << e, step = base / (size_t)steps;
    size_t q = (bytes - base + step - 1) / step; /* 1..steps */
    *index = (e >= 20 ? 1 + 12 * 4 + (e - 20) * 8 : 1 + (e - 8) * 4) + (int)(q - 1);
    return base + q * step;
}

/* A new block of reserved bytes from the system, header filled but for the
 * request. */
static cpu_block *block_create(size_t reserved, int index)
{
    cpu_block *blk;
    if (CPU_CACHING && reserved >= CPU_HUGE_BLOCK) {
        /* The data starts on a huge page boundary; the header lives at the end
         * of the 4 KiB page in front of it. Map with slack, then cut it off. */
        size_t page = 4096, body = (reserved + page - 1) / page * page;
        size_t length = page + body + CPU_HUGE_PAGE;
        char *map = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) return NULL;
        char *data = (char *)(((uintptr_t)map + page + CPU_HUGE_PAGE - 1) & ~(uintptr_t)(CPU_HUGE_PAGE - 1));
        char *start = data - page, *end = data + body;
        if (start > map) munmap(map, (size_t)(start - map));
        if (map + length > end) munmap(end, (size_t)(map + length - end));
#ifdef MADV_HUGEPAGE
        madvise(data, body, MADV_HUGEPAGE); /* a hint: without THP the block works as is */
#endif
        blk = block_of(data);
        blk->mapping = start;
        blk->mapping_bytes = page + body;
    } else {
        char *mem = aligned_alloc(CPU_ALIGNMENT, reserved + CPU_ALIGNMENT);
        if (!mem) return NULL;
        blk = (cpu_block *)mem;
        blk->mapping = NULL;
        blk->mapping_bytes = 0;
    }
    blk->reserved = reserved;
    blk->size_class = index;
    blk->next_free = NULL;
    return blk;
}

static void block_destroy(cpu_block *blk)
{
    if (blk->mapping) munmap(blk->mapping, blk->mapping_bytes);
    else free(blk);
}

/* Gives every cached block back to the system. */
static void free_cached(cpu_backend *b)
{
    for (int i = 0; i < CPU_SIZE_CLASSES; i++) {
        while (b->free_lists[i]) {
            cpu_block *blk = b->free_lists[i];
            b->free_lists[i] = blk->next_free;
            b->memory.bytes_reserved -= blk->reserved;
            block_destroy(blk);
        }
    }
}

/* ------------------------------------------------------------- call checks */

/* A view is sound when its dtype and rank are valid, its shape is not negative
 * and every element it can address lies inside its storage. */
static wgt_status check_view(cpu_backend *b, const wgt_kernel_call *call, const wgt_tensor_view *v, const char *what)
{
    if ((unsigned)v->dtype >= WGT_DTYPE_COUNT) return cpu_fail(b, call, WGT_ERR_DTYPE, "%s has an invalid dtype %d", what, (int)v->dtype);
    if (v->ndim < 0 || v->ndim > WGT_MAX_DIMS) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%s has rank %d, outside 0..%d", what, v->ndim, WGT_MAX_DIMS);
    int64_t low, high;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] < 0) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%s has a negative dim %d", what, d);
        if (v->shape[d] == 0) return WGT_OK; /* addresses nothing */
    }
    /* Checked arithmetic: an extent that overflows int64 is outside any storage. */
    if (!wgt_view_extent(v, &low, &high))
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%s has an extent past 2^63 elements", what);
    if (!v->storage || !v->storage->handle) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%s has no storage", what);
    size_t size = cpu_dtype_size(v->dtype);
    if (low < 0 || (uint64_t)high >= v->storage->bytes / size) {
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT,
                        "%s addresses elements %lld..%lld, outside its storage of %zu bytes", what,
                        (long long)low, (long long)high, v->storage->bytes);
    }
    return WGT_OK;
}

static wgt_status check_call(cpu_backend *b, const wgt_kernel_call *call)
{
    static const int expected_outputs[WGT_KERNEL_COUNT] = {1, 1, 1, 1, 1, 1, 1, 2,
        [WGT_KERNEL_ATTENTION] = 2, [WGT_KERNEL_ATTENTION_BACKWARD] = 3, [WGT_KERNEL_ROPE] = 1,
        [WGT_KERNEL_NN] = 1, [WGT_KERNEL_QMATMUL] = 1, [WGT_KERNEL_QROWS] = 2};
    static const int expected_inputs[WGT_KERNEL_COUNT] = {-1, 1, 1, 1, 2, 2, 2, 1,
        [WGT_KERNEL_ATTENTION] = 3, [WGT_KERNEL_ATTENTION_BACKWARD] = 6, [WGT_KERNEL_ROPE] = 1,
        [WGT_KERNEL_NN] = -1, [WGT_KERNEL_QMATMUL] = 3, [WGT_KERNEL_QROWS] = 1};
    if ((unsigned)call->kind >= WGT_KERNEL_COUNT) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "unknown kernel kind %d", (int)call->kind);
    int n_in = expected_inputs[call->kind];
    if (call->kind == WGT_KERNEL_ELEMENTWISE) {
        if (!call->expr) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "elementwise call without an expression");
        n_in = call->n_inputs;
        if (n_in < 0 || n_in > WGT_MAX_KERNEL_INPUTS) return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%d inputs, at most %d", n_in, WGT_MAX_KERNEL_INPUTS);
    }
    bool n_out_dequantize = false;
    if (call->kind == WGT_KERNEL_MATMUL && call->n_inputs == 3) n_in = 3; /* with a bias */
    if (call->kind == WGT_KERNEL_MATMUL && call->matmul.rope) n_in = 4;    /* the norm weight and the rope table */
    if (call->kind == WGT_KERNEL_QMATMUL && (call->quant.norm || call->quant.bias)) n_in = 4; /* its norm weight or bias */
    if (call->kind == WGT_KERNEL_QMATMUL && call->quant.rope) n_in = 5;                        /* and the rope table */
    if (call->kind == WGT_KERNEL_QROWS && call->quant.dequantize) n_in = 2, n_out_dequantize = true;
    if (call->kind == WGT_KERNEL_ATTENTION && call->n_inputs == 5) n_in = 5; /* 8-bit keys and values */
    int n_out = call->kind == WGT_KERNEL_NN ? cpu_nn_output_count(call) : expected_outputs[call->kind];
    if (n_out_dequantize) n_out = 1;
    if (call->kind == WGT_KERNEL_NN) n_in = cpu_nn_input_count(call);
    if (call->kind == WGT_KERNEL_CONV) n_in = wgt_conv_call_inputs(call), n_out = wgt_conv_call_outputs(call);
    if (call->n_inputs != n_in || call->n_outputs < n_out) {
        return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "%d inputs and %d outputs, expected %d and %d",
                        call->n_inputs, call->n_outputs, n_in, n_out);
    }
    char what[32];
    for (int i = 0; i < n_in; i++) {
        snprintf(what, sizeof what, "input %d", i);
        wgt_status s = check_view(b, call, &call->inputs[i], what);
        if (s) return s;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(what, sizeof what, "output %d", i);
        wgt_status s = check_view(b, call, &call->outputs[i], what);
        if (s) return s;
    }
    return WGT_OK;
}

/* ---------------------------------------------------------------- supports */

static bool dtype_in(wgt_dtype dtype, unsigned mask) { return (unsigned)dtype < WGT_DTYPE_COUNT && (mask >> dtype) & 1u; }
#define DTYPE_BIT(d) (1u << (d))
#define ANY_DTYPE (DTYPE_BIT(WGT_F32) | DTYPE_BIT(WGT_F16) | DTYPE_BIT(WGT_I32) | DTYPE_BIT(WGT_U8) | DTYPE_BIT(WGT_BOOL))
#define FLOAT_DTYPES (DTYPE_BIT(WGT_F32) | DTYPE_BIT(WGT_F16))

static bool cpu_supports(wgt_backend *base, const wgt_kernel_call *call)
{
    if (!call || (unsigned)call->kind >= WGT_KERNEL_COUNT) return false;
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    switch (call->kind) {
    case WGT_KERNEL_ELEMENTWISE:
        if (!call->expr || call->n_inputs < 0 || call->n_inputs > WGT_MAX_KERNEL_INPUTS) return false;
        for (int i = 0; i < call->n_inputs; i++) {
            if (!dtype_in(call->inputs[i].dtype, ANY_DTYPE)) return false;
        }
        return dtype_in(out->dtype, ANY_DTYPE);
    case WGT_KERNEL_REDUCE:
        if ((unsigned)call->reduce >= WGT_REDUCE_COUNT || !dtype_in(x->dtype, ANY_DTYPE)) return false;
        if (call->reduce == WGT_REDUCE_ARGMAX || call->reduce == WGT_REDUCE_ARGMIN) return out->dtype == WGT_I32;
        return dtype_in(out->dtype, ANY_DTYPE);
    case WGT_KERNEL_CUMSUM:
        return dtype_in(x->dtype, ANY_DTYPE) && dtype_in(out->dtype, ANY_DTYPE);
    case WGT_KERNEL_SOFTMAX:
        return dtype_in(x->dtype, FLOAT_DTYPES) && dtype_in(out->dtype, FLOAT_DTYPES);
    case WGT_KERNEL_MATMUL:
        if (call->matmul.attention) return false; /* its op runs the two calls it stands for */
        if (call->matmul.gelu_grad) return wgt_matmul_gelu_grad_call_valid(call);
        /* a bias of a's dtype, or f32 (wgt_linear_ex: the residual stream), or f16 beside an f16 operand;
         * with norm inputs[2] is an f32 norm weight for f32 a */
        if (call->matmul.rope && (!call->matmul.norm || call->n_inputs != 4 || call->inputs[3].ndim != 2 ||
                                  call->inputs[3].shape[0] != 4 || !dtype_in(call->inputs[3].dtype, FLOAT_DTYPES)))
            return false;
        if (call->matmul.norm &&
            (call->n_inputs != 3 + call->matmul.rope || x->dtype != WGT_F32 || call->inputs[2].dtype != WGT_F32))
            return false;
        if (call->n_inputs == 3 && !call->matmul.norm &&
            (x->dtype == WGT_I32 ||
             (call->inputs[2].dtype != x->dtype && call->inputs[2].dtype != WGT_F32 &&
              !(call->inputs[2].dtype == WGT_F16 && call->inputs[1].dtype == WGT_F16))))
            return false;
        if (x->dtype != call->inputs[1].dtype) /* f32 x f16 either order (wgt_matmul_ex), f32 or f16 out */
            return dtype_in(x->dtype, FLOAT_DTYPES) && dtype_in(call->inputs[1].dtype, FLOAT_DTYPES) &&
                   dtype_in(out->dtype, FLOAT_DTYPES);
        return dtype_in(x->dtype, FLOAT_DTYPES | DTYPE_BIT(WGT_I32)) && call->inputs[1].dtype == x->dtype &&
               (out->dtype == x->dtype || (x->dtype == WGT_F16 && out->dtype == WGT_F32));
    case WGT_KERNEL_ATTENTION:
    case WGT_KERNEL_ATTENTION_BACKWARD:
    case WGT_KERNEL_ROPE:
        return cpu_attention_supports(call);
    case WGT_KERNEL_GATHER:
        return dtype_in(x->dtype, ANY_DTYPE) && call->inputs[1].dtype == WGT_I32 && out->dtype == x->dtype;
    case WGT_KERNEL_SCATTER_ADD:
        return call->inputs[0].dtype == WGT_I32 && dtype_in(out->dtype, DTYPE_BIT(WGT_F32) | DTYPE_BIT(WGT_I32)) &&
               call->inputs[1].dtype == out->dtype;
    case WGT_KERNEL_TOPK:
        return dtype_in(x->dtype, ANY_DTYPE) && out->dtype == x->dtype && call->outputs[1].dtype == WGT_I32;
    case WGT_KERNEL_NN:
        return cpu_nn_supports(call);
    case WGT_KERNEL_CONV:
        return cpu_conv_supports(call);
    case WGT_KERNEL_OPTIMIZER:
        return cpu_optimizer_supports(call);
    case WGT_KERNEL_QMATMUL:
        return !call->quant.attention && cpu_quant_supports(call); /* attention: its op composes */
    case WGT_KERNEL_QROWS:
        return cpu_quant_rows_supports(call);
    default:
        return false;
    }
}

/* ------------------------------------------------------------ shared cores */

/* libgomp's default wait policy spins (about 300,000 pauses) at every barrier
 * and between parallel regions. On cores another process also wants, a
 * spinning thread burns the time slice the thread with work needs: a BERT
 * forward pass went from 2.5 s to 14 s. The policy is read once when libgomp
 * loads (OMP_WAIT_POLICY=passive fixes it, but a library cannot set it), so
 * wgtensor adapts the thread count instead: every 25 ms it looks at how often
 * the calling thread was preempted; above CPU_CONTENDED_SWITCHES per second the
 * cores are shared and the team halves (down to 1, which neither spins nor
 * waits on a descheduled thread) for half a second, then probes upward again
 * (backing off to 8 s while the cores stay busy). An explicit cpu_threads, OMP_NUM_THREADS or OMP_WAIT_POLICY turns it
 * off. */
#define CPU_CONTENDED_SWITCHES 50.0 /* per second (and at least 2 a window); idle shows ~0 */
#define CPU_CONTENTION_WINDOW_MS 25.0
#define CPU_CONTENTION_HOLD_MS 500.0      /* first hold; doubles while probes find the cores busy */
#define CPU_CONTENTION_HOLD_MAX_MS 8000.0

static double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void cpu_adapt_threads(cpu_backend *b)
{
    cpu_contention *c = &b->contention;
    if (!c->enabled) return;
    double now = monotonic_ms();
    double elapsed = now - c->window_start_ms;
    if (elapsed < CPU_CONTENTION_WINDOW_MS) return;
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        c->enabled = false;
        b->threads = c->max_threads;
        return;
    }
    long switches = ru.ru_nivcsw - c->window_switches; /* < 0: another thread calls now */
    c->window_switches = ru.ru_nivcsw;
    c->window_start_ms = now;
    if (elapsed > 10 * CPU_CONTENTION_WINDOW_MS) return; /* idle gap: no evidence either way */
    if (switches >= 2 && (double)switches * 1000.0 / elapsed > CPU_CONTENDED_SWITCHES) {
        /* a probe upward that meets busy cores again waits twice as long next time */
        c->hold_ms = c->probing ? fmin(2 * c->hold_ms, CPU_CONTENTION_HOLD_MAX_MS) : CPU_CONTENTION_HOLD_MS;
        b->threads = b->threads > 1 ? b->threads / 2 : 1;
        c->hold_until_ms = now + c->hold_ms;
        c->probing = false;
    } else if (now >= c->hold_until_ms && b->threads < c->max_threads) {
        b->threads = b->threads * 2 < c->max_threads ? b->threads * 2 : c->max_threads;
        c->probing = true;
    } else if (c->probing && b->threads == c->max_threads) {
        c->probing = false; /* a quiet window at full strength: the cores are free */
    }
}

/* --------------------------------------------------------------------- run */

static wgt_status cpu_run(wgt_backend *base, const wgt_kernel_call *call)
{
    cpu_backend *b = (cpu_backend *)base;
    cpu_adapt_threads(b);
    if (!call) return wgt_error(base->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_run_kernel: NULL kernel call (cpu backend)");
    if (call->kind == WGT_KERNEL_OPTIMIZER) return cpu_run_optimizer(b, call); /* checks its own views */
    wgt_status status = check_call(b, call);
    if (status) return status;
    if (!cpu_supports(base, call)) {
        return cpu_fail(b, call, WGT_ERR_UNSUPPORTED, "kernel not supported for input dtype %s, output dtype %s",
                        wgt_dtype_name(call->inputs[0].dtype), wgt_dtype_name(call->outputs[0].dtype));
    }
    b->execution.dispatches++;
    switch (call->kind) {
    case WGT_KERNEL_ELEMENTWISE: return cpu_run_elementwise(b, call);
    case WGT_KERNEL_REDUCE: return cpu_run_reduce(b, call);
    case WGT_KERNEL_CUMSUM: return cpu_run_cumsum(b, call);
    case WGT_KERNEL_SOFTMAX: return cpu_run_softmax(b, call);
    case WGT_KERNEL_MATMUL: return cpu_run_matmul(b, call);
    case WGT_KERNEL_GATHER: return cpu_run_gather(b, call);
    case WGT_KERNEL_SCATTER_ADD: return cpu_run_scatter_add(b, call);
    case WGT_KERNEL_TOPK: return cpu_run_topk(b, call);
    case WGT_KERNEL_NN: return cpu_run_nn(b, call);
    case WGT_KERNEL_CONV: return cpu_run_conv(b, call);
    case WGT_KERNEL_QMATMUL: return cpu_run_qmatmul(b, call);
    case WGT_KERNEL_QROWS: return cpu_run_quant_rows(b, call);
    case WGT_KERNEL_ATTENTION: return cpu_run_attention(b, call);
    case WGT_KERNEL_ATTENTION_BACKWARD: return cpu_run_attention_backward(b, call);
    case WGT_KERNEL_ROPE: return cpu_run_rope(b, call);
    default: return cpu_fail(b, call, WGT_ERR_INVALID_ARGUMENT, "unknown kernel kind");
    }
}

static wgt_status cpu_synchronize(wgt_backend *base)
{
    return WGT_OK; /* every kernel has finished when run() returns */
}

/* ----------------------------------------------------------------- storage */

static wgt_status cpu_storage_alloc(wgt_backend *base, size_t bytes, void **handle)
{
    cpu_backend *b = (cpu_backend *)base;
    *handle = NULL;
    int index = 0;
    size_t reserved = !bytes ? 0 : CPU_CACHING ? size_class(bytes, &index) : (bytes + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
    if (reserved == 0 || reserved > SIZE_MAX - CPU_HUGE_PAGE - 4096) {
        return wgt_error(base->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_storage_alloc: cannot allocate %zu bytes (cpu backend)", bytes);
    }
    if (wgt_fault_hit(&base->fault, WGT_FAULT_ALLOC))
        return wgt_error(base->ctx, WGT_ERR_OUT_OF_MEMORY,
                         "wgt_storage_alloc: %zu bytes requested, host allocation failed (injected fault, cpu backend)",
                         bytes);
    if (b->budget_bytes && b->memory.bytes_in_use + reserved > b->budget_bytes) {
        uint64_t available = b->budget_bytes > b->memory.bytes_in_use ? b->budget_bytes - b->memory.bytes_in_use : 0;
        return wgt_error(base->ctx, WGT_ERR_OUT_OF_MEMORY,
                         "wgt_storage_alloc: %zu bytes requested, %llu of the %llu-byte budget available (cpu backend)",
                         bytes, (unsigned long long)available, (unsigned long long)b->budget_bytes);
    }
    cpu_block *blk = b->free_lists[index]; /* every block of a class has the class's size */
    if (blk) {
        b->free_lists[index] = blk->next_free;
        b->memory.pool_hits++;
    } else {
        /* The cache counts against the budget: give it back before going over. */
        if (b->budget_bytes && b->memory.bytes_reserved + reserved > b->budget_bytes) free_cached(b);
        blk = block_create(reserved, index);
        if (!blk && b->memory.bytes_reserved > b->memory.bytes_in_use) { /* the system is full: retry without the cache */
            free_cached(b);
            blk = block_create(reserved, index);
        }
        if (!blk) {
            return wgt_error(base->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_storage_alloc: %zu bytes requested, host allocation failed (cpu backend)", bytes);
        }
        b->memory.device_allocations++;
        b->memory.bytes_reserved += reserved;
    }
    blk->bytes = bytes;
    blk->next_free = NULL;
    b->memory.allocations++;
    b->memory.bytes_in_use += reserved;
    if (b->memory.bytes_in_use > b->memory.peak_bytes_in_use) b->memory.peak_bytes_in_use = b->memory.bytes_in_use;
    *handle = (char *)blk + CPU_ALIGNMENT;
    return WGT_OK;
}

static void cpu_storage_free(wgt_backend *base, void *handle)
{
    cpu_backend *b = (cpu_backend *)base;
    if (!handle) return;
    cpu_block *blk = block_of(handle);
    b->memory.bytes_in_use -= blk->reserved;
    uint64_t cached = b->memory.bytes_reserved - b->memory.bytes_in_use;
    bool over_budget = b->budget_bytes && b->memory.bytes_reserved > b->budget_bytes;
    if (cached > b->cache_limit || over_budget) { /* the block itself does not fit in the cache */
        b->memory.bytes_reserved -= blk->reserved;
        block_destroy(blk);
        return;
    }
    blk->next_free = b->free_lists[blk->size_class];
    b->free_lists[blk->size_class] = blk;
}

static wgt_status check_range(wgt_backend *base, const char *op, void *handle, size_t offset, const void *host, size_t bytes)
{
    if (!handle || (!host && bytes)) return wgt_error(base->ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL storage or host pointer (cpu backend)", op);
    size_t size = block_of(handle)->bytes;
    if (offset > size || bytes > size - offset) {
        return wgt_error(base->ctx, WGT_ERR_INVALID_ARGUMENT, "%s: bytes %zu..%zu outside storage of %zu bytes (cpu backend)",
                         op, offset, offset + bytes, size);
    }
    return WGT_OK;
}

static wgt_status cpu_storage_write(wgt_backend *base, void *handle, size_t offset, const void *src, size_t bytes)
{
    wgt_status s = check_range(base, "wgt_tensor_write", handle, offset, src, bytes);
    if (s) return s;
    if (bytes) memcpy((char *)handle + offset, src, bytes);
    ((cpu_backend *)base)->execution.uploads++;
    return WGT_OK;
}

static wgt_status cpu_storage_read(wgt_backend *base, void *handle, size_t offset, void *dst, size_t bytes)
{
    wgt_status s = check_range(base, "wgt_tensor_read", handle, offset, dst, bytes);
    if (s) return s;
    if (bytes) memcpy(dst, (char *)handle + offset, bytes);
    ((cpu_backend *)base)->execution.downloads++;
    return WGT_OK;
}

/* ------------------------------------------------------- info and statistics */

/* Value of "key : value" from /proc/cpuinfo, or fallback. */
static void read_cpuinfo(const char *key, char *out, size_t size, const char *fallback)
{
    snprintf(out, size, "%s", fallback);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t key_length = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, key_length) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t') value++;
        value[strcspn(value, "\n")] = '\0';
        snprintf(out, size, "%s", value);
        break;
    }
    fclose(f);
}

static wgt_status cpu_adapter_info(wgt_backend *base, wgt_adapter_info *info)
{
    cpu_backend *b = (cpu_backend *)base;
    if (!info) return wgt_error(base->ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_context_adapter_info: NULL info (cpu backend)");
    memset(info, 0, sizeof *info);
    info->index = -1; /* not one of the WebGPU adapters */
    read_cpuinfo("model name", info->name, sizeof info->name, "CPU");
    read_cpuinfo("vendor_id", info->vendor, sizeof info->vendor, "unknown");
    struct utsname machine;
    snprintf(info->architecture, sizeof info->architecture, "%.63s", uname(&machine) == 0 ? machine.machine : "unknown");
#ifdef OPENBLAS_VERSION
    snprintf(info->driver, sizeof info->driver, "%d threads, %s", b->threads, openblas_get_config());
#else
    snprintf(info->driver, sizeof info->driver, "%d threads, CBLAS", b->threads);
#endif
    snprintf(info->backend, sizeof info->backend, "CPU");
    info->type = WGT_ADAPTER_CPU;
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    uint64_t memory = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : UINT64_MAX;
    /* Only the limits that mean something on a CPU; workgroup limits stay 0. */
    info->limits.max_buffer_size = memory;
    info->limits.max_storage_buffer_binding_size = memory;
    info->limits.max_storage_buffers_per_shader_stage = WGT_MAX_KERNEL_INPUTS + 2;
    info->limits.min_storage_buffer_offset_alignment = 4;
    info->limits.min_uniform_buffer_offset_alignment = 4;
    return WGT_OK;
}

static wgt_status cpu_memory_stats(wgt_backend *base, wgt_memory_stats *stats)
{
    cpu_backend *b = (cpu_backend *)base;
    *stats = b->memory;
    stats->budget_bytes = b->budget_bytes;
    return WGT_OK;
}

static wgt_status cpu_execution_stats(wgt_backend *base, wgt_execution_stats *stats)
{
    *stats = ((cpu_backend *)base)->execution;
    return WGT_OK;
}

static wgt_status cpu_memory_trim(wgt_backend *base)
{
    cpu_backend *b = (cpu_backend *)base;
    free_cached(b); /* kernels have all finished: nothing cached is in use */
    free(b->scratch);
    b->scratch = NULL;
    b->scratch_bytes = 0;
    return WGT_OK;
}

static wgt_status cpu_memory_set_budget(wgt_backend *base, uint64_t budget_bytes)
{
    cpu_backend *b = (cpu_backend *)base;
    b->budget_bytes = budget_bytes;
    if (budget_bytes && b->memory.bytes_reserved > budget_bytes) free_cached(b);
    return WGT_OK;
}

static void cpu_destroy(wgt_backend *base)
{
    cpu_memory_trim(base);
    free(base);
}

static const wgt_backend_vtable cpu_vtable = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .adapter_info = cpu_adapter_info,
    .storage_alloc = cpu_storage_alloc,
    .storage_free = cpu_storage_free,
    .storage_write = cpu_storage_write,
    .storage_read = cpu_storage_read,
    .supports = cpu_supports,
    .run = cpu_run,
    .synchronize = cpu_synchronize,
    .memory_stats = cpu_memory_stats,
    .pipeline_stats = NULL,   /* no pipelines to cache */
    .execution_stats = cpu_execution_stats,
    .memory_trim = cpu_memory_trim,
    .memory_set_budget = cpu_memory_set_budget,
    .custom_kernel = NULL,    /* WGSL needs the WebGPU backend */
};

/* Freed storage kept for reuse: an eighth of physical memory, at least 256 MiB
 * (none under AddressSanitizer). */
static uint64_t default_cache_limit(void)
{
#if !CPU_CACHING
    return 0;
#else
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    uint64_t memory = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    uint64_t limit = memory / 8;
    return limit > ((uint64_t)256 << 20) ? limit : (uint64_t)256 << 20;
#endif
}

wgt_backend *wgt_cpu_backend_create(wgt_context *ctx, const wgt_context_options *options)
{
    cpu_backend *b = calloc(1, sizeof *b);
    if (!b) {
        wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_context_create: cannot allocate the cpu backend");
        return NULL;
    }
    b->base.vt = &cpu_vtable;
    b->base.ctx = ctx;
    wgt_fault_from_environment(&b->base.fault);
    int requested = options ? options->cpu_threads : 0;
    b->threads = requested > 0 ? requested : omp_get_max_threads();
    if (b->threads < 1) b->threads = 1;
    b->contention.max_threads = b->threads;
    b->contention.enabled = requested <= 0 && b->threads > 1 && !getenv("OMP_NUM_THREADS") &&
                            !getenv("OMP_WAIT_POLICY") && !getenv("WGT_CPU_FIXED_THREADS");
    b->contention.window_start_ms = monotonic_ms();
#ifdef OPENBLAS_VERSION
    /* Products run on the backend's OpenMP threads, one BLAS call per thread
     * (cpu_matmul.c says why); OpenBLAS's own pool would only compete. Its
     * thread count is process-wide. */
    openblas_set_num_threads(1);
#endif
    b->budget_bytes = options ? options->memory_budget_bytes : 0;
    b->cache_limit = default_cache_limit();
    return &b->base;
}
