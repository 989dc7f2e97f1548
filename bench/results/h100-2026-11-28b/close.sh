#!/usr/bin/env bash
# Closing measurements of the 2026-11-28 afternoon session (issues 11 and 12), one call:
# LLM decode / prefill against transformers (bench/llm_run.sh), host recording per token,
# and the training step against PyTorch eager f32 (issue 11, unchanged kernels, to re-check).
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn build-bench build
W=build-bench/bin/wgt
o=$OUT/llm; mkdir -p $o
# bench/llm_run.sh's steps, with each side's library path (wgt: MPI's; PyTorch: without)
for w in f16 q8 q4 f32; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $o/wgt_$w.json \
    2>&1 | grep "llm " | tee $o/wgt_$w.txt
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --json $o/torch.json 2>&1 | tail -4 | tee $o/torch.txt )
python3 - $o <<'PY'
import json, sys, os
o = sys.argv[1]
t = json.load(open(os.path.join(o, "torch.json")))
for w in ["f16", "q8", "q4", "f32"]:
    r = json.load(open(os.path.join(o, f"wgt_{w}.json")))
    print(f"| {w} | {r['prefill_tokens_per_s']:.0f} | {r['prefill_tokens_per_s'] / t['prefill_tokens_per_s']:.2f} | "
          f"{r['decode_tokens_per_s']:.1f} | {r['decode_tokens_per_s'] / t['decode_tokens_per_s']:.2f} |")
print("torch", t)
PY
for w in f16 q4; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --sequential 2>&1 | grep "llm " | tee -a $o/sequential.txt
done
o=$OUT/train; mkdir -p $o
for i in 1 2; do
  $W train --preset shakespeare --max-iters 60 --bench --eval-iters 1 --eval-interval 1000 --sample 0 --out /tmp/pt --quiet 2>&1 | grep "bench:" | tee -a $o/wgt.txt
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
  python3 bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep "bench:" | tee $o/torch_f32.txt )
