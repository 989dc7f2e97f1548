/*
 * The WebGPU backend's private contract, shared by its files:
 *
 *   native_extras.c     the only file that includes wgpu.h (wgpu-native
 *                       extensions: adapter enumeration, polling, unchecked
 *                       shader modules, version); a Dawn build replaces it alone
 *   device.c            instance, adapters, selection, device and callbacks,
 *                       teardown (a stuck device is parked, not waited for)
 *   waits.c             request records, progress-based deadlines, stuck state,
 *                       device loss, error scopes
 *   memory.c            caching allocator with size classes, staging, upload/readback
 *   buffer_create.c     device buffer creation (error scope, out-of-memory)
 *   pipeline_cache.c    shader modules + compute pipelines keyed by a string
 *   execution.c         open encoder/pass batching, parameter ring, bind-group
 *                       cache, dispatch
 *   temporaries.c       device temporaries (allocate, release)
 *   f32_views.c         f16 calls of the f32-only families through temporaries
 *   host_helpers.c      string views and the monotonic clock
 *   profiler.c          timestamp queries, per-op report, trace file
 *   profiler_control.c  the user's profiler calls (enable, report, trace)
 *   tuner.c             GEMM autotuning and its on-disk cache
 *   knobs.c             the kernel-choice environment knobs, read once at creation
 *   custom_kernel.c     caller-supplied WGSL
 *   webgpu_backend.c    the vtable; routes kernel calls to the family files
 *   webgpu_<family>.c   kernels: elementwise (+ _codegen: generated WGSL),
 *                       transpose, reduce (+ scan, softmax), matmul, indexing
 *
 * Kernel binding convention (every built-in kernel follows it):
 *   @group(0) @binding(0) var<uniform> params: Params;   (dynamic offset into the ring)
 *   @group(0) @binding(1..n_read_only)                    var<storage, read>
 *   @group(0) @binding(n_read_only+1..n_read_only+n_read_write) var<storage, read_write>
 * Params is at most WEBGPU_PARAMS_MAX bytes. Buffers are bound whole; views reach
 * their elements through offsets and strides carried in Params.
 */
#ifndef WGT_WEBGPU_INTERNAL_H
#define WGT_WEBGPU_INTERNAL_H

#include <stdio.h>
#include <webgpu.h>

#include "core/internal.h"
#include "webgpu/knobs.h"
#include "webgpu/tune_bucket.h"

#define WEBGPU_PARAMS_MAX 1024          /* bytes of one dispatch's uniform block */
#define WEBGPU_RING_BYTES (1u << 20)    /* parameter ring per batch */
#define WEBGPU_MAX_BINDINGS 8           /* storage buffers per built-in kernel */
#define WEBGPU_BATCH_DISPATCHES 64      /* submit after this many dispatches (the GPU
                                          starts on a batch while the next is recorded);
                                          64, not 256: an H100 decoded a 1B Llama at 406
                                          tokens/s against 234, since the GPU starts on a
                                          token's first layers while the rest is recorded */
#define WEBGPU_BATCH_DISPATCHES_MAX 256 /* the most WGT_BATCH_DISPATCHES may ask for */
/* Bind groups kept for reuse (execution.c), direct-mapped over
 * WEBGPU_BIND_GROUP_SLOTS slots (WGT_BIND_GROUP_CACHE=n picks fewer, for
 * comparison). A Llama-1B decode token (149 dispatches) created ~100 bind
 * groups with 256 slots and ~30 with 4096; on an H100, 5 alternating runs of
 * each gave 4096 slots +10% decode tokens/s (docs/performance.md). */
#define WEBGPU_BIND_GROUP_CACHE 4096
#define WEBGPU_BIND_GROUP_SLOTS 4096
#define WEBGPU_SIZE_CLASSES 256

/* ------------------------------------------------------------------ memory */

/* A device buffer block handed out as wgt_storage->handle. */
typedef struct webgpu_block {
    WGPUBuffer buffer;
    uint64_t size;                      /* size class (bytes of the buffer) */
    uint64_t requested;
    struct webgpu_block *next_free;
} webgpu_block;

