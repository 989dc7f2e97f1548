/* Convolutional benchmark cases of wgt bench (bench_cnn.c): the ResNet-50
 * convolution layers at batch 32, forward + both backward passes, and a whole
 * ResNet-18 training step (batch 64, 224 x 224, SGD with momentum) on the
 * public API. bench/cnn_torch_ref.py times the same cases in PyTorch. Each
 * setup frees what an earlier one made; bench_cnn_release frees the rest. */
#ifndef WGT_BENCH_CNN_H
#define WGT_BENCH_CNN_H

#include <stdbool.h>
#include <stdint.h>

#include "wgtensor.h"

#define BENCH_CONV_LAYERS 7

/* Layer i of the ResNet-50 table (Cin, Cout, k, stride, H), batch and H
 * divided by div (1: the real sizes). */
bool bench_conv_setup(wgt_context *ctx, int layer, int64_t div);
/* y = conv2d(x, w); backward with a fixed upstream gradient: dx and dw. */
wgt_tensor *bench_conv_step(wgt_context *ctx);
/* 3 x 2 N K C KH KW OH OW of the current layer (forward, dx, dw). */
double bench_conv_flops(void);
const char *bench_conv_name(int layer);

/* ResNet-18 (torchvision's layout), batch images of size x size, channels
 * divided by div as well for --quick. */
bool bench_resnet18_setup(wgt_context *ctx, int64_t batch, int64_t size, int64_t div);
/* One training step: forward, cross-entropy, backward, SGD momentum update.
 * Returns the loss. */
wgt_tensor *bench_resnet18_step(wgt_context *ctx);
int64_t bench_resnet18_batch(void);

void bench_cnn_release(void);

#endif
