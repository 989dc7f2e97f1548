/*
 * QMATMUL on WebGPU: x [M, K] f32 times group-wise 8/4-bit weights [N, K]
 * (transposed) -> out [M, N] f32, dequantized inside the kernel
 * (kernels/quant_matmul.wgsl): one workgroup per output column and block of 4
 * rows of x, vec4<u32> weight loads, one scale per 32 weights. Decode (M = 1)
 * takes kernels/quant_gemv_rows.wgsl instead: ROW_THREADS invocations per
 * output column streaming its 16-byte code words, as the f16 decode GEMV
 * does (WGT_QUANT_GEMV=1: the former quant_gemv.wgsl, 16 output columns per
 * workgroup of 256, each invocation reusing a group's x for 4 columns;
 * WGT_QUANT_GEMV=0: quant_matmul for M = 1, to compare). Prefill (M >= QUANT_TILED_MIN_M)
 * takes kernels/quant_matmul_tiled.wgsl: a tiled GEMM whose weight tiles are
 * dequantized into workgroup memory, BM x BN outputs per workgroup, TM x TN
 * per invocation (WGT_QUANT_TILED=0 keeps quant_matmul, to compare;
 * WGT_QUANT_TILE=128x128, 128x64 or 64x64 forces a tile). With int8_x (MEDIUM
 * precision) one row takes quant_gemv_rows' INT8_X where x's codes fit its
 * workgroup memory, and every other call goes to webgpu_quant_int8.c.
 * INT8_X on an H200, Llama-3.2-1B shape, 512-token prompt, three alternated
 * rounds against the f32 path (WGT_LLAMA_PRECISION=highest): q4 decode
 * 1,162.1 / 1,161.8 / 1,158.7 tokens/s against 1,064.8 / 1,032.6 / 1,066.4,
 * q8 970.5 / 971.0 / 970.1 against 943.0 / 916.5 / 944.1
 * (bench/results/h200-2026-11-29m/p2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* Mirrors struct Params of quant_matmul.wgsl. */
typedef struct quant_params {
    uint32_t M, N, K, bits;
    uint32_t x_offset, q_offset, s_offset, out_offset; /* x, q in vec4 units; s, out in elements */
    uint32_t row_blocks;     /* quant_matmul: ceil(M / 4); quant_matmul_tiled: ceil(M / BM) */
    uint32_t tiles_n;        /* quant_matmul_tiled: ceil(N / BN) */
    uint32_t aux_offset;     /* quant_gemv_rows: the norm weight's or bias's first element */
    float eps;               /* quant_gemv_rows: the norm's */
    uint32_t rope_offset, rope_row, rope_pass_begin, rope_pass_end; /* quant_gemv_rows's rope epilogue */
} quant_params;

#define QUANT_ROWS 4       /* ROWS of quant_matmul */
#define QUANT_GEMV_ROWS 16 /* ROWS of quant_gemv: output columns per workgroup */
/* From this many rows of x the tiled kernel wins: quant_matmul reads the
 * weights once per 4 rows, the tiled one once per BM (a tile of 64 rows with
 * 8 filled still reads them once). */
#define QUANT_TILED_MIN_M 8

/* quant_matmul_tiled's tiles, 256 invocations each, largest first: 128 x 128
 * (8 x 8 outputs per invocation, as the f32 GEMM's best tile) needs 36 KiB
 * of workgroup memory (an H100 has 48, lavapipe 32); 128 x 64 (8 x 4) 27 KiB;
 * 64 x 64 (4 x 4) fills more SMs when the output is small. */
typedef struct quant_tile {
    int bm, bn, tm, tn;
} quant_tile;
static const quant_tile quant_tiles[] = {{128, 128, 8, 8}, {128, 64, 8, 4}, {64, 64, 4, 4}};
#define QUANT_N_TILES (int)(sizeof(quant_tiles) / sizeof(quant_tiles[0]))
/* Workgroups from which a large tile is taken: ~1.5 waves of an H100's 132
 * SMs (WebGPU does not say how many there are), as webgpu_matmul.c's ladder. */
