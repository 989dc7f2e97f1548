import json, sys, collections
ev = json.load(open(sys.argv[1])); ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ev = [e for e in ev if "dur" in e]
d = collections.defaultdict(list)
for e in ev: d[e["name"]].append(e["dur"])
med = lambda v: sorted(v)[len(v)//2]
out = []
for k, v in d.items():
    if len(v) < 10: continue
    out.append(f"{k} n={len(v)} med={med(v):.2f} even={med(v[0::2]):.2f} odd={med(v[1::2]):.2f}")
print(" | ".join(out))
