#!/usr/bin/env bash
# Seventh session, probe 3, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p3.sh
# WGT_ATTENTION_ORDER's larger groups (p2: 64 the best of 0, 4, 16, 64): the GPT attention forward and
# fwd+bwd, then the training step, alternated.
set -u
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
for r in 1 2; do
  for n in 0 64 128 384; do
    WGT_ATTENTION_ORDER=$n $W bench --only attn_ 2>&1 | grep -E "^attn_f(b)?_gpt" | sed "s/^/order $n r$r /" | tee -a $o/attn_order.txt
  done
done
for r in 1 2 3; do
  for n in 0 64 384; do
    WGT_ATTENTION_ORDER=$n $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb \
      --quiet 2>&1 | grep "bench:" | sed "s/^/order $n r$r: /" | tee -a $o/step.txt
  done
done
