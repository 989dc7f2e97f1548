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
 * Files: this one chooses and runs (split-K, the tiled GEMM, f16 emulation,
 * decode's SwiGLU and RMSNorm calls); webgpu_matmul_gemv.c runs the
 * matrix-vector kernels; webgpu_matmul_plan.c holds the config table, the
 * problem (collapsed batch dims), pipelines and dispatch that both use; the
 * types are in gemm_shared.h.
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

#include "webgpu/gemm_shared.h"

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
 * time (by default the count is then chosen to fill waves: wave_parts). It
 * applies only with fewer tiles than half the target and K >= SPLITK_MIN_K:
 * square products of the tuner's sizes never split, so the tuned configs keep
 * timing what runs. WGT_SPLITK=<parts> forces a count (0 or 1:
 * off; capped so every part has at least one BK slice), WGT_SPLITK_TARGET
 * replaces the target (both for measuring on a real GPU). */
#define SPLITK_TARGET 264

#define SPLITK_MIN_K 2048

#define SPLITK_MIN_PART_K 512

#define SPLITK_MAX_TEMP_BYTES ((int64_t)256 << 20)

/* The automatic count with WGT_MATMUL_SHAPE_RULES' "waves" (the default): an
 * H100 / H200 runs up to 3 of these workgroups per SM at once, and a part's
 * workgroups take the same time, so the product takes about
 * ceil(parts tiles / SMS) / parts of the unsplit time per SM. Of the counts
 * that give more than one workgroup per SM and at most 3 (one wave), the one
 * with the least of that (the fewest parts on a tie) wins. GPT's weight
 * gradients on an H100 (`wgt bench --only gemm_bwd_dw`, ms): 1152x384 over
 * K = 16384 0.342 with 14 parts (378 workgroups) against 0.353 with the
 * 264-target's 9 (243), 1536x384 0.427 with 11 (396) against 0.441 with 7
 * (252); 384x384 keeps 29 parts (261: 0.140 ms; 32 parts, 288, took 0.168).
 * 0 when no count qualifies (K too short for that many parts): the target's. */
#define SPLITK_SMS 132

static int64_t wave_parts(int64_t tiles, int64_t max_parts)
{
    int64_t best = 0;
    double best_cost = 0;
    for (int64_t n = 2; n <= max_parts && n * tiles <= 3 * SPLITK_SMS; n++) {
        if (n * tiles <= SPLITK_SMS) continue;
        double cost = (double)matmul_ceil_div(n * tiles, SPLITK_SMS) / (double)n;
        if (best == 0 || cost < best_cost) best = n, best_cost = cost;
    }
    return best;
}

/* Elements of one part's partial sums: the output, padded to whole vec4s. */
static int64_t splitk_stride(const matmul_problem *p) { return matmul_ceil_div(p->batches * p->M * p->N, 4) * 4; }

/* The number of K parts for p with config c (1: no split) and each part's k
 * length (*part_k, a multiple of BK; NULL when not wanted). A malformed
 * WGT_SPLITK / WGT_SPLITK_TARGET counts as unset here (run_tiled reports it). */
static int64_t choose_split(const webgpu_backend *wg, const matmul_problem *p, const matmul_config *c, int64_t *part_k)
{
    if (part_k) *part_k = p->K > 0 ? p->K : 1;
    if (p->gelu_h) return 1; /* the GELU-gradient epilogue needs whole sums */
    int64_t tiles = matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) * p->batches;
    int64_t parts = wg->knobs.splitk;
    if (parts < 0) { /* automatic */
        int64_t target = wg->knobs.splitk_target > 0 ? wg->knobs.splitk_target : SPLITK_TARGET;
        if (p->K < SPLITK_MIN_K) return 1;
        if (2 * tiles >= target) {
            /* HALF_MATH with a long K over up to two targets of tiles: parts of
             * SPLITK_MIN_K. An LLM prefill's down projection (512 x 2048 x 8192,
             * 256 tiles of 64 x 64) on an H200: 4 parts 0.473 / 0.480 ms against
             * 0.515 / 0.520 unsplit, 2 parts 0.527 / 0.530; the K = 2048
             * products lost with any split (bench/results/h200-2026-11-29p, p8) */
            if (!p->half_math || p->K < 4 * SPLITK_MIN_K || tiles >= 2 * target) return 1;
            parts = p->K / SPLITK_MIN_K;
        } else {
            bool waves = wg->knobs.matmul_split_waves && wg->knobs.splitk_target <= 0;
            parts = waves ? wave_parts(tiles, p->K / SPLITK_MIN_PART_K) : 0;
            if (parts == 0) {
                parts = target / tiles;
                if (parts > p->K / SPLITK_MIN_PART_K) parts = p->K / SPLITK_MIN_PART_K;
            }
        }
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
 * this size, then the heuristic: where run_tiled found "narrow" pays
 * (narrow_tiles_pay), 64 x 128 tiles of 128 invocations once they give the
 * ladder's first count of workgroups (192); else the largest tile that gives
 * enough workgroups, counting the split-K parts it would run with (so a
 * long-K product with a small output keeps large tiles and splits K instead
 * of taking small tiles).
 * Whichever config wins, run_tiled splits K on top when choose_split says so. */
static const matmul_config *choose_tiled(const webgpu_backend *wg, const matmul_problem *p, bool narrow)
{
    const matmul_config *c = matmul_forced_config(wg, KERNEL_TILED);
    if (c) return c;
    if (wg->matmul_force && (c = matmul_find_config(wg->matmul_force)) && c->kernel == KERNEL_TILED && matmul_config_fits(wg, c))
        return c;
    /* HALF_MATH: 64 x 64 tiles with BK = 16 (a run of 16 products a slice).
     * H100, a 512-token prefill's products (gate/up, qkv, o, down; one call,
     * bench/results/h100-2026-11-28c/probes p1, p2): 0.92 / 0.20 / 0.15 / 0.56
     * ms against 1.01 / 0.28 / 0.16 / 0.54 for the f32 sums' own choice, and
     * 1.12 / 0.26 / 0.18 / 0.62 for HALF_MATH in 128 x 128 x 8 tiles. Their
     * operands read along k fetched in 4 x 4 blocks (b): on an H200 0.888 /
     * 0.190 / 0.136 / 0.519 against 0.916-0.924 / 0.200-0.209 / 0.152-0.157 /
     * 0.558-0.570 (bench/results/h200-2026-11-29p, p3) */
    if (p->half_math && (c = matmul_find_config("tile64x64k16b")) && matmul_config_fits(wg, c)) return c;
    if (p->half_math && (c = matmul_find_config("tile64x64k16")) && matmul_config_fits(wg, c)) return c;
    const char *tuned = wg->matmul_tuned[webgpu_tune_bucket(p->M, p->N)];
    if (tuned[0] && (c = matmul_find_config(tuned)) && c->kernel == KERNEL_TILED && matmul_config_fits(wg, c)) return c;
    const matmul_config *fallback = NULL;
    if (narrow && (c = matmul_find_config("tile64x128k8s")) && matmul_config_fits(wg, c) &&
        matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) >= tiled_ladder[0].min_workgroups)
        return c;
    /* "pad", narrow outputs: at most 64 rows (columns) would leave at least half
     * of every 128-row (-column) tile padding, which the ladder below takes
     * whenever the batch gives enough tiles (the Winograd convolution's 36
     * products of 64 filters: 128 x 128 tiles ran its forward GEMM at 16
     * TFLOP/s on an H200); the 64-high (-wide) tile instead, or 64 x 64 */
    if (wg->knobs.matmul_pad_ladder && (p->M <= 64 || p->N <= 64)) {
        const char *name = p->M <= 64 && p->N <= 64 ? "tile64x64k16" : p->M <= 64 ? "tile64x128k8" : "tile128x64k8";
        c = matmul_find_config(name);
        int64_t tiles = matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) * p->batches;
        if (matmul_config_fits(wg, c) && tiles >= 192) return c;
    }
    for (size_t i = 0; i < sizeof(tiled_ladder) / sizeof(tiled_ladder[0]); i++) {
        c = matmul_find_config(tiled_ladder[i].name);
        if (!matmul_config_fits(wg, c)) continue;
        fallback = c;
        int64_t tiles = matmul_ceil_div(p->M, c->bm) * matmul_ceil_div(p->N, c->bn) * p->batches;
        if (tiles >= tiled_ladder[i].min_workgroups) return c;
        /* with split-K, but not a tile larger than the output along m or n (x [16, K] @ W:
         * mostly empty tile rows would multiply zeros; smaller tiles split instead) */
        if (c->bm <= p->M && c->bn <= p->N && tiles * choose_split(wg, p, c, NULL) >= tiled_ladder[i].min_workgroups)
            return c;
        /* "pad": a next tile that pads the output to the same size only splits padding
         * (x W^T to 65 outputs: 128 x 64 tiles compute 128 columns as 128 x 128 do, in
         * twice the workgroups); at half the workgroups wanted, keep this one. GPT's
         * head 16384 x 384 -> 65 on an H100: 0.060 ms against 0.084 with 128 x 64 */
        if (wg->knobs.matmul_pad_ladder && 2 * tiles >= tiled_ladder[i].min_workgroups &&
            i + 1 < sizeof(tiled_ladder) / sizeof(tiled_ladder[0])) {
            const matmul_config *next = matmul_find_config(tiled_ladder[i + 1].name);
            bool same_m = matmul_ceil_div(p->M, next->bm) * next->bm == matmul_ceil_div(p->M, c->bm) * c->bm;
            bool same_n = matmul_ceil_div(p->N, next->bn) * next->bn == matmul_ceil_div(p->N, c->bn) * c->bn;
            if (matmul_config_fits(wg, next) && same_m && same_n) return c;
        }
    }
    return fallback;
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

static wgt_status run_native(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                             const wgt_tensor_view *bias, const wgt_tensor_view *gelu_h, const wgt_tensor_view *out,
                             bool half_math, const char *op);

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

/* With few column tiles (N < 1024: a GPT step's N = 384 products, 16384 rows)
 * the opposite holds on an H100: both operands read along k ran fastest
 * (`wgt bench --only linear_gpt`, `gemm_bwd_dx`, ms): x W^T 16384x384x1536
 * 0.507 as it is against 0.555 with W copied row-major, 16384x384x384 0.148
 * against 0.170; x W (dx = dy W) 0.546, the same product, with W read along
 * n. So with WGT_MATMUL_SHAPE_RULES' "layout" (the default), where a is read
 * along k, such a b is not copied row-major, and a b read along n is copied
 * with k contiguous (K N elements against M N K flops) when M is large. At
 * N = 1152 and 1536 the row-major copies stay faster (0.379 against 0.393 ms,
 * 0.481 against 0.513). Not for a read along m (the weight gradient dy^T x:
 * copying x [16384, 384] to k contiguous took 1536x384 from 0.44 to 0.56 ms). */
static bool k_layout_pays(const webgpu_backend *wg, const matmul_problem *p, bool a_quad_k, bool a_vec)
{
    return wg->knobs.matmul_k_layout && p->N < 1024 && a_quad_k && a_vec;
}

static bool k_copy_pays(const matmul_problem *p, bool quad_k, bool vec)
{
    return !quad_k && vec && p->batches == 1 && p->K % 4 == 0 && p->M >= 1024;
}

/* "narrow": a GPT step's input gradients dx = dy W with N = 384 (M = 16384,
 * b = W read along n, where "layout" would copy it k-contiguous) ran faster in
 * 64 x 128 tiles of 8 x 8 outputs per invocation, 128 invocations (more,
 * smaller workgroups an SM), reading W as it is. On an H200 (`wgt bench --only
 * gemm_bwd_dx`, ms, bench/results/h200-2026-11-28e probe p2): 1536to384 0.473
 * against 0.504, 1152to384 0.360 against 0.386, 384to384 0.129 against 0.145;
 * at N = 1536 not (0.484 against 0.478), nor for x W^T (fc 0.576 against 0.464). */
static bool narrow_tiles_pay(const webgpu_backend *wg, const matmul_problem *p, bool a_quad_k, bool a_vec, bool b_quad_k,
                             bool b_vec)
{
    return wg->knobs.matmul_narrow_tiles && k_layout_pays(wg, p, a_quad_k, a_vec) && !b_quad_k && b_vec &&
           p->batches == 1 && p->M >= 1024;
}

/* The product on copies: a with m contiguous (ta), b row-major (tb) or b with
 * k contiguous (tbk). */
static wgt_status run_transposed(webgpu_backend *wg, const matmul_problem *p, bool ta, bool tb, bool tbk,
                                 const char *op)
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
    if (s == WGT_OK && tbk) s = transposed_copy(wg, p->b, &tmp_b, &b, op); /* b^T's storage: k contiguous */
    /* the copies read along m and n (or b along k): run_tiled does not come back here */
    if (s == WGT_OK) s = run_native(wg, &a, &b, p->bias, p->gelu_h, p->out, p->half_math, op);
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
    wgt_status s = matmul_get_pipeline(wg, p, key, "matmul_splitk_reduce", p->a->dtype, "", op, &pipe);
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
    matmul_operand oa = {a->offset, p->M, a->strides[nd - 2], p->K, a->strides[nd - 1], p->a_batch};
    matmul_operand ob = {b->offset, p->N, b->strides[nd - 1], p->K, b->strides[nd - 2], p->b_batch};
    bool a_quad_k, a_vec, b_quad_k, b_vec;
    choose_layout(p, &oa, &a_quad_k, &a_vec);
    choose_layout(p, &ob, &b_quad_k, &b_vec);
    const matmul_config *c = choose_tiled(wg, p, narrow_tiles_pay(wg, p, a_quad_k, a_vec, b_quad_k, b_vec));
    if (!c) return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: no matmul tile config fits this device", op);
    if (c->transpose) {
        bool ta = transpose_pays(p, a_quad_k, a_vec, p->M, p->N), tb = transpose_pays(p, b_quad_k, b_vec, p->N, p->M);
        bool tbk = false;
        if (k_layout_pays(wg, p, a_quad_k, a_vec)) tb = false, tbk = k_copy_pays(p, b_quad_k, b_vec);
        if (ta || tb || tbk) return run_transposed(wg, p, ta, tb, tbk, op);
    }
    bool check = p->M % c->bm != 0 || p->N % c->bn != 0 || p->K % c->bk != 0;
    bool a_block = c->blocks && a_quad_k && a_vec, b_block = c->blocks && b_quad_k && b_vec;
    int64_t threads = matmul_config_threads(c);
    /* registers per invocation for one fetched slice: quads, or 4 per 4x4 block */
    int64_t a_regs = a_block ? 4 * matmul_ceil_div((int64_t)c->bm * c->bk / 16, threads) : matmul_ceil_div((int64_t)c->bm * c->bk / 4, threads);
    int64_t b_regs = b_block ? 4 * matmul_ceil_div((int64_t)c->bn * c->bk / 16, threads) : matmul_ceil_div((int64_t)c->bn * c->bk / 4, threads);

    char key[160], consts[720];
    snprintf(key, sizeof(key), "matmul_tiled:%s:%s:c%d:a%d%d:b%d%d%s", matmul_dtype_key(a->dtype), c->name, check, a_quad_k,
             a_vec, b_quad_k, b_vec, p->half_math ? ":h" : "");
    snprintf(consts, sizeof(consts),
             "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst BK: u32 = %du;\nconst TM: u32 = %du;\n"
             "const TN: u32 = %du;\nconst CHECK: bool = %s;\nconst A_QUAD_K: bool = %s;\nconst A_VEC: bool = %s;\n"
             "const B_QUAD_K: bool = %s;\nconst B_VEC: bool = %s;\nconst WARP_TX: u32 = %du;\n"
             "const A_BLOCK: bool = %s;\nconst B_BLOCK: bool = %s;\nconst A_REGS: u32 = %du;\nconst B_REGS: u32 = %du;\n",
             c->bm, c->bn, c->bk, c->tm, c->tn, check ? "true" : "false", a_quad_k ? "true" : "false",
             a_vec ? "true" : "false", b_quad_k ? "true" : "false", b_vec ? "true" : "false", c->warp_tx,
             a_block ? "true" : "false", b_block ? "true" : "false", (int)a_regs, (int)b_regs);
    /* HALF_MATH: a slice's BK (<= 16) products summed in f16 (wgtensor.h's MEDIUM) */
    size_t at = strlen(consts);
    snprintf(consts + at, sizeof(consts) - at, "%s",
             p->half_math ? "const HALF_MATH: bool = true;\nalias W = f16;\n"
                            "fn mad4w(x: vec4<W>, y: vec4<W>, z: vec4<W>) -> vec4<W> { return fma(x, y, z); }\n"
                          : "const HALF_MATH: bool = false;\nalias W = T;\n"
                            "fn mad4w(x: vec4<W>, y: vec4<W>, z: vec4<W>) -> vec4<W> { return mad4(x, y, z); }\n");
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
    wgt_status s = matmul_get_pipeline(wg, pp, key, "matmul_tiled", a->dtype, consts, op, &pipe);
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
    if (p->gelu_h) { /* h (m, n) = h[offset + m N + n] */
        q.bias_offset = (uint32_t)p->gelu_h->offset;
        q.bias_row = (uint32_t)p->N;
    }
    matmul_fill_batches(pp, p->a_batch, p->b_batch, &q);
    s = matmul_dispatch(wg, pipe, a, b, pp, &q, (int64_t)q.tiles_m * q.tiles_n * p->batches * parts, op);
    if (s == WGT_OK && parts > 1) s = run_splitk_reduce(wg, p, &partial, parts, op);
    /* released right after recording: queue order keeps the block's reuse safe */
    webgpu_temp_release(wg, &partial);
    return s;
}

