/*
 * The backend seam: one function table (struct wgt_backend_vtable) that the CPU
 * and WebGPU backends fill. Adding a backend means filling this table, nothing else.
 *
 * A backend runs a small set of primitive kernels (enum wgt_kernel_kind). The op
 * front-end (src/ops) turns every public op into one or more kernel calls: all
 * elementwise ops, casts, copies, fills, slice assignment, tril/triu, one_hot,
 * arange/linspace/eye and rand/randn are expression programs (src/core/expr.h) run
 * by the ELEMENTWISE kernel; the other kinds are reductions, scans, softmax,
 * matmul, gather, scatter_add and topk.
 *
 * Every kernel reads its inputs through views (shape, strides, offset in
 * elements), so transposed, sliced and broadcast (stride 0) inputs need no copy.
 * Outputs are views too (slice assignment writes through a strided view).
 */
#ifndef WGT_BACKEND_H
#define WGT_BACKEND_H

#include <stdio.h>
#include <string.h>

#include "wgtensor.h"
#include "core/expr.h"
#include "core/fault.h"

/* Device memory as the front-end sees it: reference counted, shared by views.
 * handle is the backend's own object (a host pointer for the CPU, a buffer
 * block for WebGPU). */
typedef struct wgt_storage {
    int refcount;
    size_t bytes;      /* allocated: requested rounded up to 4 */
    size_t requested;  /* bytes holding elements; the rest is padding */
    bool guarded;      /* debug guard bytes surround the elements (tensor.c) */
    void *handle;
    struct wgt_storage_trace *trace; /* while wgt_memory_trace_peak is on (core/memory_trace.c) */
} wgt_storage;

/* A tensor as a kernel sees it. Element (i0, i1, ...) lives at element index
 * offset + sum(i_k * strides[k]) of storage, elements of dtype size. */
typedef struct wgt_tensor_view {
    wgt_storage *storage;
    wgt_dtype dtype;
    int ndim;
    int64_t shape[WGT_MAX_DIMS];
    int64_t strides[WGT_MAX_DIMS];
    int64_t offset;
} wgt_tensor_view;

typedef enum wgt_kernel_kind {
    WGT_KERNEL_ELEMENTWISE, /* out = expr(inputs); inputs already broadcast to out's shape */
    WGT_KERNEL_REDUCE,      /* out = reduce(x) over axes in reduce_mask */
    WGT_KERNEL_CUMSUM,      /* out = inclusive prefix sum of x along axis */
    WGT_KERNEL_SOFTMAX,     /* out = (log_)softmax(x) along axis */
    WGT_KERNEL_MATMUL,      /* out[b, m, n] = sum_k a[b, m, k] * b[b, k, n] */
    WGT_KERNEL_GATHER,      /* out[c] = x[c with c[axis] = index[c]] */
    WGT_KERNEL_SCATTER_ADD, /* out[c with c[axis] = index[c]] += src[c] (out pre-filled) */
    WGT_KERNEL_TOPK,        /* values/indices of the k largest (smallest) along the last axis */
    WGT_KERNEL_ATTENTION,   /* out, logsumexp = softmax(q k^T * scale [+ mask]) v, fused */
    WGT_KERNEL_ATTENTION_BACKWARD, /* dq, dk, dv of ATTENTION, probabilities recomputed */
    WGT_KERNEL_ROPE,        /* out = x with pairs turned by position-dependent angles */
    WGT_KERNEL_NN,          /* fused norms / cross-entropy and their backward (call->nn.kernel) */
    WGT_KERNEL_OPTIMIZER,   /* param, state updated in place from grad: one fused SGD/Adam/AdamW step */
    WGT_KERNEL_CONV,        /* convolution, pooling, batch norm and their backward (call->conv.kernel) */
    WGT_KERNEL_QMATMUL,     /* out = x W^T with W group-wise 8/4-bit, dequantized in the kernel */
    WGT_KERNEL_QROWS,       /* rows of float <-> 8-bit codes and scales per group of 32 (an 8-bit KV cache) */
    WGT_KERNEL_COUNT
} wgt_kernel_kind;

/* The fused neural-network kernels of WGT_KERNEL_NN (contracts below). */
typedef enum wgt_nn_kernel {
    WGT_NN_NORM,                   /* layer norm or rms norm forward */
    WGT_NN_NORM_BACKWARD,          /* dx of a norm */
    WGT_NN_NORM_PARAM_GRADS,       /* per-chunk partial sums of dweight, dbias */
    WGT_NN_CROSS_ENTROPY,          /* per-row loss and logsumexp */
    WGT_NN_CROSS_ENTROPY_BACKWARD, /* dlogits */
    WGT_NN_PARTIALS_SUM,           /* column sums of the norm weight/bias partials */
    WGT_NN_SUM_SQUARES,            /* per-chunk sums of squares of up to 7 tensors */
    WGT_NN_DROPOUT_ADD,            /* x + dropout(h) that also keeps its mask as bits */
    WGT_NN_DROPOUT_MASKED,         /* the gradient through a kept mask */
    WGT_NN_KERNEL_COUNT
} wgt_nn_kernel;

