/*
 * WebGPU reductions: REDUCE (sum, mean, max, min, prod, var, std, argmax,
 * argmin over any set of dims), and the family's shared row layout and
 * helpers; CUMSUM is in webgpu_scan.c, SOFTMAX in webgpu_softmax.c.
 *
 *   x [d0..dn) (any strides) -> out: x's shape with the reduced dims set to 1
 *
 * Kernels: reduce_rows.wgsl (+ reduce_common, reduce_state) folds rows in
 * workgroups of WX rows x WY threads; when there are too few rows to fill the
 * GPU, each row is split over several workgroups that write partial states,
 * and reduce_combine.wgsl merges them (two passes).
 *
 * Data types: inputs are read in their own dtype (f16 unpacked from u32
 * words, u8/bool extracted from bytes). Accumulation: f32 for f32/f16 inputs
 * and for mean/var/std; i32 (exact, wrapping) for sum/prod/max/min/arg* of
 * i32/u8/bool. Outputs that are not f32/i32 (f16 results, max/min of u8/bool)
 * are written to an f32/i32 temporary and converted into out (one more pass).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_reduce_internal.h"

/* Workgroups to aim for before splitting rows (a few waves on a large GPU). */
#define TARGET_GROUPS 2048u
/* Elements per thread per split: at least (worth a workgroup), at most (keeps
 * each thread's serial f32 sum short). */
#define MIN_PER_THREAD 64u
#define MAX_PER_THREAD 16384u

/* ------------------------------------------------------------- row layout */

static void add_kept(webgpu_rows *r, int64_t shape, int64_t x_stride, int64_t out_stride)
{
    if (shape == 1) return;
    int k = r->n_kept;
    if (k > 0 && r->kept_x[k - 1] == x_stride * shape && r->kept_out[k - 1] == out_stride * shape) {
        r->kept_shape[k - 1] *= shape;
        r->kept_x[k - 1] = x_stride;
        r->kept_out[k - 1] = out_stride;
        return;
    }
    r->kept_shape[k] = shape;
    r->kept_x[k] = x_stride;
    r->kept_out[k] = out_stride;
    r->n_kept++;
}

static void layout_totals(webgpu_rows *r)
{
    r->n_rows = 1;
    for (int k = 0; k < r->n_kept; k++) r->n_rows *= r->kept_shape[k];
    r->row_len = 1;
    for (int k = 0; k < r->n_red; k++) r->row_len *= r->red_shape[k];
}

void webgpu_rows_for_reduce(const wgt_tensor_view *x, const wgt_tensor_view *out, uint32_t mask, webgpu_rows *r)
{
    memset(r, 0, sizeof(*r));
    for (int d = 0; d < x->ndim; d++) {
        if ((mask >> d) & 1u) {
            if (x->shape[d] == 1) continue;
            r->red_shape[r->n_red] = x->shape[d];
            r->red_x[r->n_red++] = x->strides[d];
        } else {
            add_kept(r, x->shape[d], x->strides[d], out->strides[d]);
        }
    }
    /* The order of reduced positions only matters to arg* (one dim): sort by
     * stride, largest first, so the innermost is the most contiguous, then
     * merge neighbours that are contiguous with each other. */
    for (int i = 1; i < r->n_red; i++) {
        for (int j = i; j > 0 && r->red_x[j - 1] < r->red_x[j]; j--) {
            int64_t s = r->red_shape[j], t = r->red_x[j];
            r->red_shape[j] = r->red_shape[j - 1];
            r->red_x[j] = r->red_x[j - 1];
            r->red_shape[j - 1] = s;
            r->red_x[j - 1] = t;
        }
    }
    int n = 0;
    for (int i = 0; i < r->n_red; i++) {
        if (n > 0 && r->red_x[n - 1] == r->red_x[i] * r->red_shape[i]) {
            r->red_shape[n - 1] *= r->red_shape[i];
            r->red_x[n - 1] = r->red_x[i];
        } else {
            r->red_shape[n] = r->red_shape[i];
            r->red_x[n++] = r->red_x[i];
        }
    }
    r->n_red = n;
    layout_totals(r);
}

