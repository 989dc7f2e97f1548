/*
 * The rule table: for every op of the wgt_op enum, how autograd treats it.
 *   RULE        a backward rule (the function in the table)
 *   COMPOSITE   never recorded itself: its outputs carry the nodes of the ops
 *               it is made of (split = slices, stack = unsqueeze + concat,
 *               embedding = index_select + view)
 *   NONE        no gradient by nature: integer or boolean results
 *               (comparisons, logic, argmax/argmin, one_hot), creation ops,
 *               and the in-place writes (fill, slice assignment), which refuse
 *               tensors on the tape instead
 * A rule's flags say what the engine may do around it (rules.h):
 *   INTO        grad_inputs[i] may come set, a view to write input i's
 *               gradient into (backward.c, window destinations)
 *   ANY_GRAD    grad_out may have any strides (not made contiguous first)
 * test_autograd fails if an op is missing from this table.
 */
#include "autograd/rules.h"
#include "ops/op_common.h"

typedef enum rule_class { CLASS_MISSING = 0, CLASS_RULE, CLASS_COMPOSITE, CLASS_NONE } rule_class;

enum { INTO = 1, ANY_GRAD = 2, ACCUMULATES = 4 };

typedef struct rule_entry {
    rule_class cls;
    wgt_backward_rule rule;
    unsigned flags;
} rule_entry;

#define RULE(fn) {CLASS_RULE, fn, 0}
#define RULE_FLAGS(fn, flags) {CLASS_RULE, fn, flags}
#define ELEMENTWISE RULE(wgt_backward_elementwise)
#define NONE {CLASS_NONE, NULL, 0}

static const rule_entry rules[WGT_OP_COUNT] = {
    [WGT_OP_ADD] = ELEMENTWISE, [WGT_OP_SUB] = ELEMENTWISE, [WGT_OP_MUL] = ELEMENTWISE,
    [WGT_OP_DIV] = ELEMENTWISE, [WGT_OP_POW] = ELEMENTWISE, [WGT_OP_MAXIMUM] = ELEMENTWISE,
    [WGT_OP_MINIMUM] = ELEMENTWISE, [WGT_OP_WHERE] = ELEMENTWISE,
    [WGT_OP_EQ] = NONE, [WGT_OP_NE] = NONE, [WGT_OP_LT] = NONE, [WGT_OP_LE] = NONE, [WGT_OP_GT] = NONE,
    [WGT_OP_GE] = NONE, [WGT_OP_LOGICAL_AND] = NONE, [WGT_OP_LOGICAL_OR] = NONE, [WGT_OP_LOGICAL_NOT] = NONE,
    [WGT_OP_NEG] = ELEMENTWISE, [WGT_OP_ABS] = ELEMENTWISE, [WGT_OP_SIGN] = ELEMENTWISE,
    [WGT_OP_EXP] = ELEMENTWISE, [WGT_OP_LOG] = ELEMENTWISE, [WGT_OP_LOG1P] = ELEMENTWISE,
    [WGT_OP_SQRT] = ELEMENTWISE, [WGT_OP_RSQRT] = ELEMENTWISE, [WGT_OP_RECIPROCAL] = ELEMENTWISE,
    [WGT_OP_SIN] = ELEMENTWISE, [WGT_OP_COS] = ELEMENTWISE, [WGT_OP_TANH] = ELEMENTWISE,
    [WGT_OP_SIGMOID] = ELEMENTWISE, [WGT_OP_RELU] = ELEMENTWISE, [WGT_OP_LEAKY_RELU] = ELEMENTWISE,
    [WGT_OP_ELU] = ELEMENTWISE, [WGT_OP_GELU] = ELEMENTWISE, [WGT_OP_GELU_TANH] = ELEMENTWISE,
    [WGT_OP_SILU] = ELEMENTWISE, [WGT_OP_SOFTPLUS] = ELEMENTWISE, [WGT_OP_CLAMP] = RULE(wgt_backward_clamp),
    [WGT_OP_FLOOR] = ELEMENTWISE, [WGT_OP_CEIL] = ELEMENTWISE, [WGT_OP_ROUND] = ELEMENTWISE,
    [WGT_OP_FUSED] = ELEMENTWISE,
    [WGT_OP_SUM] = RULE(wgt_backward_reduce), [WGT_OP_MEAN] = RULE(wgt_backward_reduce),
    [WGT_OP_MAX] = RULE(wgt_backward_reduce), [WGT_OP_MIN] = RULE(wgt_backward_reduce),
    [WGT_OP_PROD] = RULE(wgt_backward_reduce), [WGT_OP_VAR] = RULE(wgt_backward_reduce),
    [WGT_OP_STD] = RULE(wgt_backward_reduce), [WGT_OP_ARGMAX] = NONE, [WGT_OP_ARGMIN] = NONE,
    [WGT_OP_CUMSUM] = RULE(wgt_backward_cumsum), [WGT_OP_SOFTMAX] = RULE(wgt_backward_softmax),
    [WGT_OP_LOG_SOFTMAX] = RULE(wgt_backward_softmax), [WGT_OP_MATMUL] = RULE(wgt_backward_matmul),
    [WGT_OP_COPY] = ELEMENTWISE, [WGT_OP_CAST] = ELEMENTWISE, [WGT_OP_FILL] = NONE,
    [WGT_OP_CONCAT] = RULE(wgt_backward_concat), [WGT_OP_STACK] = {CLASS_COMPOSITE, NULL, 0},
    [WGT_OP_SPLIT] = {CLASS_COMPOSITE, NULL, 0}, [WGT_OP_SLICE_ASSIGN] = NONE,
    [WGT_OP_GATHER] = RULE(wgt_backward_gather), [WGT_OP_INDEX_SELECT] = RULE(wgt_backward_index_select),
    [WGT_OP_SCATTER_ADD] = RULE(wgt_backward_scatter_add), [WGT_OP_EMBEDDING] = {CLASS_COMPOSITE, NULL, 0},
    [WGT_OP_PAD] = RULE(wgt_backward_pad), [WGT_OP_TRIL] = ELEMENTWISE,
    [WGT_OP_TRIU] = ELEMENTWISE, [WGT_OP_ONE_HOT] = NONE, [WGT_OP_TOPK] = RULE(wgt_backward_topk),
    [WGT_OP_VIEW] = RULE(wgt_backward_view), [WGT_OP_PERMUTE] = RULE(wgt_backward_permute),
    [WGT_OP_SLICE] = RULE(wgt_backward_slice), [WGT_OP_EXPAND] = RULE(wgt_backward_expand),
    [WGT_OP_ARANGE] = NONE, [WGT_OP_LINSPACE] = NONE, [WGT_OP_EYE] = NONE, [WGT_OP_RAND] = NONE,
    [WGT_OP_RANDN] = NONE,
    /* neural-network ops: rules_nn.c, rules_attention.c */
    [WGT_OP_LAYER_NORM] = RULE_FLAGS(wgt_backward_norm, ACCUMULATES),
    [WGT_OP_RMS_NORM] = RULE_FLAGS(wgt_backward_norm, ACCUMULATES),
    [WGT_OP_CROSS_ENTROPY] = RULE(wgt_backward_cross_entropy), [WGT_OP_MSE_LOSS] = RULE(wgt_backward_mse_loss),
    [WGT_OP_DROPOUT] = RULE(wgt_backward_dropout), [WGT_OP_DROPOUT_ADD] = RULE(wgt_backward_dropout_add),
    [WGT_OP_LINEAR] = RULE(wgt_backward_linear), [WGT_OP_ATTENTION] = RULE_FLAGS(wgt_backward_attention, INTO | ANY_GRAD),
    [WGT_OP_ROPE] = RULE(wgt_backward_rope), [WGT_OP_GELU_LINEAR] = RULE(wgt_backward_gelu_linear),
    /* convolutional layers: rules_conv.c */
    [WGT_OP_CONV2D] = RULE(wgt_backward_conv2d), [WGT_OP_CONV_TRANSPOSE2D] = RULE(wgt_backward_conv_transpose2d),
    [WGT_OP_MAX_POOL2D] = RULE(wgt_backward_pool2d), [WGT_OP_AVG_POOL2D] = RULE(wgt_backward_pool2d),
    [WGT_OP_ADAPTIVE_AVG_POOL2D] = RULE(wgt_backward_pool2d), [WGT_OP_BATCH_NORM] = RULE(wgt_backward_batch_norm),
    [WGT_OP_GROUP_NORM] = {CLASS_COMPOSITE, NULL, 0}, /* layer_norm on a view + the affine ops */
    /* inference only: quantized weights have no gradient */
    [WGT_OP_QLINEAR] = NONE, [WGT_OP_QUANTIZE_ROWS] = NONE, [WGT_OP_DEQUANTIZE_ROWS] = NONE,
    [WGT_OP_ATTENTION_Q8] = NONE, [WGT_OP_ATTENTION_LINEAR] = NONE,
    /* a norm for gradient clipping, refused under recording */
    [WGT_OP_SUM_SQUARES] = NONE,
};