/* The kernels of WGT_KERNEL_CONV (contracts below). */
typedef enum wgt_conv_kernel {
    WGT_CONV_FORWARD,          /* y = conv2d(x, w) + bias (implicit GEMM) */
    WGT_CONV_BACKWARD_INPUT,   /* dx = conv_transpose2d(dy, w) */
    WGT_CONV_BACKWARD_WEIGHT,  /* per-split partial dw from x and dy */
    WGT_POOL_FORWARD,          /* max / avg / adaptive avg pooling */
    WGT_POOL_BACKWARD,         /* dx of a pooling, gathered per input element */
    WGT_BATCH_NORM_FORWARD,    /* per-channel statistics (training) and y */
    WGT_BATCH_NORM_BACKWARD,   /* dx, dweight, dbias */
    WGT_CONV_KERNEL_COUNT
} wgt_conv_kernel;

typedef enum wgt_pool_mode { WGT_POOL_MAX, WGT_POOL_AVG, WGT_POOL_ADAPTIVE_AVG } wgt_pool_mode;

typedef enum wgt_reduce_kind {
    WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_MAX, WGT_REDUCE_MIN, WGT_REDUCE_PROD,
    WGT_REDUCE_VAR, WGT_REDUCE_STD, WGT_REDUCE_ARGMAX, WGT_REDUCE_ARGMIN,
    WGT_REDUCE_COUNT
} wgt_reduce_kind;

#define WGT_MAX_KERNEL_INPUTS 8
/* inputs of one SUM_SQUARES call: with its output, WebGPU's default 8 storage
 * buffers per shader stage */
#define WGT_NN_SUM_SQUARES_MAX_INPUTS 7

/* Words of a DROPOUT_ADD mask of n elements: one bit each, 32 a word. */
static inline int64_t wgt_dropout_mask_words(int64_t n) { return ((n + 3) / 4 + 7) / 8; }

