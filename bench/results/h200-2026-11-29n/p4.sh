#!/usr/bin/env bash
# Fourteenth session, fourth H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p4.sh
# build-bench: working tree on 2e68dc4 + matmul_gemv_half's GRID (WGT_GEMV_GROUPS=n: the f16 decode matvec
# with a norm or attention prologue launches n workgroups, each taking every n-th tile, so the prologue runs
# once a workgroup; 0, the default here: a workgroup a tile). f16 gate/up (67 MB) took 27.7 us profiled where
# the plain product streams at 2.9 TB/s and the head at 4.1: hypothesis, ~4 waves of two workgroups an SM
# each pay the norm prologue in turn.
# 1. GPU tests of the kernel with GRID forced small (3 groups).
# 2. wgt generate --bench f16 at 512: groups 0 / 132 / 264 / 528, WGT_GEMV_RPT=1, alternated, 3 rounds.
# 3. per-dispatch times (per-pass profiler) for groups 0 and the best guess 264.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
o=$OUT/p4; mkdir -p $o
W=build-bench/bin/wgt
t0=$(date +%s)
for t in test_quant test_rope_linear test_attention_linear test_llama; do
  (WGT_GEMV_GROUPS=3 timeout 200 build-bench/bin/$t > $o/$t.log 2>&1; echo "$t (groups 3): rc $? $(tail -1 $o/$t.log)") &
done > $o/tests.txt 2>&1
wait; cat $o/tests.txt
g() {  # label env...
  local label=$1; shift
  echo "$label: $(env "$@" $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 128 2>&1 \
    | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for n in 0 132 264 528; do g "f16 groups $n" WGT_GEMV_GROUPS=$n; done
  g "f16 rpt 1" WGT_GEMV_RPT=1
done
for n in 0 264; do
  echo "== profile f16 groups $n" >> $o/profile.txt
  WGT_GEMV_GROUPS=$n WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights f16 \
    --prompt-tokens 512 --max-tokens 16 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 600 >> $o/profile.txt
done
cat $o/profile.txt
echo "total: $(( $(date +%s) - t0 )) s"
