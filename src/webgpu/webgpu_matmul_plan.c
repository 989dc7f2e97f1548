/*
 * MATMUL on WebGPU, what the GEMM and matrix-vector files share: the config
 * table (tile shapes, WGT_MATMUL_CONFIG, the tuner's view), the checks on
 * configs and operands, the problem (batch dims collapsed, sizes checked to
 * fit u32), pipelines (preludes of WGSL consts per dtype, layout and
 * epilogue) and dispatch. See webgpu_matmul.c for the whole picture.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gemm_shared.h"

/* Every candidate, by name (WGT_MATMUL_CONFIG). Measured on an H200 (Vulkan,
 * f32, M = N = K): tile128x128k8 reaches 42-43 TFLOP/s from 2048 to 8192 with
 * row-major operands (48 with a transposed a), 0.83-0.85 of cuBLAS without
 * TF32; at 1024 tile128x64k8 gives 28 (0.73); BK = 16 was slower everywhere
 * (register pressure). For W [11008, 4096] @ x, gemv_rows64 moves 3.8 TB/s
 * (faster than PyTorch); for x @ W, gemv_cols8x32 moves 3.5 TB/s (0.92).
 * On an H100 (Vulkan, driver 580.159.04, `wgt tune` rows, ms for A B / A B^T /
 * A^T B at 4096^3): tile128x128k8 3.27 / 3.43 / 2.88; tile128x128k8t (operands
 * read along k copied transposed first) 2.94 / 3.02 / 2.88, at 8192^3 22.7 /
 * 23.0 / 22.4 against 25.5 / 26.5 / 22.5. Warp layouts (w8, w4) changed
 * nothing (+-1%); 8x16 and 16x8 outputs per invocation (tile128x256,
 * tile256x128) and 4x4 block fetches (b) were 20-45% slower on A B (register
 * pressure: fewer workgroups per SM). They stay candidates for other GPUs.
 * The s configs (8 x 8 outputs, 128 or 64 invocations: more, smaller
 * workgroups an SM) won on an H200 where b is read along n and N = 384
 * (tile64x128k8s: dy W 16384x384 over K = 1536 0.473 ms against 0.504; the
 * "narrow" rule of webgpu_matmul.c) and lost elsewhere, 8 x 16 and 16 x 8 in
 * 128 invocations by 40-100% (their accumulators spilled; not kept):
 * bench/results/h200-2026-11-28e probes p2, p5. */