wgt_backward_rule wgt_backward_rule_for(wgt_op op)
{
    if ((unsigned)op >= WGT_OP_COUNT) return NULL;
    return rules[op].rule;
}

bool wgt_backward_rule_takes_destinations(wgt_op op) { return (unsigned)op < WGT_OP_COUNT && (rules[op].flags & INTO); }

bool wgt_backward_rule_reads_any_grad(wgt_op op) { return (unsigned)op < WGT_OP_COUNT && (rules[op].flags & ANY_GRAD); }

bool wgt_backward_rule_accumulates(wgt_op op) { return (unsigned)op < WGT_OP_COUNT && (rules[op].flags & ACCUMULATES); }

bool wgt_op_is_differentiable(wgt_op op) { return (unsigned)op < WGT_OP_COUNT && rules[op].cls == CLASS_RULE; }

bool wgt_autograd_op_classified(wgt_op op) { return (unsigned)op < WGT_OP_COUNT && rules[op].cls != CLASS_MISSING; }

bool wgt_autograd_input_needs_grad(const wgt_grad_node *node, int i)
{
    if (i < 0 || i >= node->n_inputs || !node->inputs[i]) return false;
    const wgt_tensor *t = node->inputs[i];
    return t->requires_grad || t->grad_node;
}

wgt_tensor *wgt_grad_sum_to_shape(wgt_tensor *g, int ndim, const int64_t *shape)
{
    int gd = g->view.ndim, lead = gd - ndim;
    if (lead < 0) {
        char a[128], b[128];
        wgt_error(g->ctx, WGT_ERR_INTERNAL, "wgt_backward: gradient %s cannot be summed to %s",
                  wgt_shape_string(gd, g->view.shape, a, sizeof(a)), wgt_shape_string(ndim, shape, b, sizeof(b)));
        return NULL;
    }
    int axes[WGT_MAX_DIMS], n = 0;
    for (int i = 0; i < gd; i++)
        if (i < lead || (shape[i - lead] == 1 && g->view.shape[i] != 1)) axes[n++] = i;
    if (n == 0 && lead == 0) return g; /* already the shape: no new reference */
    wgt_tensor *summed = wgt_sum(g, axes, n, true);
    if (!summed) return NULL;
    wgt_tensor *out = wgt_reshape(summed, ndim, shape);
    wgt_tensor_release(summed);
    return out;
}
