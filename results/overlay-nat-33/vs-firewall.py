#!/usr/bin/python3
"""overlay_nat's vs_firewall (paired inside each run) per pair of a
results/stages-30/ab.sh run: vs-firewall.py OUTDIR (the Mpps ratios:
results/stages-30/summary.py OUTDIR)."""
import json, sys, glob, statistics, os
d = sys.argv[1]
def vf(side, i):
    for line in open(os.path.join(d, f"{side}{i}.json")):
        if line.startswith("{") and json.loads(line)["bench"] == "overlay_nat":
            return json.loads(line)["vs_firewall"]
pairs = sorted(int(os.path.basename(p)[4:-5]) for p in glob.glob(os.path.join(d, "base*.json")))
v = [(vf("base", i), vf("new", i)) for i in pairs]
r = [n / b for b, n in v]
print("vs_firewall per pair (base/new):", " ".join(f"{b:.3f}/{n:.3f}" for b, n in v))
print(f"vs_firewall base {statistics.median([b for b, _ in v]):.3f} new {statistics.median([n for _, n in v]):.3f}"
      f"  new/base {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}] ({len(r)} pairs)")
