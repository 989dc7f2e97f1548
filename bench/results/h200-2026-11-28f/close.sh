#!/usr/bin/env bash
# Closing measurements of the 2026-11-28 sixth session, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/close.sh
# issue 11: the training step against PyTorch eager f32 (two processes each, alternated; the training path
# is unchanged this session); issue 12: wgt generate --bench (Llama-3.2-1B shape, random weights, 512-token
# prompt) for f16, q8, q4 weights with the default and the 8-bit KV cache, one process of
# bench/llm_torch_ref.py, the 8192-token prompt with both caches, and the decode attention kernels.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close; mkdir -p $o
for i in 1 2; do
  $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 \
    | grep "bench:" | sed "s/^/wgt: /" | tee -a $o/step.txt
  $TORCH bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32: /" | tee -a $o/step.txt
done
for w in f16 q8 q4; do
  for kv in default q8; do
    $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --kv-cache $kv \
      --json $o/wgt_${w}_${kv}.json 2>&1 | grep "prefill" | tee -a $o/generate.txt
  done
done
$TORCH bench/llm_torch_ref.py --json $o/torch1.json 2>&1 | tail -2 | tee $o/torch1.txt
for w in f16 q4; do
  for kv in default q8; do
    $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 8192 --max-tokens 128 --kv-cache $kv \
      --json $o/wgt_${w}_8192_${kv}.json 2>&1 | grep "prefill" | tee -a $o/generate.txt
  done
done
$W bench --only attn_decode 2>&1 | grep attn_decode | tee $o/attn_decode.txt