/*
 * One kernel invocation. Which fields matter depends on kind:
 *
 * ELEMENTWISE  inputs[0..n_inputs) all with out's shape (broadcast by stride 0);
 *              expr->nodes reference them by INPUT(k). outputs[0] any view.
 * REDUCE       inputs[0] x [d0..dn); outputs[0] contiguous: x's shape with the
 *              reduced dims set to 1 (always keepdim form; the front-end drops
 *              them with a view). reduce_mask bit k set = dim k reduced.
 *              ARGMAX/ARGMIN reduce exactly one dim and write i32. VAR/STD use
 *              correction (0 or 1). Output dtype: see src/ops/reduce.c.
 * CUMSUM       inputs[0] x, outputs[0] contiguous same shape, axis.
 * SOFTMAX      inputs[0] x, outputs[0] contiguous same shape, axis, log_softmax.
 * MATMUL       inputs[0] a [B.., M, K], inputs[1] b [B.., K, N], outputs[0]
 *              out [B.., M, N] contiguous; a and b already broadcast to the
 *              same batch dims (stride 0 where broadcast). ndim >= 2 for all.
 *              Optional inputs[2] bias [N] (n_inputs 3, a's dtype, any stride)
 *              added to every row in the epilogue. out's dtype is a's, or f32
 *              for f16 operands (f32 accumulation kept unrounded).
 * GATHER       inputs[0] x, inputs[1] index (i32, out's shape), outputs[0]
 *              contiguous, axis. Index values in [-D, D) (negative wraps);
 *              outside that the output element is 0.
 * SCATTER_ADD  inputs[0] index (i32), inputs[1] src (index's shape), outputs[0]
 *              out (already a copy of dst), axis. Out-of-range indices skipped.
 * TOPK         inputs[0] x [..., N] (last axis), outputs[0] values [..., k]
 *              (x's dtype), outputs[1] indices i32 [..., k], k, largest.
 *              Sorted: largest first (smallest first if !largest); NaN counts
 *              as larger than everything; ties go to the lower index.
 * ATTENTION    inputs q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, D]
 *              (any strides, H % Hkv == 0); outputs[0] out [B, H, Tq, D]
 *              contiguous (q's dtype), outputs[1] lse f32 [B, H, Tq] contiguous:
 *              the natural log of each row's sum of exp(scaled scores) (-inf
 *              for a row that sees no key). Fields in call->attention: scale,
 *              causal (query i sees keys j <= i + Tk - Tq), dropout_p and seed:
 *              weight (b, h, i, j) is dropped by the Philox draw of
 *              wgt_attention_dropout_keep (src/core/philox.h) for row
 *              (b*H+h)*Tq+i and key j, kept ones scaled by 1 / (1 - dropout_p).
 *              With 5 inputs the keys and values are 8-bit (wgt_attention_q8):
 *              inputs q, k codes i32 [B, Hkv, Tk, D/4], v codes (same shape),
 *              k scales f32 [B, Hkv, Tk, D/32], v scales (same shape), any
 *              strides on the first three dims, unit stride on the last; key
 *              (b, g, j, d) = int8 byte d % 4 of code word d / 4 times scale
 *              d / 32 (QROWS' layout); D = q's last dim; no dropout.
 * ATTENTION_BACKWARD inputs q, k, v, out, dout [B, H, Tq, D], lse f32 [B, H, Tq];
 *              outputs dq [B, H, Tq, D], dk, dv [B, Hkv, Tk, D] contiguous f32
 *              (gradients summed over the query heads sharing a kv head).
 *              Same call->attention fields as the forward.
 * ROPE         inputs[0] x [B, H, T, D] (any strides, D even), outputs[0] out
 *              contiguous same shape; call->rope: position of row t is
 *              position_offset + t, pair i turns by pos * theta^(-2i/D)
 *              (negated when inverse: the backward), pairs (2i, 2i+1) when
 *              interleaved, else (i, i + D/2).
 * NN           call->nn.kernel picks one; every row-shaped view is contiguous
 *              (the front-end makes it so; offsets may be anything); R rows of D
 *              (or C) elements; x, dy, dx, y and logits f32 or f16 (one dtype per
 *              call), everything else f32; weight w / bias b present when
 *              nn.has_weight / nn.has_bias (inputs in the order below, absent
 *              ones left out); nn.rms: rms norm instead of layer norm.
 *   NORM        x [R, D], w [D], b [D] -> y [R, D], stats [R, 2] = (mean, rstd);
 *               layer: mean = sum x / D, rstd = 1/sqrt(sum (x-mean)^2 / D + eps),
 *               rms: mean = 0, rstd = 1/sqrt(sum x^2 / D + eps);
 *               y = (x - mean) rstd w + b.
 *   NORM_BACKWARD x [R, D], w [D], stats [R, 2], dy [R, D] -> dx [R, D]:
 *               xhat = (x - mean) rstd, g = dy w;
 *               dx = rstd (g - xhat mean(g xhat) - mean(g)) (rms: no - mean(g)).
 *               nn.accumulate: dx is f32 and holds a gradient on entry, which
 *               the result is added to (one f32 add: the residual stream's
 *               gradient sum, without a separate add kernel).
 *               With nn.chunk_rows > 0 also the NORM_PARAM_GRADS partials:
 *               outputs[1] dw [P, D], outputs[2] db [P, D] (has_bias), so a
 *               backend can read x and dy once for all three.
 *   NORM_PARAM_GRADS x [R, D], stats [R, 2], dy [R, D] -> dw [P, D] and, when
 *               has_bias, db [P, D] (outputs[1]), P = ceil(R / nn.chunk_rows):
 *               row p sums rows [p chunk_rows, (p+1) chunk_rows) of dy xhat (and
 *               dy); the front-end sums the P partials (no float atomics).
 *   PARTIALS_SUM dw partials [P, D], db partials [P, D] (has_bias) -> dw [D],
 *               db [D] (has_bias), f32: the column sums (a fixed order: the
 *               same bits every run).
 *   SUM_SQUARES inputs[0..n_inputs) (1..WGT_NN_SUM_SQUARES_MAX_INPUTS) x_i [L_i]
 *               (1-D, contiguous, f32 or f16, none empty) -> partials f32 [P],
 *               P = sum ceil(L_i / nn.chunk_rows) (chunk_rows here counts
 *               elements): input i's chunks in order, after those of the
 *               inputs before it; partial = sum of x^2 over the chunk's
 *               elements. The front-end sums the partials (no float atomics).
 *   DROPOUT_ADD x [n], h [n] (f32, 1-D, contiguous) -> out [n] f32, mask i32
 *               [W], W = ceil(ceil(n / 4) / 8) (wgt_dropout_mask_words):
 *               out = x + where(u >= p, h * s, 0) with p = (float)nn.dropout_p,
 *               s = (float)(1 / (1 - nn.dropout_p)) and u element e's uniform
 *               of ELEMENTWISE's rand for seed nn.seed (word e % 4 of Philox
 *               counter e / 4, top 24 bits), each product and sum rounded to
 *               f32 (no fma): wgt_dropout_add's expression, bit for bit. Bit
 *               4 j + c of mask word w is element 4 (w + j W) + c's "kept"
 *               (j < 8, c < 4; elements past n: 0), so the invocation that
 *               writes a word reads quads W apart (coalesced).
 *   DROPOUT_MASKED g [n] f32, mask i32 [W] -> dh [n] f32 = where(kept, g * s, 0).
 *   CROSS_ENTROPY logits [R, C], targets i32 [R] -> loss [R], lse [R] (f32):
 *               lse = log sum exp logits; loss = lse - logits[target]; 0 when
 *               target == nn.ignore_index, NaN when outside [0, C).
 *   CROSS_ENTROPY_BACKWARD logits [R, C], targets i32 [R], lse [R], g [R] (any
 *               stride; 0 broadcasts one scale) -> dlogits [R, C] (logits'
 *               dtype) = (exp(logits - lse) - onehot(target)) g; 0 rows where
 *               ignored.
 * CONV         call->conv.kernel picks one. Every view contiguous (any offset),
 *              all float views one dtype (f32 or f16; the math is f32), i32 for
 *              argmax. Geometry in call->conv: the convolution's input
 *              [n, c, h, w], output [n, k, oh, ow], kernel kh x kw, stride,
 *              pad_top / pad_left (bottom / right follow from oh, ow), dilation,
 *              groups (c and k divisible by it).
 *   CONV_FORWARD x [n, c, h, w], w [k, c/groups, kh, kw], bias [k] when
 *               has_bias -> y [n, k, oh, ow]; y[n, co, i, j] = bias[co] + sum over
 *               (ci, a, b) of w[co, ci, a, b] x[n, g c/groups + ci, i stride_h -
 *               pad_top + a dil_h, j stride_w - pad_left + b dil_w] (zero outside).
 *   CONV_BACKWARD_INPUT dy [n, k, oh, ow], w -> dx [n, c, h, w] (the adjoint of
 *               the map above: every dx element gathers, no atomics).
 *   CONV_BACKWARD_WEIGHT x, dy -> dw partials [splits, k, c/groups, kh, kw]:
 *               split s sums the GEMM's reduction index (n, i, j) over
 *               [s split_len, (s+1) split_len); the front-end sums the splits.
 *   POOL_FORWARD x [n, c, h, w] -> y [n, c, oh, ow] (+ argmax i32 [n, c, oh, ow],
 *               the flat index ih w + iw in the input plane, for MAX).
 *               pool_mode, kh, kw, stride, pad_top/left (symmetric), dilation,
 *               count_include_pad (AVG); ADAPTIVE_AVG ignores the window fields.
 *   POOL_BACKWARD dy [n, c, oh, ow] (+ argmax for MAX) -> dx [n, c, h, w].
 *   BATCH_NORM_FORWARD x [n, c, l] (l = spatial size), w [c], b [c] (has_weight /
 *               has_bias), then mean [c], var [c] as inputs when !training ->
 *               y [n, c, l] (+ mean [c], var [c] biased, f32, when training).
 *   BATCH_NORM_BACKWARD x, w [c] (has_weight), mean [c], var [c], dy ->
 *               dx, dw [c], db [c] (f32); training: the batch statistics
 *               depend on x (full formula), else dx = dy w rstd.
 * QMATMUL      inputs[0] x [M, K] f32, inputs[1] qweight i32 [N, K * bits / 32],
 *              inputs[2] scales f32 [N, K / 32], all contiguous with offsets
 *              that are multiples of 4 elements; outputs[0] out [M, N] f32
 *              contiguous. call->quant.bits 8 or 4; K % 32 == 0. Weight
 *              (n, k) = code(n, k) * scales[n, k / 32]: 8 bits: byte k % 4 of
 *              word k / 4 as int8; 4 bits: nibble k % 8 (low first) of word
 *              k / 8, minus 8 (layout of wgt_qlinear in wgtensor.h).
 * QROWS        rows of D floats (D % 32 == 0) and their 8-bit form, views of
 *              at most 4 dims of one shape but the last (any strides there,
 *              unit stride along the last dim):
 *              quantize (!quant.dequantize): inputs[0] x [.., D] f32 or f16 ->
 *              outputs[0] codes i32 [.., D/4], outputs[1] scales f32 [.., D/32];
 *              per group of 32: s = max|x| * (1/127) (1/127 rounded to f32:
 *              a product rounds alike everywhere; WGSL's division need not),
 *              code = round-to-even(x / s)
 *              in [-127, 127], byte k % 4 of word k / 4 (0 when max|x| = 0; a
 *              group holding a NaN or an infinity: s = NaN, codes 0), the
 *              rounding of QMATMUL's int8_x.
 *              dequantize: inputs[0] codes, inputs[1] scales -> outputs[0] x
 *              [.., D] f32 or f16 = code * s (rounded to x's dtype).
 * OPTIMIZER    inputs[0] grad [n] f32; outputs[0] param [n] f32, read and
 *              written in place; outputs[1..n_outputs) state [n] f32, read and
 *              written: SGD with momentum != 0: the momentum buffer; ADAM and
 *              ADAMW: exp_avg, exp_avg_sq. Every view contiguous (any offset),
 *              each in its own storage. call->optimizer holds the
 *              hyperparameters, this step's lr and bias corrections (so a new lr
 *              needs no new pipeline). Equations: docs/ops.md "Optimizers".
 *              Room for f16 parameters: an f32 master copy would be one more
 *              state view, the f16 param written from it.
 */
