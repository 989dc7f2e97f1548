/*
 * WebGPU convolution-family kernels (WGT_KERNEL_CONV; contracts in src/backend.h):
 *
 *   CONV_FORWARD, CONV_BACKWARD_INPUT, CONV_BACKWARD_WEIGHT
 *                          kernels/conv_gemm.wgsl   implicit GEMM, MODE 0 / 1 / 2
 *   POOL_FORWARD           kernels/conv_pool.wgsl   an invocation per output element
 *   POOL_BACKWARD          kernels/conv_pool_backward.wgsl  per input element (gathers)
 *   BATCH_NORM_FORWARD / _BACKWARD  kernels/conv_bn_partials.wgsl + conv_bn_apply.wgsl
 *                          a workgroup per (channel, chunk): partial sums, then combine + apply
 *
 * The kernels compute in f32: f16 inputs are converted to f32 temporaries and
 * f16 outputs written through f32 temporaries (as webgpu_nn.c does). Every
 * view is contiguous (the front-end's contract), so a view is its buffer and
 * an element offset. Sizes and offsets are u32 in the kernels: larger calls
 * are refused by supports() (the front-end then reports WGT_ERR_UNSUPPORTED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conv_call.h"
#include "webgpu/webgpu_internal.h"

/* The implicit GEMM's tiles (conv_gemm.wgsl: 256 invocations, each a TM x TN
 * block): 64 x 64 of 4 x 4 blocks, or 128 x 128 of 8 x 8 blocks when the
 * problem has enough of those tiles to fill a large GPU (CONV_BIG_TILES of
 * them: about two per SM of an H100). WGT_CONV_TILE=64|128 forces one (for
 * tuning on a new GPU, and for tests of both paths on any adapter). */
#define CONV_BK 16u
#define CONV_BIG_TILES 256u

typedef struct conv_tile {
    uint32_t bm, bn, tm, tn;
} conv_tile;

static conv_tile choose_tile(uint64_t rows, uint64_t cols, uint64_t gz)
{
    const conv_tile small = {64, 64, 4, 4}, big = {128, 128, 8, 8};
    const char *env = getenv("WGT_CONV_TILE");
    if (env && strcmp(env, "64") == 0) return small;
    if (env && strcmp(env, "128") == 0) return big;
    uint64_t big_tiles = ((rows + 127) / 128) * ((cols + 127) / 128) * gz;
    return big_tiles >= CONV_BIG_TILES ? big : small;
}

static const bool conv_checked = false; /* every index is bounds-checked by the kernels' own logic */

static bool fits_u32(const wgt_tensor_view *v)
{
    if (!v->storage) return false;
    return v->storage->bytes / 4 <= UINT32_MAX && v->offset >= 0 && v->offset <= UINT32_MAX;
}

static bool is_argmax(const wgt_kernel_call *call, bool output, int i)
{
    if (call->conv.pool_mode != WGT_POOL_MAX || i != 1) return false;
    return output ? call->conv.kernel == WGT_POOL_FORWARD : call->conv.kernel == WGT_POOL_BACKWARD;
}

bool webgpu_conv_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if ((unsigned)call->conv.kernel >= WGT_CONV_KERNEL_COUNT) return false;
    if (call->n_inputs != wgt_conv_call_inputs(call) || call->n_outputs < wgt_conv_call_outputs(call)) return false;
    for (int i = 0; i < call->n_inputs; i++) {
        const wgt_tensor_view *v = &call->inputs[i];
        bool ok = is_argmax(call, false, i) ? v->dtype == WGT_I32 : v->dtype == WGT_F32 || v->dtype == WGT_F16;
        if (!ok || !fits_u32(v) || !wgt_view_is_contiguous(v)) return false;
    }
    for (int i = 0; i < wgt_conv_call_outputs(call); i++) {
        const wgt_tensor_view *v = &call->outputs[i];
        bool ok = is_argmax(call, true, i) ? v->dtype == WGT_I32 : v->dtype == WGT_F32 || v->dtype == WGT_F16;
        if (!ok || !fits_u32(v) || !wgt_view_is_contiguous(v)) return false;
    }
    const int64_t sizes[] = {call->conv.n * call->conv.c * call->conv.h * call->conv.w,
                             call->conv.n * call->conv.k * call->conv.oh * call->conv.ow,
                             call->conv.k * call->conv.c * call->conv.kh * call->conv.kw};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (sizes[i] < 0 || sizes[i] > (int64_t)UINT32_MAX) return false;
    return true;
}

/* ------------------------------------------------------------ temporaries */

