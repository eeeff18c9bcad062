#!/usr/bin/python3
"""Issue 33's dataplane-bench bars from an ab.sh run: summary.py OUTDIR.
Per side: each bench's Mpps, pipeline / parse-only and overlay_nat /
firewall of the same run, median [min..max]; new/base paired per pair; and
the floors' ratios (floor, floor_nat, floor_overlay and overlay_bound) of
the binaries that print them."""
import glob, json, os, statistics, sys
d = sys.argv[1]
def load(side, i):
    rows = {}
    for line in open(os.path.join(d, f"{side}{i}.json")):
        if line.startswith("{"):
            r = json.loads(line); rows[r["bench"]] = r
    for want in ("pipeline", "pipeline_uncached", "new_conns", "overlay_nat"):
        if want not in rows: sys.exit(f"{side}{i}.json: no '{want}' line")
    return rows
def med(v): return f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]"
pairs = sorted(int(os.path.basename(p)[4:-5]) for p in glob.glob(os.path.join(d, "base*.json")))
if not pairs: sys.exit("no base*.json in " + d)
runs = {s: [load(s, i) for i in pairs] for s in ("base", "new")}
for bench in ("pipeline", "pipeline_uncached", "new_conns", "overlay_nat"):
    b = [r[bench]["mpps"] for r in runs["base"]]; n = [r[bench]["mpps"] for r in runs["new"]]
    print(f"{bench:18} base {med(b)}  new {med(n)} Mpps  new/base {med([y / x for x, y in zip(b, n)])}")
for s in ("base", "new"):
    p = [r["pipeline"]["mpps"] / r["pipeline"]["parse_only_mpps"] for r in runs[s]]
    v = [r["overlay_nat"]["vs_firewall"] for r in runs[s]]
    print(f"{s}: pipeline / parse-only {med(p)}   overlay_nat / firewall {med(v)}   ({len(p)} runs)")
# The floor (dataplane-bench since 4311ca7; older binaries print none): its
# rate over parse alone's, and the cached pipeline's over its, per run.
for s in ("base", "new"):
    if not all("floor" in r for r in runs[s]): continue
    bad = [r["floor"]["not_established"] for r in runs[s]]
    if any(bad): sys.exit(f"{s}: the floor's packets not established {bad}: it measured something else")
    f = [r["floor"]["vs_parse"] for r in runs[s]]; p = [r["floor"]["pipeline_vs_floor"] for r in runs[s]]
    print(f"{s}: floor / parse-only {med(f)}   pipeline / floor {med(p)}   ({len(f)} runs)")
    if all("floor_nat" in r for r in runs[s]):
        fn = [r["floor_nat"]["vs_floor"] for r in runs[s]]; o = [r["floor_nat"]["overlay_vs_floor_nat"] for r in runs[s]]
        print(f"{s}: floor_nat / floor {med(fn)}   overlay_nat / floor_nat {med(o)}")
    # floor_overlay (dataplane-bench since session 16): the floor with NAT and
    # the overlay's own work through the daemon's helpers, no bookkeeping;
    # overlay_bound: overlay_nat / firewall at the floors' costs (an upper
    # bound only while floor_overlay's own work costs no more than the
    # pipeline's: dataplane_bench.cc's top comment).
    if all("floor_overlay" in r for r in runs[s]):
        fo = [r["floor_overlay"] for r in runs[s]]
        print(f"{s}: floor_overlay / floor_nat {med([x['vs_floor_nat'] for x in fo])}   "
              f"overlay_nat / floor_overlay {med([x['overlay_vs_floor_overlay'] for x in fo])}   "
              f"overlay_nat / firewall at the floors' costs {med([x['overlay_bound'] for x in fo])}")
