#!/bin/sh
# floor-ab.sh BENCH OUT ROUNDS: the daemon's cached pipeline, ctrack alone
# (parse lane, lookup, process_found) and the hand-written floor, in the
# same harness (BENCH = dataplane-bench with bench-floor.diff applied),
# alternating run by run, at 4,096 and 100,000 connections.
b=$1 out=$2 n=${3:-5}
mkdir -p "$out"
for r in $(seq 1 "$n"); do
  for c in 100000 4096; do
    "$b" --json --cpu-time --packets 4000000 --only cached --conns $c > "$out/pipeline-$c-$r.json"
    CT_IN_BENCH=1 FLOOR_IN_BENCH=1 "$b" --cpu-time --packets 4000000 --conns $c > "$out/ctrack-$c-$r.json"
    FLOOR_IN_BENCH=1 "$b" --cpu-time --packets 4000000 --conns $c > "$out/floor-$c-$r.json"
  done
done