typedef struct conv_views {
    wgt_tensor_view in[WGT_MAX_KERNEL_INPUTS], out[3];
    bool in_temp[WGT_MAX_KERNEL_INPUTS], out_temp[3];
} conv_views;

static wgt_status views_begin(webgpu_backend *wg, const wgt_kernel_call *call, conv_views *v)
{
    memset(v, 0, sizeof(*v));
    wgt_status s = WGT_OK;
    for (int i = 0; i < call->n_inputs && s == WGT_OK; i++) {
        v->in[i] = call->inputs[i];
        if (call->inputs[i].dtype == WGT_F16) {
            s = webgpu_temp_convert(wg, &call->inputs[i], WGT_F32, &v->in[i], call->op_name);
            v->in_temp[i] = s == WGT_OK;
        }
    }
    for (int i = 0; i < wgt_conv_call_outputs(call) && s == WGT_OK; i++) {
        v->out[i] = call->outputs[i];
        if (call->outputs[i].dtype == WGT_F16) {
            s = webgpu_temp_alloc(wg, WGT_F32, call->outputs[i].ndim, call->outputs[i].shape, &v->out[i]);
            v->out_temp[i] = s == WGT_OK;
        }
    }
    return s;
}

static wgt_status views_finish(webgpu_backend *wg, const wgt_kernel_call *call, conv_views *v, wgt_status s)
{
    for (int i = 0; i < 3; i++) {
        if (!v->out_temp[i]) continue;
        if (s == WGT_OK) s = webgpu_convert(wg, &v->out[i], &call->outputs[i], call->op_name);
        webgpu_temp_release(wg, &v->out[i]);
    }
    for (int i = 0; i < WGT_MAX_KERNEL_INPUTS; i++)
        if (v->in_temp[i]) webgpu_temp_release(wg, &v->in[i]);
    return s;
}

/* ---------------------------------------------------------------- pipelines */

static wgt_status get_pipeline(webgpu_backend *wg, const char *key, const char *prelude, const char *common,
                               const char *file, int n_read_only, int n_read_write, const char *op,
                               webgpu_pipeline **out)
{
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    const char *common_src = common ? webgpu_kernel_source(common) : "", *body = webgpu_kernel_source(file);
    if (!common_src || !body)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel source %s is not embedded", op, body ? common : file);
    size_t n = strlen(prelude) + strlen(common_src) + strlen(body) + 4;
    char *source = malloc(n);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    snprintf(source, n, "%s%s\n%s", prelude, common_src, body);
    wgt_status s = webgpu_pipeline_create(wg, key, source, NULL, n_read_only, n_read_write, true, conv_checked, op, out);
    free(source);
    return s;
}

static uint32_t u32of(int64_t v) { return (uint32_t)v; }

/* ----------------------------------------------------------- implicit GEMM */

/* The parameter block of kernels/conv_gemm.wgsl. */
typedef struct gemm_params {
    uint32_t n, c, h, w, k, oh, ow, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, cg;
    uint32_t kg, rows, cols, depth, a_offset, b_offset, out_offset, bias_offset;
    uint32_t split_len, has_bias, groups, pad0;
} gemm_params;
_Static_assert(sizeof(gemm_params) % 16 == 0 && sizeof(gemm_params) <= WEBGPU_PARAMS_MAX, "conv gemm params");

