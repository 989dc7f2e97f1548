#!/usr/bin/env bash
# Eleventh session, probe 4 (H200): p3's L2 prefetch rider again, on the final tree (level 5: the attention's
# first pass is followed by the o GEMV with the combine in it), p4.patch (uncommitted): pf_o reads the o
# projection's weight in extra workgroups of the attention's first pass, pf_gu the gate/up weight's first
# WGT_PROBE_PF_MB MiB. Decode tokens/s alternated with the plain run, three rounds.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29k/p4.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p4; mkdir -p $o
g() { echo "$*: $(env "$@" $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 | grep prefill | sed 's/.*decode/decode/')" | tee -a $o/pf.txt; }
for r in 1 2 3; do
  for w in f16 q4; do
    g W=$w WGT_PROBE=
    g W=$w WGT_PROBE=pf_o
    g W=$w WGT_PROBE=pf_gu WGT_PROBE_PF_MB=24
  done
done