void webgpu_rows_for_axis(const wgt_tensor_view *x, const wgt_tensor_view *out, int axis, webgpu_rows *r)
{
    memset(r, 0, sizeof(*r));
    for (int d = 0; d < x->ndim; d++)
        if (d != axis) add_kept(r, x->shape[d], x->strides[d], out->strides[d]);
    r->n_red = 1; /* a scalar is a line of one element */
    r->red_shape[0] = x->ndim ? x->shape[axis] : 1;
    r->red_x[0] = x->ndim ? x->strides[axis] : 0;
    r->out_axis_stride = x->ndim ? out->strides[axis] : 0;
    layout_totals(r);
}

static bool view_fits_u32(const wgt_tensor_view *v)
{
    return v->storage && v->storage->bytes <= UINT32_MAX && wgt_shape_numel(v->ndim, v->shape) <= UINT32_MAX &&
           v->ndim <= WGT_MAX_DIMS;
}

bool webgpu_rows_fit_u32(const wgt_tensor_view *x, const wgt_tensor_view *out)
{
    return view_fits_u32(x) && view_fits_u32(out);
}

void webgpu_rows_params_fill(const webgpu_rows *r, const wgt_tensor_view *x, const wgt_tensor_view *out,
                             webgpu_rows_params *p)
{
    memset(p, 0, sizeof(*p));
    for (int k = 0; k < r->n_kept; k++) {
        p->kept_shape[k] = (uint32_t)r->kept_shape[k];
        p->kept_x[k] = (uint32_t)r->kept_x[k];
        p->kept_out[k] = (uint32_t)r->kept_out[k];
    }
    for (int k = 0; k < r->n_red; k++) {
        p->red_shape[k] = (uint32_t)r->red_shape[k];
        p->red_x[k] = (uint32_t)r->red_x[k];
    }
    p->n_kept = (uint32_t)r->n_kept;
    p->n_red = (uint32_t)r->n_red;
    p->n_rows = (uint32_t)r->n_rows;
    p->row_len = (uint32_t)r->row_len;
    p->x_offset = (uint32_t)x->offset;
    p->out_offset = (uint32_t)out->offset;
    p->out_axis_stride = (uint32_t)r->out_axis_stride;
    p->splits = 1;
    p->nan_bits = 0x7fc00000u;
}

bool webgpu_rows_vec4_aligned(const webgpu_rows *r, const wgt_tensor_view *x, const wgt_tensor_view *out)
{
    if (x->offset % 4 != 0 || (out && out->offset % 4 != 0)) return false;
    for (int k = 0; k < r->n_kept; k++)
        if (r->kept_x[k] % 4 != 0 || (out && r->kept_out[k] % 4 != 0)) return false;
    return true;
}

int64_t webgpu_rows_inner_kept_stride(const webgpu_rows *r) { return r->n_kept ? r->kept_x[r->n_kept - 1] : 0; }

/* ------------------------------------------------------- prelude, pipelines */

int webgpu_rows_prelude(char *buf, size_t size, wgt_dtype in, bool acc_f32, uint32_t wx, uint32_t wy, bool with_x4,
                        const char *extra)
{
    const char *word = "u32", *load = NULL;
    switch (in) {
    case WGT_F32: word = "f32"; load = "A(x[i])"; break;
    case WGT_I32: word = "i32"; load = "A(x[i])"; break;
    case WGT_F16: load = "A(unpack2x16float(x[i >> 1u])[i & 1u])"; break;
    case WGT_U8:
    case WGT_BOOL: load = "A((x[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu)"; break;
    default: break; /* no input binding (reduce_combine) */
    }
    int n = snprintf(buf, size, "alias A = %s;\nconst IS_FLOAT = %s;\nconst WX = %uu;\nconst WY = %uu;\n",
                     acc_f32 ? "f32" : "i32", acc_f32 ? "true" : "false", wx, wy);
    if (n >= 0 && load && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n,
                      "@group(0) @binding(1) var<storage, read> x: array<%s>;\n"
                      "fn load(i: u32) -> A { return %s; }\n",
                      word, load);
    if (n >= 0 && load && with_x4 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n,
                      "@group(0) @binding(2) var<storage, read> x4: array<vec4<%s>>;\n"
                      "fn load4(i: u32) -> vec4<A> { return vec4<A>(x4[i]); }\n",
                      word);
    if (n >= 0 && (size_t)n < size) n += snprintf(buf + n, size - (size_t)n, "%s\n", extra ? extra : "");
    return n >= 0 && (size_t)n < size ? n : -1;
}

