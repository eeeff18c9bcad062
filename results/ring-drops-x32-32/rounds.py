#!/usr/bin/python3
"""Issue 32's 32-instance bar from results.json: per size, each round's
dataplane / testpmd-io throughput ratio (median, spread) and each DUT's
receive-ring drops (the *_rx_ring_drops keys of dut_drops_detail).
Usage: ./rounds.py [DIR]"""
import json
import re
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
rows = json.load(open(f"{d}/results.json"))["rows"]
if any(r["status"] != "ok" for r in rows):
    sys.exit("rows not ok")
t = {}
for r in rows:
    if r["kind"] != "throughput" or r["repeat"] == "summary":
        continue
    ring = re.findall(r"rx_ring_drops=(\d+)", r["dut_drops_detail"])
    if not ring and r["dut_drops_detail"] != "none":
        sys.exit(f"{r['dut']} {r['size_bytes']} B round {r['repeat']}: no ring drop counts: {r['dut_drops_detail']}")
    t[(r["size_bytes"], r["dut"], int(r["repeat"]))] = (r["throughput_gbps"], sum(map(int, ring)), r["retransmits"])
rounds = sorted({k[2] for k in t})
m = lambda v, f: f"{f(statistics.median(v))} [{f(min(v))}..{f(max(v))}]"
g = lambda x: f"{x:.3f}"
n = lambda x: f"{x:,.0f}"
print("| size (B) | dataplane / testpmd-io, per round | median [min..max] | dataplane Gbit/s | testpmd-io Gbit/s |"
      " dataplane ring drops | testpmd-io ring drops | retransmits dataplane / testpmd-io |")
print("|---|---|---|---|---|---|---|---|")
for size in sorted({k[0] for k in t}):
    dp = [t[(size, "dataplane", k)] for k in rounds]
    tp = [t[(size, "testpmd-io", k)] for k in rounds]
    ratio = [a[0] / b[0] for a, b in zip(dp, tp)]
    print(f"| {size} | {' '.join(f'{x:.2f}' for x in ratio)} | {m(ratio, g)} | {m([x[0] for x in dp], g)} |"
          f" {m([x[0] for x in tp], g)} | {m([x[1] for x in dp], n)} | {m([x[1] for x in tp], n)} |"
          f" {n(statistics.median([x[2] for x in dp]))} / {n(statistics.median([x[2] for x in tp]))} |")
