/* wgt train: trains the GPT of src/models/gpt.c on a text file, character by
 * character (docs/training.md). The loop is nanoGPT's train.py: AdamW with
 * weight decay on the matrices only, warmup + cosine learning rate, gradient
 * clipping, train/val evaluation under no-grad every eval_interval steps,
 * atomic checkpoints that a --resume continues bit for bit on the CPU. */
#define _POSIX_C_SOURCE 200809L /* sigaction, isatty, mkdir */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"
#include "gpt.h"
#include "train_checkpoint.h"
#include "train_config.h"
#include "train_data.h"
#include "train_distributed.h"
#include "train_log.h"
#include "wgt_commands.h"
#include "wgtensor.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
    signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends the process at once */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Everything one training run holds. */
typedef struct trainer {
    train_config cfg;
    train_options opt;
    train_state state;
    wgt_context *ctx;
    train_data data;
    gpt_model *model;
    wgt_optimizer *opts[2]; /* 0: matrices and embeddings (weight decay), 1: gains and biases */
    int n_group[2];
    train_history history;
    int32_t *x, *y;         /* host batch [B * T] */
    char ckpt_path[600], csv_path[600], png_path[600];
    bool tty, bar_open;
    /* data parallel (docs/distributed.md): cfg.batch_size is the global batch,
     * this rank trains rows [rank * local_batch, (rank + 1) * local_batch) */
    ddp *ddp;
    int rank, world;
    int64_t local_batch;
} trainer;

static int fail(trainer *t, const char *fmt, const char *detail)
{
    if (t->bar_open) fputc('\n', stdout);
    if (t->world > 1) fprintf(stderr, "wgt train (rank %d of %d): ", t->rank, t->world);
    else fprintf(stderr, "wgt train: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
    return 1;
}

/* mkdir -p */
static bool make_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
            if (c == '\0') break;
            *p = c;
        }
    }
    return true;
}

static wgt_tensor *upload_batch(trainer *t, const int32_t *host)
{
    int64_t shape[2] = {t->local_batch, t->cfg.model.block_size};
    return wgt_tensor_from_host(t->ctx, WGT_I32, 2, shape, host);
}

static float read_scalar(wgt_tensor *x)
{
    float v = NAN;
    if (x) wgt_tensor_read(x, &v, sizeof(v));
    return v;
}

/* Mean loss over eval_iters batches of split, no dropout, no tape; the
 * batches depend only on (seed, step, split). */
static float evaluate(trainer *t, int split, int64_t step)
{
    uint64_t rng = train_eval_seed(t->cfg.seed, step, split);
    double sum = 0;
    wgt_no_grad_push(t->ctx);
    for (int64_t i = 0; i < t->cfg.eval_iters; i++) {
        wgt_scope_push(t->ctx);
        train_data_batch_part(&t->data, split, t->cfg.batch_size, t->rank * t->local_batch, t->local_batch,
                              t->cfg.model.block_size, &rng, t->x, t->y);
        sum += read_scalar(gpt_loss(t->model, upload_batch(t, t->x), upload_batch(t, t->y), false, 0));
        wgt_scope_pop(t->ctx);
    }
    wgt_no_grad_pop(t->ctx);
    char msg[600];
    if (t->world > 1 && !ddp_allreduce_sum(t->ddp, &sum, 1, msg, sizeof(msg))) ddp_abort(t->ddp, msg, 1);
    sum /= t->world; /* the mean of the ranks' means: the global batch's mean (equal parts) */
    return (float)(sum / (double)t->cfg.eval_iters);
}

static uint64_t dropout_seed(const trainer *t, int64_t step)
{
    uint64_t s = t->cfg.seed ^ 0xd409d409d409d409ull;
    s += (uint64_t)step;
    s ^= (uint64_t)t->rank * 0x7f4a7c159e3779b9ull; /* independent masks per rank; rank 0 as one process */
    return train_rng_next(&s);
}

