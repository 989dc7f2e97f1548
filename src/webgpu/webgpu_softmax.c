/*
 * WebGPU SOFTMAX and LOG_SOFTMAX along one axis.
 *
 *   x [.., D, ..] (any strides, f32 or f16) -> out [.., D, ..]
 *   softmax = exp(x - max) / sum(exp(x - max)), log_softmax = x - max - log(sum)
 *
 * Kernel (softmax_rows.wgsl): a workgroup of WX rows x WY threads; each row's
 * threads keep an online (running max, rescaled sum) pair over their elements,
 * merge the pairs in shared memory, then read the row again and write it.
 * Long contiguous rows: one workgroup per row with vec4 loads and stores when
 * aligned; rows of up to 32768 such elements are instead held in registers
 * (softmax_cached.wgsl: read once, write once, one exp per element). Short
 * rows: several rows per workgroup. Rows side by side in memory
 * (softmax over a leading axis): 64 rows per workgroup so loads coalesce.
 * f32 math; f16 results are converted from an f32 temporary.
 */
#include <stdio.h>
#include <stdlib.h>

#include "webgpu/webgpu_rows.h"

/* Register-cached rows: the fewest vec4 per thread (up to the kernel's 8,
 * or env WGT_WEBGPU_SOFTMAX_CACHE; 0 turns the kernel off) with 256 threads,
 * else more threads (up to the device's limit, 1024 at most).
 * threads = cache = 0: the row does not fit. */
#define CACHE_MAX 8u
static void cached_shape(webgpu_backend *wg, uint64_t n4, uint32_t *threads, uint32_t *cache)
{
    uint32_t limit = wg->limits.maxComputeInvocationsPerWorkgroup, most = CACHE_MAX;
    if (wg->limits.maxComputeWorkgroupSizeX < limit) limit = wg->limits.maxComputeWorkgroupSizeX;
    int env = wg->knobs.softmax_cache; /* -1: unset */
    if (env >= 0) most = env >= (int)CACHE_MAX ? CACHE_MAX : (uint32_t)env;
    *threads = *cache = 0;
    for (uint32_t t = WEBGPU_ROWS_THREADS; most && t <= 1024 && t <= limit; t *= 2) {
        if (n4 <= (uint64_t)t * most) {
            *threads = t;
            *cache = (uint32_t)((n4 + t - 1) / t);
            return;
        }
    }
}

wgt_status webgpu_softmax_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0], *out = &call->outputs[0];
    const char *op = call->op_name;
    int axis = call->axis;
    wgt_status checked = webgpu_check_along_axis(wg, call);
    if (checked != WGT_OK) return checked;
    wgt_tensor_view target;
    bool temp;
    wgt_status s = webgpu_rows_output_begin(wg, out, WGT_F32, &target, &temp);
    if (s != WGT_OK) return s;
    webgpu_rows r;
    webgpu_rows_for_axis(x, &target, axis, &r);
    if (r.n_rows > 0 && r.row_len > 0) {
        uint32_t wx, wy;
        bool side_by_side = r.n_kept > 0 && r.n_rows > 1 && webgpu_rows_inner_kept_stride(&r) < r.red_x[0];
        if (side_by_side) {
            wx = webgpu_pow2_ceil((uint64_t)r.n_rows);
            if (wx > 64) wx = 64;
            wy = WEBGPU_ROWS_THREADS / wx;
        } else {
            wy = webgpu_rows_threads_per_row(r.row_len);
            wx = WEBGPU_ROWS_THREADS / wy;
        }
        bool vec4 = wx == 1 && x->dtype == WGT_F32 && r.red_x[0] == 1 && r.out_axis_stride == 1 &&
                    r.row_len % 4 == 0 && webgpu_rows_vec4_aligned(&r, x, &target);
        /* Rows that fit in registers (CACHE vec4 per thread): read once. */
        uint32_t threads = 0, cache = 0;
        if (vec4) cached_shape(wg, (uint64_t)r.row_len / 4, &threads, &cache);
        uint64_t groups = cache ? (uint64_t)r.n_rows : ((uint64_t)r.n_rows + wx - 1) / wx;
        webgpu_rows_params params;
        webgpu_rows_params_fill(&r, x, &target, &params);
        params.n_groups = (uint32_t)groups;

        char key[96];
        if (cache)
            snprintf(key, sizeof(key), "softmax_cached/%u/%u/%d", threads, cache, (int)call->log_softmax);
        else
            snprintf(key, sizeof(key), "softmax/%s/%u/%u/%d/%d", wgt_dtype_name(x->dtype), wx, wy, (int)vec4,
                     (int)call->log_softmax);
        webgpu_pipeline *p = webgpu_pipeline_find(wg, key);
        if (!p) {
            static const char *const files[] = {"reduce_common", "softmax_rows", NULL};
            static const char *const cached_files[] = {"reduce_common", "softmax_cached", NULL};
            char extra[512], prelude[1536];
            snprintf(extra, sizeof(extra),
                     "const VEC4 = %s;\nconst LOG = %s;\nconst CACHE = %uu;\n"
                     "@group(0) @binding(3) var<storage, read_write> out: array<%s>;\n"
                     "fn store1(i: u32, v: f32) { %s }\n"
                     "fn store4(i: u32, v: vec4<f32>) { %s }\n",
                     vec4 ? "true" : "false", call->log_softmax ? "true" : "false", cache,
                     vec4 ? "vec4<f32>" : "f32", vec4 ? "" : "out[i] = v;", vec4 ? "out[i] = v;" : "");
            if (webgpu_rows_prelude(prelude, sizeof(prelude), x->dtype, true, cache ? 1 : wx, cache ? threads : wy,
                                    true, extra) < 0)
                s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: prelude too long", op);
            else
                s = webgpu_rows_pipeline(wg, key, prelude, cache ? cached_files : files, NULL, 2, 1, op, &p);
        }
        if (s == WGT_OK) {
            WGPUBuffer buffers[3] = {webgpu_view_buffer(x), webgpu_view_buffer(x), webgpu_view_buffer(&target)};
            s = webgpu_rows_dispatch(wg, p, buffers, 3, &params, groups, op);
        }
    }
    return webgpu_rows_output_finish(wg, &target, temp, out, s, op);
}