static wgt_status run_native(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                             const wgt_tensor_view *bias, const wgt_tensor_view *gelu_h, const wgt_tensor_view *out,
                             bool half_math, const char *op)
{
    matmul_problem p;
    wgt_status s = matmul_make_problem(wg, a, b, bias, out, op, &p);
    if (s != WGT_OK) return s;
    p.half_math = half_math;
    p.gelu_h = gelu_h; /* run_gelu_grad checked the tiled kernel takes it */
    if (p.M == 1 || p.N == 1) return matmul_run_gemv(wg, &p, op);
    return run_tiled(wg, &p, op);
}

wgt_status webgpu_matmul_views(webgpu_backend *wg, const wgt_tensor_view *a, const wgt_tensor_view *b,
                               const wgt_tensor_view *out, const char *op)
{
    return run_native(wg, a, b, NULL, NULL, out, false, op);
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
                       conv_bias ? &tbias : has_bias ? &call->inputs[2] : NULL, NULL, direct ? out : &tout, false, op);
    if (s == WGT_OK && !direct) s = webgpu_convert(wg, &tout, out, op);
    if (conv_a) webgpu_temp_release(wg, &ta);
    if (conv_b) webgpu_temp_release(wg, &tb);
    if (conv_bias) webgpu_temp_release(wg, &tbias);
    if (!direct) webgpu_temp_release(wg, &tout);
    return s;
}

