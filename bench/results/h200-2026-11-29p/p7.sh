#!/usr/bin/env bash
# Probe p7 of the sixteenth session (2026-11-29): the close's q4 decode read 1,215-1,217 tokens/s for the new tree
# against 1,226-1,227 for base, though no q4 decode kernel changed: four more alternated rounds of q4 (and f16)
# decode, 512-token prompt, 128 tokens.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p7.sh
set -u
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p7; mkdir -p $o
for r in 1 2 3 4; do
  for w in q4 f16; do
    for b in base new; do
      W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
      echo "r$r $b $w: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 \
        2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