/* One optimizer step at iteration `step`; returns the batch loss tensor (in
 * the caller's scope) or NULL on a context error. */
static wgt_tensor *train_step(trainer *t, int64_t step, double lr)
{
    train_data_batch_part(&t->data, 0, t->cfg.batch_size, t->rank * t->local_batch, t->local_batch,
                          t->cfg.model.block_size, &t->state.data_rng, t->x, t->y);
    for (int g = 0; g < 2; g++) {
        wgt_optimizer_zero_grad(t->opts[g]);
        wgt_optimizer_set_lr(t->opts[g], lr);
    }
    wgt_tensor *loss = gpt_loss(t->model, upload_batch(t, t->x), upload_batch(t, t->y), true, dropout_seed(t, step));
    if (t->ddp) ddp_begin_step(t->ddp);
    wgt_backward(loss);
    char msg[600];
    if (t->ddp && wgt_context_status(t->ctx) == WGT_OK && !ddp_finish_step(t->ddp, msg, sizeof(msg)))
        ddp_abort(t->ddp, msg, 1); /* gradients averaged over the ranks before clipping */
    /* clipping: the optimizers multiply by the clip factor inside their update */
    wgt_tensor *clip = NULL;
    if (t->cfg.grad_clip > 0)
        wgt_clip_grad_norm_scale(gpt_params(t->model), gpt_param_count(t->model), t->cfg.grad_clip, &clip, NULL);
    for (int g = 0; g < 2; g++) {
        wgt_optimizer_set_grad_scale_tensor(t->opts[g], clip);
        wgt_optimizer_step(t->opts[g]);
        wgt_optimizer_set_grad_scale_tensor(t->opts[g], NULL);
    }
    wgt_tensor_release(clip);
    return wgt_context_status(t->ctx) == WGT_OK ? loss : NULL;
}

static bool save_all(trainer *t)
{
    if (t->rank != 0) return true; /* only rank 0 writes */
    char msg[1400];
    if (!train_checkpoint_save(t->ctx, t->ckpt_path, &t->cfg, &t->state, t->model, t->opts, 2, t->data.vocab,
                               t->data.vocab_size, &t->history, msg, sizeof(msg))) {
        fail(t, "%s", msg);
        return false;
    }
    char title[300];
    snprintf(title, sizeof(title), "wgt train %s: %d layers, %d heads, %d wide, step %" PRId64, t->cfg.preset,
             t->cfg.model.n_layer, t->cfg.model.n_head, t->cfg.model.n_embd, t->state.step);
    if (!train_history_write_csv(&t->history, t->csv_path)) fail(t, "cannot write %s", t->csv_path);
    if (!train_history_plot(&t->history, t->png_path, title)) fail(t, "cannot write %s", t->png_path);
    return true;
}

static void print_progress(trainer *t, int64_t step, float loss, double tokens_per_s, double eta_s)
{
    if (t->opt.quiet) return;
    const int width = 24;
    int filled = (int)((double)width * (double)step / (double)t->cfg.max_iters);
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    int eta = (int)(eta_s + 0.5);
    if (t->tty) {
        printf("\r[%s] step %" PRId64 "/%" PRId64 "  loss %.4f  %.0f tok/s  ETA %d:%02d:%02d\033[K", bar, step,
               t->cfg.max_iters, loss, tokens_per_s, eta / 3600, eta / 60 % 60, eta % 60);
        t->bar_open = true;
    } else {
        printf("step %" PRId64 "/%" PRId64 "  loss %.4f  %.0f tok/s  ETA %d:%02d:%02d\n", step, t->cfg.max_iters, loss,
               tokens_per_s, eta / 3600, eta / 60 % 60, eta % 60);
    }
    fflush(stdout);
}

static void print_line(trainer *t, const char *line)
{
    if (t->rank != 0) return;
    if (t->bar_open) fputc('\n', stdout);
    t->bar_open = false;
    fputs(line, stdout);
    fflush(stdout);
}

