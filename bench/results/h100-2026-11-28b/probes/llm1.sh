#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
G="generate --bench --shape llama-3.2-1b --prompt-tokens 512"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for w in f16 q4 f16 q4; do $W $G --weights $w --max-tokens 256 2>&1 | grep "llm "; done
for w in f16 q4; do $W $G --weights $w --max-tokens 128 --sequential 2>&1 | grep "llm "; done
for c in gemv_f16_16384x2048 gemv_q4_16384x2048 gemv_f16_128256x2048 gemv_q4_128256x2048; do $W bench --only $c 2>&1 | grep gemv; done
for w in f16 q4; do
  WGT_PROFILE_TRACE=$OUT/$w.json $W $G --weights $w --max-tokens 32 2>&1 | grep "llm " | tee $OUT/$w.txt
  d=$(grep -o "per decode token [0-9.]* dispatches" $OUT/$w.txt | awk '{print $4}')
  python3 .scratch/decode_trace.py $OUT/$w.json $d 32
done
