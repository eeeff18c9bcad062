#!/usr/bin/env bash
# Instructions per packet under callgrind: two runs that differ only in
# --packets, the difference of their totals divided by the packets between
# them (setup and warm-up cancel). Usage:
#   cg.sh BIN OUT ovs|est [TOGGLE]   (est: established TCP, 1,000 connections)
# With TOGGLE (a callgrind --toggle-collect pattern, e.g. '*Tracker::process*')
# only that function's instructions (inclusive) count.
# Prints total instructions/packet, then the top inclusive functions' per packet.
set -euo pipefail
bin=$1 out=$2 what=$3 toggle=${4:-}
tg=(); [[ -n $toggle ]] && tg=(--toggle-collect="$toggle")
mkdir -p "$out"
case $what in
  ovs) args=(--only ovs-equivalent); p1=32000; p2=320000; mult=60 ;;      # a warm-up run and 5 timed
  est) args=(--only established --conns 1000); p1=300000; p2=1200000; mult=51 ;;  # x 5.1: 5 reps + total/10 warm-up
  *) echo "ovs|est" >&2; exit 2 ;;
esac
for p in $p1 $p2; do
  valgrind --tool=callgrind --simd-bits=256 "${tg[@]}" --callgrind-out-file="$out/$what-$p.out" \
    "$bin" "${args[@]}" --packets "$p" > "$out/$what-$p.log" 2>&1 || \
  valgrind --tool=callgrind "${tg[@]}" --callgrind-out-file="$out/$what-$p.out" \
    "$bin" "${args[@]}" --packets "$p" > "$out/$what-$p.log" 2>&1
done
python3 - "$out/$what-$p1.out" "$out/$what-$p2.out" "$(( (p2 - p1) * mult / 10 ))" <<'PY'
import subprocess, sys, re
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def incl(f):
    o = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f], capture_output=True, text=True).stdout
    d = {}; tot = None
    for line in o.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(.*?\)\s+(.*)", line)
        if m and tot is None and "PROGRAM TOTALS" in line: tot = int(m.group(1).replace(",", ""))
        elif m: d[m.group(2)] = d.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        m2 = re.match(r"\s*([\d,]+)\s+.*PROGRAM TOTALS", line)
        if m2: tot = int(m2.group(1).replace(",", ""))
    return tot, d
ta, da = incl(a); tb, db = incl(b)
print(f"packets between the runs: {n}; total instructions/packet: {(tb - ta) / n:.1f}")
rows = sorted(((db[k] - da.get(k, 0)) / n, k) for k in db)
for v, k in reversed(rows[-25:]):
    if v > 1: print(f"{v:8.1f}  {k[:150]}")
PY
