/*
 * 3x3 convolutions of stride 1 by Winograd F(4x4, 3x3): the forward and both
 * gradients as transforms (kernels/conv_winograd.wgsl, whose header has the
 * algebra) around 36 batched GEMMs on the tiled matmul (webgpu_matmul_views).
 * webgpu_conv.c sends a call here where webgpu_conv_winograd_applies says so,
 * else to the implicit GEMM.
 *
 * Why: the implicit GEMM of ResNet's 3x3 layers runs at 25-29 TFLOP/s on an
 * H100 or H200, against cuDNN's 31-58 direct-equivalent TFLOP/s, which cuDNN
 * reaches with non-direct kernels of its own (some passes above the GPU's f32
 * peak in direct multiply-adds). F(4x4, 3x3) does 4x fewer multiply-adds (2.25
 * per output and channel pair instead of 9), at the cost of transformed
 * copies of the data (36 / 16 of the input and output, each written and read
 * once) and of f32 rounding 10-30x the direct sum's (the transforms multiply
 * by up to 8 and divide by 24; measured in tests/test_conv.c).
 *
 * Temporaries, T tiles of 4 x 4 outputs (N ceil(OH / 4) ceil(OW / 4)):
 *   forward     V [36, C, T] = B^T x B, U [36, K, C] = G w G^T, M [36, K, T] = U V,
 *               y = A^T M A (+ bias)
 *   dx          the forward on dy [N, K, OH, OW] with the filters flipped and
 *               transposed (U [36, C, K]) and padding 2 - pad: tiles over (H, W)
 *   dw          V [36, C, T] = B^T x B, D [36, K, T] = A dy A^T, M [36, K, C] =
 *               D V^T (a GEMM whose depth is the T tiles), dw = G^T M G
 */
#include <stdio.h>
#include <string.h>

#include "webgpu/conv_shared.h"
#include "webgpu/webgpu_internal.h"

#define WINO_POINTS 36u          /* (4 + 3 - 1)^2 transform positions */
#define WINO_DW_WORKGROUPS 264  /* the weight gradient's GEMM splits its tiles into parts until about this
                                  * many 128 x 128 output tiles exist (two per SM of an H100): unsplit,
                                  * 36 tiles of a 128-channel layer left most of the GPU idle (207 us against
                                  * 69 for the forward's GEMM on an H200) */
#define WINO_DW_MIN_PART 128     /* tiles per part at least */
#define WINO_MIN_CHANNELS 32     /* default: both channel counts at least this (fewer: the transforms'
                                  * traffic outweighs the multiply-adds saved; WGT_CONV_WINOGRAD=all) */

enum { WINO_DATA = 0, WINO_FILTER = 1, WINO_OUTPUT = 2, WINO_GRAD_DATA = 3, WINO_GRAD_FILTER = 4 };

/* The parameter block of kernels/conv_winograd.wgsl. */
typedef struct wino_params {
    uint32_t n, c, h, w, th, tw, tiles, count;
    int32_t pad_top, pad_left;
    uint32_t src_offset, dst_offset, k, has_bias, bias_offset, real_tiles;
    uint32_t parts, pad0, pad1, pad2;
} wino_params;
_Static_assert(sizeof(wino_params) % 16 == 0 && sizeof(wino_params) <= WEBGPU_PARAMS_MAX, "winograd params");

/* The tile grid over an out_h x out_w output, and its tile count. */
typedef struct wino_grid {
    uint64_t th, tw, tiles;
} wino_grid;

static wino_grid grid_over(int64_t n, int64_t out_h, int64_t out_w)
{
    wino_grid g = {webgpu_conv_cdiv((uint64_t)out_h, 4), webgpu_conv_cdiv((uint64_t)out_w, 4), 0};
    g.tiles = (uint64_t)n * g.th * g.tw;
    return g;
}

/* What one pass needs: the tile grid over its output (the input gradient's
 * output is the input size), for the weight gradient the tiles in `parts`
 * batches of `len` (layout = parts len, the tiles past g.tiles zeros; else 1,
 * tiles, tiles), and its three temporaries [36, dims[i][0], dims[i][1]]. */
