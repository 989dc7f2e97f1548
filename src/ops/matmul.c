/* wgt_matmul front-end (NumPy matmul semantics).
 *   a [..., M, K] x b [..., K, N] -> [..., M, N], batch dims broadcast
 *   a [K] is a row vector ([1, K], the 1 dropped from the result),
 *   b [K] a column vector ([K, 1], the 1 dropped): matrix-vector products.
 * Operands are passed to the kernel as views, so transposes are never copied.
 * wgt_matmul_ex: the same with an f32 result for f16 operands, and f32 times
 * f16 (either order; f32 or f16 result): activations against f16 weights
 * without a cast of the activations first (inference only: no gradient).
 * wgt_linear: x [..., in] @ weight[out, in]^T + bias, one MATMUL call with the
 * weight read transposed in place and the bias in the GEMM's epilogue;
 * wgt_linear_ex: the same with wgt_matmul_ex's dtypes and an f32 bias (LLM
 * decode's residual stream added in the epilogue), inference only;
 * wgt_linear_swiglu_ex: linear_ex over interleaved gate/up rows with the
 * SwiGLU in the product's epilogue (MATMUL's swiglu), inference only;
 * wgt_rms_norm_linear_ex: either of those after an RMSNorm of x's rows, done
 * in the product's prologue (MATMUL's norm), inference only. */
#include <math.h>
#include <string.h>

#include "core/tape.h"
#include "ops/linear_internal.h"
#include "ops/op_common.h"

void wgt_scope_remove(wgt_tensor *t); /* src/core/tensor.c */

