#!/usr/bin/env bash
# Probe p8 of the sixteenth session (2026-11-29): split-K for the f16 prefill's products (64 x 64 tiles leave
# 256-384 workgroups; the automatic rule splits only below 132 tiles): WGT_SPLITK unset / 2 / 4, two rounds.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p8.sh
set -u
o=$OUT/p8; mkdir -p $o
W=build-bench/bin/wgt
for r in 1 2; do
  for s in auto 2 4; do
    echo "== r$r WGT_SPLITK=$s" >> $o/f16.txt
    if [ $s = auto ]; then E=X=1; else E=WGT_SPLITK=$s; fi
    env $E $W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt
  done
done
cat $o/f16.txt | cut -c1-100
