/* Private layout of the Llama model and its KV cache, shared by llama.c
 * (loading) and llama_forward.c (the forward pass). */
#ifndef WGT_MODELS_LLAMA_INTERNAL_H
#define WGT_MODELS_LLAMA_INTERNAL_H

#include "llama.h"

/* Longest context with llama3 rope scaling (its cos/sin tables: 2 x rows x D f32). */
#define LLAMA_ROPE_TABLE_ROWS 32768

typedef struct llama_layer {
    wgt_tensor *attn_norm, *mlp_norm;         /* [C] f32 */
    wgt_tensor *wq, *wk, *wv, *wo;            /* [out, in] */
    wgt_tensor *bq, *bk, *bv;                 /* f32 or NULL */
    wgt_tensor *q_norm, *k_norm;              /* [D] f32 (Qwen3) or NULL */
    wgt_tensor *w_gate, *w_up, *w_down;
    /* quantized weights: the group scales of wq .. w_down (NULL otherwise) */
    wgt_tensor *sq, *sk, *sv, *so, *s_gate, *s_up, *s_down;
    /* After loading, q/k/v and gate/up are joined along their output rows
     * (and the separate tensors dropped): one GEMV each instead of three and
     * two per decode step. Quantized rows concatenate (interleave) as they
     * are (the groups run along the input dim). */
    wgt_tensor *w_qkv, *s_qkv, *b_qkv;        /* [(H + 2 Hkv) D, C]: q | k | v, or k | v | q
                                                 with kv_first (the model's) */
    wgt_tensor *w_gate_up, *s_gate_up;        /* [2 F, C]: gate row i at 2i, up row i at 2i + 1
                                                 (interleaved: wgt_linear_swiglu_ex in decode) */
} llama_layer;

struct llama_model {
    wgt_context *ctx;
    llama_config cfg;
    llama_weights weights;
    wgt_dtype wdtype;                         /* F32 or F16 */
    llama_layer *layers;
    int bits;                                 /* 8 / 4: quantized projections, 0: float */
    wgt_tensor *embed, *norm, *head;          /* head == embed when tied and not quantized */
    wgt_tensor *head_scales;                  /* quantized head (a quantized copy of embed when tied) */
    /* llama3 scaling: rotation factors of a head's first and second half,
     * lo = (cos, sin), hi = (-sin, cos) [positions, 2, D/2] (llama.c's
     * rope_tables; f16 for f16 weights, else f32); NULL otherwise. Both are
     * views of rope_tab [positions, 4, D/2] (lo's two rows, then hi's): a
     * position's [4, D/2] is the table of wgt_rms_norm_linear_rope_into. */
    wgt_tensor *rope_tab, *rope_lo, *rope_hi;
    wgt_tensor *rope_pass;                    /* [G + 2, 1, 1, 1, 1] of the tables' dtype: 1 for v (llama3) */
    /* llama3 tables and no per-head norm: q/k/v rows joined as k | v | q and
     * the cache laid out by position, so that a decode step's rotation kernel
     * writes k and v into the cache and q into the scratch rows after them
     * (one dispatch: llama_forward.c's rotate_qkv_into_cache) */
    bool kv_first;
    uint64_t weight_bytes;
    /* WGT_LLAMA_CAST_F16=1 when the model was built: the old path, which
     * rounds f32 activations to f16 (one cast dispatch each) before f16-weight
     * projections, to measure what the f32 x f16 products save and to compare
     * outputs. Read once here (this floor sees only the public API, not the
     * context's knobs); default false. */
    bool cast_f16;
    /* WGT_LLAMA_DECODE_FUSE when the model was built (0..4, default 3): how
     * much of a decode step's work rides in the projections (llama_forward.c,
     * decode_fuse_level) */
    int decode_fuse;
    wgt_matmul_precision precision; /* the forward pass's wgt_set_matmul_precision (llama.c's build) */
};

struct llama_cache {
    llama_model *model;
    int64_t context, length;
    /* per layer [2, Hkv, context, D]: k | v, so one assignment appends a
     * token's k and v; with the model's kv_first [context + S, 2, Hkv, D]
     * (by position, k and v of a position adjacent), whose S = ceil(G / 2)
     * scratch rows past the last position hold a decode step's rotated q
     * (G = H / Hkv heads per kv head: G Hkv D values, 2 Hkv D a row) */
    wgt_tensor **kv;
    wgt_tensor **k, **v;                      /* per layer views [1, Hkv, rows, D] of kv */
    /* LLAMA_KV_Q8: kv holds the codes i32 [2, Hkv, context, D/4] (k, v: their
     * views [1, Hkv, context, D/4]), kv_scales the scales f32 [2, Hkv, context,
     * D/32] (k_scales, v_scales); no scratch rows (q stays in its own tensor) */
    bool q8;
    wgt_tensor **kv_scales, **k_scales, **v_scales;
    uint64_t bytes;
};

#endif
