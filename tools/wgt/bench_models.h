/* Whole-model benchmark cases of wgt bench (bench_models.c): an AdamW step over
 * GPT-2 small's 124M parameters and a GPT-2 small forward pass. Each setup
 * frees what an earlier one made; bench_models_release frees the rest. */
#ifndef WGT_BENCH_MODELS_H
#define WGT_BENCH_MODELS_H

#include <stdbool.h>

#include "wgtensor.h"

/* GPT-2 small's parameter shapes with layers divided by div (1: 124M). */
bool bench_adamw_setup(wgt_context *ctx, int64_t div);
wgt_tensor *bench_adamw_step(wgt_context *ctx);
int64_t bench_adamw_param_count(void);

/* GPT-2 small (12 layers, 768 wide, 12 heads, vocab 50257, tied head), f32,
 * forward of batch x seq tokens to the logits; layers and sizes divided by
 * div for --quick. */
bool bench_gpt2_setup(wgt_context *ctx, int64_t batch, int64_t seq, int64_t div);
wgt_tensor *bench_gpt2_forward(wgt_context *ctx);

void bench_models_release(void);

#endif
