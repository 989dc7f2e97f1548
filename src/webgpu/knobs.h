/*
 * The WebGPU backend's kernel-choice knobs: environment variables that switch
 * a kernel, a tile or a former path (for A/B timing, tuning on a new GPU and
 * tests). They are read once, when the backend (the context) is created
 * (webgpu_knobs_read, called by wgt_webgpu_backend_create), into
 * webgpu_backend.knobs; the kernels read that struct, never the environment.
 * To try another setting, set the variable and create a new context.
 *
 * Each field says which variable fills it, what it switches and its value
 * when the variable is unset. The names and values are the ones README.md and
 * docs/performance.md list. Checks that need the device (limits) or a file's
 * own tables stay at the call site.
 */
#ifndef WGT_WEBGPU_KNOBS_H
#define WGT_WEBGPU_KNOBS_H

#include <stdbool.h>
#include <stdint.h>

/* WGT_ATTENTION_FORWARD: which forward kernel runs. */
typedef enum {
    WEBGPU_ATTN_FORWARD_DEFAULT, /* unset (or another value): flash on a software adapter, else quad
                                  * with subgroups and D <= 64, else rows */
    WEBGPU_ATTN_FORWARD_ROWS,    /* "rows": attention_forward, one row per invocation */
    WEBGPU_ATTN_FORWARD_FLASH,   /* "flash": attention_forward_flash */
    WEBGPU_ATTN_FORWARD_TILED,   /* "tiled" */
    WEBGPU_ATTN_FORWARD_QUAD,    /* "quad": attention_forward_quad (needs subgroups) */
} webgpu_attn_forward;

/* WGT_ATTENTION_BACKWARD: which backward kernels run. */
typedef enum {
    WEBGPU_ATTN_BACKWARD_DEFAULT,  /* unset: register-blocked on a software adapter, else fused where its dq
                                    * partials are small (webgpu_attention.c), else dkdv */
    WEBGPU_ATTN_BACKWARD_DKDV,     /* "dkdv": dk and dv in one pass */
    WEBGPU_ATTN_BACKWARD_TILED,    /* "tiled": both register-blocked */
    WEBGPU_ATTN_BACKWARD_KV_TILED, /* "kv_tiled" */
    WEBGPU_ATTN_BACKWARD_Q_TILED,  /* "q_tiled" */
    WEBGPU_ATTN_BACKWARD_FUSED,    /* "fused": dk, dv and dq partials in one register-blocked pass (D <= 64) */
    WEBGPU_ATTN_BACKWARD_ROWS,     /* "rows" or any other value: one row per invocation (the former GPU default) */
} webgpu_attn_backward;

/* WGT_DECODE_ATTN: the decode attention kernel. */
typedef enum {
    WEBGPU_DECODE_ATTN_AUTO,   /* unset or another value: f16 inputs, or f32 with many keys */
    WEBGPU_DECODE_ATTN_OFF,    /* "0": never (the general kernels) */
    WEBGPU_DECODE_ATTN_FORCED, /* "1": whenever the shapes allow, however few the keys */
} webgpu_decode_attn;

