/* Presets and command-line flags of `wgt train`. */
#include "train_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool train_preset(train_config *cfg, const char *name)
{
    memset(cfg, 0, sizeof(*cfg));
    if (strcmp(name, "shakespeare") == 0) {
        /* nanoGPT config/train_shakespeare_char.py (bias False, tied head as in model.py) */
        cfg->model = (gpt_config){.n_layer = 6, .n_head = 6, .n_embd = 384, .block_size = 256, .dropout = 0.2,
                                  .bias = false, .tied_head = true};
        cfg->batch_size = 64;
        cfg->max_iters = 5000;
        cfg->lr_decay_iters = 5000;
        cfg->warmup_iters = 100;
        cfg->lr = 1e-3;
        cfg->min_lr = 1e-4;
        cfg->beta2 = 0.99;
        cfg->eval_interval = 250;
        cfg->eval_iters = 200;
        cfg->log_interval = 10;
        cfg->checkpoint_interval = 250;
    } else if (strcmp(name, "tiny") == 0) {
        /* About a minute on 2 CPU cores (the CPU backend): val loss 2.32 after
         * 300 steps (3e-3 gave 2.38, 1e-2 the same 2.32) */
        cfg->model = (gpt_config){.n_layer = 2, .n_head = 4, .n_embd = 64, .block_size = 64, .dropout = 0.0,
                                  .bias = false, .tied_head = true};
        cfg->batch_size = 16;
        cfg->max_iters = 300;
        cfg->lr_decay_iters = 300;
        cfg->warmup_iters = 20;
        cfg->lr = 6e-3;
        cfg->min_lr = 3e-4;
        cfg->beta2 = 0.99;
        cfg->eval_interval = 100;
        cfg->eval_iters = 10;
        cfg->log_interval = 10;
        cfg->checkpoint_interval = 100;
    } else {
        return false;
    }
    snprintf(cfg->preset, sizeof(cfg->preset), "%s", name);
    cfg->weight_decay = 0.1;
    cfg->beta1 = 0.9;
    cfg->grad_clip = 1.0;
    cfg->seed = 1337;
    return true;
}

void train_usage(FILE *f)
{
    fprintf(f,
            "usage: wgt train [options]\n"
            "  --preset shakespeare|tiny  nanoGPT's train_shakespeare_char, or a one-minute CPU run\n"
            "                             (default: shakespeare on a GPU, tiny on a CPU adapter)\n"
            "  --data FILE                text to learn (default data/tinyshakespeare.txt)\n"
            "  --out DIR                  checkpoint, log and plot folder (default out/<preset>)\n"
            "  --resume CKPT              continue from a checkpoint (same config; --max-iters may grow)\n"
            "  --init FILE                start from the weights in FILE (safetensors, tensors named\n"
            "                             model.<nanoGPT name> as in a checkpoint) instead of the seeded\n"
            "                             init; fresh optimizer state (bench/train_step_check.py)\n"
            "  --n-layer N --n-head N --n-embd N --block-size N --dropout P --bias 0|1 --tied 0|1\n"
            "  --batch-size N --max-iters N --lr X --min-lr X --warmup-iters N --lr-decay-iters N\n"
            "  --weight-decay X --beta1 X --beta2 X --grad-clip X (0: none) --seed N\n"
            "  --eval-interval N --eval-iters N --log-interval N --checkpoint-interval N\n"
            "  --backend cpu|webgpu --adapter INDEX|NAME --memory-limit BYTES[K|M|G]\n"
            "  --sample N                 characters sampled from the model at the end (default 300)\n"
            "  --bench                    time training steps: tokens/s after warm-up, peak memory\n"
            "  --bench-warmup N           steps before timing starts (default 10)\n"
            "  --memory-report            with --bench: the tensors live at the timed steps' memory peak,\n"
            "                             grouped by the op that made them (stderr; wgt_memory_peak_report)\n"
            "  --stop-after N             save and stop after step N, as Ctrl-C would (tests; 0 saves\n"
            "                             the initial weights)\n"
            "  --quiet                    no progress lines\n"
            "data parallel (mpirun -np N wgt train ...; docs/distributed.md): --batch-size is the global\n"
            "batch, split over the ranks; rank 0 writes checkpoints, logs and plots\n"
            "  --distributed              require MPI (implied when started by mpirun)\n"
            "  --adapter I,J,...          adapter of each local rank (default: the local rank's index)\n"
            "  --bucket-size BYTES        gradients per all-reduce (default 25M)\n"
            "  --ddp-timeout S            stop the job when a rank waits S seconds for the others (default 120)\n"
            "  --ddp-no-overlap           all-reduce after backward, not during it (to measure the overlap)\n");
}