/* Idle readback buffers kept for reuse, and the bytes they may hold: data-
 * parallel training starts a read per gradient tensor during backward
 * (GPT-2 small: ~150 reads, 343 MB in flight); with 4 kept, each step
 * created the rest as new mappable buffers (docs/design.md). */
#define WEBGPU_STAGING_CACHE 256
#define WEBGPU_STAGING_CACHE_BYTES ((uint64_t)1 << 30)
#define WEBGPU_INDEX_CHECKS 16          /* indexing dispatches named in an out-of-range report */

typedef struct webgpu_allocator {
    webgpu_block *free_lists[WEBGPU_SIZE_CLASSES];
    WGPUBuffer staging[WEBGPU_STAGING_CACHE];   /* idle MapRead buffers for readback */
    uint64_t staging_size[WEBGPU_STAGING_CACHE];
    wgt_memory_stats stats;
    uint64_t budget;                    /* 0: none */
} webgpu_allocator;

/* ----------------------------------------------------------------- pipelines */

typedef struct webgpu_pipeline {
    char *key;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout layout;
    int n_storage;                      /* storage bindings */
    bool has_params;
    struct webgpu_pipeline *next;       /* hash chain */
} webgpu_pipeline;

#define WEBGPU_PIPELINE_BUCKETS 1024

typedef struct webgpu_pipeline_cache {
    webgpu_pipeline *buckets[WEBGPU_PIPELINE_BUCKETS];
    wgt_pipeline_stats stats;
} webgpu_pipeline_cache;

/* ----------------------------------------------------------------- backend */

typedef struct webgpu_profiler webgpu_profiler; /* profiler.c */
typedef struct webgpu_device_link webgpu_device_link; /* device.c */

/* The result of one asynchronous request (map, device request, error scope),
 * shared by the waiter and the callback: each holds a reference and whichever
 * finishes last frees it. A waiter that gives up (timeout, device loss) just
 * drops its reference; the callback, whenever the implementation fires it
 * (a later poll, the buffer's destruction, the device's), writes into memory
 * that is still alive. Never put a callback's target on the stack. */
typedef struct webgpu_request {
    int refs;
    volatile bool done;
    int status;                         /* the callback's status enum */
    int error_type;                     /* error scopes: WGPUErrorType */
    WGPUDevice device;                  /* device requests: owned until taken */
    char message[512];
} webgpu_request;

/* Completed submissions, counted by one callback per submit (the deadline's
 * notion of progress); reference counted like a request. */
typedef struct webgpu_progress {
    int refs;
    uint64_t completed;
} webgpu_progress;

/* A bind group for (layout, buffers), reused while those buffers live: creating
 * one per dispatch is a large part of a small op's host cost. */
typedef struct webgpu_bind_group_entry {
    WGPUBindGroupLayout layout;
    int n_buffers;
    WGPUBuffer buffers[WEBGPU_MAX_BINDINGS];
    WGPUBindGroup group;
} webgpu_bind_group_entry;

