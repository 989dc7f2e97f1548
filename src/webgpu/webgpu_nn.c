/*
 * WebGPU NN kernels (WGT_KERNEL_NN; contracts in src/core/backend.h):
 *
 *   NORM                    kernels/nn_norm.wgsl             one workgroup per row;
 *                           vec4 rows with subgroups: nn_norm_subgroup.wgsl, a row
 *                           per subgroup
 *   NORM_BACKWARD           kernels/nn_norm_backward.wgsl    one workgroup per row;
 *                           with partials, kernels/nn_norm_backward_fused.wgsl: one
 *                           workgroup per chunk of rows writes dx and the dw/db
 *                           partials (x and dy read once; rows of <= 4 slots per
 *                           thread, else nn_norm_backward + nn_norm_param_grads)
 *   NORM_PARAM_GRADS        kernels/nn_norm_param_grads.wgsl a thread per (chunk, column)
 *   PARTIALS_SUM            kernels/nn_partials_sum.wgsl     64 row lanes x 4 columns
 *   CROSS_ENTROPY           kernels/nn_cross_entropy.wgsl    one workgroup per row
 *   CROSS_ENTROPY_BACKWARD  kernels/nn_cross_entropy_backward.wgsl
 *   SUM_SQUARES             kernels/nn_sum_squares.wgsl      one workgroup per chunk
 *                           (its own parameter block: up to 7 inputs)
 *   DROPOUT_ADD, DROPOUT_MASKED  webgpu_dropout.c
 *
 * All share kernels/nn_common.wgsl (parameter block, workgroup sums). The
 * kernels read and write f32: f16 inputs are converted to f32 temporaries and
 * f16 outputs written through an f32 temporary (the f32 path is the one sized
 * for speed). Rows whose length and offsets are multiples of 4 use vec4 loads
 * and stores. The norms keep a row in registers (CACHE vec4 per thread) when
 * it fits, so x is read once and y written once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nn_call.h"
#include "webgpu/webgpu_internal.h"

#define NN_MAX_THREADS 256u /* the WebGPU default limit of invocations per workgroup */
#define NN_CACHE_MAX 8u     /* V slots a thread may keep in registers */

/* Our index logic keeps every access inside the views. */
static const bool nn_checked = false;

/* The parameter block of kernels/nn_common.wgsl. */
typedef struct nn_params {
    uint32_t rows, d, x_offset, y_offset;
    uint32_t w_offset, b_offset, stats_offset, dy_offset;
    uint32_t t_offset, t_stride, g_offset, g_stride;
    uint32_t flags;
    float eps;
    uint32_t chunk_rows, n_groups;
    int32_t ignore_index;
    uint32_t ignore_valid, lse_offset, nan_bits;
    uint32_t pw_offset, pb_offset, zero, pad1; /* zero: 0 (nn_common.wgsl's rounded()) */
} nn_params;
_Static_assert(sizeof(nn_params) % 16 == 0 && sizeof(nn_params) <= WEBGPU_PARAMS_MAX, "nn params");

enum { NN_HAS_WEIGHT = 1, NN_HAS_BIAS = 2, NN_RMS = 4, NN_ACCUMULATE = 8 };

static int nn_input_count(const wgt_kernel_call *call) { return wgt_nn_call_inputs(call); }
static int nn_output_count(const wgt_kernel_call *call) { return wgt_nn_call_outputs(call); }

static bool is_targets(const wgt_kernel_call *call, int i)
{
    return i == 1 && (call->nn.kernel == WGT_NN_CROSS_ENTROPY || call->nn.kernel == WGT_NN_CROSS_ENTROPY_BACKWARD);
}

/* The kernels address elements with u32 offsets, without bounds checks: every
 * element a view can reach must lie in its storage (strides >= 0). */
static bool fits_u32(const wgt_tensor_view *v)
{
    if (!v->storage || v->storage->bytes / 4 > UINT32_MAX || v->offset < 0 || v->offset > UINT32_MAX) return false;
    int64_t last = v->offset;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] == 0) return true; /* reaches nothing */
        if (v->strides[d] < 0) return false;
        last += (v->shape[d] - 1) * v->strides[d];
    }
    return (uint64_t)(last + 1) * wgt_dtype_size(v->dtype) <= v->storage->bytes;
}

