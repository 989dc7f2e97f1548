#!/usr/bin/env bash
# Eleventh session, probe 3 (H200): an L2 prefetch rider on the decode attention's first pass (p3.patch,
# uncommitted: extra workgroups of attention_decode read a weight while the attention's 72 workgroups run,
# HBM otherwise idle): pf_o reads the o projection's weight, pf_gu the gate/up weight's first
# WGT_PROBE_PF_MB MiB (all of it without). Decode tokens/s alternated with the plain run, two rounds.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29k/p3.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
g() { echo "$*: $(env "$@" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep prefill | sed 's/.*decode/decode/')" | tee -a $o/pf.txt; }
for w in f16 q4; do
  for r in 1 2; do
    g W=$w WGT_PROBE=
    g W=$w WGT_PROBE=pf_o
    g W=$w WGT_PROBE=pf_gu WGT_PROBE_PF_MB=16
    g W=$w WGT_PROBE=
    g W=$w WGT_PROBE=pf_gu WGT_PROBE_PF_MB=32
    g W=$w WGT_PROBE=pf_gu
  done
done
WGT_PROBE=pf_gu timeout 200 build-bench/bin/test_llama 2>&1 | tail -1
