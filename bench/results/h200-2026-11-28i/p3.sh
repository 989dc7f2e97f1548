#!/usr/bin/env bash
# Ninth session, probe 3, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28i/p3.sh
# nn_norm_transposed.wgsl with 4 lanes a row (64 rows a workgroup, 24 vec4s a lane at D = 384: one wave of
# workgroups, 32-byte runs of yt a warp store) against direct (8 lanes) and the two calls, alternated; profiles.
set -u
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
for m in direct direct4; do WGT_NORM_TRANSPOSED_STORE=$m build-bench/bin/test_norm_linear 2>&1 | tail -1 | sed "s/^/$m: /"; done | tee $o/tests.txt
for m in direct direct4; do
  WGT_NORM_TRANSPOSED_STORE=$m WGT_PROFILE_TRACE=$o/trace_$m.json $W train --preset shakespeare --data data/tinyshakespeare.txt \
    --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
  python3 bench/trace_by_kernel.py $o/trace_$m.json 20 40 > $o/by_kernel_$m.txt
  grep -E "layer_norm_linear|index_select" $o/by_kernel_$m.txt | sed "s/^/$m: /"
  gzip -f $o/trace_$m.json
done
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  for m in direct direct4; do WGT_NORM_TRANSPOSED_STORE=$m st | sed "s/^/$m r$r: /" | tee -a $o/step.txt; done
  WGT_NORM_TRANSPOSED=0 st | sed "s/^/two-calls r$r: /" | tee -a $o/step.txt
done
