/*
 * Layer norm and rms norm front-ends, forward and backward (WGT_KERNEL_NN).
 *
 *   layer_norm: x [..., D], weight [D]?, bias [D]? -> [..., D]
 *   rms_norm:   x [..., D], weight [D]?            -> [..., D]
 *
 * Forward is one kernel that also writes the per-row (mean, rstd) f32 [R, 2]
 * that backward needs, so backward never recomputes the statistics. Backward
 * is one kernel for dx and one for the weight/bias partial sums per chunk of
 * rows, which a REDUCE sums: no float atomics, deterministic on both backends.
 */
#include <math.h>
#include <string.h>

#include "core/tape.h"
#include "ops/nn_internal.h"
#include "ops/op_common.h"

/* The weight/bias gradient kernel runs a thread per (chunk of rows, 4
 * columns): about NORM_GRAD_THREADS of them fill a large GPU (132 SMs x 2048)
 * while the [chunks, D] partials stay a small fraction of the traffic (a chunk
 * has at least NORM_GRAD_MIN_CHUNK_ROWS rows). */
#define NORM_GRAD_THREADS 262144
#define NORM_GRAD_MAX_CHUNKS 4096
#define NORM_GRAD_MIN_CHUNK_ROWS 4
/* Rows per workgroup of the dx kernel when it also sums the weight/bias
 * gradients. It walks its rows one after another (a load and a workgroup sum
 * each, about a microsecond), so a chunk must stay short next to the time the
 * whole pass takes to stream x and dy (which grows with D), while the
 * [chunks, D] partials it writes (read again by PARTIALS_SUM) must stay small
 * next to x and dy: about D / 128 rows (6 at D = 768, 32 at D = 4096: partials
 * of 4/3 chunks / rows of the traffic, 22% and 4%), and at least
 * NORM_FUSED_MIN_CHUNKS chunks so that every SM of a large GPU has work. */
#define NORM_FUSED_ROWS_PER_128 1
#define NORM_FUSED_MAX_CHUNK_ROWS 64
#define NORM_FUSED_MIN_CHUNKS 264
/* ... and at most NORM_FUSED_MAX_CHUNKS chunks, where PARTIALS_SUM's column
 * sums stay short: the GPT's 16384 x 384 rows made 5461 chunks of 3 rows,
 * whose sums (48 workgroups walking 85 rows a lane) took 32 us on an H100;
 * 1024 chunks of 16 rows: 10 us, and the dx pass 38.6 -> 35.4 us (fewer
 * partials to write); training step -0.3 ms (8, 16 and 32 rows alike). */
#define NORM_FUSED_MAX_CHUNKS 1024

/* The [rows, d] view of a contiguous tensor's elements. */
static wgt_tensor_view rows_view(const wgt_tensor *t, int64_t rows, int64_t d)
{
    wgt_tensor_view v = t->view;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = d;
    v.strides[0] = d;
    v.strides[1] = 1;
    return v;
}

/* Internal computations record nothing on the tape (the op records one node). */
static void grad_off(wgt_context *ctx) { ctx->no_grad_depth++; }
static void grad_on(wgt_context *ctx) { ctx->no_grad_depth--; }

static bool check_param(wgt_context *ctx, wgt_tensor *p, const char *what, int64_t d, const char *op)
{
    if (!p) return true;
    char buf[128];
    if (!wgt_dtype_is_float(p->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s has dtype %s, expected f32 or f16", op, what,
                  wgt_dtype_name(p->view.dtype));
        return false;
    }
    if (p->view.ndim != 1 || p->view.shape[0] != d) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %s has shape %s, expected [%lld] (the last dim of x)", op, what,
                  wgt_shape_string(p->view.ndim, p->view.shape, buf, sizeof(buf)), (long long)d);
        return false;
    }
    return true;
}

