#!/usr/bin/env bash
# session 5 probe 6: quant_matmul_dp4a with 512 invocations (128x128w, 128x64w, 64x64w) against the 256-invocation tiles
set -u
W=build-bench/bin/wgt
for t in default 128x128 128x128w 64x64 64x64w 128x64 128x64w default; do
  if [ $t = default ]; then unset WGT_QUANT_DP4A_TILE; else export WGT_QUANT_DP4A_TILE=$t; fi
  echo "$t: $($W bench --only qmatmul_q --precision medium 2>&1 | grep -E '^qmatmul_q' | awk '{printf "%s=%s ", $1, $(NF-2)}')"
done
unset WGT_QUANT_DP4A_TILE
for w in q8 q4; do
  for t in default 128x128w default 128x128w; do
    if [ $t = default ]; then unset WGT_QUANT_DP4A_TILE; else export WGT_QUANT_DP4A_TILE=$t; fi
    echo "$w $t: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 32 2>&1 | grep 'llm ')"
  done
done
