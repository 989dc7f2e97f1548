/*
 * MATMUL on WebGPU: batched matrix products.
 *
 *   a: [B.., M, K], b: [B.., K, N] -> out: [B.., M, N] contiguous
 *   (batch dims already broadcast: equal shapes, stride 0 where broadcast;
 *   the last two dims of a and b may have any strides and are read in place)
 *
 * Kernels (src/webgpu/kernels/matmul_*.wgsl, after matmul_common.wgsl):
 *   matmul_tiled      register-blocked GEMM: BM x BN tiles per workgroup, TM x TN
 *                     outputs per invocation, double-buffered shared tiles; with
 *                     split-K (few tiles, long K) each workgroup sums one K part
 *                     into a temporary that matmul_splitk_reduce adds up
 *   matmul_gemv_rows  M == 1 or N == 1 when the matrix's k stride is 1 (W @ x):
 *                     ROW_THREADS invocations reduce each output
 *   matmul_gemv_cols  M == 1 or N == 1 when the outputs are contiguous in the
 *                     matrix (x @ W): 4 outputs per invocation, k split K_SPLIT ways
 *   matmul_gemv_half  the rows case for f16 rows (16-byte words) and an f16 or f32 vector
 *                     (decode's f16 weight matvecs; WGT_GEMV_HALF=0: the rows kernel);
 *                     with SWIGLU, rows 2i and 2i + 1 give out[i] = SwiGLU of the two
 *                     (wgt_linear_swiglu_ex in decode: see run_swiglu); with NORM, the
 *                     f32 vector is RMS-normalized into workgroup memory first
 *                     (wgt_rms_norm_linear_ex in decode: see run_norm)
 * The matrix-vector kernels and decode's fusions live in webgpu_matmul_gemv.c;
 * the types and functions the two files share in webgpu_matmul_internal.h.
 * Each is specialized by a prelude of WGSL consts: element types, tile sizes,
 * whether edge checks are needed (CHECK), and per operand whether a thread's
 * quads of 4 elements run along k and load as one aligned vec4. Pipelines are
 * cached under a key naming all of these.
 *
 * Configs (tile shapes) live in one table; the heuristic takes the largest
 * tile that still gives enough workgroups to fill a GPU. WGT_MATMUL_CONFIG=name
 * forces a table entry (for experiments and a later autotuner) whenever it is of
 * the kernel kind the call uses and fits the device's limits.
 *
 * dtypes: f32; i32 (exact, wrapping sums); f16 with f32 accumulation, read and
 * written as f16 when the device has shader-f16, otherwise through f32
 * temporaries (also forced by WGT_MATMUL_F16_EMULATE=1, for tests). f16
 * operands may write an f32 out (wgt_matmul_ex): the sums are stored unrounded.
 * f32 times f16 (wgt_matmul_ex, either order, f32 or f16 out): each
 * operand is bound with its own element type (SA, SB) and widened to f32 as it
 * is loaded, so llama's f32 activations meet f16 weights without a cast.
 *
 * Linear's bias [N] (optional inputs[2]; a's dtype, or f32 for wgt_linear_ex,
 * whose decode passes the f32 residual stream, or f16 beside an f16 operand)
 * is a specialization of every kernel (BIAS, bound at binding 4, bound as its
 * own dtype): the epilogue adds it before the store, so
 * linear costs one dispatch. linear's weight [out, in] is b transposed, which
 * the loaders read in place (B_QUAD_K quads along its rows), as they read a
 * transposed a for the weight gradient x^T dy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_matmul_internal.h"

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
 * pressure: fewer workgroups per SM). They stay candidates for other GPUs. */
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

/* The heuristic's tiled candidates, largest tile first, each taken when it
 * gives at least min_workgroups workgroups (WebGPU does not tell how many
 * compute units there are; these fill an H100/H200's 132 SMs, 2 workgroups
 * each, without too much tail). The last one that fits is the fallback. */
static const struct {
    const char *name;
    int64_t min_workgroups;
} tiled_ladder[] = {{"tile128x128k8t", 192}, {"tile128x64k8", 96}, {"tile64x64k16", 32}, {"tile32x32k8", 0}};

