#!/usr/bin/python3
"""Paired medians of a ct-ab.sh run: ct-summary.py OUTDIR."""
import json, sys, glob, statistics, os
d = sys.argv[1]
def load(side, i):
    rows = {}
    for line in open(os.path.join(d, f"{side}{i}.json")):
        if line.startswith("{"):
            r = json.loads(line); rows[(r["bench"], r["conns"])] = r
    return rows
pairs = sorted(int(os.path.basename(p)[4:-5]) for p in glob.glob(os.path.join(d, "base*.json")))
for key in sorted(load("base", pairs[0])):
    b = [load("base", i)[key] for i in pairs]
    n = [load("new", i)[key] for i in pairs]
    r = [y["mpps"] / x["mpps"] for x, y in zip(b, n)]
    print(f"{key[0]:16} {key[1]:>8} base {statistics.median([x['mpps'] for x in b]):6.2f} new {statistics.median([x['mpps'] for x in n]):6.2f} Mpps"
          f"  new/base {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}]  bytes/conn {b[0].get('bytes_per_conn')} -> {n[0].get('bytes_per_conn')}")