static wgt_tensor *norm_forward(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, double eps, bool rms,
                                const char *op)
{
    wgt_tensor *args[3] = {x, weight, bias};
    wgt_context *ctx = wgt_op_begin(op, 1, &x);
    if (!ctx) return NULL;
    if ((weight && weight->ctx != ctx) || (bias && bias->ctx != ctx)) {
        wgt_error(ctx, WGT_ERR_CONTEXT_MISMATCH, "%s: weight or bias belongs to another context", op);
        return NULL;
    }
    char buf[128];
    if (!wgt_dtype_is_float(x->view.dtype)) {
        wgt_error(ctx, WGT_ERR_DTYPE, "%s: x has dtype %s, expected f32 or f16", op, wgt_dtype_name(x->view.dtype));
        return NULL;
    }
    if (x->view.ndim < 1) {
        wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: x has shape %s; it needs a last dim to normalize over", op,
                  wgt_shape_string(x->view.ndim, x->view.shape, buf, sizeof(buf)));
        return NULL;
    }
    if (!(eps >= 0) || !isfinite(eps)) {
        wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: eps %g must be finite and >= 0", op, eps);
        return NULL;
    }
    int64_t d = x->view.shape[x->view.ndim - 1];
    if (!check_param(ctx, weight, "weight", d, op) || !check_param(ctx, bias, "bias", d, op)) return NULL;
    int64_t numel = wgt_shape_numel(x->view.ndim, x->view.shape), rows = d ? numel / d : 0;

    wgt_tensor *y = wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, op);
    int64_t stats_shape[2] = {rows, 2};
    wgt_tensor *stats = wgt_tensor_alloc(ctx, WGT_F32, 2, stats_shape, op);
    grad_off(ctx);
    wgt_tensor *xc = y && stats ? wgt_contiguous(x) : NULL;
    wgt_tensor *wc = weight && xc ? wgt_contiguous(weight) : NULL;
    wgt_tensor *bc = bias && xc ? wgt_contiguous(bias) : NULL;
    grad_on(ctx);
    bool ok = xc && (!weight || wc) && (!bias || bc);
    if (ok && numel > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_NORM;
        call.nn.rms = rms;
        call.nn.eps = eps;
        call.nn.has_weight = weight != NULL;
        call.nn.has_bias = bias != NULL;
        call.inputs[call.n_inputs++] = rows_view(xc, rows, d);
        if (wc) call.inputs[call.n_inputs++] = wc->view;
        if (bc) call.inputs[call.n_inputs++] = bc->view;
        call.n_outputs = 2;
        call.outputs[0] = rows_view(y, rows, d);
        call.outputs[1] = stats->view;
        ok = wgt_run_kernel(ctx, &call) == WGT_OK;
    }
    wgt_tensor_release(xc);
    wgt_tensor_release(wc);
    wgt_tensor_release(bc);
    int n_in = rms ? 2 : 3;
    if (ok && wgt_tape_wants(ctx, n_in, args)) {
        wgt_scope_remove(stats); /* a temporary the node keeps: a scope pop must not release it a second time */
        wgt_grad_node *node = wgt_tape_record(y, rms ? WGT_OP_RMS_NORM : WGT_OP_LAYER_NORM, n_in, args);
        ok = node && wgt_tape_save(node, stats);
        if (node) node->params.reals[0] = eps;
    }
    wgt_tensor_release(stats);
    if (!ok) {
        wgt_tensor_release(y);
        return NULL;
    }
    return y;
}

wgt_tensor *wgt_layer_norm(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *bias, double eps)
{
    return norm_forward(x, weight, bias, eps, false, "wgt_layer_norm");
}

wgt_tensor *wgt_rms_norm(wgt_tensor *x, wgt_tensor *weight, double eps)
{
    return norm_forward(x, weight, NULL, eps, true, "wgt_rms_norm");
}

/* ------------------------------------------------------------ backward */

/* Column sums of the [P, D] partials pw (and pb) -> new [D] f32 tensors in
 * *dweight (and *dbias), both in one PARTIALS_SUM kernel (a generic REDUCE of
 * a short, wide matrix has long serial chains per thread). */
static wgt_status sum_partials(wgt_context *ctx, const char *op, wgt_tensor *pw, wgt_tensor *pb, wgt_tensor **dweight,
                               wgt_tensor **dbias)
{
    int64_t chunks = pw->view.shape[0], d = pw->view.shape[1];
    wgt_tensor *dw = wgt_tensor_alloc(ctx, WGT_F32, 1, &d, op);
    wgt_tensor *db = pb ? wgt_tensor_alloc(ctx, WGT_F32, 1, &d, op) : NULL;
    wgt_status s = dw && (!pb || db) ? WGT_OK : wgt_context_status(ctx);
    if (s == WGT_OK && chunks * d > 0) {
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_PARTIALS_SUM;
        call.nn.has_bias = pb != NULL;
        call.inputs[call.n_inputs++] = pw->view;
        if (pb) call.inputs[call.n_inputs++] = pb->view;
        call.outputs[call.n_outputs++] = dw->view;
        if (db) call.outputs[call.n_outputs++] = db->view;
        s = wgt_run_kernel(ctx, &call);
    } else if (s == WGT_OK && d > 0) { /* no rows: the gradients are zeros */
        s = wgt_fill(dw, 0);
        if (s == WGT_OK && db) s = wgt_fill(db, 0);
    }
    if (s != WGT_OK) {
        wgt_tensor_release(dw);
        wgt_tensor_release(db);
        return s;
    }
    if (dweight) *dweight = dw;
    else wgt_tensor_release(dw);
    if (dbias) *dbias = db;
    else wgt_tensor_release(db);
    return WGT_OK;
}

