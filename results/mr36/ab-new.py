# Summary of ab-new.sh: per binary the median new_conns Mpps [min..max],
# and per round each binary's Mpps over binary 0's (median [min..max]).
import json, sys, collections
runs = collections.defaultdict(dict)
for line in open(sys.argv[1] + "/runs.txt"):
    r, i, js = line.split(" ", 2)
    runs[int(r)][int(i)] = json.loads(js)["mpps"]
nb = max(max(v) for v in runs.values()) + 1
med = lambda v: sorted(v)[len(v) // 2]
for i in range(nb):
    v = [runs[r][i] for r in runs if i in runs[r]]
    line = f"binary {i}: {med(v):.2f} [{min(v):.2f}..{max(v):.2f}] Mpps, {len(v)} runs"
    if i:
        q = [runs[r][i] / runs[r][0] for r in runs if i in runs[r] and 0 in runs[r]]
        line += f"; / binary 0 per round: {med(q):.3f} [{min(q):.3f}..{max(q):.3f}]"
    print(line)
