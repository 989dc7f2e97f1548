#!/usr/bin/env bash
# Ninth session, probe 2, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28i/p2.sh
# How nn_norm_transposed.wgsl stores yt (WGT_NORM_TRANSPOSED_STORE=tile32 | tile128 | direct) against the
# two calls (WGT_NORM_TRANSPOSED=0) and PyTorch eager f32, alternated; a profile of tile128 and of direct.
set -u
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
for m in tile32 tile128 direct; do WGT_NORM_TRANSPOSED_STORE=$m build-bench/bin/test_norm_linear 2>&1 | tail -1 | sed "s/^/$m: /"; done | tee $o/tests.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  for m in tile32 tile128 direct; do WGT_NORM_TRANSPOSED_STORE=$m st | sed "s/^/$m r$r: /" | tee -a $o/step.txt; done
  WGT_NORM_TRANSPOSED=0 st | sed "s/^/two-calls r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
for m in tile128 direct; do
  WGT_NORM_TRANSPOSED_STORE=$m WGT_PROFILE_TRACE=$o/trace_$m.json $W train --preset shakespeare --data data/tinyshakespeare.txt \
    --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
  python3 bench/trace_by_kernel.py $o/trace_$m.json 20 40 > $o/by_kernel_$m.txt
  grep -E "layer_norm_linear|index_select" $o/by_kernel_$m.txt | sed "s/^/$m: /"
  gzip -f $o/trace_$m.json
done
