#!/usr/bin/env python3
"""Medians and spreads per bench and side from ab.jsonl, and new/base per round."""
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1] if len(sys.argv) > 1 else "results/refactor-21/ab.jsonl")]
def key(r): return r["bench"]
def val(r): return r.get("mpps") or r.get("conns_per_s") or r.get("mlookups_per_s")
benches = sorted({key(r) for r in rows})
for b in benches:
    by = {s: {r["round"]: val(r) for r in rows if key(r) == b and r["side"] == s} for s in ("base", "new")}
    unit = "Mpps" if "mpps" in next(r for r in rows if key(r) == b) else "conns/s"
    line = f"{b:22s}"
    for s in ("base", "new"):
        v = sorted(by[s].values())
        line += f"  {s} median {statistics.median(v):.2f} [{v[0]:.2f}..{v[-1]:.2f}] {unit}"
    ratios = sorted(by["new"][k] / by["base"][k] for k in by["new"] if k in by["base"])
    line += f"  new/base per round: median {statistics.median(ratios):.3f} [{ratios[0]:.3f}..{ratios[-1]:.3f}]"
    print(line)
