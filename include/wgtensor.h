/*
 * wgtensor — tensors and ML ops on WebGPU (WGSL compute) with a CPU reference.
 *
 * Conventions
 *   - Every name has the prefix wgt_; handles are opaque.
 *   - Errors are sticky per context: a failing call returns NULL (or a status),
 *     records a status code and a message that names the call, the shapes and the
 *     cause; later calls on that context return at once (NULL / the same status)
 *     until wgt_context_clear_error() is called. No call aborts the process on
 *     bad input.
 *   - Tensors are reference counted. A tensor returned by a wgt_ call is owned by
 *     the caller (release it with wgt_tensor_release) unless a scope is open: then
 *     the innermost scope releases it at wgt_scope_pop unless it was kept.
 *   - Shapes are written [d0, d1, ...]; dim 0 is the slowest-varying. Negative
 *     axes count from the end, as in NumPy.
 */
#ifndef WGTENSOR_H
#define WGTENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WGT_MAX_DIMS 8

/* ------------------------------------------------------------------ status */

typedef enum wgt_status {
    WGT_OK = 0,
    WGT_ERR_INVALID_ARGUMENT,       /* NULL pointer, bad flag, bad axis, bad value */
    WGT_ERR_SHAPE_MISMATCH,         /* shapes do not broadcast / agree */
    WGT_ERR_DTYPE,                  /* dtype not accepted by the op */
    WGT_ERR_OUT_OF_MEMORY,          /* message gives bytes requested and available */
    WGT_ERR_DEVICE_LOST,            /* the GPU device was lost; the context is dead */
    WGT_ERR_NO_ADAPTER,             /* no WebGPU adapter: fall back to the CPU */
    WGT_ERR_SHADER_COMPILE,         /* WGSL did not compile; message has line:column */
    WGT_ERR_INVALID_WORKGROUP_SIZE, /* workgroup size or count over the device limits */
    WGT_ERR_UNSUPPORTED,            /* op/dtype the backend does not implement */
    WGT_ERR_IO,                     /* file could not be read or written */
    WGT_ERR_BAD_FORMAT,             /* file contents not in the expected format */
    WGT_ERR_TIMEOUT,                /* a wait on the GPU passed its deadline */
    WGT_ERR_CONTEXT_MISMATCH,       /* tensors from two different contexts */
    WGT_ERR_INTERNAL,               /* a bug in wgtensor or the WebGPU implementation */
    WGT_STATUS_COUNT
} wgt_status;

/* Short constant name of a status, e.g. "WGT_ERR_SHAPE_MISMATCH". Never NULL. */
const char *wgt_status_string(wgt_status status);

/* ------------------------------------------------------------------ dtypes */

typedef enum wgt_dtype {
    WGT_F32 = 0,
    WGT_F16,  /* IEEE half; stored packed, computed in f32 */
    WGT_I32,
    WGT_U8,
    WGT_BOOL, /* one byte, 0 or 1 */
    WGT_DTYPE_COUNT
} wgt_dtype;

const char *wgt_dtype_name(wgt_dtype dtype); /* "f32", "f16", ... */
size_t wgt_dtype_size(wgt_dtype dtype);      /* bytes per element */

/* ---------------------------------------------------------------- adapters */

typedef enum wgt_backend_kind {
    WGT_BACKEND_AUTO = 0, /* WebGPU if an adapter exists (or WGT_BACKEND says), else CPU */
    WGT_BACKEND_CPU,
    WGT_BACKEND_WEBGPU
} wgt_backend_kind;

typedef enum wgt_adapter_type {
    WGT_ADAPTER_ANY = 0,
    WGT_ADAPTER_DISCRETE_GPU,
    WGT_ADAPTER_INTEGRATED_GPU,
    WGT_ADAPTER_CPU,
    WGT_ADAPTER_UNKNOWN
} wgt_adapter_type;

typedef enum wgt_power_preference {
    WGT_POWER_DEFAULT = 0, /* best adapter: discrete > integrated > CPU; Vulkan/Metal/D3D12 > GL */
    WGT_POWER_HIGH_PERFORMANCE,
    WGT_POWER_LOW_POWER
} wgt_power_preference;

/* Limits that matter for compute, as the adapter reports them. */
typedef struct wgt_adapter_limits {
    uint64_t max_buffer_size;
    uint64_t max_storage_buffer_binding_size;
    uint32_t max_storage_buffers_per_shader_stage;
    uint32_t max_compute_workgroup_storage_size;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroup_size_x;
    uint32_t max_compute_workgroup_size_y;
    uint32_t max_compute_workgroup_size_z;
    uint32_t max_compute_workgroups_per_dimension;
    uint32_t min_storage_buffer_offset_alignment;
    uint32_t min_uniform_buffer_offset_alignment;
    uint32_t subgroup_min_size;
    uint32_t subgroup_max_size;
} wgt_adapter_limits;

typedef struct wgt_adapter_info {
    int index;               /* position in enumeration order; stable within a process */
    char name[128];          /* e.g. "NVIDIA H100 80GB HBM3" */
    char vendor[64];
    char architecture[64];
    char driver[128];        /* driver description, e.g. "580.159.04" */
    char backend[16];        /* "Vulkan", "Metal", "D3D12", "OpenGL", ... */
    wgt_adapter_type type;
    uint32_t vendor_id, device_id;
    bool shader_f16;         /* WGSL `enable f16` available */
    bool subgroups;          /* WGSL subgroup built-ins available */
    bool timestamp_query;    /* GPU timestamps for profiling */
    bool shader_int64;       /* 64-bit integers in shaders (wgpu-native): Philox draws use them */
    wgt_adapter_limits limits;
} wgt_adapter_info;

/* Lists every WebGPU adapter on Vulkan/Metal/D3D12 (OpenGL ones too when
 * WGT_ADAPTER names GL, or when there is no other). *infos is allocated by the library; free it with
 * wgt_adapters_free. Returns WGT_ERR_NO_ADAPTER (and *count = 0) when none exist. */
wgt_status wgt_adapters_enumerate(wgt_adapter_info **infos, size_t *count);
void wgt_adapters_free(wgt_adapter_info *infos);
const char *wgt_adapter_type_name(wgt_adapter_type type); /* "discrete", "cpu", ... */

/* ----------------------------------------------------------------- context */

typedef struct wgt_context wgt_context;
typedef struct wgt_tensor wgt_tensor;

typedef struct wgt_context_options {
    wgt_backend_kind backend;          /* env WGT_BACKEND=cpu|webgpu overrides AUTO */
    int adapter_index;                 /* -1: choose; env WGT_ADAPTER=<index|name substring> */
    const char *adapter_name;          /* substring of the adapter name, or NULL */
    wgt_adapter_type adapter_type;     /* WGT_ADAPTER_ANY: no constraint */
    wgt_power_preference power;
    uint64_t memory_budget_bytes;      /* 0: the device's max buffer size bounds nothing else */
    uint32_t wait_timeout_ms;          /* a GPU wait fails after this long without progress (no
                                          submission completing); 0: 10 s, 120 s on a software
                                          adapter; WGT_WAIT_TIMEOUT_MS overrides */
    int cpu_threads;                   /* CPU backend threads; 0: all cores */
    bool debug_guards;                 /* surround every new tensor with guard bytes (tests) */
} wgt_context_options;

/* Fills defaults: AUTO backend, adapter_index -1, timeout 10 s. */
void wgt_context_options_init(wgt_context_options *options);

/* Always returns a context (NULL only if memory for it cannot be allocated). If
 * creation failed, wgt_context_status() says why (e.g. WGT_ERR_NO_ADAPTER) and
 * the context is unusable: destroy it. options may be NULL for defaults. */
wgt_context *wgt_context_create(const wgt_context_options *options);
void wgt_context_destroy(wgt_context *ctx);

wgt_status wgt_context_status(const wgt_context *ctx);
const char *wgt_context_error_message(const wgt_context *ctx); /* "" when OK */
/* Clears a recoverable error so the context can be used again. Device loss and
 * failed creation are not recoverable: the status stays. Returns the status left. */
wgt_status wgt_context_clear_error(wgt_context *ctx);

wgt_backend_kind wgt_context_backend(const wgt_context *ctx);
/* Adapter in use (WebGPU) or a description of the CPU. */
wgt_status wgt_context_adapter_info(wgt_context *ctx, wgt_adapter_info *info);

/* Waits until all work recorded so far has finished on the device. */
wgt_status wgt_synchronize(wgt_context *ctx);

/* ------------------------------------------------------------- statistics */

typedef struct wgt_memory_stats {
    uint64_t bytes_in_use;        /* held by live tensors (rounded to size class) */
    uint64_t bytes_reserved;      /* in use + cached free blocks */
    uint64_t peak_bytes_in_use;
    uint64_t budget_bytes;        /* 0: none */
    uint64_t allocations;         /* allocation requests served */
    uint64_t pool_hits;           /* requests served from the cache */
    uint64_t device_allocations;  /* buffers created on the device */
} wgt_memory_stats;

typedef struct wgt_pipeline_stats {
    uint64_t hits, misses;
    double compile_ms;            /* total time creating shader modules and pipelines */
    uint64_t entries;
} wgt_pipeline_stats;

typedef struct wgt_execution_stats {
    uint64_t dispatches;          /* compute dispatches recorded */
    uint64_t submits;             /* queue submits */
    uint64_t uploads, downloads;  /* host<->device transfers */
    uint64_t bind_groups;         /* bind groups created (a dispatch whose buffers were bound
                                     the same way recently reuses one) */
} wgt_execution_stats;

