#!/usr/bin/env bash
# session 4 probe 7: vec4 dq reduction; attention_backward_fused with 16-row query tiles (WGT_ATTENTION_FUSED_ROWS=16)
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for q in 32 16; do
    echo "fused rows=$q: $(WGT_ATTENTION_FUSED_ROWS=$q $W bench --only attn_fb_gpt 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
for q in 32 16; do
  WGT_ATTENTION_FUSED_ROWS=$q WGT_PROFILE_TRACE=/tmp/t1.json $W bench --only attn_fb_gpt_256 > /dev/null 2>&1
  echo "rows=$q trace:"; python3 bench/trace_by_kernel.py /tmp/t1.json 1 10 > /tmp/k.txt; head -6 /tmp/k.txt
done
for r in 1 2; do
  for q in 32 16; do
    echo "train fused rows=$q: $(WGT_ATTENTION_FUSED_ROWS=$q $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