static wgt_tensor *matmul(wgt_tensor *a, wgt_tensor *b, wgt_dtype out_dtype, const char *op)
{
    wgt_tensor *args[2] = {a, b};
    wgt_context *ctx = wgt_op_begin(op, 2, args);
    if (!ctx) return NULL;
    char sa[160], sb[160];
    wgt_tensor_view va = a->view, vb = b->view;
    if (va.ndim == 0 || vb.ndim == 0) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: operands %s and %s must have at least 1 dim", op,
                  wgt_shape_string(va.ndim, va.shape, sa, sizeof(sa)), wgt_shape_string(vb.ndim, vb.shape, sb, sizeof(sb)));
        return NULL;
    }
    /* f32 x f16 (either order): the kernels widen the f16 operand as they load it */
    const bool mixed = (va.dtype == WGT_F32 && vb.dtype == WGT_F16) || (va.dtype == WGT_F16 && vb.dtype == WGT_F32);
    if (va.dtype != vb.dtype && !mixed) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtypes %s and %s differ (cast one first; only f32 x f16 mixes)", op,
                  wgt_dtype_name(va.dtype), wgt_dtype_name(vb.dtype));
        return NULL;
    }
    if (va.dtype != WGT_F32 && va.dtype != WGT_F16 && va.dtype != WGT_I32) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: dtype %s (f32, f16 and i32 are supported)", op, wgt_dtype_name(va.dtype));
        return NULL;
    }
    if (mixed ? (out_dtype != WGT_F32 && out_dtype != WGT_F16)
              : (out_dtype != va.dtype && !(va.dtype == WGT_F16 && out_dtype == WGT_F32))) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s x %s operands cannot give a %s result (same dtype, f16 -> f32, or f32 x "
                  "f16 -> f32 / f16)", op, wgt_dtype_name(va.dtype), wgt_dtype_name(vb.dtype), wgt_dtype_name(out_dtype));
        return NULL;
    }
    if (mixed && wgt_tape_wants(ctx, 2, args)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: %s x %s operands have no gradient rule; an operand requires grad "
                  "(cast to one dtype, or run under wgt_no_grad_push)", op, wgt_dtype_name(va.dtype),
                  wgt_dtype_name(vb.dtype));
        return NULL;
    }
    bool a_vector = va.ndim == 1, b_vector = vb.ndim == 1;
    if (a_vector) { /* [K] -> [1, K] */
        va.shape[1] = va.shape[0];
        va.strides[1] = va.strides[0];
        va.shape[0] = 1;
        va.strides[0] = 0;
        va.ndim = 2;
    }
    if (b_vector) { /* [K] -> [K, 1] */
        vb.shape[1] = 1;
        vb.strides[1] = 0;
        vb.ndim = 2;
    }
    int64_t M = va.shape[va.ndim - 2], K = va.shape[va.ndim - 1];
    int64_t K2 = vb.shape[vb.ndim - 2], N = vb.shape[vb.ndim - 1];
    if (K != K2) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: inner dims differ: %s x %s (K %lld vs %lld)", op,
                  wgt_shape_string(a->view.ndim, a->view.shape, sa, sizeof(sa)),
                  wgt_shape_string(b->view.ndim, b->view.shape, sb, sizeof(sb)), (long long)K, (long long)K2);
        return NULL;
    }
    /* Broadcast the batch dims. */
    wgt_tensor_view batch_a = va, batch_b = vb;
    batch_a.ndim -= 2;
    batch_b.ndim -= 2;
    const wgt_tensor_view *batches[2] = {&batch_a, &batch_b};
    int batch_ndim;
    int64_t shape[WGT_MAX_DIMS];
    if (!wgt_broadcast_shapes(ctx, 2, batches, &batch_ndim, shape, op)) return NULL;
    if (batch_ndim + 2 > WGT_MAX_DIMS) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: result would have more than %d dims", op, WGT_MAX_DIMS);
        return NULL;
    }
    wgt_tensor_view ea, eb;
    shape[batch_ndim] = M;
    shape[batch_ndim + 1] = K;
    if (!wgt_broadcast_view(ctx, &va, batch_ndim + 2, shape, &ea, op)) return NULL;
    shape[batch_ndim] = K;
    shape[batch_ndim + 1] = N;
    if (!wgt_broadcast_view(ctx, &vb, batch_ndim + 2, shape, &eb, op)) return NULL;
    shape[batch_ndim] = M;
    shape[batch_ndim + 1] = N;
    wgt_tensor *out = wgt_tensor_alloc(ctx, out_dtype, batch_ndim + 2, shape, op);
    if (!out) return NULL;
    if (wgt_shape_numel(batch_ndim + 2, shape) > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.op_name = op;
        call.matmul.f16_reduced = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
        call.n_inputs = 2;
        call.inputs[0] = ea;
        call.inputs[1] = eb;
        call.n_outputs = 1;
        call.outputs[0] = out->view;
        wgt_status s;
        if (K == 0) s = wgt_fill(out, 0.0); /* an empty sum */
        else s = wgt_run_kernel(ctx, &call);
        if (s != WGT_OK) {
            wgt_tensor_release(out);
            return NULL;
        }
    }
    /* The node sees the 2-D form ([.., M, N] with the 1s a vector operand adds);
     * the view below records its own node. */
    wgt_op_record(&out, WGT_OP_MATMUL, 2, args);
    if (!out) return NULL;
    if (!a_vector && !b_vector) return out;
    /* Drop the dims that the 1-D operands added. */
    int64_t final_shape[WGT_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < batch_ndim; d++) final_shape[n++] = shape[d];
    if (!a_vector) final_shape[n++] = M;
    if (!b_vector) final_shape[n++] = N;
    wgt_scope_remove(out); /* a temporary: a scope pop must not release it again while the view's tape node holds it */
    wgt_tensor *r = wgt_view(out, n, final_shape);
    wgt_tensor_release(out);
    return r;
}

wgt_tensor *wgt_matmul(wgt_tensor *a, wgt_tensor *b)
{
    /* one dtype: that dtype; f32 x f16: f32 */
    wgt_dtype out = a ? a->view.dtype : WGT_F32;
    if (a && b && a->view.dtype != b->view.dtype) out = WGT_F32;
    return matmul(a, b, out, "wgt_matmul");
}

