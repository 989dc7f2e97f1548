#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
echo "== dp4a GEMMs, double-buffered, default tile"
$W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
for t in 128x128 128x64 64x128 64x64; do
  echo "== tile $t"; WGT_QUANT_DP4A_TILE=$t $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul_q
done
for r in 1 2; do
  for w in q8 q4; do $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 16 2>&1 | grep "tokens/s"; done
  ( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 8 2>&1 | tail -1 )
done
