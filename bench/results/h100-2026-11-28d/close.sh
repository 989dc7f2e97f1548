#!/usr/bin/env bash
# Closing measurements of the 2026-11-28 fourth session (issues 11 and 12), one call on the lent H100:
#   source scripts/device-env.sh; bash bench/results/h100-2026-11-28d/close.sh
# the training step against PyTorch eager f32 (three processes each, alternated), PyTorch's other modes,
# KV-cache sampling, attention and the step's GEMMs against PyTorch per case, then bench/llm_run.sh's steps.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn build-bench build
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/train; mkdir -p $o
for i in 1 2 3; do
  $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:" | sed "s/^/wgt: /" | tee -a $o/step.txt
  $TORCH bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32: /" | tee -a $o/step.txt
done
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --tf32 2>&1 | grep "bench:" | sed "s/^/torch tf32: /" | tee -a $o/step.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 2>&1 | grep "bench:" | sed "s/^/torch bf16: /" | tee -a $o/step.txt
timeout 150 $TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 --compile 2>&1 | grep "bench:" | sed "s/^/torch bf16 compile: /" | tee -a $o/step.txt
$W sample --checkpoint /tmp/wb/ckpt.safetensors --tokens 500 > /dev/null 2> $o/wgt_sample.txt; tail -1 $o/wgt_sample.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --sample-bench 500 2>&1 | grep -i "sample" | tee $o/torch_sample.txt
$W bench --only attn_ 2>&1 | grep attn_ | tee $o/wgt_attn.txt
$TORCH bench/torch_ref.py --only attn_ --json /tmp/ta.json 2>&1 | grep attn_ | tee $o/torch_attn.txt
$W bench --only gemm_bwd 2>&1 | grep gemm_ | tee $o/wgt_gemm.txt
$W bench --only linear_gpt 2>&1 | grep linear_ | tee -a $o/wgt_gemm.txt
$TORCH bench/gemm_torch_ref.py | tee $o/torch_gemm.txt
o=$OUT/llm; mkdir -p $o
for w in f16 q8 q4 f32; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $o/wgt_$w.json \
    2>&1 | grep "llm " | tee $o/wgt_$w.txt
done
for i in 1 2; do
  $TORCH bench/llm_torch_ref.py --json $o/torch$i.json 2>&1 | tail -1 | tee $o/torch$i.txt
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
