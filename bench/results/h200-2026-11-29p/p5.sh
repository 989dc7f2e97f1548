#!/usr/bin/env bash
# Probe p5 of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p5.sh
# Trees: build-bench = 5d09445 + 4-bit dp4a products on unsigned nibbles (x's codes in the PAIRS order, the offset
# of 8 off as 8 x's code sum: two instructions a weight word at staging instead of ~12); build-base = c838ea8.
# 1. the prefill products (qmatmul_q, medium) base / new, two rounds, and the new q4 with each tile (gps 2);
# 2. the 512-token prefill end to end, q4 / q8, base and new alternated, three rounds;
# 3. the prefill's attention with four rows a quad (WGT_ATTENTION_QUAD_ROWS=4) and a few tiles;
# 4. test_quant_int8 and test_llama on the NVIDIA adapter.
set -u
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p5; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
B=build-base/bin/wgt
l=/tmp/logs; mkdir -p $l
for t in test_quant_int8 test_llama; do
  (timeout 300 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") >> $o/tests.txt 2>&1
done
for r in 1 2; do
  for X in $B $W; do
    echo "== r$r $X" >> $o/qmatmul.txt
    $X bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  done
done
for t in 128x128 128x64 64x128 64x64; do
  echo "== new tile $t gps 2" >> $o/qmatmul.txt
  WGT_QUANT_DP4A_TILE=$t WGT_QUANT_DP4A_GPS=2 $W bench --only qmatmul_q4 --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
done
g() {  # label wgt weights
  echo "$1 $3: $($2 generate --bench --shape llama-3.2-1b --weights $3 --prompt-tokens 512 --max-tokens 8 \
    2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for w in q4 q8; do
    g "r$r base" $B $w
    g "r$r new" $W $w
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
for qr in 2 4; do
  for t in 64,16,128,16,8 64,32,128,16,8 32,16,128,16,8 128,16,128,16,8; do
    echo "== QUAD_ROWS=$qr tiles $t" >> $o/attn.txt
    WGT_ATTENTION_QUAD_ROWS=$qr WGT_ATTENTION_TILES=$t $W bench --only attn_prefill 2>&1 | grep attn_ >> $o/attn.txt
  done
done
cat $o/tests.txt $o/qmatmul.txt $o/attn.txt | cut -c1-110
echo "total: $(( $(date +%s) - t0 )) s"