/* Mirrors struct ReduceParams of matmul_splitk_reduce.wgsl. */
typedef struct splitk_reduce_params {
    uint32_t total, N, parts, part_stride;
    uint32_t out_offset, bias_offset, bias_col, pad;
} splitk_reduce_params;

static const matmul_config *find_config(const char *name)
{
    for (int i = 0; i < MATMUL_N_CONFIGS; i++)
        if (strcmp(matmul_configs[i].name, name) == 0) return &matmul_configs[i];
    return NULL;
}

static int64_t config_threads(const matmul_config *c)
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
    int64_t threads = config_threads(c);
    uint64_t shared = 0;
    if (c->kernel == KERNEL_TILED) shared = 2ull * (uint64_t)c->bk * (uint64_t)(c->bm / 4 + 1 + c->bn / 4 + 1) * 16;
    else shared = (uint64_t)threads * (c->kernel == KERNEL_GEMV_COLS ? 16 : 4);
    return threads <= wg->limits.maxComputeInvocationsPerWorkgroup && threads <= wg->limits.maxComputeWorkgroupSizeX &&
           shared <= wg->limits.maxComputeWorkgroupStorageSize;
}

/* The config WGT_MATMUL_CONFIG names (read when the context was created), if
 * it is of this kernel kind and fits. */
static const matmul_config *forced_config(const webgpu_backend *wg, matmul_kernel kernel)
{
    const char *name = wg->knobs.matmul_config;
    if (!*name) return NULL;
    const matmul_config *c = find_config(name);
    return c && c->kernel == kernel && matmul_config_fits(wg, c) ? c : NULL;
}

bool webgpu_matmul_config_exists(const char *name) { return find_config(name) != NULL; }

const char *webgpu_matmul_tiled_config_name(const webgpu_backend *wg, int i)
{
    if (i < 0 || i >= MATMUL_N_CONFIGS) return NULL;
    const matmul_config *c = &matmul_configs[i];
    return c->kernel == KERNEL_TILED && matmul_config_fits(wg, c) ? c->name : "";
}

/* ------------------------------------------------------------ split-K
 *
 * A product with few output tiles and a long K (the weight gradients of
 * training: dW [out, in] = dy^T x sums over K = B T rows, e.g. 384 x 384 outputs
 * over 16384 rows) leaves most of a large GPU idle: 9 tiles of 128 x 128, each
 * looping over all of K. Split-K cuts K into `parts` ranges of part_k (a
 * multiple of BK): matmul_tiled computes every (part, tile) in its own
 * workgroup into an f32 (i32) temporary [parts, B.. M N], and
 * matmul_splitk_reduce adds the parts in a fixed order (deterministic) and
 * applies the bias. The cost is the temporary's traffic, 8 (parts + 1) bytes
 * per output against 2 K flops: with part_k >= 512 about 10% of the product's
 * time at an H100's flops / bandwidth ratio, far less than the idle SMs cost.
 *
 * WebGPU does not say how many compute units there are, so the automatic
 * choice aims at SPLITK_TARGET workgroups, 2 per SM of an H100 / H200 (132
 * SMs), never more (floor): a partial last wave would cost a whole part's
 * time. It applies only with fewer tiles than half the target and K >=
 * SPLITK_MIN_K: square products of the tuner's sizes never split, so the tuned
 * configs keep timing what runs. WGT_SPLITK=<parts> forces a count (0 or 1:
 * off; capped so every part has at least one BK slice), WGT_SPLITK_TARGET
 * replaces the target (both for measuring on a real GPU). */
#define SPLITK_TARGET 264
#define SPLITK_MIN_K 2048
#define SPLITK_MIN_PART_K 512
#define SPLITK_MAX_TEMP_BYTES ((int64_t)256 << 20)

/* Elements of one part's partial sums: the output, padded to whole vec4s. */
static int64_t splitk_stride(const matmul_problem *p) { return matmul_ceil_div(p->batches * p->M * p->N, 4) * 4; }

