#!/usr/bin/env bash
# New connections A/B/...: `dataplane-bench --json --only new --cpu-time` for
# each binary in turn, ROUNDS rounds, the order rotated each round.
#   ab-new.sh OUTDIR ROUNDS BIN_A BIN_B [BIN_C...]   (then ab-new.py OUTDIR)
set -euo pipefail
out=$1 rounds=$2; shift 2
bins=("$@"); nb=${#bins[@]}
mkdir -p "$out"
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < nb; k++)); do
    i=$(( (r + k) % nb ))
    "${bins[$i]}" --json --only new --cpu-time 2>/dev/null | grep '"new_conns"' | sed "s/^/$r $i /" >> "$out/runs.txt"
  done
done
