#!/usr/bin/env bash
# Eleventh session, probe 1 (H200): the marginal cost in the decode chain of each decode dispatch, cold and hot.
# With p1.patch applied (an uncommitted WGT_PROBE knob): skip_X leaves a layer's X out (wrong values, same
# chain otherwise), dup_X records it twice (the second reads its weights right after the first: from L2
# where they fit). Token time differences against the plain run, alternated, two rounds.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29k/p1.sh
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
$W bench --only copy_f32 2>&1 | tail -3 | tee $o/copy.txt
for w in f16 q4; do
  for r in 1 2; do
    for p in base skip_combine base skip_attn dup_attn base dup_o skip_o base dup_down skip_down base dup_gu dup_qkv; do
      v=$p; [ $p = base ] && v=
      echo "$w r$r $p: $(WGT_PROBE=$v $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
        --max-tokens 128 2>&1 | grep -E 'prefill|per decode' | tr '\n' ' ')" | tee -a $o/probe.txt
    done
  done
done
