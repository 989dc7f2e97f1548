/* `wgt train` configuration: the model and optimizer hyper-parameters (saved in
 * checkpoints), presets, and command-line flags. */
#ifndef WGT_TRAIN_CONFIG_H
#define WGT_TRAIN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpt.h"

/* What a checkpoint records: a resumed run continues with exactly these. */
typedef struct train_config {
    char preset[32];
    gpt_config model;          /* vocab_size comes from the data */
    int64_t batch_size;
    int64_t max_iters;         /* optimizer steps */
    int64_t warmup_iters, lr_decay_iters;
    double lr, min_lr;         /* warmup to lr, cosine decay to min_lr at lr_decay_iters */
    double weight_decay, beta1, beta2;
    double grad_clip;          /* max global gradient norm; 0: none */
    int64_t eval_interval;     /* steps between train/val evaluations; 0: only at the end */
    int64_t eval_iters;        /* batches per evaluation */
    int64_t log_interval;      /* steps between loss read-backs (each is a device sync) */
    int64_t checkpoint_interval; /* steps between checkpoints; 0: only at the end */
    uint64_t seed;             /* init, data order, dropout */
} train_config;

/* How this process runs (not saved). */
typedef struct train_options {
    const char *data_path;
    const char *out_dir;
    const char *resume_path;
    const char *init_path;     /* initial weights (model.<name> tensors), or NULL: the seeded init */
    const char *backend;       /* "cpu", "webgpu" or NULL (auto) */
    const char *adapter;       /* index or name substring, or NULL */
    uint64_t memory_limit;     /* bytes, 0: the adapter's */
    int64_t stop_after;        /* stop (save, exit 0) after this step, as Ctrl-C would; -1: no
                                * (0 saves the initial weights) */
    bool bench;                /* time steps, no eval/checkpoints */
    int64_t bench_warmup;      /* steps not timed in --bench */
    int sample_chars;          /* characters sampled at the end (0: none) */
    bool quiet;
    bool memory_report;        /* --bench: what is live at the timed steps' memory peak (stderr) */
    /* data parallel over MPI (docs/distributed.md): also implied by mpirun */
    bool distributed;
    uint64_t bucket_bytes;     /* gradient bytes per all-reduce; 0: 25 MiB */
    double ddp_timeout;        /* seconds a rank waits for the others before stopping the job; 0: 120 */
    bool ddp_no_overlap;       /* all-reduce after backward instead of during it */
} train_options;

/* The names given on the command line, so a resume can tell an explicit
 * request from a default. */
#define TRAIN_MAX_FLAGS 64
typedef struct train_flags_seen {
    const char *names[TRAIN_MAX_FLAGS];
    int n;
} train_flags_seen;

/* Fills cfg with a preset: "shakespeare" (nanoGPT train_shakespeare_char) or
 * "tiny" (a minute on a CPU). false for an unknown name. */
bool train_preset(train_config *cfg, const char *name);

/* Parses argv (after "train"). A --preset flag is applied first wherever it
 * appears, then the other flags over it. Returns 0, or 2 after printing the
 * error (unknown flag, bad number). preset_given tells whether --preset was
 * on the command line (else the caller picks one by adapter type and parses
 * again). */
int train_parse_flags(int argc, char **argv, train_config *cfg, train_options *opt, train_flags_seen *seen,
                      bool *preset_given);
void train_usage(FILE *f);
bool train_flag_seen(const train_flags_seen *seen, const char *name);

/* A context for training or sampling: backend "cpu"/"webgpu"/NULL (auto),
 * adapter an index or a name substring (or NULL). With neither given, a
 * software adapter (lavapipe: type CPU) is passed over for the CPU backend,
 * which runs the same ops natively and faster; *note then says so. */
wgt_context *train_open_context(const char *backend, const char *adapter, const char **note);

/* Range checks of every field (after vocab_size is known); message into msg. */
bool train_config_check(const train_config *cfg, char *msg, size_t msg_size);

#endif
