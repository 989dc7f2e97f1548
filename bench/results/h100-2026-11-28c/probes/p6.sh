#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
for w in q8 f16; do
  WGT_PROFILE_TRACE=/tmp/p_$w.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 1 > /dev/null 2>&1
  echo "== $w"; python3 .scratch/prefill_trace.py /tmp/p_$w.json | head -16
done
echo "== decode: default (split) / WGT_DECODE_SINGLE=auto (exact keys per invocation), 2 rounds"
for r in 1 2; do
  for s in 0 auto; do
    WGT_DECODE_SINGLE=$s $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 128 2>&1 | grep "tokens/s" | sed "s/^/single=$s: /"
  done
done