wgt_tensor *wgt_matmul_ex(wgt_tensor *a, wgt_tensor *b, wgt_dtype out_dtype)
{
    if ((unsigned)out_dtype >= WGT_DTYPE_COUNT) {
        if (a) wgt_error(a->ctx, WGT_ERR_DTYPE, "wgt_matmul_ex: invalid out_dtype %d", (int)out_dtype);
        return NULL;
    }
    return matmul(a, b, out_dtype, "wgt_matmul_ex");
}

/* ----------------------------------------------------------------- linear */

/* Whether dims [0, n) of v fold into one dim (each steps over the next whole). */
static bool leading_dims_fold(const wgt_tensor_view *v, int n)
{
    for (int d = 0; d + 1 < n; d++)
        if (v->shape[d] != 1 && v->shape[d + 1] != 1 && v->strides[d] != v->strides[d + 1] * v->shape[d + 1])
            return false;
    return true;
}

/* v [..., cols] as [rows, cols] (its leading dims folded into rows), or false
 * when their strides do not allow it */
static bool fold_rows(const wgt_tensor_view *v, wgt_tensor_view *rows)
{
    int nd = v->ndim;
    if (nd < 1 || (nd > 1 && !leading_dims_fold(v, nd - 1))) return false;
    int64_t row_stride = 0;
    for (int d = 0; d <= nd - 2; d++)
        if (v->shape[d] != 1) row_stride = v->strides[d]; /* the innermost non-1 dim's stride */
    *rows = *v;
    rows->ndim = 2;
    rows->shape[0] = wgt_shape_numel(nd - 1, v->shape);
    rows->strides[0] = row_stride;
    rows->shape[1] = v->shape[nd - 1];
    rows->strides[1] = v->strides[nd - 1];
    return true;
}

/* Whether x, weight, bias and out_dtype are wgt_linear's (one float dtype). */
static bool linear_plain(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype)
{
    const wgt_dtype t = x->view.dtype;
    return wgt_dtype_is_float(t) && weight->view.dtype == t && (!bias || bias->view.dtype == t) && out_dtype == t;
}

/* wgt_linear_ex's dtypes (see wgtensor.h); wgt_linear's are a subset. */
static bool linear_ex_dtypes(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype)
{
    const wgt_dtype tx = x->view.dtype, tw = weight->view.dtype;
    if ((tx != WGT_F32 && tx != WGT_F16) || (tw != WGT_F32 && tw != WGT_F16)) return false;
    if (tx == tw ? out_dtype != tx && !(tx == WGT_F16 && out_dtype == WGT_F32)
                 : out_dtype != WGT_F32 && out_dtype != WGT_F16)
        return false;
    if (!bias) return true;
    const wgt_dtype tb = bias->view.dtype;
    return tb == WGT_F32 || (tb == WGT_F16 && (tx == WGT_F16 || tw == WGT_F16));
}

static bool check_linear_args(wgt_context *ctx, const char *op, wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias,
                              wgt_dtype out_dtype, bool ex)
{
    char xs[160], ws[160], bs[160];
    const wgt_tensor_view *vx = &x->view, *vw = &weight->view;
    wgt_shape_string(vx->ndim, vx->shape, xs, sizeof(xs));
    wgt_shape_string(vw->ndim, vw->shape, ws, sizeof(ws));
    if (ex ? !linear_ex_dtypes(x, weight, bias, out_dtype) : !linear_plain(x, weight, bias, out_dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x %s, weight %s%s%s -> %s: %s", op, wgt_dtype_name(vx->dtype),
                  wgt_dtype_name(vw->dtype), bias ? ", bias " : "", bias ? wgt_dtype_name(bias->view.dtype) : "",
                  wgt_dtype_name(out_dtype),
                  ex ? "need x, weight f32 or f16 with a result wgt_matmul_ex gives, a bias f32 (or f16 with an f16 "
                       "operand)"
                     : "need one float dtype (f32 or f16)");
        return false;
    }
    if (vx->ndim < 1 || vw->ndim != 2 || vw->shape[1] != vx->shape[vx->ndim - 1]) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s, weight %s: need x [..., in] and weight [out, in]", op, xs, ws);
        return false;
    }
    if (bias && (bias->view.ndim != 1 || bias->view.shape[0] != vw->shape[0])) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: bias %s for weight %s: need bias [out]", op,
                  wgt_shape_string(bias->view.ndim, bias->view.shape, bs, sizeof(bs)), ws);
        return false;
    }
    return true;
}