#define QUANT_LARGE_TILE_MIN_WORKGROUPS 192

static uint64_t quant_tile_shared(const quant_tile *t) { return (uint64_t)(t->bm + t->bn) * (32 / 4 + 1) * 16; }

/* The tile for an M x N output: WGT_QUANT_TILE=<bm>x<bn> (a table entry) when
 * set and it fits the device (one that does not fit falls back: tests force
 * 128x128 on every device), else the largest that fits and gives enough
 * workgroups, else 64 x 64. NULL: WGT_QUANT_TILE names no entry. */
static const quant_tile *choose_tile(const webgpu_backend *wg, int64_t M, int64_t N)
{
    const uint64_t shared = wg->limits.maxComputeWorkgroupStorageSize;
    const char *env = wg->knobs.quant_tile;
    bool known = !*env;
    for (int i = 0; !known && i < QUANT_N_TILES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%dx%d", quant_tiles[i].bm, quant_tiles[i].bn);
        if (strcmp(env, name) != 0) continue;
        if (quant_tile_shared(&quant_tiles[i]) <= shared) return &quant_tiles[i];
        known = true;
    }
    if (!known) return NULL;
    for (int i = 0; i + 1 < QUANT_N_TILES; i++) {
        const quant_tile *t = &quant_tiles[i];
        int64_t tiles = ((M + t->bm - 1) / t->bm) * ((N + t->bn - 1) / t->bn);
        if (tiles >= QUANT_LARGE_TILE_MIN_WORKGROUPS && quant_tile_shared(t) <= shared) return t;
    }
    return &quant_tiles[QUANT_N_TILES - 1];
}

static bool contiguous_aligned(const wgt_tensor_view *v)
{
    return v->ndim == 2 && v->strides[1] == 1 && v->strides[0] == v->shape[1] && v->offset % 4 == 0;
}

/* Invocations a row (lanes) of quant_gemv_rows for N rows of K: 16, doubled
 * (up to 64) while the workgroups (256 invocations: 256 / lanes rows each)
 * would be fewer than 256, so a short matrix still spreads over the SMs; and
 * (gemv_row_unroll) two words in flight a lane. H200, Llama-3.2-1B's decode
 * products in one process, configs alternated after a warm-up (probe p7 of
 * bench/results/h200-2026-11-28f, ms; former choice -> 16 or 32 lanes, 2
 * words): q4 2048 x 2048 0.0085 -> 0.0067 (32), 3072 x 2048 0.0099 -> 0.0081
 * (32), 2048 x 8192 0.0134 -> 0.0114 (32), 16384 x 2048 0.0166 -> 0.0156
 * (16), 128256 x 2048 0.0791 -> 0.0765 (16); q8 3072 x 2048 0.0097 ->
 * 0.0085, 2048 x 8192 0.0162 -> 0.0122, 16384 x 2048 0.0164 -> 0.0158,
 * 128256 x 2048 0.0867 -> 0.0814. The former choice (lanes grown with the
 * row's words, one word in flight) is WGT_QUANT_GEMV_ROWS=words. */
static unsigned gemv_row_threads(const webgpu_backend *wg, int64_t N, int64_t K, int bits)
{
    if (wg->knobs.quant_gemv_rows[0]) return wg->knobs.quant_gemv_rows[0]; /* WGT_QUANT_GEMV_ROWS */
    unsigned threads = 16;
    if (wg->knobs.quant_gemv_by_words) {
        const int64_t words = K * bits / 128;
        while (threads < 128 && (int64_t)threads * 8 < words) threads *= 2;
        return threads;
    }
    while (threads < 64 && N * (int64_t)threads < 256 * 256) threads *= 2;
    return threads;
}

