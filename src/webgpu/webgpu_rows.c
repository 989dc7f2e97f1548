/*
 * The row layout shared by the reduce family (webgpu_reduce.c, webgpu_scan.c,
 * webgpu_softmax.c) and the helpers that build, compile and dispatch it; see
 * webgpu_rows.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_rows.h"

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
