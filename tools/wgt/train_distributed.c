/* Data-parallel helpers of `wgt train` (see train_distributed.h). */
#include "train_distributed.h"

#include <stdio.h>
#include <string.h>

bool train_ddp_adapter(const char *flag, const char *backend, int local_rank, char *buf, size_t buf_size,
                       const char **adapter, char *msg, size_t msg_size)
{
    *adapter = NULL;
    if (backend && strcmp(backend, "cpu") == 0) return true;
    if (!flag) {
        snprintf(buf, buf_size, "%d", local_rank);
        *adapter = buf;
        return true;
    }
    if (!strchr(flag, ',')) {
        *adapter = flag;
        return true;
    }
    const char *p = flag;
    for (int i = 0; i < local_rank; i++) {
        p = strchr(p, ',');
        if (!p) {
            snprintf(msg, msg_size, "--adapter %s lists fewer adapters than this machine has ranks (local rank %d)",
                     flag, local_rank);
            return false;
        }
        p++;
    }
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= buf_size) {
        snprintf(msg, msg_size, "--adapter %s: item %d is empty or too long", flag, local_rank);
        return false;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    *adapter = buf;
    return true;
}

static uint64_t bits_of(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

bool train_ddp_check(ddp *d, const train_config *cfg, const train_state *state, int n_params, int64_t n_weights,
                     char *msg, size_t msg_size)
{
    const gpt_config *m = &cfg->model;
    const uint64_t fp[] = {(uint64_t)m->n_layer, (uint64_t)m->n_head, (uint64_t)m->n_embd, (uint64_t)m->block_size,
                           (uint64_t)m->vocab_size, bits_of(m->dropout), (uint64_t)m->bias, (uint64_t)m->tied_head,
                           (uint64_t)cfg->batch_size, (uint64_t)cfg->max_iters, bits_of(cfg->lr), bits_of(cfg->min_lr),
                           (uint64_t)cfg->warmup_iters, (uint64_t)cfg->lr_decay_iters, bits_of(cfg->weight_decay),
                           bits_of(cfg->beta1), bits_of(cfg->beta2), bits_of(cfg->grad_clip),
                           (uint64_t)cfg->eval_interval, (uint64_t)cfg->eval_iters, (uint64_t)cfg->log_interval,
                           cfg->seed, (uint64_t)state->step, state->data_rng, state->text_hash, (uint64_t)n_params,
                           (uint64_t)n_weights};
    static const char *const names[] = {"n_layer", "n_head", "n_embd", "block_size", "vocabulary size", "dropout",
                                        "bias", "tied", "batch size", "max_iters", "lr", "min_lr", "warmup_iters",
                                        "lr_decay_iters", "weight_decay", "beta1", "beta2", "grad_clip",
                                        "eval_interval", "eval_iters", "log_interval", "seed", "starting step",
                                        "data generator state", "text hash", "parameter tensor count",
                                        "parameter count"};
    _Static_assert(sizeof(fp) / sizeof(fp[0]) == sizeof(names) / sizeof(names[0]), "one name per field");
    return ddp_agree(d, fp, (int)(sizeof(fp) / sizeof(fp[0])), names, msg, msg_size);
}
