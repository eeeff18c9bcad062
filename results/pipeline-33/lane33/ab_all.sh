#!/bin/sh
# ab_all.sh BASE NEW PAIRS OUTDIR [args]: alternating full `--json --cpu-time`
# runs (every part: pipeline, pipeline_uncached, new_conns...), one JSON
# file per run; then per part: each pair's new/base Mpps ratio and each
# run's pipeline/parse-only ratio.
base=$1 new=$2 n=$3 out=$4; shift 4
mkdir -p "$out"
i=1
while [ $i -le $n ]; do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for side in $order; do
    if [ $side = base ]; then bin=$base; else bin=$new; fi
    nice -n -15 "$bin" --json --cpu-time --packets 2000000 "$@" > "$out/$side$i.json" 2>/dev/null
  done
  i=$((i + 1))
done
python3 - "$out" "$n" <<'PY'
import json, sys, statistics as st
out, n = sys.argv[1], int(sys.argv[2])
def load(side, i):
    return {r["bench"]: r for r in map(json.loads, open(f"{out}/{side}{i}.json"))}
parts = list(load("base", 1))
for p in parts:
    rat = [load("new", i)[p]["mpps"] / load("base", i)[p]["mpps"] for i in range(1, n + 1)]
    print("%-20s new/base %s  median %.3f" % (p, " ".join("%.3f" % r for r in rat), st.median(rat)))
    if "parse_only_mpps" in load("base", 1)[p]:
        for side in ("base", "new"):
            v = [load(side, i)[p]["mpps"] / load(side, i)[p]["parse_only_mpps"] for i in range(1, n + 1)]
            print("%-20s %s/parse %s  median %.3f" % ("", side, " ".join("%.3f" % r for r in v), st.median(v)))
PY
