/*
 * Private core types: the context (sticky error, scopes, backend) and the tensor
 * (a view plus ownership). Only src/ sees this header.
 */
#ifndef WGT_INTERNAL_H
#define WGT_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

#include "core/backend.h"
#include "wgtensor.h"

#define WGT_MESSAGE_SIZE 1024

typedef struct wgt_scope {
    wgt_tensor **tensors;
    size_t count, capacity;
} wgt_scope;

/* A read started by wgt_tensor_read_start (src/ops/transfer.c), linked into
 * its context until finished, so that wgt_context_destroy can discard it. */
struct wgt_read {
    wgt_context *ctx;
    void *pending;          /* the backend's pending read; NULL when done at start */
    unsigned char *host;    /* aligned_bytes read synchronously at start (no two-half backend) */
    size_t need;            /* bytes of the tensor's elements */
    size_t skip;            /* bytes before them in the word-aligned range */
    size_t aligned_bytes;
    struct wgt_read *prev, *next;
};

struct wgt_context {
    wgt_status status;              /* sticky: WGT_OK until an error */
    bool fatal;                     /* creation failed or device lost: never clears */
    char message[WGT_MESSAGE_SIZE];
    wgt_backend *backend;
    wgt_backend_kind backend_kind;
    wgt_context_options options;
    wgt_scope *scopes;              /* stack; scopes[n_scopes-1] is innermost */
    int n_scopes, scopes_capacity;
    int64_t live_tensors;
    bool profiling;                 /* wgt_profiler_enable(ctx, true) succeeded */
    int no_grad_depth;              /* wgt_no_grad_push nesting; > 0 = no recording */
    wgt_matmul_precision matmul_precision; /* wgt_set_matmul_precision */
    uint64_t backward_passes;       /* numbers the visits of each wgt_backward */
    wgt_grad_ready_fn grad_hook;    /* wgt_backward_set_grad_hook; NULL: none */
    void *grad_hook_user;
    /* Kernel-choice knobs the op floor reads, from the environment when the
     * context is created (src/runtime/context_create.c); the WebGPU backend's
     * own are in its struct (src/webgpu/knobs.h). */
    /* wgt_memory_trace_peak (core/memory_trace.c): NULL when off; the phase
     * backward.c is in, so allocations can be told apart by who made them */
    struct wgt_memory_trace *memory_trace;
    const char *trace_where;        /* NULL outside backward, else a static name */
    int trace_rule1;                /* wgt_op + 1 of the node being processed; 0: none */
    struct wgt_read *reads;         /* started, not finished (wgt_tensor_read_start) */
    bool conv_frontend_splits;      /* WGT_CONV_SPLITK=0: the backend's split-K is off, so the ops floor splits
                                     * the convolution weight gradient itself (the former path); default false */
    bool no_window_dest;            /* WGT_AUTOGRAD_WINDOW_DEST=0: rules get no window destinations (backward.c),
                                     * their gradients are copied into the windows; for comparisons */
    int norm_fused_chunks;          /* WGT_NORM_FUSED_CHUNKS=n in [16, 65536]: the norm backward with partials
                                     * in at most n chunks of rows (nn_norm.c); default 0: 1024 */
    bool no_grad_fold;              /* WGT_AUTOGRAD_FOLD=0: norms' rules get no gradient to add into
                                     * (backward.c), the engine adds; for comparisons */
    bool no_dropout_mask;           /* WGT_DROPOUT_MASK=0: a recorded wgt_dropout_add keeps no mask bits; its
                                     * backward draws the mask again (nn_loss.c); for comparisons */
};

struct wgt_tensor {
    wgt_context *ctx;
    int refcount;
    wgt_tensor_view view;                  /* view.storage holds one storage reference */
    int scope_level;                /* index into ctx->scopes, -1 if unscoped */
    size_t scope_slot;              /* position in that scope's array */
    /* autograd (src/core/tape.h, src/autograd) */
    bool requires_grad;             /* a leaf whose gradient is accumulated into grad */
    wgt_tensor *grad;               /* owned reference; NULL until backward writes it */
    struct wgt_grad_node *grad_node; /* how this tensor was made; NULL for leaves */
    /* grad hook bookkeeping (src/autograd/backward.c): the pass that counted
     * this leaf's incoming gradients and how many are still to come */
    uint64_t hook_pass;
    int hook_pending;
};

