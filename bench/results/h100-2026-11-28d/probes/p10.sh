#!/usr/bin/env bash
# session 4 probe 10: the step's GEMMs against cuBLAS per shape; 128x192 tiles (8x12 outputs an invocation)
set -u
W=build-bench/bin/wgt
(export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/gemm_torch_ref.py)
for c in default tile128x192k8 tile128x192k8t tile128x192k8w8t default; do
  if [ $c = default ]; then e=""; else e="WGT_MATMUL_CONFIG=$c"; fi
  echo "== $c"
  env $e $W bench --only gemm_bwd 2>&1 | grep gemm_ | awk '{print $1, $(NF-2), $NF}'
  env $e $W bench --only linear_gpt 2>&1 | grep linear_ | awk '{print $1, $(NF-2), $NF}'
done
