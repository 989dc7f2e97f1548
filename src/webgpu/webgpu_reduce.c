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

#include "webgpu/webgpu_rows.h"

/* Workgroups to aim for before splitting rows (a few waves on a large GPU). */
#define TARGET_GROUPS 2048u
/* Rows up to SPLIT_FROM elements a thread stay one workgroup's (one pass);
 * longer ones split into workgroups of at least MIN_PER_THREAD elements a
 * thread (worth a workgroup) and at most MAX_PER_THREAD (keeps each
 * thread's serial f32 sum short). MIN_PER_THREAD is small because a thread's
 * loads are a chain of rounds of memory latency (two in flight): at 64 a
 * thread, LLM decode's argmax over 128256 logits ran 8 workgroups of 8 rounds
 * each; at 8, 63 workgroups of one round, and the second pass merges 63
 * states: 16.0 -> 9.5 us profiled on an H200, where a one-element cast takes
 * 6.0 (bench/results/h200-2026-11-29n/p1). SPLIT_FROM keeps shorter rows in
 * one pass: splitting them too (8 a thread from 2048 elements) cost the
 * training step 0.1 ms in second passes (32.4 against 32.3 ms, p7). */
#define SPLIT_FROM 64u
#define MIN_PER_THREAD 8u
#define MAX_PER_THREAD 16384u

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
    if (tiles < TARGET_GROUPS && len > (uint64_t)wy * SPLIT_FROM) {
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
