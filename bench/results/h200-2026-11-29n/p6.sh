#!/usr/bin/env bash
# Fourteenth session, sixth H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p6.sh
# build-bench: 6b1f2c1's tree + attention_decode_combine_split.wgsl issuing four chunks' loads before their
# sums (each invocation walked its 16 chunks at 8192 keys one load round at a time); build-base: c712d98.
# 1. test_decode_attention on the NVIDIA adapter; 2. wgt bench --only attn_decode_ (the 8192-key cases take
# the split combine), base and new alternated, three rounds; 3. q4 and q8 decode at 8192 keys, alternated.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p6; mkdir -p $o
t0=$(date +%s)
timeout 120 build-bench/bin/test_decode_attention > /tmp/t.log 2>&1; echo "test_decode_attention: rc $? $(tail -1 /tmp/t.log)" | tee $o/tests.txt
for r in 1 2 3; do
  for b in base new; do
    W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
    echo "$b: $($W bench --only attn_decode_ 2>&1 | grep 8192 | awk '{print $1, $(NF-2)}' | tr '\n' ' ')" | tee -a $o/attn.txt
  done
done
g() {  # label wgt weights
  echo "$1 $3 8192: $($2 generate --bench --shape llama-3.2-1b --weights $3 --prompt-tokens 8192 --max-tokens 128 2>&1 \
    | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in q4 q8; do
    g base build-base/bin/wgt $w
    g new build-bench/bin/wgt $w
  done
done
echo "total: $(( $(date +%s) - t0 )) s"