typedef struct webgpu_backend {
    wgt_backend base;
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    wgt_adapter_info info;
    WGPULimits limits;                  /* as granted to the device */
    bool has_f16, has_subgroups, has_timestamps;
    bool has_int64;                     /* u64 in shaders (wgpu-native's ShaderInt64): philox_mul64.wgsl */
    uint32_t timeout_ms;
    webgpu_knobs knobs;                 /* kernel-choice knobs, read from the environment at creation (knobs.h) */

    webgpu_allocator allocator;
    webgpu_pipeline_cache pipelines;

    /* open batch */
    WGPUCommandEncoder encoder;
    WGPUComputePassEncoder pass;
    uint32_t batch_dispatches;
    WGPUBuffer ring;                    /* uniform parameters, WEBGPU_RING_BYTES + slack */
    unsigned char *ring_shadow;         /* host copy written at submit */
    uint32_t ring_used;
    wgt_execution_stats exec;
    webgpu_bind_group_entry bind_groups[WEBGPU_BIND_GROUP_CACHE];
    struct webgpu_recent_pipeline {     /* elementwise: binary plan key -> pipeline, */
        uint64_t hash;                  /* skipping the text key on the hot path */
        size_t size;
        unsigned char *key;
        webgpu_pipeline *pipeline;
    } recent_pipelines[64];
    const char *current_op;             /* op of the dispatch being recorded */
    const char *matmul_force;           /* tuner: the tiled config being timed */
    char matmul_tuned[WEBGPU_TUNE_BUCKETS][32]; /* tuned config per size bucket ("" = heuristic) */
    webgpu_profiler *profiler;          /* NULL unless profiling */
    /* out-of-range indices (webgpu_indexing.c): a device flag the gather and
     * scatter_add kernels set, read at the next read-back or synchronize */
    struct webgpu_index_check {
        webgpu_block flag;              /* 4 words; buffer NULL until first needed */
        int pending;                    /* checked dispatches since the last read */
        struct { char op[40]; int axis; int64_t axis_len; } calls[WEBGPU_INDEX_CHECKS];
    } index_check;

    /* error scope results land here (callbacks) */
    bool device_lost;
    struct webgpu_device_link *link;    /* the device callbacks' way back here (device.c) */

    /* deadlines (device.c) */
    webgpu_progress *progress;          /* completions of our submissions */
    uint64_t submitted;                 /* submissions made */
    bool stuck;                         /* a wait timed out: fail fast until... */
    uint64_t stuck_until;               /* ...this many submissions have completed */
} webgpu_backend;

/* The WGSL file that defines philox_mul_wide() for philox.wgsl: one 64-bit
 * product where the device has 64-bit integers, else 16-bit halves. */
static inline const char *webgpu_philox_mul_file(const webgpu_backend *wg)
{
    return wg->has_int64 ? "philox_mul64" : "philox_mul16";
}

static inline webgpu_backend *webgpu_of(wgt_backend *b) { return (webgpu_backend *)b; }

/* webgpu_indexing.c: turns an out-of-range index recorded by a gather or
 * scatter_add kernel since the last call into WGT_ERR_INVALID_ARGUMENT naming
 * the op (the vtable's read-back and synchronize, webgpu_backend.c, call it after
 * their wait); frees the flag. */
wgt_status webgpu_indexing_check(webgpu_backend *wg);
/* webgpu_limits.c: every view of call within the storage binding limit, else
 * WGT_ERR_UNSUPPORTED naming the operand, shape, dtype, sizes and the limit. */
wgt_status webgpu_check_binding_limits(webgpu_backend *wg, const wgt_kernel_call *call);
void webgpu_indexing_destroy(webgpu_backend *wg);

/* -------------------------------------------------------------- native_extras.c */
/* Enumerates every adapter of every backend; returns the count and fills
 * adapters (caller releases each) when adapters != NULL. */
/* An instance on Vulkan/Metal/D3D12, plus OpenGL when include_gl. */
WGPUInstance webgpu_native_create_instance(bool include_gl);
size_t webgpu_native_enumerate_adapters(WGPUInstance instance, WGPUAdapter *adapters, size_t capacity);
/* Non-blocking: lets the implementation make progress and fire callbacks. */
void webgpu_native_poll(WGPUInstance instance, WGPUDevice device);
/* Shader module without implementation-inserted bounds checks: only for our own
 * kernels, whose index logic keeps every access in range. */
WGPUShaderModule webgpu_native_create_unchecked_module(WGPUDevice device, const WGPUShaderModuleDescriptor *desc);
/* Nanoseconds per timestamp tick. */
double webgpu_native_timestamp_period(WGPUQueue queue);
/* "wgpu-native 29.0.1.1" */
void webgpu_native_version(char *buf, size_t size);
/* Bytes of workgroup memory a WGSL module's var<workgroup> variables take by
 * the WebGPU rule (wgsl_workgroup_memory.c); -1 when one's size cannot be
 * worked out (its name in unknown). */
int64_t webgpu_wgsl_workgroup_bytes(const char *source, char *unknown, size_t unknown_size);
/* The feature that turns subgroups on (the standard name or the
 * implementation's own), 0 when the adapter has none. */
WGPUFeatureName webgpu_native_subgroups_feature(WGPUAdapter adapter);
/* The feature that allows u64 and i64 in shaders, 0 when the adapter has none
 * (browsers: none). */
