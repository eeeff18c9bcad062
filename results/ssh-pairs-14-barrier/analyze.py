import csv, statistics, glob, os
base = __import__("os").path.dirname(__import__("os").path.abspath(__file__))
def load(d):
    out = {}
    hdr = None
    with open(f'{base}/{d}/results.csv') as f:
        r = csv.DictReader(f)
        hdr = r.fieldnames
        for row in r:
            if row['repeat'] != 'summary': continue
            k = (row['dut'], row['kind'], row['instances'])
            v = row['throughput_gbps'] if row['kind'] == 'throughput' else row['latency_p50_us']
            out[k] = (float(v) if v else None, row['status'])
    return out, hdr
allr = {}
for kind in ['throughput', 'latency']:
    pass
rounds = sorted({d.split('-')[0] for d in os.listdir(base) if d[0].isdigit() and os.path.isdir(f'{base}/{d}')})
ratios = {}; noise = {}; same = True; statuses = set()
for i in rounds:
    a, ha = load(f'{i}-netnsA'); s, hs = load(f'{i}-ssh'); b, hb = load(f'{i}-netnsB')
    same &= (ha == hs == hb)
    for k in a:
        for x in (a, s, b): statuses.add(x[k][1])
        va, vs, vb = a[k][0], s[k][0], b[k][0]
        if None in (va, vs, vb):
            print("skipped (error row in that round):", i, k); continue
        ratios.setdefault(k, []).append(vs / ((va + vb) / 2))
        noise.setdefault(k, []).append(vb / va)
print('same header in every run:', same, ' statuses:', statuses)
allrat = []; allnoise = []
for k in sorted(ratios):
    r = ratios[k]; n = noise[k]
    allrat += r; allnoise += n
    print(f'{k[0]:10s} {k[1]:10s} x{k[2]:>2s}  ssh/netns: median {statistics.median(r):.3f} [{min(r):.2f}..{max(r):.2f}]  | netnsB/netnsA: median {statistics.median(n):.3f} [{min(n):.2f}..{max(n):.2f}]')
print(f'all cells: ssh/netns median {statistics.median(allrat):.3f} [{min(allrat):.2f}..{max(allrat):.2f}] n={len(allrat)};  netnsB/netnsA median {statistics.median(allnoise):.3f} [{min(allnoise):.2f}..{max(allnoise):.2f}]')
