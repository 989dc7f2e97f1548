#!/usr/bin/env bash
# Probe p7 of the fifteenth session (2026-11-29), after the close (whose f16 decode read new 841.0 / 832.3 against
# base 847.4 / 842.5): one binary, decode fusion level 5 / 6 alternated (f16: level 6 puts the final norm in the
# head's GEMV), four rounds:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p7.sh
set -u
o=$OUT/p7; mkdir -p $o
d() { WGT_LLAMA_DECODE_FUSE=$1 build-bench/bin/wgt generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 \
      --max-tokens 128 2>&1 | grep -E 'prefill' | sed 's/.*decode 128 tokens //; s/ (.*//'; }
for r in 1 2 3 4; do
  echo "r$r f16 decode level 5 $(d 5) level 6 $(d 6)" | tee -a $o/decode.txt
done
