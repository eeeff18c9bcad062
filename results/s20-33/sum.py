#!/usr/bin/env python3
# sum.py OUT.txt (ablate.sh's lines "NAME-MODE ns_per_pkt"): each binary's
# firewall (cached) / overlay+NAT ratio per round, median [range], and its
# median ns a packet of each.
import statistics as st
import sys

d = {}
for n, line in enumerate(open(sys.argv[1]), 1):
    f = line.split()
    if len(f) != 2:
        sys.exit(f"sum.py: {sys.argv[1]}:{n}: not 'NAME-MODE ns': {line.strip()!r}")
    d.setdefault(f[0], []).append(float(f[1]))
names = sorted({k.rsplit("-", 1)[0] for k in d})
if not names:
    sys.exit("sum.py: no lines")
for b in names:
    fw, ov = d.get(b + "-cached"), d.get(b + "-overlay")
    if not fw or not ov or len(fw) != len(ov):
        sys.exit(f"sum.py: {b}: cached and overlay rounds do not pair")
    r = [c / o for c, o in zip(fw, ov)]
    print(f"{b}: firewall / overlay+NAT {st.median(r):.3f} [{min(r):.3f}..{max(r):.3f}]  "
          f"overlay+NAT {st.median(ov):.2f} ns, firewall {st.median(fw):.2f} ns  ({len(r)} rounds)")