/* wgt_linear (ex false: one dtype, out_dtype is x's), wgt_linear_ex and
 * (swiglu) wgt_linear_swiglu_ex */
static wgt_tensor *linear_norm(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype, bool ex,
                               bool swiglu, wgt_tensor *norm_weight, double eps, const char *op);

static wgt_tensor *linear(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype, bool ex,
                          bool swiglu, const char *op)
{
    return linear_norm(x, weight, bias, out_dtype, ex, swiglu, NULL, 0.0, op);
}

/* linear with (norm_weight) an RMSNorm of x's rows in the product's prologue
 * (MATMUL's norm: norm_weight in the bias slot; wgt_rms_norm_linear_ex) */
static wgt_tensor *linear_norm(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype, bool ex,
                               bool swiglu, wgt_tensor *norm_weight, double eps, const char *op)
{
    wgt_tensor *args[3] = {x, weight, bias};
    wgt_context *ctx = wgt_op_begin(op, 2, args); /* bias is optional */
    if (!ctx) return NULL;
    if (bias && !wgt_op_begin(op, 3, args)) return NULL;
    if (!ex) out_dtype = x->view.dtype;
    if (!check_linear_args(ctx, op, x, weight, bias, out_dtype, ex)) return NULL;
    if (swiglu && weight->view.shape[0] % 2) {
        char ws[160];
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: weight %s: need [2F, in] (gate and up rows interleaved)", op,
                  wgt_shape_string(weight->view.ndim, weight->view.shape, ws, sizeof(ws)));
        return NULL;
    }
    const bool plain = !swiglu && !norm_weight && linear_plain(x, weight, bias, out_dtype);
    if (!plain && wgt_tape_wants(ctx, bias ? 3 : 2, args)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: x %s, weight %s -> %s has no gradient rule; an argument requires grad "
                  "(use wgt_linear's one dtype, or run under wgt_no_grad_push)", op, wgt_dtype_name(x->view.dtype),
                  wgt_dtype_name(weight->view.dtype), wgt_dtype_name(out_dtype));
        return NULL;
    }
    const wgt_tensor_view *vx = &x->view, *vw = &weight->view;
    int nd = vx->ndim;
    int64_t in = vw->shape[1], out_features = vw->shape[0];
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, vx->shape, sizeof(shape));
    shape[nd - 1] = swiglu ? out_features / 2 : out_features;
    wgt_tensor *out = wgt_tensor_alloc(ctx, out_dtype, nd, shape, op);
    if (!out) return NULL;
    int64_t rows = wgt_shape_numel(nd - 1, vx->shape);
    wgt_status s = WGT_OK;
    if (rows > 0 && out_features > 0 && in == 0) { /* empty sums: the bias alone (SwiGLU of zeros: zeros) */
        (void)norm_weight; /* (an empty row normalizes to nothing) */
        /* (wgt_assign converts an f32 bias to out's dtype as the kernels' epilogue does) */
        s = bias ? wgt_assign(out, bias) : wgt_fill(out, 0.0);
    } else if (rows > 0 && out_features > 0) {
        /* a: x as [rows, in] when its leading dims fold (one GEMM), else
         * batched [..., M, in] with the weight broadcast over the batch */
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.op_name = op;
        call.matmul.f16_reduced = ctx->matmul_precision >= WGT_MATMUL_PRECISION_MEDIUM;
        call.n_inputs = bias || norm_weight ? 3 : 2;
        call.n_outputs = 1;
        wgt_tensor_view a = *vx, b = *vw, o = out->view;
        if (fold_rows(vx, &a)) {
            o.ndim = 2;
            o.shape[0] = rows;
            o.shape[1] = shape[nd - 1];
            o.strides[0] = shape[nd - 1];
            o.strides[1] = 1;
        }
        int ndim = a.ndim;
        b.ndim = ndim; /* weight^T [in, out], broadcast (stride 0) over a's batch dims */
        for (int d = 0; d < ndim - 2; d++) {
            b.shape[d] = a.shape[d];
            b.strides[d] = 0;
        }
        b.shape[ndim - 2] = in;
        b.strides[ndim - 2] = vw->strides[1];
        b.shape[ndim - 1] = out_features;
        b.strides[ndim - 1] = vw->strides[0];
        call.inputs[0] = a;
        call.inputs[1] = b;
        if (bias) call.inputs[2] = bias->view;
        if (norm_weight) call.inputs[2] = norm_weight->view;
        call.outputs[0] = o;
        call.matmul.swiglu = swiglu;
        call.matmul.norm = norm_weight != NULL;
        call.matmul.norm_eps = eps;
        s = wgt_run_kernel(ctx, &call);
    }
    if (s != WGT_OK) {
        wgt_tensor_release(out);
        return NULL;
    }
    if (plain) wgt_op_record(&out, WGT_OP_LINEAR, 3, args); /* no params: the inputs say it all */
    return out;
}