/* The number of K parts for p with config c (1: no split) and each part's k
 * length (*part_k, a multiple of BK; NULL when not wanted). A malformed
 * WGT_SPLITK / WGT_SPLITK_TARGET counts as unset here (run_tiled reports it). */
static int64_t choose_split(const webgpu_backend *wg, const matmul_problem *p, const matmul_config *c, int64_t *part_k)
{
    if (part_k) *part_k = p->K > 0 ? p->K : 1;
    int64_t tiles = matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) * p->batches;
    int64_t parts = wg->knobs.splitk;
    if (parts < 0) { /* automatic */
        int64_t target = wg->knobs.splitk_target > 0 ? wg->knobs.splitk_target : SPLITK_TARGET;
        if (p->K < SPLITK_MIN_K || 2 * tiles >= target) return 1;
        parts = target / tiles;
        if (parts > p->K / SPLITK_MIN_PART_K) parts = p->K / SPLITK_MIN_PART_K;
    }
    int64_t slices = matmul_ceil_div(p->K, c->bk);
    if (parts > slices) parts = slices;
    /* the temporary must fit one storage binding (and stay a modest allocation) */
    int64_t max_bytes = SPLITK_MAX_TEMP_BYTES;
    int64_t binding = (int64_t)wg->limits.maxStorageBufferBindingSize, buffer = (int64_t)wg->limits.maxBufferSize;
    if (binding < max_bytes) max_bytes = binding;
    if (buffer < max_bytes) max_bytes = buffer;
    int64_t fit = max_bytes / (splitk_stride(p) * 4);
    if (parts > fit) parts = fit;
    if (parts < 2) return 1;
    /* whole BK slices per part; rounding up can leave fewer parts */
    int64_t len = matmul_ceil_div(matmul_ceil_div(p->K, parts), c->bk) * c->bk;
    if (part_k) *part_k = len;
    return matmul_ceil_div(p->K, len);
}

/* Order: WGT_MATMUL_CONFIG, the tuner's candidate, the tuning cache's choice for
 * this size, then the heuristic: the largest tile that gives enough workgroups,
 * counting the split-K parts it would run with (so a long-K product with a
 * small output keeps large tiles and splits K instead of taking small tiles).
 * Whichever config wins, run_tiled splits K on top when choose_split says so. */
static const matmul_config *choose_tiled(const webgpu_backend *wg, const matmul_problem *p)
{
    const matmul_config *c = forced_config(wg, KERNEL_TILED);
    if (c) return c;
    if (wg->matmul_force && (c = find_config(wg->matmul_force)) && c->kernel == KERNEL_TILED && matmul_config_fits(wg, c))
        return c;
    const char *tuned = wg->matmul_tuned[webgpu_tune_bucket(p->M, p->N)];
    if (tuned[0] && (c = find_config(tuned)) && c->kernel == KERNEL_TILED && matmul_config_fits(wg, c)) return c;
    const matmul_config *fallback = NULL;
    for (size_t i = 0; i < sizeof(tiled_ladder) / sizeof(tiled_ladder[0]); i++) {
        c = find_config(tiled_ladder[i].name);
        if (!matmul_config_fits(wg, c)) continue;
        fallback = c;
        int64_t tiles = matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) * p->batches;
        if (tiles >= tiled_ladder[i].min_workgroups) return c;
        /* with split-K, but not a tile larger than the output along m or n (x [16, K] @ W:
         * mostly empty tile rows would multiply zeros; smaller tiles split instead) */
        if (c->bm <= p->M && c->bn <= p->N && tiles * choose_split(wg, p, c, NULL) >= tiled_ladder[i].min_workgroups)
            return c;
    }
    return fallback;
}

