#!/usr/bin/env python3
"""The last N events of a WGT_PROFILE_TRACE file (one step of a bench case), with their sum:
    python3 bench/trace_tail.py trace.json [N]"""
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
for e in ev[-n:]:
    print(f"  {e['name']:<28} {e['dur']:9.1f} us")
print(f"  sum of last {n}: {sum(e['dur'] for e in ev[-n:]):.1f} us")