WGPUFeatureName webgpu_native_int64_feature(WGPUAdapter adapter);
/* What a WGSL module using subgroup built-ins starts with here: "enable
 * subgroups;\n" in browsers, nothing for wgpu-native (whose Naga refuses it). */
const char *webgpu_native_subgroups_directive(void);
/* Whether the shader compiler enforces WGSL's subgroup uniformity analysis:
 * browsers (Tint) do, and refuse a subgroupAdd after a branch on a value one
 * lane drew and broadcast (nn_norm_subgroup.wgsl's rows), which Naga takes. */
bool webgpu_native_subgroup_uniformity_checked(void);
void webgpu_native_live_objects(WGPUInstance instance, char *buf, size_t size);

/* -------------------------------------------------------------- device.c, waits.c */
extern const wgt_backend_vtable webgpu_vtable; /* webgpu_backend.c */
void webgpu_destroy(wgt_backend *b);
wgt_status webgpu_adapter_info(wgt_backend *b, wgt_adapter_info *info);
wgt_status webgpu_fill_adapter_info(WGPUAdapter adapter, int index, wgt_adapter_info *info);
/* Score used to pick the best adapter when the caller names none. */
int webgpu_adapter_score(const wgt_adapter_info *info, wgt_power_preference power);
/* Polls until *done is set or the GPU makes no progress (no submission
 * completes) for timeout_ms; reports WGT_ERR_TIMEOUT naming what for and marks
 * the backend stuck while that work is outstanding. */
wgt_status webgpu_wait(webgpu_backend *wg, volatile bool *done, const char *what);
/* WGT_ERR_TIMEOUT at once while the backend is stuck (after polling once). */
wgt_status webgpu_check_stuck(webgpu_backend *wg, const char *what);
/* malloc/calloc for the backend's host allocations, with the test-only
 * host_alloc failure point (core/fault.h). */
void *webgpu_host_alloc(webgpu_backend *wg, size_t count, size_t size, bool zeroed);
/* A request record with two references (see webgpu_request); NULL + error. */
webgpu_request *webgpu_request_new(webgpu_backend *wg, const char *op);
void webgpu_request_release(webgpu_request *r);
/* Map callback for a webgpu_request (userdata1); drops the callback's reference. */
void webgpu_on_map_request(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2);
/* After each wgpuQueueSubmit: counts it and arms its completion callback. */
void webgpu_track_submission(webgpu_backend *wg);
void webgpu_progress_release(webgpu_progress *p);
/* Marks the device lost (fatal error on the context) and destroys it. */
void webgpu_lose_device(webgpu_backend *wg, const char *why);
/* Wraps work in an error scope: call push, do the work, then pop, which waits
 * for the scope and returns the error type and message (type NoError if none). */
void webgpu_error_scope_push(webgpu_backend *wg);
wgt_status webgpu_error_scope_pop(webgpu_backend *wg, WGPUErrorType *type, char *message, size_t size);

/* -------------------------------------------------------------- host_helpers.c */
/* WGPUStringView of a C string (NULL: empty), and back into buf (truncated, NUL-terminated). */
WGPUStringView webgpu_string(const char *s);
void webgpu_copy_string(WGPUStringView v, char *buf, size_t size);
/* Monotonic milliseconds. */
double webgpu_now_ms(void);

/* -------------------------------------------------------------- buffer_create.c */
/* A temporary buffer outside the pool (staging, query resolve). NULL + error. */
WGPUBuffer webgpu_create_buffer(webgpu_backend *wg, uint64_t size, WGPUBufferUsage usage, const char *op);
/* The same for the pool's blocks (memory.c), without the allocation fault point. */
WGPUBuffer webgpu_create_pool_buffer(webgpu_backend *wg, uint64_t size, WGPUBufferUsage usage, const char *op);

