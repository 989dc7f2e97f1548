#!/usr/bin/env bash
# Ninth session, probe 1, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28i/p1.sh
# The layer norm writing its output transposed for the qkv and fc GEMMs (wgt_layer_norm_linear) and the
# embedding as row copies: the step against WGT_NORM_TRANSPOSED=0, WGT_GATHER_ROWS=0 and PyTorch eager f32
# (alternated processes), the per-dispatch profile, and the new tests on this GPU.
set -u
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/gpu.txt
build-bench/bin/test_norm_linear 2>&1 | tail -4 | tee $o/tests.txt
build-bench/bin/test_webgpu_indexing 2>&1 | tail -2 | tee -a $o/tests.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_NORM_TRANSPOSED=0 st | sed "s/^/no-transposed r$r: /" | tee -a $o/step.txt
  WGT_GATHER_ROWS=0 st | sed "s/^/no-rows r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 90 > $o/by_kernel.txt
head -30 $o/by_kernel.txt
gzip -f $o/trace.json
