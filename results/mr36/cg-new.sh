#!/usr/bin/env bash
# Instructions and simulated cache misses per new connection under callgrind:
# newconns (results/mr36/newconns.cc) run for 2 and 6 fills, counting only
# inside Tracker::lookup/process/process_found (not the flush between
# fills); the difference divided by 4 x 131,072 SYNs. D1 48 KiB and LL
# 2 MiB: this host's L1d and L2 (its 480 MiB L3 would hold everything).
#   cg-new.sh BIN OUTDIR      (then: cg-new.sh --sum OUTDIR  to print again)
set -euo pipefail
if [[ $1 != --sum ]]; then
  bin=$1 out=$2
  mkdir -p "$out"
  for r in 2 6; do
    valgrind --tool=callgrind --cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 \
      --toggle-collect='ctrack::Tracker::lookup*' --toggle-collect='ctrack::Tracker::process*' \
      --callgrind-out-file="$out/nc-$r.out" "$bin" $r > "$out/nc-$r.log" 2>&1
  done
else
  out=$2
fi
python3 - "$out/nc-2.out" "$out/nc-6.out" <<'PY'
import sys, subprocess, re
ev = ["Ir", "D1mr", "D1mw", "DLmr", "DLmw"]
def ann(f):
    o = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--show=" + ",".join(ev), f],
                       capture_output=True, text=True).stdout
    d = {}
    for line in o.splitlines():
        m = re.match(r"\s*((?:[\d,]+|\.)(?:\s+\([^)]*\))?\s+){5}(.*)", line)
        if not m: continue
        nums = re.findall(r"([\d,]+|\.)(?:\s+\([^)]*\))?\s+", line[:m.start(2)])
        v = [0 if x == "." else int(x.replace(",", "")) for x in nums]
        d[m.group(2).strip()] = v
    return d
a, b = ann(sys.argv[1]), ann(sys.argv[2])
n = 4 * 131072
def row(k):
    va, vb = a.get(k, [0] * 5), b[k]
    return [(y - x) / n for x, y in zip(va, vb)]
tk = [k for k in b if "PROGRAM TOTALS" in k][0]
print("per SYN            " + "  ".join(f"{e:>7}" for e in ev))
print("total              " + "  ".join(f"{x:7.2f}" for x in row(tk)))
# A function's inclusive cost: its largest entry (callgrind_annotate lists
# one per source file its inlined code came from).
best = {}
for k in b:
    if k == tk or ":" not in k: continue
    name = re.sub(r"\(.*", "", k.split(":", 1)[1]).strip()
    r = row(k)
    if name.startswith("ctrack::") and (name not in best or r[0] > best[name][0]): best[name] = r
for name, r in sorted(best.items(), key=lambda x: -x[1][0])[:16]:
    if r[0] > 0.5: print(f"  {'  '.join(f'{x:7.2f}' for x in r)}  {name[:90]}")
PY
