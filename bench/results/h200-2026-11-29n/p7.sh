#!/usr/bin/env bash
# Fourteenth session, seventh H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p7.sh
# The reductions' split (MIN_PER_THREAD 64 -> 8) and the norm's subgroup rule (rows up to 512 elements)
# apply to training too: the training step (shakespeare preset, 100 iterations, --bench), build-base
# (c712d98) and build-bench (the session's tree) alternated, three rounds each.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p7; mkdir -p $o
for r in 1 2 3; do
  for b in base new; do
    W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
    echo "$b: $($W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb \
      --quiet 2>&1 | grep 'bench:')" | tee -a $o/step.txt
  done
done