/* SwiGLU of an LLM MLP, silu(a) * b, as the wgt_fused text both backends
 * evaluate for MATMUL's swiglu epilogue */
#define WGT_SWIGLU_EXPR "a / (1 + exp(-a)) * b"

typedef struct wgt_kernel_call {
    wgt_kernel_kind kind;
    const char *op_name;         /* public call name, for messages and profiling */
    int n_inputs;
    wgt_tensor_view inputs[WGT_MAX_KERNEL_INPUTS];
    int n_outputs;
    wgt_tensor_view outputs[3];
    const wgt_expr *expr;        /* ELEMENTWISE */
    wgt_reduce_kind reduce;      /* REDUCE */
    uint32_t reduce_mask;        /* REDUCE */
    int correction;              /* REDUCE VAR/STD */
    int axis;                    /* CUMSUM, SOFTMAX, GATHER, SCATTER_ADD */
    bool log_softmax;            /* SOFTMAX */
    int64_t k;                   /* TOPK */
    bool largest;                /* TOPK */
    struct {                     /* ATTENTION, ATTENTION_BACKWARD */
        double scale;            /* multiplies q k^T (1 / sqrt(D)) */
        bool causal;
        double dropout_p;        /* 0: no dropout */
        uint64_t seed;
        /* MATMUL's and QMATMUL's attention prologue: the last four inputs are
         * k codes, v codes, k scales, v scales (ATTENTION's 5-input form,
         * wgt_attention_q8_(q)linear_ex) instead of k, v */
        bool kv_q8;
    } attention;
    struct {                     /* ROPE */
        int64_t position_offset;
        double theta;
        bool interleaved, inverse;
    } rope;
    struct {                     /* NN */
        wgt_nn_kernel kernel;
        bool has_weight, has_bias, rms;
        double eps;
        int64_t chunk_rows;      /* NORM_PARAM_GRADS, NORM_BACKWARD with partials */
        bool accumulate;         /* NORM_BACKWARD: dx (f32) += the gradient, in place */
        int64_t ignore_index;    /* CROSS_ENTROPY(_BACKWARD) */
        double dropout_p;        /* DROPOUT_ADD, DROPOUT_MASKED: in (0, 1) */
        uint64_t seed;           /* DROPOUT_ADD */
    } nn;
    struct {                     /* CONV */
        wgt_conv_kernel kernel;
        int64_t n, c, h, w, k, oh, ow, kh, kw;
        int64_t stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, groups;
        int64_t split_len;       /* CONV_BACKWARD_WEIGHT */
        bool has_bias, has_weight, training;
        wgt_pool_mode pool_mode;
        bool count_include_pad;
        double eps;              /* BATCH_NORM */
    } conv;
    struct {                     /* QMATMUL */
        int bits;                /* 8 or 4 */
        /* wgt_qlinear_ex's fusions (M = 1 on WebGPU; supports() says where):
         * norm: inputs[3] is an f32 weight [K]; each row of x is first
         * RMS-normalized, (x * rsqrt(mean(x^2) + eps)) * weight. bias:
         * inputs[3] is an f32 bias [N] added to the sums. swiglu: out is
         * [M, N / 2], out[m, i] = silu(sum 2i) * (sum 2i + 1), after the bias.
         * norm and bias exclude each other; x may be f16 in a fused call. */
        bool norm, bias, swiglu;
        float eps;
        /* rope (wgt_qlinear_rope_into, with norm; M = 1): inputs[4] is a
         * table [4, D/2] and out [1, N] (f32 or f16) gets the f32 sums y
         * rotated as MATMUL's rope epilogue rotates them (heads in
         * [rope_pass_begin, rope_pass_end) stored as y) */
        bool rope;
        int64_t rope_pass_begin, rope_pass_end;
        /* int8_x (wgt_set_matmul_precision MEDIUM; any M, with any fusion):
         * x (the normalized row with norm, the merged attention output with
         * attention) is quantized like the weights before the product, every
         * backend alike: per row and group of 32 along k, s = max|x| *
         * (1/127) (f32), code = round-to-even(x / s) in [-127, 127] (0 when
         * max|x| = 0; a group holding a NaN or an infinity: s = NaN, codes
         * 0); out[m, n] = the f32 sum over groups of f32(integer sum of
         * code x * code w) * (s_x * s_w) (in order, but for a GPU's one-row
         * kernel, which may split an 8-bit group's sum in two) */
        bool int8_x;
        bool dequantize;         /* QROWS: codes, scales -> x (else x -> codes, scales) */
        /* attention (wgt_attention_qlinear_ex; M = 1): x is not an input but
         * the output of the ATTENTION call of q = inputs[0] [1, H, 1, D] and
         * k, v = the last two inputs [1, Hkv, Tk, D] (one float dtype;
         * call->attention's scale and causal, no dropout; attention.kv_q8:
         * the last four, 8-bit), in q's dtype, its
         * heads merged into one row [1, H D]; bias (inputs[3]) as above; no
         * other fusion. Only where supports() says so: the op composes the
         * two calls elsewhere. */
        bool attention;
    } quant;
    struct {                     /* MATMUL */
        /* SwiGLU epilogue (wgt_linear_swiglu_ex): out is [.., M, N / 2] and
         * out[.., m, i] = WGT_SWIGLU_EXPR of g, u = the sums of columns 2i and
         * 2i + 1 each rounded to out's dtype (the product as out's dtype would
         * store it), the result rounded once more (what an ELEMENTWISE call of
         * the program over those stored values writes). No bias. */
        bool swiglu;
        /* RMSNorm prologue (wgt_rms_norm_linear_ex): inputs[2] is not a bias
         * but an f32 norm weight [K], and a (f32, rows contiguous) is read as
         * the NN NORM kernel's rms output of its rows with that weight and
         * norm_eps (the values that kernel would write, up to the order in
         * which a row's squares are summed: WebGPU's norm kernel sums by
         * subgroups where the adapter has them, the GEMV's prologue by a
         * workgroup tree; rstd may then differ by an ulp. A prologue summing
         * as the subgroup kernel does made H200 f16 decode ~2% slower,
         * bench/results/h200-2026-11-29l/p2, p3: not kept). */
        bool norm;
        double norm_eps;
        /* Rotary epilogue (wgt_rms_norm_linear_rope_into; M = 1, no batch):
         * inputs[3] is a table [4, D/2] (f32 or f16) and out [1, N] (N = heads
         * x D) gets, for a head h outside [rope_pass_begin, rope_pass_end),
         *   out[h D + s D/2 + i] = y[h D + i] t[s, i] + y[h D + D/2 + i] t[2 + s, i]
         * (s = 0, 1; WGT_ROPE_ROWS_EXPR over the product y rounded to out's
         * dtype, the result rounded once more), and y itself for the heads in
         * the range: what the product into y and the ELEMENTWISE calls of
         * wgt_rope_rows_elementwise_calls write. */
        bool rope;
        int64_t rope_pass_begin, rope_pass_end;
        /* wgt_set_matmul_precision MEDIUM: with an f16 operand, the backend
         * MAY round the other one to f16 and sum runs of up to 16 products in
         * f16 before the f32 sums (the CPU does not) */
        bool f16_reduced;
        /* GELU-gradient epilogue (wgt_gelu_linear's backward, f32, no bias,
         * no batch dims: a [M, K], b [K, N]): inputs[2] is not a bias but h
         * [M, N] f32 (any strides) and out[m, n] = WGT_GELU_GRAD_EXPR of the
         * sum g and h[m, n] (the values the ELEMENTWISE call of
         * wgt_gelu_grad_elementwise_call over the stored sums writes; a
         * backend MAY evaluate it on the unstored sum, which is the same f32,
         * with an erf accurate to 2e-7 absolute and f32 exp of WGSL's
         * precision: WebGPU's tiled kernel does, a few operations a slope) */
        bool gelu_grad;
        /* Attention prologue (wgt_attention_linear_ex): a is not an input but
         * the output of the ATTENTION call of q = inputs[0] [1, H, 1, D] and
         * k, v = the last two inputs [1, Hkv, Tk, D] (one float dtype;
         * call->attention's scale and causal, no dropout; attention.kv_q8:
         * the last four, 8-bit), in q's dtype, its
         * heads merged into one row [1, H D]; b = inputs[1] [H D, N], the
         * bias inputs[2] when there is one input more than q, b, k and v
         * need; no other fusion. Only where supports() says so: the op
         * composes the two calls elsewhere. */
        bool attention;
    } matmul;
    struct {                     /* OPTIMIZER (src/nn/optimizer.c) */
        wgt_optimizer_kind kind; /* SGD, ADAM, ADAMW */
        double lr, weight_decay;
        double momentum, dampening; /* SGD */
        bool nesterov;           /* SGD */
        bool first_step;         /* SGD: the momentum buffer starts as the gradient */
        double beta1, beta2, eps;   /* ADAM, ADAMW */
        double bias_correction1, bias_correction2; /* 1 - beta^step, ADAM, ADAMW */
        double grad_scale;       /* the gradient is multiplied by it first */
    } optimizer;
} wgt_kernel_call;

