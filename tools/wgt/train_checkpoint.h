/* Checkpoints of `wgt train` (docs/training.md): one safetensors file with
 *   model.<nanoGPT parameter name>   f32   the weights
 *   optim<g>.exp_avg.<i>, optim<g>.exp_avg_sq.<i>  f32  AdamW's moments of
 *                                    optimizer group g (0: weights with decay,
 *                                    1: gains and biases without, as nanoGPT)
 *   vocab                            u8 [V]  id -> byte
 *   history                          f32 [n, 5]  step, loss, train_eval, val_eval, lr
 * and metadata (strings): format, every train_config field, step, data_rng,
 * text_hash, param_steps<g> (AdamW's per-parameter counters), best_val.
 * Written atomically by wgt_safetensors_save (temporary file, fsync, rename). */
#ifndef WGT_TRAIN_CHECKPOINT_H
#define WGT_TRAIN_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpt.h"
#include "train_config.h"
#include "train_log.h"
#include "wgtensor.h"

#define TRAIN_CHECKPOINT_FORMAT "wgtensor.gpt.v1"

typedef struct train_state {
    int64_t step;        /* optimizer steps completed */
    uint64_t data_rng;   /* the training batch generator's state */
    uint64_t text_hash;  /* FNV-1a of the training text */
    float best_val;      /* best val loss so far (NaN: none yet) */
} train_state;

bool train_checkpoint_save(wgt_context *ctx, const char *path, const train_config *cfg, const train_state *state,
                           gpt_model *model, wgt_optimizer *const *opts, int n_opts, const unsigned char *vocab,
                           int vocab_size,
                           const train_history *history, char *msg, size_t msg_size);

/* Opens path and reads its config, state and vocabulary; false with the
 * reason (unreadable, not safetensors, not a wgt train checkpoint, a field out
 * of range). *file stays open for the loads below; close it after. */
bool train_checkpoint_open(wgt_context *ctx, const char *path, wgt_safetensors **file, train_config *cfg,
                           train_state *state, unsigned char vocab[256], int *vocab_size, char *msg, size_t msg_size);
/* Copies every parameter from the file into model (names and shapes must
 * match). */
bool train_checkpoint_load_model(wgt_safetensors *file, gpt_model *model, char *msg, size_t msg_size);
/* Group g's moments and step counters (the group has n_params parameters). */
bool train_checkpoint_load_optimizer(wgt_safetensors *file, int group, wgt_optimizer *opt, int n_params, char *msg,
                                     size_t msg_size);
bool train_checkpoint_load_history(wgt_safetensors *file, train_history *history, char *msg, size_t msg_size);

#endif
