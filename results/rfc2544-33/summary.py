#!/usr/bin/env python3
"""summary.py RUNDIR...: per round, the dataplane's and testpmd-io's zero-loss
Mpps, their ratio, each row's limited_by (its first word and the CPU shares
it ends with), and where the trials CSV has the DUT's forwarding thread's
CPU wait for the trial that gave the rate, the rate per CPU-second of that
thread (zero-loss / (1 - wait)) and that ratio."""
import csv, sys, statistics

for run in sys.argv[1:]:
    rows = {}
    for r in csv.DictReader(open(f"{run}/rfc2544.csv")):
        if r["status"] == "ok":
            rows[(r["repeat"], r["dut"])] = r
    waits = {}
    for t in csv.DictReader(open(f"{run}/rfc2544-trials.csv")):
        w = t.get("dut_cpu_wait_pct", "")
        try:
            waits.setdefault((t["repeat"], t["dut"]), {})[t["offered_mpps"]] = float(w)
        except ValueError:
            pass
    print(f"## {run}")
    print("| round | dataplane Mpps | testpmd-io Mpps | ratio | per CPU ratio | dataplane limited_by | testpmd-io limited_by |")
    print("|---|---|---|---|---|---|---|")
    ratios, cpu_ratios = [], []
    for rnd in sorted({k[0] for k in rows}, key=int):
        d, t = rows.get((rnd, "dataplane")), rows.get((rnd, "testpmd-io"))
        if not d or not t:
            continue
        dz, tz = float(d["zero_loss_mpps"]), float(t["zero_loss_mpps"])
        ratio = dz / tz
        ratios.append(ratio)
        def per_cpu(r, z):
            w = waits.get((rnd, r["dut"]), {}).get(r["zero_loss_mpps"])
            return None if w is None else z / (1 - w / 100)
        dc, tc = per_cpu(d, dz), per_cpu(t, tz)
        cr = f"{dc / tc:.2f}" if dc and tc else "n/a"
        if dc and tc:
            cpu_ratios.append(dc / tc)
        def lb(r):
            s = r["limited_by"]
            head = s.split(":")[0]
            tail = s[s.find("; the DUT's forwarding"):] if "; the DUT's forwarding" in s else ""
            return head + (" (" + tail[2:].replace("the DUT's forwarding thread waited for a CPU", "DUT waited") + ")" if tail else "")
        print(f"| {rnd} | {dz:.3f} | {tz:.3f} | {ratio:.2f} | {cr} | {lb(d)} | {lb(t)} |")
    if ratios:
        print(f"\nratio median {statistics.median(ratios):.2f} [{min(ratios):.2f}..{max(ratios):.2f}]"
              + (f"; per CPU median {statistics.median(cpu_ratios):.2f} [{min(cpu_ratios):.2f}..{max(cpu_ratios):.2f}]" if cpu_ratios else ""))
    print()
