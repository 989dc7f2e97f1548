#!/usr/bin/env bash
# A second closing call (close's last third ran in a slow phase of the machine: q4 with the 8-bit KV cache
# fell 994.4 -> 861.9 -> 736.9 tokens/s over its three rounds, and the next run, q4 int8 at 4096 keys, read
# 738.7 against 927.0 for highest right after):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29m/close2.sh
# q4 at 512 with the 8-bit KV cache, and q4 / q8 at 4096 and 8192 keys, int8 x against highest, two rounds,
# highest first this time; transformers at 512 for the call's ratio.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close2; mkdir -p $o
g() {  # label env... -- weights prompt [extra args]
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local w=$1 n=$2; shift 2
  echo "$label $w prompt $n $*: $(env "${envs[@]}" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens $n \
    --max-tokens 128 "$@" 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  g highest WGT_LLAMA_PRECISION=highest -- q4 512 --kv-cache q8
  g new WGT_X=1 -- q4 512 --kv-cache q8
  for n in 4096 8192; do
    for w in q4 q8; do
      g highest WGT_LLAMA_PRECISION=highest -- $w $n
      g new WGT_X=1 -- $w $n
    done
  done
done
g new WGT_X=1 -- f16 512
$TORCH bench/llm_torch_ref.py 2>&1 | tail -1 | tee $o/torch512.txt
