#!/usr/bin/env bash
# Closing measurements of the 2026-11-28 third session (issues 11 and 12), one call:
# LLM prefill / decode against transformers (bench/llm_run.sh's steps, PyTorch twice), the
# int8-x and f16 products of a prefill, and the training step against PyTorch eager f32.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn build-bench build
W=build-bench/bin/wgt
o=$OUT/llm; mkdir -p $o
for w in f16 q8 q4 f32; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $o/wgt_$w.json \
    2>&1 | grep "llm " | tee $o/wgt_$w.txt
done
for i in 1 2; do
  ( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --json $o/torch$i.json 2>&1 | tail -1 | tee $o/torch$i.txt )
done
python3 - $o <<'PY'
import json, sys, os
o = sys.argv[1]
ts = [json.load(open(os.path.join(o, f"torch{i}.json"))) for i in (1, 2)]
for w in ["f16", "q8", "q4", "f32"]:
    r = json.load(open(os.path.join(o, f"wgt_{w}.json")))
    pre = " / ".join(f"{r['prefill_tokens_per_s'] / t['prefill_tokens_per_s']:.2f}" for t in ts)
    dec = " / ".join(f"{r['decode_tokens_per_s'] / t['decode_tokens_per_s']:.2f}" for t in ts)
    print(f"| {w} | {r['prefill_tokens_per_s']:.0f} | {pre} | {r['decode_tokens_per_s']:.1f} | {dec} |")
PY
for w in f16 q4 q8; do
  WGT_LLAMA_PRECISION=highest $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 32 2>&1 | grep "tokens/s" | sed "s/^/highest: /" | tee -a $o/precision.txt
done
$W bench --only qmatmul_ 2>&1 | grep qmatmul_ | sed "s/^/highest: /" | tee $o/products.txt
$W bench --only qmatmul_ --precision medium 2>&1 | grep qmatmul_ | sed "s/^/medium: /" | tee -a $o/products.txt
o=$OUT/train; mkdir -p $o
for i in 1 2; do
  $W train --preset shakespeare --max-iters 60 --bench --eval-iters 1 --eval-interval 1000 --sample 0 --out /tmp/pt --quiet 2>&1 | grep "bench:" | tee -a $o/wgt.txt
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
  python3 bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep "bench:" | tee $o/torch_f32.txt )
