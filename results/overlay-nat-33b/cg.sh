#!/bin/sh
# Instructions per packet by function: callgrind, two runs differing only in
# --packets (100000 and LARGER, 400000 unless given), per mode (--only
# overlay, --only cached, or MODES).
#   sh results/overlay-nat-33b/cg.sh BENCH OUTDIR [LARGER [MODES]]
set -e
B=$1; O=$2; L=${3:-400000}; MODES=${4:-"cached overlay"}; mkdir -p "$O"
for mode in $MODES; do
  for P in 100000 $L; do
    valgrind --tool=callgrind --callgrind-out-file="$O/cg-$mode-$P.out" \
      "$B" --only $mode --packets $P --conns 100000 --simd-bits 256 > "$O/cg-$mode-$P.log" 2>&1 &
  done
  wait
done
