#!/usr/bin/env bash
# Ninth session, probe 6, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28i/p6.sh
# The norm backward's row sums by subgroups with the forward's row per subgroup, against neither
# (WGT_NORM_SUBGROUP=0) and PyTorch eager f32, alternated; a profile; the norm tests on this GPU.
set -u
W=build-bench/bin/wgt
o=$OUT/p6; mkdir -p $o
for t in test_nn_ops test_autograd; do timeout 200 build-bench/bin/$t 2>&1 | tail -1 | sed "s/^/$t: /"; done | tee $o/tests.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_NORM_SUBGROUP=0 st | sed "s/^/norm-rows r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 120 > $o/by_kernel.txt
grep -E "layer_norm" $o/by_kernel.txt
gzip -f $o/trace.json
