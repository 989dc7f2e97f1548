#!/usr/bin/env bash
# Thirteenth session, third H200 call (the working tree of this script's commit):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29m/p3.sh
# quant_gemv_rows' INT8_X with PRE (a lane's first words and scales loaded before the prologue: norm, x's
# quantization, the attention's merge) against WGT_QUANT_GEMV_PRE=0, and the lanes / words in flight with int8 x.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
for t in test_quant_int8 test_llama test_attention_linear test_quant; do
  timeout 240 build-bench/bin/$t > $o/$t.log 2>&1
  echo "$t: rc $? $(tail -1 $o/$t.log) $(grep -E 'FAIL' $o/$t.log | head -5)"
done 2>&1 | tee $o/tests.txt
g() {  # label env... -- weights prompt [extra args]
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local w=$1 n=$2; shift 2
  echo "$label $w prompt $n $*: $(env "${envs[@]}" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens $n \
    --max-tokens 128 "$@" 2>&1 | grep -E 'prefill' | sed 's/.*decode/decode/')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for w in q4 q8; do
    g pre WGT_X=1 -- $w 512
    g nopre WGT_QUANT_GEMV_PRE=0 -- $w 512
  done
done
for rows in 32,2 16,4 32,1 64,2; do g rows$rows WGT_QUANT_GEMV_ROWS=$rows -- q4 512; done
g pre WGT_X=1 -- q4 512
for p in 1 0; do
  echo "== profile q4 512 WGT_QUANT_GEMV_PRE=$p" | tee -a $o/profile.txt
  WGT_QUANT_GEMV_PRE=$p WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights q4 \
    --prompt-tokens 512 --max-tokens 32 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 20 | tee -a $o/profile.txt
done
