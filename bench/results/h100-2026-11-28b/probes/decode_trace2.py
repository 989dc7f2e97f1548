import json, sys, collections
# per-position average over decode tokens (anchored at wgt_index_select): decode_trace2.py trace.json [N_LAST]
ev = json.load(open(sys.argv[1])); ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ev = [e for e in ev if "dur" in e]
nl = int(sys.argv[2]) if len(sys.argv) > 2 else 16
idx = [i for i, e in enumerate(ev) if e["name"] == "wgt_index_select"]
toks = [ev[a:b] for a, b in zip(idx[-nl-2:-2], idx[-nl-1:-1])]
n = min(len(t) for t in toks)
busy = sum(sum(e["dur"] for e in t) for t in toks) / len(toks)
print(f"{len(toks)} tokens, {n} dispatches, busy {busy:.1f} us/token")
kinds = collections.OrderedDict()
for t in toks:
    run, prev = 0, None
    for e in t:
        run = run + 1 if e["name"] == prev else 1; prev = e["name"]
        kinds.setdefault(f"{e['name']}#{run}", []).append(e["dur"])
for k, v in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
    print(f"  {k:<40} {sum(v)/len(toks):8.1f} us/token {len(v)/len(toks):5.1f}/token {sum(v)/len(v):7.2f} us each")