wgt_status wgt_memory_stats_get(wgt_context *ctx, wgt_memory_stats *stats);
wgt_status wgt_pipeline_stats_get(wgt_context *ctx, wgt_pipeline_stats *stats);
wgt_status wgt_execution_stats_get(wgt_context *ctx, wgt_execution_stats *stats);
/* Releases cached free device blocks (bytes_reserved falls to bytes_in_use). */
wgt_status wgt_memory_trim(wgt_context *ctx);
wgt_status wgt_memory_set_budget(wgt_context *ctx, uint64_t budget_bytes);
/* Peak accounting, a debugging aid: while on, each storage remembers the op
 * that allocated it (and, during wgt_backward, the rule or the gradient
 * accumulation that did), its first tensor's shape and dtype; each allocation
 * that takes bytes_in_use above the highest value seen since the trace was
 * turned on copies the list of live storages. wgt_memory_peak_report prints
 * that copy grouped by maker and shape, largest first, and the size-class
 * rounding (bytes in use against bytes requested). Turning it on again
 * restarts the peak; off frees the records. Costs a list walk per new peak. */
wgt_status wgt_memory_trace_peak(wgt_context *ctx, bool on);
wgt_status wgt_memory_peak_report(wgt_context *ctx, FILE *out);

/* --------------------------------------------------------------- profiling */
/* GPU time of every dispatch from timestamp queries (WebGPU adapters with the
 * timestamp-query feature; WGT_ERR_UNSUPPORTED otherwise). While enabled every
 * batch is synchronized, so it measures kernels, not pipelining. The
 * environment turns it on for any program: WGT_PROFILE=1 prints the report to
 * stderr when the context is destroyed, WGT_PROFILE_TRACE=file.json writes a
 * trace that Perfetto / chrome://tracing open. Off, it costs one branch. */
wgt_status wgt_profiler_enable(wgt_context *ctx, bool enable);
/* Per op: calls, total and mean GPU time, GB/s (minimum bytes moved), GFLOP/s. */
wgt_status wgt_profiler_report(wgt_context *ctx, FILE *out);
wgt_status wgt_profiler_write_trace(wgt_context *ctx, const char *path);

/* -------------------------------------------------------------- autotuning */
/* Times the GEMM tile configs on this adapter and writes the fastest per size to
 * a tuning cache (cache_path, or WGT_TUNE_CACHE, or
 * ~/.cache/wgtensor/matmul-tune.tsv), keyed by adapter name and driver; every
 * later context on the same adapter+driver loads it. quick: small sizes only
 * (for tests). Progress goes to log unless NULL. Without a cache a fixed
 * heuristic chooses. */
wgt_status wgt_tune(wgt_context *ctx, bool quick, const char *cache_path, FILE *log);

/* ------------------------------------------------------------------ scopes */

/* Every tensor created after push belongs to the scope; pop releases those not
 * kept or already released. Scopes nest. */
wgt_status wgt_scope_push(wgt_context *ctx);
wgt_status wgt_scope_pop(wgt_context *ctx);
/* Moves t out of its scope into the enclosing one (or to the caller if none). */
wgt_tensor *wgt_scope_keep(wgt_tensor *t);
/* Tensor handles alive in ctx (a leak check for loops). */
int64_t wgt_context_live_tensors(const wgt_context *ctx);

/* ---------------------------------------------------------------- tensors */

/* Tensor with uninitialized contents, contiguous, shape[ndim]. ndim 0 = scalar. */
wgt_tensor *wgt_tensor_empty(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape);
/* Copies host data (contiguous, row-major, dtype layout; f16 as uint16 bits). */
wgt_tensor *wgt_tensor_from_host(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape,
                                 const void *data);
/* Reads the tensor (any view) into host memory as a contiguous array; waits for
 * the device. bytes must be at least numel * dtype size. */
wgt_status wgt_tensor_read(wgt_tensor *t, void *data, size_t bytes);
/* Reading without waiting. wgt_tensor_read_start queues a copy of t's elements
 * behind the work recorded so far, submits it and returns at once;
 * wgt_read_finish waits for that copy (under the context's deadline), writes
 * the elements into data (bytes >= numel * dtype size) and frees the read.
 * Work recorded between the two runs on the device after the copy, so the
 * host can record step n+1 while step n is read back (a decode loop whose
 * next token comes from the device). Every started read must be finished;
 * data NULL discards it, and wgt_context_destroy discards the ones left.
 * Out-of-range indices found on the device are reported by the next
 * wgt_tensor_read or wgt_synchronize, not here: that check waits for all the
 * work recorded so far, which is what this read avoids. NULL on error (the
 * context's status says why). */
typedef struct wgt_read wgt_read;
wgt_read *wgt_tensor_read_start(wgt_tensor *t);
wgt_status wgt_read_finish(wgt_read *r, void *data, size_t bytes);
/* Whether wgt_read_finish(r, ...) would return without waiting: the copy has
 * landed, or the read failed (finish then says why). Polls the device once and
 * never blocks, so a host loop can do other work (start a network transfer of
 * what has arrived) while the device is still busy. NULL: true. */
bool wgt_read_ready(wgt_read *r);
/* Overwrites the tensor's elements (any view) from contiguous host data. */
wgt_status wgt_tensor_write(wgt_tensor *t, const void *data, size_t bytes);

/* With options.debug_guards: WGT_OK if the guard bytes around t's storage are
 * intact, WGT_ERR_INTERNAL naming the first overwritten byte otherwise (a kernel
 * wrote out of bounds). Without guards: WGT_OK. */
wgt_status wgt_tensor_check_guards(wgt_tensor *t);

/* Reference counting. A tensor made inside a scope is the scope's: the pop
 * releases it unless you released it first or kept it. wgt_tensor_release of
 * such a tensor gives it up early and takes it out of its scope, so it is safe
 * even while an op that consumed it (a tape node) still holds it. A reference
 * you add with wgt_tensor_retain is yours: release it yourself. */
wgt_tensor *wgt_tensor_retain(wgt_tensor *t);
void wgt_tensor_release(wgt_tensor *t);

wgt_context *wgt_tensor_context(const wgt_tensor *t);
wgt_dtype wgt_tensor_dtype(const wgt_tensor *t);
int wgt_tensor_ndim(const wgt_tensor *t);
int64_t wgt_tensor_dim(const wgt_tensor *t, int axis);       /* negative axes allowed */
const int64_t *wgt_tensor_shape(const wgt_tensor *t);
const int64_t *wgt_tensor_strides(const wgt_tensor *t);      /* in elements */
int64_t wgt_tensor_offset(const wgt_tensor *t);              /* in elements */
int64_t wgt_tensor_numel(const wgt_tensor *t);
bool wgt_tensor_is_contiguous(const wgt_tensor *t);
/* "[2, 3] f32" into buf; returns buf. */
const char *wgt_tensor_describe(const wgt_tensor *t, char *buf, size_t size);

/* Creation: [shape] */
wgt_tensor *wgt_zeros(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape);
wgt_tensor *wgt_ones(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape);
wgt_tensor *wgt_full(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, double value);
/* [ceil((stop-start)/step)]: start, start+step, ... < stop */
wgt_tensor *wgt_arange(wgt_context *ctx, wgt_dtype dtype, double start, double stop, double step);
/* [count]: evenly spaced from start to stop inclusive */
wgt_tensor *wgt_linspace(wgt_context *ctx, wgt_dtype dtype, double start, double stop, int64_t count);
/* [n, m]: ones on the diagonal */
wgt_tensor *wgt_eye(wgt_context *ctx, wgt_dtype dtype, int64_t n, int64_t m);
/* Counter-based (Philox 4x32-10): element i of a tensor drawn with seed s is the
 * same number on every backend. rand: uniform [0, 1), (word i % 4 of counter
 * (i / 4, 0, 0, 0)) >> 8 times 2^-24; randn: standard normal, Box-Muller on
 * words 2 (i % 2), 2 (i % 2) + 1 of counter (i / 2, 0, 0, 0). */
wgt_tensor *wgt_rand(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, uint64_t seed);
wgt_tensor *wgt_randn(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, uint64_t seed);

/* ------------------------------------------------------------------ views */
/* Views share storage with their source; none copies. */

/* Same elements, new shape; one dim may be -1. Needs compatible strides, else
 * WGT_ERR_INVALID_ARGUMENT (use wgt_contiguous first, or wgt_reshape). */
wgt_tensor *wgt_view(wgt_tensor *t, int ndim, const int64_t *shape);
/* Like view, but copies when the strides do not allow a view. */
wgt_tensor *wgt_reshape(wgt_tensor *t, int ndim, const int64_t *shape);
/* perm[ndim]: output dim i is input dim perm[i]. */
wgt_tensor *wgt_permute(wgt_tensor *t, const int *perm);
wgt_tensor *wgt_transpose(wgt_tensor *t, int axis0, int axis1);
/* Elements start, start+step, ... < stop along axis (step >= 1; start/stop
 * clamped as in Python, negative values count from the end). */
wgt_tensor *wgt_slice(wgt_tensor *t, int axis, int64_t start, int64_t stop, int64_t step);
/* Broadcast to shape (NumPy rules, size-1 dims get stride 0). */
wgt_tensor *wgt_expand(wgt_tensor *t, int ndim, const int64_t *shape);
wgt_tensor *wgt_squeeze(wgt_tensor *t, int axis);  /* axis must have size 1 */
wgt_tensor *wgt_unsqueeze(wgt_tensor *t, int axis);
/* Contiguous copy, or a new handle on the same storage if already contiguous. */
wgt_tensor *wgt_contiguous(wgt_tensor *t);