static const matmul_config matmul_configs[] = {
    {"tile128x128k8", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 0, 0, 0},
    {"tile128x128k16", KERNEL_TILED, 128, 128, 16, 8, 8, 8, 0, 0, 0, 0, 0},
    {"tile128x64k8", KERNEL_TILED, 128, 64, 8, 8, 4, 8, 0, 0, 0, 0, 0},
    {"tile64x128k8", KERNEL_TILED, 64, 128, 8, 4, 8, 8, 0, 0, 0, 0, 0},
    {"tile64x64k8", KERNEL_TILED, 64, 64, 8, 4, 4, 8, 0, 0, 0, 0, 0},
    {"tile64x64k16", KERNEL_TILED, 64, 64, 16, 4, 4, 8, 0, 0, 0, 0, 0},
    {"tile32x32k8", KERNEL_TILED, 32, 32, 8, 4, 4, 8, 0, 0, 0, 0, 0},
    {"tile128x128k8w8", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 0, 0, 8},
    {"tile128x128k8w4", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 0, 0, 4},
    {"tile128x256k8w8", KERNEL_TILED, 128, 256, 8, 8, 16, 8, 0, 0, 0, 0, 8},
    {"tile256x128k8w8", KERNEL_TILED, 256, 128, 8, 16, 8, 8, 0, 0, 0, 0, 8},
    {"tile128x64k8w8", KERNEL_TILED, 128, 64, 8, 8, 4, 8, 0, 0, 0, 0, 8},
    {"tile128x128k8b", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 1, 0, 0},
    {"tile128x128k8w8b", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 1, 0, 8},
    {"tile128x128k16b", KERNEL_TILED, 128, 128, 16, 8, 8, 8, 0, 0, 1, 0, 0},
    {"tile128x64k8b", KERNEL_TILED, 128, 64, 8, 8, 4, 8, 0, 0, 1, 0, 0},
    {"tile64x64k16b", KERNEL_TILED, 64, 64, 16, 4, 4, 8, 0, 0, 1, 0, 0},
    {"tile128x128k8t", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 0, 1, 0},
    {"tile128x128k8w8t", KERNEL_TILED, 128, 128, 8, 8, 8, 8, 0, 0, 0, 1, 8},
    {"tile64x64k16t", KERNEL_TILED, 64, 64, 16, 4, 4, 8, 0, 0, 0, 1, 0},
    {"tile64x128k8t", KERNEL_TILED, 64, 128, 8, 4, 8, 8, 0, 0, 0, 1, 0},
    {"tile128x64k8s", KERNEL_TILED, 128, 64, 8, 8, 8, 8, 0, 0, 0, 0, 0},
    {"tile64x128k8s", KERNEL_TILED, 64, 128, 8, 8, 8, 8, 0, 0, 0, 0, 0},
    {"tile64x64k8s", KERNEL_TILED, 64, 64, 8, 8, 8, 8, 0, 0, 0, 0, 0},
    {"gemv_rows32", KERNEL_GEMV_ROWS, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0, 0},
    {"gemv_rows64", KERNEL_GEMV_ROWS, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0},
    {"gemv_rows128", KERNEL_GEMV_ROWS, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0},
    {"gemv_rows256", KERNEL_GEMV_ROWS, 0, 0, 0, 0, 0, 0, 256, 0, 0, 0, 0},
    {"gemv_cols8x32", KERNEL_GEMV_COLS, 0, 0, 0, 0, 0, 0, 8, 32, 0, 0, 0},
    {"gemv_cols4x64", KERNEL_GEMV_COLS, 0, 0, 0, 0, 0, 0, 4, 64, 0, 0, 0},
    {"gemv_cols16x16", KERNEL_GEMV_COLS, 0, 0, 0, 0, 0, 0, 16, 16, 0, 0, 0},
    {"gemv_cols32x8", KERNEL_GEMV_COLS, 0, 0, 0, 0, 0, 0, 32, 8, 0, 0, 0},
    {"gemv_cols8x16", KERNEL_GEMV_COLS, 0, 0, 0, 0, 0, 0, 8, 16, 0, 0, 0},
};

#define MATMUL_N_CONFIGS (int)(sizeof(matmul_configs) / sizeof(matmul_configs[0]))

const matmul_config *matmul_find_config(const char *name)
{
    for (int i = 0; i < MATMUL_N_CONFIGS; i++)
        if (strcmp(matmul_configs[i].name, name) == 0) return &matmul_configs[i];
    return NULL;
}

int64_t matmul_config_threads(const matmul_config *c)
{
    switch (c->kernel) {
    case KERNEL_TILED: return (int64_t)(c->bm / c->tm) * (c->bn / c->tn);
    case KERNEL_GEMV_ROWS: return 256;
    case KERNEL_GEMV_COLS: return (int64_t)c->threads * c->k_split;
    }
    return 0;
}

bool matmul_config_fits(const webgpu_backend *wg, const matmul_config *c)
{
    if (c->kernel == KERNEL_TILED) {
        /* matmul_tiled's index logic: vec4 groups, whole k quads, and slots that
         * split into whole permuted row groups (A_RG, B_RG) */
        int lanes_rows = 32 / (c->bk / 4 > 0 ? c->bk / 4 : 1);
        int rg_m = lanes_rows < c->bm / 4 ? lanes_rows : c->bm / 4, rg_n = lanes_rows < c->bn / 4 ? lanes_rows : c->bn / 4;
        if (c->tm % 4 || c->tn % 4 || c->bk % 4 || c->bk > 128 || c->bm % c->tm || c->bn % c->tn || rg_m <= 0 ||
            rg_n <= 0 || (c->bm / 4) % rg_m || (c->bn / 4) % rg_n || c->group_m < 1)
            return false;
        /* warp layout: whole warps of warp_tx columns x 32 / warp_tx rows of invocations */
        if (c->warp_tx && (32 % c->warp_tx || (c->bn / c->tn) % c->warp_tx || (c->bm / c->tm) % (32 / c->warp_tx)))
            return false;
    }
    int64_t threads = matmul_config_threads(c);
    uint64_t shared = 0;
    if (c->kernel == KERNEL_TILED) shared = 2ull * (uint64_t)c->bk * (uint64_t)(c->bm / 4 + 1 + c->bn / 4 + 1) * 16;
    else shared = (uint64_t)threads * (c->kernel == KERNEL_GEMV_COLS ? 16 : 4);
    return threads <= wg->limits.maxComputeInvocationsPerWorkgroup && threads <= wg->limits.maxComputeWorkgroupSizeX &&
           shared <= wg->limits.maxComputeWorkgroupStorageSize;
}