static wgt_status run_gemm(webgpu_backend *wg, const wgt_kernel_call *call, const conv_views *v)
{
    const char *op = call->op_name;
    int mode = call->conv.kernel == WGT_CONV_FORWARD ? 0 : call->conv.kernel == WGT_CONV_BACKWARD_INPUT ? 1 : 2;
    gemm_params p;
    memset(&p, 0, sizeof(p));
    p.n = u32of(call->conv.n), p.c = u32of(call->conv.c), p.h = u32of(call->conv.h), p.w = u32of(call->conv.w);
    p.k = u32of(call->conv.k), p.oh = u32of(call->conv.oh), p.ow = u32of(call->conv.ow);
    p.kh = u32of(call->conv.kh), p.kw = u32of(call->conv.kw);
    p.stride_h = u32of(call->conv.stride_h), p.stride_w = u32of(call->conv.stride_w);
    p.pad_top = u32of(call->conv.pad_top), p.pad_left = u32of(call->conv.pad_left);
    p.dil_h = u32of(call->conv.dil_h), p.dil_w = u32of(call->conv.dil_w);
    p.groups = u32of(call->conv.groups);
    p.cg = p.c / p.groups, p.kg = p.k / p.groups;
    uint64_t taps = (uint64_t)p.kh * p.kw, splits = 1;
    switch (mode) {
    case 0: p.rows = p.kg, p.cols = p.n * p.oh * p.ow, p.depth = (uint32_t)(p.cg * taps); break;
    case 1: p.rows = p.cg, p.cols = p.n * p.h * p.w, p.depth = (uint32_t)(p.kg * taps); break;
    default:
        p.rows = p.kg, p.cols = (uint32_t)(p.cg * taps), p.depth = p.n * p.oh * p.ow;
        p.split_len = u32of(call->conv.split_len > 0 ? call->conv.split_len : p.depth);
        splits = p.split_len ? ((uint64_t)p.depth + p.split_len - 1) / p.split_len : 1;
        break;
    }
    /* inputs (x, w), (dy, w), (x, dy): A is always the second, B the first */
    const wgt_tensor_view *a = &v->in[1], *b = &v->in[0], *out = &v->out[0];
    const wgt_tensor_view *bias = mode == 0 && call->conv.has_bias ? &v->in[2] : a;
    p.a_offset = (uint32_t)a->offset, p.b_offset = (uint32_t)b->offset;
    p.out_offset = (uint32_t)out->offset, p.bias_offset = (uint32_t)bias->offset;
    p.has_bias = mode == 0 && call->conv.has_bias;

    uint64_t gz = splits * p.groups;
    conv_tile tile = choose_tile(p.rows, p.cols, gz);
    uint64_t gx = (p.cols + tile.bn - 1) / tile.bn, gy = (p.rows + tile.bm - 1) / tile.bm;
    uint64_t limit = wg->limits.maxComputeWorkgroupsPerDimension;
    if (gx > limit || gy > limit || gz > limit)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED,
                         "%s: a grid of %llu x %llu x %llu workgroups exceeds the device's %llu per dimension", op,
                         (unsigned long long)gx, (unsigned long long)gy, (unsigned long long)gz,
                         (unsigned long long)limit);
    if (gx == 0 || gy == 0 || gz == 0) return WGT_OK;
    char key[64], prelude[192];
    snprintf(key, sizeof(key), "conv_gemm/%d/%u/%u/%u/%u/%u", mode, tile.bm, tile.bn, CONV_BK, tile.tm, tile.tn);
    snprintf(prelude, sizeof(prelude),
             "const MODE = %du;\nconst BM = %uu;\nconst BN = %uu;\nconst BK = %uu;\nconst TM = %uu;\nconst TN = %uu;\n",
             mode, tile.bm, tile.bn, CONV_BK, tile.tm, tile.tn);
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, key, prelude, NULL, "conv_gemm", 3, 1, op, &pipe);
    if (s != WGT_OK) return s;
    WGPUBuffer buffers[4] = {webgpu_view_buffer(a), webgpu_view_buffer(b), webgpu_view_buffer(bias),
                             webgpu_view_buffer(out)};
    return webgpu_dispatch(wg, pipe, buffers, 4, &p, sizeof(p), (uint32_t)gx, (uint32_t)gy, (uint32_t)gz, op);
}

/* ----------------------------------------------------------------- pooling */

typedef struct pool_params {
    uint32_t planes, h, w, oh, ow, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, mode;
    uint32_t count_include_pad, total, x_offset, y_offset, arg_offset, pad0;
} pool_params;
_Static_assert(sizeof(pool_params) % 16 == 0, "pool params");