bool webgpu_matmul_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->matmul.attention) return call->kind == WGT_KERNEL_MATMUL && webgpu_attention_linear_supports(wg, call);
    if (call->matmul.gelu_grad) return wgt_matmul_gelu_grad_call_valid(call);
    if (call->kind != WGT_KERNEL_MATMUL || call->n_inputs < 2 || call->n_inputs > 3 + call->matmul.rope ||
        call->n_outputs != 1)
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
    if (call->matmul.rope) { /* with the norm; inputs[3]: an f32 or f16 table [4, D/2]; one row */
        const wgt_tensor_view *tab = &call->inputs[3];
        if (!call->matmul.norm || call->n_inputs != 4 || (tab->dtype != WGT_F32 && tab->dtype != WGT_F16) ||
            tab->ndim != 2 || tab->shape[0] != 4 || a->ndim != 2 || a->shape[0] != 1)
            return false;
    }
    if (call->matmul.norm) /* inputs[2]: an f32 norm weight [K] for f32 a */
        return call->n_inputs == 3 + call->matmul.rope && t == WGT_F32 && call->inputs[2].dtype == WGT_F32 && call->inputs[2].ndim == 1 &&
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

/* MATMUL with the SwiGLU epilogue (wgt_linear_swiglu_ex; see backend.h). A
 * decode product (one row, one batch) that takes matmul_gemv_half with an even
 * number of rows per workgroup computes it in the epilogue: the workgroup
 * holding rows 2i (gate) and 2i + 1 (up) of the matrix writes out[i], one
 * dispatch for projection and SwiGLU. Anything else runs the two calls the
 * CPU backend runs: the product into a temporary [.., M, N], then the
 * elementwise SwiGLU of its even and odd columns. */
