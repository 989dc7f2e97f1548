/*
 * The backward pass: collect the nodes the loss depends on, order them so a
 * node runs only after every consumer of its output has sent its gradient
 * (Kahn's algorithm over consumer counts), run each node's rule, and
 * accumulate the results into the producing nodes or, for leaves that
 * require grad, into tensor->grad.
 *
 * Memory: every rule runs inside its own scope, so its temporaries are freed
 * as soon as it returns; the gradients it returns are taken out of that scope
 * and owned by the engine (node->grad) or the leaf (tensor->grad). Nodes are
 * retained while the pass holds them, because releasing a processed node's
 * inputs (the tape is freed as we go unless keep_graph) may free the tensors
 * that own the nodes still queued.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd/rules.h"
#include "ops/op_common.h"

typedef struct node_list {
    wgt_grad_node **items;
    size_t count, capacity;
} node_list;

static bool list_push(node_list *l, wgt_grad_node *n)
{
    if (l->count == l->capacity) {
        size_t capacity = l->capacity ? l->capacity * 2 : 64;
        wgt_grad_node **grown = realloc(l->items, capacity * sizeof(*grown));
        if (!grown) return false;
        l->items = grown;
        l->capacity = capacity;
    }
    l->items[l->count++] = n;
    return true;
}

static bool same_shape(const wgt_tensor *t, int ndim, const int64_t *shape)
{
    return t->view.ndim == ndim && memcmp(t->view.shape, shape, sizeof(int64_t) * (size_t)ndim) == 0;
}

/* Takes over the scope's reference to g, a result made in the current scope. */
static wgt_tensor *own(wgt_tensor *g)
{
    wgt_scope_remove(g);
    return g;
}

/* *slot += g, both owned; g is consumed. The sum is contiguous in dtype, but
 * for a first gradient that the node's rule reads through its strides anyway
 * (any_layout, wgt_backward_rule_reads_any_grad: attention's dout, which
 * reaches it as a permuted view of the output projection's dx; copying it
 * cost 20 us a GPT block on an H100). */
static wgt_status accumulate(wgt_context *ctx, wgt_tensor **slot, wgt_tensor *g, wgt_dtype dtype, bool any_layout)
{
    wgt_tensor *sum = NULL;
    if (*slot) sum = wgt_add(*slot, g);
    else if (g->view.dtype != dtype) sum = wgt_cast(g, dtype);
    else if (!any_layout && (!wgt_view_is_contiguous(&g->view) || g->view.offset != 0)) sum = wgt_copy(g);
    else sum = wgt_tensor_ref(g);
    wgt_tensor_unref(g);
    if (!sum) return ctx->status ? ctx->status : WGT_ERR_INTERNAL;
    if (sum->view.dtype != dtype) { /* an f16 leaf keeps an f16 gradient */
        wgt_tensor *cast = wgt_cast(sum, dtype);
        wgt_tensor_release(sum);
        if (!cast) return ctx->status;
        sum = cast;
    }
    own(sum);
    wgt_tensor_unref(*slot);
    *slot = sum;
    return WGT_OK;
}

/* ---- slice gradients written into windows ----
 * A slice's gradient is the slice's output gradient placed in zeros of the
 * source's shape; several slices of one tensor (q, k, v out of a fused qkv
 * projection) would each make a zero tensor of the full size, copy their part
 * in, and add the results up: three fills, three copies and two full-size
 * adds for one [B, T, 3C] gradient. Instead, a step-1 slice of an
 * intermediate writes its gradient straight into its window of the source
 * node's gradient buffer, and only the parts no slice wrote are zeroed, once,
 * before the node's rule runs (or before another gradient is added to it).
 * The values are the same: a window holds exactly the copied gradient, the
 * rest zeros. The buffer takes the layout (strides) of the node's forward
 * output, so when that output is a permuted view (heads split out of qkv),
 * the gradient flows back through the same permute and reshape as views,
 * without a copy. */

/* A buffer of x's shape whose strides order the dims as x's do, when x is a
 * dense permutation of a contiguous block (else contiguous). New reference. */
