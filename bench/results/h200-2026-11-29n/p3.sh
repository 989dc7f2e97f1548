#!/usr/bin/env bash
# Fourteenth session, third H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p3.sh
# build-bench: tree 2e68dc4. q4 decode at 512 keys reads 968-1,191 tokens/s from one binary in one call
# (p1; the thirteenth session's close likewise), while f16 holds ~833: is it the host? A q4 token records
# in ~450 us (p2, --sequential) against ~800 us of GPU work, so a slow phase of the host (an H100 call once
# read 550 and 933 us) would bound it. Alternated: default, the process pinned to two cores (taskset),
# one submit a token (WGT_BATCH_DISPATCHES=128); each with its host recording (--sequential) after.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
lscpu | grep -E "^CPU\(s\)|Model name|Socket|NUMA node|MHz" | head -8
o=$OUT/p3; mkdir -p $o
W=build-bench/bin/wgt
t0=$(date +%s)
g() {  # label prefix... -- args
  local label=$1; shift
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done
  shift
  echo "$label: $("${pre[@]}" $W generate --bench --shape llama-3.2-1b --prompt-tokens 512 "$@" 2>&1 \
    | grep -E 'prefill|host recording' | sed 's/.*: //' | tr '\n' ' ')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  g "q4 default" env -- --weights q4 --max-tokens 128
  g "q4 taskset -c 2,3" taskset -c 2,3 -- --weights q4 --max-tokens 128
  g "q4 batch 128" env WGT_BATCH_DISPATCHES=128 -- --weights q4 --max-tokens 128
  g "q4 default host" env -- --weights q4 --max-tokens 32 --sequential
  g "q4 taskset host" taskset -c 2,3 -- --weights q4 --max-tokens 32 --sequential
done
g "f16 default" env -- --weights f16 --max-tokens 128
g "f16 taskset -c 2,3" taskset -c 2,3 -- --weights f16 --max-tokens 128
echo "total: $(( $(date +%s) - t0 )) s"