static unsigned gemv_row_unroll(const webgpu_backend *wg)
{
    if (wg->knobs.quant_gemv_rows[1]) return wg->knobs.quant_gemv_rows[1];
    return wg->knobs.quant_gemv_by_words ? 1 : 2;
}

/* vec4 slots of quant_gemv_rows's staged x (K / 4 and a padding slot per
 * word's x), 0 where they do not fit the workgroup memory (or are turned off)
 * next to the kernel's partial sums at any RPT (WEBGPU_GEMV_PARTIAL_BYTES):
 * counting RPT 1 there let 8-bit rows of K 9440-9600 (NVIDIA's 48 KiB; 6336
 * on lavapipe's 32) staged with RPT 2 ask for more than the device allows,
 * which the pipeline check refused (test_quant) */
static unsigned gemv_x_slots(const webgpu_backend *wg, int64_t K, int bits)
{
    const uint64_t per_word = (uint64_t)(128 / bits / 4), slots = (uint64_t)K / 4 + (uint64_t)K / 4 / per_word;
    const bool fits = slots * 16 + WEBGPU_GEMV_PARTIAL_BYTES <= wg->limits.maxComputeWorkgroupStorageSize;
    return wg->knobs.quant_gemv_shared && fits ? (unsigned)slots : 0;
}

/* Whether quant_gemv_rows can take one row of K with int8_x (INT8_X): x's
 * codes (32 bytes a group), each group's scale, code sums and max (36 bytes)
 * and, with the norm, the staged f32 row (gemv_x_slots) fit the workgroup
 * memory next to the partial sums. */
static bool gemv_int8_fits(const webgpu_backend *wg, int64_t K, int bits, bool norm)
{
    const uint64_t staged = norm ? (uint64_t)gemv_x_slots(wg, K, bits) * 16 : 0;
    return wg->knobs.quant_gemv == 2 && (!norm || staged > 0) &&
           (uint64_t)K / 32 * 68 + staged + WEBGPU_GEMV_PARTIAL_BYTES <= wg->limits.maxComputeWorkgroupStorageSize;
}

/* The fused calls of wgt_qlinear_ex (norm, bias, SwiGLU, f16 x) run only
 * through quant_gemv_rows with the row staged (with int8_x: its codes): one
 * row of x. */
static bool fused_supported(const webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *x = &call->inputs[0];
    const bool aux = call->quant.norm || call->quant.bias;
    if (call->n_inputs != 3 + aux || (call->quant.norm && call->quant.bias) || x->shape[0] != 1) return false;
    if (aux && (call->inputs[3].dtype != WGT_F32 || call->inputs[3].strides[0] != 1)) return false;
    if (call->quant.norm && call->inputs[3].offset % 4) return false; /* read as 4 floats per slot */
    if (call->quant.swiglu && (call->inputs[1].shape[0] % 2 ||
                               256 / gemv_row_threads(wg, call->inputs[1].shape[0], x->shape[1], call->quant.bits) < 2))
        return false;
    if (call->quant.int8_x) return gemv_int8_fits(wg, x->shape[1], call->quant.bits, call->quant.norm);
    return wg->knobs.quant_gemv == 2 && gemv_x_slots(wg, x->shape[1], call->quant.bits) > 0;
}

/* The attention prologue (wgt_attention_qlinear_ex; backend.h): q [1, H, 1,
 * D] whose call is the decode attention's, codes and scales as the rows
 * kernel reads them, the row within workgroup memory (quant_gemv_rows
 * stages it anyway: the partials are merged as it does, by x_load). */
