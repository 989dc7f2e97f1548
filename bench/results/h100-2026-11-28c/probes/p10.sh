#!/usr/bin/env bash
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for w in q8 q4; do $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep "tokens/s"; done
done
( export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/llm_torch_ref.py --decode-tokens 32 2>&1 | tail -1 )
