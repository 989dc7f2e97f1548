#!/usr/bin/env bash
# Eighth session, probe 5, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p5.sh
# 1. The norm backward with partials: chunks of rows (WGT_NORM_FUSED_CHUNKS 1024 = default, 2048, 4096) and
#    threads a row (WGT_WEBGPU_NORM_THREADS 64 = the GPT's default, 128), the training step, alternated.
# 2. dq_reduce with every block's load issued (the tree's working copy) against 52.7 us a call in p4: profile.
set -u
W=build-bench/bin/wgt
o=$OUT/p5; mkdir -p $o
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2; do
  for c in 1024 2048 4096; do
    WGT_NORM_FUSED_CHUNKS=$c st | sed "s/^/chunks $c r$r: /" | tee -a $o/step.txt
  done
  WGT_WEBGPU_NORM_THREADS=128 st | sed "s/^/threads 128 r$r: /" | tee -a $o/step.txt
  WGT_WEBGPU_NORM_THREADS=128 WGT_NORM_FUSED_CHUNKS=2048 st | sed "s/^/threads 128 chunks 2048 r$r: /" | tee -a $o/step.txt
done
for c in 1024 4096; do
  WGT_NORM_FUSED_CHUNKS=$c WGT_PROFILE_TRACE=$o/trace_$c.json $W train --preset shakespeare --data data/tinyshakespeare.txt \
    --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
  python3 bench/trace_by_kernel.py $o/trace_$c.json 20 90 > $o/by_kernel_$c.txt
  echo "chunks $c:"; grep -E "layer_norm backward|attention_backward#3|^all" $o/by_kernel_$c.txt
  gzip -f $o/trace_$c.json
done