/* Matrix-vector: the rows kernel with enough invocations per row for ~16 quads each. */
const matmul_config *matmul_choose_gemv(const webgpu_backend *wg, matmul_kernel kernel, int64_t K)
{
    const matmul_config *c = forced_config(wg, kernel);
    if (c) return c;
    if (kernel == KERNEL_GEMV_COLS) return find_config("gemv_cols8x32");
    int threads = 32;
    while (threads < 256 && (int64_t)threads * 64 < K) threads *= 2;
    char name[32];
    snprintf(name, sizeof(name), "gemv_rows%d", threads);
    return find_config(name);
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

/* How a tiled kernel fetches operand o: quads along k or along the outer dim,
 * as vec4s when aligned, else element by element along the smaller stride. */
static void choose_layout(const matmul_problem *p, const matmul_operand *o, bool *quad_k, bool *vec)
{
    *vec = true;
    if (matmul_quads_aligned(p, o, true)) { *quad_k = true; return; }
    if (matmul_quads_aligned(p, o, false)) { *quad_k = false; return; }
    *vec = false;
    int64_t sk = o->k > 1 ? llabs(o->k_stride) : INT64_MAX, so = o->outer > 1 ? llabs(o->outer_stride) : INT64_MAX;
    *quad_k = sk <= so;
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
    /* the bias as its own dtype (f32, or f16 where the prelude enables f16) */
    if (p->bias)
        snprintf(buf, size,
                 "alias O = %s;\nconst BIAS: bool = true;\n@group(0) @binding(%d) var<storage, read> bias: array<%s>;\n"
                 "fn bias_load(i: u32) -> T { return T(bias[i]); }\n",
                 p->out->dtype == WGT_F32 ? "f32" : "S", bias_binding, matmul_wgsl_type(p->bias->dtype));
    else
        snprintf(buf, size, "alias O = %s;\nconst BIAS: bool = false;\nfn bias_load(i: u32) -> T { return T(); }\n",
                 p->out->dtype == WGT_F32 ? "f32" : "S");
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
             p->bias ? wgt_dtype_name(p->bias->dtype) : "0",
             mixed ? ":a" : "", mixed ? wgt_dtype_name(sa) : "", mixed ? wgt_dtype_name(sb) : "");
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    const char *common = reduce ? "" : webgpu_kernel_source("matmul_common"), *body = webgpu_kernel_source(file);
    if (!common || !body) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, file);
    const char *prelude = dtype_prelude(mixed ? WGT_F16 : dtype);
    char epilogue[320];
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
    int n_storage = (reduce ? 2 : 3) + (p->bias != NULL);
    wgt_status s = webgpu_pipeline_create_ex(wg, key, source, NULL, n_storage, reduce ? reduce_read_only : read_only,
                                             true, false, false, op, out);
    free(source);
    return s;
}

/* get_pipeline_ex for kernels that bind p->a as a and p->b as b. */
static wgt_status get_pipeline(webgpu_backend *wg, const matmul_problem *p, const char *base_key, const char *file,
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
    WGPUBuffer buffers[4] = {webgpu_view_buffer(first), webgpu_view_buffer(second), webgpu_view_buffer(p->out),
                             p->bias ? webgpu_view_buffer(p->bias) : NULL};
    return webgpu_dispatch(wg, pipe, buffers, p->bias ? 4 : 3, q, sizeof(*q), x, y, 1, op);
}

const char *matmul_dtype_key(wgt_dtype dtype) { return wgt_dtype_name(dtype); }

static wgt_status run_native(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                             const wgt_tensor_view *bias, const wgt_tensor_view *out, const char *op);

/* x [.., R, C] as a view of a new temporary whose dim R is contiguous (the
 * storage holds x^T): the same shape, strides (1, R). Both copies below read x
 * along its unit stride through the tiled transpose (webgpu_transpose.c). */
static wgt_status transposed_copy(webgpu_backend *wg, const wgt_tensor_view *x, wgt_tensor_view *tmp,
                                  wgt_tensor_view *view, const char *op)
{
    int nd = x->ndim;
    wgt_tensor_view xt = *x;
    xt.shape[nd - 2] = x->shape[nd - 1];
    xt.shape[nd - 1] = x->shape[nd - 2];
    xt.strides[nd - 2] = x->strides[nd - 1];
    xt.strides[nd - 1] = x->strides[nd - 2];
    wgt_status s = webgpu_temp_convert(wg, &xt, x->dtype, tmp, op);
    if (s != WGT_OK) return s;
    *view = *tmp;
    view->shape[nd - 2] = x->shape[nd - 2];
    view->shape[nd - 1] = x->shape[nd - 1];
    view->strides[nd - 2] = 1;
    view->strides[nd - 1] = x->shape[nd - 2];
    return WGT_OK;
}

