#!/bin/sh
# Issue 33's dataplane-bench bars, alternating binaries (the order inside a
# pair alternates): ab.sh BASE_BENCH NEW_BENCH OUTDIR PAIRS
# Each run: --json --overlay-nat --cpu-time (pipeline, uncached, new
# connections, overlay+NAT, each with its same-run parse-only/firewall figure).
set -eu
base=$1 new=$2 out=$3 n=$4
mkdir -p "$out"
i=1
while [ "$i" -le "$n" ]; do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for side in $order; do
    if [ "$side" = base ]; then bin=$base; else bin=$new; fi
    nice -n -15 "$bin" --json --overlay-nat --cpu-time --packets 4000000 > "$out/$side$i.json"
  done
  i=$((i + 1))
done
