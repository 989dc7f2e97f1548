#!/usr/bin/env bash
# Closing measurements of the 2026-11-29 twelfth session, one call on the lent H200 (close1: the same before
# the bench warmed its decode at the timed keys):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29l/close.sh
# issue 12: wgt generate --bench (Llama-3.2-1B shape, random weights, 128 decoded tokens):
#  - 512-token prompt: f16 / q8 / q4 and q4 with the 8-bit KV cache (now at level 5), three rounds;
#  - 4096 and 8192-token prompts, f16 and q4: this session's defaults (the fold bounded by the keys, the
#    combine a workgroup a row past 32 chunks) against the eleventh session's behaviour
#    (WGT_ATTENTION_FOLD_KEYS=1000000 WGT_DECODE_COMBINE_SPLIT=0), two alternated rounds;
#  - transformers f16 (bench/llm_torch_ref.py: eager prefill, static-cache decode) at 512 and 8192.
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
  for w in f16 q8 q4; do g new WGT_X=1 -- $w 512; done
  g new WGT_X=1 -- q4 512 --kv-cache q8
done
for r in 1 2; do
  for n in 4096 8192; do
    for w in f16 q4; do
      g new WGT_X=1 -- $w $n
      g old WGT_ATTENTION_FOLD_KEYS=1000000 WGT_DECODE_COMBINE_SPLIT=0 -- $w $n
    done
  done
done
$TORCH bench/llm_torch_ref.py --json $o/torch512.json 2>&1 | tail -1 | tee $o/torch512.txt
$TORCH bench/llm_torch_ref.py --prompt-tokens 8192 --json $o/torch8192.json 2>&1 | tail -1 | tee $o/torch8192.txt
