#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for i in 1 2 3; do for L in 2 3 4; do
  echo "L$L $(WGT_LLAMA_DECODE_FUSE=$L $W $G --weights f16 --max-tokens 512 2>&1 | grep 'tokens/s')"
done; done
echo "== trace f16 L3"
WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights f16 --max-tokens 48 2>&1 | grep "tokens/s\|dispatches"
python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -14
rm -f $OUT/t.json