typedef struct webgpu_knobs {
    /* ---- general (webgpu_elementwise.c, webgpu_transpose.c, execution.c) */
    bool disable_f16;          /* WGT_WEBGPU_DISABLE_F16 set, not "" or "0": packed f16 (no f16 stores, no
                                * hardware f16 conversions) even where shader-f16 exists; default false */
    bool philox_mul16;         /* WGT_PHILOX_INT64=0: Philox's 32 x 32 -> 64-bit products from 16-bit halves
                                * (philox_mul16.wgsl) even where the adapter has 64-bit integers
                                * (philox_mul64.wgsl); default false */
    uint64_t grid_limit;       /* WGT_WEBGPU_GRID_LIMIT=<n>: elementwise and transpose grids fold into 2-D rows
                                * of n workgroups sooner (a testing aid); default 0: only past the device limit */
    uint32_t bind_group_slots; /* WGT_BIND_GROUP_CACHE=n in [16, WEBGPU_BIND_GROUP_CACHE]: slots of the bind
                                * group cache in use; default WEBGPU_BIND_GROUP_SLOTS (4096; 256 before) */
    uint32_t batch_dispatches; /* WGT_BATCH_DISPATCHES=n in [1, WEBGPU_BATCH_DISPATCHES_MAX]: submit every n
                                * dispatches; default (unset or out of range) WEBGPU_BATCH_DISPATCHES (64) */
    int transpose_tile, transpose_rows; /* WGT_WEBGPU_TRANSPOSE=TxY: the transpose's tile and workgroup rows
                                * where the device allows them; default 0, 0: 32 x 8 (with vec4 loads and
                                * stores: 32 x 32 tiles, 32 Y invocations) */
    bool transpose_vec4;       /* WGT_TRANSPOSE_VEC4=0: aligned transposes one u32 a lane as well
                                * (transpose_tiled.wgsl, not transpose_tiled_vec4.wgsl); default true */
    uint32_t norm_threads;     /* WGT_WEBGPU_NORM_THREADS=64|128|256: threads per row of the register-cached
                                * norm kernels; default 0 (another value too): chosen from the row */
    int softmax_cache;         /* WGT_WEBGPU_SOFTMAX_CACHE=<n>: the most vec4 per thread of the register-cached
                                * softmax (0: that kernel off; capped at the kernel's 8); default -1: 8 */

    /* ---- GEMM (webgpu_matmul.c) */
    char matmul_config[64];    /* WGT_MATMUL_CONFIG=<name>: force that tile config where it is of the kernel
                                * kind and fits; default "": the heuristic / tuned choice */
    int64_t splitk;            /* WGT_SPLITK=<parts>: force that many K parts (0 or 1: off); default -1
                                * (unset, empty or malformed): automatic */
    int64_t splitk_target;     /* WGT_SPLITK_TARGET=<workgroups> the automatic split-K aims at; default -1
                                * (unset, empty, malformed or 0): SPLITK_TARGET (264) */
    bool splitk_malformed;     /* WGT_SPLITK or WGT_SPLITK_TARGET is not a count in [0, 1000000]: every tiled
                                * product fails with WGT_ERR_INVALID_ARGUMENT quoting both texts */
    char splitk_text[32], splitk_target_text[32]; /* those texts, for that message */
    int matmul_half;           /* WGT_MATMUL_HALF: unset (-1) f16 GEMMs multiply in f16 where the call allows it
                                * (wgt_set_matmul_precision MEDIUM), 0 never, 1 always (A/B timing) */
    bool gemv_half;            /* WGT_GEMV_HALF=0 turns off matmul_gemv_half (16-byte loads of f16
                                * matrices) for matmul_gemv_rows; default true */
    bool gemv_no_prefetch;     /* WGT_GEMV_PREFETCH=0: matmul_gemv_half loads its weights after the
                                * norm prologue, not before (to time the difference) */
    unsigned gemv_rpt;         /* WGT_GEMV_RPT=1|2|4: rows per invocation of matmul_gemv_half and
                                * quant_gemv_rows; 0 (unset): by the shape (gemv_rows_per_thread) */
    bool matmul_f16_emulate;   /* WGT_MATMUL_F16_EMULATE=1: f16 products through f32 temporaries as on a
                                * device without shader-f16; default false */
    /* WGT_MATMUL_SHAPE_RULES: the GEMM heuristic's rules for the shapes of a GPT step (webgpu_matmul.c);
     * unset, "1" or "all": every rule; "0": none (the previous heuristic); else the named ones
     * ("layout", "waves", "pad", "narrow" in any text) */
    bool matmul_k_layout;      /* "layout": products with N < 1024 read both operands along k */
    bool matmul_split_waves;   /* "waves": the split-K count that fills whole waves of workgroups */
    bool matmul_pad_ladder;    /* "pad": keep a tile when the next smaller one pads the output alike */
    bool matmul_narrow_tiles;  /* "narrow": dy W with N < 1024 in 64 x 128 tiles of 128 invocations, W as it is */
    bool gelu_epilogue;        /* WGT_GELU_EPILOGUE=0: MATMUL's GELU-gradient epilogue as the product and an
                                * elementwise call, not in the tiled GEMM's epilogue; default true */

    /* ---- convolution (webgpu_conv.c) */
    char conv_tile[16];        /* WGT_CONV_TILE=<name> (64, 128, 64x128, 128x64, 16x256, 8x512): force that
                                * tile; "old": the former rule (128 x 128 or 64 x 64, BK 16, no direct input
                                * gradient); default "": the modelled cheapest */
    uint32_t conv_bk;          /* WGT_CONV_BK=16: slices of 16 instead of the default 8 */
    uint64_t conv_splits;      /* WGT_CONV_SPLITK=<n> > 0: force n splits of the reduction; default 0: chosen */
    bool conv_own_splitk;      /* WGT_CONV_SPLITK=0 turns the backend's split-K off (the front-end then splits
                                * the weight gradient: the former path); default true */
    uint64_t conv_split_target; /* WGT_CONV_SPLIT_TARGET=<n> > 0: workgroups split-K aims at; default 0:
                                 * CONV_SPLIT_TARGET (512) */
    bool conv_loads;           /* WGT_CONV_LOADS=0: the former loads (no padding, B not along r); default true */
    bool conv_stem;            /* WGT_CONV_STEM=0: no few-row tiles and no direct input gradient; default true */
    bool conv_rtab;            /* WGT_CONV_RTAB=0: no r_info table in workgroup memory; default true */
    bool conv_dbuf;            /* WGT_CONV_DBUF=0: no double buffering; default true */
    bool conv_phases;          /* WGT_CONV_PHASES=0: the input gradient in one GEMM, not one per stride
                                * phase; default true */
    bool conv_debug;           /* WGT_CONV_DEBUG set (any value): print every call's plan to stderr;
                                * default false */
    /* WGT_CONV_V2: the second convolution path, in parts, for A/B timing (webgpu_conv.c):
     * "1" or "all": reduce, waves, stem, ctab, pool; else a comma list of: "reduce" (split-K sums by
     * conv_splitk_sum.wgsl, an invocation per element, for large outputs or few splits), "waves" (the
     * splits of 8 x 8 tiles of 256 invocations chosen by whole waves of WGT_CONV_SLOTS workgroups),
     * "stem" (input gradients of <= 4 channels per group by conv_stem_dx.wgsl), "ctab" (conv_gemm's B
     * columns from a workgroup table, not registers, for blocks under 8 x 8), "pool" (pooling backward
     * without dilation finds its windows as ranges, conv_pool_backward.wgsl RANGES), "tiles" (not in "all":
     * tiles of 8 x 8 outputs per invocation with 64 or 128 invocations, 64x128w, 128x64w, 64x64w);
     * "0": none (the first path); default unset: "all" (faster in every alternated H100 run: ResNet-18
     * step 28.7-29.0 ms against 32.5-32.8, each 3x3 and 7x7 layer 10-45% faster) */
    bool conv_v2_reduce, conv_v2_tiles, conv_v2_waves, conv_v2_stem, conv_v2_ctab, conv_v2_pool;
    uint64_t conv_slots;       /* WGT_CONV_SLOTS=<n>: workgroups of 256 invocations the GPU runs at once,
                                * for "waves"; default 0: 264 (two per SM of an H100) */
    int conv_winograd;         /* WGT_CONV_WINOGRAD: 3x3 stride-1 convolutions by Winograd F(4x4, 3x3)
                                * (webgpu_conv_winograd.c): "0" never (the implicit GEMM), "all" whatever
                                * the channel counts; default 1: where both have at least 32 channels */
    bool pool_tiles;           /* WGT_POOL_TILES: max pooling without dilation by
                                * conv_pool_max_rows.wgsl (4 outputs per invocation) and
                                * conv_pool_backward_max.wgsl (2 x 4 input elements per invocation)
                                * where the widths are multiples of 4 (webgpu_conv_pool.c); "0": one
                                * per element; default on */
    bool bn_stream;            /* WGT_BN_STREAM: batch norm walks its chunk with a running (n, l)
                                * position and 4 loads in flight per invocation, not a division per
                                * element (conv_bn_common.wgsl STREAM); "0": off; default on */
    bool bn_welford;           /* WGT_BN_WELFORD: batch norm forward's chunk statistics in one pass
                                * (Welford per invocation, Chan over the workgroup), not two
                                * (conv_bn_partials.wgsl WELFORD); "0": two passes; default on */

    /* ---- attention (webgpu_attention.c, webgpu_attention_decode.c) */
    bool attention_tiles_set;  /* WGT_ATTENTION_TILES="rows,keys,kv_keys,kv_rows,joint_d4" (five counts):   */
    unsigned attention_tiles[5]; /* replace the default tiles where the first four are powers of two in
                                  * [4, 1024]; default unset: the adapter's defaults */
    webgpu_attn_forward attention_forward;   /* WGT_ATTENTION_FORWARD, above */
    webgpu_attn_backward attention_backward; /* WGT_ATTENTION_BACKWARD, above */
    bool attention_dkdv_tiles_set; /* WGT_ATTENTION_DKDV_TILES="bk,bq": the dk/dv kernel's tiles where    */
    unsigned attention_dkdv_tiles[2]; /* powers of two (bk >= 8); default unset: 64, 32 */
    bool attention_dropout_mask; /* WGT_ATTENTION_DROPOUT_MASK=0: the dq kernel draws the dropout mask again
                                  * instead of reading dk/dv's bits; default true */
    unsigned attention_fused_tile; /* WGT_ATTENTION_FUSED_TILE=16 or 32: keys (= rows) per block of
                                    * attention_backward_fused; default 32 (other values: 32) */
    bool attention_f16_copies; /* WGT_ATTENTION_F16_COPIES=1: the attention forward copies f16 q, k, v to f32 first
                                  (before the fifteenth session) instead of reading them in place */
    unsigned attention_quad_rows; /* WGT_ATTENTION_QUAD_ROWS=2|4: rows a quad of attention_forward_quad;
                                   * default 2 */
    unsigned attention_order[2]; /* WGT_ATTENTION_ORDER="f,b": the causal quad forward (f) and fused
                                  * backward (b) start the workgroups with the most work first, in groups
                                  * of n (b, head) pairs (attention_common.wgsl block_order), n in
                                  * [1, 65536] (past the pairs: one group), 0: pair-major order; one
                                  * number sets both; default 65536,64 (H200, bench/results/
                                  * h200-2026-11-28g p2, p3) */
    webgpu_decode_attn decode_attn; /* WGT_DECODE_ATTN, above */
    bool decode_combine_split;   /* WGT_DECODE_COMBINE_SPLIT=0: the decode attention's combine one invocation
                                  * per column pair at any number of chunks; default true (a workgroup a row
                                  * past 32 chunks, webgpu_attention_decode.c) */
    int64_t attention_fold_keys; /* WGT_ATTENTION_FOLD_KEYS=n: the attention prologue of a projection (its
                                  * combine folded into the GEMV, webgpu_attention_linear.c) up to n keys,
                                  * 0 never; default -1: up to 768 keys with f16 weights, 2048 quantized */

    /* ---- quantized matmul (webgpu_quant.c) */
    char quant_tile[32];       /* WGT_QUANT_TILE=<bm>x<bn> (128x128, 128x64, 64x64): force that tile where it
                                * fits (a name of no tile is an error); default "": chosen */
    int quant_gemv;            /* WGT_QUANT_GEMV: one-row products (decode) through 0 the general kernel,
                                * 1 quant_gemv (4 rows per invocation), 2 quant_gemv_rows (invocations per
                                * row, 16-byte words); default 2 */
    unsigned quant_gemv_rows[2]; /* WGT_QUANT_GEMV_ROWS="threads,unroll": quant_gemv_rows's invocations per
                                  * row (a power of two <= 256) and words in flight (1-8); default 0,0: chosen */
    bool quant_gemv_by_words;  /* WGT_QUANT_GEMV_ROWS=words: the former choice (lanes by the row's words,
                                * one word in flight), to compare; default false */
    bool quant_gemv_pre;       /* WGT_QUANT_GEMV_PRE=0: quant_gemv_rows with int8 x loads no words before its
                                  prologue */
    bool quant_gemv_shared;    /* WGT_QUANT_GEMV_SHARED=0: quant_gemv_rows reads x from storage, not staged in
                                * workgroup memory; default true */
    char quant_dp4a_tile[32];  /* WGT_QUANT_DP4A_TILE=<bm>x<bn>: the int8-x GEMM's tile (webgpu_quant_int8.c) */
    unsigned quant_dp4a_gps;   /* WGT_QUANT_DP4A_GPS=1|2|4: its quantization groups per slice (0: default) */
    bool quant_tiled;          /* WGT_QUANT_TILED=0: prefill through the per-column kernel; default true */

    /* ---- indexing (webgpu_indexing.c) */
    bool scatter_sorted;       /* WGT_SCATTER_SORTED starting with '0': the atomic scatter_add instead of the
                                * sorted path; default true */
    bool norm_subgroup;        /* WGT_NORM_SUBGROUP=0: the norm forward a row per workgroup even with subgroups;
                                * default true */
    bool gather_rows;          /* WGT_GATHER_ROWS=0: whole-row gathers (embeddings) through the generic kernel;
                                * default true */
} webgpu_knobs;

/* Fills k from the environment (every field; defaults where unset). */
void webgpu_knobs_read(webgpu_knobs *k);

#endif