/* -------------------------------------------------------------- memory.c */
void webgpu_allocator_init(webgpu_backend *wg);
void webgpu_allocator_destroy(webgpu_backend *wg);
wgt_status webgpu_storage_alloc(wgt_backend *b, size_t bytes, void **handle);
void webgpu_storage_free(wgt_backend *b, void *handle);
wgt_status webgpu_storage_write(wgt_backend *b, void *handle, size_t offset, const void *src, size_t bytes);
wgt_status webgpu_storage_read(wgt_backend *b, void *handle, size_t offset, void *dst, size_t bytes);
wgt_status webgpu_storage_read_start(wgt_backend *b, void *handle, size_t offset, size_t bytes, void **pending);
wgt_status webgpu_storage_read_finish(wgt_backend *b, void *pending, void *dst);
bool webgpu_storage_read_ready(wgt_backend *b, void *pending);
wgt_status webgpu_memory_stats(wgt_backend *b, wgt_memory_stats *stats);
wgt_status webgpu_memory_trim(wgt_backend *b);
wgt_status webgpu_memory_set_budget(wgt_backend *b, uint64_t budget);

/* -------------------------------------------------------------- pipeline_cache.c */
void webgpu_pipeline_cache_init(webgpu_backend *wg);
void webgpu_pipeline_cache_destroy(webgpu_backend *wg);
/* Looks key up; counts a hit. NULL if absent (then build the source and call create). */
webgpu_pipeline *webgpu_pipeline_find(webgpu_backend *wg, const char *key);
/* Compiles source (entry point "main" unless entry given) with the binding
 * convention above and caches it under key; counts a miss. Compile errors give
 * WGT_ERR_SHADER_COMPILE with line:column. checked=false drops implementation
 * bounds checks (built-in kernels only). */
wgt_status webgpu_pipeline_create(webgpu_backend *wg, const char *key, const char *source, const char *entry,
                                  int n_read_only, int n_read_write, bool has_params, bool checked,
                                  const char *op, webgpu_pipeline **out);
/* General form: read_only[i] per storage binding; params_last puts a plain
 * (non-dynamic) uniform after the storage bindings (custom kernels). */
wgt_status webgpu_pipeline_create_ex(webgpu_backend *wg, const char *key, const char *source, const char *entry,
                                     int n_storage, const bool *read_only, bool has_params, bool params_last,
                                     bool checked, const char *op, webgpu_pipeline **out);
wgt_status webgpu_pipeline_stats(wgt_backend *b, wgt_pipeline_stats *stats);
/* Embedded kernel source by file name without .wgsl ("matmul"), or NULL. */
const char *webgpu_kernel_source(const char *name);
/* The pipeline cached under key, else compiled from prelude followed by the
 * embedded files in order (with a uniform parameter block, entry "main"). */
wgt_status webgpu_pipeline_assemble(webgpu_backend *wg, const char *key, const char *prelude, const char *const *files,
                                    int n_files, int n_read_only, int n_read_write, bool checked, const char *op,
                                    webgpu_pipeline **out);

/* -------------------------------------------------------------- execution.c */
wgt_status webgpu_execution_init(webgpu_backend *wg);
void webgpu_execution_destroy(webgpu_backend *wg);
/* Records a dispatch of p over read-only then read-write buffers (whole), with
 * params copied into the ring. Counts must be <= the per-dimension limit (see
 * webgpu_grid). Submits when the batch is full. */
wgt_status webgpu_dispatch(webgpu_backend *wg, webgpu_pipeline *p, WGPUBuffer const *buffers, int n_buffers,
                           const void *params, size_t params_size, uint32_t x, uint32_t y, uint32_t z,
                           const char *op);
/* Folds a 1-D workgroup count into (x, y) with x, y <= the per-dimension limit;
 * kernels rebuild the linear id as wid.x + wid.y * num_workgroups.x. */
wgt_status webgpu_grid(webgpu_backend *wg, uint64_t workgroups, uint32_t *x, uint32_t *y, const char *op);
/* The open compute pass (opened on demand), for dispatches that build their own
 * bind groups; call webgpu_dispatch_recorded after each dispatch. */
