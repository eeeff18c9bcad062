#!/bin/sh
# Instructions per packet by function: callgrind, two runs differing only in
# --packets, per mode (--only overlay, --only cached).
#   sh results/overlay-nat-33b/cg.sh BENCH OUTDIR
set -e
B=$1; O=$2; mkdir -p "$O"
for mode in cached overlay; do
  for P in 100000 400000; do
    valgrind --tool=callgrind --callgrind-out-file="$O/cg-$mode-$P.out" \
      "$B" --only $mode --packets $P --conns 100000 --simd-bits 256 > "$O/cg-$mode-$P.log" 2>&1 &
  done
  wait
done
