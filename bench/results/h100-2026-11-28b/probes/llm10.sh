#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for i in 1 2 3; do for w in q4 q8; do
  echo "L2 $(WGT_LLAMA_DECODE_FUSE=2 $W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
  echo "L3 $(WGT_LLAMA_DECODE_FUSE=3 $W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
done; done
echo "f16 default $($W $G --weights f16 --max-tokens 512 2>&1 | grep 'tokens/s')"
echo "== trace q4 default"
WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights q4 --max-tokens 48 2>&1 | grep "dispatches"
python3 .scratch/decode_trace2.py $OUT/t.json 32 > $OUT/tr.txt; head -10 $OUT/tr.txt; rm -f $OUT/t.json $OUT/tr.txt
