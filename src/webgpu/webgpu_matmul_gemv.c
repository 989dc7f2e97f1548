/*
 * MATMUL on WebGPU, the matrix-vector kernels (webgpu_matmul.c has the whole
 * picture): products with M == 1 or N == 1.
 *   matmul_gemv_rows  the matrix's k stride is 1 (W @ x): ROW_THREADS invocations per output
 *   matmul_gemv_cols  outputs contiguous in the matrix (x @ W): 4 per invocation, k split
 *   matmul_gemv_half  f16 rows read as 16-byte words against an f16 or f32 vector (decode's
 *                     f16 weight matvecs), with decode's fusions as preludes: the bias
 *                     epilogue (wgt_linear_ex's residual), the SwiGLU epilogue and the
 *                     RMSNorm prologue (webgpu_matmul.c's run_swiglu and run_norm decide
 *                     when; design.md, "Fusions in the decode GEMV")
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gemm_shared.h"

/* Whether matmul_gemv_half can read operand o (f16, unit k stride) as words
 * of 8 halves: K, the offset, the outer and batch strides multiples of 8. */
static bool octets_aligned(const matmul_problem *p, const matmul_operand *o)
{
    if (o->k_stride != 1 || o->k % 8 || o->offset % 8 || (o->outer > 1 && o->outer_stride % 8)) return false;
    for (int d = 0; d < p->batch_ndim; d++)
        if (o->batch_strides[d] % 8) return false;
    return true;
}

/* f16 matrix-vector with 16-byte loads (matmul_gemv_half.wgsl): the matrix
 * bound as vec4<u32>, the vector too (f16) or as vec4<f32> (an f32 vector:
 * llama's activations against f16 weights), so its prelude is its own
 * (S = u32, load_x8 for the vector; bias and out as f16 or f32).
 * WGT_GEMV_HALF=0 keeps matmul_gemv_rows (vec4<f16> loads) instead. */
static bool gemv_half_wanted(const webgpu_backend *wg, const matmul_problem *p, const wgt_tensor_view *mat,
                             const matmul_operand *om, const matmul_operand *ov)
{
    if (!wg->knobs.gemv_half) return false;
    return mat->dtype == WGT_F16 && octets_aligned(p, om) && octets_aligned(p, ov);
}

/* Two rows per invocation unless that leaves fewer than GEMV_RPT_MIN_WORKGROUPS
 * workgroups (about one per SM of a large GPU). A row per invocation reads
 * the vector once per row, RPT rows once per RPT (the kernels' comments):
 * that pays where the matrix comes from L2, not where it streams from memory.
 * H100, GPU time per product (WGT_PROFILE_TRACE of `wgt bench --only gemv_..`,
 * medians, us, WGT_GEMV_RPT=1 / 2): f16 3072x2048 8.70 / 8.19, 16384x2048
 * 31.2 / 30.0, 2048x8192 15.6 / 11.5; q4 16384x2048 15.6 / 14.6, 2048x8192
 * 13.8 / 11.8, 3072x2048 (96 workgroups at 2) 8.45 / 8.96. In Llama-3.2-1B
 * decode, where each layer's weights arrive cold from memory, the same
 * products took the same time either way (WGT_PROFILE_TRACE of `wgt generate
 * --bench`): the gains are for weights that fit L2 (the 3072- and 8192-wide
 * cases above do, 13 and 34 MB against the H100's 50). */
#define GEMV_RPT_MIN_WORKGROUPS 128

unsigned webgpu_gemv_rows_per_thread(const webgpu_backend *wg, uint64_t rows, unsigned slots, uint64_t batches)
{
    if (wg->knobs.gemv_rpt) return wg->knobs.gemv_rpt; /* WGT_GEMV_RPT */
    return (rows + 2ull * slots - 1) / (2ull * slots) * batches >= GEMV_RPT_MIN_WORKGROUPS ? 2 : 1;
}

