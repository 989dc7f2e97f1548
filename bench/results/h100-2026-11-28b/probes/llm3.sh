#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
OLD="WGT_GEMV_RPT=1 WGT_DECODE_CHUNK=64"
for i in 1 2; do for w in f16 q4; do
  echo "new $(env WGT_X=1 $W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
  echo "old $(env $OLD $W $G --weights $w --max-tokens 512 2>&1 | grep 'tokens/s')"
done; done
for cfg in "WGT_X=1" "WGT_DECODE_CHUNK=64"; do for w in f16 q4; do
  echo "== trace $w $cfg"
  env $cfg WGT_PROFILE_TRACE=$OUT/t.json $W $G --weights $w --max-tokens 48 2>&1 | grep "tokens/s"
  python3 .scratch/decode_trace2.py $OUT/t.json 32 | head -16
done; done
rm -f $OUT/t.json
for i in 1 2; do
  echo "tiles:  $(WGT_ATTENTION_QUAD_DIRECT=0 $W bench --only attn_f_gpt_256 2>&1 | grep attn_ | tr '\n' '|')"
  echo "direct: $($W bench --only attn_f_gpt_256 2>&1 | grep attn_ | tr '\n' '|')"
done
tr() { env $1 $W train --preset shakespeare --max-iters 60 --bench --eval-iters 1 --eval-interval 1000 --sample 0 --out /tmp/pt --quiet 2>&1 | grep "bench:"; }
for i in 1 2; do echo "train tiles: $(tr WGT_ATTENTION_QUAD_DIRECT=0)"; echo "train direct: $(tr WGT_X=1)"; done