static wgt_status run_swiglu(webgpu_backend *wg, const wgt_kernel_call *call, bool emulate)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    const char *op = call->op_name;
    const int n = out->ndim;
    if ((out->dtype != WGT_F32 && out->dtype != WGT_F16) || call->n_inputs != 2 || b->ndim != n ||
        b->shape[n - 1] != 2 * out->shape[n - 1])
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: a SwiGLU epilogue of %s out, %d inputs", op,
                         wgt_dtype_name(out->dtype), call->n_inputs);
    wgt_tensor_view gu = *out; /* the product's [.., M, N] (contiguous, as the temporary below) */
    gu.shape[n - 1] = b->shape[n - 1];
    wgt_contiguous_strides(n, gu.shape, gu.strides);
    if (!emulate && a->shape[n - 2] == 1 && gu.shape[n - 1] > 1) {
        matmul_problem p;
        wgt_status s = matmul_make_problem(wg, a, b, NULL, &gu, op, &p);
        if (s != WGT_OK) return s;
        gemv_plan g;
        matmul_plan_gemv(wg, &p, &g);
        if (p.M == 1 && p.batches == 1 && !g.mat_is_a && g.half && g.c->threads <= 128 && g.om.outer % 2 == 0) {
            p.swiglu = true;
            p.out = out; /* its offset; N / 2 outputs */
            return matmul_run_gemv_half(wg, &p, g.c, &g.om, &g.ov, false, op);
        }
    }
    wgt_expr e;
    wgt_kernel_call ew;
    char err[160];
    wgt_tensor_view tmp;
    wgt_status s = webgpu_temp_alloc(wg, out->dtype, n, gu.shape, &tmp);
    if (s != WGT_OK) return s;
    wgt_kernel_call mm = *call;
    mm.outputs[0] = tmp;
    mm.matmul.swiglu = false;
    s = webgpu_matmul_run(wg, &mm);
    if (s == WGT_OK && wgt_swiglu_elementwise_call(op, &tmp, out, &e, &ew, err, (int)sizeof(err)))
        s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: SwiGLU expression: %s", op, err);
    else if (s == WGT_OK)
        s = webgpu_elementwise_run(wg, &ew);
    webgpu_temp_release(wg, &tmp);
    return s;
}

