#!/usr/bin/python3
"""An abn.sh run: abn-summary.py OUTDIR BASE NAME... Per round, each NAME's
ratio to BASE (Mpps of pipeline, overlay_nat, new_conns; and overlay_nat's
vs_firewall, paired inside each run) and to the NAME before it; medians and
[min..max] over rounds."""
import json, sys, glob, statistics, os
d, names = sys.argv[1], sys.argv[2:]
def load(n, r):
    rows = {}
    for line in open(os.path.join(d, f"{n}-{r}.json")):
        if line.startswith("{"):
            x = json.loads(line); rows[x["bench"]] = x
    return rows
rounds = sorted(int(p.rsplit("-", 1)[1][:-5]) for p in glob.glob(os.path.join(d, f"{names[0]}-*.json")))
rounds = [r for r in rounds if all(os.path.exists(os.path.join(d, f"{n}-{r}.json")) for n in names)]
def med(v): return f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]"
print(f"{len(rounds)} rounds")
for n in names:
    vf = [load(n, r)["overlay_nat"]["vs_firewall"] for r in rounds]
    print(f"{n:6} vs_firewall {med(vf)}  overlay_nat {statistics.median([load(n, r)['overlay_nat']['mpps'] for r in rounds]):.2f} Mpps")
for a, b in [(names[0], n) for n in names[1:]] + list(zip(names[1:-1], names[2:])):
    line = f"{b}/{a}:"
    for bench in ["pipeline", "overlay_nat", "new_conns"]:
        line += f" {bench} " + med([load(b, r)[bench]["mpps"] / load(a, r)[bench]["mpps"] for r in rounds])
    line += " vs_firewall " + med([load(b, r)["overlay_nat"]["vs_firewall"] / load(a, r)["overlay_nat"]["vs_firewall"] for r in rounds])
    print(line)
