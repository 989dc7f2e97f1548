#!/usr/bin/env bash
# session 4 probe 5: attention_forward_quad with 2 rows a quad (WGT_ATTENTION_QUAD_ROWS=2) against 4
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for q in 4 2; do
    echo "rows/quad=$q: $(WGT_ATTENTION_QUAD_ROWS=$q $W bench --only attn_f 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
for t in 32,16 128,16 64,32 128,32 64,8; do
  echo "rows/quad=2 tiles $t: $(WGT_ATTENTION_QUAD_ROWS=2 WGT_ATTENTION_TILES=$t,64,16,8 $W bench --only attn_f_gpt 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
done
for r in 1 2; do
  for q in 4 2; do
    echo "train rows/quad=$q: $(WGT_ATTENTION_QUAD_ROWS=$q $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
