#!/usr/bin/python3
"""The findings of the wire and host runs side by side, from their results.json.

testpmd-io cannot run in host mode (af_packet takes frames of at most
MTU + 18), so both columns of kernel-ct's share use the wire run's testpmd-io
of the same cell: the DPDK baseline sees wire frames in either mode.
Usage: ./side-by-side.py [WIRE_DIR HOST_DIR]  (default: wire host)
"""
import json
import statistics
import sys

wire_dir, host_dir = sys.argv[1:3] if len(sys.argv) == 3 else ("wire", "host")


def summaries(d):
    rows = json.load(open(f"{d}/results.json"))["rows"]
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        sys.exit(f"{d}: {len(bad)} rows not ok")
    out = {}
    for r in rows:
        if r["kind"] == "throughput" and r["repeat"] == "summary":
            out[(r["dut"], r["instances"], r["size_bytes"])] = r
    if not out:
        sys.exit(f"{d}: no throughput summary rows")
    return out


def largest_in_frame(d, dut):
    rows = json.load(open(f"{d}/results.json"))["rows"]
    v = [r["dut_in_frame_bytes"] for r in rows
         if r["dut"] == dut and r["kind"] == "throughput" and r["repeat"] != "summary"]
    if not v or any(x is None for x in v):
        sys.exit(f"{d}: {dut} rows without dut_in_frame_bytes")
    return max(v)


w, h = summaries(wire_dir), summaries(host_dir)
print("| cell | size (B) | kernel-ct wire Gbit/s (mean frame in, B) | kernel-ct host Gbit/s (mean frame in, B) |"
      " testpmd-io wire Gbit/s | dataplane wire Gbit/s | kernel-ct share of testpmd-io, wire | host |")
print("|---|---|---|---|---|---|---|---|")
shares = {"wire": {}, "host": {}}
for (dut, inst, size), kh in sorted(h.items(), key=lambda kv: (kv[0][1], kv[0][2])):
    if dut != "kernel-ct":
        continue
    kw, tw, dw = w[("kernel-ct", inst, size)], w[("testpmd-io", inst, size)], w[("dataplane", inst, size)]
    sw, sh = kw["throughput_gbps"] / tw["throughput_gbps"], kh["throughput_gbps"] / tw["throughput_gbps"]
    shares["wire"].setdefault(inst, []).append(sw)
    shares["host"].setdefault(inst, []).append(sh)
    print(f"| tcp x{inst} | {size} | {kw['throughput_gbps']:.3f} ({kw['dut_in_frame_bytes']:.0f}) |"
          f" {kh['throughput_gbps']:.3f} ({kh['dut_in_frame_bytes']:.0f}) | {tw['throughput_gbps']:.3f} |"
          f" {dw['throughput_gbps']:.3f} | {sw:.0%} | {sh:.0%} |")
print()
print("| cell | kernel-ct share of testpmd-io, wire: median [min..max] over sizes | host |")
print("|---|---|---|")
for inst in sorted(shares["wire"]):
    f = lambda v: f"{statistics.median(v):.0%} [{min(v):.0%}..{max(v):.0%}]"
    print(f"| tcp x{inst} | {f(shares['wire'][inst])} | {f(shares['host'][inst])} |")
print()
print("Largest mean frame a DUT's links received in a throughput row:",
      ", ".join(f"{d} {largest_in_frame(wire_dir, d):.1f} B (wire)"
                for d in ("dataplane", "ovs-dpdk", "kernel-ct", "testpmd-io")),
      f"; kernel-ct {largest_in_frame(host_dir, 'kernel-ct'):.1f} B (host)")