wgt_status webgpu_rows_pipeline(webgpu_backend *wg, const char *key, const char *prelude, const char *const *files,
                                const char *entry, int n_read_only, int n_read_write, const char *op,
                                webgpu_pipeline **out)
{
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    size_t total = strlen(prelude) + 1;
    for (int i = 0; files[i]; i++) {
        const char *text = webgpu_kernel_source(files[i]);
        if (!text) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel %s.wgsl is not embedded", op, files[i]);
        total += strlen(text) + 1;
    }
    char *source = malloc(total);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    size_t at = 0;
    memcpy(source, prelude, strlen(prelude));
    at += strlen(prelude);
    for (int i = 0; files[i]; i++) {
        const char *text = webgpu_kernel_source(files[i]);
        memcpy(source + at, text, strlen(text));
        at += strlen(text);
        source[at++] = '\n';
    }
    source[at] = '\0';
    /* The kernels' index logic keeps every access inside the views. */
    wgt_status s = webgpu_pipeline_create(wg, key, source, entry, n_read_only, n_read_write, true, false, op, out);
    free(source);
    return s;
}

wgt_status webgpu_rows_dispatch(webgpu_backend *wg, webgpu_pipeline *p, const WGPUBuffer *buffers, int n_buffers,
                                const webgpu_rows_params *params, uint64_t n_groups, const char *op)
{
    uint32_t gx, gy;
    wgt_status s = webgpu_grid(wg, n_groups, &gx, &gy, op);
    if (s != WGT_OK) return s;
    return webgpu_dispatch(wg, p, buffers, n_buffers, params, sizeof(*params), gx, gy, 1, op);
}

wgt_status webgpu_rows_output_begin(webgpu_backend *wg, const wgt_tensor_view *out, wgt_dtype native,
                                    wgt_tensor_view *target, bool *temp)
{
    *temp = out->dtype != native;
    if (!*temp) {
        *target = *out;
        return WGT_OK;
    }
    return webgpu_temp_alloc(wg, native, out->ndim, out->shape, target);
}

wgt_status webgpu_rows_output_finish(webgpu_backend *wg, wgt_tensor_view *target, bool temp,
                                     const wgt_tensor_view *out, wgt_status status, const char *op)
{
    if (!temp) return status;
    if (status == WGT_OK) status = webgpu_convert(wg, target, out, op);
    webgpu_temp_release(wg, target);
    return status;
}

/* ------------------------------------------------------------------ REDUCE */

static bool reduce_output_shape_ok(const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    if (out->ndim != x->ndim || (x->ndim < 32 && (call->reduce_mask >> x->ndim) != 0)) return false;
    for (int d = 0; d < x->ndim; d++)
        if (out->shape[d] != (((call->reduce_mask >> d) & 1u) ? 1 : x->shape[d])) return false;
    return true;
}

