#!/usr/bin/env bash
# Ninth session, probe 4, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28i/p4.sh
# The residual dropout keeping its mask as bits (DROPOUT_ADD / DROPOUT_MASKED), with the embedding's row gather,
# the scatter sort's tile-major histogram and the 8-load sum_squares: the step against WGT_DROPOUT_MASK=0 and
# PyTorch eager f32 (alternated), a profile, and the touched tests on this GPU.
set -u
W=build-bench/bin/wgt
o=$OUT/p4; mkdir -p $o
for t in test_dropout_mask test_webgpu_indexing test_optimizer; do build-bench/bin/$t 2>&1 | tail -1 | sed "s/^/$t: /"; done | tee $o/tests.txt
build-bench/bin/test_parity dropout_add 2>&1 | tail -1 | sed "s/^/test_parity dropout_add: /" | tee -a $o/tests.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_DROPOUT_MASK=0 st | sed "s/^/no-mask r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 120 > $o/by_kernel.txt
grep -E "dropout|backward#1 |scatter_add|sum_squares|index_select" $o/by_kernel.txt
gzip -f $o/trace.json