typedef struct wino_plan {
    wino_grid g;
    uint64_t parts, len, layout;
    uint64_t dims[3][2];
} wino_plan;

static wino_plan plan_of(const wgt_kernel_call *call)
{
    const uint64_t c = (uint64_t)call->conv.c, k = (uint64_t)call->conv.k;
    wino_plan p;
    memset(&p, 0, sizeof(p));
    switch (call->conv.kernel) {
    case WGT_CONV_BACKWARD_INPUT: /* a forward from k to c channels over the input size */
        p.g = grid_over(call->conv.n, call->conv.h, call->conv.w);
        p.parts = 1, p.len = p.layout = p.g.tiles;
        p.dims[0][0] = k, p.dims[0][1] = p.g.tiles, p.dims[1][0] = c, p.dims[1][1] = k;
        p.dims[2][0] = c, p.dims[2][1] = p.g.tiles;
        break;
    case WGT_CONV_BACKWARD_WEIGHT: {
        /* the GEMM's depth (the tiles) split until ~WINO_DW_WORKGROUPS output tiles exist */
        p.g = grid_over(call->conv.n, call->conv.oh, call->conv.ow);
        uint64_t out_tiles = WINO_POINTS * webgpu_conv_cdiv(k, 128) * webgpu_conv_cdiv(c, 128);
        uint64_t parts = webgpu_conv_cdiv(WINO_DW_WORKGROUPS, out_tiles), most = p.g.tiles / WINO_DW_MIN_PART;
        if (parts > most) parts = most;
        if (parts < 1) parts = 1;
        p.len = p.g.tiles ? webgpu_conv_cdiv(webgpu_conv_cdiv(p.g.tiles, parts), 8) * 8 : 8; /* whole GEMM slices */
        p.parts = webgpu_conv_cdiv(p.g.tiles, p.len);
        p.layout = p.parts * p.len;
        p.dims[0][0] = c, p.dims[0][1] = p.layout, p.dims[1][0] = k, p.dims[1][1] = p.layout;
        p.dims[2][0] = p.parts * k, p.dims[2][1] = c;
        break;
    }
    default: /* the forward */
        p.g = grid_over(call->conv.n, call->conv.oh, call->conv.ow);
        p.parts = 1, p.len = p.layout = p.g.tiles;
        p.dims[0][0] = c, p.dims[0][1] = p.g.tiles, p.dims[1][0] = k, p.dims[1][1] = c;
        p.dims[2][0] = k, p.dims[2][1] = p.g.tiles;
        break;
    }
    return p;
}

/* Whether the call is a 3x3, stride 1, undilated, ungrouped convolution whose
 * temporaries fit a binding and u32 indexing (WGT_CONV_WINOGRAD: "0" never,
 * "all" whatever the channel counts, default from WINO_MIN_CHANNELS). */
bool webgpu_conv_winograd_applies(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    const int mode = wg->knobs.conv_winograd;
    const int64_t c = call->conv.c, k = call->conv.k;
    if (mode == 0 || call->conv.kh != 3 || call->conv.kw != 3 || call->conv.stride_h != 1 ||
        call->conv.stride_w != 1 || call->conv.dil_h != 1 || call->conv.dil_w != 1 || call->conv.groups != 1)
        return false;
    if (mode == 1 && (c < WINO_MIN_CHANNELS || k < WINO_MIN_CHANNELS)) return false;
    if (call->conv.pad_top > 2 || call->conv.pad_left > 2) return false; /* dx's padding 2 - pad stays >= 0 */
    /* the weight gradient as the front-end asked: one part (its own splits are the implicit GEMM's) */
    if (call->conv.kernel == WGT_CONV_BACKWARD_WEIGHT && call->conv.split_len > 0 &&
        call->conv.split_len < call->conv.n * call->conv.oh * call->conv.ow)
        return false;
    const wino_plan p = plan_of(call);
    const uint64_t limit = wg->limits.maxStorageBufferBindingSize / 4;
    for (int i = 0; i < 3; i++) {
        if (p.dims[i][0] && p.dims[i][1] > UINT32_MAX / p.dims[i][0]) return false;
        uint64_t elems = WINO_POINTS * p.dims[i][0] * p.dims[i][1];
        if (elems > limit || elems > UINT32_MAX) return false;
    }
    return p.g.tiles > 0;
}

