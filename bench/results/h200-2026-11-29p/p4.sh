#!/usr/bin/env bash
# Probe p4 of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p4.sh
# Trees: build-bench = c838ea8 + HALF_MATH f16 GEMMs in tile64x64k16b (4x4 block fetches) + 8-bit dp4a products in
# 64x64 tiles at any size; build-base = c838ea8.
# 1. the 512-token prefill end to end, f16 / q8 / q4, base and new alternated, three rounds;
# 2. the prefill products (qmatmul_, medium), base and new, two rounds; more block-fetch tiles for the f16 ones;
# 3. test_webgpu_matmul and test_quant_int8 on the NVIDIA adapter.
set -u
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p4; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
B=build-base/bin/wgt
l=/tmp/logs; mkdir -p $l
for t in test_webgpu_matmul test_quant_int8; do
  (timeout 300 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") >> $o/tests.txt 2>&1
done
g() {  # label wgt weights
  echo "$1 $3: $($2 generate --bench --shape llama-3.2-1b --weights $3 --prompt-tokens 512 --max-tokens 8 \
    2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for w in f16 q8 q4; do
    g "r$r base" $B $w
    g "r$r new" $W $w
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for X in $B $W; do
    echo "== r$r $X" >> $o/qmatmul.txt
    $X bench --only qmatmul_ --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  done
done
for c in tile128x128k8b tile128x128k16b tile128x64k8b tile128x128k8w8b tile64x64k16b; do
  echo "== f16 config $c" >> $o/f16.txt
  WGT_MATMUL_CONFIG=$c $W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt
done
cat $o/tests.txt $o/qmatmul.txt $o/f16.txt | cut -c1-110
echo "total: $(( $(date +%s) - t0 )) s"
