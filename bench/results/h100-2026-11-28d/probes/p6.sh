#!/usr/bin/env bash
# session 4 probe 6: attention_forward_quad with 1 row a quad against 2 (the new default)
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for q in 2 1; do
    echo "rows/quad=$q: $(WGT_ATTENTION_QUAD_ROWS=$q $W bench --only attn_f 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
  done
done
for t in 128,16 32,16; do
  echo "rows/quad=1 tiles $t: $(WGT_ATTENTION_QUAD_ROWS=1 WGT_ATTENTION_TILES=$t,64,16,8 $W bench --only attn_f_gpt 2>&1 | grep attn_ | awk '{print $1, $(NF-2)}' | tr '\n' ' ')"
done
for r in 1 2; do
  for q in 2 1; do
    echo "train rows/quad=$q: $(WGT_ATTENTION_QUAD_ROWS=$q $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