/* SwiGLU as two kernels (the CPU reference; WebGPU where its fused GEMV
 * epilogue does not apply): after the product gu [.., M, 2N] (gate in the even
 * columns, up in the odd ones: wgt_linear_swiglu_ex; contiguous), the
 * ELEMENTWISE call of WGT_SWIGLU_EXPR over them into out [.., M, N]. e holds
 * the parsed expression the call points at. Nonzero (err filled) when the
 * expression does not parse. */
static inline int wgt_swiglu_elementwise_call(const char *op, const wgt_tensor_view *gu, const wgt_tensor_view *out,
                                              wgt_expr *e, wgt_kernel_call *ew, char *err, int err_size)
{
    const wgt_expr_type types[2] = {WGT_EXPR_F32, WGT_EXPR_F32};
    if (wgt_expr_parse(WGT_SWIGLU_EXPR, 2, types, e, err, err_size)) return 1;
    const int n = out->ndim;
    memset(ew, 0, sizeof(*ew));
    ew->kind = WGT_KERNEL_ELEMENTWISE;
    ew->op_name = op;
    ew->expr = e;
    ew->n_inputs = 2;
    for (int i = 0; i < 2; i++) { /* columns 2j + i: gate, up */
        ew->inputs[i] = *gu;
        ew->inputs[i].shape[n - 1] = out->shape[n - 1];
        ew->inputs[i].strides[n - 1] = 2;
        ew->inputs[i].offset = gu->offset + i;
    }
    ew->n_outputs = 1;
    ew->outputs[0] = *out;
    return 0;
}

