#!/usr/bin/env bash
# session 5 probe 7: 4x4 block fetches (b configs: operands read along k fetched in blocks, no copies) against the
# default (t: operands read along k copied transposed first) on the step's GEMM cases (ms)
set -u
W=build-bench/bin/wgt
for cfg in default tile128x128k8b tile128x128k8w8b tile128x128k16b tile128x64k8b default; do
  if [ $cfg = default ]; then unset WGT_MATMUL_CONFIG; else export WGT_MATMUL_CONFIG=$cfg; fi
  line=$( ( $W bench --only linear_gpt; $W bench --only gemm_bwd ) 2>&1 | grep -E "^(linear_gpt|gemm_bwd)" | grep -v head | grep -v 65x384 | grep -v b64 | awk '{printf "%s=%s ", $1, $(NF-2)}')
  echo "$cfg: $line"
done | tee $OUT/p7.txt