static int train_loop(trainer *t)
{
    const train_config *c = &t->cfg;
    const wgt_lr_schedule schedule = {WGT_LR_WARMUP_COSINE, c->lr, c->min_lr, c->warmup_iters, c->lr_decay_iters};
    const double tokens_per_step = (double)c->batch_size * c->model.block_size;
    double t_log = now_s(), t_bench = 0, t_start = t_log;
    int64_t steps_since_log = 0, bench_from = -1;
    char line[2600];
    for (;;) {
        int64_t step = t->state.step;
        if (t->world > 1 && ddp_any(t->ddp, interrupted)) interrupted = 1; /* every rank stops at the same step */
        if (interrupted || (t->opt.stop_after >= 0 && step == t->opt.stop_after && step < c->max_iters)) {
            if (t->opt.bench) return interrupted ? 130 : 0;
            if (!save_all(t)) return 1;
            snprintf(line, sizeof(line), "%s at step %" PRId64 ": checkpoint saved to %s; continue with: wgt train --resume %s\n",
                     interrupted ? "interrupted" : "stopped", step, t->ckpt_path, t->ckpt_path);
            print_line(t, line);
            return interrupted ? 130 : 0;
        }
        /* a run resumed from its final checkpoint with a larger --max-iters has evaluated this step already */
        bool evaluated = t->history.n > 0 && t->history.rows[t->history.n - 1].step == (float)step &&
                         !isnan(t->history.rows[t->history.n - 1].val_eval);
        bool eval_now = !t->opt.bench && !evaluated &&
                        (step == c->max_iters || (c->eval_interval > 0 && step % c->eval_interval == 0));
        if (eval_now) {
            train_record r = {(float)step, NAN, evaluate(t, 0, step), evaluate(t, 1, step), (float)wgt_lr_at(&schedule, step)};
            if (wgt_context_status(t->ctx) != WGT_OK) return fail(t, "evaluation failed: %s", wgt_context_error_message(t->ctx));
            train_history_add(&t->history, r);
            if (!(r.val_eval >= t->state.best_val)) t->state.best_val = r.val_eval;
            snprintf(line, sizeof(line), "step %" PRId64 ": train loss %.4f, val loss %.4f\n", step, r.train_eval, r.val_eval);
            print_line(t, line);
            t_log = now_s(); /* evaluation time is not training throughput */
            steps_since_log = 0;
        }
        if (step == c->max_iters) break;
        if (t->opt.bench && step == t->opt.bench_warmup) {
            wgt_synchronize(t->ctx);
            t_bench = now_s();
            bench_from = step;
            if (t->opt.memory_report) wgt_memory_trace_peak(t->ctx, true); /* the timed steps' peak */
            if (t->ddp) ddp_stats_reset(t->ddp);
        }
        double lr = wgt_lr_at(&schedule, step);
        wgt_scope_push(t->ctx);
        wgt_tensor *loss = train_step(t, step, lr);
        bool log_now = (step + 1) % c->log_interval == 0 || step + 1 == c->max_iters;
        float loss_value = log_now && loss ? read_scalar(loss) : NAN;
        wgt_scope_pop(t->ctx);
        if (!loss || wgt_context_status(t->ctx) != WGT_OK) {
            char detail[900];
            snprintf(detail, sizeof(detail), "step %" PRId64 " failed: %s", step, wgt_context_error_message(t->ctx));
            if (wgt_context_status(t->ctx) == WGT_ERR_OUT_OF_MEMORY)
                snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                         " (this config needs about %.0f MiB: lower --batch-size or --block-size)",
                         (double)gpt_training_bytes(&c->model, c->batch_size) / 1048576.0);
            return fail(t, "%s", detail);
        }
        if (t->world > 1 && log_now) { /* the global batch's loss: the mean of the ranks' */
            double sum = loss_value;
            char msg[600];
            if (!ddp_allreduce_sum(t->ddp, &sum, 1, msg, sizeof(msg))) ddp_abort(t->ddp, msg, 1);
            loss_value = (float)(sum / t->world);
        }
        t->state.step = ++step;
        steps_since_log++;
        if (log_now) {
            if (!isfinite(loss_value)) {
                snprintf(line, sizeof(line), "the loss is %g at step %" PRId64 " (diverged: lower --lr)", loss_value, step - 1);
                return fail(t, "%s", line);
            }
            double now = now_s(), rate = steps_since_log * tokens_per_step / fmax(now - t_log, 1e-9);
            double eta = (double)(c->max_iters - step) * (now - t_log) / (double)steps_since_log;
            train_history_add(&t->history, (train_record){(float)(step - 1), loss_value, NAN, NAN, (float)lr});
            print_progress(t, step, loss_value, rate, eta);
            t_log = now;
            steps_since_log = 0;
        }
        if (!t->opt.bench && c->checkpoint_interval > 0 && step % c->checkpoint_interval == 0 && step < c->max_iters &&
            !save_all(t))
            return 1;
    }
    if (t->opt.bench) {
        wgt_synchronize(t->ctx);
        double elapsed = now_s() - t_bench;
        int64_t timed = c->max_iters - bench_from;
        wgt_memory_stats mem;
        wgt_memory_stats_get(t->ctx, &mem);
        if (bench_from < 0 || timed < 1) return fail(t, "%s", "--bench needs --max-iters above --bench-warmup");
        snprintf(line, sizeof(line),
                 "bench: %" PRId64 " steps after %" PRId64 " warm-up: %.1f ms/step, %.0f tokens/s, peak device memory "
                 "%.1f MiB\n",
                 timed, bench_from, 1e3 * elapsed / (double)timed, (double)timed * tokens_per_step / elapsed,
                 (double)mem.peak_bytes_in_use / 1048576.0);
        print_line(t, line);
        if (t->opt.memory_report && t->rank == 0) wgt_memory_peak_report(t->ctx, stderr);
        if (t->ddp) {
            ddp_stats st;
            ddp_stats_get(t->ddp, &st);
            double n = st.steps ? (double)st.steps : 1;
            snprintf(line, sizeof(line),
                     "ddp (rank 0 of %d): %d buckets, %.2f MB of gradients summed per step by %s; per step: "
                     "gradient copies %.2f ms, MPI calls inside the grad hook %.2f ms, waiting for the slowest rank "
                     "%.2f ms, waiting for the exchange after that %.2f ms%s\n",
                     t->world, st.buckets, (double)st.bytes / n / 1e6, ddp_exchange_name(t->ddp), 1e3 * st.copy_s / n,
                     1e3 * st.hook_mpi_s / n, 1e3 * st.skew_s / n, 1e3 * st.wait_s / n,
                     t->opt.ddp_no_overlap ? " (--ddp-no-overlap)" : "");
            print_line(t, line);
        }
        /* the weights are still worth keeping: `wgt sample` times generation on them */
        return save_all(t) ? 0 : 1;
    }
    if (!save_all(t)) return 1;
    snprintf(line, sizeof(line), "done in %.0f s: best val loss %.4f\n  checkpoint %s\n  loss log   %s\n  loss plot  %s\n",
             now_s() - t_start, t->state.best_val, t->ckpt_path, t->csv_path, t->png_path);
    print_line(t, line);
    return 0;
}