wgt_tensor *wgt_linear(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias)
{
    return linear(x, weight, bias, WGT_F32, false, false, "wgt_linear");
}

wgt_tensor *wgt_gelu_linear(wgt_tensor *h, wgt_tensor *weight, wgt_tensor *bias)
{
    const char *op = "wgt_gelu_linear";
    wgt_tensor *args[3] = {h, weight, bias};
    wgt_context *ctx = wgt_op_begin(op, 2, args); /* bias is optional */
    if (!ctx || (bias && !wgt_op_begin(op, 3, args))) return NULL;
    if (!check_linear_args(ctx, op, h, weight, bias, h->view.dtype, false)) return NULL;
    const bool record = wgt_tape_wants(ctx, bias ? 3 : 2, args);
    if (record && h->view.dtype != WGT_F32) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: %s arguments have no gradient rule (f32 only); an argument requires "
                  "grad", op, wgt_dtype_name(h->view.dtype));
        return NULL;
    }
    /* the two calls' values, unrecorded; the node below stands for both */
    wgt_no_grad_push(ctx);
    wgt_tensor *a = wgt_gelu(h);
    wgt_tensor *out = a ? wgt_linear(a, weight, bias) : NULL;
    wgt_no_grad_pop(ctx);
    bool ok = out != NULL;
    if (ok && record) {
        wgt_scope_remove(a); /* the node's now: a scope pop must not release it a second time */
        wgt_grad_node *node = wgt_tape_record(out, WGT_OP_GELU_LINEAR, 3, args);
        ok = node && wgt_tape_save(node, a); /* gelu(h): the weight's gradient reads it */
    }
    wgt_tensor_release(a);
    if (!ok) {
        wgt_tensor_release(out);
        return NULL;
    }
    return out;
}