static wgt_status wino_dispatch(webgpu_backend *wg, int mode, bool flip, wino_params *p, const wgt_tensor_view *src,
                                const wgt_tensor_view *bias, const wgt_tensor_view *dst, const char *op)
{
    char key[40], prelude[64];
    snprintf(key, sizeof(key), "conv_winograd/%d/%d", mode, (int)flip);
    snprintf(prelude, sizeof(prelude), "const MODE = %du;\nconst FLIP = %s;\n", mode, flip ? "true" : "false");
    webgpu_pipeline *pipe;
    wgt_status s = webgpu_conv_pipeline(wg, key, prelude, NULL, "conv_winograd", 2, 1, op, &pipe);
    uint32_t gx = 0, gy = 0;
    if (s == WGT_OK) s = webgpu_grid(wg, webgpu_conv_cdiv(p->count, 256), &gx, &gy, op);
    if (s != WGT_OK) return s;
    p->src_offset = (uint32_t)src->offset, p->dst_offset = (uint32_t)dst->offset;
    p->bias_offset = bias ? (uint32_t)bias->offset : 0;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(src), webgpu_view_buffer(bias ? bias : src), webgpu_view_buffer(dst)};
    return webgpu_dispatch(wg, pipe, buffers, 3, p, sizeof(*p), gx, gy, 1, op);
}

/* B^T d B of every 6 x 6 patch of src [N, c, h, w] -> dst [36, c, layout]
 * (MODE 0), or A d A^T of its 4 x 4 tiles (MODE 3, pads ignored); layout >=
 * g->tiles, the tiles past g->tiles zeros. */
static wgt_status data_transform(webgpu_backend *wg, int mode, const wgt_tensor_view *src, uint64_t n, uint64_t c,
                                 uint64_t h, uint64_t w, const wino_grid *g, uint64_t layout, int64_t pad_top,
                                 int64_t pad_left, const wgt_tensor_view *dst, const char *op)
{
    wino_params p = {.n = (uint32_t)n, .c = (uint32_t)c, .h = (uint32_t)h, .w = (uint32_t)w,
                     .th = (uint32_t)g->th, .tw = (uint32_t)g->tw, .tiles = (uint32_t)layout,
                     .count = (uint32_t)(c * layout), .pad_top = (int32_t)pad_top, .pad_left = (int32_t)pad_left,
                     .real_tiles = (uint32_t)g->tiles, .parts = 1};
    return wino_dispatch(wg, mode, false, &p, src, NULL, dst, op);
}

/* The filters w [k, c, 3, 3] -> [36, k, c] (flip: turned and transposed, [36, c, k]). */
static wgt_status filter_transform(webgpu_backend *wg, const wgt_tensor_view *w, uint64_t k, uint64_t c, bool flip,
                                   const wgt_tensor_view *dst, const char *op)
{
    wino_params p = {.k = (uint32_t)k, .c = (uint32_t)c, .count = (uint32_t)(k * c)};
    return wino_dispatch(wg, WINO_FILTER, flip, &p, w, NULL, dst, op);
}

/* m [36, c, T] -> out [N, c, h, w] (+ bias [c]). */
static wgt_status output_transform(webgpu_backend *wg, const wgt_tensor_view *m, const wgt_tensor_view *bias,
                                   uint64_t n, uint64_t c, uint64_t h, uint64_t w, const wino_grid *g,
                                   const wgt_tensor_view *out, const char *op)
{
    wino_params p = {.n = (uint32_t)n, .c = (uint32_t)c, .h = (uint32_t)h, .w = (uint32_t)w,
                     .th = (uint32_t)g->th, .tw = (uint32_t)g->tw, .tiles = (uint32_t)g->tiles,
                     .count = (uint32_t)(c * g->tiles), .has_bias = bias != NULL, .real_tiles = (uint32_t)g->tiles,
                     .parts = 1};
    return wino_dispatch(wg, WINO_OUTPUT, false, &p, m, bias, out, op);
}

