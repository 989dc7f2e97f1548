#!/usr/bin/env bash
# Closing measurements of the 2026-11-29 thirteenth session, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29m/close.sh
# issue 12: wgt generate --bench (Llama-3.2-1B shape, random weights, 128 decoded tokens):
#  - 512-token prompt: f16 / q8 / q4 and q4 with the 8-bit KV cache, three rounds, with the quantized ones
#    alternated against WGT_LLAMA_PRECISION=highest (decode's f32 x, the path before this session; its
#    prefill is the f32-sum one);
#  - 4096 and 8192-token prompts, q4 and q8, int8 x against highest, one round;
#  - transformers f16 (bench/llm_torch_ref.py: eager prefill, static-cache decode) at 512.
# Then the GPU tests this session touched.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close; mkdir -p $o
g() {  # label env... -- weights prompt [extra args]
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local w=$1 n=$2; shift 2
  echo "$label $w prompt $n $*: $(env "${envs[@]}" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens $n \
    --max-tokens 128 --json $o/wgt_${label}_${w}_$n.json "$@" 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" \
    | tee -a $o/generate.txt
}
for r in 1 2 3; do
  g new WGT_X=1 -- f16 512
  for w in q8 q4; do
    g new WGT_X=1 -- $w 512
    g highest WGT_LLAMA_PRECISION=highest -- $w 512
  done
  g new WGT_X=1 -- q4 512 --kv-cache q8
done
for n in 4096 8192; do
  for w in q4 q8; do
    g new WGT_X=1 -- $w $n
    g highest WGT_LLAMA_PRECISION=highest -- $w $n
  done
done
$TORCH bench/llm_torch_ref.py --json $o/torch512.json 2>&1 | tail -1 | tee $o/torch512.txt
for t in test_quant_int8 test_attention_linear test_decode_attention test_llama test_llama_kv_q8 test_parity; do
  timeout 240 build-bench/bin/$t > $o/$t.log 2>&1
  echo "$t: rc $? $(tail -1 $o/$t.log) $(grep -E 'FAIL' $o/$t.log | head -5)"
done 2>&1 | tee $o/tests.txt