WGPUComputePassEncoder webgpu_open_pass(webgpu_backend *wg);
wgt_status webgpu_dispatch_recorded(webgpu_backend *wg);
/* Ends the open pass so a copy can be recorded; returns the open encoder. */
WGPUCommandEncoder webgpu_encoder_for_copy(webgpu_backend *wg);
/* Drops cached bind groups that use buffer (call before destroying it). */
void webgpu_bind_groups_forget(webgpu_backend *wg, WGPUBuffer buffer);
/* Submits everything recorded (no wait). */
wgt_status webgpu_flush(webgpu_backend *wg);
/* Submits and waits for the queue to drain (with deadline). */
wgt_status webgpu_finish(webgpu_backend *wg, const char *op);
wgt_status webgpu_synchronize(wgt_backend *b);
wgt_status webgpu_execution_stats(wgt_backend *b, wgt_execution_stats *stats);

/* -------------------------------------------------------------- profiler_control.c */
wgt_status webgpu_profiler_enable(wgt_backend *b, bool enable);
wgt_status webgpu_profiler_report(wgt_backend *b, FILE *out);
wgt_status webgpu_profiler_write_trace(wgt_backend *b, const char *path);

/* -------------------------------------------------------------- profiler.c */
/* wg->profiler set up (the caller flushed first); error status if not. */
wgt_status webgpu_profiler_create(webgpu_backend *wg);
void webgpu_profiler_destroy(webgpu_backend *wg);
/* The per-op table and the Chrome trace of what was collected so far. */
void webgpu_profiler_print(const webgpu_backend *wg, FILE *out);
void webgpu_profiler_print_trace(const webgpu_backend *wg, FILE *f);
/* Bytes and flops of the op about to be recorded (counted on its first dispatch). */
void webgpu_profiler_set_work(webgpu_backend *wg, double bytes, double flops);
WGPUComputePassEncoder webgpu_profiler_begin_pass(webgpu_backend *wg, WGPUCommandEncoder encoder, const char *op);
bool webgpu_profiler_full(const webgpu_backend *wg);
void webgpu_profiler_resolve(webgpu_backend *wg, WGPUCommandEncoder encoder);
wgt_status webgpu_profiler_collect(webgpu_backend *wg);

/* -------------------------------------------------------------- custom_kernel.c */
wgt_status webgpu_custom_kernel(wgt_backend *b, const wgt_custom_kernel *k, wgt_storage *const *storages);

/* -------------------------------------------------------------- temporaries.c */
/* Contiguous device temporary of dtype/shape (its own storage reference). */
wgt_status webgpu_temp_alloc(webgpu_backend *wg, wgt_dtype dtype, int ndim, const int64_t *shape,
                             wgt_tensor_view *out);
void webgpu_temp_release(webgpu_backend *wg, wgt_tensor_view *v);

/* -------------------------------------------------------------- webgpu_elementwise.c: conversions */
/* dst = src converted to dst's dtype, through dst's strides (ELEMENTWISE copy). */
wgt_status webgpu_convert(webgpu_backend *wg, const wgt_tensor_view *src, const wgt_tensor_view *dst, const char *op);
/* New contiguous temporary of dtype holding src's values. */
wgt_status webgpu_temp_convert(webgpu_backend *wg, const wgt_tensor_view *src, wgt_dtype dtype, wgt_tensor_view *out,
                               const char *op);

/* -------------------------------------------------------------- f32_views.c */
/* f32 views of a call's inputs and first n_outputs outputs, for kernel
 * families that compute in f32 only (nn, conv): the caller's own views where
 * they are not f16, else temporaries (inputs converted in). The finish
 * converts the temporary outputs back into the caller's views when s is
 * WGT_OK, releases every temporary and returns s or the conversion's error. */
#define WEBGPU_F32_VIEWS_MAX_OUTPUTS 3
typedef struct webgpu_f32_views {
    wgt_tensor_view in[WGT_MAX_KERNEL_INPUTS], out[WEBGPU_F32_VIEWS_MAX_OUTPUTS];
    bool in_temp[WGT_MAX_KERNEL_INPUTS], out_temp[WEBGPU_F32_VIEWS_MAX_OUTPUTS];
} webgpu_f32_views;
wgt_status webgpu_f32_views_begin(webgpu_backend *wg, const wgt_kernel_call *call, int n_outputs, webgpu_f32_views *v);
wgt_status webgpu_f32_views_finish(webgpu_backend *wg, const wgt_kernel_call *call, webgpu_f32_views *v, wgt_status s);