static bool attention_supported(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const bool bias = call->quant.bias;
    const wgt_tensor_view *q = &call->inputs[0], *codes = &call->inputs[1], *s = &call->inputs[2];
    const wgt_tensor_view *out = &call->outputs[0];
    const int bits = call->quant.bits;
    if (call->n_inputs != 3 + webgpu_attention_prologue_kv(call) + bias || call->n_outputs != 1 || call->quant.norm ||
        call->quant.swiglu || call->quant.rope || (bits != 4 && bits != 8) || q->ndim != 4 ||
        q->shape[0] != 1 || q->shape[2] != 1 || wg->knobs.quant_gemv != 2)
        return false;
    const int64_t K = q->shape[1] * q->shape[3], N = codes->shape[0];
    if (codes->dtype != WGT_I32 || s->dtype != WGT_F32 || out->dtype != WGT_F32 || !contiguous_aligned(codes) ||
        codes->shape[1] != K * bits / 32 || s->ndim != 2 || s->shape[0] != N || s->shape[1] != K / 32 ||
        !wgt_view_is_contiguous(s) || K % 32 || out->ndim != 2 || out->shape[0] != 1 || out->shape[1] != N ||
        !wgt_view_is_contiguous(out) ||
        (call->quant.int8_x ? !gemv_int8_fits(wg, K, bits, false) : gemv_x_slots(wg, K, bits) == 0))
        return false;
    if (bias && (call->inputs[3].dtype != WGT_F32 || call->inputs[3].ndim != 1 || call->inputs[3].shape[0] != N ||
                 call->inputs[3].strides[0] != 1))
        return false;
    wgt_kernel_call attn;
    webgpu_attention_prologue_call(call, &attn);
    return webgpu_attention_prologue_keys_ok(wg, &attn, true) && webgpu_attention_decode_wanted(wg, &attn);
}

bool webgpu_quant_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->quant.attention) return attention_supported(wg, call);
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2];
    if (call->quant.rope) { /* the norm's fused call with the rope epilogue: quant_gemv_rows alone */
        const wgt_tensor_view *t = &call->inputs[4], *o = &call->outputs[0];
        const bool f16_ok = wg->has_f16 && !wg->knobs.disable_f16;
        if (!call->quant.norm || call->n_inputs != 5 || call->quant.swiglu || call->quant.bias || t->ndim != 2 ||
            t->shape[0] != 4 || t->strides[1] != 1 || (t->dtype != WGT_F32 && !(t->dtype == WGT_F16 && f16_ok)) ||
            (o->dtype != WGT_F32 && !(o->dtype == WGT_F16 && f16_ok)) || !wgt_view_is_contiguous(o) ||
            q->shape[0] % 2 || x->shape[0] != 1)
            return false;
        wgt_kernel_call plain = *call;
        plain.n_inputs = 4;
        plain.quant.rope = false;
        plain.outputs[0].dtype = WGT_F32;
        return webgpu_quant_supports(wg, &plain);
    }
    const bool fused = call->quant.norm || call->quant.bias || call->quant.swiglu || x->dtype == WGT_F16;
    return (x->dtype == WGT_F32 || x->dtype == WGT_F16) && q->dtype == WGT_I32 && s->dtype == WGT_F32 &&
           call->outputs[0].dtype == WGT_F32 && (call->quant.bits == 8 || call->quant.bits == 4) &&
           contiguous_aligned(x) && contiguous_aligned(q) && x->shape[1] % 32 == 0 &&
           (fused ? fused_supported(wg, call) : call->n_inputs == 3 && x->dtype == WGT_F32);
}

/* M = 1 through quant_gemv_rows.wgsl: ROW_THREADS invocations per output,
 * with wgt_qlinear_ex's fusions where the call has them; dp (the attention
 * prologue): x is merged from those partials as it is staged. */
