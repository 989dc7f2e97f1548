#!/usr/bin/env python3
"""GPU time per op name in a WGT_PROFILE_TRACE file: all events, or (--last-burst N) the last burst of at least N
events, bursts being runs of events less than 2 ms of GPU idle apart. Where a prefill's time goes:
    WGT_PROFILE_TRACE=/tmp/t.json wgt generate --bench --shape llama-3.2-1b --weights q4 --max-tokens 1 --sequential
    python3 bench/trace_by_op.py /tmp/t.json --last-burst 150     # the timed prefill (decode steps are ~90)"""
import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ev.sort(key=lambda e: e["ts"])
if len(sys.argv) > 3 and sys.argv[2] == "--last-burst":
    bursts, cur = [], []
    for e in ev:
        if cur and e["ts"] - (cur[-1]["ts"] + cur[-1]["dur"]) > 2000:
            bursts.append(cur)
            cur = []
        cur.append(e)
    bursts.append(cur)
    ev = [b for b in bursts if len(b) >= int(sys.argv[3])][-1]
    print(f"burst of {len(ev)} events spanning {(ev[-1]['ts'] + ev[-1]['dur'] - ev[0]['ts']) / 1000:.3f} ms")
tot, calls = collections.Counter(), collections.Counter()
for e in ev:
    tot[e["name"]] += e["dur"]
    calls[e["name"]] += 1
for k, us in tot.most_common(20):
    print(f"{k:<40} {calls[k]:6d} calls {us / calls[k]:9.2f} us/call {us / 1000:9.3f} ms")
print(f"{sum(calls.values())} dispatches, {sum(tot.values()) / 1000:.3f} ms of GPU time in all")
