#!/usr/bin/env python3
# Per packet instructions by function (inclusive and self), overlay vs cached:
#   cg-table.py OUTDIR [PACKETS_DIFF [LARGER]]   (LARGER: the second run's --packets, 400000)
# Each mode: (count at 400000 - count at 100000) / packets between them.
import re, subprocess, sys
o = sys.argv[1]
npk = int(sys.argv[2]) if len(sys.argv) > 2 else 9 * (399360 - 98304)
big = sys.argv[3] if len(sys.argv) > 3 else '400000'

def prof(path, incl):
    args = ['callgrind_annotate', '--threshold=100', '--auto=no'] + (['--inclusive=yes'] if incl else []) + [path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[[^\]]*\])?$', line)
        if not m or 'PROGRAM TOTALS' in line:
            continue
        rest = m.group(2)
        f = re.match(r'^(.*?[^:]):(?!:)(.*)$', rest)
        name = f.group(2) if f else rest
        name = re.sub(r'\(.*$', '', name.replace('(anonymous namespace)', 'anon')).strip()
        v = int(m.group(1).replace(',', ''))
        # self: a function's lines under each file it inlines from add up;
        # inclusive: each of those lines gives the whole function's
        d[name] = max(d.get(name, 0), v) if incl else d.get(name, 0) + v
    return d

def per(mode, incl):
    a, b = prof(f'{o}/cg-{mode}-100000.out', incl), prof(f'{o}/cg-{mode}-{big}.out', incl)
    return {k: (b.get(k, 0) - a.get(k, 0)) / npk for k in set(a) | set(b)}

for incl in (False, True):
    c, v = per('cached', incl), per('overlay', incl)
    tot_c = sum(x for x in c.values()) if not incl else None
    print(('inclusive' if incl else 'self') + ' instructions per packet: overlay, firewall(cached), diff')
    keys = sorted(set(c) | set(v), key=lambda k: -abs(v.get(k, 0) - c.get(k, 0)) if not incl else -v.get(k, 0))
    if not incl:
        print(f"  {'TOTAL':60s} {sum(v.values()):8.1f} {sum(c.values()):8.1f} {sum(v.values())-sum(c.values()):+8.1f}")
    for k in keys[:24]:
        x, y = v.get(k, 0), c.get(k, 0)
        if max(abs(x), abs(y)) < 2: continue
        print(f"  {k[:60]:60s} {x:8.1f} {y:8.1f} {x-y:+8.1f}")
