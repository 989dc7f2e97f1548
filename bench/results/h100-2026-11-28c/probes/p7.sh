#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
for w in q8 f16; do
  WGT_PROFILE_TRACE=/tmp/p_$w.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 1 > /dev/null 2>&1
  echo "== $w"; python3 .scratch/prefill_trace.py /tmp/p_$w.json | head -24
done
