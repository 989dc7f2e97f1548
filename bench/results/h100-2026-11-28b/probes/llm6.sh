#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for d in 0 1 2 3; do echo "dbg$d $(WGT_TMP_DBG=$d WGT_PROFILE_TRACE=$OUT/t.json $W bench --only attn_decode_f16_560 >/dev/null 2>&1; python3 .scratch/tmean.py $OUT/t.json)"; done
for cfg in gemv_rows32 gemv_rows64 gemv_rows128; do for c in gemv_f16_3072x2048 gemv_f16_16384x2048 gemv_f16_2048x8192; do
  echo "$cfg $c $(WGT_MATMUL_CONFIG=$cfg WGT_PROFILE_TRACE=$OUT/t.json $W bench --only $c >/dev/null 2>&1; python3 .scratch/tmean.py $OUT/t.json)"; done; done
for r in 1 2; do for c in gemv_f16_3072x2048 gemv_f16_16384x2048 gemv_f16_2048x8192 gemv_q4_3072x2048 gemv_q4_16384x2048 gemv_q4_2048x8192; do
  echo "rpt$r $c $(WGT_GEMV_RPT=$r WGT_PROFILE_TRACE=$OUT/t.json $W bench --only $c >/dev/null 2>&1; python3 .scratch/tmean.py $OUT/t.json)"; done; done
for c in "WGT_X=1" "WGT_QUANT_GEMV_ROWS=32,1" "WGT_QUANT_GEMV_ROWS=32,2" "WGT_QUANT_GEMV_ROWS=16,2"; do for s in gemv_q4_3072x2048 gemv_q4_16384x2048 gemv_q4_2048x8192; do
  echo "$c $s $(env $c WGT_PROFILE_TRACE=$OUT/t.json $W bench --only $s >/dev/null 2>&1; python3 .scratch/tmean.py $OUT/t.json)"; done; done
rm -f $OUT/t.json
for i in 1 2; do
  echo "L2 $($W $G --weights f16 --max-tokens 512 2>&1 | grep 'tokens/s')"
  echo "L3 $(WGT_LLAMA_DECODE_FUSE=3 $W $G --weights f16 --max-tokens 512 2>&1 | grep 'tokens/s')"
done