wgt_status wgt_norm_backward(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *stats, wgt_tensor *dy, bool rms,
                             wgt_tensor **dx, wgt_tensor *dx_into, wgt_tensor **dweight, wgt_tensor **dbias)
{
    const char *op = rms ? "wgt_rms_norm backward" : "wgt_layer_norm backward";
    wgt_tensor *args[3] = {x, stats, dy};
    if (dx) *dx = NULL;
    if (dweight) *dweight = NULL;
    if (dbias) *dbias = NULL;
    wgt_context *ctx = wgt_op_begin(op, 3, args);
    if (!ctx) return x && x->ctx ? wgt_context_status(x->ctx) : WGT_ERR_INVALID_ARGUMENT;
    int64_t d = x->view.ndim ? x->view.shape[x->view.ndim - 1] : 1;
    int64_t numel = wgt_shape_numel(x->view.ndim, x->view.shape), rows = d ? numel / d : 0;
    char b1[128], b2[128];
    if (dy->view.ndim != x->view.ndim ||
        memcmp(dy->view.shape, x->view.shape, sizeof(int64_t) * (size_t)x->view.ndim) != 0 ||
        !wgt_dtype_is_float(dy->view.dtype) || stats->view.dtype != WGT_F32 ||
        wgt_shape_numel(stats->view.ndim, stats->view.shape) != 2 * rows) {
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: dy %s %s does not match x %s, or stats are not f32 [%lld, 2]",
                         op, wgt_shape_string(dy->view.ndim, dy->view.shape, b1, sizeof(b1)),
                         wgt_dtype_name(dy->view.dtype), wgt_shape_string(x->view.ndim, x->view.shape, b2, sizeof(b2)),
                         (long long)rows);
    }
    if (dx_into && (!dx || x->view.dtype != WGT_F32 || dx_into->view.dtype != WGT_F32 ||
                    !wgt_view_is_contiguous(&dx_into->view) || dx_into->view.ndim != x->view.ndim ||
                    memcmp(dx_into->view.shape, x->view.shape, sizeof(int64_t) * (size_t)x->view.ndim) != 0)) {
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "%s: the gradient to add dx to, %s %s, must be f32, contiguous and of the shape of x %s %s",
                         op, wgt_shape_string(dx_into->view.ndim, dx_into->view.shape, b1, sizeof(b1)),
                         wgt_dtype_name(dx_into->view.dtype), wgt_shape_string(x->view.ndim, x->view.shape, b2, sizeof(b2)),
                         wgt_dtype_name(x->view.dtype));
    }
    wgt_tensor *xc = wgt_contiguous(x), *dyc = wgt_contiguous(dy), *sc = wgt_contiguous(stats);
    wgt_tensor *wc = weight ? wgt_contiguous(weight) : NULL;
    wgt_status s = xc && dyc && sc && (!weight || wc) ? WGT_OK : wgt_context_status(ctx);
    /* Partial sums of dweight/dbias per chunk of rows, [chunks, D] f32, summed
     * by PARTIALS_SUM below. With dx wanted too they come from the dx kernel
     * (x and dy read once), a workgroup per chunk of about D / 128 rows; alone,
     * from NORM_PARAM_GRADS with about NORM_GRAD_THREADS threads. */
    bool partials = dweight || dbias, fused = partials && dx;
    int64_t chunk = 0;
    wgt_tensor *pw = NULL, *pb = NULL;
    if (s == WGT_OK && partials) {
        int64_t columns = (d + 3) / 4, target = NORM_GRAD_THREADS / (columns ? columns : 1);
        if (target < 1) target = 1;
        if (target > NORM_GRAD_MAX_CHUNKS) target = NORM_GRAD_MAX_CHUNKS;
        chunk = (rows + target - 1) / target;
        if (chunk < NORM_GRAD_MIN_CHUNK_ROWS) chunk = NORM_GRAD_MIN_CHUNK_ROWS;
        if (fused) {
            chunk = d / 128 * NORM_FUSED_ROWS_PER_128;
            int64_t max_chunks = ctx->norm_fused_chunks ? ctx->norm_fused_chunks : NORM_FUSED_MAX_CHUNKS;
            int64_t few = (rows + max_chunks - 1) / max_chunks;
            if (chunk < few) chunk = few;
            if (chunk > NORM_FUSED_MAX_CHUNK_ROWS) chunk = NORM_FUSED_MAX_CHUNK_ROWS;
            int64_t spread = (rows + NORM_FUSED_MIN_CHUNKS - 1) / NORM_FUSED_MIN_CHUNKS;
            if (chunk > spread) chunk = spread;
            if (chunk < 1) chunk = 1;
        }
        int64_t chunks = rows ? (rows + chunk - 1) / chunk : 1;
        int64_t pshape[2] = {chunks, d};
        /* the kernels write every partial; with no rows they are zeros */
        pw = numel > 0 ? wgt_tensor_empty(ctx, WGT_F32, 2, pshape) : wgt_zeros(ctx, WGT_F32, 2, pshape);
        pb = !dbias ? NULL : numel > 0 ? wgt_tensor_empty(ctx, WGT_F32, 2, pshape) : wgt_zeros(ctx, WGT_F32, 2, pshape);
        if (!pw || (dbias && !pb)) s = wgt_context_status(ctx);
    }
    wgt_kernel_call call;
    if (s == WGT_OK && dx) {
        *dx = dx_into ? dx_into : wgt_tensor_alloc(ctx, x->view.dtype, x->view.ndim, x->view.shape, op);
        if (!*dx) s = wgt_context_status(ctx);
        if (s == WGT_OK && numel > 0) {
            memset(&call, 0, sizeof(call));
            call.kind = WGT_KERNEL_NN;
            call.op_name = op;
            call.nn.kernel = WGT_NN_NORM_BACKWARD;
            call.nn.rms = rms;
            call.nn.has_weight = wc != NULL;
            call.nn.accumulate = dx_into != NULL;
            call.inputs[call.n_inputs++] = rows_view(xc, rows, d);
            if (wc) call.inputs[call.n_inputs++] = wc->view;
            call.inputs[call.n_inputs++] = rows_view(sc, rows, 2);
            call.inputs[call.n_inputs++] = rows_view(dyc, rows, d);
            call.n_outputs = 1;
            call.outputs[0] = rows_view(*dx, rows, d);
            if (fused) {
                call.nn.chunk_rows = chunk;
                call.nn.has_bias = pb != NULL;
                call.outputs[call.n_outputs++] = pw->view;
                if (pb) call.outputs[call.n_outputs++] = pb->view;
            }
            s = wgt_run_kernel(ctx, &call);
        }
    }
    if (s == WGT_OK && partials && !fused && numel > 0) {
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_NN;
        call.op_name = op;
        call.nn.kernel = WGT_NN_NORM_PARAM_GRADS;
        call.nn.rms = rms;
        call.nn.has_bias = dbias != NULL;
        call.nn.chunk_rows = chunk;
        call.n_inputs = 3;
        call.inputs[0] = rows_view(xc, rows, d);
        call.inputs[1] = rows_view(sc, rows, 2);
        call.inputs[2] = rows_view(dyc, rows, d);
        call.n_outputs = dbias ? 2 : 1;
        call.outputs[0] = pw->view;
        if (pb) call.outputs[1] = pb->view;
        s = wgt_run_kernel(ctx, &call);
    }
    if (s == WGT_OK && partials) s = sum_partials(ctx, op, pw, pb, dweight, dbias);
    wgt_tensor_release(pw);
    wgt_tensor_release(pb);
    wgt_tensor_release(xc);
    wgt_tensor_release(dyc);
    wgt_tensor_release(sc);
    wgt_tensor_release(wc);
    if (s != WGT_OK) {
        if (dx && *dx != dx_into) wgt_tensor_release(*dx);
        if (dx) *dx = NULL;
        if (dweight) wgt_tensor_release(*dweight), *dweight = NULL;
        if (dbias) wgt_tensor_release(*dbias), *dbias = NULL;
    }
    return s;
}
