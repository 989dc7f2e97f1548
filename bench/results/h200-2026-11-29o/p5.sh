#!/usr/bin/env bash
# Probe p5 of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p5.sh
# Tree: 2dc67fb + attention_forward_quad split over the keys where its grid is small (WGT_ATTENTION_SPLIT: unset
# auto, 0 off, n keys a chunk) with attention_forward_combine.wgsl.
# 1. attn_prefill_f16_512: split off / auto alternated, three rounds; chunks of 64 / 256 keys;
#    the GPT training forward (not split: 1536 workgroups) off / auto;
# 2. the 512-token prefill end to end, f16 / q8 / q4, off / auto alternated, two rounds;
# 3. the attention tests with the split forced (chunks of 16 keys) and as defaults, test_llama, parity.
set -u
o=$OUT/p5; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
b() { $W bench --only $1 2>&1 | grep "^$1" | awk '{print $(NF-2), "ms", $NF, "GFLOP/s"}'; }
for r in 1 2 3; do
  for sp in 0 auto; do
    if [ $sp = auto ]; then unset WGT_ATTENTION_SPLIT; else export WGT_ATTENTION_SPLIT=$sp; fi
    echo "r$r split $sp: attn_prefill $(b attn_prefill_f16_512)" | tee -a $o/attn.txt
  done
done
for sp in 64 256; do
  echo "split $sp: attn_prefill $(WGT_ATTENTION_SPLIT=$sp b attn_prefill_f16_512)" | tee -a $o/attn.txt
done
unset WGT_ATTENTION_SPLIT
for r in 1 2; do
  echo "r$r gpt fwd split 0: $(WGT_ATTENTION_SPLIT=0 b attn_f_gpt_256_nodrop); auto: $(b attn_f_gpt_256_nodrop)" | tee -a $o/attn.txt
done
echo "bench: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for w in f16 q8 q4; do
    for sp in 0 auto; do
      if [ $sp = auto ]; then unset WGT_ATTENTION_SPLIT; else export WGT_ATTENTION_SPLIT=$sp; fi
      echo "prefill r$r split $sp $w: $($W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 8 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
unset WGT_ATTENTION_SPLIT
echo "generate: $(( $(date +%s) - t0 )) s"
l=/tmp/logs; mkdir -p $l
(WGT_ATTENTION_SPLIT=16 timeout 300 build-bench/bin/test_attention > $l/test_attention_split16.log 2>&1;
 echo "test_attention split 16: rc $? $(tail -1 $l/test_attention_split16.log)") > $o/tests.txt &
for t in test_attention test_decode_attention test_llama; do
  (timeout 300 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") &
done >> $o/tests.txt 2>&1
wait
timeout 300 build-bench/bin/test_parity > $l/test_parity.log 2>&1; echo "test_parity: rc $? $(tail -1 $l/test_parity.log)" >> $o/tests.txt
tar czf $o/test_logs.tar.gz -C /tmp logs
cat $o/tests.txt
echo "total: $(( $(date +%s) - t0 )) s"