/* d/dh gelu(h) times g, GELU's exact (erf) form as the autograd rule of
 * wgt_gelu writes it: g (Phi(h) + h phi(h)) */
#define WGT_GELU_GRAD_EXPR "a * (0.5 * (1 + erf(b * 0.7071067811865476)) + b * (exp(b * b * -0.5) * 0.3989422804014327))"

/* Whether a MATMUL call with gelu_grad is one the contract allows: f32 a
 * [M, K], b [K, N], out [M, N] and h [M, N], no other epilogue. */
static inline bool wgt_matmul_gelu_grad_call_valid(const wgt_kernel_call *call)
{
    const wgt_tensor_view *a = &call->inputs[0], *b = &call->inputs[1], *h = &call->inputs[2], *o = &call->outputs[0];
    return call->n_inputs == 3 && call->n_outputs == 1 && !call->matmul.norm && !call->matmul.swiglu &&
           !call->matmul.rope && a->dtype == WGT_F32 && b->dtype == WGT_F32 && h->dtype == WGT_F32 &&
           o->dtype == WGT_F32 && a->ndim == 2 && b->ndim == 2 && h->ndim == 2 && o->ndim == 2 &&
           a->shape[1] == b->shape[0] && o->shape[0] == a->shape[0] && o->shape[1] == b->shape[1] &&
           h->shape[0] == o->shape[0] && h->shape[1] == o->shape[1];
}

