#!/usr/bin/env bash
# Probe p9 of the sixteenth session (2026-11-29): HALF_MATH products with K >= 8192 and one to two targets of tiles
# split K in parts of 2048 (the f16 prefill's down projection in 4 parts; p8). The 512-token f16 prefill with the
# rule (default) against WGT_SPLITK=0 (no split-K at all: the prefill's other products never split), three
# alternated rounds, and the products; test_webgpu_matmul on the NVIDIA adapter.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p9.sh
set -u
o=$OUT/p9; mkdir -p $o
W=build-bench/bin/wgt
timeout 200 build-bench/bin/test_webgpu_matmul > /tmp/m.log 2>&1; echo "test_webgpu_matmul: rc $? $(tail -1 /tmp/m.log)" | tee -a $o/generate.txt
for r in 1 2 3; do
  for s in off rule; do
    if [ $s = rule ]; then E=X=1; else E=WGT_SPLITK=0; fi
    echo "r$r $s f16: $(env $E $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 8 \
      2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
  done
done
for s in off rule; do
  echo "== $s" >> $o/f16.txt
  if [ $s = rule ]; then E=X=1; else E=WGT_SPLITK=0; fi
  env $E $W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt
done
cut -c1-100 $o/f16.txt
