#!/usr/bin/env python3
"""Medians, spreads and adjacent-pair ratios of the A/B in raw/ (ab.sh).
   summary.py [DIR]   (default raw)"""
import json, glob, os, re, sys, statistics as st
here = os.path.dirname(os.path.abspath(__file__))
rawdir = os.path.join(here, sys.argv[1] if len(sys.argv) > 1 else 'raw')
runs = {}  # (round, variant) -> {bench: mpps}
for f in glob.glob(os.path.join(rawdir, 'r*-*.json')):
    m = re.match(r'r(\d+)-(hard|nohard)\.json$', os.path.basename(f))
    rows = {}
    for line in open(f):
        line = line.strip()
        if line.startswith('{'):
            d = json.loads(line)
            rows[d['bench']] = d['mpps']
    if not rows:
        raise SystemExit(f'{f}: no JSON rows')
    runs[(int(m.group(1)), m.group(2))] = rows
rounds = sorted({r for r, _ in runs})
benches = sorted({b for v in runs.values() for b in v})
print(f'{len(rounds)} rounds; Mpps medians [min..max]; ratio = hardened/unhardened of the same round (adjacent runs)')
print(f'| bench | hardened Mpps | unhardened Mpps | median ratio | ratios min..max | cost |')
print('|---|---|---|---|---|---|')
for b in benches:
    h = [runs[(r, 'hard')][b] for r in rounds if (r, 'hard') in runs]
    n = [runs[(r, 'nohard')][b] for r in rounds if (r, 'nohard') in runs]
    ratios = [runs[(r, 'hard')][b] / runs[(r, 'nohard')][b] for r in rounds if (r, 'hard') in runs and (r, 'nohard') in runs]
    mr = st.median(ratios)
    print(f'| {b} | {st.median(h):.2f} [{min(h):.2f}..{max(h):.2f}] | {st.median(n):.2f} [{min(n):.2f}..{max(n):.2f}] '
          f'| {mr:.3f} | {min(ratios):.3f}..{max(ratios):.3f} | {(1 - mr) * 100:+.1f} % |')

# The median ratio's 95 % confidence interval from the order statistics
# (sign-test / binomial: no assumption about the noise's shape).
from math import comb
for b in benches:
    r = sorted(runs[(k, 'hard')][b] / runs[(k, 'nohard')][b] for k in rounds if (k, 'hard') in runs and (k, 'nohard') in runs)
    n = len(r)
    lo = 0
    while lo + 1 < n and sum(comb(n, i) for i in range(lo + 2)) / 2 ** n <= 0.025:
        lo += 1
    if sum(comb(n, i) for i in range(lo + 1)) / 2 ** n > 0.025:
        print(f'{b}: {n} pairs, too few for a 95 % interval of the median ratio')
        continue
    slower = sum(1 for x in r if x < 1)
    print(f'{b}: {n} pairs, median ratio 95 % interval {r[lo]:.3f}..{r[n - 1 - lo]:.3f}; hardened slower in {slower} of {n} pairs; ratios ' +
          ' '.join(f'{x:.3f}' for x in r))
