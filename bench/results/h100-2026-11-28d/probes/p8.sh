#!/usr/bin/env bash
# session 4 probe 8: attention_backward_fused variants: 1 = next tile's q/dout loaded during this tile,
# 2 = dropout factors drawn by every invocation (one (row, key quad) each) after the scores, 3 = both
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for e in 0 1 2 3; do
    echo "exp=$e: $(WGT_ATTENTION_FUSED_EXP=$e $W bench --only attn_fb_gpt 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
for e in 0 3; do
  WGT_ATTENTION_FUSED_EXP=$e WGT_PROFILE_TRACE=/tmp/t1.json $W bench --only attn_fb_gpt_256 > /dev/null 2>&1
  echo "exp=$e trace: $(python3 bench/trace_by_kernel.py /tmp/t1.json 1 10 | grep 'backward#2')"
done
for r in 1 2; do
  for e in 0 1 2 3; do
    echo "train exp=$e: $(WGT_ATTENTION_FUSED_EXP=$e $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