bool webgpu_nn_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if ((unsigned)call->nn.kernel >= WGT_NN_KERNEL_COUNT) return false;
    if (call->nn.kernel == WGT_NN_DROPOUT_ADD || call->nn.kernel == WGT_NN_DROPOUT_MASKED)
        return webgpu_dropout_supports(wg, call);
    if (call->n_inputs != nn_input_count(call) || call->n_outputs < nn_output_count(call)) return false;
    if (!wgt_nn_call_shapes_valid(call)) return false; /* the kernels index without bounds checks */
    for (int i = 0; i < call->n_inputs; i++) {
        const wgt_tensor_view *v = &call->inputs[i];
        bool float_ok = v->dtype == WGT_F32 || v->dtype == WGT_F16;
        if (is_targets(call, i) ? v->dtype != WGT_I32 : !float_ok) return false;
        if (!fits_u32(v)) return false;
    }
    for (int i = 0; i < nn_output_count(call); i++) {
        const wgt_tensor_view *v = &call->outputs[i];
        if ((v->dtype != WGT_F32 && v->dtype != WGT_F16) || !fits_u32(v)) return false;
    }
    return true;
}

/* ------------------------------------------------------------ temporaries */

/* The kernels compute in f32: f16 inputs and outputs go through temporaries
 * (webgpu_f32_views, f32_views.c). */

/* ---------------------------------------------------------------- pipelines */

typedef struct nn_shape {
    uint32_t threads; /* WG */
    uint32_t width;   /* W: 4 (vec4) or 1 */
    uint32_t cache;   /* CACHE (>= 1) */
    bool cached;      /* the row fits in threads * cache slots */
    bool subgroups;   /* the kernel uses subgroup built-ins (the module starts with their directive) */
} nn_shape;

/* Threads per row: at least 2 slots each where the row allows (more loads in
 * flight per thread, fewer levels in the workgroup sums), 64..256. The norm
 * kernels' choice can be forced with env WGT_WEBGPU_NORM_THREADS=64|128|256
 * (for tuning on a new GPU). */
static nn_shape shape_for(const webgpu_backend *wg, uint64_t slots, uint32_t width, bool caches)
{
    nn_shape sh = {64, width, 1, false, false};
    while (sh.threads < NN_MAX_THREADS && (uint64_t)sh.threads * 4 <= slots) sh.threads *= 2;
    if (caches && wg->knobs.norm_threads) sh.threads = wg->knobs.norm_threads;
    if (caches) {
        uint64_t per_thread = (slots + sh.threads - 1) / sh.threads;
        if (per_thread == 0) per_thread = 1;
        if (per_thread <= NN_CACHE_MAX) {
            sh.cache = (uint32_t)per_thread;
            sh.cached = true;
        }
    }
    return sh;
}

uint32_t webgpu_norm_row_threads(const webgpu_backend *wg, uint64_t slots) { return shape_for(wg, slots, 4, true).threads; }

static wgt_status get_pipeline(webgpu_backend *wg, const char *file, const nn_shape *sh, int n_read_only,
                               int n_read_write, const char *op, webgpu_pipeline **out)
{
    char key[96];
    snprintf(key, sizeof(key), "%s/%u/%u/%u/%d", file, sh->threads, sh->width, sh->cache, (int)sh->cached);
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    const char *common = webgpu_kernel_source("nn_common"), *body = webgpu_kernel_source(file);
    if (!common || !body)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel source %s is not embedded", op, body ? "nn_common" : file);
    const char *helpers =
        sh->width == 4
            ? "alias V = vec4<f32>;\nconst W = 4u;\n"
              "fn hsum(v: V) -> f32 { return (v.x + v.y) + (v.z + v.w); }\n"
              "fn splat(f: f32) -> V { return V(f); }\n"
              "fn vmax(v: V) -> f32 { return max(max(v.x, v.y), max(v.z, v.w)); }\n"
              "fn vnan(v: V) -> bool { return any(v != v); }\n"
              "fn rounded(v: V) -> V { return bitcast<V>(bitcast<vec4<u32>>(v) | vec4<u32>(params.zero)); }\n"
              "fn onehot(i: u32, t: i32) -> V {\n"
              "    let p = vec4<i32>(i32(i * 4u)) + vec4<i32>(0, 1, 2, 3);\n"
              "    return select(V(0.0), V(1.0), p == vec4<i32>(t));\n}\n"
            : "alias V = f32;\nconst W = 1u;\n"
              "fn hsum(v: V) -> f32 { return v; }\n"
              "fn splat(f: f32) -> V { return f; }\n"
              "fn vmax(v: V) -> f32 { return v; }\n"
              "fn vnan(v: V) -> bool { return v != v; }\n"
              "fn rounded(v: V) -> V { return bitcast<V>(bitcast<u32>(v) | params.zero); }\n"
              "fn onehot(i: u32, t: i32) -> V { return select(0.0, 1.0, i32(i) == t); }\n";
    char prelude[200];
    snprintf(prelude, sizeof(prelude), "%sconst WG = %uu;\nconst CACHE = %uu;\nconst CACHED = %s;\n",
             sh->subgroups ? webgpu_native_subgroups_directive() : "", sh->threads, sh->cache,
             sh->cached ? "true" : "false");
    size_t n = strlen(prelude) + strlen(helpers) + strlen(common) + strlen(body) + 4;
    char *source = malloc(n);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    snprintf(source, n, "%s%s%s\n%s", prelude, helpers, common, body);
    wgt_status s = webgpu_pipeline_create(wg, key, source, NULL, n_read_only, n_read_write, true, nn_checked, op, out);
    free(source);
    return s;
}