/* MATMUL with the RMSNorm prologue (wgt_rms_norm_linear_ex; see backend.h).
 * A decode product (an f32 row, one batch) that takes matmul_gemv_half, whose
 * vector fits workgroup memory, normalizes the row there first, as nn_norm.wgsl
 * does (the same threads and summation order, so the same values), and reads
 * it from there: one dispatch for norm and projection (and the SwiGLU
 * epilogue, where run_swiglu would take it). Anything else runs the NN NORM
 * kernel into a temporary, then the product. */
/* The decode product of run_norm and run_rope (an f32 row, one batch, f16
 * weight rows that take matmul_gemv_half, the row within workgroup memory):
 * the norm in the GEMV's prologue, the SwiGLU or rope epilogue in its
 * epilogue, one dispatch. false (*s untouched) where that does not apply:
 * also where the row (K floats) and the partial sums at any RPT
 * (WEBGPU_GEMV_PARTIAL_BYTES) would not fit the workgroup memory together. */
static bool run_norm_gemv(webgpu_backend *wg, const wgt_kernel_call *call, bool emulate, wgt_status *s)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    const wgt_tensor_view *nw = &call->inputs[2];
    const int n = a->ndim;
    const int64_t K = a->shape[n - 1], N = b->shape[n - 1];
    const bool pairs = call->matmul.swiglu || call->matmul.rope; /* epilogues over two rows of an invocation */
    if (emulate || a->dtype != WGT_F32 || nw->dtype != WGT_F32 || !wgt_view_is_contiguous(a) || a->shape[n - 2] != 1 ||
        K % 4 || nw->offset % 4 || (uint64_t)K * 4 + WEBGPU_GEMV_PARTIAL_BYTES > wg->limits.maxComputeWorkgroupStorageSize || N < 2 ||
        (pairs && N % 2))
        return false;
    wgt_tensor_view full = *out; /* the product's [.., 1, N] (SwiGLU: out holds N / 2) */
    full.shape[n - 1] = N;
    wgt_contiguous_strides(n, full.shape, full.strides);
    matmul_problem p;
    if ((*s = matmul_make_problem(wg, a, b, NULL, &full, call->op_name, &p)) != WGT_OK) return true;
    gemv_plan g;
    matmul_plan_gemv(wg, &p, &g);
    if (p.M != 1 || p.batches != 1 || g.mat_is_a || !g.half || (pairs && g.c->threads > 128)) return false;
    p.norm = nw;
    p.norm_eps = call->matmul.norm_eps;
    if (call->matmul.swiglu) {
        p.swiglu = true;
        p.out = out;
    }
    if (call->matmul.rope) {
        p.rope = &call->inputs[3];
        p.rope_pass_begin = call->matmul.rope_pass_begin;
        p.rope_pass_end = call->matmul.rope_pass_end;
    }
    *s = matmul_run_gemv_half(wg, &p, g.c, &g.om, &g.ov, false, call->op_name);
    return true;
}

