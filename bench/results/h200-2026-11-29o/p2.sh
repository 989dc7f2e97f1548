#!/usr/bin/env bash
# Probe p2 of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p2.sh
# Tree: p1's + quant_matmul_dp4a.wgsl's ROWS variant (WGT_QUANT_DP4A_ROWS=1: a group's products a tile row at a
# time, no TM x TN integer sums live).
# 1. the prefill products (wgt bench --only qmatmul_q --precision medium): ROWS 0 / 1 alternated, twice, and
#    ROWS 1 with each tile;
# 2. the 512-token prefill end to end, q8 / q4, ROWS 0 / 1 alternated, two rounds;
# 3. decode level 5 against 6 (q8, q4: three rounds each) and the quantized head's profile at both levels.
set -u
o=$OUT/p2; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
for r in 1 2; do
  for rows in 0 1; do
    echo "== round $r ROWS=$rows" >> $o/qmatmul.txt
    WGT_QUANT_DP4A_ROWS=$rows $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  done
done
for tile in 128x128 128x64 64x64; do
  echo "== ROWS=1 tile $tile" >> $o/qmatmul.txt
  WGT_QUANT_DP4A_TILE=$tile WGT_QUANT_DP4A_ROWS=1 $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
done
echo "bench: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for w in q8 q4; do
    for rows in 0 1; do
      echo "prefill r$r ROWS=$rows $w: $(WGT_QUANT_DP4A_ROWS=$rows $W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 8 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
for r in 1 2 3; do
  for w in q8 q4; do
    for lv in 5 6; do
      echo "decode r$r level $lv $w: $(WGT_LLAMA_DECODE_FUSE=$lv $W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 128 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
for w in q8 q4; do
  for lv in 5 6; do
    echo "== decode profile level $lv $w" >> $o/profile.txt
    WGT_LLAMA_DECODE_FUSE=$lv WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights $w \
      --prompt-tokens 512 --max-tokens 16 --sequential > /dev/null 2>&1
    python3 bench/decode_kernels.py /tmp/t.json 600 | grep -E "norm|argmax <-|qlinear_ex <- wgt_qlinear_ex <- wgt_qlinear_ex|in all" >> $o/profile.txt
  done
done
cat $o/qmatmul.txt $o/profile.txt | cut -c1-150
echo "total: $(( $(date +%s) - t0 )) s"