/* Records the reduce of x into target (f32/i32, the layout in r). */
static wgt_status reduce_record(webgpu_backend *wg, const wgt_kernel_call *call, const webgpu_rows *r,
                                const wgt_tensor_view *target, bool acc_f32)
{
    const wgt_tensor_view *x = &call->inputs[0];
    const char *op = call->op_name;
    int kind = (int)call->reduce;

    /* Workgroup shape: WY threads share a row (about 4 elements each, up to
     * 256 threads); WX rows per workgroup. When the rows' neighbours are closer
     * in memory than a row's elements (reducing a leading dim), 64 rows side by
     * side keep the loads coalesced. */
    uint32_t wx, wy;
    bool columns = r->n_kept > 0 && r->n_red > 0 && r->n_rows > 1 &&
                   webgpu_rows_inner_kept_stride(r) < r->red_x[r->n_red - 1];
    if (columns) {
        wx = webgpu_pow2_ceil((uint64_t)r->n_rows);
        if (wx > 64) wx = 64;
        wy = WEBGPU_ROWS_THREADS / wx;
    } else {
        wy = webgpu_rows_threads_per_row(r->row_len);
        wx = WEBGPU_ROWS_THREADS / wy;
    }

    /* Splits: few row tiles and long rows -> several workgroups per tile. */
    uint64_t len = (uint64_t)r->row_len, tiles = ((uint64_t)r->n_rows + wx - 1) / wx, splits = 1;
    if (tiles < TARGET_GROUPS) {
        splits = (TARGET_GROUPS + tiles - 1) / tiles;
        uint64_t useful = (len + (uint64_t)wy * MIN_PER_THREAD - 1) / ((uint64_t)wy * MIN_PER_THREAD);
        if (splits > useful) splits = useful;
    }
    uint64_t needed = (len + (uint64_t)wy * MAX_PER_THREAD - 1) / ((uint64_t)wy * MAX_PER_THREAD);
    if (splits < needed) splits = needed;
    if (splits < 1) splits = 1;
    uint64_t chunk = (len + splits - 1) / splits;
    chunk = (chunk + 3) / 4 * 4;
    splits = chunk ? (len + chunk - 1) / chunk : 1;
    if (splits < 1) splits = 1;

    bool vec4 = wx == 1 && r->n_red == 1 && r->red_x[0] == 1 && (x->dtype == WGT_F32 || x->dtype == WGT_I32) &&
                webgpu_rows_vec4_aligned(r, x, NULL);

    webgpu_rows_params params;
    webgpu_rows_params_fill(r, x, target, &params);
    params.splits = (uint32_t)splits;
    params.chunk = (uint32_t)chunk;
    params.correction = (uint32_t)call->correction;
    if (call->reduce == WGT_REDUCE_MAX) params.identity = acc_f32 ? 0xff800000u : 0x80000000u;
    if (call->reduce == WGT_REDUCE_MIN) params.identity = acc_f32 ? 0x7f800000u : 0x7fffffffu;
    uint64_t groups = tiles * splits;
    if (groups > UINT32_MAX)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %llu workgroups", op, (unsigned long long)groups);
    params.n_groups = (uint32_t)groups;

    char key[128], extra[96], prelude[1024];
    snprintf(key, sizeof(key), "reduce_rows/%d/%s/%s/%u/%u/%d", kind, wgt_dtype_name(x->dtype),
             acc_f32 ? "f32" : "i32", wx, wy, (int)vec4);
    snprintf(extra, sizeof(extra), "const OP = %du;\nconst VEC4 = %s;\n", kind, vec4 ? "true" : "false");
    webgpu_pipeline *rows_pipeline = webgpu_pipeline_find(wg, key);
    if (!rows_pipeline) {
        static const char *const files[] = {"reduce_common", "reduce_state", "reduce_rows", NULL};
        if (webgpu_rows_prelude(prelude, sizeof(prelude), x->dtype, acc_f32, wx, wy, true, extra) < 0)
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: prelude too long", op);
        wgt_status s = webgpu_rows_pipeline(wg, key, prelude, files, NULL, 2, 1, op, &rows_pipeline);
        if (s != WGT_OK) return s;
    }
    WGPUBuffer x_buffer = webgpu_view_buffer(x);
    if (splits == 1) {
        WGPUBuffer buffers[3] = {x_buffer, x_buffer, webgpu_view_buffer(target)};
        return webgpu_rows_dispatch(wg, rows_pipeline, buffers, 3, &params, groups, op);
    }

    /* Two passes: partial states [rows, splits], then one workgroup per row. */
    webgpu_pipeline *combine = NULL;
    snprintf(key, sizeof(key), "reduce_combine/%d/%s", kind, acc_f32 ? "f32" : "i32");
    combine = webgpu_pipeline_find(wg, key);
    if (!combine) {
        static const char *const files[] = {"reduce_common", "reduce_state", "reduce_combine", NULL};
        snprintf(extra, sizeof(extra), "const OP = %du;\n", kind);
        if (webgpu_rows_prelude(prelude, sizeof(prelude), WGT_DTYPE_COUNT, acc_f32, 1, WEBGPU_ROWS_THREADS, false,
                                extra) < 0)
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: prelude too long", op);
        wgt_status s = webgpu_rows_pipeline(wg, key, prelude, files, NULL, 1, 1, op, &combine);
        if (s != WGT_OK) return s;
    }
    wgt_tensor_view partial;
    int64_t words = (int64_t)((uint64_t)r->n_rows * splits * 5);
    wgt_status s = webgpu_temp_alloc(wg, WGT_I32, 1, &words, &partial);
    if (s != WGT_OK) return s;
    WGPUBuffer first[3] = {x_buffer, x_buffer, webgpu_view_buffer(&partial)};
    s = webgpu_rows_dispatch(wg, rows_pipeline, first, 3, &params, groups, op);
    if (s == WGT_OK) {
        WGPUBuffer second[2] = {webgpu_view_buffer(&partial), webgpu_view_buffer(target)};
        s = webgpu_rows_dispatch(wg, combine, second, 2, &params, (uint64_t)r->n_rows, op);
    }
    webgpu_temp_release(wg, &partial);
    return s;
}

