/* The loss history of `wgt train`: kept in memory, saved in checkpoints (so a
 * resumed run's log and plot are the whole run's), written as CSV and drawn as a
 * PNG with cairo. */
#ifndef WGT_TRAIN_LOG_H
#define WGT_TRAIN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row; NaN where the step had no such value. */
typedef struct train_record {
    float step;        /* as float: exact up to 2^24 steps, stored as an f32 tensor */
    float loss;        /* the training batch's loss at this step */
    float train_eval;  /* mean loss over eval_iters train batches, no dropout */
    float val_eval;    /* the same on the validation split */
    float lr;
} train_record;
#define TRAIN_RECORD_FIELDS 5

typedef struct train_history {
    train_record *rows;
    int64_t n, cap;
} train_history;

bool train_history_add(train_history *h, train_record row);
void train_history_free(train_history *h);

/* step,loss,train_eval,val_eval,lr (empty cells for NaN). */
bool train_history_write_csv(const train_history *h, const char *path);
/* Loss curves (batch loss, eval train and val) against steps. */
bool train_history_plot(const train_history *h, const char *path, const char *title);

/* Several runs in one plot (e.g. wgt and PyTorch): each run's batch loss and
 * val loss, labelled. */
bool train_history_plot_runs(const train_history *runs, const char *const *labels, int n_runs, const char *path,
                             const char *title);
/* Appends the rows of a log.csv (wgt train's, or bench/train_torch_ref.py --csv). */
bool train_history_read_csv(train_history *h, const char *path, char *msg, size_t msg_size);

#endif
