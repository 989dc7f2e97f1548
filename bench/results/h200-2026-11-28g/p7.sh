#!/usr/bin/env bash
# Seventh session, probe 7, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p7.sh
# The quantized decode matvec with 512 invocations a workgroup where its staged x (37-41 KiB for K = 8192)
# leaves an SM room for one 256-invocation workgroup (p5: 64 KiB an SM): the products in one process
# (gemv_wg_sweep.c), then wgt generate q4 and q8, the default against WGT_QUANT_GEMV_WG=256, alternated.
set -u
W=build-bench/bin/wgt
o=$OUT/p7; mkdir -p $o
build-bench/bin/gemv_wg_sweep 3 2>&1 | tee $o/gemv_wg_sweep.txt
for r in 1 2; do
  for v in default 256; do
    for w in q4 q8; do
      env $( [ $v = 256 ] && echo WGT_QUANT_GEMV_WG=256 ) $W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 128 2>&1 | grep prefill | sed "s/^/$v r$r /" | tee -a $o/generate.txt
    done
  done
done
