#!/usr/bin/env bash
# session 4 probe 4: the small dispatches around the training GEMMs (W copies, split-K reductions)
set -u
W=build-bench/bin/wgt
for c in gemm_bwd_dx_1536to384 gemm_bwd_dx_384to384 gemm_bwd_dx_1152to384 gemm_bwd_dx_384to1536 gemm_bwd_dw_1152x384 gemm_bwd_dw_384x384 gemm_bwd_dw_1536x384 linear_gpt_head; do
  WGT_PROFILE_TRACE=/tmp/t.json $W bench --only $c > /tmp/b.txt 2>&1
  echo "$c: $(grep $c /tmp/b.txt | awk '{print $(NF-2)}') ms; $(python3 bench/trace_by_kernel.py /tmp/t.json 1 6 | grep -v dispatch | grep -v randn | grep -v '^all' | awk '{printf "%s %s us x %s; ", $1, $4, $3}')"
done
echo "-- shape rules without layout (no W copy):"
for c in gemm_bwd_dx_1536to384 gemm_bwd_dx_384to384 gemm_bwd_dx_1152to384 gemm_bwd_dx_384to1536; do
  echo "$c: $(WGT_MATMUL_SHAPE_RULES=waves,pad $W bench --only $c 2>&1 | grep $c | awk '{print $(NF-2)}') ms"
done
echo "-- split-K parts (dw 1152x384, 1536x384, 384x384):"
for p in 4 6 8 10; do
  echo "WGT_SPLITK=$p: $(for c in gemm_bwd_dw_1152x384 gemm_bwd_dw_1536x384 gemm_bwd_dw_384x384; do WGT_SPLITK=$p $W bench --only $c 2>&1 | grep $c | awk '{print $(NF-2)}'; done | tr '\n' ' ')"
done
WGT_PROFILE_TRACE=/tmp/t2.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py /tmp/t2.json 20 30