/* The config WGT_MATMUL_CONFIG names (read when the context was created), if
 * it is of this kernel kind and fits. */
const matmul_config *matmul_forced_config(const webgpu_backend *wg, matmul_kernel kernel)
{
    const char *name = wg->knobs.matmul_config;
    if (!*name) return NULL;
    const matmul_config *c = matmul_find_config(name);
    return c && c->kernel == kernel && matmul_config_fits(wg, c) ? c : NULL;
}

bool webgpu_matmul_config_exists(const char *name) { return matmul_find_config(name) != NULL; }

const char *webgpu_matmul_tiled_config_name(const webgpu_backend *wg, int i)
{
    if (i < 0 || i >= MATMUL_N_CONFIGS) return NULL;
    const matmul_config *c = &matmul_configs[i];
    return c->kernel == KERNEL_TILED && matmul_config_fits(wg, c) ? c->name : "";
}

/* Matrix-vector: the rows kernel with enough invocations per row for ~16 quads each. */
const matmul_config *matmul_choose_gemv(const webgpu_backend *wg, matmul_kernel kernel, int64_t K)
{
    const matmul_config *c = matmul_forced_config(wg, kernel);
    if (c) return c;
    if (kernel == KERNEL_GEMV_COLS) return matmul_find_config("gemv_cols8x32");
    int threads = 32;
    while (threads < 256 && (int64_t)threads * 64 < K) threads *= 2;
    char name[32];
    snprintf(name, sizeof(name), "gemv_rows%d", threads);
    return matmul_find_config(name);
}

/* Whether every batch stride is a multiple of 4 (batch dims are collapsed: all have size > 1). */
static bool batch_aligned(const matmul_problem *p, const int64_t *strides)
{
    for (int d = 0; d < p->batch_ndim; d++)
        if (strides[d] % 4 != 0) return false;
    return true;
}

/* Whether quads of 4 consecutive elements along k (along_k) or along the outer
 * dim are aligned vec4s of the buffer: unit stride, length a multiple of 4,
 * every other stride and the offset multiples of 4. */
bool matmul_quads_aligned(const matmul_problem *p, const matmul_operand *o, bool along_k)
{
    int64_t len = along_k ? o->k : o->outer, stride = along_k ? o->k_stride : o->outer_stride;
    int64_t other_len = along_k ? o->outer : o->k, other_stride = along_k ? o->outer_stride : o->k_stride;
    return stride == 1 && len % 4 == 0 && (other_len == 1 || other_stride % 4 == 0) && o->offset % 4 == 0 &&
           batch_aligned(p, o->batch_strides);
}

/* ------------------------------------------------------------ pipelines */

static const char *dtype_prelude(wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F16:
        return "enable f16;\nalias S = f16;\nalias T = f32;\n"
               "fn mad(x: T, y: T, z: T) -> T { return fma(x, y, z); }\n"
               "fn mad4(x: vec4<T>, y: vec4<T>, z: vec4<T>) -> vec4<T> { return fma(x, y, z); }\n";
    case WGT_I32:
        return "alias S = i32;\nalias T = i32;\n"
               "fn mad(x: T, y: T, z: T) -> T { return x * y + z; }\n"
               "fn mad4(x: vec4<T>, y: vec4<T>, z: vec4<T>) -> vec4<T> { return x * y + z; }\n";
    default:
        return "alias S = f32;\nalias T = f32;\n"
               "fn mad(x: T, y: T, z: T) -> T { return fma(x, y, z); }\n"
               "fn mad4(x: vec4<T>, y: vec4<T>, z: vec4<T>) -> vec4<T> { return fma(x, y, z); }\n";
    }
}

