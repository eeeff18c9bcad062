#!/bin/sh
# perf.sh OUTDIR: where the time of the cached pipeline over timestamped
# segments goes, before (optsbase: 9129870 with the bench's --tcp-timestamps)
# and after (head: 3171521). Release builds (-Dmarch=native); the bench's
# setup (100K handshakes) is in the profile too, a few % of its samples.
set -eu
out=$1
mkdir -p "$out"
for b in optsbase head; do
  perf record -q -e cpu-clock -F 4999 -o "$out/$b.data" -- \
    "/work/ab/s11-$b-bench" --only cached --tcp-timestamps --cpu-time --packets 4000000 > "$out/$b.json"
  perf report -i "$out/$b.data" --stdio --no-children --sort symbol 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -20 > "$out/$b.txt"
  rm -f "$out/$b.data"
done
