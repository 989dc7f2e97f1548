#!/usr/bin/env bash
# Session 3 probe 1: packed-f16 GEMM (HALF_MATH) at the prefill shapes, and the prefill itself.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
b() { "$W" bench --only qmatmul_f16_512 2>&1 | grep -E "qmatmul"; "$W" bench --only gemm_f16 2>&1 | grep -E "gemm_f16"; }
for r in 1 2; do
  for h in 0 1; do
    echo "== WGT_MATMUL_HALF=$h round $r"
    WGT_MATMUL_HALF=$h b | tee -a $o/gemm.txt
  done
done
echo "== config sweep, half on"
for cfg in tile128x128k8 tile128x128k16 tile128x64k8 tile64x128k8 tile64x64k16 tile64x64k8 tile128x128k8w8 tile128x128k8b tile128x128k16b; do
  echo "-- $cfg"
  WGT_MATMUL_HALF=1 WGT_MATMUL_CONFIG=$cfg b | tee -a $o/sweep.txt
done
echo "== prefill + decode, half off / on alternated"
for r in 1 2; do
  for h in 0 unset; do
    if [ $h = unset ]; then env -u WGT_MATMUL_HALF $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 64 2>&1 | grep "tokens/s" | sed "s/^/half=$h: /"
    else WGT_MATMUL_HALF=$h $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 64 2>&1 | grep "tokens/s" | sed "s/^/half=$h: /"; fi
  done
done | tee $o/prefill.txt
echo "== profile of prefill (half on)"
WGT_PROFILE=1 $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 2 2>&1 | tail -45 | tee $o/profile.txt
echo "== torch"
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 16 2>&1 | tail -3 ) | tee $o/torch.txt