wgt_tensor *wgt_gelu_linear_input_grad(wgt_tensor *dy, wgt_tensor *weight, wgt_tensor *h)
{
    const char *op = "wgt_gelu_linear backward";
    wgt_tensor *args[3] = {dy, weight, h};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx) return NULL;
    wgt_tensor_view a, o, hv;
    bool fused = dy->view.dtype == WGT_F32 && weight->view.dtype == WGT_F32 && h->view.dtype == WGT_F32 &&
                 weight->view.ndim == 2 && fold_rows(&dy->view, &a) && fold_rows(&h->view, &hv) &&
                 a.shape[0] == hv.shape[0] && a.shape[1] == weight->view.shape[0] &&
                 hv.shape[1] == weight->view.shape[1];
    if (!fused) { /* the two calls */
        wgt_tensor *g = wgt_matmul(dy, weight);
        wgt_tensor *in[2] = {g, h};
        wgt_tensor *r = g ? wgt_fused(ctx, WGT_GELU_GRAD_EXPR, in, 2) : NULL;
        wgt_tensor_release(g);
        return r;
    }
    wgt_tensor *out = wgt_tensor_alloc(ctx, WGT_F32, h->view.ndim, h->view.shape, op);
    if (!out) return NULL;
    if (a.shape[0] > 0 && hv.shape[1] > 0 && a.shape[1] == 0) { /* no outputs: dy @ weight is zeros */
        if (wgt_fill(out, 0.0) != WGT_OK) {
            wgt_tensor_release(out);
            return NULL;
        }
    } else if (a.shape[0] > 0 && hv.shape[1] > 0) {
        o = out->view;
        o.ndim = 2;
        o.shape[0] = hv.shape[0];
        o.shape[1] = hv.shape[1];
        o.strides[0] = hv.shape[1];
        o.strides[1] = 1;
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.op_name = op;
        call.n_inputs = 3;
        call.n_outputs = 1;
        call.inputs[0] = a;
        call.inputs[1] = weight->view;
        call.inputs[2] = hv;
        call.outputs[0] = o;
        call.matmul.gelu_grad = true;
        if (wgt_run_kernel(ctx, &call) != WGT_OK) {
            wgt_tensor_release(out);
            return NULL;
        }
    }
    return out;
}

wgt_tensor *wgt_linear_ex(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, wgt_dtype out_dtype)
{
    if (x && (unsigned)out_dtype >= WGT_DTYPE_COUNT) {
        wgt_error(x->ctx, WGT_ERR_DTYPE, "wgt_linear_ex: invalid out_dtype %d", (int)out_dtype);
        return NULL;
    }
    return linear(x, weight, bias, out_dtype, true, false, "wgt_linear_ex");
}

wgt_tensor *wgt_linear_swiglu_ex(wgt_tensor *x, wgt_tensor *weight, wgt_dtype out_dtype)
{
    if (x && (unsigned)out_dtype >= WGT_DTYPE_COUNT) {
        wgt_error(x->ctx, WGT_ERR_DTYPE, "wgt_linear_swiglu_ex: invalid out_dtype %d", (int)out_dtype);
        return NULL;
    }
    return linear(x, weight, NULL, out_dtype, true, true, "wgt_linear_swiglu_ex");
}

wgt_tensor *wgt_rms_norm_linear_ex(wgt_tensor *x, wgt_tensor *norm_weight, double eps, wgt_tensor *weight,
                                   wgt_dtype out_dtype, bool swiglu)
{
    const char *op = "wgt_rms_norm_linear_ex";
    wgt_tensor *args[3] = {x, norm_weight, weight};
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx) return NULL;
    if (wgt_tape_wants(ctx, 3, args)) {
        wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under "
                  "wgt_no_grad_push)", op);
        return NULL;
    }
    const wgt_tensor_view *vx = &x->view, *vg = &norm_weight->view;
    const int nd = vx->ndim;
    /* the kernel's case: f32 x whose rows are contiguous, an f32 [K] weight
     * (contiguous), a valid eps; anything else is the two calls it stands for
     * (which also report what is wrong with the arguments, this op's name in front) */
    bool direct = vx->dtype == WGT_F32 && vg->dtype == WGT_F32 && nd >= 1 && vg->ndim == 1 &&
                  vg->shape[0] == vx->shape[nd - 1] && vg->strides[0] == 1 && eps >= 0 && isfinite(eps) &&
                  wgt_view_is_contiguous(vx);
    if (!direct) {
        wgt_tensor *h = wgt_rms_norm(x, norm_weight, eps), *y = NULL;
        if (h) {
            wgt_scope_remove(h);
            y = swiglu ? wgt_linear_swiglu_ex(h, weight, out_dtype) : wgt_linear_ex(h, weight, NULL, out_dtype);
            wgt_tensor_release(h);
        }
        if (!y) wgt_error_name_op(ctx, op);
        return y;
    }
    if ((unsigned)out_dtype >= WGT_DTYPE_COUNT) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: invalid out_dtype %d", op, (int)out_dtype);
        return NULL;
    }
    return linear_norm(x, weight, NULL, out_dtype, true, swiglu, norm_weight, eps, op);
}