/* WGSL element type of an operand of dtype d. */
const char *matmul_wgsl_type(wgt_dtype d) { return d == WGT_F16 ? "f16" : d == WGT_I32 ? "i32" : "f32"; }

/* The output type O and the bias specialization (see matmul_common.wgsl). */
static void epilogue_prelude(const matmul_problem *p, int bias_binding, char *buf, size_t size)
{
    /* the GELU-gradient epilogue: h in the bias's binding (no bias then) and
     * GELU's slope Phi(h) + h phi(h) in a few operations (matmul_tiled's
     * second pass inlines it for each of an invocation's 64 outputs):
     * erfc(|h| / sqrt 2) by Abramowitz and Stegun 7.1.26 (absolute error
     * under 1.5e-7) sharing its exp(-h^2 / 2) with phi. elementwise_math's
     * erf and exp, to the ulp, were tried only inside the store loop, where
     * any slope cost the loop its unrolling (bench/results/h200-2026-11-29j
     * p2, p3); this formula is the measured one. */
    if (p->gelu_h) {
        snprintf(buf, size,
                 "alias O = f32;\nconst BIAS: bool = false;\nconst GELU_GRAD: bool = true;\n"
                 "@group(0) @binding(%d) var<storage, read> gelu_h: array<f32>;\n"
                 "fn bias_load(i: u32) -> T { return T(); }\n"
                 "fn gelu_grad(g: f32, i: u32) -> f32 {\n"
                 "    let h = gelu_h[i];\n"
                 "    let e = exp(-0.5 * h * h);\n"
                 "    let t = 1.0 / (1.0 + 0.231641889 * abs(h));   // p / sqrt 2\n"
                 "    let q = t * (0.254829592 + t * (-0.284496736 + t * (1.42141374 + t * (-1.45315206 + "
                 "t * 1.06140542)))) * e;\n"
                 "    let cdf = select(0.5 * q, 1.0 - 0.5 * q, h >= 0.0);\n"
                 "    return g * (cdf + h * (0.398942292 * e));\n}\n",
                 bias_binding);
        return;
    }
    const char *no_gelu = "const GELU_GRAD: bool = false;\nfn gelu_grad(g: T, i: u32) -> T { return g; }\n";
    /* the bias as its own dtype (f32, or f16 where the prelude enables f16) */
    if (p->bias)
        snprintf(buf, size,
                 "alias O = %s;\nconst BIAS: bool = true;\n@group(0) @binding(%d) var<storage, read> bias: array<%s>;\n"
                 "fn bias_load(i: u32) -> T { return T(bias[i]); }\n%s",
                 p->out->dtype == WGT_F32 ? "f32" : "S", bias_binding, matmul_wgsl_type(p->bias->dtype), no_gelu);
    else
        snprintf(buf, size, "alias O = %s;\nconst BIAS: bool = false;\nfn bias_load(i: u32) -> T { return T(); }\n%s",
                 p->out->dtype == WGT_F32 ? "f32" : "S", no_gelu);
}

/* The cached pipeline under key + the epilogue's specialization, or a new one
 * from prelude + matmul_common + kernel file (bindings a, b, out, bias), or for
 * the split-K reduction (no matmul_common) prelude + kernel file (bindings
 * partial, out, bias). sa, sb: the dtypes of the buffers bound as a and b
 * (the GEMV kernels bind the matrix as a); when they differ (f32 x f16) the
 * prelude is f16's and SA, SB name each one's type. */