/* v's shape and strides as the given 4-d ones (a view of the same storage). */
static void set_view4(wgt_tensor_view *v, const int64_t *shape, const int64_t *strides)
{
    v->ndim = 4;
    for (int i = 0; i < 4; i++) v->shape[i] = shape[i], v->strides[i] = strides[i];
}

/* A temporary [36, rows, cols]; the view's storage is NULL until allocated. */
static wgt_status points_temp(webgpu_backend *wg, uint64_t rows, uint64_t cols, wgt_tensor_view *v)
{
    int64_t shape[3] = {WINO_POINTS, (int64_t)rows, (int64_t)cols};
    return webgpu_temp_alloc(wg, WGT_F32, 3, shape, v);
}

/* The three temporaries of a pass, [36, rows, cols] each. Where the device
 * (or the context's memory budget) cannot hold them, none is kept, the
 * out-of-memory error is cleared and *short_of_memory set: the caller then
 * runs the implicit GEMM, which needs no temporaries this large (a browser
 * tab or a small GPU still trains, more slowly). */
static void release_temps(webgpu_backend *wg, wgt_tensor_view *t[3])
{
    for (int i = 0; i < 3; i++)
        if (t[i]->storage) webgpu_temp_release(wg, t[i]);
}

static wgt_status alloc_temps(webgpu_backend *wg, const wino_plan *plan, wgt_tensor_view *t[3], bool *short_of_memory)
{
    wgt_status s = WGT_OK;
    for (int i = 0; i < 3 && s == WGT_OK; i++) s = points_temp(wg, plan->dims[i][0], plan->dims[i][1], t[i]);
    if (s == WGT_OK) return WGT_OK;
    release_temps(wg, t);
    if (s != WGT_ERR_OUT_OF_MEMORY) return s;
    wgt_context_clear_error(wg->base.ctx);
    *short_of_memory = true;
    return WGT_OK;
}

/* out [N, ko, oh, ow] = conv3x3(src [N, ci, ih, iw], filters) + bias, where
 * the filters are w [ko, ci, 3, 3] or (flip) w [ci, ko, 3, 3] turned by 180
 * degrees: the forward, and the input gradient as a forward on dy. */
static wgt_status forward(webgpu_backend *wg, const wino_plan *plan, const wgt_tensor_view *src,
                          const wgt_tensor_view *w, const wgt_tensor_view *bias, bool flip, uint64_t n, uint64_t ih,
                          uint64_t iw, uint64_t oh, uint64_t ow, int64_t pad_top, int64_t pad_left,
                          const wgt_tensor_view *out, bool *short_of_memory, const char *op)
{
    const uint64_t ci = plan->dims[0][0], ko = plan->dims[2][0];
    wgt_tensor_view v = {0}, u = {0}, m = {0}, *temps[3] = {&v, &u, &m};
    wgt_status s = alloc_temps(wg, plan, temps, short_of_memory);
    if (s != WGT_OK || *short_of_memory) return s;
    s = data_transform(wg, WINO_DATA, src, n, ci, ih, iw, &plan->g, plan->layout, pad_top, pad_left, &v, op);
    if (s == WGT_OK) s = filter_transform(wg, w, flip ? ci : ko, flip ? ko : ci, flip, &u, op);
    if (s == WGT_OK) s = webgpu_matmul_views(wg, &u, &v, &m, op);
    if (s == WGT_OK) s = output_transform(wg, &m, bias, n, ko, oh, ow, &plan->g, out, op);
    /* released right after recording: queue order keeps each block's reuse safe */
    release_temps(wg, temps);
    return s;
}

/* dw [K, C, 3, 3] from x [N, C, H, W] and dy [N, K, OH, OW]: each of the plan's
 * parts of the tiles is its own batch of the GEMM, so that a small filter
 * bank still fills the GPU; the grad-filter transform adds the parts (in
 * order: deterministic). */