/* The decode q/k/v projection with its rotation (llama_forward.c): the MATMUL
 * call of wgt_rms_norm_linear_ex with the rope epilogue (backend.h), written
 * into dst. Validates everything the kernels rely on. */
wgt_status wgt_rms_norm_linear_rope_into(wgt_tensor *dst, wgt_tensor *x, wgt_tensor *norm_weight, double eps,
                                         wgt_tensor *weight, wgt_tensor *table, int64_t pass_begin, int64_t pass_end)
{
    const char *op = "wgt_rms_norm_linear_rope_into";
    wgt_tensor *args[5] = {x, norm_weight, weight, table, dst};
    if (!dst) return WGT_ERR_INVALID_ARGUMENT;
    wgt_context *ctx = wgt_op_begin(op, 5, args);
    if (!ctx) return dst->ctx ? dst->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (wgt_tape_wants(ctx, 4, args))
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "%s: no gradient rule; an argument requires grad (run under "
                         "wgt_no_grad_push)", op);
    const wgt_dtype out_dtype = dst->view.dtype;
    if (out_dtype != WGT_F32 && out_dtype != WGT_F16)
        return wgt_error(ctx, WGT_ERR_DTYPE, "%s: dst %s: need f32 or f16", op, wgt_dtype_name(out_dtype));
    if (!check_linear_args(ctx, op, x, weight, NULL, out_dtype, true)) return ctx->status;
    const wgt_tensor_view *vx = &x->view, *vg = &norm_weight->view, *vw = &weight->view, *vt = &table->view;
    char xs[160];
    wgt_shape_string(vx->ndim, vx->shape, xs, sizeof(xs));
    const int64_t K = vw->shape[1], N = vw->shape[0];
    if (vx->dtype != WGT_F32 || vx->ndim != 2 || vx->shape[0] != 1 || !wgt_view_is_contiguous(vx))
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x %s %s: need one contiguous f32 row [1, in]", op,
                         wgt_dtype_name(vx->dtype), xs);
    if (vg->dtype != WGT_F32 || vg->ndim != 1 || vg->shape[0] != K || vg->strides[0] != 1)
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: norm weight %s [%lld]: need a contiguous f32 [%lld]", op,
                         wgt_dtype_name(vg->dtype), (long long)(vg->ndim ? vg->shape[0] : 0), (long long)K);
    if (!(eps >= 0) || !isfinite(eps))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g: need a finite eps >= 0", op, eps);
    if (!wgt_op_check_rope_into(ctx, op, dst, table, N, pass_begin, pass_end, args, 4)) return ctx->status;
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_MATMUL;
    call.op_name = op;
    call.n_inputs = 4;
    call.n_outputs = 1;
    call.inputs[0] = *vx;
    call.inputs[1] = wgt_view_transposed(vw); /* weight^T [in, out] */
    call.inputs[2] = *vg;
    call.inputs[3] = *vt;
    wgt_tensor_view o = dst->view;
    o.ndim = 2;
    o.shape[0] = 1, o.shape[1] = N;
    o.strides[0] = N, o.strides[1] = 1;
    call.outputs[0] = o;
    call.matmul.norm = true;
    call.matmul.norm_eps = eps;
    call.matmul.rope = true;
    call.matmul.rope_pass_begin = pass_begin;
    call.matmul.rope_pass_end = pass_end;
    return N && K ? wgt_run_kernel(ctx, &call) : wgt_fill(dst, 0.0);
}