wgt_status matmul_get_pipeline_ex(webgpu_backend *wg, const matmul_problem *p, const char *base_key, const char *file,
                                  wgt_dtype dtype, wgt_dtype sa, wgt_dtype sb, const char *consts, const char *op,
                                  webgpu_pipeline **out)
{
    bool reduce = strcmp(file, "matmul_splitk_reduce") == 0, mixed = sa != sb;
    char key[224];
    snprintf(key, sizeof(key), "%s:o%s:bias%s%s%s%s", base_key, wgt_dtype_name(p->out->dtype),
             p->bias ? wgt_dtype_name(p->bias->dtype) : p->gelu_h ? "0:gelu_grad" : "0",
             mixed ? ":a" : "", mixed ? wgt_dtype_name(sa) : "", mixed ? wgt_dtype_name(sb) : "");
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    const char *common = reduce ? "" : webgpu_kernel_source("matmul_common"), *body = webgpu_kernel_source(file);
    if (!common || !body) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, file);
    const char *prelude = dtype_prelude(mixed ? WGT_F16 : dtype);
    char epilogue[1024];
    epilogue_prelude(p, reduce ? 3 : 4, epilogue, sizeof(epilogue));
    size_t at = strlen(epilogue);
    snprintf(epilogue + at, sizeof(epilogue) - at, "alias SA = %s;\nalias SB = %s;\n", mixed ? matmul_wgsl_type(sa) : "S",
             mixed ? matmul_wgsl_type(sb) : "S");
    size_t n = strlen(prelude) + strlen(epilogue) + strlen(consts) + strlen(common) + strlen(body) + 1;
    char *source = malloc(n);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    snprintf(source, n, "%s%s%s%s%s", prelude, epilogue, consts, common, body);
    /* unchecked: every kernel bounds its own reads and writes (CHECK, row < M, ...) */
    static const bool read_only[4] = {true, true, false, true};   /* a, b, out, bias */
    static const bool reduce_read_only[3] = {true, false, true};  /* partial, out, bias */
    int n_storage = (reduce ? 2 : 3) + (p->bias != NULL || p->gelu_h != NULL);
    wgt_status s = webgpu_pipeline_create_ex(wg, key, source, NULL, n_storage, reduce ? reduce_read_only : read_only,
                                             true, false, false, op, out);
    free(source);
    return s;
}

/* get_pipeline_ex for kernels that bind p->a as a and p->b as b. */
wgt_status matmul_get_pipeline(webgpu_backend *wg, const matmul_problem *p, const char *base_key, const char *file,
                               wgt_dtype dtype, const char *consts, const char *op, webgpu_pipeline **out)
{
    return matmul_get_pipeline_ex(wg, p, base_key, file, dtype, p->a->dtype, p->b->dtype, consts, op, out);
}

/* ------------------------------------------------------------ dispatch */

void matmul_fill_batches(const matmul_problem *p, const int64_t *a_batch, const int64_t *b_batch, matmul_params *q)
{
    q->batches = (uint32_t)p->batches;
    q->batch_ndim = (uint32_t)p->batch_ndim;
    for (int d = 0; d < p->batch_ndim; d++) {
        q->batch_shape[d] = (uint32_t)p->batch_shape[d];
        q->a_batch[d] = (uint32_t)a_batch[d]; /* two's complement when negative */
        q->b_batch[d] = (uint32_t)b_batch[d];
    }
    q->out_offset = (uint32_t)p->out->offset;
}

wgt_status matmul_dispatch(webgpu_backend *wg, webgpu_pipeline *pipe, const wgt_tensor_view *first,
                           const wgt_tensor_view *second, const matmul_problem *p, const matmul_params *q,
                           int64_t workgroups, const char *op)
{
    if (workgroups >= (int64_t)UINT32_MAX)
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: %lld workgroups exceed 2^32", op,
                         (long long)workgroups);
    uint32_t x, y;
    wgt_status s = webgpu_grid(wg, (uint64_t)workgroups, &x, &y, op);
    if (s != WGT_OK) return s;
    const wgt_tensor_view *fourth = p->bias ? p->bias : p->gelu_h; /* h takes the bias's binding */
    WGPUBuffer buffers[5] = {webgpu_view_buffer(first), webgpu_view_buffer(second), webgpu_view_buffer(p->out),
                             fourth ? webgpu_view_buffer(fourth) : NULL, p->rope ? webgpu_view_buffer(p->rope) : NULL};
    return webgpu_dispatch(wg, pipe, buffers, p->rope ? 5 : fourth ? 4 : 3, q, sizeof(*q), x, y, 1, op);
}

