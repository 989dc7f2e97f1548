#!/usr/bin/env bash
# session 4 probe 2: attention_backward_fused2 (8 BK invocations) against attention_backward_fused
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for w in 0 1; do
    echo "wide=$w: $(WGT_ATTENTION_FUSED_WIDE=$w $W bench --only attn_fb_gpt 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
WGT_ATTENTION_FUSED_WIDE=1 WGT_PROFILE_TRACE=/tmp/t1.json $W bench --only attn_fb_gpt_256 > /dev/null 2>&1
python3 bench/trace_by_kernel.py /tmp/t1.json 1 10 | head -8
for r in 1 2; do
  for w in 0 1; do
    echo "train wide=$w: $(WGT_ATTENTION_FUSED_WIDE=$w $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
