#!/usr/bin/env bash
# Probe p2 of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p2.sh
# Trees: build-bench = c838ea8 + quant_matmul_dp4a's weight scales loaded once a group (both forms) and
# WGT_QUANT_DP4A_CHAIN=1 (each DP4A added to the running sum, not a sum of four added); build-base = c838ea8.
# 1. the prefill products (wgt bench --only qmatmul_q --precision medium): base, CHAIN 0, CHAIN 1, two rounds;
# 2. the 512-token prefill end to end, q8 / q4: base, CHAIN 0, CHAIN 1, two rounds;
# 3. the prefill's attention with each forward kernel (WGT_ATTENTION_FORWARD) and a few tiles.
set -u
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p2; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
B=build-base/bin/wgt
for r in 1 2; do
  echo "== round $r base" >> $o/qmatmul.txt
  $B bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  for c in 0 1; do
    echo "== round $r CHAIN=$c" >> $o/qmatmul.txt
    WGT_QUANT_DP4A_CHAIN=$c $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  done
done
echo "bench: $(( $(date +%s) - t0 )) s"
g() {  # label wgt weights [env]
  local label=$1 X=$2 w=$3; shift 3
  echo "$label $w: $(env "$@" $X generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 8 \
    2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in q8 q4; do
    g "r$r base" $B $w X=1
    g "r$r chain0" $W $w WGT_QUANT_DP4A_CHAIN=0
    g "r$r chain1" $W $w WGT_QUANT_DP4A_CHAIN=1
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
for f in quad flash tiled rows; do
  echo "== WGT_ATTENTION_FORWARD=$f" >> $o/attn.txt
  WGT_ATTENTION_FORWARD=$f $W bench --only attn_prefill 2>&1 | grep attn_ >> $o/attn.txt
done
for t in 64,16,128,16,8 64,32,128,16,8 128,32,128,16,8 32,32,128,16,8; do
  for f in flash tiled; do
    echo "== WGT_ATTENTION_FORWARD=$f WGT_ATTENTION_TILES=$t" >> $o/attn.txt
    WGT_ATTENTION_TILES=$t WGT_ATTENTION_FORWARD=$f $W bench --only attn_prefill 2>&1 | grep attn_ >> $o/attn.txt
  done
done
cat $o/qmatmul.txt $o/attn.txt | cut -c1-150
echo "total: $(( $(date +%s) - t0 )) s"