const char *matmul_dtype_key(wgt_dtype dtype) { return wgt_dtype_name(dtype); }

/* Collapses the batch dims of a, b (dropping size-1 dims, merging dims that are
 * contiguous in both) and checks every size and index fits the kernels' u32s. */
wgt_status matmul_make_problem(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                               const wgt_tensor_view *bias, const wgt_tensor_view *out, const char *op,
                               matmul_problem *p)
{
    memset(p, 0, sizeof(*p));
    int nd = a->ndim;
    p->a = a;
    p->b = b;
    p->bias = bias;
    p->out = out;
    p->M = a->shape[nd - 2];
    p->K = a->shape[nd - 1];
    p->N = b->shape[nd - 1];
    p->batches = 1;
    for (int d = 0; d < nd - 2; d++) {
        int64_t size = a->shape[d];
        p->batches *= size;
        if (size == 1) continue;
        int n = p->batch_ndim;
        /* the previous (outer) dim steps over exactly `size` of this one in both: merge */
        if (n > 0 && p->a_batch[n - 1] == a->strides[d] * size && p->b_batch[n - 1] == b->strides[d] * size) {
            p->batch_shape[n - 1] *= size;
            p->a_batch[n - 1] = a->strides[d];
            p->b_batch[n - 1] = b->strides[d];
            continue;
        }
        p->batch_shape[n] = size;
        p->a_batch[n] = a->strides[d];
        p->b_batch[n] = b->strides[d];
        p->batch_ndim++;
    }
    /* One batch dim along which b is broadcast (x [B, T, C] @ W, as autograd's
     * dx = dy W runs) and a's rows run on from one batch to the next: one
     * product of B M rows, whose tiles, split-K and transposed copies are
     * chosen for the whole (out [B, M, N] is contiguous, so it is [B M, N]).
     * Not for M == 1 or N == 1, which stay matrix-vector products. */
    if (p->batch_ndim == 1 && p->b_batch[0] == 0 && p->M > 1 && p->N > 1 &&
        p->a_batch[0] == p->M * a->strides[nd - 2]) {
        p->M *= p->batch_shape[0];
        p->batches = 1;
        p->batch_ndim = 0;
        /* the kernels and the transposed copies see the 2-D views */
        const wgt_tensor_view *views[3] = {a, b, out};
        int64_t rows[3] = {p->M, p->K, p->M}, cols[3] = {p->K, p->N, p->N};
        for (int i = 0; i < 3; i++) {
            wgt_tensor_view *f = &p->folded[i];
            *f = *views[i];
            f->ndim = 2;
            f->shape[0] = rows[i];
            f->shape[1] = cols[i];
            f->strides[0] = views[i]->strides[nd - 2];
            f->strides[1] = views[i]->strides[nd - 1];
        }
        p->a = &p->folded[0];
        p->b = &p->folded[1];
        p->out = &p->folded[2];
    }
    const int64_t limit = (int64_t)UINT32_MAX;
    int64_t out_end = out->offset + p->batches * p->M * p->N;
    int64_t bias_end = bias ? bias->offset + (p->N - 1) * llabs(bias->strides[0]) : 0;
    if (p->M >= limit || p->N >= limit || p->K >= limit || p->batches >= limit || out_end >= limit ||
        bias_end >= limit || (bias && bias->strides[0] < 0))
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: sizes M %lld, N %lld, K %lld, %lld batches exceed 2^32",
                         op, (long long)p->M, (long long)p->N, (long long)p->K, (long long)p->batches);
    /* inputs are bound as arrays of vec4 (8 or 16 bytes) */
    const wgt_tensor_view *in[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        uint64_t size = wgpuBufferGetSize(webgpu_view_buffer(in[i]));
        uint64_t quad = 4 * wgt_dtype_size(in[i]->dtype);
        if (size % quad != 0)
            return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED,
                             "%s: a buffer of %llu bytes (not a multiple of %llu) cannot be bound as vec4s", op,
                             (unsigned long long)size, (unsigned long long)quad);
    }
    return WGT_OK;
}