/* MATMUL's GELU-gradient epilogue as an ELEMENTWISE call (the CPU reference;
 * WebGPU where its fused GEMM epilogue does not apply): out = the expression
 * of the product g [M, N] (as stored) and h [M, N]. e holds the parsed
 * expression the call points at. Nonzero (err filled) when it does not parse. */
static inline int wgt_gelu_grad_elementwise_call(const char *op, const wgt_tensor_view *g, const wgt_tensor_view *h,
                                                 const wgt_tensor_view *out, wgt_expr *e, wgt_kernel_call *ew,
                                                 char *err, int err_size)
{
    const wgt_expr_type types[2] = {WGT_EXPR_F32, WGT_EXPR_F32};
    if (wgt_expr_parse(WGT_GELU_GRAD_EXPR, 2, types, e, err, err_size)) return 1;
    memset(ew, 0, sizeof(*ew));
    ew->kind = WGT_KERNEL_ELEMENTWISE;
    ew->op_name = op;
    ew->expr = e;
    ew->n_inputs = 2;
    ew->inputs[0] = *g;
    ew->inputs[1] = *h;
    ew->n_outputs = 1;
    ew->outputs[0] = *out;
    return 0;
}

/* The rotation of MATMUL's rope epilogue as the wgt_fused text both backends
 * evaluate: a, b a head's first and second halves, c, d rows s and 2 + s of
 * the table */
#define WGT_ROPE_ROWS_EXPR "a * c + b * d"

/* The rope epilogue (MATMUL's, QMATMUL's) as ELEMENTWISE calls (the CPU
 * reference; WebGPU where its fused GEMV epilogue does not apply): y [1, N]
 * (the product as stored, contiguous) into out [1, N] (contiguous), table t
 * [4, D/2], heads [pass_begin, pass_end) copied: up to
 * three calls, the heads before the pass range rotated (WGT_ROPE_ROWS_EXPR
 * over [heads, 2, D/2] views), those in it copied ("a"), those after
 * rotated. calls[] and its count (*n) are filled; rot and copy hold the
 * parsed expressions they point at. Nonzero (err filled) when an expression
 * does not parse. */
static inline int wgt_rope_rows_elementwise_calls(const char *op, const wgt_tensor_view *t, int64_t pass_begin,
                                                  int64_t pass_end, const wgt_tensor_view *y,
                                                  const wgt_tensor_view *out, wgt_expr *rot, wgt_expr *copy,
                                                  wgt_kernel_call *calls, int *n, char *err, int err_size)
{
    const wgt_expr_type types[4] = {WGT_EXPR_F32, WGT_EXPR_F32, WGT_EXPR_F32, WGT_EXPR_F32};
    if (wgt_expr_parse(WGT_ROPE_ROWS_EXPR, 4, types, rot, err, err_size)) return 1;
    if (wgt_expr_parse("a", 1, types, copy, err, err_size)) return 1;
    const int64_t half = t->shape[1], D = 2 * half, N = out->shape[out->ndim - 1], heads = D ? N / D : 0;
    const int64_t cut[4] = {0, pass_begin, pass_end, heads};
    *n = 0;
    for (int part = 0; part < 3; part++) {
        const int64_t h0 = cut[part], nh = cut[part + 1] - cut[part];
        if (nh <= 0) continue;
        wgt_kernel_call *c = &calls[(*n)++];
        memset(c, 0, sizeof(*c));
        c->kind = WGT_KERNEL_ELEMENTWISE;
        c->op_name = op;
        c->n_outputs = 1;
        wgt_tensor_view o = *out; /* [nh, 2, half] from head h0 (contiguous) */
        o.ndim = 3;
        o.shape[0] = nh, o.shape[1] = 2, o.shape[2] = half;
        o.strides[0] = D, o.strides[1] = half, o.strides[2] = 1;
        o.offset = out->offset + h0 * D;
        c->outputs[0] = o;
        wgt_tensor_view a = *y;
        a.ndim = 3;
        a.shape[0] = nh, a.shape[1] = 2, a.shape[2] = half;
        a.offset = y->offset + h0 * D;
        if (part == 1) { /* the pass range: y as it is */
            a.strides[0] = D, a.strides[1] = half, a.strides[2] = 1;
            c->expr = copy;
            c->n_inputs = 1;
            c->inputs[0] = a;
            continue;
        }
        a.strides[0] = D, a.strides[1] = 0, a.strides[2] = 1; /* the first half for s = 0 and 1 */
        wgt_tensor_view b = a;
        b.offset += half;
        wgt_tensor_view tc = *t; /* rows 0, 1 (c) and 2, 3 (d), the same for every head */
        tc.ndim = 3;
        tc.shape[0] = nh, tc.shape[1] = 2, tc.shape[2] = half;
        tc.strides[0] = 0, tc.strides[1] = t->strides[0], tc.strides[2] = t->strides[1];
        wgt_tensor_view td = tc;
        td.offset += 2 * t->strides[0];
        c->expr = rot;
        c->n_inputs = 4;
        c->inputs[0] = a, c->inputs[1] = b, c->inputs[2] = tc, c->inputs[3] = td;
    }
    return 0;
}

/* The RMSNorm prologue (wgt_rms_norm_linear_ex) as its own kernel, before the
 * product: the NN norm call of x [.., K] (rows x K, contiguous) with weight w
 * into y (x's shape) and stats [rows, 2], in matmul's eps. The CPU reference,
 * and WebGPU where the fused GEMV does not apply. */