static wgt_status run_pool(webgpu_backend *wg, const wgt_kernel_call *call, const conv_views *v)
{
    const char *op = call->op_name;
    bool forward = call->conv.kernel == WGT_POOL_FORWARD, max = call->conv.pool_mode == WGT_POOL_MAX;
    pool_params p;
    memset(&p, 0, sizeof(p));
    p.planes = u32of(call->conv.n * call->conv.c);
    p.h = u32of(call->conv.h), p.w = u32of(call->conv.w), p.oh = u32of(call->conv.oh), p.ow = u32of(call->conv.ow);
    p.kh = u32of(call->conv.kh), p.kw = u32of(call->conv.kw);
    p.stride_h = u32of(call->conv.stride_h), p.stride_w = u32of(call->conv.stride_w);
    p.pad_h = u32of(call->conv.pad_top), p.pad_w = u32of(call->conv.pad_left);
    p.dil_h = u32of(call->conv.dil_h), p.dil_w = u32of(call->conv.dil_w);
    p.mode = (uint32_t)call->conv.pool_mode;
    p.count_include_pad = call->conv.count_include_pad;
    p.total = forward ? p.planes * p.oh * p.ow : p.planes * p.h * p.w;
    if (p.total == 0) return WGT_OK;
    webgpu_pipeline *pipe;
    const char *file = forward ? "conv_pool" : "conv_pool_backward";
    wgt_status s = get_pipeline(wg, file, "", "conv_pool_common", file, forward ? 1 : 2, forward ? 2 : 1, op, &pipe);
    if (s != WGT_OK) return s;
    uint32_t gx, gy;
    s = webgpu_grid(wg, ((uint64_t)p.total + 255) / 256, &gx, &gy, op);
    if (s != WGT_OK) return s;
    if (forward) {
        const wgt_tensor_view *x = &v->in[0], *y = &v->out[0];
        wgt_tensor_view scratch = {0};
        const wgt_tensor_view *arg = max ? &v->out[1] : NULL;
        if (!arg) { /* the kernel binds an argmax buffer it never writes: a small temporary, never y */
            int64_t four = 4;
            s = webgpu_temp_alloc(wg, WGT_I32, 1, &four, &scratch);
            if (s != WGT_OK) return s;
            arg = &scratch;
        }
        p.x_offset = (uint32_t)x->offset, p.y_offset = (uint32_t)y->offset, p.arg_offset = (uint32_t)arg->offset;
        WGPUBuffer buffers[3] = {webgpu_view_buffer(x), webgpu_view_buffer(y), webgpu_view_buffer(arg)};
        s = webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
        if (scratch.storage) webgpu_temp_release(wg, &scratch);
        return s;
    }
    const wgt_tensor_view *dy = &v->in[0], *dx = &v->out[0], *arg = max ? &v->in[1] : dy;
    p.x_offset = (uint32_t)dy->offset, p.y_offset = (uint32_t)dx->offset, p.arg_offset = (uint32_t)arg->offset;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(dy), webgpu_view_buffer(arg), webgpu_view_buffer(dx)};
    return webgpu_dispatch(wg, pipe, buffers, 3, &p, sizeof(p), gx, gy, 1, op);
}

/* -------------------------------------------------------------- batch norm */

/* The parameter block of kernels/conv_bn_common.wgsl. */
typedef struct bn_params {
    uint32_t n, c, l, flags;
    float eps;
    uint32_t x_offset, w_offset, b_offset, mean_offset, var_offset, y_offset, grads_offset;
    uint32_t splits, chunk, n_groups, pad0;
} bn_params;
_Static_assert(sizeof(bn_params) % 16 == 0, "batch norm params");

/* Chunks per channel: enough workgroups for a large GPU (BN_TARGET_GROUPS in
 * all), each chunk at least BN_MIN_CHUNK elements, at most BN_MAX_SPLITS. */
#define BN_TARGET_GROUPS 1024u
#define BN_MIN_CHUNK 2048u
#define BN_MAX_SPLITS 256u

static wgt_status bn_dispatch(webgpu_backend *wg, const char *file, bool backward, int n_read_only, int n_read_write,
                              const WGPUBuffer *buffers, bn_params *p, const char *op)
{
    char key[64], prelude[48];
    snprintf(key, sizeof(key), "%s/%d", file, (int)backward);
    snprintf(prelude, sizeof(prelude), "const BACKWARD = %s;\n", backward ? "true" : "false");
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, key, prelude, "conv_bn_common", file, n_read_only, n_read_write, op, &pipe);
    uint32_t gx = 0, gy = 0;
    if (s == WGT_OK) s = webgpu_grid(wg, p->n_groups, &gx, &gy, op);
    if (s == WGT_OK) s = webgpu_dispatch(wg, pipe, buffers, n_read_only + n_read_write, p, sizeof(*p), gx, gy, 1, op);
    return s;
}