static wgt_status weight_grad(webgpu_backend *wg, const wgt_kernel_call *call, const wino_plan *plan,
                              const wgt_tensor_view *x, const wgt_tensor_view *dy, const wgt_tensor_view *dw,
                              bool *short_of_memory, const char *op)
{
    const uint64_t n = (uint64_t)call->conv.n, c = (uint64_t)call->conv.c, k = (uint64_t)call->conv.k;
    wgt_tensor_view v = {0}, d = {0}, m = {0}, *temps[3] = {&v, &d, &m};
    wgt_status s = alloc_temps(wg, plan, temps, short_of_memory);
    if (s != WGT_OK || *short_of_memory) return s;
    s = data_transform(wg, WINO_DATA, x, n, c, (uint64_t)call->conv.h, (uint64_t)call->conv.w, &plan->g,
                       plan->layout, call->conv.pad_top, call->conv.pad_left, &v, op);
    if (s == WGT_OK)
        s = data_transform(wg, WINO_GRAD_DATA, dy, n, k, (uint64_t)call->conv.oh, (uint64_t)call->conv.ow, &plan->g,
                           plan->layout, 0, 0, &d, op);
    if (s == WGT_OK) {
        /* per (point, part): D [K, len] (the part's columns) times V^T [len, C] -> M [K, C] */
        const int64_t P = WINO_POINTS, S = (int64_t)plan->parts, L = (int64_t)plan->len, Tl = (int64_t)plan->layout;
        const int64_t K = (int64_t)k, C = (int64_t)c;
        wgt_tensor_view dp = d, vt = v, mp = m;
        set_view4(&dp, (const int64_t[4]){P, S, K, L}, (const int64_t[4]){K * Tl, L, Tl, 1});
        set_view4(&vt, (const int64_t[4]){P, S, L, C}, (const int64_t[4]){C * Tl, L, 1, Tl});
        set_view4(&mp, (const int64_t[4]){P, S, K, C}, (const int64_t[4]){S * K * C, K * C, C, 1});
        s = webgpu_matmul_views(wg, &dp, &vt, &mp, op);
    }
    if (s == WGT_OK) {
        wino_params p = {.k = (uint32_t)k, .c = (uint32_t)c, .count = (uint32_t)(k * c),
                         .parts = (uint32_t)plan->parts};
        s = wino_dispatch(wg, WINO_GRAD_FILTER, false, &p, &m, NULL, dw, op);
    }
    release_temps(wg, temps);
    return s;
}

wgt_status webgpu_conv_winograd(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_f32_views *v,
                                bool *short_of_memory)
{
    *short_of_memory = false;
    const char *op = call->op_name;
    const uint64_t n = (uint64_t)call->conv.n, c = (uint64_t)call->conv.c, k = (uint64_t)call->conv.k;
    const uint64_t h = (uint64_t)call->conv.h, w = (uint64_t)call->conv.w;
    const uint64_t oh = (uint64_t)call->conv.oh, ow = (uint64_t)call->conv.ow;
    if (wg->knobs.conv_debug)
        fprintf(stderr, "wgt conv: %s kernel %d winograd F(4x4, 3x3) n %llu c %llu k %llu %llux%llu -> %llux%llu\n", op,
                (int)call->conv.kernel, (unsigned long long)n, (unsigned long long)c, (unsigned long long)k,
                (unsigned long long)h, (unsigned long long)w, (unsigned long long)oh, (unsigned long long)ow);
    const wino_plan plan = plan_of(call);
    switch (call->conv.kernel) {
    case WGT_CONV_FORWARD: /* inputs x, w (, bias) */
        return forward(wg, &plan, &v->in[0], &v->in[1], call->conv.has_bias ? &v->in[2] : NULL, false, n, h, w, oh, ow,
                       call->conv.pad_top, call->conv.pad_left, &v->out[0], short_of_memory, op);
    case WGT_CONV_BACKWARD_INPUT: /* inputs dy, w: dx[i] = sum_a dy[i + pad - a] w[a] */
        return forward(wg, &plan, &v->in[0], &v->in[1], NULL, true, n, oh, ow, h, w, 2 - call->conv.pad_top,
                       2 - call->conv.pad_left, &v->out[0], short_of_memory, op);
    case WGT_CONV_BACKWARD_WEIGHT: /* inputs x, dy */
        return weight_grad(wg, call, &plan, &v->in[0], &v->in[1], &v->out[0], short_of_memory, op);
    default: return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: not a convolution kernel", op);
    }
}
