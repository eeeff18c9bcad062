#!/bin/sh
# Alternating A/B of dataplane-bench (copied from results/stages-30): ab.sh BASE_BENCH NEW_BENCH OUTDIR PAIRS
# (the order inside a pair alternates so drift does not favour one side).
set -eu
base=$1 new=$2 out=$3 n=$4
mkdir -p "$out"
i=1
while [ "$i" -le "$n" ]; do
  if [ $((i % 2)) -eq 1 ]; then first=base; else first=new; fi
  for side in $first $( [ $first = base ] && echo new || echo base ); do
    if [ $side = base ]; then bin=$base; else bin=$new; fi
    "$bin" --json --overlay-nat --packets 2000000 > "$out/$side$i.json"
  done
  i=$((i + 1))
done