static wgt_status run_batch_norm(webgpu_backend *wg, const wgt_kernel_call *call, const conv_views *v)
{
    const char *op = call->op_name;
    bool backward = call->conv.kernel == WGT_BATCH_NORM_BACKWARD, training = call->conv.training;
    bn_params p;
    memset(&p, 0, sizeof(p));
    p.n = u32of(call->conv.n), p.c = u32of(call->conv.c), p.l = u32of(call->conv.h * call->conv.w);
    p.eps = (float)call->conv.eps;
    p.flags = (training ? 1u : 0u) | (call->conv.has_weight ? 2u : 0u) | (!backward && call->conv.has_bias ? 4u : 0u);
    uint64_t count = (uint64_t)p.n * p.l;
    if (count * p.c == 0) return WGT_OK;
    uint64_t splits = (BN_TARGET_GROUPS + p.c - 1) / p.c, most = (count + BN_MIN_CHUNK - 1) / BN_MIN_CHUNK;
    if (splits > most) splits = most;
    if (splits > BN_MAX_SPLITS) splits = BN_MAX_SPLITS;
    if (splits < 1) splits = 1;
    p.chunk = (uint32_t)((count + splits - 1) / splits);
    p.splits = (uint32_t)((count + p.chunk - 1) / p.chunk);
    p.n_groups = p.c * p.splits;
    int k = 0;
    const wgt_tensor_view *x = &v->in[k++];
    const wgt_tensor_view *w = call->conv.has_weight ? &v->in[k++] : x;
    const wgt_tensor_view *b = x, *mean = NULL, *var = NULL, *y = &v->out[0];
    if (backward) {
        mean = &v->in[k++], var = &v->in[k++], b = &v->in[k++]; /* b = dy */
    } else {
        if (call->conv.has_bias) b = &v->in[k++];
        if (training) mean = &v->out[1], var = &v->out[2];
        else mean = &v->in[k++], var = &v->in[k++];
    }
    /* partials [C][splits] (vec2), and dw, db as one [2, C] temporary: the
     * apply kernel has one binding for both */
    wgt_tensor_view partials = {0}, grads = {0};
    int64_t pshape[2] = {(int64_t)p.n_groups, 2}, gshape[2] = {2, call->conv.c};
    wgt_status s = webgpu_temp_alloc(wg, WGT_F32, 2, pshape, &partials);
    if (s == WGT_OK) s = webgpu_temp_alloc(wg, WGT_F32, 2, gshape, &grads);
    p.x_offset = (uint32_t)x->offset, p.w_offset = (uint32_t)w->offset, p.b_offset = (uint32_t)b->offset;
    p.mean_offset = (uint32_t)mean->offset, p.var_offset = (uint32_t)var->offset, p.y_offset = (uint32_t)y->offset;
    p.grads_offset = (uint32_t)grads.offset;
    /* vec2 partials are addressed from 0: a fresh temporary starts its buffer */
    if (s == WGT_OK && partials.offset != 0) s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: partials at an offset", op);
    if (s == WGT_OK && (training || backward)) {
        /* mean and var are only read here (backward); forward binds them too, unread */
        WGPUBuffer buffers[5] = {webgpu_view_buffer(x), webgpu_view_buffer(b), webgpu_view_buffer(backward ? mean : x),
                                 webgpu_view_buffer(backward ? var : x), webgpu_view_buffer(&partials)};
        s = bn_dispatch(wg, "conv_bn_partials", backward, 4, 1, buffers, &p, op);
    }
    if (s == WGT_OK) {
        /* mean and var are bound read_write in both directions: they are
         * separate tensors that no other binding aliases */
        WGPUBuffer buffers[8] = {webgpu_view_buffer(x), webgpu_view_buffer(w), webgpu_view_buffer(b),
                                 webgpu_view_buffer(&partials), webgpu_view_buffer(y), webgpu_view_buffer(mean),
                                 webgpu_view_buffer(var), webgpu_view_buffer(&grads)};
        s = bn_dispatch(wg, "conv_bn_apply", backward, 4, 4, buffers, &p, op);
    }
    if (s == WGT_OK && backward) {
        wgt_tensor_view row = grads;
        row.ndim = 1;
        row.shape[0] = call->conv.c;
        row.strides[0] = 1;
        s = webgpu_convert(wg, &row, &call->outputs[1], op);
        row.offset += call->conv.c;
        if (s == WGT_OK) s = webgpu_convert(wg, &row, &call->outputs[2], op);
    }
    if (partials.storage) webgpu_temp_release(wg, &partials);
    if (grads.storage) webgpu_temp_release(wg, &grads);
    return s;
}

wgt_status webgpu_conv_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    conv_views v;
    wgt_status s = views_begin(wg, call, &v);
    if (s == WGT_OK) {
        switch (call->conv.kernel) {
        case WGT_CONV_FORWARD:
        case WGT_CONV_BACKWARD_INPUT:
        case WGT_CONV_BACKWARD_WEIGHT: s = run_gemm(wg, call, &v); break;
        case WGT_POOL_FORWARD:
        case WGT_POOL_BACKWARD: s = run_pool(wg, call, &v); break;
        case WGT_BATCH_NORM_FORWARD:
        case WGT_BATCH_NORM_BACKWARD: s = run_batch_norm(wg, call, &v); break;
        default: s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: unknown convolution kernel", call->op_name);
        }
    }
    /* backward batch norm writes dw/db itself (through the [2, C] temporary) */
    if (call->conv.kernel == WGT_BATCH_NORM_BACKWARD) v.out_temp[1] = v.out_temp[2] = false;
    return views_finish(wg, call, &v, s);
}
