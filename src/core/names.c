/* Name tables for statuses, dtypes and ops, tied to their enums by static asserts;
 * the printed form of a shape. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const status_names[] = {
    "WGT_OK",
    "WGT_ERR_INVALID_ARGUMENT",
    "WGT_ERR_SHAPE_MISMATCH",
    "WGT_ERR_DTYPE",
    "WGT_ERR_OUT_OF_MEMORY",
    "WGT_ERR_DEVICE_LOST",
    "WGT_ERR_NO_ADAPTER",
    "WGT_ERR_SHADER_COMPILE",
    "WGT_ERR_INVALID_WORKGROUP_SIZE",
    "WGT_ERR_UNSUPPORTED",
    "WGT_ERR_IO",
    "WGT_ERR_BAD_FORMAT",
    "WGT_ERR_TIMEOUT",
    "WGT_ERR_CONTEXT_MISMATCH",
    "WGT_ERR_INTERNAL",
};
static_assert(COUNT_OF(status_names) == WGT_STATUS_COUNT, "status name table out of date");

const char *wgt_status_string(wgt_status status)
{
    if ((unsigned)status >= WGT_STATUS_COUNT) return "WGT_ERR_UNKNOWN_STATUS";
    return status_names[status];
}

static const char *const dtype_names[] = {"f32", "f16", "i32", "u8", "bool"};
static const size_t dtype_sizes[] = {4, 2, 4, 1, 1};
static_assert(COUNT_OF(dtype_names) == WGT_DTYPE_COUNT, "dtype name table out of date");
static_assert(COUNT_OF(dtype_sizes) == WGT_DTYPE_COUNT, "dtype size table out of date");

const char *wgt_dtype_name(wgt_dtype dtype)
{
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return "invalid-dtype";
    return dtype_names[dtype];
}

size_t wgt_dtype_size(wgt_dtype dtype)
{
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return 0;
    return dtype_sizes[dtype];
}

static const char *const op_names[] = {
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "where",
    "neg", "abs", "sign", "exp", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
    "tanh", "sigmoid", "relu", "leaky_relu", "elu", "gelu", "gelu_tanh", "silu", "softplus", "clamp",
    "floor", "ceil", "round", "logical_not",
    "fused",
    "sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "cumsum",
    "softmax", "log_softmax",
    "matmul",
    "linear", "attention", "rope",
    "copy", "cast", "fill", "concat", "stack", "split", "slice_assign", "gather", "index_select",
    "scatter_add", "embedding", "pad", "tril", "triu", "one_hot", "topk",
    "view", "permute", "slice", "expand",
    "arange", "linspace", "eye", "rand", "randn",
    "layer_norm", "rms_norm", "cross_entropy", "mse_loss", "dropout",
    "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "group_norm",
    "qlinear",
    "sum_squares",
    "quantize_rows", "dequantize_rows", "attention_q8",
    "dropout_add",
    "gelu_linear",
    "attention_linear",
};
static_assert(COUNT_OF(op_names) == WGT_OP_COUNT, "op name table out of date");

const char *wgt_op_name(wgt_op op)
{
    if ((unsigned)op >= WGT_OP_COUNT) return "invalid-op";
    return op_names[op];
}

const char *wgt_adapter_type_name(wgt_adapter_type type)
{
    switch (type) {
    case WGT_ADAPTER_DISCRETE_GPU: return "discrete";
    case WGT_ADAPTER_INTEGRATED_GPU: return "integrated";
    case WGT_ADAPTER_CPU: return "cpu";
    case WGT_ADAPTER_UNKNOWN: return "unknown";
    case WGT_ADAPTER_ANY: return "any";
    }
    return "invalid";
}

const char *wgt_version(void) { return WGT_VERSION_STRING; }

const char *wgt_shape_string(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    if (used + 1 >= size && size >= 5) memcpy(buf + size - 5, "...]", 5); /* truncated: say so */
    return buf;
}
