#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
for g in 1 2 4; do
  echo "== gps $g"; WGT_QUANT_DP4A_GPS=$g $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
done
echo "== gps 2, 128x128"; WGT_QUANT_DP4A_GPS=2 WGT_QUANT_DP4A_TILE=128x128 $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
for r in 1 2; do
  for g in 1 2 4; do
    for w in q8 q4; do WGT_QUANT_DP4A_GPS=$g $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 8 2>&1 | grep "tokens/s" | sed "s/^/gps $g: /"; done
  done
done
