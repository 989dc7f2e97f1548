#!/usr/bin/env bash
# Issue 12's table on the final tree again (close2's call ran slow across the board), one call on the H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/close3.sh
set -u
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close3; mkdir -p $o
for w in f16 q8 q4; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $o/wgt_$w.json \
    2>&1 | grep "prefill" | tee -a $o/generate.txt
done
$W generate --bench --shape llama-3.2-1b --weights q4 --prompt-tokens 512 --max-tokens 128 --kv-cache q8 \
  --json $o/wgt_q4_kvq8.json 2>&1 | grep "prefill" | tee -a $o/generate.txt
$TORCH bench/llm_torch_ref.py --json $o/torch1.json 2>&1 | tail -1 | tee $o/torch1.txt
