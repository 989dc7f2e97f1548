#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== attn_decode bench: split / single"
WGT_DECODE_SINGLE=0 $W bench --only attn_decode 2>&1 | grep attn_decode
$W bench --only attn_decode 2>&1 | grep attn_decode
echo "== decode A/B (WGT_DECODE_SINGLE=0 / default), 3 rounds"
for r in 1 2 3; do
  for w in f16 q4; do
    for s in 0 def; do
      if [ $s = 0 ]; then WGT_DECODE_SINGLE=0 $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep "tokens/s" | sed "s/^/split: /"
      else $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep "tokens/s" | sed "s/^/single: /"; fi
    done
  done
done
echo "== decode trace f16 (single)"
WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 40 > /dev/null 2>&1
python3 bench/results/h100-2026-11-28b/probes/decode_trace2.py /tmp/t.json 2>&1 | tail -20
echo "== prefill profile q8 (medium)"
WGT_PROFILE=1 $W generate --bench --shape llama-3.2-1b --weights q8 --prompt-tokens 512 --max-tokens 1 2>&1 | grep -v "^llm" | sort -k3 -n -r | head -12
echo "== prefill profile f16 (medium)"
WGT_PROFILE=1 $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 1 2>&1 | grep -v "^llm" | sort -k3 -n -r | head -12
