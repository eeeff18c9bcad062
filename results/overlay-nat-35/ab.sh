#!/bin/sh
# ab.sh BASE_BENCH NEW_BENCH OUTDIR PAIRS (used by results/overlay-nat-35/README.md)
# ab.sh A B OUT PAIRS: alternating, --cpu-time, --packets 1000000
a=$1 b=$2 o=$3 n=$4
for i in $(seq 1 $n); do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for s in $order; do
    if [ $s = base ]; then bin=$a; else bin=$b; fi
    "$bin" --json --overlay-nat --cpu-time --packets 1000000 > "$o/$s$i.json" 2>&1
  done
done
