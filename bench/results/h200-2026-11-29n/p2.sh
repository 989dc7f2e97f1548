#!/usr/bin/env bash
# Fourteenth session, second H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p2.sh
# build-bench: tree 2612915 (p1's kept changes, the new WGT_PROFILE_IN_PASS profiler mode);
# build-base: c712d98's lib with test_llama (binary unchanged since) beside it.
# 1. test_profiler (the in-pass mode on NVIDIA); test_llama against the base lib: does the MEDIUM
#    cached-decode check (p1: 0.0068 / 0.0093 > 2e-3 on the H200) fail without this session's changes?
# 2. where a decode token's GPU time goes, dispatch by dispatch in the real chain (WGT_PROFILE_IN_PASS=1,
#    pipelined greedy loop): q4 and f16 at the defaults, then q4 variants (quantized GEMV lanes,words 16,4
#    and 32,2; no fold of the attention combine) and f16 without the GEMV prefetch.
# 3. host recording per decode token (--sequential), q4 and f16; the dependent-dispatch floor (small_ops).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
o=$OUT/p2; mkdir -p $o
t0=$(date +%s)
timeout 120 build-bench/bin/test_profiler > $o/test_profiler.log 2>&1; echo "test_profiler rc $? $(tail -1 $o/test_profiler.log)"
timeout 200 build-base/bin/test_llama > $o/test_llama_base.log 2>&1; echo "test_llama (base lib) rc $? $(tail -1 $o/test_llama_base.log)"
grep -E "MEDIUM" $o/test_llama_base.log | head -4
W=build-bench/bin/wgt
prof() {  # label weights env...
  local label=$1 w=$2; shift 2
  echo "== $label" >> $o/profile.txt
  env "$@" WGT_PROFILE_IN_PASS=1 WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights $w \
    --prompt-tokens 512 --max-tokens 24 > /tmp/g.txt 2>&1
  grep -E "prefill" /tmp/g.txt | sed 's/.*: prefill/prefill/' >> $o/profile.txt
  python3 bench/decode_kernels.py /tmp/t.json 1000 >> $o/profile.txt
  echo "$label: $(tail -1 $o/profile.txt)"
}
prof "q4 default" q4 WGT_X=1
prof "f16 default" f16 WGT_X=1
prof "q4 lanes,words 16,4" q4 WGT_QUANT_GEMV_ROWS=16,4
prof "q4 lanes,words 32,2" q4 WGT_QUANT_GEMV_ROWS=32,2
prof "q4 no fold" q4 WGT_ATTENTION_FOLD_KEYS=0
prof "f16 no gemv prefetch" f16 WGT_GEMV_PREFETCH=0
prof "q4 default (again)" q4 WGT_X=1
echo "profiles: $(( $(date +%s) - t0 )) s"
for w in q4 f16; do
  echo "$w sequential: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 64 \
    --sequential 2>&1 | grep -E 'host recording|prefill' | sed 's/.*: //' | tr '\n' ' ')" | tee -a $o/host.txt
done
$W bench --only small_ops 2>&1 | tail -2 | tee -a $o/host.txt
echo "total: $(( $(date +%s) - t0 )) s"
