/* Device memory: a caching allocator with size classes, a budget, statistics,
 * and upload/readback through staging buffers.
 *
 * Reuse without waiting is safe because of queue order: a block freed while
 * recorded kernels still use it can only be handed to work recorded later, and
 * uploads (queue writes, which jump ahead of unsubmitted commands) first submit
 * whatever is recorded. */
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* Size classes: 256 bytes, then four steps per power of two (waste <= 25%)
 * up to 1 MiB and eight from there (waste <= 12.5%): a large block's rounding
 * is memory a training step's peak pays in full (a [B, T, 3C] projection of
 * 72 MiB was an 80 MiB block), and eight classes per power of two still
 * serve a loop's repeated shapes from the pool. As the CPU backend's. */
static uint64_t size_class(uint64_t bytes, int *index)
{
    if (bytes <= 256) {
        *index = 0;
        return 256;
    }
    int e = 63 - __builtin_clzll(bytes - 1); /* 2^e < bytes <= 2^(e+1) */
    int steps = e >= 20 ? 8 : 4;
    uint64_t base = 1ull << e, step = base / (uint64_t)steps;
    uint64_t q = (bytes - base + step - 1) / step; /* 1..steps */
    int i = (e >= 20 ? 1 + 12 * 4 + (e - 20) * 8 : 1 + (e - 8) * 4) + (int)(q - 1);
    *index = i < WEBGPU_SIZE_CLASSES ? i : WEBGPU_SIZE_CLASSES - 1;
    return base + q * step;
}

void webgpu_allocator_init(webgpu_backend *wg) { memset(&wg->allocator, 0, sizeof(wg->allocator)); }

static void release_buffer(WGPUBuffer b);

/* Destroys the cached blocks. Recorded work may still use a block freed into
 * the cache (reuse is safe by queue order, destruction is not: submitting
 * commands that use a destroyed buffer aborts inside wgpu-native), so callers
 * outside teardown use free_cached_after_submit. */
static void free_cached(webgpu_backend *wg)
{
    webgpu_allocator *a = &wg->allocator;
    for (int i = 0; i < WEBGPU_SIZE_CLASSES; i++) {
        while (a->free_lists[i]) {
            webgpu_block *blk = a->free_lists[i];
            a->free_lists[i] = blk->next_free;
            a->stats.bytes_reserved -= blk->size;
            webgpu_bind_groups_forget(wg, blk->buffer);
            release_buffer(blk->buffer);
            free(blk);
        }
    }
}

static void release_buffer(WGPUBuffer b)
{
    wgpuBufferDestroy(b);
    wgpuBufferRelease(b);
}

/* Submits what is recorded, then destroys the cache: the implementation defers
 * destroying a buffer until the submitted work that uses it has completed.
 * Keeps the cache if the submit fails (the work is still recorded) and
 * returns why. */
static wgt_status free_cached_after_submit(webgpu_backend *wg)
{
    wgt_status s = webgpu_flush(wg);
    if (s == WGT_OK) free_cached(wg);
    return s;
}

void webgpu_allocator_destroy(webgpu_backend *wg)
{
    free_cached(wg);
    for (int i = 0; i < WEBGPU_STAGING_CACHE; i++)
        if (wg->allocator.staging[i]) release_buffer(wg->allocator.staging[i]);
}

/* A MapRead buffer of at least bytes: the smallest idle one that fits (at most
 * 4x too big), else a new one of the size class. */
static WGPUBuffer staging_take(webgpu_backend *wg, uint64_t bytes, uint64_t *size)
{
    webgpu_allocator *a = &wg->allocator;
    int best = -1;
    for (int i = 0; i < WEBGPU_STAGING_CACHE; i++)
        if (a->staging[i] && a->staging_size[i] >= bytes && a->staging_size[i] <= 4 * bytes + 4096 &&
            (best < 0 || a->staging_size[i] < a->staging_size[best]))
            best = i;
    if (best >= 0) {
        WGPUBuffer b = a->staging[best];
        *size = a->staging_size[best];
        a->staging[best] = NULL;
        return b;
    }
    int index;
    *size = size_class(bytes, &index);
    if (*size > wg->limits.maxBufferSize) *size = bytes;
    return webgpu_create_buffer(wg, *size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "wgt_tensor_read");
}

