/* A small CNN for the 8x8 handwritten digits (data/digits.csv.gz), written on
 * wgtensor's public API only: the reference example of a convolutional
 * network with the library.
 *
 *   x [B, 1, 8, 8] -> conv 3x3 (1 -> 16, pad 1) -> batch norm -> ReLU -> max pool 2   [B, 16, 4, 4]
 *                  -> conv 3x3 (16 -> 32, pad 1) -> batch norm -> ReLU -> max pool 2  [B, 32, 2, 2]
 *                  -> flatten [B, 128] -> linear (128 -> 10)                          logits [B, 10]
 *
 * Parameter names and init follow PyTorch (nn.Conv2d / nn.BatchNorm2d /
 * nn.Linear with their default init: weight and bias uniform in +-1/sqrt(fan_in),
 * batch norm weight 1, bias 0, running mean 0, running var 1, momentum 0.1,
 * eps 1e-5), so tests/golden/make_conv_golden.py builds the same network.
 */
#ifndef WGT_MODELS_DIGITS_CNN_H
#define WGT_MODELS_DIGITS_CNN_H

#include <stdbool.h>
#include <stdint.h>

#include "wgtensor.h"

#define DIGITS_CNN_PARAMS 10  /* trainable tensors */
#define DIGITS_CNN_BUFFERS 4  /* batch norm running statistics */

typedef struct digits_cnn {
    wgt_context *ctx;
    /* conv1.weight, conv1.bias, bn1.weight, bn1.bias, conv2.weight, conv2.bias,
     * bn2.weight, bn2.bias, fc.weight, fc.bias */
    wgt_tensor *params[DIGITS_CNN_PARAMS];
    /* bn1.running_mean, bn1.running_var, bn2.running_mean, bn2.running_var */
    wgt_tensor *buffers[DIGITS_CNN_BUFFERS];
} digits_cnn;

extern const char *const digits_cnn_param_names[DIGITS_CNN_PARAMS];
extern const char *const digits_cnn_buffer_names[DIGITS_CNN_BUFFERS];

/* Parameters drawn from Philox(seed); false (error on ctx) on failure. */
bool digits_cnn_init(digits_cnn *m, wgt_context *ctx, uint64_t seed);
void digits_cnn_free(digits_cnn *m);

/* x [B, 1, 8, 8] f32 -> logits [B, 10]. training: batch statistics, running
 * statistics updated; else the running statistics. */
wgt_tensor *digits_cnn_forward(digits_cnn *m, wgt_tensor *x, bool training);

#endif
