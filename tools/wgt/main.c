/* wgt: the wgtensor command-line tool.
 *   wgt devices [--json]   list WebGPU adapters
 *   wgt demo               pick the best adapter, run kernels, check them against the CPU
 *   wgt bench              time op families; JSON for bench/compare.py
 *   wgt tune               autotune GEMM configs into the tuning cache
 *   wgt train              train a character-level GPT (docs/training.md)
 *   wgt sample             generate text from a wgt train checkpoint
 *   wgt digits             train the digits CNN (src/models/digits_cnn.h)
 *   wgt generate           run a Hugging Face Llama-family model (src/models/llama.h)
 */
#include <stdio.h>
#include <string.h>

#include "wgt_commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wgt <command> [options]\n"
            "  devices [--json]   list WebGPU adapters (exit 1 if there are none)\n"
            "  demo               run kernels on the best adapter and check them against the CPU\n"
            "  bench [--quick] [--json FILE] [--only NAME] [--reps N]\n"
            "                     time op families (bench/run.sh compares with PyTorch)\n"
            "  tune [--quick] [--cache FILE]\n"
            "                     autotune GEMM tiles for this adapter; later runs use the result\n"
            "  train [--preset shakespeare|tiny] [--data FILE] [--out DIR] [--resume CKPT] ...\n"
            "                     train a character-level GPT (wgt train --help lists the flags)\n"
            "  sample --checkpoint CKPT [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
            "                     generate text from a checkpoint, streamed, with a KV cache\n"
            "  plot OUT.png LABEL=log.csv [LABEL=log.csv ...]\n"
            "                     loss curves of several runs in one PNG (e.g. wgt against PyTorch)\n"
            "  digits [--epochs N] [--out DIR] [--min-accuracy A] ...\n"
            "                     train a small CNN on the 8x8 digits (data/digits.csv.gz), plot loss/accuracy\n"
            "  generate --model DIR --prompt TEXT [--max-tokens N] [sampling flags] | --bench\n"
            "                     stream text from a Llama-family safetensors folder; --bench: tokens/s\n"
            "environment: WGT_BACKEND=cpu|webgpu, WGT_ADAPTER=<index|name substring>\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "devices") == 0) return wgt_command_devices(argc - 1, argv + 1);
    if (strcmp(argv[1], "demo") == 0) return wgt_command_demo(argc - 1, argv + 1);
    if (strcmp(argv[1], "bench") == 0) return wgt_command_bench(argc - 1, argv + 1);
    if (strcmp(argv[1], "tune") == 0) return wgt_command_tune(argc - 1, argv + 1);
    if (strcmp(argv[1], "train") == 0) return wgt_command_train(argc - 1, argv + 1);
    if (strcmp(argv[1], "sample") == 0) return wgt_command_sample(argc - 1, argv + 1);
    if (strcmp(argv[1], "plot") == 0) return wgt_command_plot(argc - 1, argv + 1);
    if (strcmp(argv[1], "digits") == 0) return wgt_command_digits(argc - 1, argv + 1);
    if (strcmp(argv[1], "generate") == 0) return wgt_command_generate(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "wgt: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