/* Returns an unmapped staging buffer to the cache, evicting the largest
 * when the cache is full or would hold more than WEBGPU_STAGING_CACHE_BYTES. */
static void staging_give_back(webgpu_backend *wg, WGPUBuffer b, uint64_t size)
{
    webgpu_allocator *a = &wg->allocator;
    int largest = -1, empty = -1;
    uint64_t held = 0;
    for (int i = 0; i < WEBGPU_STAGING_CACHE; i++) {
        if (!a->staging[i]) {
            if (empty < 0) empty = i;
        } else {
            held += a->staging_size[i];
            if (largest < 0 || a->staging_size[i] > a->staging_size[largest]) largest = i;
        }
    }
    int slot = empty >= 0 && held + size <= WEBGPU_STAGING_CACHE_BYTES ? empty : -1;
    if (slot < 0) { /* no room: keep the smaller of b and the largest held */
        if (largest < 0 || a->staging_size[largest] <= size ||
            held - a->staging_size[largest] + size > WEBGPU_STAGING_CACHE_BYTES) {
            release_buffer(b);
            return;
        }
        release_buffer(a->staging[largest]);
        slot = largest;
    }
    a->staging[slot] = b;
    a->staging_size[slot] = size;
}

wgt_status webgpu_storage_alloc(wgt_backend *b, size_t bytes, void **handle)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_allocator *a = &wg->allocator;
    int index;
    uint64_t size = size_class(bytes, &index);
    uint64_t max = wg->limits.maxBufferSize;
    if (size > max) size = (bytes + 3) & ~(uint64_t)3; /* the class would not fit: exact size */
    if (bytes > max)
        return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY,
                         "wgt_tensor: %zu bytes requested, the device allows at most %llu per buffer", bytes,
                         (unsigned long long)max);
    if (a->budget && a->stats.bytes_in_use + size > a->budget)
        return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY,
                         "wgt_tensor: %zu bytes requested, %llu available under the budget of %llu bytes", bytes,
                         (unsigned long long)(a->budget - a->stats.bytes_in_use), (unsigned long long)a->budget);
    if (wgt_fault_hit(&b->fault, WGT_FAULT_ALLOC))
        return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY,
                         "wgt_tensor: the device is out of memory for %zu bytes (injected fault)", bytes);
    a->stats.allocations++;

    /* Pool hit: a cached block of the same class. */
    webgpu_block **link = &a->free_lists[index];
    while (*link && (*link)->size != size) link = &(*link)->next_free;
    webgpu_block *blk = *link;
    if (blk) {
        *link = blk->next_free;
        a->stats.pool_hits++;
    } else {
        if (a->budget && a->stats.bytes_reserved + size > a->budget) free_cached_after_submit(wg);
        blk = calloc(1, sizeof(*blk));
        if (!blk) return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor: out of host memory");
        blk->size = size;
        WGPUBufferUsage usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
        blk->buffer = webgpu_create_pool_buffer(wg, size, usage, "wgt_tensor");
        if (!blk->buffer && wgt_context_status(b->ctx) == WGT_ERR_OUT_OF_MEMORY) {
            /* The device is full: give back the cache and try once more. */
            wgt_context_clear_error(b->ctx);
            if (free_cached_after_submit(wg) == WGT_OK) blk->buffer = webgpu_create_pool_buffer(wg, size, usage, "wgt_tensor");
        }
        if (!blk->buffer) {
            free(blk);
            if (wgt_context_status(b->ctx) == WGT_ERR_OUT_OF_MEMORY) {
                wgt_context_clear_error(b->ctx);
                return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY,
                                 "wgt_tensor: the device is out of memory for %zu bytes (%llu in use by wgtensor)",
                                 bytes, (unsigned long long)a->stats.bytes_in_use);
            }
            return wgt_context_status(b->ctx);
        }
        a->stats.device_allocations++;
        a->stats.bytes_reserved += size;
    }
    blk->requested = bytes;
    blk->next_free = NULL;
    a->stats.bytes_in_use += size;
    if (a->stats.bytes_in_use > a->stats.peak_bytes_in_use) a->stats.peak_bytes_in_use = a->stats.bytes_in_use;
    *handle = blk;
    return WGT_OK;
}