bool train_flag_seen(const train_flags_seen *seen, const char *name)
{
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->names[i], name) == 0) return true;
    return false;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1;
    if (*end == 'K' || *end == 'k') unit = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') unit = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g') unit = 1024.0 * 1024 * 1024, end++;
    if (errno || end == s || *end || !(v > 0) || v * unit > 1e18) return false;
    *out = (uint64_t)(v * unit);
    return true;
}

typedef enum { F_INT, F_INT32, F_DOUBLE, F_BOOL, F_STRING, F_BYTES, F_FLAG } flag_kind;

typedef struct flag_def {
    const char *name;
    flag_kind kind;
    size_t offset;   /* into train_config (cfg) or train_options (opt) */
    bool in_options;
} flag_def;

#define CFG(name, kind, field) {name, kind, offsetof(train_config, field), false}
#define OPT(name, kind, field) {name, kind, offsetof(train_options, field), true}
static const flag_def FLAGS[] = {
    CFG("--n-layer", F_INT32, model.n_layer), CFG("--n-head", F_INT32, model.n_head),
    CFG("--n-embd", F_INT32, model.n_embd), CFG("--block-size", F_INT32, model.block_size),
    CFG("--dropout", F_DOUBLE, model.dropout), CFG("--bias", F_BOOL, model.bias),
    CFG("--tied", F_BOOL, model.tied_head), CFG("--batch-size", F_INT, batch_size),
    CFG("--max-iters", F_INT, max_iters), CFG("--lr", F_DOUBLE, lr), CFG("--min-lr", F_DOUBLE, min_lr),
    CFG("--warmup-iters", F_INT, warmup_iters), CFG("--lr-decay-iters", F_INT, lr_decay_iters),
    CFG("--weight-decay", F_DOUBLE, weight_decay), CFG("--beta1", F_DOUBLE, beta1),
    CFG("--beta2", F_DOUBLE, beta2), CFG("--grad-clip", F_DOUBLE, grad_clip), CFG("--seed", F_INT, seed),
    CFG("--eval-interval", F_INT, eval_interval), CFG("--eval-iters", F_INT, eval_iters),
    CFG("--log-interval", F_INT, log_interval), CFG("--checkpoint-interval", F_INT, checkpoint_interval),
    OPT("--data", F_STRING, data_path), OPT("--out", F_STRING, out_dir), OPT("--resume", F_STRING, resume_path),
    OPT("--init", F_STRING, init_path),
    OPT("--backend", F_STRING, backend), OPT("--adapter", F_STRING, adapter),
    OPT("--memory-limit", F_BYTES, memory_limit), OPT("--stop-after", F_INT, stop_after),
    OPT("--bench", F_FLAG, bench), OPT("--bench-warmup", F_INT, bench_warmup),
    OPT("--sample", F_INT32, sample_chars), OPT("--quiet", F_FLAG, quiet),
    OPT("--memory-report", F_FLAG, memory_report),
    OPT("--distributed", F_FLAG, distributed), OPT("--bucket-size", F_BYTES, bucket_bytes),
    OPT("--ddp-timeout", F_DOUBLE, ddp_timeout), OPT("--ddp-no-overlap", F_FLAG, ddp_no_overlap),
};

static int apply_flag(const flag_def *f, const char *value, train_config *cfg, train_options *opt)
{
    char *base = f->in_options ? (char *)opt : (char *)cfg;
    void *field = base + f->offset;
    int64_t i;
    double d;
    switch (f->kind) {
    case F_INT:
        if (!parse_i64(value, &i)) break;
        if (strcmp(f->name, "--seed") == 0) *(uint64_t *)field = (uint64_t)i;
        else *(int64_t *)field = i;
        return 0;
    case F_INT32:
        if (!parse_i64(value, &i) || i < -2147483647 || i > 2147483647) break;
        *(int *)field = (int)i;
        return 0;
    case F_DOUBLE:
        if (!parse_double(value, &d)) break;
        *(double *)field = d;
        return 0;
    case F_BOOL:
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) break;
        *(bool *)field = value[0] == '1';
        return 0;
    case F_STRING:
        *(const char **)field = value;
        return 0;
    case F_BYTES:
        if (!parse_bytes(value, (uint64_t *)field)) break;
        return 0;
    case F_FLAG:
        *(bool *)field = true;
        return 0;
    }
    fprintf(stderr, "wgt train: %s: \"%s\" is not a valid value\n", f->name, value);
    return 2;
}

