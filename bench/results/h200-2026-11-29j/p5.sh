#!/usr/bin/env bash
# Tenth session, probe 5 (probe 2 again: the slope through workgroup memory, straight-line chunks), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29j/p5.sh
# wgt_gelu_linear (GELU's slope in the dh GEMM's epilogue) against the same op through the product and the
# elementwise slope (WGT_GELU_EPILOGUE=0), both with the 16-byte transposes, alternated with PyTorch eager f32;
# a profile; the GPU tests of the touched paths.
set -u
W=build-bench/bin/wgt
o=$OUT/p5; mkdir -p $o
for t in test_gelu_linear test_webgpu_transpose test_webgpu_matmul test_gpt_model; do
  timeout 200 build-bench/bin/$t 2>&1 | tail -1 | sed "s/^/$t: /"; done | tee $o/tests.txt
timeout 300 build-bench/bin/test_parity gelu_linear 2>&1 | tail -1 | sed "s/^/test_parity gelu_linear: /" | tee -a $o/tests.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  WGT_GELU_EPILOGUE=0 st | sed "s/^/epilogue-off r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 40 > $o/by_kernel.txt
head -24 $o/by_kernel.txt
gzip -f $o/trace.json