void webgpu_storage_free(wgt_backend *b, void *handle)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_block *blk = handle;
    webgpu_allocator *a = &wg->allocator;
    a->stats.bytes_in_use -= blk->size;
    int index;
    size_class(blk->size, &index);
    blk->next_free = a->free_lists[index];
    a->free_lists[index] = blk;
}

wgt_status webgpu_memory_stats(wgt_backend *b, wgt_memory_stats *stats)
{
    *stats = webgpu_of(b)->allocator.stats;
    return WGT_OK;
}

wgt_status webgpu_memory_trim(wgt_backend *b)
{
    webgpu_backend *wg = webgpu_of(b);
    /* Cached blocks may still be used by recorded work: submit it first
     * (destroying a buffer that submitted work uses is deferred by the
     * implementation); if it cannot be submitted (stuck, lost) keep the cache. */
    wgt_status s = free_cached_after_submit(wg);
    if (s != WGT_OK) return s;
    for (int i = 0; i < WEBGPU_STAGING_CACHE; i++)
        if (wg->allocator.staging[i]) {
            release_buffer(wg->allocator.staging[i]);
            wg->allocator.staging[i] = NULL;
        }
    return WGT_OK;
}

wgt_status webgpu_memory_set_budget(wgt_backend *b, uint64_t budget)
{
    webgpu_backend *wg = webgpu_of(b);
    wg->allocator.budget = budget;
    wg->allocator.stats.budget_bytes = budget;
    return WGT_OK;
}

/* ------------------------------------------------------------ upload, readback */

wgt_status webgpu_storage_write(wgt_backend *b, void *handle, size_t offset, const void *src, size_t bytes)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_block *blk = handle;
    if ((offset | bytes) & 3 || offset + bytes > blk->size)
        return wgt_error(b->ctx, WGT_ERR_INTERNAL, "webgpu upload: range %zu+%zu not aligned or beyond %llu bytes",
                         offset, bytes, (unsigned long long)blk->size);
    /* Queue writes run before unsubmitted commands: submit those first. */
    wgt_status s = webgpu_flush(wg);
    if (s != WGT_OK) return s;
    wgpuQueueWriteBuffer(wg->queue, blk->buffer, offset, src, bytes);
    wg->exec.uploads++;
    return WGT_OK;
}

/* A read in flight: the staging buffer its copy lands in, and the record
 * the map callback reports into (see webgpu_request). */
typedef struct webgpu_pending_read {
    WGPUBuffer staging;
    uint64_t staging_size;
    size_t bytes;
    webgpu_request *req;
} webgpu_pending_read;

/* Queues the copy of [offset, offset + bytes) into a staging buffer, submits
 * it and asks for the map; returns without waiting. */
