#!/usr/bin/env bash
# Closing measurements of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/close.sh
# build-bench: the session's final code (5d09445; later commits are records and docs); build-base: c838ea8 (the
# last stop's tree), bin/wgt and its lib only. Issue 12: wgt generate --bench, Llama-3.2-1B shape, random weights,
# 512-token prompt, 128 decoded tokens: f16 / q8 / q4 two rounds, base and new alternated; transformers f16
# (bench/llm_torch_ref.py: eager prefill, static-cache decode); the GPU tests this session's kernels touch.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/close; mkdir -p $o
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
t0=$(date +%s)
g() {  # label wgt weights
  local label=$1 W=$2 w=$3; shift 3
  echo "$label $w: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 "$@" \
    2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in f16 q8 q4; do
    g "r$r base" build-base/bin/wgt $w
    g "r$r new" build-bench/bin/wgt $w
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
$TORCH bench/llm_torch_ref.py --json $o/torch512.json 2>&1 | tail -1 | tee $o/torch512.txt
l=/tmp/logs; mkdir -p $l
for t in test_llama test_webgpu_matmul test_quant_int8 test_parity; do
  (timeout 240 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") &
done > $o/tests.txt 2>&1
wait
tar czf $o/test_logs.tar.gz -C /tmp logs
cat $o/tests.txt
echo "total: $(( $(date +%s) - t0 )) s"
