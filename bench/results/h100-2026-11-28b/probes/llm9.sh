#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for cfg in "WGT_GEMV_PREFETCH=0" "WGT_X=1"; do for w in f16 q4; do
  echo "== trace $w $cfg"
  env $cfg WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights $w --max-tokens 48 2>&1 | grep "tokens/s" | cut -c1-60
  python3 .scratch/decode_trace2.py $OUT/t.json 32 > $OUT/tr.txt; head -8 $OUT/tr.txt
done; done
rm -f $OUT/t.json $OUT/tr.txt
for i in 1 2 3; do for w in f16 q4; do
  echo "nopre $(WGT_GEMV_PREFETCH=0 $W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
  echo "pre   $($W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
done; done