/* An operand read along k is fetched as 16 rows x 32 bytes per warp load, one
 * read along m (n) as whole 512-byte rows: on an H100 (Vulkan) A^T B ran ~15%
 * faster than A B and A B^T with the same tiles. Configs with `transpose` copy
 * such operands transposed first (a tiled transpose, ~2% of a 4096^3 product)
 * and run the product on the copies: a when N >= 1024, b when M >= 1024 (the
 * copy's cost relative to the product is 1/N for a, 1/M for b), for single
 * products whose copies load as aligned vec4s (M, N multiples of 4). */
static bool transpose_pays(const matmul_problem *p, bool quad_k, bool vec, int64_t outer, int64_t other)
{
    return quad_k && vec && p->batches == 1 && outer % 4 == 0 && other >= 1024;
}

static wgt_status run_transposed(webgpu_backend *wg, const matmul_problem *p, bool ta, bool tb, const char *op)
{
    wgt_tensor_view a = *p->a, b = *p->b, tmp_a, tmp_b;
    memset(&tmp_a, 0, sizeof(tmp_a));
    memset(&tmp_b, 0, sizeof(tmp_b));
    wgt_status s = WGT_OK;
    if (ta) s = transposed_copy(wg, p->a, &tmp_a, &a, op);
    if (s == WGT_OK && tb) { /* b [K, N] read along k: a row-major copy has n contiguous */
        s = webgpu_temp_convert(wg, p->b, p->b->dtype, &tmp_b, op);
        if (s == WGT_OK) b = tmp_b;
    }
    /* the copies read along m and n: run_tiled does not come back here */
    if (s == WGT_OK) s = run_native(wg, &a, &b, p->bias, p->out, op);
    webgpu_temp_release(wg, &tmp_a);
    webgpu_temp_release(wg, &tmp_b);
    return s;
}

/* The split-K reduction: out (p->out, + p->bias) = the sum of the parts of
 * partial [parts, stride] (see matmul_splitk_reduce.wgsl). */
static wgt_status run_splitk_reduce(webgpu_backend *wg, const matmul_problem *p, const wgt_tensor_view *partial,
                                    int64_t parts, const char *op)
{
    char key[96];
    snprintf(key, sizeof(key), "matmul_splitk_reduce:%s", matmul_dtype_key(p->a->dtype));
    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, p, key, "matmul_splitk_reduce", p->a->dtype, "", op, &pipe);
    if (s != WGT_OK) return s;
    int64_t total = p->batches * p->M * p->N;
    splitk_reduce_params q;
    memset(&q, 0, sizeof(q));
    q.total = (uint32_t)total;
    q.N = (uint32_t)p->N;
    q.parts = (uint32_t)parts;
    q.part_stride = (uint32_t)(splitk_stride(p) / 4);
    q.out_offset = (uint32_t)p->out->offset;
    if (p->bias) {
        q.bias_offset = (uint32_t)p->bias->offset;
        q.bias_col = (uint32_t)p->bias->strides[0];
    }
    uint32_t x, y;
    s = webgpu_grid(wg, (uint64_t)matmul_ceil_div(matmul_ceil_div(total, 4), 256), &x, &y, op);
    if (s != WGT_OK) return s;
    WGPUBuffer buffers[3] = {webgpu_view_buffer(partial), webgpu_view_buffer(p->out),
                             p->bias ? webgpu_view_buffer(p->bias) : NULL};
    return webgpu_dispatch(wg, pipe, buffers, p->bias ? 3 : 2, &q, sizeof(q), x, y, 1, op);
}