/* Flags a resume may not change: they are the checkpoint's run. */
static const char *const FIXED_ON_RESUME[] = {"--n-layer", "--n-head", "--n-embd", "--block-size", "--dropout", "--bias",
                                             "--tied", "--batch-size", "--lr", "--min-lr", "--warmup-iters",
                                             "--lr-decay-iters", "--weight-decay", "--beta1", "--beta2", "--grad-clip",
                                             "--seed", "--eval-iters", "--eval-interval", "--log-interval"};

static int setup_from_checkpoint(trainer *t, const train_flags_seen *seen, wgt_safetensors **file)
{
    char msg[1400];
    unsigned char vocab[256];
    int vocab_size = 0;
    const int64_t requested_iters = t->cfg.max_iters, requested_ckpt = t->cfg.checkpoint_interval;
    for (size_t i = 0; i < sizeof(FIXED_ON_RESUME) / sizeof(FIXED_ON_RESUME[0]); i++)
        if (train_flag_seen(seen, FIXED_ON_RESUME[i])) {
            snprintf(msg, sizeof(msg), "%s cannot change on --resume: the run continues with the checkpoint's config "
                                       "(only --max-iters and --checkpoint-interval may change)",
                     FIXED_ON_RESUME[i]);
            return fail(t, "%s", msg);
        }
    if (!train_checkpoint_open(t->ctx, t->opt.resume_path, file, &t->cfg, &t->state, vocab, &vocab_size, msg, sizeof(msg)))
        return fail(t, "--resume: %s", msg);
    if (vocab_size != t->data.vocab_size || memcmp(vocab, t->data.vocab, (size_t)vocab_size) != 0 ||
        t->state.text_hash != t->data.text_hash) {
        snprintf(msg, sizeof(msg), "--resume: checkpoint %s was trained on another text (vocabulary of %d, hash %016" PRIx64
                                   "; --data %s has %d, hash %016" PRIx64 ")",
                 t->opt.resume_path, vocab_size, t->state.text_hash, t->opt.data_path, t->data.vocab_size,
                 t->data.text_hash);
        return fail(t, "%s", msg);
    }
    if (train_flag_seen(seen, "--max-iters")) {
        if (requested_iters < t->state.step)
            return fail(t, "%s", "--max-iters is below the checkpoint's step");
        t->cfg.max_iters = requested_iters;
    }
    if (train_flag_seen(seen, "--checkpoint-interval")) t->cfg.checkpoint_interval = requested_ckpt;
    return 0;
}