/* ---------------------------------------------------------------- op list */
/* Every op the library offers; the parity table and the docs iterate over it. */
typedef enum wgt_op {
    /* binary, NumPy broadcasting, dtype promotion bool < u8 < i32 < f16 < f32 */
    WGT_OP_ADD, WGT_OP_SUB, WGT_OP_MUL, WGT_OP_DIV, WGT_OP_POW,
    WGT_OP_MAXIMUM, WGT_OP_MINIMUM,
    WGT_OP_EQ, WGT_OP_NE, WGT_OP_LT, WGT_OP_LE, WGT_OP_GT, WGT_OP_GE,
    WGT_OP_LOGICAL_AND, WGT_OP_LOGICAL_OR,
    WGT_OP_WHERE,
    /* unary */
    WGT_OP_NEG, WGT_OP_ABS, WGT_OP_SIGN, WGT_OP_EXP, WGT_OP_LOG, WGT_OP_LOG1P,
    WGT_OP_SQRT, WGT_OP_RSQRT, WGT_OP_RECIPROCAL, WGT_OP_SIN, WGT_OP_COS,
    WGT_OP_TANH, WGT_OP_SIGMOID, WGT_OP_RELU, WGT_OP_LEAKY_RELU, WGT_OP_ELU,
    WGT_OP_GELU, WGT_OP_GELU_TANH, WGT_OP_SILU, WGT_OP_SOFTPLUS, WGT_OP_CLAMP,
    WGT_OP_FLOOR, WGT_OP_CEIL, WGT_OP_ROUND, WGT_OP_LOGICAL_NOT,
    /* fused elementwise expression */
    WGT_OP_FUSED,
    /* reductions */
    WGT_OP_SUM, WGT_OP_MEAN, WGT_OP_MAX, WGT_OP_MIN, WGT_OP_PROD, WGT_OP_VAR,
    WGT_OP_STD, WGT_OP_ARGMAX, WGT_OP_ARGMIN, WGT_OP_CUMSUM,
    WGT_OP_SOFTMAX, WGT_OP_LOG_SOFTMAX,
    WGT_OP_MATMUL,
    /* neural-network layers: linear, attention, rotary embedding */
    WGT_OP_LINEAR, WGT_OP_ATTENTION, WGT_OP_ROPE,
    /* data movement */
    WGT_OP_COPY, WGT_OP_CAST, WGT_OP_FILL, WGT_OP_CONCAT, WGT_OP_STACK, WGT_OP_SPLIT,
    WGT_OP_SLICE_ASSIGN, WGT_OP_GATHER, WGT_OP_INDEX_SELECT, WGT_OP_SCATTER_ADD,
    WGT_OP_EMBEDDING, WGT_OP_PAD, WGT_OP_TRIL, WGT_OP_TRIU, WGT_OP_ONE_HOT, WGT_OP_TOPK,
    /* views (no kernel: recorded so autograd can route gradients back) */
    WGT_OP_VIEW, WGT_OP_PERMUTE, WGT_OP_SLICE, WGT_OP_EXPAND,
    /* creation */
    WGT_OP_ARANGE, WGT_OP_LINSPACE, WGT_OP_EYE, WGT_OP_RAND, WGT_OP_RANDN,
    /* neural-network ops (fused, with backward kernels) */
    WGT_OP_LAYER_NORM, WGT_OP_RMS_NORM, WGT_OP_CROSS_ENTROPY, WGT_OP_MSE_LOSS, WGT_OP_DROPOUT,
    /* convolutional layers (NCHW) */
    WGT_OP_CONV2D, WGT_OP_CONV_TRANSPOSE2D, WGT_OP_MAX_POOL2D, WGT_OP_AVG_POOL2D, WGT_OP_ADAPTIVE_AVG_POOL2D,
    WGT_OP_BATCH_NORM, WGT_OP_GROUP_NORM,
    /* quantized inference (group-wise 8/4-bit weights) */
    WGT_OP_QLINEAR,
    /* multi-tensor reduction (gradient clipping's norm; not differentiable) */
    WGT_OP_SUM_SQUARES,
    /* 8-bit rows and attention over them (an LLM's 8-bit KV cache; not differentiable) */
    WGT_OP_QUANTIZE_ROWS, WGT_OP_DEQUANTIZE_ROWS, WGT_OP_ATTENTION_Q8,
    /* x + dropout(h) with the mask kept as bits (wgt_dropout_add while recording) */
    WGT_OP_DROPOUT_ADD,
    /* linear(gelu(h)): an MLP's second projection with its activation (wgt_gelu_linear) */
    WGT_OP_GELU_LINEAR,
    /* a decode step's attention and output projection (wgt_attention_(q)linear_ex; not differentiable) */
    WGT_OP_ATTENTION_LINEAR,
    WGT_OP_COUNT
} wgt_op;

const char *wgt_op_name(wgt_op op); /* "add", "log_softmax", ... */

/* ------------------------------------------------------------ elementwise */
/* Binary: a [...], b [...] broadcast -> out [broadcast shape]. dtype: promoted
 * (bool < u8 < i32 < f16 < f32), except that a 0-d tensor beside a dimensioned
 * one does not widen its category, as PyTorch: f16 [n] + f32 [] is f16. */
