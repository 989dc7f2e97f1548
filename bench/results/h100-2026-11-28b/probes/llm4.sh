#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for cfg in "WGT_X=1" "WGT_MATMUL_CONFIG=gemv_rows64" "WGT_MATMUL_CONFIG=gemv_rows128"; do
  for c in gemv_f16_3072x2048 gemv_f16_16384x2048 gemv_f16_2048x8192; do echo "$cfg $(env $cfg $W bench --only $c 2>&1 | grep gemv)"; done
done
for cfg in "WGT_X=1" "WGT_QUANT_GEMV_ROWS=16,2" "WGT_QUANT_GEMV_ROWS=32,1" "WGT_QUANT_GEMV_ROWS=32,2" "WGT_QUANT_GEMV_ROWS=64,1"; do
  for c in gemv_q4_3072x2048 gemv_q4_16384x2048 gemv_q4_2048x8192; do echo "$cfg $(env $cfg $W bench --only $c 2>&1 | grep gemv)"; done
done
for w in f16 q4; do
  echo "== trace $w"
  WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights $w --max-tokens 48 2>&1 | grep "tokens/s"
  python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -16
done
rm -f $OUT/t.json
for i in 1 2; do for w in f16 q4; do echo "$($W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"; done; done