static wgt_status dispatch(webgpu_backend *wg, webgpu_pipeline *p, const WGPUBuffer *buffers, int n, nn_params *params,
                           uint64_t groups, const char *op)
{
    uint32_t gx, gy;
    params->n_groups = (uint32_t)groups;
    wgt_status s = webgpu_grid(wg, groups, &gx, &gy, op);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, p, buffers, n, params, sizeof(*params), gx, gy, 1, op);
}

/* ------------------------------------------------------------------ kernels */

static uint32_t off(const wgt_tensor_view *v, uint32_t width) { return (uint32_t)(v->offset / width); }

/* vec4 loads when a row of d elements and every view's start are 4-aligned. */
static uint32_t vec_width(int64_t d, const wgt_tensor_view *const *views, int n)
{
    if (d % 4 != 0) return 1;
    for (int i = 0; i < n; i++)
        if (views[i]->offset % 4 != 0) return 1;
    return 4;
}

/* NORM_SUBGROUP_ROWS must equal ROWS of kernels/nn_norm_subgroup.wgsl. */
#define NORM_SUBGROUP_ROWS 8u
/* Rows of at most this many vec4 slots take a subgroup each. A subgroup's
 * lanes walk a row's slots in turn, three passes, each load a round of memory
 * latency: at 2048 elements (Llama's decode: one row) that is 16 rounds a
 * pass where a workgroup per row (nn_norm.wgsl, the row cached in registers)
 * takes one: the final norm of an H200 decode token, 14.9 -> 6.9 us profiled,
 * where a one-element cast takes 6.0 (bench/results/h200-2026-11-29n/p1).
 * The GPT's rows of 384 (3 slots a lane) are what the subgroup kernel is for. */
#define NORM_SUBGROUP_MAX_SLOTS 128u

static wgt_status run_norm(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v, nn_params *pr)
{
    int k = 1;
    const wgt_tensor_view *x = &v->in[0];
    const wgt_tensor_view *w = call->nn.has_weight ? &v->in[k++] : x;
    const wgt_tensor_view *b = call->nn.has_bias ? &v->in[k++] : x;
    const wgt_tensor_view *y = &v->out[0], *stats = &v->out[1];
    uint32_t width = vec_width(pr->d, (const wgt_tensor_view *[]){x, y, w, b}, 4);
    nn_shape sh = shape_for(wg, pr->d / width, width, true);
    /* vec4 rows with subgroups: a row per subgroup (nn_norm_subgroup.wgsl; WGT_NORM_SUBGROUP=0: a row per
     * workgroup); not where the compiler checks subgroup uniformity (browsers), which its row loop fails */
    const bool by_subgroup = wg->has_subgroups && wg->knobs.norm_subgroup && width == 4 &&
                             pr->d / width <= NORM_SUBGROUP_MAX_SLOTS && !webgpu_native_subgroup_uniformity_checked();
    if (by_subgroup) sh = (nn_shape){NN_MAX_THREADS, 4, 1, false, true};
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, by_subgroup ? "nn_norm_subgroup" : "nn_norm", &sh, 3, 2, call->op_name, &p);
    if (s != WGT_OK) return s;
    pr->x_offset = off(x, width), pr->y_offset = off(y, width);
    pr->w_offset = off(w, width), pr->b_offset = off(b, width);
    pr->stats_offset = (uint32_t)stats->offset;
    WGPUBuffer buffers[5] = {webgpu_view_buffer(x), webgpu_view_buffer(w), webgpu_view_buffer(b), webgpu_view_buffer(y),
                             webgpu_view_buffer(stats)};
    uint64_t groups = by_subgroup ? ((uint64_t)pr->rows + NORM_SUBGROUP_ROWS - 1) / NORM_SUBGROUP_ROWS : pr->rows;
    return dispatch(wg, p, buffers, 5, pr, groups, call->op_name);
}