static wgt_tensor *alloc_like_layout(wgt_context *ctx, const wgt_tensor *x)
{
    const wgt_tensor_view *v = &x->view;
    int nd = v->ndim, order[WGT_MAX_DIMS], inverse[WGT_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = 1; i < nd; i++) /* by stride, largest first (insertion sort: nd <= WGT_MAX_DIMS) */
        for (int j = i; j > 0 && v->strides[order[j]] > v->strides[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    bool dense = true;
    int64_t expect = 1, shape[WGT_MAX_DIMS] = {0};
    for (int j = nd - 1; j >= 0; j--) {
        int d = order[j];
        shape[j] = v->shape[d];
        if (v->shape[d] == 0) dense = false;
        if (v->shape[d] == 1) continue; /* any stride */
        if (v->strides[d] != expect) dense = false;
        expect *= v->shape[d];
    }
    if (!dense) return wgt_tensor_alloc(ctx, WGT_F32, nd, v->shape, "wgt_backward");
    wgt_tensor *buf = wgt_tensor_alloc(ctx, WGT_F32, nd, shape, "wgt_backward");
    if (!buf) return NULL;
    for (int j = 0; j < nd; j++) inverse[order[j]] = j; /* out dim d is buffer dim inverse[d] */
    wgt_tensor *out = wgt_permute(buf, inverse);
    wgt_tensor_release(buf); /* the view keeps the storage */
    return out;
}

/* Zeroes the parts of a windowed gradient that no slice wrote; after this it
 * is an ordinary gradient. */
static wgt_status finish_windows(wgt_context *ctx, wgt_grad_node *n)
{
    if (!n->window_axis1) return WGT_OK;
    int axis = n->window_axis1 - 1, count = n->n_windows;
    int64_t (*w)[2] = n->windows;
    n->window_axis1 = 0;
    n->n_windows = 0;
    for (int i = 1; i < count; i++) /* by start */
        for (int j = i; j > 0 && w[j][0] < w[j - 1][0]; j--) {
            int64_t a = w[j][0], b = w[j][1];
            w[j][0] = w[j - 1][0], w[j][1] = w[j - 1][1];
            w[j - 1][0] = a, w[j - 1][1] = b;
        }
    if (wgt_scope_push(ctx) != WGT_OK) return ctx->status;
    int64_t at = 0, size = n->grad->view.shape[axis];
    for (int i = 0; i <= count && ctx->status == WGT_OK; i++) {
        int64_t end = i < count ? w[i][0] : size;
        if (end > at) wgt_fill(wgt_slice(n->grad, axis, at, end, 1), 0.0);
        if (i < count) at = w[i][1];
    }
    wgt_scope_pop(ctx);
    return ctx->status;
}

/* Whether window [lo, hi) along axis can be written into child's gradient:
 * none yet, or a windowed one along that axis with room and no overlap. */
static bool window_fits(const wgt_grad_node *child, int axis, int64_t lo, int64_t hi)
{
    if (!child->grad) return true;
    if (child->window_axis1 != axis + 1 || child->n_windows == 8) return false;
    for (int i = 0; i < child->n_windows; i++)
        if (lo < child->windows[i][1] && child->windows[i][0] < hi) return false; /* overlap: add instead */
    return true;
}

/* child's gradient as a windowed buffer laid out like x (its output), made if
 * it has none yet (window_fits said yes). */
static wgt_status make_windowed(wgt_context *ctx, wgt_grad_node *child, const wgt_tensor *x, int axis)
{
    if (child->grad) return WGT_OK;
    wgt_tensor *buf = alloc_like_layout(ctx, x);
    if (!buf) return ctx->status;
    child->grad = own(buf);
    child->window_axis1 = axis + 1;
    child->n_windows = 0;
    return WGT_OK;
}

/* Node n is a slice of an intermediate: writes its gradient into the source
 * node's windowed gradient. false: not this case (the ordinary rule runs). */
static bool slice_into_window(wgt_context *ctx, wgt_grad_node *n, wgt_status *s)
{
    if (n->op != WGT_OP_SLICE || n->params.ints[2] != 1 || !n->grad || n->grad->view.dtype != WGT_F32) return false;
    wgt_tensor *x = n->inputs[0];
    if (!x || !x->grad_node || x->view.dtype != WGT_F32) return false;
    wgt_grad_node *child = x->grad_node;
    int axis = (int)n->params.ints[0];
    int64_t lo = n->params.ints[1], hi = lo + n->grad->view.shape[axis];
    if (!window_fits(child, axis, lo, hi)) return false;
    if ((*s = make_windowed(ctx, child, x, axis)) != WGT_OK) return true;
    if (hi > lo) {
        if ((*s = wgt_scope_push(ctx)) != WGT_OK) return true;
        wgt_assign(wgt_slice(child->grad, axis, lo, hi, 1), n->grad);
        wgt_scope_pop(ctx);
        if ((*s = ctx->status) != WGT_OK) return true;
        child->windows[child->n_windows][0] = lo;
        child->windows[child->n_windows][1] = hi;
        child->n_windows++;
    }
    *s = WGT_OK;
    return true;
}

/* ---- gradient sums folded into the rule ----
 * A residual stream's gradient is a sum: the gradient that came through the
 * residual add, plus the norm's dx (x -> layer_norm -> .. -> + x). Instead of
 * a separate add kernel after the norm's rule (a read of both and a write, per
 * norm: 20 us of a GPT block's backward on an H200), a rule that accumulates
 * (wgt_backward_rule_accumulates) gets input 0's gradient so far and adds its
 * dx into it in place, when nothing else can see that tensor: the engine's own
 * reference, its storage alone, f32, contiguous, no windows pending. The sum is
 * the same f32 add, so the result is bit for bit the one the add gives.
 * WGT_AUTOGRAD_FOLD=0 turns it off (for comparisons). */
static wgt_tensor *accumulate_dest_for(const wgt_context *ctx, const wgt_grad_node *n)
{
    wgt_tensor *in = n->n_inputs > 0 ? n->inputs[0] : NULL;
    if (ctx->no_grad_fold || !in || !in->grad_node || in->view.dtype != WGT_F32 || !wgt_autograd_input_needs_grad(n, 0))
        return NULL;
    const wgt_grad_node *child = in->grad_node;
    wgt_tensor *g = child->grad;
    if (!g || child->window_axis1 || g->refcount != 1 || !g->view.storage || g->view.storage->refcount != 1 ||
        g->view.dtype != WGT_F32 || !wgt_view_is_contiguous(&g->view) || !same_shape(g, in->view.ndim, in->view.shape))
        return NULL;
    return g;
}

/* ---- window destinations ----
 * A rule that takes destinations (wgt_backward_rule_takes_destinations: the
 * attention's, through wgt_attention_backward_into) can write its gradients
 * through strided views. When its input (q, k or v) is a view (WGT_OP_VIEW) of a
 * step-1 slice of an intermediate and nothing else consumes either, the
 * engine hands the rule that input's window of the intermediate's windowed
 * gradient (shaped like the input, a view) instead of letting the VIEW and
 * SLICE nodes copy the gradient there afterwards; once the rule has written
 * it, those two nodes have nothing left to do and are retired. The GPT's
 * q, k, v out of one [B, T, 3C] projection take this path: three copies of
 * [B, T, C] a block fewer (H100: 20-25 us each). */
typedef struct window_dest {
    wgt_grad_node *view, *slice, *source;
    int axis;
    int64_t lo, hi;
} window_dest;

/* Input i of n: a view of its reserved window (in the rule's scope), or NULL
 * when the path does not apply (or on an error, recorded on ctx). */
static wgt_tensor *window_dest_for(wgt_context *ctx, const wgt_grad_node *n, int i, window_dest *w)
{
    wgt_tensor *in = n->inputs[i];
    if (!in || in->view.dtype != WGT_F32 || !wgt_autograd_input_needs_grad(n, i)) return NULL;
    wgt_grad_node *view = in->grad_node;
    if (!view || view->op != WGT_OP_VIEW || view->n_inputs != 1 || view->pending != 1 || view->grad) return NULL;
    wgt_tensor *x = view->inputs[0];
    wgt_grad_node *slice = x ? x->grad_node : NULL;
    if (!slice || slice->op != WGT_OP_SLICE || slice->params.ints[2] != 1 || slice->pending != 1 || slice->grad)
        return NULL;
    wgt_tensor *src = slice->inputs[0];
    if (!src || !src->grad_node || src->view.dtype != WGT_F32 || x->view.dtype != WGT_F32) return NULL;
    *w = (window_dest){view, slice, src->grad_node, (int)slice->params.ints[0], slice->params.ints[1], 0};
    w->hi = w->lo + x->view.shape[w->axis];
    if (w->hi <= w->lo || !window_fits(w->source, w->axis, w->lo, w->hi)) return NULL;
    if (make_windowed(ctx, w->source, src, w->axis) != WGT_OK) return NULL;
    wgt_tensor *win = wgt_slice(w->source->grad, w->axis, w->lo, w->hi, 1);
    wgt_tensor *dest = win ? wgt_reshape(win, in->view.ndim, in->view.shape) : NULL;
    if (!dest || dest->view.storage != w->source->grad->view.storage) return NULL; /* a copy: not a window */
    w->source->windows[w->source->n_windows][0] = w->lo; /* reserved: finish_windows leaves it alone */
    w->source->windows[w->source->n_windows][1] = w->hi;
    w->source->n_windows++;
    return dest;
}

/* After the rule wrote (or returned) input i's gradient g for window w: the
 * VIEW and SLICE nodes are done (no gradient of their own), the source counts
 * one consumer less. g is the rule's result; dest the view handed to it. */
static wgt_status finish_window_dest(wgt_context *ctx, const window_dest *w, wgt_tensor *dest, wgt_tensor *g,
                                     node_list *ready, bool keep_graph)
{
    if (!g) return wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: a rule gave no gradient for its window");
    if (g == dest) wgt_tensor_unref(g); /* the op's new reference (dest's own stays with the scope) */
    else wgt_assign(dest, g);           /* the rule made its own tensor (the scope frees it): copy it in */
    if (ctx->status != WGT_OK) return ctx->status;
    w->view->pending--;
    w->slice->pending--;
    if (!keep_graph) {
        wgt_tape_node_release_inputs(w->view);
        wgt_tape_node_release_inputs(w->slice);
    }
    if (--w->source->pending == 0 && !list_push(ready, w->source))
        return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
    return WGT_OK;
}

/* Depth-first collection of every node reachable from root, counting for each
 * the edges from reachable consumers (pending). Nodes are retained in *all. */
static wgt_status collect(wgt_context *ctx, wgt_grad_node *root, node_list *all)
{
    uint64_t pass = ++ctx->backward_passes;
    node_list stack = {0};
    wgt_status s = WGT_OK;
    root->visit = pass;
    root->pending = 0;
    if (!list_push(&stack, root) || !list_push(all, root)) goto oom;
    wgt_tape_node_retain(root);
    while (stack.count > 0) {
        wgt_grad_node *n = stack.items[--stack.count];
        if (n->released) {
            s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                          "wgt_backward: the graph through %s was already freed by an earlier backward; pass "
                          "keep_graph to wgt_backward_ex to run backward twice",
                          wgt_op_name(n->op));
            break;
        }
        for (int i = 0; i < n->n_inputs; i++) {
            wgt_tensor *in = n->inputs[i];
            if (in && !in->grad_node && in->requires_grad && ctx->grad_hook) {
                /* count the edges into each leaf: the hook fires when the last arrives */
                if (in->hook_pass != pass) {
                    in->hook_pass = pass;
                    in->hook_pending = 0;
                }
                in->hook_pending++;
            }
            if (!in || !in->grad_node) continue;
            wgt_grad_node *child = in->grad_node;
            if (child->visit != pass) {
                child->visit = pass;
                child->pending = 0;
                if (!list_push(&stack, child) || !list_push(all, child)) goto oom;
                wgt_tape_node_retain(child);
            }
            child->pending++;
        }
    }
    free(stack.items);
    return s;
oom:
    free(stack.items);
    return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory ordering the tape");
}

static wgt_status run_node_traced(wgt_context *ctx, wgt_grad_node *n, node_list *ready, bool keep_graph);

/* Runs node's rule on its accumulated gradient and sends the results on,
 * labelling what that allocates for wgt_memory_trace_peak (trace_where says
 * which part of the processing, trace_rule1 which node's). */
static wgt_status run_node(wgt_context *ctx, wgt_grad_node *n, node_list *ready, bool keep_graph)
{
    ctx->trace_rule1 = (int)n->op + 1;
    wgt_status s = run_node_traced(ctx, n, ready, keep_graph);
    ctx->trace_where = NULL;
    ctx->trace_rule1 = 0;
    return s;
}

static wgt_status run_node_traced(wgt_context *ctx, wgt_grad_node *n, node_list *ready, bool keep_graph)
{
    ctx->trace_where = "windows of";
    wgt_status s = finish_windows(ctx, n);
    if (s != WGT_OK) return s;
    ctx->trace_where = "slice window of";
    if (slice_into_window(ctx, n, &s)) {
        wgt_grad_node *child = n->inputs[0]->grad_node;
        if (s == WGT_OK && --child->pending == 0 && !list_push(ready, child))
            s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
        wgt_tensor_unref(n->grad);
        n->grad = NULL;
        if (!keep_graph) wgt_tape_node_release_inputs(n);
        return s;
    }
    wgt_backward_rule rule = wgt_backward_rule_for(n->op);
    if (!rule)
        return wgt_error(ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: %s has no gradient (not differentiable)",
                         wgt_op_name(n->op));
    wgt_tensor *stack_grads[8] = {0};
    wgt_tensor **grads = n->n_inputs <= 8 ? stack_grads : calloc((size_t)n->n_inputs, sizeof(*grads));
    if (!grads) return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
    s = wgt_scope_push(ctx);
    ctx->trace_where = "rule of";
    window_dest dest_of[3];
    wgt_tensor *dest[3] = {NULL, NULL, NULL};
    wgt_tensor *acc_into = NULL; /* input 0's gradient handed to an accumulating rule */
    bool folded = false;
    int n_dest = wgt_backward_rule_takes_destinations(n->op) && !ctx->no_window_dest ? n->n_inputs : 0;
    if (n_dest > 3) n_dest = 3; /* the inputs that may get one (dest_of's size) */
    if (s == WGT_OK) {
        for (int i = 0; i < n_dest && ctx->status == WGT_OK; i++) grads[i] = dest[i] = window_dest_for(ctx, n, i, &dest_of[i]);
        if (wgt_backward_rule_accumulates(n->op)) grads[0] = acc_into = accumulate_dest_for(ctx, n);
        bool ran = ctx->status == WGT_OK;
        s = ran ? rule(n, n->grad, grads) : ctx->status;
        if (acc_into) { /* the rule added into input 0's gradient: no new one to add */
            folded = s == WGT_OK && grads[0] == acc_into;
            if (s == WGT_OK && !folded)
                s = wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: the rule of %s did not add into its input's gradient",
                              wgt_op_name(n->op));
            grads[0] = NULL; /* child->grad's own reference, not the rule's */
        }
        for (int i = 0; i < n_dest; i++) {
            if (!dest[i]) continue;
            wgt_tensor *g = ran ? grads[i] : NULL; /* not run: grads[i] is still the handed view */
            grads[i] = NULL;
            if (s == WGT_OK) s = finish_window_dest(ctx, &dest_of[i], dest[i], g, ready, keep_graph);
            else if (g == dest[i]) wgt_tensor_unref(g); /* the op's reference, were one returned */
        }
        for (int i = 0; i < n->n_inputs; i++) {
            if (!grads[i]) continue;
            if (s != WGT_OK || !wgt_autograd_input_needs_grad(n, i)) {
                grads[i] = NULL; /* the scope frees it */
                continue;
            }
            /* take over the rule scope's reference, or add one (a rule may pass
             * grad_out itself on) */
            if (grads[i]->scope_level == ctx->n_scopes - 1) wgt_scope_remove(grads[i]);
            else wgt_tensor_ref(grads[i]);
        }
        wgt_status popped = wgt_scope_pop(ctx);
        if (s == WGT_OK) s = popped;
    }
    if (s == WGT_OK && ctx->status != WGT_OK) s = ctx->status;
    for (int i = 0; i < n->n_inputs; i++) {
        wgt_tensor *g = grads[i];
        if (!g) continue;
        grads[i] = NULL;
        wgt_tensor *in = n->inputs[i];
        if (s != WGT_OK) {
            wgt_tensor_unref(g);
            continue;
        }
        if (!same_shape(g, in->view.ndim, in->view.shape)) {
            char a[128], b[128];
            s = wgt_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: the rule of %s gave input %d a gradient of shape %s, "
                                                 "the input is %s",
                          wgt_op_name(n->op), i, wgt_shape_string(g->view.ndim, g->view.shape, a, sizeof(a)),
                          wgt_shape_string(in->view.ndim, in->view.shape, b, sizeof(b)));
            wgt_tensor_unref(g);
            continue;
        }
        ctx->trace_where = "grad sent on by";
        if (in->grad_node) {
            wgt_grad_node *child = in->grad_node;
            s = finish_windows(ctx, child); /* windows first, then the sum */
            if (s == WGT_OK) s = accumulate(ctx, &child->grad, g, WGT_F32, wgt_backward_rule_reads_any_grad(child->op));
            else wgt_tensor_unref(g);
            if (s == WGT_OK && --child->pending == 0 && !list_push(ready, child))
                s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
        } else if (in->requires_grad) {
            s = accumulate(ctx, &in->grad, g, in->view.dtype, false);
        } else {
            wgt_tensor_unref(g);
        }
    }
    if (grads != stack_grads) free(grads);
    if (folded && s == WGT_OK) { /* input 0's gradient is final from this edge: count it down */
        wgt_grad_node *child = n->inputs[0]->grad_node;
        if (--child->pending == 0 && !list_push(ready, child))
            s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
    }
    /* Every edge into a leaf is counted down whether or not the rule gave it a
     * gradient; the last one makes the leaf's .grad final for this pass. */
    for (int i = 0; ctx->grad_hook && i < n->n_inputs; i++) {
        wgt_tensor *in = n->inputs[i];
        if (!in || in->grad_node || !in->requires_grad || in->hook_pass != ctx->backward_passes) continue;
        if (--in->hook_pending == 0 && s == WGT_OK && in->grad) ctx->grad_hook(in, in->grad, ctx->grad_hook_user);
    }
    wgt_tensor_unref(n->grad);
    n->grad = NULL;
    if (!keep_graph) wgt_tape_node_release_inputs(n);
    return s;
}

