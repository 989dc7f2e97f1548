#!/usr/bin/env bash
# Seventh session, probe 5, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p5.sh
# 1. occupancy_probe.c: 256-invocation workgroups resident per SM by workgroup memory size;
# 2. the attention kernels' scores as FMA chains (dot4_fma, dot_fma) against the tree before
#    (its libwgtensor.so.0 carried as .scratch/s7/old), alternated: kernels and the training step.
set -u
W=build-bench/bin/wgt
OLD="env LD_LIBRARY_PATH=$PWD/.scratch/s7/old:${LD_LIBRARY_PATH:-}"
o=$OUT/p5; mkdir -p $o
build-bench/bin/occupancy_probe 132 2>&1 | tee $o/occupancy.txt
for r in 1 2; do
  for v in new old; do
    pre=""; [ $v = old ] && pre="$OLD"
    $pre $W bench --only attn_ 2>&1 | grep -E "^attn_f(b)?_gpt" | sed "s/^/$v r$r /" | tee -a $o/attn.txt
  done
done
for r in 1 2 3; do
  for v in new old; do
    pre=""; [ $v = old ] && pre="$OLD"
    $pre $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 \
      | grep "bench:" | sed "s/^/$v r$r: /" | tee -a $o/step.txt
  done
done