/* Partial sums per chunk of rows (kernels/nn_norm_param_grads.wgsl): dw from
 * dy xhat, db (NULL: not wanted) from dy, [P, D] each. */
/* The weight/bias gradient kernels bind a db buffer even without a bias and
 * never write it then. It must not be dw (two writable aliases in one
 * dispatch), so a small temporary stands in; scratch has no storage (nothing
 * to release) when db is given. */
static wgt_status bias_stand_in(webgpu_backend *wg, const wgt_tensor_view **db, wgt_tensor_view *scratch)
{
    memset(scratch, 0, sizeof(*scratch));
    if (*db) return WGT_OK;
    int64_t one = 4;
    wgt_status s = webgpu_temp_alloc(wg, WGT_F32, 1, &one, scratch);
    if (s == WGT_OK) *db = scratch;
    return s;
}

static wgt_status norm_partials(webgpu_backend *wg, const wgt_kernel_call *call, const wgt_tensor_view *x,
                                const wgt_tensor_view *stats, const wgt_tensor_view *dy, const wgt_tensor_view *dw,
                                const wgt_tensor_view *db, nn_params *pr)
{
    wgt_tensor_view scratch;
    bool has_bias = db != NULL;
    wgt_status s = bias_stand_in(wg, &db, &scratch);
    if (s != WGT_OK) return s;
    uint32_t width = vec_width(pr->d, (const wgt_tensor_view *[]){x, dy, dw, db}, 4);
    nn_shape sh = shape_for(wg, pr->d / width, width, false);
    webgpu_pipeline *p;
    s = get_pipeline(wg, "nn_norm_param_grads", &sh, 3, 2, call->op_name, &p);
    if (s == WGT_OK) {
        uint64_t chunks = (uint64_t)dw->shape[0];
        uint64_t per_chunk = (pr->d / width + sh.threads - 1) / sh.threads;
        pr->x_offset = off(x, width), pr->dy_offset = off(dy, width), pr->y_offset = off(dw, width);
        pr->b_offset = off(db, width), pr->stats_offset = (uint32_t)stats->offset;
        pr->chunk_rows = (uint32_t)call->nn.chunk_rows;
        pr->flags = (pr->flags & ~(uint32_t)NN_HAS_BIAS) | (has_bias ? NN_HAS_BIAS : 0);
        WGPUBuffer buffers[5] = {webgpu_view_buffer(x), webgpu_view_buffer(stats), webgpu_view_buffer(dy),
                                 webgpu_view_buffer(dw), webgpu_view_buffer(db)};
        s = dispatch(wg, p, buffers, 5, pr, chunks * per_chunk, call->op_name);
    }
    if (scratch.storage) webgpu_temp_release(wg, &scratch);
    return s;
}

static wgt_status run_norm_param_grads(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v,
                                       nn_params *pr)
{
    return norm_partials(wg, call, &v->in[0], &v->in[1], &v->in[2], &v->out[0], call->nn.has_bias ? &v->out[1] : NULL,
                         pr);
}

/* NORM_BACKWARD with partials, one pass (kernels/nn_norm_backward_fused.wgsl):
 * rows that fit in 4 slots per thread. */