wgt_status webgpu_storage_read_start(wgt_backend *b, void *handle, size_t offset, size_t bytes, void **pending)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_block *blk = handle;
    *pending = NULL;
    if ((offset | bytes) & 3 || offset + bytes > blk->size)
        return wgt_error(b->ctx, WGT_ERR_INTERNAL, "webgpu readback: range %zu+%zu not aligned or beyond %llu bytes",
                         offset, bytes, (unsigned long long)blk->size);
    /* Known stuck: fail before recording a copy into a staging buffer that
     * would be destroyed while the unsubmitted copy still uses it. */
    wgt_status s = webgpu_check_stuck(wg, "wgt_tensor_read");
    if (s != WGT_OK) return s;
    webgpu_pending_read *p = webgpu_host_alloc(wg, 1, sizeof(*p), true);
    if (!p)
        return wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_read: out of host memory (%zu bytes)", sizeof(*p));
    p->bytes = bytes;
    p->staging = staging_take(wg, bytes, &p->staging_size);
    if (!p->staging) {
        free(p);
        return wgt_context_status(b->ctx);
    }
    WGPUCommandEncoder enc = webgpu_encoder_for_copy(wg);
    wgpuCommandEncoderCopyBufferToBuffer(enc, blk->buffer, offset, p->staging, 0, bytes);
    s = webgpu_flush(wg);
    if (s == WGT_OK && wgt_fault_hit(&b->fault, WGT_FAULT_LOST_READ)) {
        webgpu_lose_device(wg, "injected fault during a read");
        s = WGT_ERR_DEVICE_LOST;
    }
    p->req = s == WGT_OK ? webgpu_request_new(wg, "wgt_tensor_read") : NULL;
    if (s == WGT_OK && !p->req) s = WGT_ERR_OUT_OF_MEMORY;
    if (s != WGT_OK) {
        release_buffer(p->staging);
        free(p);
        return s;
    }
    /* The record, not this frame, receives the callback: if the wait gives
     * up, destroying the staging buffer still fires it. */
    WGPUBufferMapCallbackInfo cb = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = webgpu_on_map_request;
    cb.userdata1 = p->req;
    wgpuBufferMapAsync(p->staging, WGPUMapMode_Read, 0, bytes, cb);
    *pending = p;
    return WGT_OK;
}

/* Whether a started read's map has completed (or failed): one poll, no wait.
 * A device known lost or stuck counts as ready, so finish reports it. */
bool webgpu_storage_read_ready(wgt_backend *b, void *pending)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_pending_read *p = pending;
    if (p->req->done || wg->device_lost) return true;
    webgpu_native_poll(wg->instance, wg->device);
    return p->req->done;
}

/* Waits for a started read, copies it to dst (NULL: drops it) and frees it. */
wgt_status webgpu_storage_read_finish(wgt_backend *b, void *pending, void *dst)
{
    webgpu_backend *wg = webgpu_of(b);
    webgpu_pending_read *p = pending;
    const size_t bytes = p->bytes;
    wgt_status s = webgpu_wait(wg, &p->req->done, "wgt_tensor_read");
    if (s == WGT_OK) {
        bool map_failed = p->req->status != (int)WGPUMapAsyncStatus_Success || wgt_fault_hit(&b->fault, WGT_FAULT_MAP);
        if (map_failed) {
            if (p->req->status == (int)WGPUMapAsyncStatus_Success) wgpuBufferUnmap(p->staging);
            s = wgt_error(b->ctx, wg->device_lost ? WGT_ERR_DEVICE_LOST : WGT_ERR_INTERNAL,
                          "wgt_tensor_read: mapping the staging buffer of %zu bytes failed: %s", bytes,
                          p->req->status == (int)WGPUMapAsyncStatus_Success ? "injected fault" : p->req->message);
        }
    }
    if (s == WGT_OK) {
        const void *mapped = dst ? wgpuBufferGetConstMappedRange(p->staging, 0, bytes) : NULL;
        if (mapped) memcpy(dst, mapped, bytes);
        else if (dst) s = wgt_error(b->ctx, WGT_ERR_INTERNAL, "wgt_tensor_read: mapped range is NULL");
        wgpuBufferUnmap(p->staging);
        wg->exec.downloads++;
    }
    /* A buffer whose map did not complete (timeout, loss) is not reused;
     * destroying it fires a pending callback into the still-live record. */
    if (s == WGT_OK) staging_give_back(wg, p->staging, p->staging_size);
    else release_buffer(p->staging);
    webgpu_request_release(p->req);
    free(p);
    return s;
}

wgt_status webgpu_storage_read(wgt_backend *b, void *handle, size_t offset, void *dst, size_t bytes)
{
    void *pending;
    wgt_status s = webgpu_storage_read_start(b, handle, offset, bytes, &pending);
    return s == WGT_OK ? webgpu_storage_read_finish(b, pending, dst) : s;
}
