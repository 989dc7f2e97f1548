/* The training text of `wgt train`: a character (byte) vocabulary, a 90/10
 * train/val split and random windows drawn with a seeded generator whose state
 * is a single integer, saved in checkpoints so a resumed run draws the same
 * batches as an uninterrupted one. bench/train_torch_ref.py draws the same. */
#ifndef WGT_TRAIN_DATA_H
#define WGT_TRAIN_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct train_data {
    int vocab_size;
    unsigned char vocab[256]; /* id -> byte, sorted ascending (nanoGPT sorts the characters) */
    int16_t id_of[256];       /* byte -> id, -1 if the byte is absent */
    int32_t *ids;             /* the whole text encoded */
    int64_t n_train, n_val;   /* ids[0, n_train) train, ids[n_train, n_train + n_val) val */
    uint64_t text_hash;       /* FNV-1a 64 of the bytes: checkpoints name the text they saw */
} train_data;

/* Reads and encodes path. false with the reason in msg: unreadable, empty,
 * over 2 GiB. */
bool train_data_load(train_data *data, const char *path, char *msg, size_t msg_size);
void train_data_free(train_data *data);

/* splitmix64 step: the generator of every random choice of the data pipeline. */
uint64_t train_rng_next(uint64_t *state);
/* Seed of the evaluation batches at a step: independent of the training
 * generator, so evaluating does not change the training batches. */
uint64_t train_eval_seed(uint64_t seed, int64_t step, int split);

/* x, y [batch * block]: batch windows of block tokens from split (0 train,
 * 1 val), y shifted one to the right: offset = next() % (n - block). The split
 * must hold more than block tokens (checked by the caller). */
void train_data_batch(const train_data *data, int split, int64_t batch, int64_t block, uint64_t *rng, int32_t *x,
                      int32_t *y);
/* Rows [first, first + count) of a global batch of `batch` windows: exactly
 * the rows train_data_batch would put there, and *rng ends where it would after
 * the whole batch. Data-parallel rank r of N draws rows [r B/N, (r+1) B/N), so
 * N ranks see together the batch one process sees (docs/distributed.md). */
void train_data_batch_part(const train_data *data, int split, int64_t batch, int64_t first, int64_t count,
                           int64_t block, uint64_t *rng, int32_t *x, int32_t *y);

#endif