static wgt_status run_norm_backward_fused(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v,
                                          const nn_shape *sh, uint32_t width, nn_params *pr)
{
    int k = 0;
    const wgt_tensor_view *x = &v->in[k++];
    const wgt_tensor_view *w = call->nn.has_weight ? &v->in[k++] : x;
    const wgt_tensor_view *stats = &v->in[k++], *dy = &v->in[k++];
    const wgt_tensor_view *dx = &v->out[0], *dw = &v->out[1];
    wgt_tensor_view scratch = {0};
    const wgt_tensor_view *db = call->nn.has_bias ? &v->out[2] : NULL;
    if (!db) { /* bound, never written (see norm_partials) */
        int64_t one = 4;
        wgt_status s = webgpu_temp_alloc(wg, WGT_F32, 1, &one, &scratch);
        if (s != WGT_OK) return s;
        db = &scratch;
    }
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, "nn_norm_backward_fused", sh, 4, 3, call->op_name, &p);
    if (s == WGT_OK) {
        pr->x_offset = off(x, width), pr->w_offset = off(w, width), pr->dy_offset = off(dy, width);
        pr->y_offset = off(dx, width), pr->stats_offset = (uint32_t)stats->offset;
        pr->pw_offset = off(dw, width), pr->pb_offset = off(db, width);
        pr->chunk_rows = (uint32_t)call->nn.chunk_rows;
        WGPUBuffer buffers[7] = {webgpu_view_buffer(x),  webgpu_view_buffer(w),  webgpu_view_buffer(stats),
                                 webgpu_view_buffer(dy), webgpu_view_buffer(dx), webgpu_view_buffer(dw),
                                 webgpu_view_buffer(db)};
        s = dispatch(wg, p, buffers, 7, pr, (uint64_t)dw->shape[0], call->op_name);
    }
    if (scratch.storage) webgpu_temp_release(wg, &scratch);
    return s;
}

static wgt_status run_norm_backward(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v, nn_params *pr)
{
    int k = 0;
    const wgt_tensor_view *x = &v->in[k++];
    const wgt_tensor_view *w = call->nn.has_weight ? &v->in[k++] : x;
    const wgt_tensor_view *stats = &v->in[k++], *dy = &v->in[k++], *dx = &v->out[0];
    bool partials = call->nn.chunk_rows > 0;
    /* with partials, dw (and db) are written too */
    const wgt_tensor_view *views[6] = {x, w, dy, dx, &v->out[1], &v->out[2]};
    uint32_t width = vec_width(pr->d, views, partials ? (call->nn.has_bias ? 6 : 5) : 4);
    nn_shape sh = shape_for(wg, pr->d / width, width, true);
    if (partials && sh.cached && sh.cache <= 4) return run_norm_backward_fused(wg, call, v, &sh, width, pr);
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, "nn_norm_backward", &sh, 4, 1, call->op_name, &p);
    if (s != WGT_OK) return s;
    pr->x_offset = off(x, width), pr->w_offset = off(w, width), pr->dy_offset = off(dy, width);
    pr->y_offset = off(dx, width), pr->stats_offset = (uint32_t)stats->offset;
    WGPUBuffer buffers[5] = {webgpu_view_buffer(x), webgpu_view_buffer(w), webgpu_view_buffer(stats),
                             webgpu_view_buffer(dy), webgpu_view_buffer(dx)};
    s = dispatch(wg, p, buffers, 5, pr, pr->rows, call->op_name);
    /* rows too long for the fused kernel: the partials in a second pass */
    if (s == WGT_OK && partials)
        s = norm_partials(wg, call, x, stats, dy, &v->out[1], call->nn.has_bias ? &v->out[2] : NULL, pr);
    return s;
}

/* Column sums of the [P, D] weight (and bias) partials, one dispatch for both. */
static wgt_status run_partials_sum(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v, nn_params *pr)
{
    bool has_bias = call->nn.has_bias;
    const wgt_tensor_view *pw = &v->in[0], *pb = has_bias ? &v->in[1] : pw;
    const wgt_tensor_view *dw = &v->out[0], *db = has_bias ? &v->out[1] : NULL;
    wgt_tensor_view scratch;
    wgt_status s = bias_stand_in(wg, &db, &scratch);
    if (s != WGT_OK) return s;
    uint32_t width = vec_width(pr->d, (const wgt_tensor_view *[]){pw, pb, dw, db}, 4);
    nn_shape sh = {NN_MAX_THREADS, width, 1, false, false}; /* 4 columns x 64 row lanes */
    webgpu_pipeline *p;
    s = get_pipeline(wg, "nn_partials_sum", &sh, 2, 2, call->op_name, &p);
    if (s == WGT_OK) {
        uint64_t columns = sh.threads / 64u, per_input = (pr->d / width + columns - 1) / columns;
        pr->x_offset = off(pw, width), pr->b_offset = off(pb, width);
        pr->pw_offset = off(dw, width), pr->pb_offset = off(db, width);
        WGPUBuffer buffers[4] = {webgpu_view_buffer(pw), webgpu_view_buffer(pb), webgpu_view_buffer(dw),
                                 webgpu_view_buffer(db)};
        s = dispatch(wg, p, buffers, 4, pr, per_input * (has_bias ? 2 : 1), call->op_name);
    }
    if (scratch.storage) webgpu_temp_release(wg, &scratch);
    return s;
}

