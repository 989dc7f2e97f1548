#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
echo "== trace f16 default"
WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights f16 --max-tokens 48 2>&1 | grep "tokens/s\|dispatches"
python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -12
echo "== trace q4 default"
WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights q4 --max-tokens 48 2>&1 | grep "tokens/s\|dispatches"
python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -12
echo "attn iso $(WGT_PROFILE_TRACE=$OUT/t.json $W bench --only attn_decode_f16_560 >/dev/null 2>&1; python3 .scratch/tmean.py $OUT/t.json)"
rm -f $OUT/t.json
for i in 1 2 3; do for w in f16 q4; do echo "$($W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"; done; done
