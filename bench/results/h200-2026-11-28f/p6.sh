#!/usr/bin/env bash
# Sixth session, probe 6 (H200): the quantized decode matvec's shape (WGT_QUANT_GEMV_ROWS=threads,unroll;
# default 16 lanes a row for K = 2048 q4, 32 for q8, one word in flight), on the Llama-3.2-1B decode shapes,
# most of all the 4-bit head (128256 x 2048: 112 us a token under the profiler, 1.5 TB/s, p5).
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p6.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p6; mkdir -p $o
$W bench --only gemv_ 2>&1 | grep "gemv_q\|gemv_f16" | sed "s/^/default: /" | tee -a $o/gemv.txt
for t in 8 16 32 64; do
  for u in 1 2 4; do
    WGT_QUANT_GEMV_ROWS=$t,$u $W bench --only gemv_q 2>&1 | grep "gemv_q" | sed "s/^/$t,$u: /" | tee -a $o/gemv.txt
  done
done
$W bench --only gemv_ 2>&1 | grep "gemv_q" | sed "s/^/default: /" | tee -a $o/gemv.txt