static wgt_status reduce_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    const char *op = call->op_name;
    if (!reduce_output_shape_ok(call)) {
        char xs[160], os[160];
        return wgt_error(wg->base.ctx, WGT_ERR_SHAPE_MISMATCH,
                         "%s: output %s is not the keepdim shape of x %s with reduce mask 0x%x", op,
                         wgt_shape_string(out->ndim, out->shape, os, sizeof(os)),
                         wgt_shape_string(x->ndim, x->shape, xs, sizeof(xs)), call->reduce_mask);
    }
    wgt_reduce_kind kind = call->reduce;
    bool float_in = x->dtype == WGT_F32 || x->dtype == WGT_F16;
    bool acc_f32 = float_in || kind == WGT_REDUCE_MEAN || kind == WGT_REDUCE_VAR || kind == WGT_REDUCE_STD;
    bool arg = kind == WGT_REDUCE_ARGMAX || kind == WGT_REDUCE_ARGMIN;
    wgt_dtype native = (arg || !acc_f32) ? WGT_I32 : WGT_F32;

    wgt_tensor_view target;
    bool temp;
    wgt_status s = webgpu_rows_output_begin(wg, out, native, &target, &temp);
    if (s != WGT_OK) return s;
    webgpu_rows r;
    webgpu_rows_for_reduce(x, &target, call->reduce_mask, &r);
    if (r.n_rows > 0) s = reduce_record(wg, call, &r, &target, acc_f32);
    return webgpu_rows_output_finish(wg, &target, temp, out, s, op);
}

/* ------------------------------------------------------------ family entry */

bool webgpu_reduce_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if (call->n_inputs < 1 || call->n_outputs < 1) return false;
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    if (x->dtype >= WGT_DTYPE_COUNT || out->dtype >= WGT_DTYPE_COUNT) return false;
    if (!webgpu_rows_fit_u32(x, out)) return false;
    switch (call->kind) {
    case WGT_KERNEL_REDUCE: return call->reduce >= 0 && call->reduce < WGT_REDUCE_COUNT;
    case WGT_KERNEL_CUMSUM: return true;
    case WGT_KERNEL_SOFTMAX: return x->dtype == WGT_F32 || x->dtype == WGT_F16;
    default: return false;
    }
}

wgt_status webgpu_reduce_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (!webgpu_reduce_supports(wg, call))
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: not supported by the WebGPU reduce kernels",
                         call->op_name);
    switch (call->kind) {
    case WGT_KERNEL_REDUCE: return reduce_run(wg, call);
    case WGT_KERNEL_CUMSUM: return webgpu_cumsum_run(wg, call);
    case WGT_KERNEL_SOFTMAX: return webgpu_softmax_run(wg, call);
    default: return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: not a reduce-family kernel", call->op_name);
    }
}

wgt_status webgpu_check_along_axis(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    int axis = call->axis;
    bool shape_ok = out->ndim == x->ndim && (x->ndim == 0 ? axis == 0 : axis >= 0 && axis < x->ndim);
    for (int d = 0; shape_ok && d < x->ndim; d++) shape_ok = out->shape[d] == x->shape[d];
    if (shape_ok) return WGT_OK;
    char xs[160], os[160];
    return wgt_error(wg->base.ctx, WGT_ERR_SHAPE_MISMATCH, "%s: output %s and x %s with axis %d", call->op_name,
                     wgt_shape_string(out->ndim, out->shape, os, sizeof(os)),
                     wgt_shape_string(x->ndim, x->shape, xs, sizeof(xs)), axis);
}
