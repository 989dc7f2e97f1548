#!/usr/bin/env bash
# Probe p10 of the sixteenth session (2026-11-29): split-K for the dp4a products (K >= 8192 over fewer than 528
# tiles: parts of 2048, reduced by matmul_splitk_reduce), on (default) against WGT_QUANT_DP4A_SPLIT=0: the
# products (two rounds) and the 512-token prefill q8 / q4 (three alternated rounds); test_quant_int8 and test_llama
# on the NVIDIA adapter.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p10.sh
set -u
o=$OUT/p10; mkdir -p $o
W=build-bench/bin/wgt
for t in test_quant_int8 test_llama; do
  (timeout 200 build-bench/bin/$t > /tmp/$t.log 2>&1; echo "$t: rc $? $(tail -1 /tmp/$t.log) $(grep FAIL /tmp/$t.log | head -3)") >> $o/tests.txt
done
for r in 1 2; do
  for s in off on; do
    if [ $s = on ]; then E=X=1; else E=WGT_QUANT_DP4A_SPLIT=0; fi
    echo "== r$r split $s" >> $o/qmatmul.txt
    env $E $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
  done
done
for r in 1 2 3; do
  for w in q8 q4; do
    for s in off on; do
      if [ $s = on ]; then E=X=1; else E=WGT_QUANT_DP4A_SPLIT=0; fi
      echo "r$r $s $w: $(env $E $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 8 \
        2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
cat $o/tests.txt; cut -c1-100 $o/qmatmul.txt
