#!/usr/bin/env bash
# Thirteenth session, second H200 call (the working tree of this script's commit):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29m/p2.sh
# p1 found the first INT8_X slower in decode (its prologue: one invocation a group). Now four a group.
# Decode GEMVs with int8 x (MEDIUM precision, quant_gemv_rows' INT8_X: x's codes in workgroup memory, dot4I8Packed)
# against the f32 path they replace (WGT_LLAMA_PRECISION=highest: the decode GEMVs as before; its prefill too).
# 1. GPU tests of the change.
# 2. wgt bench, the decode products alone: gemv_q4_* / gemv_q8_* at --precision medium against highest.
# 3. wgt generate --bench, Llama-3.2-1B shape, 512-token prompt, 128 decoded tokens, q4 and q8, three alternated
#    rounds; f16 once (unchanged by this).
# 4. per-dispatch GPU times of q4 decode either way (bench/decode_kernels.py).
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
for t in test_quant_int8 test_llama test_attention_linear; do
  timeout 240 build-bench/bin/$t > $o/$t.log 2>&1
  echo "$t: rc $? $(tail -1 $o/$t.log) $(grep -E 'FAIL' $o/$t.log | head -5)"
done 2>&1 | tee $o/tests.txt
for p in highest medium highest medium; do
  echo "== precision $p" | tee -a $o/gemv.txt
  $W bench --only gemv_q --precision $p 2>&1 | tee -a $o/gemv.txt
done
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
    g int8 WGT_X=1 -- $w 512
    g f32x WGT_LLAMA_PRECISION=highest -- $w 512
  done
done
g default WGT_X=1 -- f16 512
g int8_kv8 WGT_X=1 -- q4 512 --kv-cache q8
g f32x_kv8 WGT_LLAMA_PRECISION=highest -- q4 512 --kv-cache q8
for p in medium highest; do
  echo "== profile q4 512 precision $p" | tee -a $o/profile.txt
  WGT_LLAMA_PRECISION=$p WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights q4 \
    --prompt-tokens 512 --max-tokens 32 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 20 | tee -a $o/profile.txt
done
