/*
 * The convolution family's internals shared by its front-ends (src/ops/
 * nn_conv.c, nn_pool.c, nn_batch_norm.c) and its backward rules
 * (src/autograd/rules_conv.c). Each function runs with grad mode as the caller
 * left it (rules run with it off), returns new tensors and records an error on
 * the context on failure (NULL / the status).
 *
 * Tape records of the forward ops (node->params slots):
 *   CONV2D, CONV_TRANSPOSE2D  inputs {x, weight, bias|NULL}; ints[0..10]: the
 *               wgt_conv_geometry fields stride_h .. out_pad_w in order
 *               (wgt_conv_geometry_to_ints)
 *   MAX_POOL2D  inputs {x}; saved[0] argmax i32 [N, C, OH, OW]; ints: the pool
 *               geometry (wgt_pool_geometry_to_ints)
 *   AVG_POOL2D, ADAPTIVE_AVG_POOL2D  inputs {x}; ints: the pool geometry
 *   BATCH_NORM  inputs {x, weight|NULL, bias|NULL}; saved[0] mean, saved[1]
 *               var (f32 [C]: the batch's biased variance when training, a
 *               copy of the running statistics otherwise); ints[0] training;
 *               reals[0] eps
 */
#ifndef WGT_OPS_CONV_INTERNAL_H
#define WGT_OPS_CONV_INTERNAL_H

#include "core/internal.h"

/* A convolution's hyperparameters (sizes come from the tensors). */
typedef struct wgt_conv_geometry {
    int64_t stride_h, stride_w;
    int64_t pad_top, pad_bottom, pad_left, pad_right;
    int64_t dil_h, dil_w, groups;
    int64_t out_pad_h, out_pad_w; /* conv_transpose2d */
} wgt_conv_geometry;

#define WGT_CONV_GEOMETRY_INTS 11
void wgt_conv_geometry_to_ints(const wgt_conv_geometry *g, int64_t *ints);
wgt_conv_geometry wgt_conv_geometry_from_ints(const int64_t *ints);

/* y = conv2d(x, w) + bias for x [N, C, H, W], w [K, C/g, KH, KW] (shapes
 * already validated). */
wgt_tensor *wgt_conv2d_run(wgt_tensor *x, wgt_tensor *w, wgt_tensor *bias, const wgt_conv_geometry *g,
                           const char *op);
/* The input gradient: dy [N, K, OH, OW], w [K, C/g, KH, KW] -> dx [N, C, h, w]
 * (h, w: the convolution's input size, which dy's size alone does not fix). */
wgt_tensor *wgt_conv2d_input_grad(wgt_tensor *dy, wgt_tensor *w, int64_t h, int64_t w_size,
                                  const wgt_conv_geometry *g, const char *op);
/* The weight gradient: x [N, C, H, W], dy [N, K, OH, OW] -> dw [K, C/g, kh, kw]
 * (f32 sums cast to dtype). */
wgt_tensor *wgt_conv2d_weight_grad(wgt_tensor *x, wgt_tensor *dy, int64_t kh, int64_t kw, wgt_dtype dtype,
                                   const wgt_conv_geometry *g, const char *op);

/* Pooling hyperparameters; mode is a wgt_pool_mode. */
typedef struct wgt_pool_geometry {
    int64_t mode, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, count_include_pad, out_h, out_w;
} wgt_pool_geometry;

#define WGT_POOL_GEOMETRY_INTS 12
void wgt_pool_geometry_to_ints(const wgt_pool_geometry *g, int64_t *ints);
wgt_pool_geometry wgt_pool_geometry_from_ints(const int64_t *ints);

/* dy [N, C, OH, OW] (+ argmax for max pooling) -> dx with x's shape [N, C, H, W]. */
wgt_tensor *wgt_pool2d_backward(wgt_tensor *dy, wgt_tensor *argmax, const int64_t *x_shape, wgt_dtype dtype,
                                const wgt_pool_geometry *g, const char *op);

/* The batch norm backward kernel: x [N, C, ...], weight [C] or NULL, mean and
 * var f32 [C] as saved, dy like x -> *dx (x's dtype), *dweight and *dbias
 * ([C], f32) where the pointer is not NULL. */
wgt_status wgt_batch_norm_backward(wgt_tensor *x, wgt_tensor *weight, wgt_tensor *mean, wgt_tensor *var,
                                   wgt_tensor *dy, bool training, double eps, wgt_tensor **dx, wgt_tensor **dweight,
                                   wgt_tensor **dbias);

#endif /* WGT_OPS_CONV_INTERNAL_H */
