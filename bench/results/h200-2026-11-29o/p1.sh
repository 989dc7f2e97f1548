#!/usr/bin/env bash
# Probe p1 of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p1.sh
# Tree: 3753ba8 + decode fusion level 6 (the final RMSNorm in the head GEMV's prologue, WGT_LLAMA_DECODE_FUSE=6).
# 1. decode tokens/s, level 5 (default) against 6, alternated, f16 / q8 / q4, two rounds;
# 2. per-dispatch decode profile at level 6 (q4, f16);
# 3. where a 512-token prefill's GPU time goes (per op, the timed prefill's burst of a --sequential trace);
# 4. the prefill products alone (wgt bench --only qmatmul_ --precision medium);
# 5. test_llama on the NVIDIA adapter.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
o=$OUT/p1; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
g() {  # label level weights
  echo "$1 level $2 $3: $(WGT_LLAMA_DECODE_FUSE=$2 $W generate --bench --shape llama-3.2-1b --weights $3 --prompt-tokens 512 \
    --max-tokens 128 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in f16 q8 q4; do
    g r$r 5 $w
    g r$r 6 $w
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
for w in q4 f16; do
  echo "== decode profile level 6 $w" >> $o/profile.txt
  WGT_LLAMA_DECODE_FUSE=6 WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights $w \
    --prompt-tokens 512 --max-tokens 16 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 600 >> $o/profile.txt
done
for w in q4 q8 f16; do
  echo "== prefill profile $w (512 tokens)" >> $o/profile.txt
  WGT_PROFILE_TRACE=/tmp/p.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
    --max-tokens 1 --sequential 2>&1 | grep prefill >> $o/profile.txt
  python3 bench/trace_by_op.py /tmp/p.json --last-burst 150 >> $o/profile.txt
done
echo "profiles: $(( $(date +%s) - t0 )) s"
$W bench --only qmatmul_ --precision medium > $o/qmatmul.txt 2>&1
$W bench --only gemv_q4_128256 --precision medium >> $o/qmatmul.txt 2>&1
timeout 300 build-bench/bin/test_llama > /tmp/test_llama.log 2>&1; echo "test_llama: rc $? $(tail -1 /tmp/test_llama.log)" > $o/tests.txt
grep FAIL /tmp/test_llama.log | head -5 >> $o/tests.txt
cat $o/tests.txt $o/profile.txt $o/qmatmul.txt | cut -c1-160
echo "total: $(( $(date +%s) - t0 )) s"
