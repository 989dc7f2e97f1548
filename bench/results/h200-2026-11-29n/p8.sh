#!/usr/bin/env bash
# Fourteenth session, eighth H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p8.sh
# p7 again with rows up to 16384 elements kept in one pass (SPLIT_FROM): the step 32.4 against 32.3 ms there.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p8; mkdir -p $o
for r in 1 2 3; do
  for b in base new; do
    W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
    echo "$b: $($W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb \
      --quiet 2>&1 | grep 'bench:')" | tee -a $o/step.txt
  done
done
timeout 100 build-bench/bin/test_webgpu_reduce > /tmp/r.log 2>&1; echo "test_webgpu_reduce: rc $? $(tail -1 /tmp/r.log)" | tee -a $o/step.txt
for b in base new; do
  W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
  echo "$b q4: $($W generate --bench --shape llama-3.2-1b --weights q4 --prompt-tokens 512 --max-tokens 128 2>&1 \
    | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/step.txt
done
