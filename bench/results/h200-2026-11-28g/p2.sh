#!/usr/bin/env bash
# Seventh session, probe 2, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p2.sh
# WGT_ATTENTION_ORDER (causal attention workgroups most work first, groups of n (b, head) pairs) on the GPT
# attention kernels and the training step; WGT_BATCH_DISPATCHES=256 on the training step; alternated.
set -u
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
for r in 1 2; do
  for n in 0 4 16 64; do
    WGT_ATTENTION_ORDER=$n $W bench --only attn_fb_gpt_256 2>&1 | grep "^attn_fb_gpt" | sed "s/^/order $n r$r /" | tee -a $o/attn_order.txt
  done
done
for r in 1 2; do
  for v in "WGT_ATTENTION_ORDER=0" "WGT_ATTENTION_ORDER=16" "WGT_BATCH_DISPATCHES=256"; do
    env $v $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet \
      2>&1 | grep "bench:" | sed "s/^/$v r$r: /" | tee -a $o/step.txt
  done
done
