#!/usr/bin/env bash
# Sixth session, probe 8 (H200): the quantized decode matvec's new lanes and words in flight, end to end:
# wgt generate --bench (Llama-3.2-1B shape, 512-token prompt) for q4 and q8 weights, default against the
# former choice (WGT_QUANT_GEMV_ROWS=words), alternated; f16 once for the q4 / f16 ratio.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p8.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p8; mkdir -p $o
g() { env "$@" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep "prefill" | sed "s/^/$* : /" | tee -a $o/generate.txt; }
for w in q4 q8; do
  for i in 1 2 3; do g X=new; g WGT_QUANT_GEMV_ROWS=words; done
done
w=f16; g X=new; g X=new

