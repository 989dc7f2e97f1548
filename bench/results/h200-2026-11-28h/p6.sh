#!/usr/bin/env bash
# Eighth session, probe 6, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p6.sh
# The attention knobs again now that dropout's Philox is cheaper and the occupancy limit is known (p1: two
# 256-invocation workgroups an SM only at <= 24 KiB): WGT_ATTENTION_FUSED_TILE=16 (19.9 KiB, 128 invocations:
# two workgroups an SM) against 32, WGT_ATTENTION_QUAD_ROWS=4 against 2; kernels alternated, then the step.
set -u
W=build-bench/bin/wgt
o=$OUT/p6; mkdir -p $o
for r in 1 2; do
  for cfg in "" "WGT_ATTENTION_FUSED_TILE=16" "WGT_ATTENTION_QUAD_ROWS=4"; do
    env $cfg $W bench --only attn_ 2>&1 | grep -E "^attn_f(b)?_gpt_256 " | sed "s/^/${cfg:-default} r$r /" | tee -a $o/attn.txt
  done
done
st() { env "$@" $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2; do
  st WGT_NONE=1 | sed "s/^/default r$r: /" | tee -a $o/step.txt
  st WGT_ATTENTION_FUSED_TILE=16 | sed "s/^/fused tile 16 r$r: /" | tee -a $o/step.txt
done
