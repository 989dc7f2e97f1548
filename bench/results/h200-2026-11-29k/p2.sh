#!/usr/bin/env bash
# Eleventh session, probe 2 (H200): the decode GEMVs' shapes of parallelism, cold in the chain. For each
# config (env knobs; WGT_PROBE_GEMV_QUADS and WGT_GEMV_PREFETCH=all from p2.patch, uncommitted), Llama-3.2-1B
# decode tokens/s (plain run) and each decode product's GPU time (WGT_PROFILE_TRACE, bench/decode_kernels.py;
# every dispatch in its own timed pass, so ~4 us each is the pass's).
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29k/p2.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
run() {  # weights, env...
  local w=$1; shift
  echo "== $w ${*:-base}: $(env "$@" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
      --max-tokens 128 2>&1 | grep -E 'prefill' | sed 's/.*decode/decode/')" | tee -a $o/sweep.txt
  env "$@" WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
      --max-tokens 64 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 3000 | tee -a $o/sweep.txt
}
run f16 WGT_X=0
run f16 WGT_GEMV_PREFETCH=all
run f16 WGT_PROBE_GEMV_QUADS=32
run f16 WGT_PROBE_GEMV_QUADS=16
run f16 WGT_GEMV_PREFETCH=all WGT_PROBE_GEMV_QUADS=32
run f16 WGT_GEMV_RPT=1
run f16 WGT_GEMV_RPT=1 WGT_PROBE_GEMV_QUADS=32
run q4 WGT_X=0
run q4 WGT_QUANT_GEMV_ROWS=16,4
run q4 WGT_QUANT_GEMV_ROWS=32,4
run q4 WGT_QUANT_GEMV_ROWS=64,2
run q4 WGT_QUANT_GEMV_ROWS=64,4
run q4 WGT_QUANT_GEMV_ROWS=128,2
run q4 WGT_QUANT_GEMV_ROWS=words
run q4 WGT_X=0
run f16 WGT_X=0
