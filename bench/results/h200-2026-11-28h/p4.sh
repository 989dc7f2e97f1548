#!/usr/bin/env bash
# Eighth session, probe 4, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p4.sh
# The tree with the norm backward's rows pipelined (loads of row i + 1 before row i's sums): the step
# against PyTorch eager f32 (alternated processes), WGT_AUTOGRAD_FOLD=0, and the per-dispatch profile.
set -u
W=build-bench/bin/wgt
o=$OUT/p4; mkdir -p $o
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_AUTOGRAD_FOLD=0 st | sed "s/^/nofold r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 90 > $o/by_kernel.txt
head -24 $o/by_kernel.txt
gzip -f $o/trace.json
