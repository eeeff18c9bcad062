#!/usr/bin/env bash
# Paired A/B: base (main at c164835) against this branch, alternating binaries
# and their order in each pair. Usage: ab.sh BASE NEW OUTDIR [PAIRS]
set -euo pipefail
base=$1 new=$2 out=$3 pairs=${4:-5}
ovs=$(scripts/ovs-ct-baseline)
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for who in $order; do
    bin=$base; [[ $who == new ]] && bin=$new
    "$bin" --json --only ovs-equivalent --ovstest "$ovs" >> "$out/$who-$i.json"
    "$bin" --json --only established --conns 1000000 >> "$out/$who-$i.json"
  done
  for who in base new; do
    bin=$base; [[ $who == new ]] && bin=$new
    "$bin" --json --only nat --conns 100000 >> "$out/$who-$i.json"
  done
done
