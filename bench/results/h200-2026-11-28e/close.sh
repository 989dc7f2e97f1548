#!/usr/bin/env bash
# Closing measurements of the 2026-11-28 fifth session (issue 11), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28e/close.sh
# the training step against PyTorch eager f32 (three processes each, alternated), the step without the
# "narrow" GEMM rule, PyTorch's other modes, KV-cache sampling, the step's GEMMs, GPU tests of the changed path.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
o=$OUT/train; mkdir -p $o
for i in 1 2 3; do
  st | sed "s/^/wgt: /" | tee -a $o/step.txt
  $TORCH bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32: /" | tee -a $o/step.txt
done
WGT_MATMUL_SHAPE_RULES=layout,waves,pad st | sed "s/^/wgt without narrow: /" | tee -a $o/step.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --tf32 2>&1 | grep "bench:" | sed "s/^/torch tf32: /" | tee -a $o/step.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 2>&1 | grep "bench:" | sed "s/^/torch bf16: /" | tee -a $o/step.txt
timeout 150 $TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 --compile 2>&1 | grep "bench:" | sed "s/^/torch bf16 compile: /" | tee -a $o/step.txt
$W sample --checkpoint /tmp/wb/ckpt.safetensors --tokens 500 > /dev/null 2> $o/wgt_sample.txt; tail -1 $o/wgt_sample.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --sample-bench 500 2>&1 | grep -i "sample" | tee $o/torch_sample.txt
$W bench --only gemm_bwd 2>&1 | grep gemm_ | tee $o/wgt_gemm.txt
$W bench --only linear_gpt 2>&1 | grep linear_ | tee -a $o/wgt_gemm.txt
cd build-bench
for t in test_webgpu_matmul test_train_reference test_gpt_train; do
  echo "$t: $(timeout 200 bin/$t 2>&1 | tail -1)"
done
