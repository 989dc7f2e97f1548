#!/usr/bin/env bash
# Sixth session, probe 5 (H200): where a Llama-3.2-1B decode token's time goes. GPU time per kernel of the
# decode steps (WGT_PROFILE_TRACE: each dispatch in its own timed pass, so the sum is an upper bound on the
# token's device time) for f16 and q4 weights, by bench/trace_by_kernel.py; and the decode attention alone.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p5.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p5; mkdir -p $o
for w in f16 q4; do
  WGT_PROFILE_TRACE=$o/trace_$w.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
    --max-tokens 32 --sequential 2>&1 | grep "llm " | tee -a $o/generate.txt
  python3 - $o/trace_$w.json > $o/decode_$w.txt <<'PY'
import json, sys, collections
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
# the decode steps: the events after the last prefill-sized run; keep the last 16 tokens' worth by op order
names = [e["name"] for e in ev]
n = len(ev)
tail = ev[int(n * 0.5):]   # the second half of the trace: decode steps only (the prefill and warm-up come first)
tot, cnt = collections.Counter(), collections.Counter()
for e in tail:
    tot[e["name"]] += e["dur"]; cnt[e["name"]] += 1
allus = sum(tot.values())
print(f"events {len(tail)} of {n}; sum {allus:.1f} us")
for k, v in tot.most_common(40):
    print(f"{k:<44} {v:10.1f} us {cnt[k]:6d} calls {v / cnt[k]:8.2f} us/call")
PY
  head -30 $o/decode_$w.txt
  rm -f $o/trace_$w.json
done
