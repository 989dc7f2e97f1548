import json, sys, collections
# GPU time per op of the last prefill in a WGT_PROFILE_TRACE of `wgt generate --bench --max-tokens 1`
ev = json.load(open(sys.argv[1])); ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ev = [e for e in ev if "dur" in e]
idx = [i for i, e in enumerate(ev) if e["name"] == "wgt_index_select"]
last = ev[idx[-2]:idx[-1]]  # the timed prefill: before the one decode step
tot = collections.OrderedDict()
for e in last:
    t = tot.setdefault(e["name"], [0, 0.0]); t[0] += 1; t[1] += e["dur"]
s = sum(e["dur"] for e in last)
print(f"last prefill: {len(last)} dispatches, {s/1000:.2f} ms GPU")
for k, (n, d) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
    print(f"  {k:<36} {n:4d} x {d/n:8.1f} us = {d/1000:7.3f} ms")