wgt_tensor *wgt_add(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_sub(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_mul(wgt_tensor *a, wgt_tensor *b);
/* True division; result is floating (ints -> f32). x/0 = ±inf, 0/0 = NaN. */
wgt_tensor *wgt_div(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_pow(wgt_tensor *a, wgt_tensor *b);     /* floating result */
wgt_tensor *wgt_maximum(wgt_tensor *a, wgt_tensor *b); /* NaN propagates */
wgt_tensor *wgt_minimum(wgt_tensor *a, wgt_tensor *b);
/* Comparisons and logic return WGT_BOOL. NaN compares unequal to everything. */
wgt_tensor *wgt_eq(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_ne(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_lt(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_le(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_gt(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_ge(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_logical_and(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_logical_or(wgt_tensor *a, wgt_tensor *b);
wgt_tensor *wgt_logical_not(wgt_tensor *a);
/* cond, a, b broadcast together -> cond != 0 ? a : b */
wgt_tensor *wgt_where(wgt_tensor *cond, wgt_tensor *a, wgt_tensor *b);
/* Binary op with a scalar right-hand side: a op value (value takes a's dtype
 * when a is integral and value is integral, else the result is floating; f16
 * stays f16 and compares with value rounded to f16, as PyTorch). A u8 tensor
 * with an integer outside [0, 255] in add/sub/mul/maximum/minimum is an error
 * (the result would wrap). */
wgt_tensor *wgt_binary_scalar(wgt_op op, wgt_tensor *a, double value);
/* Any binary op by enum (WGT_OP_ADD ... WGT_OP_LOGICAL_OR). */
wgt_tensor *wgt_binary(wgt_op op, wgt_tensor *a, wgt_tensor *b);

/* Unary: x [...] -> [...]. Float functions of integer input return f32. */
wgt_tensor *wgt_unary(wgt_op op, wgt_tensor *x); /* any unary op without a parameter */
wgt_tensor *wgt_neg(wgt_tensor *x);
wgt_tensor *wgt_abs(wgt_tensor *x);
wgt_tensor *wgt_sign(wgt_tensor *x);
wgt_tensor *wgt_exp(wgt_tensor *x);
wgt_tensor *wgt_log(wgt_tensor *x);
wgt_tensor *wgt_log1p(wgt_tensor *x);
wgt_tensor *wgt_sqrt(wgt_tensor *x);
wgt_tensor *wgt_rsqrt(wgt_tensor *x);
wgt_tensor *wgt_reciprocal(wgt_tensor *x);
wgt_tensor *wgt_sin(wgt_tensor *x);
wgt_tensor *wgt_cos(wgt_tensor *x);
wgt_tensor *wgt_tanh(wgt_tensor *x);
wgt_tensor *wgt_sigmoid(wgt_tensor *x);
wgt_tensor *wgt_relu(wgt_tensor *x);
wgt_tensor *wgt_leaky_relu(wgt_tensor *x, double negative_slope);
wgt_tensor *wgt_elu(wgt_tensor *x, double alpha);
wgt_tensor *wgt_gelu(wgt_tensor *x);      /* exact: x * Phi(x), with erf */
wgt_tensor *wgt_gelu_tanh(wgt_tensor *x); /* tanh approximation */
wgt_tensor *wgt_silu(wgt_tensor *x);
wgt_tensor *wgt_softplus(wgt_tensor *x);
/* clamp(x, lo, hi) = min(max(x, lo), hi), NaN stays NaN; lo > hi is an error.
 * Integer tensors clamp exactly in their own dtype (bounds rounded inward and
 * limited to the dtype's range). clamp_min / clamp_max take one bound. */
wgt_tensor *wgt_clamp(wgt_tensor *x, double lo, double hi);
wgt_tensor *wgt_clamp_min(wgt_tensor *x, double lo); /* max(x, lo) */
wgt_tensor *wgt_clamp_max(wgt_tensor *x, double hi); /* min(x, hi) */
wgt_tensor *wgt_floor(wgt_tensor *x);
wgt_tensor *wgt_ceil(wgt_tensor *x);
wgt_tensor *wgt_round(wgt_tensor *x);     /* half to even, as NumPy */

/* Fused elementwise expression, one kernel for the whole expression, e.g.
 * wgt_fused(ctx, "sqrt(a*b + c)", inputs, 3). Inputs broadcast together; the
 * letters a, b, c, ... name inputs[0], inputs[1], ... Operators: + - * / and
 * comparisons, && || !, ?: is not offered: use where(c, x, y). Functions: every
 * unary op name, pow, maximum/max, minimum/min, where, clamp(x, lo, hi). Numeric
 * literals are constants; an integer literal beyond i32 is accepted only where
 * it is used as a float ("x * 3000000000" with a float x), else refused.
 * Nesting deeper than 200 levels is refused. The compiled kernel is cached by
 * expression structure and dtypes: constant values are kernel parameters. */
wgt_tensor *wgt_fused(wgt_context *ctx, const char *expression, wgt_tensor *const *inputs, int n_inputs);
/* wgt_fused with scalar parameters: p0, p1, ... (at most 16) in the expression
 * are params[0], params[1], ... as f32, e.g.
 * wgt_fused_params(ctx, "a * p0 + p1", &x, 1, (double[]){0.5, 2}, 2).
 * The values are passed to the kernel at run time: changing them reuses the
 * compiled kernel (a training loop's scalars never recompile). */
wgt_tensor *wgt_fused_params(wgt_context *ctx, const char *expression, wgt_tensor *const *inputs, int n_inputs,
                             const double *params, int n_params);

/* ------------------------------------------------------------- reductions */
/* x [...] reduced over axes[n_axes] (n_axes = 0: all axes, to a scalar).
 * keepdim keeps reduced axes with size 1. sum/prod of integers (i32, u8, bool)
 * give i32 (wrapping); mean/var/std of integers give f32; floats keep their
 * dtype. max/min/argmax/argmin propagate NaN like NumPy. */
wgt_tensor *wgt_reduce(wgt_op op, wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
wgt_tensor *wgt_sum(wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
/* Sum over tensors[0..n) of the sum of their squared elements -> f32 [] (0 for
 * n == 0 or only empty tensors). f32 or f16, any shapes (non-contiguous ones
 * are copied first); up to 7 tensors per kernel, partial sums of 8192
 * elements in a fixed order, then one sum: the same bits every run. Not
 * differentiable: a tensor that requires grad under recording is an error. */
wgt_tensor *wgt_sum_squares(wgt_context *ctx, wgt_tensor *const *tensors, int n);
wgt_tensor *wgt_mean(wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
wgt_tensor *wgt_max(wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
wgt_tensor *wgt_min(wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
wgt_tensor *wgt_prod(wgt_tensor *x, const int *axes, int n_axes, bool keepdim);
/* correction: 0 population, 1 sample (Bessel) variance. */
wgt_tensor *wgt_var(wgt_tensor *x, const int *axes, int n_axes, int correction, bool keepdim);
wgt_tensor *wgt_std(wgt_tensor *x, const int *axes, int n_axes, int correction, bool keepdim);
/* x [...] -> i32 index of the first max/min along axis. */
wgt_tensor *wgt_argmax(wgt_tensor *x, int axis, bool keepdim);
wgt_tensor *wgt_argmin(wgt_tensor *x, int axis, bool keepdim);
/* x [...] -> [...] inclusive prefix sum along axis. */
wgt_tensor *wgt_cumsum(wgt_tensor *x, int axis);
/* x [...] -> [...], numerically stable (max subtracted). */
wgt_tensor *wgt_softmax(wgt_tensor *x, int axis);
wgt_tensor *wgt_log_softmax(wgt_tensor *x, int axis);

/* ----------------------------------------------------------------- matmul */
/* a [..., M, K] x b [..., K, N] -> [..., M, N]; batch dims broadcast. 1-D
 * operands follow NumPy: a [K] is a row vector, b [K] a column (matrix-vector).
 * Transposed views (wgt_transpose) are read in place, never copied. */
wgt_tensor *wgt_matmul(wgt_tensor *a, wgt_tensor *b);
/* wgt_matmul with the result in out_dtype: f16 x f16 -> f32 accumulates and
 * stores in f32 (no rounding of the result to f16); out_dtype equal to the
 * operands' dtype is wgt_matmul. f32 x f16 (either order) -> f32 or f16: the
 * f16 operand is widened exactly, the f32 one used as it is (not rounded to
 * f16), f32 sums, rounded once if out_dtype is f16 (f32 activations against
 * f16 weights with no cast). Mixed operands have no gradient rule
 * (WGT_ERR_UNSUPPORTED when one requires grad); wgt_matmul of f32 x f16 gives
 * f32. */
wgt_tensor *wgt_matmul_ex(wgt_tensor *a, wgt_tensor *b, wgt_dtype out_dtype);
/* Matrix-product precision of a context (PyTorch's
 * torch.set_float32_matmul_precision and allow_fp16_reduced_precision_reduction
 * in spirit); returns the old setting.
 * HIGHEST (the default): products sum in f32 the operands as given.
 * MEDIUM, for inference:
 *  - a product with an f16 operand (wgt_matmul, wgt_matmul_ex, wgt_linear,
 *    wgt_linear_ex) MAY round its f32 operand to f16 and sum runs of up to 16
 *    products along k in f16 before adding each run to the f32 sums (WebGPU's
 *    register-blocked GEMM, M > 1 and N > 1; GEMVs and the CPU backend keep
 *    f32 sums). Operands and a run's sum must stay below f16's 65504 in
 *    magnitude (beyond it they become infinite).
 *  - wgt_qlinear, wgt_qlinear_ex, wgt_qlinear_rope_into and
 *    wgt_attention_qlinear_ex (and its 8-bit-cache form) DO quantize their x
 *    like the weights, any number of rows, every backend alike (x is the
 *    normalized row with a norm, the merged attention output with the
 *    attention): per row and group of 32 along k, s = max|x| * (1/127) (f32)
 *    and code = round-to-even(x / s) (all 0 when max|x| = 0; a group holding
 *    a NaN or an infinity: s = NaN, so its sums are NaN), then out[m, n] =
 *    sum over groups of (sum of code x * code w, exact in integers) * (s_x *
 *    s_w) in f32 (the CPU and the GPU GEMMs add the groups in order; a GPU's
 *    one-row kernel in its own order, 8-bit groups in two halves). GPUs
 *    multiply 8-bit integers four at a time (WGSL dot4I8Packed). The codes of
 *    a value within a rounding of a tie may differ by one between backends
 *    (x / s rounds; a norm's rstd too).
 * Env WGT_MATMUL_HALF=0 keeps the f16 products' f32 sums whatever the setting
 * (1 takes the f16 sums even at HIGHEST), for timing. */
typedef enum wgt_matmul_precision {
    WGT_MATMUL_PRECISION_HIGHEST = 0,
    WGT_MATMUL_PRECISION_MEDIUM = 1,
} wgt_matmul_precision;
wgt_matmul_precision wgt_set_matmul_precision(wgt_context *ctx, wgt_matmul_precision precision);

/* ------------------------------------------------------ neural-net layers */
/* x [..., in], weight [out, in] (PyTorch layout), bias [out] or NULL -> [..., out]
 * = x @ weight^T + bias. One GEMM: weight is read transposed in place and the
 * bias is added in the GEMM's epilogue. f32 or f16 (all three one dtype). */
wgt_tensor *wgt_linear(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias);
/* wgt_linear(wgt_gelu(h), weight, bias): a GPT MLP's activation and second
 * projection as one op (same arguments and values as the two calls). Its
 * gradient with respect to h comes out of one GEMM, dh = (dy weight) *
 * gelu'(h), with the slope applied in the product's epilogue on WebGPU: the
 * [..., in] gradient of gelu(h) is never stored or read back (the two calls'
 * backward writes it and reads it again). Keeps gelu(h) for the weight's
 * gradient, as wgt_linear of it would. f32 with a gradient; any float dtype
 * without. */
wgt_tensor *wgt_gelu_linear(wgt_tensor *h, wgt_tensor *weight, wgt_tensor *bias);
/* wgt_linear with wgt_matmul_ex's dtypes: x and weight f32 or f16 (mixed or
 * not), the result in out_dtype (as wgt_matmul_ex(x, weight^T, out_dtype)
 * allows); bias [out] or NULL, f32 (any operands) or f16 (when x or weight is
 * f16), added to the f32 sums before they are rounded to out_dtype. One
 * dispatch: LLM decode passes the residual stream as the bias, x + h W^T.
 * Arguments wgt_linear takes give wgt_linear (with its gradient); others have
 * no gradient rule (WGT_ERR_UNSUPPORTED when one requires grad). */
wgt_tensor *wgt_linear_ex(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype);
/* An LLM MLP's gate/up projection and SwiGLU in one call (one dispatch in
 * decode on WebGPU): weight [2F, in] holds gate row i at row 2i and up row i
 * at row 2i + 1 (interleaved), x [..., in] -> [..., F] in out_dtype =
 * silu(g) * u as wgt_fused("a / (1 + exp(-a)) * b") computes it, where
 * gu = wgt_linear_ex(x, weight, NULL, out_dtype), g = gu[..., 0::2] and
 * u = gu[..., 1::2] (so g and u are rounded to out_dtype first, and the
 * values are those of the two calls). No gradient (WGT_ERR_UNSUPPORTED when
 * x or weight requires grad). */
wgt_tensor *wgt_linear_swiglu_ex(wgt_tensor *x, wgt_tensor *weight, wgt_dtype out_dtype);
/* An RMSNorm, then a projection (swiglu false: wgt_linear_ex with no bias) or
 * a projection and SwiGLU (swiglu true: wgt_linear_swiglu_ex), the values of
 * those two calls on wgt_rms_norm(x, norm_weight, eps) bit for bit; one
 * dispatch in LLM decode on WebGPU (the norm computed in the product's
 * prologue: f32 x [1, K], f16 weight). No gradient. */
wgt_tensor *wgt_rms_norm_linear_ex(wgt_tensor *x, wgt_tensor *norm_weight, double eps, wgt_tensor *weight,
                                   wgt_dtype out_dtype, bool swiglu);
/* An LLM decode step's q/k/v projection with its rotary embedding, written
 * into dst (one dispatch on WebGPU with f16 weights): y = the values of
 * wgt_rms_norm_linear_ex(x, norm_weight, eps, weight, dst's dtype, false),
 * x one contiguous f32 row [1, K], weight [N, K] f32 or f16 with N = heads x
 * D; then for each head h outside [pass_begin, pass_end), with a = y[h D + i]
 * and b = y[h D + D/2 + i] (i < D/2) and table [4, D/2] (f32 or f16: the
 * rows of one position, t[0] t[1] multiplying a, t[2] t[3] multiplying b),
 *   dst[h D + i]       = a * t[0, i] + b * t[2, i]
 *   dst[h D + D/2 + i] = a * t[1, i] + b * t[3, i]
 * as wgt_fused("a * c + b * d") computes it (plain RoPE: t = cos, sin,
 * -sin, cos); heads in the range (a model's v heads) are stored as y. dst:
 * N contiguous f32 or f16 elements, e.g. a KV cache's rows. No gradient. */
wgt_status wgt_rms_norm_linear_rope_into(wgt_tensor *dst, wgt_tensor *x, wgt_tensor *norm_weight, double eps,
                                         wgt_tensor *weight, wgt_tensor *table, int64_t pass_begin, int64_t pass_end);
/* Quantized linear for inference (LLM decode and prefill): x [..., K] f32 ->
 * [..., N] f32 = x W^T, with W [N, K] stored group-wise: each run of 32
 * weights along K shares one f32 scale, scales f32 [N, K/32]; K % 32 == 0.
 *   bits 8: qweight i32 [N, K/4], four int8 codes per word (byte j of word i
 *           is weight 4i + j), w = code * scale (ggml Q8_0's idea).
 *   bits 4: qweight i32 [N, K/8], eight 4-bit codes per word (nibble j, low
 *           first, is weight 8i + j), w = (code - 8) * scale (ggml Q4_0's).
 * The weights are dequantized inside the kernel (never a float copy of W).
 * No gradient (WGT_ERR_UNSUPPORTED under autograd if x requires grad). */
wgt_tensor *wgt_qlinear(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits);
/* wgt_qlinear with LLM decode's neighbours folded in: one dispatch on WebGPU
 * for a single row whose x fits the workgroup memory, elsewhere the
 * composition of the calls it stands for (fusion NULL: wgt_qlinear, with x
 * f32 or f16):
 *   norm_weight f32 [K] or NULL: x is first wgt_rms_norm(x, norm_weight, norm_eps)
 *   bias f32 [N] or NULL: added to the sums (decode: the residual stream)
 *   swiglu: rows 2i and 2i + 1 of W are an MLP's gate and up rows, and the
 *           result [..., N / 2] is silu(g) * u, as wgt_fused("a / (1 +
 *           exp(-a)) * b") of the two sums (after the bias)
 * x may be f16 (read as f32). The values are the composition's up to f32
 * rounding (the fused kernel's sums, norm and exp are its own), not bit for
 * bit. No gradient. */
typedef struct wgt_qlinear_fusion {
    wgt_tensor *norm_weight;
    double norm_eps;
    wgt_tensor *bias;
    bool swiglu;
} wgt_qlinear_fusion;
wgt_tensor *wgt_qlinear_ex(wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                           const wgt_qlinear_fusion *fusion);
/* Quantizes w [N, K] (f32 or f16, K % 32 == 0) into wgt_qlinear's layout on
 * the host (symmetric, round to nearest: scale = max |w| / 127 for 8 bits,
 * max |w| / 7 for 4 bits, codes clamped to [-127, 127] / [-8, 7]); the two
 * tensors are new, in w's context. */
wgt_status wgt_quantize_weight(wgt_tensor *w, int bits, wgt_tensor **qweight, wgt_tensor **scales);
/* wgt_rms_norm_linear_rope_into for quantized weights (LLM decode, one
 * dispatch on WebGPU): y = wgt_qlinear_ex(x, qweight, scales, bits,
 * {norm_weight, eps}) (the f32 sums of one f32 row x [1, K]), then each
 * head outside [pass_begin, pass_end) rotated by table [4, D/2] as
 * wgt_rms_norm_linear_rope_into rotates, into dst (N contiguous f32 or f16
 * elements). No gradient. */
wgt_status wgt_qlinear_rope_into(wgt_tensor *dst, wgt_tensor *x, wgt_tensor *qweight, wgt_tensor *scales, int bits,
                                 wgt_tensor *norm_weight, double eps, wgt_tensor *table, int64_t pass_begin,
                                 int64_t pass_end);
/* A decode step's attention and its output projection in one call:
 *   a = wgt_scaled_dot_product_attention(q, k, v, causal, 0, 0), q [B, H, Tq, D]
 *       and k, v [B, Hkv, Tk, D] of one float dtype (a in that dtype),
 *   its heads merged into rows [B Tq, H D] (a.permute(0, 2, 1, 3).reshape),
 *   y = wgt_linear_ex(a, weight, bias, out_dtype) (weight [N, H D]), or for
 *   the q variant wgt_qlinear_ex(a, qweight, scales, bits, {.bias = bias}).
 * The values of those calls. With one query row (B = Tq = 1), f16 or
 * quantized weights and an f32 bias [N] or none, WebGPU runs the attention's
 * combine inside the projection (one dispatch fewer a layer in LLM decode).
 * No gradient (an argument that requires grad is refused). */
wgt_tensor *wgt_attention_linear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *weight,
                                    wgt_tensor *bias, wgt_dtype out_dtype);
wgt_tensor *wgt_attention_qlinear_ex(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal, wgt_tensor *qweight,
                                     wgt_tensor *scales, int bits, wgt_tensor *bias);
/* The same over an 8-bit KV cache: a = wgt_attention_q8(q, k_codes, k_scales,
 * v_codes, v_scales, causal) (in q's dtype), then the heads merged and the
 * projection as above. WebGPU fuses one query row as above. */
wgt_tensor *wgt_attention_q8_linear_ex(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                                       wgt_tensor *v_scales, bool causal, wgt_tensor *weight, wgt_tensor *bias,
                                       wgt_dtype out_dtype);
wgt_tensor *wgt_attention_q8_qlinear_ex(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                                        wgt_tensor *v_scales, bool causal, wgt_tensor *qweight, wgt_tensor *scales,
                                        int bits, wgt_tensor *bias);
/* 8-bit rows, for an LLM's 8-bit KV cache (llama.cpp's q8_0 cache in
 * spirit): each run of 32 values along the last dim shares one f32 scale.
 * x [.., D] f32 or f16 (1 to 4 dims, D a multiple of 32) is written into
 * codes i32 [.., D/4] (four int8 codes a word, byte k % 4 of word k / 4 is
 * value k: wgt_qlinear's 8-bit layout) and scales f32 [.., D/32], views of
 * x's leading shape (any strides there, e.g. a cache's rows; unit stride along
 * the last dim; three storages): per group s = max|x| * (1/127) (1/127 rounded
 * to f32: the same bits on every backend), code =
 * round-to-even(x / s) in [-127, 127] (all 0 when max|x| = 0; a group holding
 * a NaN or an infinity: s = NaN, codes 0), the rounding of wgt_qlinear's
 * int8_x. Value = code * s: wgt_dequantize_rows returns [.., D] of dtype (f32
 * or f16). No gradient (WGT_ERR_UNSUPPORTED when an argument requires grad). */
wgt_status wgt_quantize_rows_into(wgt_tensor *codes, wgt_tensor *scales, wgt_tensor *x);
wgt_tensor *wgt_dequantize_rows(wgt_tensor *codes, wgt_tensor *scales, wgt_dtype dtype);
/* Attention over 8-bit keys and values (decoding with an 8-bit KV cache):
 * the values of wgt_scaled_dot_product_attention(q, dequantize(k), dequantize(v),
 * causal, 0, 0) up to the order of f32 sums, q [B, H, Tq, D] f32 or f16 (D a
 * multiple of 32), k and v as wgt_quantize_rows_into writes them: codes i32
 * [B, Hkv, Tk, D/4], scales f32 [B, Hkv, Tk, D/32] (any strides on the first
 * three dims), H a multiple of Hkv -> [B, H, Tq, D] in q's dtype. WebGPU reads
 * the codes in its decode kernel (Tq <= 4: half the bytes of an f16 cache a
 * key); longer q dequantize k and v into temporaries first. No gradient. */
wgt_tensor *wgt_attention_q8(wgt_tensor *q, wgt_tensor *k_codes, wgt_tensor *k_scales, wgt_tensor *v_codes,
                             wgt_tensor *v_scales, bool causal);
/* Fused (flash) attention: softmax(q k^T / sqrt(D) [+ causal mask]) v.
 * q [B, H, Tq, D]; k, v [B, Hkv, Tk, D] with H % Hkv == 0 (grouped-query: query
 * head h reads kv head h / (H / Hkv)) -> [B, H, Tq, D]. causal: query i sees keys
 * j <= i + (Tk - Tq) (bottom-right aligned, as PyTorch / flash-attention); a
 * query that sees no key gets zeros. dropout_p in [0, 1): attention weights are
 * dropped with probability dropout_p and the rest scaled by 1 / (1 - dropout_p),
 * the mask drawn from Philox(seed), identical on both backends. f32 or f16
 * (f32 arithmetic; WebGPU: D <= 256). No [Tq, Tk] tensor is ever stored.
 * When autograd records it, the result is a [B, Tq, H, D] buffer seen as
 * [B, H, Tq, D] (not contiguous), so merging the heads with transpose(1, 2)
 * and a reshape is a view and backward keeps one copy of it, not two. */
wgt_tensor *wgt_scaled_dot_product_attention(wgt_tensor *q, wgt_tensor *k, wgt_tensor *v, bool causal,
                                             double dropout_p, uint64_t seed);
/* Rotary position embedding. x [B, H, T, D] (D even) -> same shape; row t has
 * position position_offset + t and pair i turns by angle pos * theta^(-2i/D).
 * interleaved: pairs (x[2i], x[2i+1]) (GPT-J / Meta layout); otherwise
 * half-split pairs (x[i], x[i + D/2]) (Hugging Face rotate_half layout).
 * Positions 0 <= position_offset + t <= 2^24; WebGPU: D <= 256. */
wgt_tensor *wgt_rope(wgt_tensor *x, int64_t position_offset, double theta, bool interleaved);

/* ---------------------------------------------------------- data movement */
wgt_tensor *wgt_copy(wgt_tensor *x);                   /* fresh contiguous copy */
/* float -> i32 truncates toward 0 and saturates (NaN -> 0); float -> u8 goes
 * through that i32 and keeps the low 8 bits, as i32 -> u8 does; -> bool is
 * value != 0 (NaN -> true). */
wgt_tensor *wgt_cast(wgt_tensor *x, wgt_dtype dtype);
/* Sets every element of t (any view) to value, converted as wgt_cast does
 * (bool: value != 0, so 0.5 and NaN are true). */
wgt_status wgt_fill(wgt_tensor *t, double value);
/* dst (any view) = src broadcast to dst's shape, cast to dst's dtype. This is
 * slice assignment: wgt_assign(wgt_slice(x, ...), y). */
wgt_status wgt_assign(wgt_tensor *dst, wgt_tensor *src);
/* dst (any view, not a broadcast one) = wgt_fused(ctx, expression, inputs,
 * n_inputs) converted to dst's dtype, in one kernel that stores straight into
 * dst (no intermediate tensor; the values of wgt_assign(dst, wgt_fused(...))
 * bit for bit). The inputs broadcast to dst's shape; none may share dst's
 * storage. No gradient (dst must not require grad). LLM decode: the rotated
 * k and v written into the KV cache by the rotation kernel itself. */
wgt_status wgt_fused_assign(wgt_tensor *dst, const char *expression, wgt_tensor *const *inputs, int n_inputs);
/* tensors[n] equal except along axis -> concatenated along axis. */
wgt_tensor *wgt_concat(wgt_tensor *const *tensors, int n, int axis);
/* tensors[n] equal shapes [...] -> [..., n at axis, ...] */
wgt_tensor *wgt_stack(wgt_tensor *const *tensors, int n, int axis);
/* Views of x, sizes[n] along axis summing to dim(axis); out[n] receives them. */
wgt_status wgt_split(wgt_tensor *x, int axis, const int64_t *sizes, int n, wgt_tensor **out);
/* torch.gather: index i32 [same ndim as x] -> out[index shape],
 * out[i][j][k] = x[i][index[i][j][k]][k] for axis 1. Indices in [-D, 0) wrap
 * once. Out-of-range indices (gather, index_select, embedding, scatter_add,
 * one_hot): the element gets 0 (scatter_add skips it) and the context records
 * WGT_ERR_INVALID_ARGUMENT naming the op and the index, on the CPU at the call,
 * on WebGPU at the next read-back or wgt_synchronize (no round trip per op). */
wgt_tensor *wgt_gather(wgt_tensor *x, int axis, wgt_tensor *index);
/* x [..., D, ...], index i32 [n] -> [..., n, ...] rows of x chosen along axis. */
wgt_tensor *wgt_index_select(wgt_tensor *x, int axis, wgt_tensor *index);
/* Returns a copy of dst where out[i][index[i][j]] += src[i][j] (axis 1);
 * index and src have the same shape. f32 and i32. */
wgt_tensor *wgt_scatter_add(wgt_tensor *dst, int axis, wgt_tensor *index, wgt_tensor *src);
/* weight [V, D], ids i32 [...] -> [..., D] */
wgt_tensor *wgt_embedding(wgt_tensor *weight, wgt_tensor *ids);
/* pads[2*ndim]: (before, after) per dim, >= 0, filled with value. */
wgt_tensor *wgt_pad(wgt_tensor *x, const int64_t *pads, double value);
/* x [..., M, N]: keep elements with col - row <= k (tril) / >= k (triu). */
wgt_tensor *wgt_tril(wgt_tensor *x, int64_t k);
wgt_tensor *wgt_triu(wgt_tensor *x, int64_t k);
/* ids (integer) [...] -> dtype [..., num_classes]; ids outside [0, n) are an
 * error (reported as for wgt_gather). */
wgt_tensor *wgt_one_hot(wgt_tensor *ids, int64_t num_classes, wgt_dtype dtype);
/* x [..., N] -> values [..., k] (x's dtype), indices i32 [..., k] along the last
 * axis, largest first (smallest first if !largest); ties: lower index first. */
wgt_status wgt_topk(wgt_tensor *x, int64_t k, bool largest, wgt_tensor **values, wgt_tensor **indices);

/* --------------------------------------------------------- neural-network ops */
/* Fused layers and losses, each one kernel forward and one or two backward
 * (docs/ops.md). f32 or f16 inputs; the math and the statistics are f32. */
typedef enum wgt_reduction { WGT_REDUCTION_MEAN, WGT_REDUCTION_SUM, WGT_REDUCTION_NONE } wgt_reduction;
/* x [..., D]; weight, bias [D] or NULL -> [..., D], x's dtype:
 * (x - mean) / sqrt(var + eps) * weight + bias over the last dim, with the
 * biased variance, as PyTorch. eps >= 0. */
wgt_tensor *wgt_layer_norm(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, double eps);
/* x [..., D]; weight [D] or NULL -> [..., D]: x / sqrt(mean(x^2) + eps) * weight. */
wgt_tensor *wgt_rms_norm(wgt_tensor *x, wgt_tensor *weight, double eps);
/* logits [..., C] (f32/f16); targets i32 [...] (logits' shape without C) ->
 * f32 [] for MEAN (over the targets that are not ignore_index; NaN when all are
 * ignored, as PyTorch) and SUM, or f32 [...] for NONE. Fused log-softmax + NLL.
 * A target equal to ignore_index contributes 0. Any other target outside
 * [0, C) cannot be reported without reading the targets back to the host, so
 * it makes that row's loss NaN (and the MEAN/SUM NaN), on both backends. */
wgt_tensor *wgt_cross_entropy(wgt_tensor *logits, wgt_tensor *targets, wgt_reduction reduction, int64_t ignore_index);
/* input, target [...] of one shape (f32/f16) -> (input - target)^2, reduced:
 * [] for MEAN and SUM (f32); for NONE input's shape in the promoted dtype. */
wgt_tensor *wgt_mse_loss(wgt_tensor *input, wgt_tensor *target, wgt_reduction reduction);
/* x [...] (f32/f16) -> [...]: each element zeroed with probability p, the
 * others scaled by 1 / (1 - p). The keep mask of element i (row-major) is
 * wgt_rand's uniform u of element i (word i % 4 of Philox-4x32-10(seed) at
 * counter (i / 4, 0, 0, 0), >> 8, times 2^-24), kept
 * when u >= p (p rounded to f32): identical on every backend. 0 <= p < 1; p = 0
 * returns a copy. */
wgt_tensor *wgt_dropout(wgt_tensor *x, double p, uint64_t seed);
/* x + wgt_dropout(h, p, seed) in one kernel (a residual add), the same values;
 * x and h of one shape. */
wgt_tensor *wgt_dropout_add(wgt_tensor *x, wgt_tensor *h, double p, uint64_t seed);

/* ------------------------------------------------------ convolutional layers */
/* NCHW layout, f32 or f16 (f32 arithmetic), the semantics of torch.nn.functional
 * (docs/ops.md has the output-size formulas). */
typedef struct wgt_conv2d_options {
    int64_t stride[2];         /* (h, w), >= 1 */
    int64_t padding[4];        /* top, bottom, left, right, >= 0 (zeros) */
    int64_t dilation[2];       /* (h, w), >= 1 */
    int64_t groups;            /* >= 1, divides both channel counts */
    int64_t output_padding[2]; /* conv_transpose2d only: (h, w), each < its stride or dilation */
} wgt_conv2d_options;
/* stride 1, padding 0, dilation 1, groups 1, output_padding 0. */
void wgt_conv2d_options_init(wgt_conv2d_options *options);
/* x [N, C, H, W], weight [K, C / groups, KH, KW], bias [K] or NULL (options NULL:
 * defaults) -> [N, K, OH, OW], OH = (H + pad_top + pad_bottom - dilation (KH - 1)
 * - 1) / stride + 1 (floor), OW likewise. Depthwise: groups = C. */
wgt_tensor *wgt_conv2d(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, const wgt_conv2d_options *options);
/* The transposed convolution (the gradient of conv2d with respect to its input):
 * x [N, C, H, W], weight [C, K / groups, KH, KW] (PyTorch's layout), bias [K]
 * or NULL -> [N, K, OH, OW], OH = (H - 1) stride - pad_top - pad_bottom +
 * dilation (KH - 1) + output_padding + 1. */
wgt_tensor *wgt_conv_transpose2d(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias,
                                 const wgt_conv2d_options *options);

typedef struct wgt_pool2d_options {
    int64_t kernel[2];       /* (h, w), >= 1 */
    int64_t stride[2];       /* 0: the kernel size */
    int64_t padding[2];      /* (h, w), symmetric, at most half the kernel (as PyTorch) */
    int64_t dilation[2];     /* max_pool2d only; >= 1 */
    bool ceil_mode;          /* ceil instead of floor in the output size */
    bool count_include_pad;  /* avg_pool2d: padded zeros count in the divisor */
} wgt_pool2d_options;
/* kernel (kh, kw), stride = kernel, padding 0, dilation 1, floor mode,
 * count_include_pad true (PyTorch's defaults). */
void wgt_pool2d_options_init(wgt_pool2d_options *options, int64_t kh, int64_t kw);
/* x [N, C, H, W] -> [N, C, OH, OW], OH = (H + 2 pad - dilation (kernel - 1) - 1)
 * / stride + 1 (floor or ceil; with ceil a window must start inside the input
 * or the top padding). max: NaN wins, ties go to the first element of the
 * window in row-major order (the gradient flows there), as PyTorch. */
wgt_tensor *wgt_max_pool2d(wgt_tensor *x, const wgt_pool2d_options *options);
wgt_tensor *wgt_avg_pool2d(wgt_tensor *x, const wgt_pool2d_options *options);
/* x [N, C, H, W] -> [N, C, out_h, out_w]; window i covers rows floor(i H /
 * out_h) .. ceil((i + 1) H / out_h) - 1 (global pooling: out 1 x 1). */
wgt_tensor *wgt_adaptive_avg_pool2d(wgt_tensor *x, int64_t out_h, int64_t out_w);
/* x [N, C, ...] (N, C or N, C, H, W) normalized per channel over N and the
 * spatial dims: y = (x - mean) / sqrt(var + eps) * weight + bias (weight, bias
 * [C] or NULL). training: the batch's statistics (biased variance); the
 * running_mean / running_var [C] f32 tensors (either may be NULL) are updated
 * in place: r = (1 - momentum) r + momentum s, with the unbiased variance, as
 * PyTorch. Not training: the running statistics normalize (both required). */
wgt_tensor *wgt_batch_norm(wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var, wgt_tensor *weight,
                           wgt_tensor *bias, bool training, double momentum, double eps);
/* x [N, C, ...] -> x's shape: the C channels in num_groups groups (C %
 * num_groups == 0), each (sample, group) normalized over its channels and
 * spatial dims with the biased variance, then y * weight[c] + bias[c]
 * (weight, bias [C] or NULL), as torch.nn.functional.group_norm. Composite:
 * layer_norm on the [N, num_groups, rest] view, then the per-channel affine. */
wgt_tensor *wgt_group_norm(wgt_tensor *x, int64_t num_groups, wgt_tensor *weight, wgt_tensor *bias, double eps);

/* --------------------------------------------------------- custom kernels */
/* Runs caller-supplied WGSL on the WebGPU backend. Buffers are bound in order
 * at @group(0) @binding(0..n_buffers-1) as var<storage, read_write> (or
 * read-only where read_only[i]); if uniform_size > 0 the uniform bytes are bound
 * at binding n_buffers as var<uniform>. Each tensor binds its whole storage; the
 * tensor must be contiguous. Errors: WGT_ERR_SHADER_COMPILE (message carries the
 * compiler's line:column), WGT_ERR_INVALID_WORKGROUP_SIZE (size over the device
 * limits, a count over max_compute_workgroups_per_dimension, or var<workgroup>
 * variables over max_compute_workgroup_storage_size by the WebGPU rule: each
 * rounded up to 16 bytes; checked here because wgpu-native passes such a
 * kernel to the driver, and NVIDIA's hung). */
typedef struct wgt_custom_kernel {
    const char *wgsl;
    const char *entry_point;
    wgt_tensor *const *buffers;
    const bool *read_only;   /* NULL: all read_write */
    int n_buffers;
    const void *uniform;
    size_t uniform_size;
    uint32_t workgroups[3];  /* a count of 0 in any dimension records nothing */
} wgt_custom_kernel;

wgt_status wgt_custom_kernel_run(wgt_context *ctx, const wgt_custom_kernel *kernel);

/* --------------------------------------------------------------- autograd */
/* Reverse-mode automatic differentiation (docs/autograd.md). A tensor that
 * requires grad is a leaf whose gradient backward accumulates into its .grad.
 * While grad mode is on (the default), every differentiable op with an input
 * that requires grad records a node on the tape; the nodes live as long as the
 * tensors they made, so popping the scope of a training step frees the tape.
 * Only floating tensors (f32, f16) can require grad. */
wgt_status wgt_tensor_set_requires_grad(wgt_tensor *t, bool requires_grad);
bool wgt_tensor_requires_grad(const wgt_tensor *t);
/* The accumulated gradient (borrowed: valid until the next zero_grad, set_grad
 * or release of t), or NULL if backward has not reached t. */
wgt_tensor *wgt_tensor_grad(const wgt_tensor *t);
/* Replaces t's gradient (retains g; NULL clears). g must have t's shape. */
wgt_status wgt_tensor_set_grad(wgt_tensor *t, wgt_tensor *g);
/* Clears the gradients of n tensors (releases them; the next backward allocates). */
wgt_status wgt_zero_grad(wgt_tensor *const *tensors, int n);

/* Backpropagates from loss (any shape) with upstream gradient grad_output (loss's
 * shape; NULL means ones, i.e. d loss / d loss = 1, for a scalar loss). Unless
 * keep_graph, the tape below loss is released afterwards (a second backward
 * through it is an error). */
wgt_status wgt_backward_ex(wgt_tensor *loss, wgt_tensor *grad_output, bool keep_graph);
wgt_status wgt_backward(wgt_tensor *loss); /* scalar loss, keep_graph = false */
/* Gradient-ready hook (data-parallel training starts a leaf's all-reduce while
 * the rest of backward runs, docs/distributed.md): during every later
 * wgt_backward on ctx, fn(leaf, grad, user) is called once per leaf that
 * requires grad and is reached, as soon as leaf's .grad holds its final value
 * for this pass (every contribution accumulated; grad is wgt_tensor_grad(leaf),
 * borrowed). Leaves are reported in the order backward finishes them, before
 * wgt_backward returns; none after an error. fn may read grad (wgt_tensor_read)
 * and must not release the leaf or its grad. fn NULL removes the hook. */
typedef void (*wgt_grad_ready_fn)(wgt_tensor *leaf, wgt_tensor *grad, void *user);
wgt_status wgt_backward_set_grad_hook(wgt_context *ctx, wgt_grad_ready_fn fn, void *user);

/* Grad mode: nothing is recorded between push and pop (nests). */
wgt_status wgt_no_grad_push(wgt_context *ctx);
wgt_status wgt_no_grad_pop(wgt_context *ctx);
bool wgt_grad_enabled(const wgt_context *ctx);
/* A new tensor sharing t's storage that is cut off from the tape (no node, does
 * not require grad). */
wgt_tensor *wgt_detach(wgt_tensor *t);

/* ------------------------------------------------------------- optimizers */
/* Optimizers update parameter tensors in place from their .grad, one fused
 * kernel per parameter tensor (param, grad and state read and written once).
 * The state lives in device memory; changing the learning rate between steps
 * recompiles nothing and allocates nothing. Update equations are PyTorch's
 * (torch.optim.SGD / Adam / AdamW, maximize = false, amsgrad = false);
 * docs/ops.md writes them out. Parameters: contiguous f32 tensors (f16
 * parameters with f32 master weights are planned). A parameter without a
 * gradient is skipped, and its step counter does not advance (as PyTorch). */
typedef enum wgt_optimizer_kind {
    WGT_OPTIMIZER_SGD = 0,  /* momentum, dampening, Nesterov, L2 weight decay */
    WGT_OPTIMIZER_ADAM,     /* L2 weight decay added to the gradient */
    WGT_OPTIMIZER_ADAMW,    /* decoupled weight decay: p *= 1 - lr * weight_decay */
    WGT_OPTIMIZER_KIND_COUNT
} wgt_optimizer_kind;

typedef struct wgt_optimizer_config {
    wgt_optimizer_kind kind;
    double lr;                 /* SGD 1e-3, Adam 1e-3, AdamW 1e-3 */
    double weight_decay;       /* SGD 0, Adam 0, AdamW 1e-2 */
    double momentum;           /* SGD: 0 */
    double dampening;          /* SGD: 0 */
    bool nesterov;             /* SGD: needs momentum > 0 and dampening 0 */
    double beta1, beta2;       /* Adam/AdamW: 0.9, 0.999 */
    double eps;                /* Adam/AdamW: 1e-8 */
} wgt_optimizer_config;

/* Fills PyTorch's defaults for kind (see the fields). */
void wgt_optimizer_config_init(wgt_optimizer_config *config, wgt_optimizer_kind kind);

typedef struct wgt_optimizer wgt_optimizer;
/* params[n]: retained by the optimizer until destroy; state tensors (zeros)
 * are allocated here, so steps allocate nothing. NULL on error (recorded on the
 * parameters' context: bad hyperparameters, non-f32 or non-contiguous
 * parameters, a parameter listed twice). */
wgt_optimizer *wgt_optimizer_create(wgt_tensor *const *params, int n, const wgt_optimizer_config *config);
void wgt_optimizer_destroy(wgt_optimizer *opt);
/* One update of every parameter that has a gradient. */
wgt_status wgt_optimizer_step(wgt_optimizer *opt);
/* wgt_zero_grad over the optimizer's parameters. */
wgt_status wgt_optimizer_zero_grad(wgt_optimizer *opt);
wgt_status wgt_optimizer_set_lr(wgt_optimizer *opt, double lr);
double wgt_optimizer_lr(const wgt_optimizer *opt);
/* Gradients are multiplied by scale inside the update (default 1): with
 * gradients summed over k micro-batches, scale 1/k steps with their mean. */
wgt_status wgt_optimizer_set_grad_scale(wgt_optimizer *opt, double scale);
/* A device-side factor as well: gradients are also multiplied by scale's one
 * f32 element (read when a step runs; retained until replaced), e.g. the
 * factor of wgt_clip_grad_norm_scale, so clipping costs no kernel per
 * gradient. NULL removes it. */
wgt_status wgt_optimizer_set_grad_scale_tensor(wgt_optimizer *opt, wgt_tensor *scale);
/* Calls of wgt_optimizer_step so far (a checkpoint's step counter). */
int64_t wgt_optimizer_step_count(const wgt_optimizer *opt);
/* The configuration (with the current lr) and the number of parameters. */
wgt_status wgt_optimizer_config_get(const wgt_optimizer *opt, wgt_optimizer_config *config);
int wgt_optimizer_param_count(const wgt_optimizer *opt);

/* State for checkpoints. Tensors, in a fixed order, named "<kind>.<i>" for
 * parameter i: "momentum_buffer.<i>" (SGD with momentum), "exp_avg.<i>" and
 * "exp_avg_sq.<i>" (Adam, AdamW). *tensor is borrowed (owned by the optimizer);
 * restore by wgt_assign into it. Per-parameter step counters (steps taken with
 * a gradient: Adam's bias corrections, SGD's first momentum step) are plain
 * integers, with the global count. */
int wgt_optimizer_state_count(const wgt_optimizer *opt);
wgt_status wgt_optimizer_state_get(wgt_optimizer *opt, int index, const char **name, wgt_tensor **tensor);
int64_t wgt_optimizer_param_steps(const wgt_optimizer *opt, int param_index);
wgt_status wgt_optimizer_set_steps(wgt_optimizer *opt, int64_t step_count, const int64_t *param_steps);

/* Gradient clipping by global norm: norm = sqrt(sum over params of sum(g^2))
 * (params without a gradient count 0); every gradient is multiplied by
 * min(1, max_norm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_. The
 * norm and the scale stay on the device (no host round trip). total_norm, if
 * not NULL, receives the norm as an f32 [] tensor owned by the caller. */
wgt_status wgt_clip_grad_norm(wgt_tensor *const *params, int n, double max_norm, wgt_tensor **total_norm);
/* The same norm, but the gradients are left alone: *scale receives
 * min(1, max_norm / (norm + 1e-6)) as an f32 [] tensor owned by the caller,
 * for wgt_optimizer_set_grad_scale_tensor (the update then clips). */
wgt_status wgt_clip_grad_norm_scale(wgt_tensor *const *params, int n, double max_norm, wgt_tensor **scale,
                                    wgt_tensor **total_norm);

/* Learning-rate schedules, pure functions of the step (nanoGPT's get_lr):
 * CONSTANT: lr. WARMUP_COSINE: lr * (step + 1) / warmup_steps while step <
 * warmup_steps; min_lr after decay_steps; between, min_lr + 0.5 * (1 +
 * cos(pi * r)) * (lr - min_lr), r = (step - warmup) / (decay - warmup).
 * LINEAR_WARMUP: the warmup, then lr. */
typedef enum wgt_lr_schedule_kind {
    WGT_LR_CONSTANT = 0,
    WGT_LR_LINEAR_WARMUP,
    WGT_LR_WARMUP_COSINE
} wgt_lr_schedule_kind;

typedef struct wgt_lr_schedule {
    wgt_lr_schedule_kind kind;
    double lr;           /* peak learning rate */
    double min_lr;       /* WARMUP_COSINE floor */
    int64_t warmup_steps;
    int64_t decay_steps; /* WARMUP_COSINE: step at which min_lr is reached */
} wgt_lr_schedule;

/* NaN for an invalid schedule (negative steps, decay_steps <= warmup_steps for
 * cosine) or step < 0. */
double wgt_lr_at(const wgt_lr_schedule *schedule, int64_t step);

/* ------------------------------------------------------------ safetensors */
/* Checkpoints in the safetensors format (docs/checkpoints.md): an 8-byte
 * little-endian header length, a JSON header naming each tensor's dtype,
 * shape and byte range, then the raw little-endian data. */

typedef struct wgt_named_tensor {
    const char *name;     /* UTF-8, unique within a file */
    wgt_tensor *tensor;   /* f32, f16, i32, u8 or bool; any view */
} wgt_named_tensor;

typedef struct wgt_metadata_entry {
    const char *key, *value; /* UTF-8 strings (the "__metadata__" map) */
} wgt_metadata_entry;

/* Writes tensors[n] and metadata[n_metadata] (may be 0) to path atomically: a
 * temporary file in path's folder, fsync, rename over path. Either the whole
 * new file is there afterwards or the old one is untouched. */
wgt_status wgt_safetensors_save(wgt_context *ctx, const char *path, const wgt_named_tensor *tensors, int n,
                                const wgt_metadata_entry *metadata, int n_metadata);

/* An opened, fully validated file (memory-mapped). Every violation of the
 * format (header length, JSON, UTF-8, dtype, shape x dtype size against the
 * byte range, ranges in bounds, contiguous, not overlapping, covering the data,
 * duplicate names, header over 100 MB) gives WGT_ERR_BAD_FORMAT naming the
 * file, the tensor and the reason; NULL is returned. */
typedef struct wgt_safetensors wgt_safetensors;
wgt_safetensors *wgt_safetensors_open(wgt_context *ctx, const char *path);
/* The same from a caller's buffer (not copied: it must outlive the handle). */
wgt_safetensors *wgt_safetensors_open_memory(wgt_context *ctx, const void *data, size_t size, const char *what);
void wgt_safetensors_close(wgt_safetensors *file);

typedef struct wgt_safetensors_info {
    const char *name;
    const char *dtype;    /* as in the file: "F32", "BF16", "I64", ... */
    int ndim;
    int64_t shape[WGT_MAX_DIMS];
    uint64_t data_bytes;
} wgt_safetensors_info;

int wgt_safetensors_count(const wgt_safetensors *file);
/* Tensor i in file order (sorted by byte offset); strings live as long as file. */
wgt_status wgt_safetensors_info_get(const wgt_safetensors *file, int i, wgt_safetensors_info *info);
int wgt_safetensors_find(const wgt_safetensors *file, const char *name); /* index or -1 */
/* Uploads the named tensor to the context's backend. F32, F16, I32, U8 and
 * BOOL load as themselves, BF16 as f32 (exact); other dtypes (F64, I64, ...)
 * give WGT_ERR_UNSUPPORTED, a BOOL byte other than 0/1 WGT_ERR_BAD_FORMAT. */
wgt_tensor *wgt_safetensors_load(wgt_safetensors *file, const char *name);
int wgt_safetensors_metadata_count(const wgt_safetensors *file);
wgt_status wgt_safetensors_metadata_get(const wgt_safetensors *file, int i, const char **key, const char **value);
const char *wgt_safetensors_metadata_find(const wgt_safetensors *file, const char *key); /* NULL if absent */

/* Training checkpoints on top of safetensors: the named parameters, the
 * optimizer's state tensors (stored as "optimizer.<state name>", e.g.
 * "optimizer.exp_avg.3") and its step counters (metadata "optimizer.kind",
 * "optimizer.step", "optimizer.param_steps" = "3,3,2"), plus metadata[n_metadata]
 * (keys must not start with "optimizer."). opt may be NULL. Atomic, as
 * wgt_safetensors_save. */
wgt_status wgt_checkpoint_save(const char *path, const wgt_named_tensor *params, int n, wgt_optimizer *opt,
                               const wgt_metadata_entry *metadata, int n_metadata);
/* Restores in place, bit for bit: each params[i].tensor from the tensor of its
 * name (same shape and dtype, else WGT_ERR_SHAPE_MISMATCH / WGT_ERR_DTYPE; a
 * missing name is WGT_ERR_BAD_FORMAT), then opt's state and counters (opt must
 * be of the saved kind over the same parameters). opt may be NULL. */
wgt_status wgt_checkpoint_load(const char *path, const wgt_named_tensor *params, int n, wgt_optimizer *opt);

/* --------------------------------------------------------------- version */
const char *wgt_version(void); /* "0.1.0" */

#ifdef __cplusplus
}
#endif
#endif /* WGTENSOR_H */
