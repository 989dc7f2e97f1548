#!/usr/bin/env python3
"""GPU time per dispatch kind in a WGT_PROFILE_TRACE file: events are grouped by op name
and by their place in a run of consecutive same-named dispatches (wgt_attention_backward#2
is the second dispatch of each attention backward), summed, and divided by STEPS:
    python3 bench/trace_by_kernel.py trace.json STEPS [TOP]"""
import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
steps = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
tot, calls = collections.Counter(), collections.Counter()
prev, run = None, 0
for e in ev:
    run = run + 1 if e["name"] == prev else 1
    prev = e["name"]
    key = f"{e['name']}#{run}"
    tot[key] += e["dur"]
    calls[key] += 1
all_us = sum(tot.values())
print(f"{'dispatch':<40} {'us/step':>10} {'calls/step':>10} {'us/call':>9}")
for k, us in tot.most_common(top):
    print(f"{k:<40} {us / steps:10.1f} {calls[k] / steps:10.1f} {us / calls[k]:9.1f}")
print(f"{'all':<40} {all_us / steps:10.1f}")
