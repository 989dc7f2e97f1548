#!/usr/bin/env bash
# session 4 probe 3: attention_backward_fused2 SPLIT 1 / 2 against attention_backward_fused
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for w in 0 1 2; do
    echo "wide=$w: $(WGT_ATTENTION_FUSED_WIDE=$w $W bench --only attn_fb 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
for w in 1 2; do
WGT_ATTENTION_FUSED_WIDE=$w WGT_PROFILE_TRACE=/tmp/t1.json $W bench --only attn_fb_gpt_256 > /dev/null 2>&1
python3 bench/trace_by_kernel.py /tmp/t1.json 1 10 > /tmp/k.txt; head -4 /tmp/k.txt
done
for r in 1 2; do
  for w in 0 1 2; do
    echo "train wide=$w: $(WGT_ATTENTION_FUSED_WIDE=$w $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