wgt_status matmul_run_gemv_half(webgpu_backend *wg, const matmul_problem *p, const matmul_config *c,
                                const matmul_operand *om, const matmul_operand *ov, bool mat_is_a, const char *op)
{
    const bool vec_f32 = (mat_is_a ? p->b : p->a)->dtype == WGT_F32;
    char key[160];
    /* the RMSNorm prologue: the vector's K / 4 slots normalized into workgroup memory (HX) by the
     * threads nn_norm.wgsl would use (NORM_THREADS), then read from there */
    const uint32_t norm_threads = p->norm ? webgpu_norm_row_threads(wg, (uint64_t)(p->K / 4)) : 0;
    const int64_t hx = p->norm || p->combine ? p->K / 4 : 1;
    const unsigned slots = 256 / (unsigned)c->threads;
    /* the rope epilogue: an invocation's two rows are a head's i and i + D/2 */
    const unsigned rpt = p->rope ? 2 : webgpu_gemv_rows_per_thread(wg, (uint64_t)om->outer, slots, (uint64_t)p->batches);
    const int64_t d2 = p->rope ? p->rope->shape[1] : 1;
    const char *rope_type = p->rope ? wgt_dtype_name(p->rope->dtype) : "0";
    /* words of a row per invocation loaded before the norm prologue (PRE):
     * with the prologue, when they are exactly 4 or 8 per row. H100,
     * Llama-3.2-1B f16 decode, three alternated rounds against
     * WGT_GEMV_PREFETCH=0: 704.5 / 703.7 / 703.6 against 689.3 / 688.7 /
     * 689.7 tokens/s. (The same in quant_gemv_rows, 4 words and their scales
     * loaded before x is staged, made q4 decode 22% slower: not kept.) */
    const int64_t per_lane = p->K / 8 / c->threads;
    const unsigned pre = (p->norm || p->combine) && !wg->knobs.gemv_no_prefetch && p->K % (8 * c->threads) == 0 &&
                                 (per_lane == 4 || per_lane == 8) ? (unsigned)per_lane : 0;
    /* the attention prologue: head dim D (combine_x4's CD4 = D / 4) and the rounding of its output */
    const unsigned cd4 = p->combine ? p->combine->D / 4 : 0;
    snprintf(key, sizeof(key), "matmul_gemv_half:%s:o%s:bias%s:x%s%s:norm%u:%lld:rpt%u:rope%s%lld:pre%u:comb%u%d", c->name,
             wgt_dtype_name(p->out->dtype), p->bias ? wgt_dtype_name(p->bias->dtype) : "0", vec_f32 ? "f32" : "f16",
             p->swiglu ? ":swiglu" : "", norm_threads, (long long)hx, rpt, rope_type, (long long)d2, pre, cd4,
             p->combine_f16);
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, key);
    if (!pipe) {
        const char *common = webgpu_kernel_source("matmul_common"), *body = webgpu_kernel_source("matmul_gemv_half");
        if (!common || !body) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel matmul_gemv_half is not embedded", op);
        /* load_x8(i): the vector's 8 elements 8i.. as two vec4<f32> (f16: one
         * 16-byte word unpacked; f32: two vec4s) */
        const char *x8 = p->combine ? "alias SB = f32;\n"
                                      "fn norm_w(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                      "fn norm_x(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                      "fn load_x8(i: u32) -> array<vec4<f32>, 2> { return array(hx[2u * i], hx[2u * i + 1u]); }\n"
                                      "@group(0) @binding(5) var<storage, read> part_ml: array<vec2<f32>>;\n"
                                      "fn comb_o(i: u32) -> vec4<f32> { return b[i]; }\n"
                                      "fn comb_ml(i: u32) -> vec2<f32> { return part_ml[i]; }\n"
                         : p->norm ? "alias SB = f32;\n"
                                   "@group(0) @binding(4) var<storage, read> nw: array<vec4<f32>>;\n"
                                   "fn norm_w(i: u32) -> vec4<f32> { return nw[i]; }\n"
                                   "fn norm_x(i: u32) -> vec4<f32> { return b[i]; }\n"
                                   "fn load_x8(i: u32) -> array<vec4<f32>, 2> { return array(hx[2u * i], hx[2u * i + 1u]); }\n"
                         : vec_f32 ? "alias SB = f32;\n"
                                   "fn norm_w(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                   "fn norm_x(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                   "fn load_x8(i: u32) -> array<vec4<f32>, 2> { return array(b[2u * i], b[2u * i + 1u]); }\n"
                                 : "alias SB = u32;\n"
                                   "fn norm_w(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                   "fn norm_x(i: u32) -> vec4<f32> { return vec4<f32>(); }\n"
                                   "fn load_x8(i: u32) -> array<vec4<f32>, 2> {\n"
                                   "    let w = b[i];\n"
                                   "    return array(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)),\n"
                                   "                 vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)));\n}\n";
        char prelude[2048], bias[160];
        snprintf(bias, sizeof(bias),
                 p->bias ? "@group(0) @binding(4) var<storage, read> bias: array<%s>;\n"
                           "fn bias_load(i: u32) -> T { return T(bias[i]); }\n"
                         : "fn bias_load(i: u32) -> T { return T(); }\n%s",
                 p->bias ? matmul_wgsl_type(p->bias->dtype) : "");
        snprintf(prelude, sizeof(prelude),
                 "enable f16;\nalias S = u32;\nalias SA = u32;\n%salias T = f32;\nalias O = %s;\nconst BIAS: bool = %s;\n%s"
                 "const ROW_THREADS: u32 = %du;\nconst RPT: u32 = %uu;\nconst SWIGLU: bool = %s;\n"
                 "const NORM: bool = %s;\nconst NORM_THREADS: u32 = %uu;\nconst HX: u32 = %lldu;\n"
                 "const ROPE: bool = %s;\nconst D2: u32 = %lldu;\nconst PRE: u32 = %uu;\n"
                 "const COMBINE: bool = %s;\nconst CD4: u32 = %uu;\nconst COMBINE_F16: bool = %s;\n",
                 x8, p->out->dtype == WGT_F32 ? "f32" : "f16", p->bias ? "true" : "false", bias, c->threads, rpt,
                 p->swiglu ? "true" : "false", p->norm ? "true" : "false", norm_threads, (long long)hx,
                 p->rope ? "true" : "false", (long long)d2, pre, p->combine ? "true" : "false", cd4 ? cd4 : 1,
                 p->combine_f16 ? "true" : "false");
        /* the SwiGLU epilogue: WGT_SWIGLU_EXPR as webgpu_elementwise_codegen.c
         * writes it (its exp, each step's rounding pinned by ew_opaque, whose
         * uniform zero is split_stride: 0 in the GEMV kernels), stored as an
         * elementwise f16 store rounds (nearest even) */
        char swiglu[1024];
        snprintf(swiglu, sizeof(swiglu),
                 p->swiglu ? "fn ew_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | params.split_stride); }\n"
                             "fn swiglu_store(g: O, u: O) -> O {\n"
                             "    let a = f32(g);\n"
                             "    let v = ew_opaque(ew_opaque(a / ew_opaque(1.0 + ew_exp(ew_neg(a)))) * f32(u));\n"
                             "    return %s;\n}\n"
                           : "fn swiglu_store(g: O, u: O) -> O { return g; }\n%s",
                 !p->swiglu ? "" : p->out->dtype == WGT_F32 ? "v" : "O(ew_f16_to_f32_exact(ew_f32_to_f16_exact(v)))");
        /* the rope epilogue: WGT_ROPE_ROWS_EXPR likewise (ew_opaque above when
         * SwiGLU is off: the two never meet), the table read as f32 */
        char rope[640];
        snprintf(rope, sizeof(rope),
                 p->rope ? "fn ew_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | params.split_stride); }\n"
                           "@group(0) @binding(5) var<storage, read> rope_tab: array<%s>;\n"
                           "fn rope_load(i: u32) -> f32 { return f32(rope_tab[i]); }\n"
                           "fn rope_store(v: f32) -> O { return %s; }\n"
                         : "fn rope_load(i: u32) -> f32 { return 0.0; }\nfn rope_store(v: f32) -> O { return O(v); }\n%s%s",
                 p->rope ? matmul_wgsl_type(p->rope->dtype) : p->swiglu ? "" : "fn ew_opaque(x: f32) -> f32 { return x; }\n",
                 !p->rope ? "" : p->out->dtype == WGT_F32 ? "v" : "O(ew_f16_to_f32_exact(ew_f32_to_f16_exact(v)))");
        if (p->swiglu && p->rope) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: SwiGLU and rope epilogues", op);
        const bool snippets = p->swiglu || p->rope;
        const char *ew_common = snippets ? webgpu_kernel_source("elementwise_common") : "";
        const char *ew_math = snippets ? webgpu_kernel_source("elementwise_math") : "";
        if (!ew_common || !ew_math)
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: the elementwise snippets are not embedded", op);
        const char *rotate = webgpu_kernel_source("gemv_rope"); /* rope_rotate, referenced by every variant */
        if (!rotate) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: gemv_rope.wgsl is not embedded", op);
        /* combine_x4, referenced by every variant: the attention prologue's, or a stub */
        const char *combine = p->combine ? webgpu_kernel_source("attention_combine_x")
                                         : "fn combine_x4(i: u32, o: u32, m: u32, c: u32) -> vec4<f32> { return vec4<f32>(); }\n";
        if (!combine) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: attention_combine_x.wgsl is not embedded", op);
        size_t n = strlen(prelude) + strlen(swiglu) + strlen(rope) + strlen(ew_common) + strlen(ew_math) +
                   strlen(common) + strlen(body) + strlen(rotate) + strlen(combine) + 4;
        char *source = malloc(n);
        if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        snprintf(source, n, "%s%s%s%s\n%s\n%s%s%s%s", prelude, swiglu, rope, ew_common, ew_math, common, body, rotate,
                 combine);
        /* a, b, out, bias, rope table (the attention prologue: part_ml) */
        static const bool read_only[5] = {true, true, false, true, true};
        const int n_storage = p->rope || p->combine ? 5 : p->bias || p->norm ? 4 : 3;
        wgt_status s = webgpu_pipeline_create_ex(wg, key, source, NULL, n_storage, read_only, true, false, false, op,
                                                 &pipe);
        free(source);
        if (s != WGT_OK) return s;
    }
    matmul_params q;
    memset(&q, 0, sizeof(q));
    int64_t per_batch = matmul_ceil_div(om->outer, (int64_t)slots * rpt);
    q.M = (uint32_t)om->outer;
    q.N = 1;
    q.K = (uint32_t)p->K;
    q.a_offset = (uint32_t)om->offset;
    q.a_row = (uint32_t)om->outer_stride;
    q.a_col = 1;
    q.b_offset = (uint32_t)ov->offset;
    q.b_row = 1;
    q.tiles_m = (uint32_t)per_batch;
    q.tiles_n = 1;
    q.group_m = 1;
    q.split_stride = 0; /* the SwiGLU epilogue's uniform zero (ew_opaque) */
    if (p->bias) {
        q.bias_offset = (uint32_t)p->bias->offset;
        q.bias_row = mat_is_a ? 0u : (uint32_t)p->bias->strides[0];
    }
    matmul_fill_batches(p, om->batch_strides, ov->batch_strides, &q);
    matmul_problem bound = *p; /* the norm's weight takes the bias binding (4) */
    if (p->norm) {
        q.norm_eps = (float)p->norm_eps;
        q.norm_offset = (uint32_t)p->norm->offset;
        bound.bias = p->norm;
    }
    if (p->rope) {
        q.rope_offset = (uint32_t)p->rope->offset;
        q.rope_row = (uint32_t)p->rope->strides[0];
        q.rope_pass_begin = (uint32_t)p->rope_pass_begin;
        q.rope_pass_end = (uint32_t)p->rope_pass_end;
    }
    if (p->combine) { /* part_ml takes the rope table's binding (5); without a bias part_o fills binding 4 */
        q.rope_offset = p->combine->ml_off;
        q.rope_row = p->combine->chunks;
        bound.rope = &p->combine->part_ml;
        if (!p->bias) bound.bias = &p->combine->part_o;
    }
    return matmul_dispatch(wg, pipe, mat_is_a ? p->a : p->b, mat_is_a ? p->b : p->a, &bound, &q, per_batch * p->batches, op);
}


void matmul_plan_gemv(const webgpu_backend *wg, const matmul_problem *p, gemv_plan *g)
{
    const wgt_tensor_view *a = p->a, *b = p->b;
    int nd = a->ndim;
    g->mat_is_a = p->N == 1;
    const bool mat_is_a = g->mat_is_a;
    g->mat = mat_is_a ? a : b;
    g->vec = mat_is_a ? b : a;
    g->om = (matmul_operand){g->mat->offset, mat_is_a ? p->M : p->N,
                             mat_is_a ? a->strides[nd - 2] : b->strides[nd - 1], p->K,
                             mat_is_a ? a->strides[nd - 1] : b->strides[nd - 2], mat_is_a ? p->a_batch : p->b_batch};
    g->ov = (matmul_operand){g->vec->offset, 1, 0, p->K, mat_is_a ? b->strides[nd - 2] : a->strides[nd - 1],
                             mat_is_a ? p->b_batch : p->a_batch};
    /* contiguous outputs in the matrix (and not along k): the column kernel */
    g->kernel = (g->om.outer > 1 && g->om.outer_stride == 1 && !(g->om.k > 1 && g->om.k_stride == 1))
                    ? KERNEL_GEMV_COLS
                    : KERNEL_GEMV_ROWS;
    g->c = matmul_choose_gemv(wg, g->kernel, p->K);
    if (g->c && !matmul_config_fits(wg, g->c)) g->c = NULL;
    g->half = g->c && g->kernel == KERNEL_GEMV_ROWS && gemv_half_wanted(wg, p, g->mat, &g->om, &g->ov);
}

wgt_status matmul_run_gemv(webgpu_backend *wg, const matmul_problem *p, const char *op)
{
    const wgt_tensor_view *a = p->a;
    gemv_plan g;
    matmul_plan_gemv(wg, p, &g);
    const bool mat_is_a = g.mat_is_a;
    const wgt_tensor_view *mat = g.mat, *vec = g.vec;
    const matmul_operand om = g.om, ov = g.ov;
    const matmul_kernel kernel = g.kernel;
    const matmul_config *c = g.c;
    if (!c) return wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: no matrix-vector config fits this device", op);
    if (g.half) return matmul_run_gemv_half(wg, p, c, &om, &ov, mat_is_a, op);
    bool vec4;
    char key[160], consts[200];
    const char *file;
    int64_t per_batch;
    if (kernel == KERNEL_GEMV_ROWS) {
        vec4 = matmul_quads_aligned(p, &om, true) && matmul_quads_aligned(p, &ov, true);
        file = "matmul_gemv_rows";
        snprintf(consts, sizeof(consts), "const ROW_THREADS: u32 = %du;\nconst VEC: bool = %s;\n", c->threads,
                 vec4 ? "true" : "false");
        per_batch = matmul_ceil_div(om.outer, 256 / c->threads);
    } else {
        vec4 = matmul_quads_aligned(p, &om, false);
        file = "matmul_gemv_cols";
        snprintf(consts, sizeof(consts), "const COL_THREADS: u32 = %du;\nconst K_SPLIT: u32 = %du;\nconst VEC: bool = %s;\n",
                 c->threads, c->k_split, vec4 ? "true" : "false");
        per_batch = matmul_ceil_div(om.outer, 4 * (int64_t)c->threads);
    }
    snprintf(key, sizeof(key), "%s:%s:%s:v%d", file, matmul_dtype_key(a->dtype), c->name, vec4);
    webgpu_pipeline *pipe; /* the matrix is bound as a, the vector as b */
    wgt_status s = matmul_get_pipeline_ex(wg, p, key, file, a->dtype, mat->dtype, vec->dtype, consts, op, &pipe);
    if (s != WGT_OK) return s;

    matmul_params q;
    memset(&q, 0, sizeof(q));
    q.M = (uint32_t)om.outer;
    q.N = 1;
    q.K = (uint32_t)p->K;
    q.a_offset = (uint32_t)om.offset;
    q.a_row = (uint32_t)om.outer_stride;
    q.a_col = (uint32_t)om.k_stride;
    q.b_offset = (uint32_t)ov.offset;
    q.b_row = (uint32_t)ov.k_stride;
    q.tiles_m = (uint32_t)per_batch;
    q.tiles_n = 1;
    q.group_m = 1;
    if (p->bias) { /* the kernel's rows are out's rows (N == 1: one bias) or its columns (M == 1) */
        q.bias_offset = (uint32_t)p->bias->offset;
        q.bias_row = mat_is_a ? 0u : (uint32_t)p->bias->strides[0];
    }
    matmul_fill_batches(p, om.batch_strides, ov.batch_strides, &q);
    return matmul_dispatch(wg, pipe, mat, vec, p, &q, per_batch * p->batches, op);
}
