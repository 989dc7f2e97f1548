#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  for w in q8 q4 f16; do
    for p in highest medium; do
      WGT_LLAMA_PRECISION=$p $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 32 2>&1 | grep "tokens/s" | sed "s/^/$p: /"
    done
  done
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 16 2>&1 | tail -1 )
for w in q8 f16; do
  echo "== profile $w (medium), prefill-heavy"
  WGT_PROFILE=1 $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 1 2>&1 | grep -v "^llm" | sort -k3 -n -r | head -14
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 16 2>&1 | tail -1 )
