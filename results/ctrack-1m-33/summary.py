#!/usr/bin/env python3
"""Paired medians and spreads from ab.sh's output: summary.py DIR"""
import json, statistics, sys, glob, os

d = sys.argv[1]
def load(who, i):
    out = {}
    for line in open(os.path.join(d, f"{who}-{i}.json")):
        j = json.loads(line)
        out[j["bench"]] = j
    return out

pairs = sorted(int(f.split("-")[-1].split(".")[0]) for f in glob.glob(os.path.join(d, "new-*.json")))
rows = [("ovs-equivalent", "mpps"), ("ovs-equivalent", "ratio_vs_ovs"), ("established", "mpps"),
        ("established", "bytes_per_conn"), ("new-nat", "mpps"), ("established-nat", "mpps"), ("established-nat", "bytes_per_conn")]
def fmt(v):
    return f"{statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]"
print(f"{len(pairs)} pairs\n")
print("| bench | field | base median [range] | new median [range] | new/base paired median [range] |")
print("|---|---|---|---|---|")
for bench, field in rows:
    b, n, r = [], [], []
    for i in pairs:
        x, y = load("base", i), load("new", i)
        if bench in x and bench in y and field in x[bench] and field in y[bench]:
            b.append(x[bench][field]); n.append(y[bench][field]); r.append(y[bench][field] / x[bench][field])
    if len(b) != len(pairs):
        print(f"| {bench} | {field} | missing in {len(pairs) - len(b)} of {len(pairs)} pairs | | |")
    if b:
        print(f"| {bench} | {field} | {fmt(b)} | {fmt(n)} | {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}] |")