static wgt_status run_gemv_rows(webgpu_backend *wg, const wgt_kernel_call *call, quant_params *p,
                                const webgpu_decode_partials *dp)
{
    const char *op = call->op_name;
    const bool x16 = !dp && call->inputs[0].dtype == WGT_F16, norm = call->quant.norm, bias = call->quant.bias;
    /* the attention prologue: combine_x4's CD4 = D / 4 and the rounding of the attention's output */
    const unsigned cd4 = dp ? dp->D / 4 : 0;
    const bool comb16 = dp && call->inputs[0].dtype == WGT_F16;
    const bool swiglu = call->quant.swiglu, rope = call->quant.rope;
    const unsigned threads = gemv_row_threads(wg, p->N, p->K, (int)p->bits);
    const unsigned unroll = gemv_row_unroll(wg);
    /* int8_x: x's codes in workgroup memory (and the f32 row only to normalize it) */
    const bool int8 = call->quant.int8_x;
    const unsigned xs = int8 && !norm ? 0 : gemv_x_slots(wg, p->K, (int)p->bits), xg = int8 ? p->K / 32 : 0;
    /* PRE: the first words before the prologue (INT8_X; WGT_QUANT_GEMV_PRE=0 turns it off). H200,
     * Llama-3.2-1B decode, three alternated rounds (bench/results/h200-2026-11-29m/p3): q8 979.9 / 980.4 /
     * 978.0 tokens/s against 950.3 / 968.1 / 958.0, q4 1,190.6 / 1,187.3 / 1,192.3 against 997.4 / 1,182.8 /
     * 1,188.2. (The f32 path's PRE made q4 22% slower on an H100: matmul_gemv_half's note.) */
    const bool pre = int8 && wg->knobs.quant_gemv_pre;
    /* the rope epilogue: an invocation's two rows are a head's i and i + D/2 */
    const unsigned rpt = rope ? 2 : webgpu_gemv_rows_per_thread(wg, p->N, 256 / threads, 1);
    const wgt_tensor_view *table = rope ? &call->inputs[4] : NULL;
    const bool out16 = call->outputs[0].dtype == WGT_F16, table16 = table && table->dtype == WGT_F16;
    const unsigned d2 = table ? (unsigned)table->shape[1] : 1;
    char key[160];
    snprintf(key, sizeof(key), "quant_gemv_rows:%u:%u:%u:%u:%d%d%d%d:rpt%u:rope%d%d%d%u:comb%u%d:i8%u%d", threads,
             unroll, p->bits, xs, x16, norm, bias, swiglu, rpt, rope, out16, table16, d2, cd4, comb16, xg, pre);
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, key);
    if (!pipe) {
        const char *body = webgpu_kernel_source("quant_gemv_rows"), *codes = webgpu_kernel_source("quant_codes");
        const char *ew = rope && out16 ? webgpu_kernel_source("elementwise_common") : "";
        const char *group8 = webgpu_kernel_source("quant_q8_group"); /* INT8_X's rule; unused otherwise */
        if (!body || !codes || !ew || !group8)
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel quant_gemv_rows is not embedded", op);
        /* out, and with ROPE the table and the epilogue's helpers (ew_opaque's
         * uniform zero is params._p0) */
        char rope_text[768];
        snprintf(rope_text, sizeof(rope_text),
                 "alias OUT_T = %s;\n@group(0) @binding(4) var<storage, read_write> out: array<OUT_T>;\n"
                 "const ROPE: bool = %s;\nconst D2: u32 = %uu;\n%s%s%s",
                 out16 ? "f16" : "f32", rope ? "true" : "false", d2,
                 rope ? "fn ew_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | params._p0); }\n"
                        "fn rope_load(i: u32) -> f32 { return f32(rope_tab[i]); }\n"
                      : "fn ew_opaque(x: f32) -> f32 { return x; }\nfn rope_load(i: u32) -> f32 { return 0.0; }\n",
                 !rope ? "" : table16 ? "@group(0) @binding(6) var<storage, read> rope_tab: array<f16>;\n"
                                      : "@group(0) @binding(6) var<storage, read> rope_tab: array<f32>;\n",
                 out16 ? "fn rope_store(v: f32) -> OUT_T { return f16(ew_f16_to_f32_exact(ew_f32_to_f16_exact(v))); }\n"
                       : "fn rope_store(v: f32) -> OUT_T { return v; }\n");
        /* x: the attention prologue's partials (part_o as x, part_ml in the
         * table's binding 6; x_offset = part_o's first vec4, rope_offset
         * part_ml's first pair, rope_row the chunks), an f16 or an f32 row */
        char comb_text[900];
        snprintf(comb_text, sizeof(comb_text),
                 "@group(0) @binding(1) var<storage, read> part_o: array<vec4<f32>>;\n"
                 "@group(0) @binding(6) var<storage, read> part_ml: array<vec2<f32>>;\n"
                 "fn comb_o(i: u32) -> vec4<f32> { return part_o[i]; }\n"
                 "fn comb_ml(i: u32) -> vec2<f32> { return part_ml[i]; }\n"
                 "const CD4: u32 = %uu;\nconst COMBINE_F16: bool = %s;\n"
                 "fn x_load(i: u32) -> vec4<f32> {\n"
                 "    return combine_x4(i - params.x_offset, params.x_offset, params.rope_offset, params.rope_row);\n}\n",
                 cd4, comb16 ? "true" : "false");
        const char *x_text = dp ? comb_text
                             : x16 ? "@group(0) @binding(1) var<storage, read> x: array<vec2<u32>>;   // f16, 4 a slot\n"
                                     "fn x_load(i: u32) -> vec4<f32> {\n"
                                     "    let w = x[i];\n"
                                     "    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));\n}\n"
                                   : "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;\n"
                                     "fn x_load(i: u32) -> vec4<f32> { return x[i]; }\n";
        char prelude[2400];
        snprintf(prelude, sizeof(prelude),
                 "%sconst ROW_THREADS: u32 = %uu;\nconst RPT: u32 = %uu;\nconst UNROLL: u32 = %uu;\nconst BITS: u32 = %uu;\n"
                 "const XS: u32 = %uu;\nconst NORM: bool = %s;\nconst BIAS: bool = %s;\nconst SWIGLU: bool = %s;\n"
                 "const INT8_X: bool = %s;\nconst XG: u32 = %uu;\nconst PRE: bool = %s;\n%s%s",
                 out16 || table16 ? "enable f16;\n" : "", threads, rpt, unroll, p->bits, xs, norm ? "true" : "false",
                 bias ? "true" : "false", swiglu ? "true" : "false", int8 ? "true" : "false", xg,
                 pre ? "true" : "false", rope_text, x_text);
        const char *rotate = webgpu_kernel_source("gemv_rope"); /* rope_rotate, referenced by every variant */
        if (!rotate) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: gemv_rope.wgsl is not embedded", op);
        const char *combine = dp ? webgpu_kernel_source("attention_combine_x") : "";
        if (!combine) return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: attention_combine_x.wgsl is not embedded", op);
        size_t n = strlen(prelude) + strlen(ew) + strlen(codes) + strlen(group8) + strlen(body) + strlen(rotate) +
                   strlen(combine) + 2;
        char *source = malloc(n);
        if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        snprintf(source, n, "%s%s\n%s%s%s%s%s", prelude, ew, codes, group8, body, rotate, combine);
        /* x, q, scales, out, aux, table (the attention prologue: x is part_o, the table part_ml) */
        static const bool read_only[6] = {true, true, true, false, true, true};
        wgt_status st = webgpu_pipeline_create_ex(wg, key, source, NULL, rope || dp ? 6 : 5, read_only, true, false,
                                                  false, op, &pipe);
        free(source);
        if (st != WGT_OK) return st;
    }
    const wgt_tensor_view *x = dp ? &dp->part_o : &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2];
    const wgt_tensor_view *out = &call->outputs[0];
    /* without a norm weight or bias the kernel still declares aux: the scales stand in, never read */
    const wgt_tensor_view *aux = norm || bias ? &call->inputs[3] : s;
    p->aux_offset = norm || bias ? (uint32_t)aux->offset : 0;
    p->eps = call->quant.eps;
    if (table) {
        p->rope_offset = (uint32_t)table->offset;
        p->rope_row = (uint32_t)table->strides[0];
        p->rope_pass_begin = (uint32_t)call->quant.rope_pass_begin;
        p->rope_pass_end = (uint32_t)call->quant.rope_pass_end;
    }
    if (dp) {
        p->x_offset = dp->o_off;
        p->rope_offset = dp->ml_off;
        p->rope_row = dp->chunks;
        table = &dp->part_ml;
    }
    uint32_t gx, gy;
    const uint64_t rows = (uint64_t)(256 / threads) * rpt; /* per workgroup */
    wgt_status st = webgpu_grid(wg, ((uint64_t)p->N + rows - 1) / rows, &gx, &gy, op);
    WGPUBuffer buffers[6] = {webgpu_view_buffer(x), webgpu_view_buffer(q), webgpu_view_buffer(s),
                             webgpu_view_buffer(out), webgpu_view_buffer(aux), table ? webgpu_view_buffer(table) : NULL};
    if (st == WGT_OK) st = webgpu_dispatch(wg, pipe, buffers, table ? 6 : 5, p, sizeof(*p), gx, gy, 1, op);
    return st;
}