static wgt_status run_norm(webgpu_backend *wg, const wgt_kernel_call *call, bool emulate)
{
    const wgt_tensor_view *a = &call->inputs[0], *nw = &call->inputs[2];
    const char *op = call->op_name;
    const int n = a->ndim;
    if (a->dtype != WGT_F32 || nw->dtype != WGT_F32 || !wgt_view_is_contiguous(a))
        return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: an RMSNorm prologue of %s a", op,
                         wgt_dtype_name(a->dtype));
    const int64_t K = a->shape[n - 1];
    wgt_status fused;
    if (run_norm_gemv(wg, call, emulate, &fused)) return fused;
    const int64_t rows = K ? wgt_shape_numel(n, a->shape) / K : 0;
    wgt_tensor_view y, stats;
    wgt_status s = webgpu_temp_alloc(wg, WGT_F32, n, a->shape, &y);
    if (s != WGT_OK) return s;
    s = webgpu_temp_alloc(wg, WGT_F32, 2, (int64_t[]){rows, 2}, &stats);
    if (s != WGT_OK) {
        webgpu_temp_release(wg, &y);
        return s;
    }
    wgt_kernel_call nn;
    wgt_rms_norm_prologue_call(call, a, nw, &y, &stats, rows, K, &nn);
    s = webgpu_nn_run(wg, &nn);
    if (s == WGT_OK) {
        wgt_kernel_call mm = *call;
        mm.inputs[0] = y;
        mm.n_inputs = 2;
        mm.matmul.norm = false;
        s = webgpu_matmul_run(wg, &mm);
    }
    webgpu_temp_release(wg, &stats);
    webgpu_temp_release(wg, &y);
    return s;
}

