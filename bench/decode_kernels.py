#!/usr/bin/env python3
"""GPU time per decode dispatch kind in a WGT_PROFILE_TRACE file of `wgt generate`: the last N events (decode
steps only when N is below the decode tokens times the dispatches a token), keyed by the op's name and the
names of the two ops before it (so a layer's o, gate/up and down projections, all wgt_qlinear_ex with
quantized weights, are told apart):
    python3 bench/decode_kernels.py trace.json [N]"""
import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
tot, calls = collections.Counter(), collections.Counter()
prev = [None, None]
for e in ev[-n - 2:]:
    if prev[0] is not None:
        key = f"{e['name']} <- {prev[1]} <- {prev[0]}"
        tot[key] += e["dur"]
        calls[key] += 1
    prev = [prev[1], e["name"]]
for k, us in tot.most_common(14):
    print(f"{k:<100} {calls[k]:6d} calls {us / calls[k]:8.2f} us/call")
print(f"{sum(calls.values())} dispatches, {sum(tot.values()):.1f} us of GPU time in all")