/* -------------------------------------------------------------- tuner.c */
/* Times every tiled GEMM config and writes the fastest per size bucket to the
 * tuning cache (cache_path, or the default); progress to log if not NULL. */
wgt_status webgpu_tune(wgt_backend *b, bool quick, const char *cache_path, FILE *log);
void webgpu_tune_load(webgpu_backend *wg);
bool webgpu_tune_default_path(char *buf, size_t size);
/* webgpu_matmul.c: the tuner's view of the config table */
bool webgpu_matmul_config_exists(const char *name);
/* Name of config index i if it is a tiled config that fits ("" if not), NULL past the end. */
const char *webgpu_matmul_tiled_config_name(const webgpu_backend *wg, int i);

/* -------------------------------------------------------------- kernel families */
/* Each returns true from *_supports when it implements the call, and records
 * the kernel in *_run. See backend.h for the call contracts. */
bool webgpu_elementwise_supports(webgpu_backend *wg, const wgt_kernel_call *call);
void webgpu_elementwise_destroy(webgpu_backend *wg); /* frees the recent-pipeline keys */
wgt_status webgpu_elementwise_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_reduce_supports(webgpu_backend *wg, const wgt_kernel_call *call);   /* REDUCE, CUMSUM, SOFTMAX */
wgt_status webgpu_reduce_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_matmul_supports(webgpu_backend *wg, const wgt_kernel_call *call);
/* webgpu_dropout.c: NN's DROPOUT_ADD and DROPOUT_MASKED (webgpu_nn.c routes them there) */
bool webgpu_dropout_supports(webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_dropout_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* out [B.., M, N] = a [B.., M, K] b [B.., K, N] for f32 views of this
 * backend's buffers (any strides; out contiguous), as MATMUL runs it: for the
 * backend's own compositions (webgpu_conv_winograd.c). */
wgt_status webgpu_matmul_views(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                               const wgt_tensor_view *out, const char *op);
wgt_status webgpu_matmul_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_indexing_supports(webgpu_backend *wg, const wgt_kernel_call *call); /* GATHER, SCATTER_ADD, TOPK */
wgt_status webgpu_indexing_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_attention_supports(webgpu_backend *wg, const wgt_kernel_call *call); /* ATTENTION(_BACKWARD), ROPE */
wgt_status webgpu_attention_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* ATTENTION with a few query rows over many keys (webgpu_attention_decode.c) */
bool webgpu_attention_decode_wanted(const webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_attention_decode_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* The first pass alone (the decode ATTENTION call's partial sums over chunks
 * of 64 keys), for a consumer that combines them itself (attention_combine_x.wgsl):
 * part_o f32 [rows, chunks, D] from vec4 o_off, part_ml (m, l) f32 pairs
 * [rows, chunks] from pair ml_off, both temporaries the caller releases with
 * webgpu_decode_partials_release (also after an error). */
typedef struct webgpu_decode_partials {
    wgt_tensor_view part_o, part_ml;
    uint32_t o_off, ml_off, chunks, D;
    bool split; /* the combine a workgroup a row (webgpu_attention_decode_splits) */
} webgpu_decode_partials;
/* Whether the decode attention's combine over these chunks of keys is
 * attention_decode_combine_split (a workgroup a query row, its sums in
 * another order): past DECODE_SPLIT_CHUNKS chunks, unless
 * WGT_DECODE_COMBINE_SPLIT=0. A projection's GEMV folds only a combine that
 * does not split (it repeats attention_decode_combine's order). */
bool webgpu_attention_decode_splits(const webgpu_backend *wg, int64_t keys);
wgt_status webgpu_attention_decode_partials(webgpu_backend *wg, const wgt_kernel_call *call, webgpu_decode_partials *dp);
void webgpu_decode_partials_release(webgpu_backend *wg, webgpu_decode_partials *dp);
/* The attention prologue of MATMUL and QMATMUL (wgt_attention_(q)linear_ex;
 * webgpu_attention_linear.c): the ATTENTION call it stands for, with out and
 * lse placeholders (contiguous views, never written), to ask
 * webgpu_attention_decode_wanted and to run its first pass. */
void webgpu_attention_prologue_call(const wgt_kernel_call *call, wgt_kernel_call *attn);
/* How many of the call's last inputs are its keys and values: 2 (k, v) or,
 * with attention.kv_q8, 4 (k codes, v codes, k scales, v scales). */
int webgpu_attention_prologue_kv(const wgt_kernel_call *call);
/* Whether the attention call's keys are few enough for its combine to fold
 * into the projection's GEMV (quantized: quant_gemv_rows, else
 * matmul_gemv_half; WGT_ATTENTION_FOLD_KEYS) */
bool webgpu_attention_prologue_keys_ok(const webgpu_backend *wg, const wgt_kernel_call *attn, bool quantized);
bool webgpu_attention_linear_supports(webgpu_backend *wg, const wgt_kernel_call *call); /* MATMUL's */
wgt_status webgpu_attention_linear_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_optimizer_supports(webgpu_backend *wg, const wgt_kernel_call *call); /* OPTIMIZER */
wgt_status webgpu_optimizer_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_nn_supports(webgpu_backend *wg, const wgt_kernel_call *call);       /* NN: norms, cross-entropy */
wgt_status webgpu_nn_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* Threads nn_norm.wgsl reduces a row of `slots` vec4s with (its summation
 * order, which matmul_gemv_half's RMSNorm prologue repeats) */
uint32_t webgpu_norm_row_threads(const webgpu_backend *wg, uint64_t slots);
/* Rows per invocation (1, 2 or 4) of the decode GEMV kernels (matmul_gemv_half,
 * quant_gemv_rows) for `rows` rows in workgroups of `slots` row groups. */
unsigned webgpu_gemv_rows_per_thread(const webgpu_backend *wg, uint64_t rows, unsigned slots, uint64_t batches);
/* Workgroup memory of the decode GEMVs' partial sums (matmul_gemv_half,
 * quant_gemv_rows: 256 invocations x up to 4 rows, WGT_GEMV_RPT, of f32):
 * what a row staged beside them must leave free */
#define WEBGPU_GEMV_PARTIAL_BYTES (256u * 4u * 4u)
bool webgpu_conv_supports(webgpu_backend *wg, const wgt_kernel_call *call);     /* CONV: conv, pooling, batch norm */
wgt_status webgpu_conv_run(webgpu_backend *wg, const wgt_kernel_call *call);
bool webgpu_quant_supports(webgpu_backend *wg, const wgt_kernel_call *call);     /* QMATMUL: 8/4-bit weights */
wgt_status webgpu_quant_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* QROWS: rows <-> 8-bit codes and scales (webgpu_quant_rows.c) */
bool webgpu_quant_rows_supports(webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_quant_rows_run(webgpu_backend *wg, const wgt_kernel_call *call);
/* webgpu_quant_int8.c: QMATMUL with int8_x (two dispatches; a supported call) */
wgt_status webgpu_quant_run_int8_x(webgpu_backend *wg, const wgt_kernel_call *call);

/* The buffer behind a view. */
static inline WGPUBuffer webgpu_view_buffer(const wgt_tensor_view *v) { return ((webgpu_block *)v->storage->handle)->buffer; }
/* Whether a view of 4-byte elements can be bound as vec4s (buffers are bound
 * whole): its first element on a 16-byte boundary, its buffer whole 16-byte words. */
static inline bool webgpu_view_vec4_aligned(const wgt_tensor_view *v)
{
    return v->offset % 4 == 0 && wgpuBufferGetSize(webgpu_view_buffer(v)) % 16 == 0;
}
/* Whether every element of v has an index below 2^32 (kernels that index in
 * u32 elements; negative strides refused, an empty view fits) */
static inline bool webgpu_view_fits_u32(const wgt_tensor_view *v)
{
    int64_t high = v->offset;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] == 0) return true;
        if (v->strides[d] < 0) return false;
        high += (v->shape[d] - 1) * v->strides[d];
    }
    return high < (int64_t)UINT32_MAX;
}

#endif /* WGT_WEBGPU_INTERNAL_H */
