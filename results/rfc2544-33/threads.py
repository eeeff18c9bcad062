#!/usr/bin/env python3
"""Samples the threads of the RFC 2544 programs (the DUT: dataplane or
dpdk-testpmd; harness-gen) every PERIOD seconds: per thread its CPU, and
from /proc/PID/task/TID/schedstat the time it ran and the time it waited
for a CPU (run_delay) since the last sample. Prints one line per thread
per sample: t comm/tid cpu run_ms wait_ms.

  threads.py OUT [PERIOD]   (runs until killed)
"""
import os, sys, time

NAMES = {"dataplane", "dpdk-testpmd", "harness-gen"}
out = open(sys.argv[1], "w", buffering=1)
period = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25
last = {}
t0 = time.time()
while True:
    now = time.time()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
        except OSError:
            continue
        if comm not in NAMES:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                tcomm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                st = open(f"/proc/{pid}/task/{tid}/stat").read()
                run, wait, _ = (int(x) for x in open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
            except (OSError, ValueError):
                continue
            cpu = st[st.rfind(")") + 2:].split()[36]
            key = (pid, tid)
            if key in last:
                r0, w0, tp = last[key]
                dt = now - tp
                out.write(f"{now - t0:8.2f} {comm}/{tcomm}/{tid} cpu{cpu} run {(run - r0) / 1e6:7.1f} "
                          f"wait {(wait - w0) / 1e6:7.1f} of {dt * 1e3:6.1f} ms\n")
            last[key] = (run, wait, now)
    time.sleep(period)
