#!/usr/bin/env bash
# Tenth session, probe 1, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29j/p1.sh
# The transpose in 16-byte loads (transpose_tiled_vec4.wgsl) against one u32 a lane (WGT_TRANSPOSE_VEC4=0),
# and what the optimizer's 39 dispatches cost in a real step (an uncommitted experiment knob that skips them:
# WGT_EXPERIMENT_SKIP_OPT=0 all, =100000 the parameters under 100k elements), alternated with PyTorch eager f32.
set -u
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
timeout 100 build-bench/bin/test_webgpu_transpose 2>&1 | tail -1 | sed "s/^/test_webgpu_transpose: /" | tee $o/tests.txt
for v in 1 0; do
  WGT_TRANSPOSE_VEC4=$v $W bench --only transpose_f32 2>&1 | grep -E "^transpose_f32" | sed "s/^/vec4=$v: /" | tee -a $o/transpose.txt
done
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_TRANSPOSE_VEC4=0 st | sed "s/^/vec4-off r$r: /" | tee -a $o/step.txt
  WGT_EXPERIMENT_SKIP_OPT=0 st | sed "s/^/skip-opt-all r$r: /" | tee -a $o/step.txt
  WGT_EXPERIMENT_SKIP_OPT=100000 st | sed "s/^/skip-opt-small r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 60 > $o/by_kernel.txt
head -30 $o/by_kernel.txt
gzip -f $o/trace.json