typedef struct wgt_memory_trace wgt_memory_trace;
/* Storage lifetime hooks of the peak trace; called only while it is on
 * (alloc) or the storage carries a record (wrap, free). */
void wgt_memory_trace_alloc(wgt_context *ctx, wgt_storage *s, const char *op);
void wgt_memory_trace_wrap(wgt_context *ctx, wgt_storage *s, const wgt_tensor_view *v);
void wgt_memory_trace_free(wgt_context *ctx, wgt_storage *s);

/* Records an error on ctx (first error wins; later ones are ignored until
 * cleared) and returns status. fmt names the call first: "wgt_add: ...". */
wgt_status wgt_error(wgt_context *ctx, wgt_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An op that runs as a composition of other calls (wgt_attention_linear_ex,
 * wgt_rms_norm_linear_ex off their kernels' case) names itself in front of
 * an error one of those calls recorded: "op: inner call: ...". The op began
 * on a context with no error (wgt_op_begin refuses one), so any error now is
 * its calls'; a fatal one (device lost) is left as it is. */
void wgt_error_name_op(wgt_context *ctx, const char *op);
/* Marks the context permanently failed (device lost). */
void wgt_error_fatal(wgt_context *ctx, wgt_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "[2, 3, 4]" into buf; returns buf. */
const char *wgt_shape_string(int ndim, const int64_t *shape, char *buf, size_t size);
int64_t wgt_shape_numel(int ndim, const int64_t *shape);
/* Row-major contiguous strides (in elements) for shape. */
void wgt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
bool wgt_view_is_contiguous(const wgt_tensor_view *v);
/* Smallest and largest element index v addresses (lo = hi = offset when it is
 * empty), in checked arithmetic; false when a size is negative or the extent
 * does not fit in int64. */
bool wgt_view_extent(const wgt_tensor_view *v, int64_t *lo, int64_t *hi);
/* Whether a view can be handed out: rank in range, at most WGT_MAX_NUMEL
 * elements (src/core/checked.h), and every element it addresses inside its
 * storage. False + WGT_ERR_INVALID_ARGUMENT naming op and the view otherwise. */
bool wgt_view_check(wgt_context *ctx, const wgt_tensor_view *v, const char *op);

/* New tensor object that shares storage (takes a new storage reference) and is
 * registered in the current scope. NULL on OOM (error recorded). */
wgt_tensor *wgt_tensor_wrap(wgt_context *ctx, const wgt_tensor_view *view);
/* New contiguous tensor with fresh storage. */
wgt_tensor *wgt_tensor_alloc(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const char *op);
/* The same without debug guards (host I/O staging). */
wgt_tensor *wgt_tensor_alloc_unguarded(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape,
                                       const char *op);

/* References held inside the library (tape nodes, optimizers, models):
 * unlike wgt_tensor_release, dropping one never takes the tensor out of the
 * scope that owns it (see tensor.c). */
static inline wgt_tensor *wgt_tensor_ref(wgt_tensor *t)
{
    if (t) t->refcount++;
    return t;
}
void wgt_tensor_unref(wgt_tensor *t);

/* Takes t out of its scope (the caller or an owner such as a tape node or a
 * parameter's .grad now holds the reference). */
void wgt_scope_remove(wgt_tensor *t);

/* Normalizes axis into [0, ndim); false + error if out of range. */
bool wgt_normalize_axis(wgt_context *ctx, int *axis, int ndim, const char *op);

/* Sends a kernel call to the context's backend after checking support. */
wgt_status wgt_run_kernel(wgt_context *ctx, const wgt_kernel_call *call);

/* Storage reference helpers (the backend allocates / frees the handle). */
wgt_storage *wgt_storage_create(wgt_context *ctx, size_t bytes, const char *op);
void wgt_storage_retain(wgt_storage *s);
void wgt_storage_release(wgt_context *ctx, wgt_storage *s);

/* Discards every unfinished wgt_tensor_read_start of ctx (context destroy). */
void wgt_reads_discard_all(wgt_context *ctx);

#endif /* WGT_INTERNAL_H */