static wgt_status run_tiled(webgpu_backend *wg, const matmul_problem *p, const char *op)
{
    const wgt_tensor_view *a = p->a, *b = p->b;
    int nd = a->ndim;
    if (wg->knobs.splitk_malformed)
        return wgt_error(wg->base.ctx, WGT_ERR_INVALID_ARGUMENT,
                         "%s: WGT_SPLITK=\"%s\", WGT_SPLITK_TARGET=\"%s\": each must be a count "
                         "(WGT_SPLITK=0: no split-K)",
                         op, wg->knobs.splitk_text, wg->knobs.splitk_target_text);
    const matmul_config *c = choose_tiled(wg, p);
    if (!c) return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: no matmul tile config fits this device", op);
    matmul_operand oa = {a->offset, p->M, a->strides[nd - 2], p->K, a->strides[nd - 1], p->a_batch};
    matmul_operand ob = {b->offset, p->N, b->strides[nd - 1], p->K, b->strides[nd - 2], p->b_batch};
    bool a_quad_k, a_vec, b_quad_k, b_vec;
    choose_layout(p, &oa, &a_quad_k, &a_vec);
    choose_layout(p, &ob, &b_quad_k, &b_vec);
    if (c->transpose) {
        bool ta = transpose_pays(p, a_quad_k, a_vec, p->M, p->N), tb = transpose_pays(p, b_quad_k, b_vec, p->N, p->M);
        if (ta || tb) return run_transposed(wg, p, ta, tb, op);
    }
    bool check = p->M % c->bm != 0 || p->N % c->bn != 0 || p->K % c->bk != 0;
    bool a_block = c->blocks && a_quad_k && a_vec, b_block = c->blocks && b_quad_k && b_vec;
    int64_t threads = config_threads(c);
    /* registers per invocation for one fetched slice: quads, or 4 per 4x4 block */
    int64_t a_regs = a_block ? 4 * matmul_ceil_div((int64_t)c->bm * c->bk / 16, threads) : matmul_ceil_div((int64_t)c->bm * c->bk / 4, threads);
    int64_t b_regs = b_block ? 4 * matmul_ceil_div((int64_t)c->bn * c->bk / 16, threads) : matmul_ceil_div((int64_t)c->bn * c->bk / 4, threads);

    char key[160], consts[480];
    snprintf(key, sizeof(key), "matmul_tiled:%s:%s:c%d:a%d%d:b%d%d", matmul_dtype_key(a->dtype), c->name, check, a_quad_k,
             a_vec, b_quad_k, b_vec);
    snprintf(consts, sizeof(consts),
             "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst BK: u32 = %du;\nconst TM: u32 = %du;\n"
             "const TN: u32 = %du;\nconst CHECK: bool = %s;\nconst A_QUAD_K: bool = %s;\nconst A_VEC: bool = %s;\n"
             "const B_QUAD_K: bool = %s;\nconst B_VEC: bool = %s;\nconst WARP_TX: u32 = %du;\n"
             "const A_BLOCK: bool = %s;\nconst B_BLOCK: bool = %s;\nconst A_REGS: u32 = %du;\nconst B_REGS: u32 = %du;\n",
             c->bm, c->bn, c->bk, c->tm, c->tn, check ? "true" : "false", a_quad_k ? "true" : "false",
             a_vec ? "true" : "false", b_quad_k ? "true" : "false", b_vec ? "true" : "false", c->warp_tx,
             a_block ? "true" : "false", b_block ? "true" : "false", (int)a_regs, (int)b_regs);
    /* split-K: the tiled pass writes its parts' sums (no bias) into a temporary
     * of the accumulator's dtype, the reduction writes out */
    int64_t part_k, parts = choose_split(wg, p, c, &part_k);
    matmul_problem split = *p;
    wgt_tensor_view partial;
    memset(&partial, 0, sizeof(partial));
    if (parts > 1) {
        int64_t shape[2] = {parts, splitk_stride(p)};
        wgt_status s = webgpu_temp_alloc(wg, a->dtype == WGT_I32 ? WGT_I32 : WGT_F32, 2, shape, &partial);
        if (s != WGT_OK) return s;
        split.out = &partial;
        split.bias = NULL;
    }
    const matmul_problem *pp = parts > 1 ? &split : p;

    webgpu_pipeline *pipe;
    wgt_status s = get_pipeline(wg, pp, key, "matmul_tiled", a->dtype, consts, op, &pipe);
    if (s != WGT_OK) {
        webgpu_temp_release(wg, &partial);
        return s;
    }

    matmul_params q;
    memset(&q, 0, sizeof(q));
    q.M = (uint32_t)p->M;
    q.N = (uint32_t)p->N;
    q.K = (uint32_t)p->K;
    q.a_offset = (uint32_t)a->offset;
    q.a_row = (uint32_t)a->strides[nd - 2];
    q.a_col = (uint32_t)a->strides[nd - 1];
    q.b_offset = (uint32_t)b->offset;
    q.b_row = (uint32_t)b->strides[nd - 2];
    q.b_col = (uint32_t)b->strides[nd - 1];
    q.tiles_m = (uint32_t)matmul_ceil_div(p->M, c->bm);
    q.tiles_n = (uint32_t)matmul_ceil_div(p->N, c->bn);
    q.group_m = (uint32_t)c->group_m;
    q.split_k = (uint32_t)part_k;
    q.split_stride = parts > 1 ? (uint32_t)splitk_stride(p) : 0u;
    if (pp->bias) { /* bias (m, n) = bias[n] */
        q.bias_offset = (uint32_t)p->bias->offset;
        q.bias_col = (uint32_t)p->bias->strides[0];
    }
    matmul_fill_batches(pp, p->a_batch, p->b_batch, &q);
    s = matmul_dispatch(wg, pipe, a, b, pp, &q, (int64_t)q.tiles_m * q.tiles_n * p->batches * parts, op);
    if (s == WGT_OK && parts > 1) s = run_splitk_reduce(wg, p, &partial, parts, op);
    /* released right after recording: queue order keeps the block's reuse safe */
    webgpu_temp_release(wg, &partial);
    return s;
}

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

