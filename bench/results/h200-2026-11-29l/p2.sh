#!/usr/bin/env bash
# Twelfth session, second H200 call (tree 3a35c04 + this script):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29l/p2.sh
# 1. GPU tests of the changes since p1 (the fold's key bound, the unrolled subgroup norm sum, the split combine).
# 2. wgt generate --bench, Llama-3.2-1B shape, random weights, 128 decoded tokens:
#    a. long prompts (2112..8192 keys): the split combine (default) against WGT_DECODE_COMBINE_SPLIT=0,
#       f16 and q4, two alternated rounds at 4096 and 8192, one at 2112;
#    b. f16 at 512: the subgroup norm prologue (default) against WGT_NORM_SUBGROUP=0, three rounds;
#    c. the 8-bit KV cache, level 5 against 4, q4 and f16, three rounds (p1's were noisy);
#    d. per-dispatch GPU times of f16 decode at 8192 keys, split and not (WGT_PROFILE_TRACE, every
#       dispatch in its own timed pass: ~4 us each is the pass's; bench/decode_kernels.py).
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
for t in test_decode_attention test_attention_linear test_quant test_llama_kv_q8 test_llama; do
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
for r in 1 2; do
  for n in 4096 8192; do
    for w in f16 q4; do
      g split WGT_X=1 -- $w $n
      g nosplit WGT_DECODE_COMBINE_SPLIT=0 -- $w $n
    done
  done
done
for w in f16 q4; do g split WGT_X=1 -- $w 2112; g nosplit WGT_DECODE_COMBINE_SPLIT=0 -- $w 2112; done
for r in 1 2 3; do
  g norm_sg WGT_X=1 -- f16 512
  g norm_tree WGT_NORM_SUBGROUP=0 -- f16 512
done
for r in 1 2 3; do
  for w in q4 f16; do
    g kv8_l5 WGT_LLAMA_DECODE_FUSE=5 -- $w 512 --kv-cache q8
    g kv8_l4 WGT_LLAMA_DECODE_FUSE=4 -- $w 512 --kv-cache q8
  done
done
for s in 1 0; do
  echo "== profile f16 8192 WGT_DECODE_COMBINE_SPLIT=$s" | tee -a $o/profile.txt
  WGT_DECODE_COMBINE_SPLIT=$s WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights f16 \
    --prompt-tokens 8192 --max-tokens 32 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 1300 | tee -a $o/profile.txt
done
