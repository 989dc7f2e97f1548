#!/usr/bin/env bash
# Which convolution tiles win on this GPU, per ResNet layer (issue 13): the
# forward + backward of `wgt bench --only conv_fb` with the cost model's own
# choice and with each tile forced (WGT_CONV_TILE, WGT_CONV_BK), and with other
# split-K targets; then a table of ms per layer and setting, best marked.
# The data to calibrate the tile speeds in src/webgpu/webgpu_conv.c.
#   bench/conv_probe.sh OUTDIR
set -u
out="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
W="$root/build/bin/wgt"
mkdir -p "$out"
run() { # name, env...
  local name="$1"; shift
  env "$@" "$W" bench --only conv_fb --json "$out/$name.json" > "$out/$name.txt" 2>&1
}
run default
WGT_CONV_DEBUG=1 "$W" bench --only conv_fb --reps 1 > "$out/plans.txt" 2>&1
for t in 64 64x128 128x64 128; do
  for bk in 8 16; do run "tile${t}_bk$bk" WGT_CONV_TILE=$t WGT_CONV_BK=$bk; done
done
for target in 256 1024 2048; do run "split$target" WGT_CONV_SPLIT_TARGET=$target; done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
runs = sorted(f[:-5] for f in os.listdir(out) if f.endswith(".json"))
ms = {r: {c["case"]: c["ms"] for c in json.load(open(os.path.join(out, r + ".json")))["cases"]} for r in runs}
cases = list(ms["default"])
print("| setting | " + " | ".join(c.replace("conv_fb_", "") for c in cases) + " |")
print("|---|" + "---:|" * len(cases))
best = {c: min(ms[r][c] for r in runs if c in ms[r]) for c in cases}
for r in ["default"] + [r for r in runs if r != "default"]:
    cells = [f"{ms[r][c]:.3f}" + (" *" if ms[r][c] == best[c] else "") if c in ms[r] else "-" for c in cases]
    print(f"| {r} | " + " | ".join(cells) + " |")
PY
