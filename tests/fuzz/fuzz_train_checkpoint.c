/*
 * libFuzzer target for `wgt train` / `wgt sample` checkpoints
 * (tools/wgt/train_checkpoint.c over the safetensors reader): every input is a
 * candidate checkpoint file, opened on a CPU context with a 256 MiB memory
 * budget; when its config is accepted, its weights are loaded into a GPT of
 * that config and its loss history is read (the optimizer state is not built
 * here).
 *
 * Contract checked (beyond what ASan/UBSan catch): a refused file gives a
 * message and leaves the context usable with no live tensors; an accepted
 * one has a config the model builder takes or refuses with the context's
 * error (never a crash), and the weights and history load or are refused
 * with a message. Any broken contract traps.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
 *        cmake --build build-fuzz --target fuzz_train_checkpoint
 * Run:   build-fuzz/bin/fuzz_train_checkpoint -max_total_time=480 \
 *            -dict=tests/fuzz/safetensors.dict tests/fuzz/corpus_train_checkpoint
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train_checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond)
{
    if (!cond) __builtin_trap();
}

static wgt_context *ctx;
static char path[64];

static void setup(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_CPU;
    o.cpu_threads = 1;
    o.memory_budget_bytes = (uint64_t)256 << 20;
    ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) abort();
    snprintf(path, sizeof(path), "/tmp/fuzz_train_checkpoint.%d", (int)getpid());
}

/* The context after a refusal: cleared, nothing left alive. */
static void usable(void)
{
    wgt_context_clear_error(ctx);
    require(wgt_context_status(ctx) == WGT_OK);
    require(wgt_context_live_tensors(ctx) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx) setup();
    FILE *fp = fopen(path, "wb");
    require(fp != NULL);
    require(fwrite(data, 1, size, fp) == size);
    fclose(fp);
    char msg[512] = "";
    train_config cfg;
    train_state st;
    unsigned char vocab[256];
    int vocab_size = 0;
    wgt_safetensors *f = NULL;
    if (!train_checkpoint_open(ctx, path, &f, &cfg, &st, vocab, &vocab_size, msg, sizeof(msg))) {
        require(msg[0] != '\0');
        if (f) wgt_safetensors_close(f);
        usable();
        return 0;
    }
    require(vocab_size == cfg.model.vocab_size && vocab_size >= 1 && vocab_size <= 256);
    gpt_model *m = gpt_create(ctx, &cfg.model, 1);
    if (m) {
        if (!train_checkpoint_load_model(f, m, msg, sizeof(msg))) require(msg[0] != '\0');
        gpt_destroy(m);
    } else {
        require(wgt_context_status(ctx) != WGT_OK);
    }
    wgt_context_clear_error(ctx);
    train_history h;
    memset(&h, 0, sizeof(h));
    msg[0] = '\0';
    if (!train_checkpoint_load_history(f, &h, msg, sizeof(msg))) require(msg[0] != '\0');
    train_history_free(&h);
    wgt_safetensors_close(f);
    usable();
    return 0;
}