static inline void wgt_rms_norm_prologue_call(const wgt_kernel_call *matmul, const wgt_tensor_view *x,
                                              const wgt_tensor_view *w, const wgt_tensor_view *y,
                                              const wgt_tensor_view *stats, int64_t rows, int64_t K,
                                              wgt_kernel_call *nn)
{
    memset(nn, 0, sizeof(*nn));
    nn->kind = WGT_KERNEL_NN;
    nn->op_name = matmul->op_name;
    nn->nn.kernel = WGT_NN_NORM;
    nn->nn.rms = true;
    nn->nn.eps = matmul->matmul.norm_eps;
    nn->nn.has_weight = true;
    nn->n_inputs = 2;
    for (int i = 0; i < 2; i++) { /* x and y as the norm's [rows, K] */
        wgt_tensor_view *v = i ? &nn->outputs[0] : &nn->inputs[0];
        *v = i ? *y : *x;
        v->ndim = 2;
        v->shape[0] = rows, v->shape[1] = K;
        v->strides[0] = K, v->strides[1] = 1;
    }
    nn->inputs[1] = *w;
    nn->n_outputs = 2;
    nn->outputs[1] = *stats;
}

typedef struct wgt_backend wgt_backend;

/* Members marked optional may be NULL; the front-end then reports
 * WGT_ERR_UNSUPPORTED (or zeroed statistics). Every member that can fail records
 * its error on backend->ctx with wgt_error() and returns the status. */
typedef struct wgt_backend_vtable {
    const char *name;                           /* "cpu", "webgpu" */
    void (*destroy)(wgt_backend *b);            /* frees everything, waits for the device */
    wgt_status (*adapter_info)(wgt_backend *b, wgt_adapter_info *info);

    /* Allocates bytes (> 0, multiple of 4) of storage; contents undefined. */
    wgt_status (*storage_alloc)(wgt_backend *b, size_t bytes, void **handle);
    /* Returns storage. Must be safe while kernels that use it are still queued. */
    void (*storage_free)(wgt_backend *b, void *handle);
    /* offset and bytes are multiples of 4; writes are ordered after earlier kernels. */
    wgt_status (*storage_write)(wgt_backend *b, void *handle, size_t offset, const void *src, size_t bytes);
    /* Waits for all earlier work that writes handle, then copies out. */
    wgt_status (*storage_read)(wgt_backend *b, void *handle, size_t offset, void *dst, size_t bytes);
    /* optional: storage_read in two halves (wgt_tensor_read_start). start
     * queues the copy and returns a pending read; finish waits for it and
     * copies out (dst NULL: discards it) and frees it, on every path. Without
     * them the front-end reads synchronously at start. */
    wgt_status (*storage_read_start)(wgt_backend *b, void *handle, size_t offset, size_t bytes, void **pending);
    wgt_status (*storage_read_finish)(wgt_backend *b, void *pending, void *dst);
    /* Optional: whether finish would not wait for pending (polls once, never
     * blocks). Without it a started read counts as ready (finish waits). */
    bool (*storage_read_ready)(wgt_backend *b, void *pending);

    /* Whether run() implements this call (kind, dtypes, ranks). Must not fail. */
    bool (*supports)(wgt_backend *b, const wgt_kernel_call *call);
    /* Records or runs the kernel. May return before the device finishes. A call
     * supports() would refuse returns WGT_ERR_UNSUPPORTED with a message (the
     * front-end does not ask supports() first: on the hot path that would plan
     * every op twice). */
    wgt_status (*run)(wgt_backend *b, const wgt_kernel_call *call);
    wgt_status (*synchronize)(wgt_backend *b);

    /* optional */
    wgt_status (*memory_stats)(wgt_backend *b, wgt_memory_stats *stats);
    wgt_status (*pipeline_stats)(wgt_backend *b, wgt_pipeline_stats *stats);
    wgt_status (*execution_stats)(wgt_backend *b, wgt_execution_stats *stats);
    wgt_status (*memory_trim)(wgt_backend *b);
    wgt_status (*memory_set_budget)(wgt_backend *b, uint64_t budget_bytes);
    /* buffers[i] are storages with byte sizes; see wgt_custom_kernel. */
    wgt_status (*custom_kernel)(wgt_backend *b, const wgt_custom_kernel *k, wgt_storage *const *storages);
    /* GPU time per dispatch (see wgt_profiler_enable) */
    wgt_status (*profiler_enable)(wgt_backend *b, bool enable);
    wgt_status (*profiler_report)(wgt_backend *b, FILE *out);
    wgt_status (*profiler_write_trace)(wgt_backend *b, const char *path);
    /* autotuning of kernel configs, cached on disk per adapter+driver */
    wgt_status (*tune)(wgt_backend *b, bool quick, const char *cache_path, FILE *log);
} wgt_backend_vtable;

struct wgt_backend {
    const wgt_backend_vtable *vt;
    wgt_context *ctx;
    wgt_fault fault;    /* test-only failure points (core/fault.h) */
};

/* Constructors. On failure they record the error on ctx and return NULL. */
wgt_backend *wgt_cpu_backend_create(wgt_context *ctx, const wgt_context_options *options);
wgt_backend *wgt_webgpu_backend_create(wgt_context *ctx, const wgt_context_options *options);

#endif /* WGT_BACKEND_H */
