#!/usr/bin/env bash
# Probe p6 of the fifteenth session (2026-11-29), after the close: its f16 prefill read 14,946.6 / 14,910.4 tokens/s
# (new) against 15,366.9 / 15,180.5 (base, 3753ba8). The same binary with the attention's f16 copies back
# (WGT_ATTENTION_F16_COPIES=1) and without, alternated, four rounds, and the base twice:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p6.sh
set -u
o=$OUT/p6; mkdir -p $o
p() { $1 generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 8 2>&1 | grep -E 'prefill' |
      sed 's/.*: prefill 512 tokens //; s/,.*//'; }
for r in 1 2 3 4; do
  echo "r$r f16 prefill copies $(WGT_ATTENTION_F16_COPIES=1 p build-bench/bin/wgt) in place $(p build-bench/bin/wgt)" \
    | tee -a $o/prefill.txt
  if [ $r -le 2 ]; then echo "r$r f16 prefill base $(p build-base/bin/wgt)" | tee -a $o/prefill.txt; fi
done