static wgt_status run_native(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                             const wgt_tensor_view *bias, const wgt_tensor_view *out, const char *op)
{
    matmul_problem p;
    wgt_status s = matmul_make_problem(wg, a, b, bias, out, op, &p);
    if (s != WGT_OK) return s;
    if (p.M == 1 || p.N == 1) return matmul_run_gemv(wg, &p, op);
    return run_tiled(wg, &p, op);
}

/* An f32 copy of x, converting only one copy of each broadcast (stride 0) dim
 * and broadcasting the copy the same way. */
static wgt_status convert_to_f32(webgpu_backend *wg, const wgt_tensor_view *x, wgt_tensor_view *out, const char *op)
{
    wgt_tensor_view base = *x;
    for (int d = 0; d < x->ndim; d++)
        if (x->strides[d] == 0) base.shape[d] = 1;
    wgt_status s = webgpu_temp_convert(wg, &base, WGT_F32, out, op);
    if (s != WGT_OK) return s;
    for (int d = 0; d < x->ndim; d++) {
        if (x->strides[d] == 0) out->strides[d] = 0;
        out->shape[d] = x->shape[d];
    }
    return WGT_OK;
}

/* f16 without shader-f16: f32 temporaries in, f32 product, converted out
 * (written straight into an f32 out). */
