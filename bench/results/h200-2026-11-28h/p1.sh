#!/usr/bin/env bash
# Eighth session, probe 1, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p1.sh
# 1. occupancy_probe.c (sizes 24-32 KiB): does 30.1 KiB (the fused backward with 16-row query tiles) let two
#    256-invocation workgroups share an SM?
# 2. attention_backward_fused 32 x 32 against 32 keys x 16-row tiles (WGT_ATTENTION_FUSED_TILE=32x16), alternated
#    processes: the attention benches and the training step.
set -u
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
build-bench/bin/occupancy_probe 132 2>&1 | tee $o/occupancy.txt
for r in 1 2; do
  for t in 32 32x16; do
    WGT_ATTENTION_FUSED_TILE=$t $W bench --only attn_fb_gpt 2>&1 | grep -E "^attn_fb_gpt" | sed "s/^/$t r$r /" | tee -a $o/attn.txt
  done
done
for r in 1 2; do
  for t in 32 32x16; do
    WGT_ATTENTION_FUSED_TILE=$t $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 \
      | grep "bench:" | sed "s/^/$t r$r: /" | tee -a $o/step.txt
  done
done
