#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
C="gemv_f16_3072x2048 gemv_f16_2048x8192 gemv_f16_16384x2048 gemv_f16_128256x2048 gemv_q4_3072x2048 gemv_q4_2048x8192 gemv_q4_16384x2048 gemv_q4_128256x2048"
for r in 1 2 4 0; do
  for c in $C; do echo "rpt$r $(WGT_GEMV_RPT=$r $W bench --only $c 2>&1 | grep gemv)"; done
done
for i in 1 2; do for r in 1 0; do for w in f16 q4; do echo "rpt$r $(WGT_GEMV_RPT=$r $W $G --weights $w --max-tokens 256 2>&1 | grep 'tokens/s')"; done; done; done
