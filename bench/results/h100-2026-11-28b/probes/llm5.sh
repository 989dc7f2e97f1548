#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
for i in 1 2; do for d in 0 1 2 3; do echo "dbg$d $(WGT_TMP_DBG=$d $W bench --only attn_decode_f16_560 2>&1 | grep attn_)"; done; done
echo "chunked-off $(WGT_DECODE_ATTN=0 $W bench --only attn_decode_f16_560 2>&1 | grep attn_)"
for c in gemv_f16_3072x2048 gemv_f16_16384x2048 gemv_f16_2048x8192 gemv_f16_128256x2048; do echo "$($W bench --only $c 2>&1 | grep gemv)"; done
for i in 1 2; do
  for w in f16 q4; do echo "L2 $($W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"; done
  echo "L3 $(WGT_LLAMA_DECODE_FUSE=3 $W $G --weights f16 --max-tokens 512 2>&1 | grep 'tokens/s')"
done
echo "== trace f16 L3"
WGT_LLAMA_DECODE_FUSE=3 WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights f16 --max-tokens 48 2>&1 | grep "tokens/s"
python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -16
rm -f $OUT/t.json