wgt_status wgt_backward_ex(wgt_tensor *loss, wgt_tensor *grad_output, bool keep_graph)
{
    const char *op = "wgt_backward";
    wgt_tensor *args[2] = {loss, grad_output};
    wgt_context *ctx = wgt_op_begin(op, grad_output ? 2 : 1, args);
    if (!ctx) return loss && loss->ctx ? loss->ctx->status : WGT_ERR_INVALID_ARGUMENT;
    if (!loss->grad_node && !loss->requires_grad)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "%s: the loss does not require grad (no input of the ops that made it requires grad, it "
                         "was made under wgt_no_grad_push, or it came from an op without a gradient)",
                         op);
    char a[128], b[128];
    if (grad_output) {
        if (!same_shape(grad_output, loss->view.ndim, loss->view.shape))
            return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: grad_output %s does not match the loss %s", op,
                             wgt_shape_string(grad_output->view.ndim, grad_output->view.shape, a, sizeof(a)),
                             wgt_shape_string(loss->view.ndim, loss->view.shape, b, sizeof(b)));
        if (!wgt_dtype_is_float(grad_output->view.dtype))
            return wgt_error(ctx, WGT_ERR_DTYPE, "%s: grad_output is %s, a float dtype is needed", op,
                             wgt_dtype_name(grad_output->view.dtype));
    } else if (wgt_shape_numel(loss->view.ndim, loss->view.shape) != 1) {
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH,
                         "%s: the loss %s is not a scalar; pass grad_output to wgt_backward_ex", op,
                         wgt_shape_string(loss->view.ndim, loss->view.shape, a, sizeof(a)));
    }

    wgt_no_grad_push(ctx);
    /* d loss / d loss: grad_output, or ones */
    wgt_tensor *seed = grad_output ? wgt_cast(grad_output, WGT_F32) /* our own copy */
                                   : wgt_full(ctx, WGT_F32, loss->view.ndim, loss->view.shape, 1.0);
    if (!seed) {
        wgt_no_grad_pop(ctx);
        return ctx->status;
    }
    own(seed);
    if (!loss->grad_node) { /* the loss is itself a leaf */
        wgt_status s = accumulate(ctx, &loss->grad, seed, loss->view.dtype, false);
        if (s == WGT_OK && ctx->grad_hook) ctx->grad_hook(loss, loss->grad, ctx->grad_hook_user);
        wgt_no_grad_pop(ctx);
        return s;
    }
    node_list all = {0}, ready = {0};
    wgt_grad_node *root = loss->grad_node;
    wgt_status s = collect(ctx, root, &all);
    if (s == WGT_OK) s = accumulate(ctx, &root->grad, seed, WGT_F32, false);
    else wgt_tensor_unref(seed);
    if (s == WGT_OK && !list_push(&ready, root)) s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    while (s == WGT_OK && ready.count > 0) {
        wgt_grad_node *n = ready.items[--ready.count];
        s = run_node(ctx, n, &ready, keep_graph);
    }
    /* Gradients left on nodes (after an error) are dropped. */
    for (size_t i = 0; i < all.count; i++) {
        wgt_tensor_unref(all.items[i]->grad);
        all.items[i]->grad = NULL;
        all.items[i]->window_axis1 = 0;
        wgt_tape_node_release(all.items[i]);
    }
    free(all.items);
    free(ready.items);
    wgt_no_grad_pop(ctx);
    return s;
}

wgt_status wgt_backward(wgt_tensor *loss) { return wgt_backward_ex(loss, NULL, false); }

wgt_status wgt_backward_set_grad_hook(wgt_context *ctx, wgt_grad_ready_fn fn, void *user)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    ctx->grad_hook = fn;
    ctx->grad_hook_user = fn ? user : NULL;
    return WGT_OK;
}
