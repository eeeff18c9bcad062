#!/usr/bin/env bash
# Paired A/B of established TCP at 1M connections only, --cpu-time, order
# alternated. Usage: ab-est.sh BASE NEW OUTDIR [PAIRS]. Prints new/base per pair.
set -euo pipefail
base=$1 new=$2 out=$3 pairs=${4:-6}
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for who in $order; do
    bin=$base; [[ $who == new ]] && bin=$new
    "$bin" --json --cpu-time --only established --conns 1000000 --packets 6000000 > "$out/$who-$i.json"
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, sys, statistics
out, n = sys.argv[1], int(sys.argv[2])
m = lambda w, i: json.load(open(f"{out}/{w}-{i}.json"))["mpps"]
r = [m("new", i) / m("base", i) for i in range(1, n + 1)]
print("base", [m("base", i) for i in range(1, n + 1)])
print("new ", [m("new", i) for i in range(1, n + 1)])
print("new/base per pair", [round(x, 3) for x in r], "median", round(statistics.median(r), 3))
PY