/* QMATMUL with the attention prologue (attention_supported): the decode
 * attention's first pass, then quant_gemv_rows merging its partials into the
 * staged row (webgpu_attention_linear.c says why). */
static wgt_status run_attention(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const wgt_tensor_view *q = &call->inputs[0], *codes = &call->inputs[1], *s = &call->inputs[2];
    wgt_kernel_call attn;
    webgpu_attention_prologue_call(call, &attn);
    webgpu_decode_partials dp;
    wgt_status st = webgpu_attention_decode_partials(wg, &attn, &dp);
    quant_params p;
    memset(&p, 0, sizeof(p));
    p.M = 1, p.N = (uint32_t)codes->shape[0], p.K = (uint32_t)(q->shape[1] * q->shape[3]);
    p.bits = (uint32_t)call->quant.bits;
    p.q_offset = (uint32_t)(codes->offset / 4), p.s_offset = (uint32_t)s->offset;
    p.out_offset = (uint32_t)call->outputs[0].offset;
    p.row_blocks = 1;
    if (st == WGT_OK) st = run_gemv_rows(wg, call, &p, &dp);
    webgpu_decode_partials_release(wg, &dp);
    return st;
}

wgt_status webgpu_quant_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    const char *op = call->op_name;
    wgt_context *ctx = wg->base.ctx;
    if (!webgpu_quant_supports(wg, call))
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: quantized matmul needs f32 x and i32 weights, contiguous with "
                         "offsets that are multiples of 4, K %% 32 == 0, 8 or 4 bits (fused: one row whose x fits "
                         "the workgroup memory)", op);
    if (call->quant.attention) return run_attention(wg, call);
    const wgt_tensor_view *x = &call->inputs[0], *q = &call->inputs[1], *s = &call->inputs[2], *out = &call->outputs[0];
    const int64_t M = x->shape[0], K = x->shape[1], N = q->shape[0];
    if (M == 0 || N == 0) return WGT_OK;
    const uint64_t limit = UINT32_MAX;
    if ((uint64_t)(M * K) >= limit || (uint64_t)(N * K) >= limit || (uint64_t)(M * N) >= limit ||
        (uint64_t)x->offset >= limit || (uint64_t)q->offset >= limit || (uint64_t)s->offset + (uint64_t)N * (K / 32) >= limit ||
        (uint64_t)out->offset + (uint64_t)(M * N) >= limit)
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: [%lld, %lld] x [%lld, %lld] exceeds 2^32 elements", op,
                         (long long)M, (long long)K, (long long)N, (long long)K);
    /* int8_x: one row through quant_gemv_rows where its codes fit (INT8_X), else two passes */
    if (call->quant.int8_x && !(M == 1 && gemv_int8_fits(wg, K, call->quant.bits, call->quant.norm)))
        return webgpu_quant_run_int8_x(wg, call);
    quant_params p;
    memset(&p, 0, sizeof(p));
    p.M = (uint32_t)M, p.N = (uint32_t)N, p.K = (uint32_t)K, p.bits = (uint32_t)call->quant.bits;
    p.x_offset = (uint32_t)(x->offset / 4), p.q_offset = (uint32_t)(q->offset / 4);
    p.s_offset = (uint32_t)s->offset, p.out_offset = (uint32_t)out->offset;
    p.row_blocks = (uint32_t)((M + QUANT_ROWS - 1) / QUANT_ROWS);
    const bool gemv_rows = M == 1 && (wg->knobs.quant_gemv == 2 || call->n_inputs >= 4 || call->quant.swiglu ||
                                      x->dtype == WGT_F16 || call->quant.int8_x);
    const bool gemv = M == 1 && wg->knobs.quant_gemv == 1;
    const bool tiled = M >= QUANT_TILED_MIN_M && wg->knobs.quant_tiled;
    if (gemv_rows) return run_gemv_rows(wg, call, &p, NULL);
    const char *kernel = gemv ? "quant_gemv" : tiled ? "quant_matmul_tiled" : "quant_matmul";
    const quant_tile *tile = tiled ? choose_tile(wg, M, N) : NULL;
    if (tiled && !tile)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: [%lld, %lld] x [%lld, %lld]^T: WGT_QUANT_TILE=\"%s\" "
                         "names no tile (128x128, 128x64 or 64x64)", op, (long long)M, (long long)K, (long long)N,
                         (long long)K, wg->knobs.quant_tile);
    char key[96];
    if (tiled) snprintf(key, sizeof(key), "%s:%dx%d:%d", kernel, tile->bm, tile->bn, call->quant.bits);
    else snprintf(key, sizeof(key), "%s", kernel);
    webgpu_pipeline *pipe = webgpu_pipeline_find(wg, key);
    wgt_status st = WGT_OK;
    if (!pipe) {
        const char *body = webgpu_kernel_source(kernel), *codes = webgpu_kernel_source("quant_codes");
        if (!body || !codes) return wgt_error(ctx, WGT_ERR_INTERNAL, "%s: kernel %s is not embedded", op, kernel);
        char prelude[160] = "";
        if (tiled)
            snprintf(prelude, sizeof(prelude), "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst TM: u32 = %du;\n"
                     "const TN: u32 = %du;\nconst BITS: u32 = %du;\n", tile->bm, tile->bn, tile->tm, tile->tn,
                     call->quant.bits);
        size_t n = strlen(prelude) + strlen(codes) + strlen(body) + 1;
        char *source = malloc(n);
        if (!source) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        snprintf(source, n, "%s%s%s", prelude, codes, body); /* the code unpacking first (quant_codes.wgsl) */
        st = webgpu_pipeline_create(wg, key, source, NULL, 3, 1, true, false, op, &pipe);
        free(source);
        if (st != WGT_OK) return st;
    }
    uint64_t groups;
    if (gemv) groups = (uint64_t)(N + QUANT_GEMV_ROWS - 1) / QUANT_GEMV_ROWS; /* QUANT_GEMV_ROWS columns each */
    else if (!tiled) groups = (uint64_t)N * p.row_blocks;                   /* a column and 4 rows each */
    else {                                                                     /* a BM x BN tile each */
        p.row_blocks = (uint32_t)((M + tile->bm - 1) / tile->bm);
        p.tiles_n = (uint32_t)((N + tile->bn - 1) / tile->bn);
        groups = (uint64_t)p.row_blocks * p.tiles_n;
    }
    uint32_t gx, gy;
    st = webgpu_grid(wg, groups, &gx, &gy, op);
    WGPUBuffer buffers[4] = {webgpu_view_buffer(x), webgpu_view_buffer(q), webgpu_view_buffer(s),
                             webgpu_view_buffer(out)};
    if (st == WGT_OK) st = webgpu_dispatch(wg, pipe, buffers, 4, &p, sizeof(p), gx, gy, 1, op);
    return st;
}