/* The parameter block of kernels/nn_sum_squares.wgsl. */
typedef struct sum_squares_params {
    uint32_t n_groups, chunk, out_offset, n_inputs;
    uint32_t offset[8], length[8], first[8];
} sum_squares_params;
_Static_assert(sizeof(sum_squares_params) % 16 == 0 && sizeof(sum_squares_params) <= WEBGPU_PARAMS_MAX, "sum_squares params");

/* Per-chunk sums of squares of up to 7 f32 inputs, one dispatch. Unused input
 * bindings repeat input 0 (read-only aliases are allowed; no workgroup reads them). */
static wgt_status run_sum_squares(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v)
{
    sum_squares_params pr;
    memset(&pr, 0, sizeof(pr));
    const uint64_t chunk = (uint64_t)call->nn.chunk_rows;
    uint64_t parts = 0;
    WGPUBuffer buffers[WGT_NN_SUM_SQUARES_MAX_INPUTS + 1];
    for (int k = 0; k < WGT_NN_SUM_SQUARES_MAX_INPUTS; k++) {
        const wgt_tensor_view *x = &v->in[k < call->n_inputs ? k : 0];
        buffers[k] = webgpu_view_buffer(x);
        if (k >= call->n_inputs) continue;
        pr.offset[k] = (uint32_t)x->offset;
        pr.length[k] = (uint32_t)x->shape[0];
        pr.first[k] = (uint32_t)parts;
        parts += ((uint64_t)x->shape[0] + chunk - 1) / chunk;
    }
    if (chunk > UINT32_MAX || parts > UINT32_MAX)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %llu partials exceed the kernel's u32 indexing",
                         call->op_name, (unsigned long long)parts);
    pr.chunk = (uint32_t)chunk;
    pr.n_inputs = (uint32_t)call->n_inputs;
    pr.out_offset = (uint32_t)v->out[0].offset;
    buffers[WGT_NN_SUM_SQUARES_MAX_INPUTS] = webgpu_view_buffer(&v->out[0]);
    webgpu_pipeline *p = webgpu_pipeline_find(wg, "nn_sum_squares");
    if (!p) {
        const char *source = webgpu_kernel_source("nn_sum_squares");
        if (!source) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel source nn_sum_squares is not embedded", call->op_name);
        wgt_status s = webgpu_pipeline_create(wg, "nn_sum_squares", source, NULL, WGT_NN_SUM_SQUARES_MAX_INPUTS, 1, true,
                                              nn_checked, call->op_name, &p);
        if (s != WGT_OK) return s;
    }
    uint32_t gx, gy;
    pr.n_groups = (uint32_t)parts;
    wgt_status s = webgpu_grid(wg, parts, &gx, &gy, call->op_name);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, p, buffers, WGT_NN_SUM_SQUARES_MAX_INPUTS + 1, &pr, sizeof(pr), gx, gy, 1, call->op_name);
}

static void fill_targets(const wgt_kernel_call *call, const wgt_tensor_view *t, nn_params *pr)
{
    pr->t_offset = (uint32_t)t->offset;
    pr->t_stride = (uint32_t)(t->ndim ? t->strides[0] : 0);
    int64_t ig = call->nn.ignore_index;
    pr->ignore_valid = ig >= INT32_MIN && ig <= INT32_MAX;
    pr->ignore_index = pr->ignore_valid ? (int32_t)ig : 0;
}