/* --init FILE: the seeded init's weights replaced by FILE's (a checkpoint, or
 * weights written by bench/train_step_check.py), every name and shape checked;
 * the optimizer state stays fresh, so the run is a run from scratch. */
static int load_init(trainer *t)
{
    char msg[1400];
    wgt_safetensors *f = wgt_safetensors_open(t->ctx, t->opt.init_path);
    if (!f) {
        snprintf(msg, sizeof(msg), "--init %s: %s", t->opt.init_path, wgt_context_error_message(t->ctx));
        wgt_context_clear_error(t->ctx);
        return fail(t, "%s", msg);
    }
    bool ok = train_checkpoint_load_model(f, t->model, msg, sizeof(msg));
    wgt_safetensors_close(f);
    return ok ? 0 : fail(t, "--init %s", msg);
}

/* Refuses a config whose memory estimate exceeds what the adapter offers. */
static int check_memory(trainer *t)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(t->ctx, &info);
    const uint64_t need = gpt_training_bytes(&t->cfg.model, t->local_batch);
    const uint64_t largest = gpt_largest_tensor_bytes(&t->cfg.model, t->local_batch);
    uint64_t buffer_limit = info.limits.max_buffer_size;
    if (info.limits.max_storage_buffer_binding_size < buffer_limit) buffer_limit = info.limits.max_storage_buffer_binding_size;
    /* On a CPU the adapter's limit is the machine's memory; a GPU does not say
     * how much it has, so only --memory-limit bounds the total there. */
    uint64_t total_limit = t->opt.memory_limit ? t->opt.memory_limit
                           : info.type == WGT_ADAPTER_CPU ? info.limits.max_buffer_size : 0;
    char msg[900];
    if (largest > buffer_limit) {
        snprintf(msg, sizeof(msg), "the config does not fit on %s: its largest tensor (batch %" PRId64 " x block %d x max(vocab %d, 4 x n_embd %d) floats) needs %.1f MiB, over the adapter's largest buffer of %.1f MiB; the whole step needs about %.1f MiB. Lower --batch-size or --block-size.",
                 info.name, t->cfg.batch_size, t->cfg.model.block_size, t->cfg.model.vocab_size, t->cfg.model.n_embd,
                 (double)largest / 1048576.0, (double)buffer_limit / 1048576.0, (double)need / 1048576.0);
        return fail(t, "%s", msg);
    }
    if (total_limit && need > total_limit) {
        snprintf(msg, sizeof(msg), "the config does not fit on %s: training needs about %.1f MiB (parameters, gradients, AdamW state and activations; docs/training.md), the %s is %.1f MiB. Lower --batch-size, --block-size, --n-layer or --n-embd.",
                 info.name, (double)need / 1048576.0, t->opt.memory_limit ? "--memory-limit" : "machine's memory",
                 (double)total_limit / 1048576.0);
        return fail(t, "%s", msg);
    }
    if (t->opt.memory_limit) wgt_memory_set_budget(t->ctx, t->opt.memory_limit);
    return 0;
}

