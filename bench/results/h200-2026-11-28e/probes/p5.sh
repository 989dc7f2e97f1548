#!/usr/bin/env bash
# session 5 probe 5: 8x16 / 16x8 outputs per invocation in 128-invocation workgroups on the step's GEMM cases (ms)
set -u
W=build-bench/bin/wgt
for cfg in default tile128x128k8x tile128x128k8xt tile128x128k8y tile128x128k8yt tile64x128k8x tile128x64k8y default; do
  if [ $cfg = default ]; then unset WGT_MATMUL_CONFIG; else export WGT_MATMUL_CONFIG=$cfg; fi
  line=$( ( $W bench --only linear_gpt; $W bench --only gemm_bwd ) 2>&1 | grep -E "^(linear_gpt|gemm_bwd)" | grep -v head | grep -v 65x384 | grep -v b64 | awk '{printf "%s=%s ", $1, $(NF-2)}')
  echo "$cfg: $line"
done | tee $OUT/p5.txt
