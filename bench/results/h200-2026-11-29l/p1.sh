#!/usr/bin/env bash
# Twelfth session (2026-11-29), first H200 call, on the committed tree:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29l/p1.sh
# 1. GPU tests of this session's changes (the 8-bit cache's level 5, the GEMV norm prologue summing by subgroups
#    as the norm kernel does: test_quant's bitwise check back).
# 2. wgt generate --bench, Llama-3.2-1B shape, random weights, 128 decoded tokens:
#    a. the 8-bit KV cache at level 5 (new) against 4, q4 and f16, 512-token prompt, two alternated rounds;
#    b. level 5 against 4 over prompts of 512..8192 tokens (the combine in the o GEMV rereads every chunk's
#       partials in each workgroup: does it cost at long contexts?), f16 and q4;
#    c. f16 with WGT_NORM_SUBGROUP=0 (both the norm kernel and the GEMV prologue by workgroup trees) against the
#       default (both by subgroups), two alternated rounds.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
for t in test_quant test_llama_kv_q8 test_attention_linear test_llama test_decode_attention test_rope_linear \
         test_webgpu_matmul test_kv_q8; do
  timeout 240 build-bench/bin/$t > $o/$t.log 2>&1
  echo "$t: rc $? $(tail -1 $o/$t.log) $(grep -E 'FAIL' $o/$t.log | head -5)"
done 2>&1 | tee $o/tests.txt
echo "numpy_diff webgpu: $(timeout 200 python3 tests/numpy_diff.py --lib build-bench/lib/libwgtensor.so --backend webgpu --seeds 1-4 2>&1 | tail -2 | tr '\n' ' ')" | tee -a $o/tests.txt
g() {  # label env... -- weights prompt [extra args]
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local w=$1 n=$2; shift 2
  echo "$label $w prompt $n $*: $(env "${envs[@]}" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens $n \
    --max-tokens 128 "$@" 2>&1 | grep -E 'prefill|per decode' | tr '\n' ' ')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in q4 f16; do
    g kv8_l5 WGT_LLAMA_DECODE_FUSE=5 -- $w 512 --kv-cache q8
    g kv8_l4 WGT_LLAMA_DECODE_FUSE=4 -- $w 512 --kv-cache q8
  done
done
for n in 512 1024 2048 4096 8192; do
  for w in f16 q4; do
    g ctx_l5 WGT_LLAMA_DECODE_FUSE=5 -- $w $n
    g ctx_l4 WGT_LLAMA_DECODE_FUSE=4 -- $w $n
  done
done
for r in 1 2; do
  g norm_sg WGT_LLAMA_DECODE_FUSE=5 -- f16 512
  g norm_tree WGT_NORM_SUBGROUP=0 -- f16 512
done
