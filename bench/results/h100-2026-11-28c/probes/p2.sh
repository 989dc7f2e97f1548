#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
.scratch/fma_probe
b() { "$W" bench --only qmatmul_f16_512 2>&1 | grep -E "qmatmul"; "$W" bench --only gemm_f16 2>&1 | grep -E "gemm_f16"; }
echo "== half off, default"; WGT_MATMUL_HALF=0 b
for run in 16 32; do
  for cfg in default tile128x128k8 tile64x64k16 tile128x128k16b; do
    echo "== half on, run $run, $cfg"
    if [ $cfg = default ]; then WGT_MATMUL_HALF=1 WGT_MATMUL_HALF_RUN=$run b; else WGT_MATMUL_HALF=1 WGT_MATMUL_HALF_RUN=$run WGT_MATMUL_CONFIG=$cfg b; fi
  done
done
echo "== half off, tile64x64k16"; WGT_MATMUL_HALF=0 WGT_MATMUL_CONFIG=tile64x64k16 b