static int run(trainer *t, int argc, char **argv)
{
    train_flags_seen seen;
    bool preset_given;
    train_preset(&t->cfg, "tiny");
    t->opt = (train_options){.data_path = "data/tinyshakespeare.txt", .bench_warmup = 10, .stop_after = -1};
    int rc = train_parse_flags(argc, argv, &t->cfg, &t->opt, &seen, &preset_given);
    if (rc) return rc == 1 ? 0 : rc;
    if (t->opt.init_path && t->opt.resume_path)
        return fail(t, "%s", "--init and --resume exclude each other (a resumed run has its checkpoint's weights)");
    if (t->opt.backend && strcmp(t->opt.backend, "cpu") != 0 && strcmp(t->opt.backend, "webgpu") != 0)
        return fail(t, "--backend must be cpu or webgpu, not \"%s\"", t->opt.backend);
    t->world = 1;
    char ddp_msg[1400], adapter_buf[256];
    const char *adapter = t->opt.adapter;
    if (t->opt.distributed || ddp_launched_by_mpi()) {
        ddp_options o = {t->opt.bucket_bytes, t->opt.ddp_timeout, t->opt.ddp_no_overlap, t->opt.bench};
        if (!(t->ddp = ddp_init(&o, ddp_msg, sizeof(ddp_msg)))) return fail(t, "%s", ddp_msg);
        t->rank = ddp_rank(t->ddp);
        t->world = ddp_size(t->ddp);
        if (t->rank != 0) t->opt.quiet = true; /* rank 0 speaks for the job */
        if (!train_ddp_adapter(t->opt.adapter, t->opt.backend, ddp_local_rank(t->ddp), adapter_buf,
                               sizeof(adapter_buf), &adapter, ddp_msg, sizeof(ddp_msg)))
            return fail(t, "%s", ddp_msg);
    }
    const char *note = NULL;
    t->ctx = train_open_context(t->opt.backend, adapter, &note);
    if (!t->ctx || wgt_context_status(t->ctx) != WGT_OK)
        return fail(t, "cannot open a context: %s", t->ctx ? wgt_context_error_message(t->ctx) : "out of memory");
    if (note && !t->opt.quiet) printf("wgt train: %s\n", note);
    if (t->opt.memory_report && t->opt.bench) wgt_memory_trace_peak(t->ctx, true); /* before the first tensor */
    wgt_adapter_info info;
    wgt_context_adapter_info(t->ctx, &info);
    if (!preset_given && !t->opt.resume_path) {
        /* the default preset fits the adapter: nanoGPT's on a GPU, tiny on a CPU */
        const char *preset = info.type == WGT_ADAPTER_CPU ? "tiny" : "shakespeare";
        train_options keep = t->opt;
        train_preset(&t->cfg, preset);
        train_parse_flags(argc, argv, &t->cfg, &t->opt, &seen, &preset_given);
        t->opt = keep;
    }
    char msg[1400];
#ifdef WGT_SHIPPED_TEXT
    /* run from outside the repository: the source tree's copy of the shipped text */
    if (!train_flag_seen(&seen, "--data") && access(t->opt.data_path, R_OK) != 0 && access(WGT_SHIPPED_TEXT, R_OK) == 0)
        t->opt.data_path = WGT_SHIPPED_TEXT;
#endif
    if (!train_data_load(&t->data, t->opt.data_path, msg, sizeof(msg))) {
        if (!train_flag_seen(&seen, "--data"))
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " (the default; run from the repository root or pass --data FILE)");
        return fail(t, "%s", msg);
    }
    wgt_safetensors *file = NULL;
    if (t->opt.resume_path && (rc = setup_from_checkpoint(t, &seen, &file)) != 0) {
        wgt_safetensors_close(file);
        return rc;
    }
    t->cfg.model.vocab_size = t->data.vocab_size;
    if (!train_config_check(&t->cfg, msg, sizeof(msg))) {
        wgt_safetensors_close(file);
        return fail(t, "%s", msg);
    }
    const int64_t T = t->cfg.model.block_size, shortest = t->data.n_val < t->data.n_train ? t->data.n_val : t->data.n_train;
    if (T >= shortest) {
        snprintf(msg, sizeof(msg), "--block-size %" PRId64 " is longer than the text allows: %s has %" PRId64
                                   " characters, so its validation split (10%%) has %" PRId64
                                   "; a window needs block size + 1",
                 T, t->opt.data_path, t->data.n_train + t->data.n_val, t->data.n_val);
        wgt_safetensors_close(file);
        return fail(t, "%s", msg);
    }
    if (t->cfg.batch_size % t->world != 0) {
        snprintf(msg, sizeof(msg), "--batch-size %" PRId64 " (the global batch) does not split over %d ranks",
                 t->cfg.batch_size, t->world);
        wgt_safetensors_close(file);
        return fail(t, "%s", msg);
    }
    t->local_batch = t->cfg.batch_size / t->world;
    if ((rc = check_memory(t)) != 0) {
        wgt_safetensors_close(file);
        return rc;
    }
    t->model = gpt_create(t->ctx, &t->cfg.model, t->cfg.seed);
    if (!t->model) {
        wgt_safetensors_close(file);
        return fail(t, "cannot create the model: %s", wgt_context_error_message(t->ctx));
    }
    /* nanoGPT's two groups: weight decay on tensors of 2+ dims only */
    const int n_all = gpt_param_count(t->model);
    wgt_tensor **groups[2] = {calloc((size_t)n_all, sizeof(wgt_tensor *)), calloc((size_t)n_all, sizeof(wgt_tensor *))};
    t->n_group[0] = t->n_group[1] = 0;
    for (int i = 0; groups[0] && groups[1] && i < n_all; i++) {
        wgt_tensor *p = gpt_params(t->model)[i];
        int g = wgt_tensor_ndim(p) >= 2 ? 0 : 1;
        groups[g][t->n_group[g]++] = p;
    }
    for (int g = 0; g < 2; g++) {
        wgt_optimizer_config oc;
        wgt_optimizer_config_init(&oc, WGT_OPTIMIZER_ADAMW);
        oc.lr = t->cfg.lr;
        oc.weight_decay = g == 0 ? t->cfg.weight_decay : 0.0;
        oc.beta1 = t->cfg.beta1;
        oc.beta2 = t->cfg.beta2;
        t->opts[g] = groups[g] ? wgt_optimizer_create(groups[g], t->n_group[g], &oc) : NULL;
    }
    free(groups[0]);
    free(groups[1]);
    if (!t->opts[0] || !t->opts[1]) {
        wgt_safetensors_close(file);
        return fail(t, "cannot create the optimizer: %s", wgt_context_error_message(t->ctx));
    }
    if (file) {
        bool ok = train_checkpoint_load_model(file, t->model, msg, sizeof(msg));
        for (int g = 0; ok && g < 2; g++) ok = train_checkpoint_load_optimizer(file, g, t->opts[g], t->n_group[g], msg, sizeof(msg));
        ok = ok && train_checkpoint_load_history(file, &t->history, msg, sizeof(msg));
        wgt_safetensors_close(file);
        if (!ok) return fail(t, "--resume %s", msg);
        if (t->state.step == t->cfg.max_iters) {
            printf("wgt train: %s finished its %" PRId64 " steps already (--max-iters N continues it)\n",
                   t->opt.resume_path, t->state.step);
            return 0;
        }
    } else {
        t->state = (train_state){.step = 0, .data_rng = t->cfg.seed, .text_hash = t->data.text_hash, .best_val = NAN};
        if (t->opt.init_path && (rc = load_init(t)) != 0) return rc;
    }
    if (t->ddp) { /* same run everywhere, rank 0's weights, then the gradient buckets */
        wgt_tensor *const *params = gpt_params(t->model);
        const int n_params = gpt_param_count(t->model);
        if (!train_ddp_check(t->ddp, &t->cfg, &t->state, n_params, gpt_weight_count(t->model), msg, sizeof(msg)) ||
            !ddp_broadcast(t->ddp, params, n_params, msg, sizeof(msg)) ||
            !ddp_attach(t->ddp, t->ctx, params, n_params, msg, sizeof(msg)))
            return fail(t, "%s", msg);
        ddp_stats st;
        ddp_stats_get(t->ddp, &st);
        if (t->rank == 0) /* even with --quiet: the layout of the run */
            printf("wgt train: data parallel over %d ranks: batch %" PRId64 " per rank, gradients in %d bucket%s (%s)\n",
                   t->world, t->local_batch, st.buckets, st.buckets == 1 ? "" : "s", ddp_exchange_name(t->ddp));
    }
    const char *out = t->opt.out_dir;
    char default_out[64];
    if (!out) {
        snprintf(default_out, sizeof(default_out), "out/%s", t->cfg.preset[0] ? t->cfg.preset : "custom");
        out = default_out;
    }
    if (!make_dirs(out)) return fail(t, "cannot create the output folder %s", out);
    snprintf(t->ckpt_path, sizeof(t->ckpt_path), "%s/ckpt.safetensors", out);
    snprintf(t->csv_path, sizeof(t->csv_path), "%s/log.csv", out);
    snprintf(t->png_path, sizeof(t->png_path), "%s/loss.png", out);
    t->x = malloc((size_t)(t->cfg.batch_size * T) * sizeof(int32_t));
    t->y = malloc((size_t)(t->cfg.batch_size * T) * sizeof(int32_t));
    if (!t->x || !t->y) return fail(t, "%s", "out of host memory for the batch");
    t->tty = isatty(STDOUT_FILENO);
    if (!t->opt.quiet)
        printf("wgt train: %s on %s (%s), %d layers, %d heads, %d wide, block %d, batch %" PRId64 ", %.2fM parameters, "
               "vocabulary %d, %" PRId64 " steps%s\n",
               t->cfg.preset[0] ? t->cfg.preset : "custom", info.name, info.backend, t->cfg.model.n_layer,
               t->cfg.model.n_head, t->cfg.model.n_embd, t->cfg.model.block_size, t->cfg.batch_size,
               (double)gpt_weight_count(t->model) / 1e6, t->data.vocab_size, t->cfg.max_iters,
               file ? " (resumed)" : "");
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    rc = train_loop(t);
    signal(SIGINT, SIG_DFL);
    return rc;
}

int wgt_command_train(int argc, char **argv)
{
    trainer t;
    memset(&t, 0, sizeof(t));
    interrupted = 0;
    int rc = run(&t, argc, argv);
    if (t.world > 1 && rc != 0 && rc != 130) ddp_abort(t.ddp, "see its message above", rc);
    for (int g = 0; g < 2; g++) wgt_optimizer_destroy(t.opts[g]);
    gpt_destroy(t.model);
    train_history_free(&t.history);
    train_data_free(&t.data);
    free(t.x);
    free(t.y);
    ddp_finalize(t.ddp); /* removes its grad hook: before the context goes */
    wgt_context_destroy(t.ctx);
    return rc;
}
