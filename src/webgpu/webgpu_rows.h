/*
 * Private to the reduce family (webgpu_reduce.c, webgpu_scan.c,
 * webgpu_softmax.c; implemented in webgpu_rows.c): the row layout every kernel
 * of the family works on, its
 * parameter block (reduce_common.wgsl's Params), and shared helpers.
 *
 * A call is seen as rows: x [d0..dn) splits into kept dims (one row per kept
 * coordinate) and reduced dims (the row's elements). REDUCE: kept = the dims
 * not in reduce_mask, reduced = the mask. CUMSUM / SOFTMAX: kept = every dim
 * but the axis, reduced = the axis. Size-1 dims are dropped and neighbours that
 * are contiguous with each other are merged, so most calls end up with one
 * kept and one reduced dim.
 */
#ifndef WGT_WEBGPU_ROWS_H
#define WGT_WEBGPU_ROWS_H

#include "webgpu/webgpu_internal.h"

/* Threads per workgroup of every kernel of the family (WX * WY). */
#define WEBGPU_ROWS_THREADS 256u

typedef struct webgpu_rows {
    int n_kept, n_red;
    int64_t kept_shape[WGT_MAX_DIMS], kept_x[WGT_MAX_DIMS], kept_out[WGT_MAX_DIMS];
    int64_t red_shape[WGT_MAX_DIMS], red_x[WGT_MAX_DIMS];
    int64_t n_rows, row_len;
    int64_t out_axis_stride; /* CUMSUM / SOFTMAX */
} webgpu_rows;

/* Matches struct Params in reduce_common.wgsl (arrays of 8 are array<vec4<u32>, 2>). */
typedef struct webgpu_rows_params {
    uint32_t kept_shape[8], kept_x[8], kept_out[8];
    uint32_t red_shape[8], red_x[8];
    uint32_t n_kept, n_red, n_rows, row_len;
    uint32_t x_offset, out_offset, out_axis_stride, splits;
    uint32_t chunk, n_groups, correction, nan_bits;
    uint32_t identity, pad[3];
} webgpu_rows_params;

/* REDUCE layout: rows over the dims not in mask. */
void webgpu_rows_for_reduce(const wgt_tensor_view *x, const wgt_tensor_view *out, uint32_t mask, webgpu_rows *r);
/* CUMSUM / SOFTMAX layout: rows over every dim but axis; the row is the axis. */
void webgpu_rows_for_axis(const wgt_tensor_view *x, const wgt_tensor_view *out, int axis, webgpu_rows *r);
/* Whether every index the kernels compute fits in u32 (views, counts). */
bool webgpu_rows_fit_u32(const wgt_tensor_view *x, const wgt_tensor_view *out);
/* Fills the layout part of params (the rest zeroed, nan_bits set). */
void webgpu_rows_params_fill(const webgpu_rows *r, const wgt_tensor_view *x, const wgt_tensor_view *out,
                             webgpu_rows_params *p);
/* Whether every row starts at a multiple of 4 elements in x (and in out when
 * out is given): the vec4 kernels' precondition, with contiguous rows. */
bool webgpu_rows_vec4_aligned(const webgpu_rows *r, const wgt_tensor_view *x, const wgt_tensor_view *out);
/* Inner x strides: of the innermost kept dim (0 if none) and reduced dim. */
int64_t webgpu_rows_inner_kept_stride(const webgpu_rows *r);

/* The prelude every kernel of the family starts with:
 *   alias A = <acc>;  const IS_FLOAT; const WX, WY;
 *   binding 1 x (input dtype's words) with fn load(i: u32) -> A;
 *   with_x4: binding 2 x4 (x as vec4) with fn load4(i: u32) -> vec4<A>.
 * extra is appended as is (more constants). Returns the length, or -1 if it
 * does not fit. */
int webgpu_rows_prelude(char *buf, size_t size, wgt_dtype in, bool acc_f32, uint32_t wx, uint32_t wy, bool with_x4,
                        const char *extra);

/* The cached pipeline key, or one compiled from prelude + the embedded kernel
 * files (NULL-terminated list); entry NULL = "main". */
wgt_status webgpu_rows_pipeline(webgpu_backend *wg, const char *key, const char *prelude, const char *const *files,
                                const char *entry, int n_read_only, int n_read_write, const char *op,
                                webgpu_pipeline **out);

/* Folds n workgroups into a grid and dispatches. */
wgt_status webgpu_rows_dispatch(webgpu_backend *wg, webgpu_pipeline *p, const WGPUBuffer *buffers, int n_buffers,
                                const webgpu_rows_params *params, uint64_t n_groups, const char *op);

/* The output the kernel writes: out itself when its dtype is native (f32/i32),
 * else a contiguous temporary of native dtype (*temp set) that
 * webgpu_rows_output_finish converts into out (an ELEMENTWISE copy: f16 and
 * u8/bool outputs cost one more pass). */
wgt_status webgpu_rows_output_begin(webgpu_backend *wg, const wgt_tensor_view *out, wgt_dtype native,
                                    wgt_tensor_view *target, bool *temp);
wgt_status webgpu_rows_output_finish(webgpu_backend *wg, wgt_tensor_view *target, bool temp,
                                     const wgt_tensor_view *out, wgt_status status, const char *op);

static inline uint32_t webgpu_pow2_ceil(uint64_t n)
{
    uint32_t p = 1;
    while (p < n && p < (1u << 31)) p <<= 1;
    return p;
}

/* Threads that share a row of len elements: about 4 elements each, a power
 * of two from 1 to WEBGPU_ROWS_THREADS. */
static inline uint32_t webgpu_rows_threads_per_row(int64_t len)
{
    uint32_t t = webgpu_pow2_ceil((uint64_t)(len + 3) / 4);
    return t > WEBGPU_ROWS_THREADS ? WEBGPU_ROWS_THREADS : t;
}

/* Family members (webgpu_scan.c, webgpu_softmax.c). */
/* CUMSUM and SOFTMAX: out has x's shape and axis is one of x's dims (0 for a
 * scalar); otherwise records WGT_ERR_SHAPE_MISMATCH naming both shapes. */
wgt_status webgpu_check_along_axis(webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_cumsum_run(webgpu_backend *wg, const wgt_kernel_call *call);
wgt_status webgpu_softmax_run(webgpu_backend *wg, const wgt_kernel_call *call);

#endif /* WGT_WEBGPU_ROWS_H */