/* MATMUL with the rope epilogue (wgt_rms_norm_linear_rope_into; see
 * backend.h). The decode product run_norm fuses (one f32 row, f16 weight
 * rows of 16-byte words) also rotates its pairs of rows in matmul_gemv_half's
 * epilogue: projection, norm and rotation in one dispatch. Anything else runs
 * the product into a temporary of out's dtype, then the ELEMENTWISE calls of
 * wgt_rope_rows_elementwise_calls, the reference's own steps. */
static wgt_status run_rope(webgpu_backend *wg, const wgt_kernel_call *call, bool emulate)
{
    const wgt_tensor_view *a = &call->inputs[0], *out = &call->outputs[0], *t = &call->inputs[3];
    const char *op = call->op_name;
    if (call->n_inputs != 4 || a->ndim != 2 || a->shape[0] != 1 || out->ndim != 2 || !wgt_view_is_contiguous(out))
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: a rope epilogue needs one row and 4 inputs", op);
    wgt_status fused;
    if ((t->dtype == WGT_F32 || t->dtype == WGT_F16) && run_norm_gemv(wg, call, emulate, &fused)) return fused;
    wgt_tensor_view y;
    wgt_status s = webgpu_temp_alloc(wg, out->dtype, 2, out->shape, &y);
    if (s != WGT_OK) return s;
    wgt_kernel_call mm = *call;
    mm.outputs[0] = y;
    mm.n_inputs = 3;
    mm.matmul.rope = false;
    s = webgpu_matmul_run(wg, &mm);
    wgt_expr rot, copy;
    wgt_kernel_call ew[3];
    int n = 0;
    char err[160];
    if (s == WGT_OK && wgt_rope_rows_elementwise_calls(op, t, call->matmul.rope_pass_begin, call->matmul.rope_pass_end,
                                                       &y, out, &rot, &copy, ew, &n, err, (int)sizeof(err)))
        s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: rope expression: %s", op, err);
    for (int i = 0; s == WGT_OK && i < n; i++) s = webgpu_elementwise_run(wg, &ew[i]);
    webgpu_temp_release(wg, &y);
    return s;
}