static wgt_status run_f16_emulated(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    const wgt_tensor_view *out = &call->outputs[0];
    bool has_bias = call->n_inputs == 3, direct = out->dtype == WGT_F32;
    const bool conv_bias = has_bias && call->inputs[2].dtype != WGT_F32;
    wgt_tensor_view ta, tb, tbias, tout;
    memset(&ta, 0, sizeof(ta));
    memset(&tb, 0, sizeof(tb));
    memset(&tbias, 0, sizeof(tbias));
    memset(&tout, 0, sizeof(tout));
    /* an f32 operand of f32 x f16 is read as it is */
    const bool conv_a = call->inputs[0].dtype != WGT_F32, conv_b = call->inputs[1].dtype != WGT_F32;
    wgt_status s = conv_a ? convert_to_f32(wg, &call->inputs[0], &ta, op) : WGT_OK;
    if (s != WGT_OK) return s;
    if (conv_b) s = convert_to_f32(wg, &call->inputs[1], &tb, op);
    if (s == WGT_OK && conv_bias) s = convert_to_f32(wg, &call->inputs[2], &tbias, op);
    if (s == WGT_OK && !direct) s = webgpu_temp_alloc(wg, WGT_F32, out->ndim, out->shape, &tout);
    if (s == WGT_OK)
        s = run_native(wg, conv_a ? &ta : &call->inputs[0], conv_b ? &tb : &call->inputs[1],
                       conv_bias ? &tbias : has_bias ? &call->inputs[2] : NULL, direct ? out : &tout, op);
    if (s == WGT_OK && !direct) s = webgpu_convert(wg, &tout, out, op);
    if (conv_a) webgpu_temp_release(wg, &ta);
    if (conv_b) webgpu_temp_release(wg, &tb);
    if (conv_bias) webgpu_temp_release(wg, &tbias);
    if (!direct) webgpu_temp_release(wg, &tout);
    return s;
}

bool webgpu_matmul_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    (void)wg;
    if (call->kind != WGT_KERNEL_MATMUL || call->n_inputs < 2 || call->n_inputs > 3 || call->n_outputs != 1)
        return false;
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    wgt_dtype t = a->dtype;
    if (t != WGT_F32 && t != WGT_F16 && t != WGT_I32) return false;
    if (b->dtype != t) { /* f32 x f16, either order: f32 or f16 out */
        bool floats = (t == WGT_F32 && b->dtype == WGT_F16) || (t == WGT_F16 && b->dtype == WGT_F32);
        if (!floats || (out->dtype != WGT_F32 && out->dtype != WGT_F16)) return false;
    } else if (out->dtype != t && !(t == WGT_F16 && out->dtype == WGT_F32)) {
        return false;
    }
    if (call->matmul.norm) /* inputs[2]: an f32 norm weight [K] for f32 a */
        return call->n_inputs == 3 && t == WGT_F32 && call->inputs[2].dtype == WGT_F32 && call->inputs[2].ndim == 1 &&
               call->inputs[2].shape[0] == a->shape[a->ndim - 1] && a->ndim >= 2 && a->ndim == b->ndim &&
               a->ndim == out->ndim && a->ndim - 2 <= MATMUL_MAX_BATCH_DIMS;
    if (call->n_inputs == 3) { /* bias: a's dtype, f32 (wgt_linear_ex's residual), or f16 beside an f16 operand */
        const wgt_tensor_view *bias = &call->inputs[2];
        bool dtype_ok = bias->dtype == t || bias->dtype == WGT_F32 || (bias->dtype == WGT_F16 && b->dtype == WGT_F16);
        if (t == WGT_I32 || !dtype_ok || bias->ndim != 1 || bias->shape[0] != b->shape[b->ndim - 1]) return false;
    }
    if (a->ndim < 2 || a->ndim != b->ndim || a->ndim != out->ndim) return false;
    return a->ndim - 2 <= MATMUL_MAX_BATCH_DIMS;
}

wgt_status webgpu_matmul_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    if (wgt_shape_numel(out->ndim, out->shape) == 0) return WGT_OK;
    if (call->matmul.norm || call->matmul.swiglu) {
        const bool emulated = !wg->has_f16 || wg->knobs.matmul_f16_emulate;
        return call->matmul.norm ? matmul_run_norm(wg, call, emulated) : matmul_run_swiglu(wg, call, emulated);
    }
    if (a->dtype == WGT_F16 || b->dtype == WGT_F16) {
        if (!wg->has_f16 || wg->knobs.matmul_f16_emulate) return run_f16_emulated(wg, call);
    }
    return run_native(wg, a, b, call->n_inputs == 3 ? &call->inputs[2] : NULL, out, call->op_name);
}
