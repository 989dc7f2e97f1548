#!/usr/bin/env bash
# Seventh session, probe 6 (after close.sh), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p6.sh
# test_quant_int8's failure on the NVIDIA adapter in close.sh (its message), q4 decode twice more (close.sh's
# 843 tokens/s against 1,029-1,074 in p1), then the preset's full run (full.sh).
set -u
o=$OUT/p6; mkdir -p $o
build-bench/bin/test_quant_int8 > $o/test_quant_int8.txt 2>&1; grep -E "FAIL|passed" $o/test_quant_int8.txt
for r in 1 2; do
  build-bench/bin/wgt generate --bench --shape llama-3.2-1b --weights q4 --prompt-tokens 512 --max-tokens 128 2>&1 \
    | grep prefill | tee -a $o/generate.txt
done
bash bench/results/h200-2026-11-28g/full.sh
