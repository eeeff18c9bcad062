#!/usr/bin/env bash
# Paired A/B with --cpu-time (this thread's CPU time; OVS's own figure stays
# its wall clock, so ratio_vs_ovs is not comparable to ab.sh's): alternating
# binaries and their order. Usage: ab-cpu.sh BASE NEW OUTDIR [PAIRS]
set -euo pipefail
base=$1 new=$2 out=$3 pairs=${4:-5}
ovs=$(scripts/ovs-ct-baseline)
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for who in $order; do
    bin=$base; [[ $who == new ]] && bin=$new
    "$bin" --json --cpu-time --only ovs-equivalent --ovstest "$ovs" >> "$out/$who-$i.json"
    "$bin" --json --cpu-time --only established --conns 1000000 >> "$out/$who-$i.json"
  done
done