/* MATMUL with the GELU-gradient epilogue (wgt_gelu_linear's backward; see
 * backend.h). In the tiled GEMM where it takes the product (rows and columns
 * > 1, h contiguous in its own buffer, indices in u32; matmul_tiled's
 * GELU_GRAD: each workgroup finishes the tile it stored in a second pass, so
 * no [M, N] temporary and no second dispatch); else the product into a
 * temporary, then the elementwise WGT_GELU_GRAD_EXPR (the CPU backend's two
 * calls; WebGPU's elementwise kernel would copy an output that is also its
 * input). WGT_GELU_EPILOGUE=0 takes the two calls always. */
static wgt_status run_gelu_grad(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *h = &call->inputs[2], *out = &call->outputs[0];
    const int64_t M = out->shape[0], N = out->shape[1];
    if (wg->knobs.gelu_epilogue && M > 1 && N > 1 && wgt_view_is_contiguous(h) && h->offset >= 0 &&
        (uint64_t)h->offset + (uint64_t)(M * N) < UINT32_MAX && h->storage &&
        ((uint64_t)h->offset + (uint64_t)(M * N)) * 4u <= h->storage->bytes &&
        webgpu_view_buffer(h) != webgpu_view_buffer(out))
        return run_native(wg, a, b, NULL, h, out, false, op);
    wgt_tensor_view g;
    wgt_status s = webgpu_temp_alloc(wg, WGT_F32, 2, out->shape, &g);
    if (s == WGT_OK) s = run_native(wg, a, b, NULL, NULL, &g, false, op);
    wgt_expr e;
    wgt_kernel_call ew;
    char err[160];
    if (s == WGT_OK && wgt_gelu_grad_elementwise_call(op, &g, h, out, &e, &ew, err, (int)sizeof(err)))
        s = wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: GELU-gradient expression: %s", op, err);
    else if (s == WGT_OK)
        s = webgpu_elementwise_run(wg, &ew);
    webgpu_temp_release(wg, &g);
    return s;
}

/* Whether a product of f16 operands (either or both, f32 or f16 out) runs
 * matmul_tiled's HALF_MATH: the call allows it
 * (wgt_set_matmul_precision MEDIUM) or WGT_MATMUL_HALF=1 forces it; WGT_MATMUL_HALF=0 turns it off. */
static bool half_math(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    bool f16 = (a->dtype == WGT_F16 || b->dtype == WGT_F16) && a->dtype != WGT_I32 &&
               (out->dtype == WGT_F32 || out->dtype == WGT_F16);
    return f16 && wg->knobs.matmul_half != 0 && (call->matmul.f16_reduced || wg->knobs.matmul_half == 1);
}

wgt_status webgpu_matmul_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *out = &call->outputs[0];
    if (wgt_shape_numel(out->ndim, out->shape) == 0) return WGT_OK;
    if (call->matmul.attention) return webgpu_attention_linear_run(wg, call);
    if (call->matmul.gelu_grad) return run_gelu_grad(wg, call);
    if (call->matmul.norm || call->matmul.swiglu || call->matmul.rope) {
        const bool emulated = !wg->has_f16 || wg->knobs.matmul_f16_emulate;
        if (call->matmul.rope) return run_rope(wg, call, emulated);
        return call->matmul.norm ? run_norm(wg, call, emulated) : run_swiglu(wg, call, emulated);
    }
    if (a->dtype == WGT_F16 || b->dtype == WGT_F16) {
        if (!wg->has_f16 || wg->knobs.matmul_f16_emulate) return run_f16_emulated(wg, call);
    }
    return run_native(wg, a, b, call->n_inputs == 3 ? &call->inputs[2] : NULL, NULL, out, half_math(wg, call),
                      call->op_name);
}
