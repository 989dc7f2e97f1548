#!/usr/bin/env bash
# Twelfth session, third H200 call (tree 35996b5): the GEMV's subgroup norm sum from workgroup memory against
# the workgroup tree (WGT_NORM_SUBGROUP=0: the norm kernel too), f16 decode at 512 keys, four alternated rounds;
# q4 two rounds (its quantized GEMV keeps its own tree: the norm kernel alone changes); test_quant's bitwise check.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29l/p3.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
timeout 240 build-bench/bin/test_quant > $o/test_quant.log 2>&1; echo "test_quant: rc $? $(tail -1 $o/test_quant.log)"
g() {  # label env... -- weights
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  echo "$label $2: $(env "${envs[@]}" $W generate --bench --shape llama-3.2-1b --weights $2 --prompt-tokens 512 \
    --max-tokens 128 2>&1 | grep -E 'prefill' | sed 's/.*decode/decode/')" | tee -a $o/generate.txt
}
for r in 1 2 3 4; do g norm_sg WGT_X=1 -- f16; g norm_tree WGT_NORM_SUBGROUP=0 -- f16; done
for r in 1 2; do g norm_sg WGT_X=1 -- q4; g norm_tree WGT_NORM_SUBGROUP=0 -- q4; done