static wgt_status run_cross_entropy(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v, nn_params *pr)
{
    const wgt_tensor_view *logits = &v->in[0], *targets = &v->in[1], *loss = &v->out[0], *lse = &v->out[1];
    uint32_t width = vec_width(pr->d, &logits, 1);
    nn_shape sh = shape_for(wg, pr->d / width, width, false);
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, "nn_cross_entropy", &sh, 3, 2, call->op_name, &p);
    if (s != WGT_OK) return s;
    pr->x_offset = off(logits, width);
    pr->g_offset = (uint32_t)loss->offset, pr->lse_offset = (uint32_t)lse->offset;
    fill_targets(call, targets, pr);
    WGPUBuffer buffers[5] = {webgpu_view_buffer(logits), webgpu_view_buffer(targets), webgpu_view_buffer(logits),
                             webgpu_view_buffer(loss), webgpu_view_buffer(lse)};
    return dispatch(wg, p, buffers, 5, pr, pr->rows, call->op_name);
}

static wgt_status run_cross_entropy_backward(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v,
                                             nn_params *pr)
{
    const wgt_tensor_view *logits = &v->in[0], *targets = &v->in[1], *lse = &v->in[2], *g = &v->in[3];
    const wgt_tensor_view *dl = &v->out[0];
    uint32_t width = vec_width(pr->d, (const wgt_tensor_view *[]){logits, dl}, 2);
    nn_shape sh = shape_for(wg, pr->d / width, width, false);
    webgpu_pipeline *p;
    wgt_status s = get_pipeline(wg, "nn_cross_entropy_backward", &sh, 4, 1, call->op_name, &p);
    if (s != WGT_OK) return s;
    pr->x_offset = off(logits, width), pr->y_offset = off(dl, width);
    pr->lse_offset = (uint32_t)lse->offset;
    pr->g_offset = (uint32_t)g->offset;
    pr->g_stride = (uint32_t)(g->ndim ? g->strides[0] : 0);
    fill_targets(call, targets, pr);
    WGPUBuffer buffers[5] = {webgpu_view_buffer(logits), webgpu_view_buffer(targets), webgpu_view_buffer(lse),
                             webgpu_view_buffer(g), webgpu_view_buffer(dl)};
    return dispatch(wg, p, buffers, 5, pr, pr->rows, call->op_name);
}

wgt_status webgpu_nn_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->nn.kernel == WGT_NN_DROPOUT_ADD || call->nn.kernel == WGT_NN_DROPOUT_MASKED)
        return webgpu_dropout_run(wg, call); /* f32 quads, an i32 mask: no f32 temporaries, no rows */
    const wgt_tensor_view *x = &call->inputs[0];
    int64_t d = x->ndim ? x->shape[x->ndim - 1] : 1;
    int64_t rows = d ? wgt_shape_numel(x->ndim, x->shape) / d : 0;
    if (rows == 0 || d == 0) return WGT_OK;
    if (d > UINT32_MAX || rows > UINT32_MAX)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %lld rows of %lld elements exceed the kernels' u32 indexing",
                         call->op_name, (long long)rows, (long long)d);
    webgpu_f32_views v;
    wgt_status s = webgpu_f32_views_begin(wg, call, nn_output_count(call), &v);
    if (s == WGT_OK) {
        nn_params pr;
        memset(&pr, 0, sizeof(pr));
        pr.rows = (uint32_t)rows;
        pr.d = (uint32_t)d;
        pr.eps = (float)call->nn.eps;
        pr.flags = (call->nn.has_weight ? NN_HAS_WEIGHT : 0) | (call->nn.has_bias ? NN_HAS_BIAS : 0) |
                   (call->nn.rms ? NN_RMS : 0) | (call->nn.accumulate ? NN_ACCUMULATE : 0);
        pr.nan_bits = 0x7fc00000u;
        switch (call->nn.kernel) {
        case WGT_NN_NORM: s = run_norm(wg, call, &v, &pr); break;
        case WGT_NN_NORM_BACKWARD: s = run_norm_backward(wg, call, &v, &pr); break;
        case WGT_NN_NORM_PARAM_GRADS: s = run_norm_param_grads(wg, call, &v, &pr); break;
        case WGT_NN_CROSS_ENTROPY: s = run_cross_entropy(wg, call, &v, &pr); break;
        case WGT_NN_CROSS_ENTROPY_BACKWARD: s = run_cross_entropy_backward(wg, call, &v, &pr); break;
        case WGT_NN_PARTIALS_SUM: s = run_partials_sum(wg, call, &v, &pr); break;
        case WGT_NN_SUM_SQUARES: s = run_sum_squares(wg, call, &v); break;
        default: s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: unknown NN kernel", call->op_name); break;
        }
    }
    return webgpu_f32_views_finish(wg, call, &v, s);
}
