#!/bin/sh
# Alternating A/B of ctrack-bench (NAT established and new at 100K, plain
# established at 100K; --cpu-time: the host is loaded):
# ct-ab.sh BASE_BENCH NEW_BENCH OUTDIR PAIRS
set -eu
base=$1 new=$2 out=$3 n=$4
mkdir -p "$out"
i=1
while [ "$i" -le "$n" ]; do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for side in $order; do
    if [ $side = base ]; then bin=$base; else bin=$new; fi
    "$bin" --json --cpu-time --only nat --conns 100000 > "$out/$side$i.json"
    "$bin" --json --cpu-time --only established --conns 100000 >> "$out/$side$i.json"
  done
  i=$((i + 1))
done
