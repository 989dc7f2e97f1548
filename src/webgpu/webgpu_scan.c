/*
 * WebGPU CUMSUM: inclusive prefix sums along one axis.
 *
 *   x [.., D, ..] (any strides) -> out [.., D, ..], out[.., d, ..] = x[.., 0, ..] + ... + x[.., d, ..]
 *
 * Kernels (cumsum_rows.wgsl): scan_rows, one workgroup per row scanning chunks
 * of 1024 positions with a carry (long rows, rows contiguous along the axis);
 * scan_serial, one thread per row (short rows, or rows side by side in memory
 * as when scanning a leading axis). f32/f16 inputs sum in f32 (f16 results
 * are converted from an f32 temporary); i32/u8/bool sum exactly in i32 (wraps).
 */
#include <stdio.h>

#include "webgpu/webgpu_rows.h"

/* Rows at most this long always take one thread each. */
#define SERIAL_MAX_LEN 32
/* Rows side by side in memory take one thread each when there are this many. */
#define SERIAL_MIN_ROWS 1024

wgt_status webgpu_cumsum_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    const char *op = call->op_name;
    int axis = call->axis;
    wgt_status checked = webgpu_check_along_axis(wg, call);
    if (checked != WGT_OK) return checked;
    bool acc_f32 = x->dtype == WGT_F32 || x->dtype == WGT_F16;
    wgt_tensor_view target;
    bool temp;
    wgt_status s = webgpu_rows_output_begin(wg, out, acc_f32 ? WGT_F32 : WGT_I32, &target, &temp);
    if (s != WGT_OK) return s;
    webgpu_rows r;
    webgpu_rows_for_axis(x, &target, axis, &r);
    if (r.n_rows > 0 && r.row_len > 0) {
        bool side_by_side = r.n_kept > 0 && webgpu_rows_inner_kept_stride(&r) < r.red_x[0];
        bool serial = r.row_len <= SERIAL_MAX_LEN || (side_by_side && r.n_rows >= SERIAL_MIN_ROWS);
        const char *entry = serial ? "scan_serial" : "scan_rows";
        uint64_t groups = serial ? ((uint64_t)r.n_rows + WEBGPU_ROWS_THREADS - 1) / WEBGPU_ROWS_THREADS
                                 : (uint64_t)r.n_rows;
        webgpu_rows_params params;
        webgpu_rows_params_fill(&r, x, &target, &params);
        params.n_groups = (uint32_t)groups;
        char key[96];
        snprintf(key, sizeof(key), "cumsum/%s/%s/%s", wgt_dtype_name(x->dtype), acc_f32 ? "f32" : "i32", entry);
        webgpu_pipeline *p = webgpu_pipeline_find(wg, key);
        if (!p) {
            static const char *const files[] = {"reduce_common", "cumsum_rows", NULL};
            char prelude[1024];
            if (webgpu_rows_prelude(prelude, sizeof(prelude), x->dtype, acc_f32, WEBGPU_ROWS_THREADS, 1, false,
                                    NULL) < 0)
                s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: prelude too long", op);
            else
                s = webgpu_rows_pipeline(wg, key, prelude, files, entry, 1, 1, op, &p);
        }
        if (s == WGT_OK) {
            WGPUBuffer buffers[2] = {webgpu_view_buffer(x), webgpu_view_buffer(&target)};
            s = webgpu_rows_dispatch(wg, p, buffers, 2, &params, groups, op);
        }
    }
    return webgpu_rows_output_finish(wg, &target, temp, out, s, op);
}
