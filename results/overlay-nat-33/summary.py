#!/usr/bin/python3
"""Paired medians of an ab.sh run: summary.py OUTDIR (from results/stages-30, plus the vs_firewall pairs)."""
import json, sys, glob, statistics, os
d = sys.argv[1]
def load(side, i):
    rows = {}
    for line in open(os.path.join(d, f"{side}{i}.json")):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line); rows[r["bench"]] = r
    return rows
pairs = sorted(int(os.path.basename(p)[4:-5]) for p in glob.glob(os.path.join(d, "base*.json")))
if not pairs: sys.exit("no base*.json in " + d)
for bench in ["pipeline", "pipeline_uncached", "overlay_nat", "new_conns"]:
    b = [load("base", i)[bench]["mpps"] for i in pairs]
    n = [load("new", i)[bench]["mpps"] for i in pairs]
    r = [y / x for x, y in zip(b, n)]
    print(f"{bench:18} base {statistics.median(b):6.2f} new {statistics.median(n):6.2f} Mpps  new/base {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}] ({len(r)} pairs)")
for key in ["parse_only_mpps"]:
    n = [load("new", i)["pipeline"] for i in pairs]
    print("new pipeline / parse-only:", f"{statistics.median([x['mpps']/x[key] for x in n]):.3f}",
          " overlay_nat / firewall (new):", f"{statistics.median([load('new', i)['overlay_nat']['vs_firewall'] for i in pairs]):.3f}",
          " (base):", f"{statistics.median([load('base', i)['overlay_nat']['vs_firewall'] for i in pairs]):.3f}")
vf = [(load("base", i)["overlay_nat"]["vs_firewall"], load("new", i)["overlay_nat"]["vs_firewall"]) for i in pairs]
r = [n / b for b, n in vf]
print("vs_firewall per pair (base, new):", " ".join(f"{b:.3f}/{n:.3f}" for b, n in vf),
      f" new/base {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}]")
