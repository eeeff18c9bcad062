# floor-summary.py DIR: medians and ranges of ns a packet for the daemon's
# cached pipeline, ctrack alone and the floor (floor-ab.sh's output), and
# each one's ratio to the floor of the same round.
import json, os, statistics, sys
d = sys.argv[1]
rows = {}
for f in sorted(os.listdir(d)):
    kind, conns, rnd = f[:-5].split('-')
    txt = open(os.path.join(d, f)).read().strip().splitlines()
    j = [json.loads(l) for l in txt if l.startswith('{')]
    if not j:
        sys.exit(f"{f}: no JSON line")
    rec = j[0]
    if 'ns_per_pkt' not in rec:
        sys.exit(f"{f}: no ns_per_pkt")
    # The floor's and ctrack's runs say how many packets they did not judge
    # as hits; a run without those keys is not one of ours (the daemon's
    # pipeline runs have none: its bench reports drops on stderr).
    if kind != 'pipeline' and ('slow' not in rec or 'drops' not in rec):
        sys.exit(f"{f}: no slow/drops keys")
    if rec.get('slow', 0) or rec.get('drops', 0):
        print(f"note: {f}: slow {rec.get('slow')} drops {rec.get('drops')}")
    rows[(kind, int(conns), int(rnd))] = rec['ns_per_pkt']
for conns in (100000, 4096):
    print(f"{conns} connections: ns a packet, median [min..max]; ratio to the floor of the same round")
    for kind in ('pipeline', 'ctrack', 'floor'):
        v = [rows[k] for k in sorted(rows) if k[0] == kind and k[1] == conns]
        r = [rows[(kind, conns, n)] / rows[('floor', conns, n)] for (k, c, n) in sorted(rows) if k == kind and c == conns]
        print(f"  {kind:9s} {statistics.median(v):6.2f} [{min(v):.2f}..{max(v):.2f}]  x{statistics.median(r):.2f} [{min(r):.2f}..{max(r):.2f}]  ({len(v)} rounds)")
for kind in ('pipeline', 'ctrack', 'floor'):
    p = [rows[(kind, 100000, n)] - rows[(kind, 4096, n)] for (k, c, n) in sorted(rows) if k == kind and c == 100000]
    print(f"100K less 4K, {kind:9s}: {statistics.median(p):5.2f} ns [{min(p):.2f}..{max(p):.2f}]")
