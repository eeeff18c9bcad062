#!/bin/bash
# Rounds over several dataplane-bench binaries (the order rotating each
# round, so drift favours none): abn.sh OUTDIR ROUNDS NAME=BIN...
# Each run: --json --overlay-nat --packets 2000000 into OUTDIR/NAME-ROUND.json.
set -eu
out=$1 rounds=$2
shift 2
mkdir -p "$out"
names=() bins=()
for a in "$@"; do names+=("${a%%=*}"); bins+=("${a#*=}"); done
k=${#names[@]}
for r in $(seq 1 "$rounds"); do
  for j in $(seq 0 $((k - 1))); do
    x=$(((j + r) % k))
    "${bins[$x]}" --json --overlay-nat --packets 2000000 > "$out/${names[$x]}-$r.json"
  done
done
