#!/usr/bin/env bash
# session 5 probe 2: the step's GEMM cases under every candidate tile config (WGT_MATMUL_CONFIG), ms
set -u
W=build-bench/bin/wgt
for cfg in default tile128x128k8 tile128x128k8t tile128x128k8w8t tile128x64k8 tile64x128k8 tile64x128k8t \
           tile128x64k8s tile128x64k8st tile64x128k8s tile64x128k8st tile128x64k16s tile128x64k16st tile64x64k8s \
           tile64x64k16 tile128x128k16; do
  if [ $cfg = default ]; then unset WGT_MATMUL_CONFIG; else export WGT_MATMUL_CONFIG=$cfg; fi
  line=$( ( $W bench --only linear_gpt; $W bench --only gemm_bwd ) 2>&1 | grep -E "^(linear_gpt|gemm_bwd)" | grep -v head | grep -v 65x384 | grep -v b64 | awk '{printf "%s=%s ", $1, $(NF-2)}')
  echo "$cfg: $line"
done | tee $OUT/p2.txt
