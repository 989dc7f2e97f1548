#!/usr/bin/env bash
# int8-x (dp4a) quantized prefill vs the f32 dequantizing kernel; f16 HALF_MATH end to end
set -u
W=build-bench/bin/wgt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  echo "== highest r$r"; $W bench --only qmatmul_q 2>&1 | grep qmatmul_q
  echo "== medium r$r"; $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
done
for t in 128x128 128x64 64x128 64x64; do
  echo "== medium tile $t"; WGT_QUANT_DP4A_TILE=$t $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
done
echo "== prefill/decode: WGT_LLAMA_PRECISION highest / default(medium), alternated"
for r in 1 2; do
  for w in f16 q8 q4; do
    for p in highest medium; do
      WGT_LLAMA_PRECISION=$p $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 32 2>&1 | grep "tokens/s" | sed "s/^/$p: /"
    done
  done
done
echo "== torch"
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 16 2>&1 | tail -1 )
