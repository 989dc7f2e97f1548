#!/usr/bin/env bash
# Issue 12's comparison on the H200 (the remaining device time of the session): wgt generate --bench for f16,
# q4 and q8 (Llama-3.2-1B shape, random weights), then one process of bench/llm_torch_ref.py
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28e/llm.sh
set -u
W=build-bench/bin/wgt
mkdir -p $OUT/llm
for w in f16 q4 q8; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $OUT/llm/wgt_$w.json \
    2>&1 | grep "llm " | tee $OUT/llm/wgt_$w.txt
done
env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3 bench/llm_torch_ref.py --json $OUT/llm/torch1.json 2>&1 | tail -2 | tee $OUT/llm/torch1.txt