int train_parse_flags(int argc, char **argv, train_config *cfg, train_options *opt, train_flags_seen *seen,
                      bool *preset_given)
{
    *preset_given = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preset") != 0) continue;
        if (i + 1 >= argc || !train_preset(cfg, argv[i + 1])) {
            fprintf(stderr, "wgt train: --preset needs \"shakespeare\" or \"tiny\"%s%s\n", i + 1 < argc ? ", not " : "",
                    i + 1 < argc ? argv[i + 1] : "");
            return 2;
        }
        *preset_given = true;
    }
    seen->n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preset") == 0) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            train_usage(stdout);
            return 1;
        }
        const flag_def *f = NULL;
        for (size_t k = 0; k < sizeof(FLAGS) / sizeof(FLAGS[0]); k++)
            if (strcmp(argv[i], FLAGS[k].name) == 0) f = &FLAGS[k];
        if (!f) {
            fprintf(stderr, "wgt train: unknown option \"%s\" (wgt train --help lists them)\n", argv[i]);
            return 2;
        }
        if (seen->n < TRAIN_MAX_FLAGS) seen->names[seen->n++] = f->name;
        if (f->kind == F_FLAG) {
            apply_flag(f, NULL, cfg, opt);
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "wgt train: %s needs a value\n", argv[i]);
            return 2;
        }
        if (apply_flag(f, argv[++i], cfg, opt) != 0) return 2;
    }
    return 0;
}

bool train_config_check(const train_config *c, char *msg, size_t msg_size)
{
    if (!gpt_config_check(&c->model, msg, msg_size)) return false;
    const char *why = NULL;
    if (c->batch_size < 1 || c->batch_size > (1 << 20)) why = "--batch-size must be in [1, 2^20]";
    else if (c->max_iters < 1 || c->max_iters > 100000000) why = "--max-iters must be in [1, 1e8]";
    else if (!(c->lr > 0) || !(c->min_lr >= 0) || c->min_lr > c->lr) why = "--lr must be > 0 and --min-lr in [0, lr]";
    else if (c->warmup_iters < 0 || c->lr_decay_iters <= c->warmup_iters)
        why = "--warmup-iters must be >= 0 and --lr-decay-iters greater than it";
    else if (c->weight_decay < 0 || !(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
        why = "--weight-decay >= 0 and --beta1, --beta2 in [0, 1)";
    else if (c->grad_clip < 0) why = "--grad-clip must be >= 0 (0: no clipping)";
    else if (c->eval_interval < 0 || c->eval_iters < 1 || c->log_interval < 1 || c->checkpoint_interval < 0)
        why = "--eval-interval >= 0, --eval-iters >= 1, --log-interval >= 1, --checkpoint-interval >= 0";
    if (why) {
        snprintf(msg, msg_size, "%s", why);
        return false;
    }
    return true;
}

wgt_context *train_open_context(const char *backend, const char *adapter, const char **note)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    *note = NULL;
    if (backend) o.backend = strcmp(backend, "cpu") == 0 ? WGT_BACKEND_CPU : WGT_BACKEND_WEBGPU;
    if (adapter) {
        char *end;
        long index = strtol(adapter, &end, 10);
        if (*end == '\0' && end != adapter) o.adapter_index = (int)index;
        else o.adapter_name = adapter;
    }
    wgt_context *ctx = wgt_context_create(&o);
    wgt_adapter_info info;
    const char *env = getenv("WGT_BACKEND"), *env_adapter = getenv("WGT_ADAPTER");
    if (!backend && !adapter && !(env && *env) && !(env_adapter && *env_adapter) && ctx &&
        wgt_context_status(ctx) == WGT_OK && wgt_context_backend(ctx) == WGT_BACKEND_WEBGPU &&
        wgt_context_adapter_info(ctx, &info) == WGT_OK && info.type == WGT_ADAPTER_CPU) {
        wgt_context_destroy(ctx);
        o.backend = WGT_BACKEND_CPU;
        ctx = wgt_context_create(&o);
        *note = "the only WebGPU adapter is a software one (lavapipe): using the CPU backend, which is faster "
                "(--backend webgpu to use the adapter)";
    }
    return ctx;
}
