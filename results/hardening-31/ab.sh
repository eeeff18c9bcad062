#!/usr/bin/env bash
# A/B of the hardening flags on the pipeline: dataplane-bench --json from
# two release builds (-Dbuildtype=release -Dmarch=native), one with the
# default -Dhardening=true (build/rel), one with -Dhardening=false
# (build/rel-nohard), alternating A B A B ... (the order flips every pair),
# ROUNDS rounds each. Raw JSON lines to raw/, one file per run.
#   [RAW=DIR] results/hardening-31/ab.sh [ROUNDS] [dataplane-bench args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rounds=${1:-5}; shift || true
raw="$here/${RAW:-raw}"   # RAW=DIR: another set of runs beside the first
mkdir -p "$raw"
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(hard nohard); else order=(nohard hard); fi
  for v in "${order[@]}"; do
    dir=rel; [[ $v == nohard ]] && dir=rel-nohard
    "$top/build/$dir/dataplane/dataplane-bench" --json "$@" >"$raw/r$r-$v.json"
    echo "round $r $v: $(grep -c . "$raw/r$r-$v.json") lines" >&2
  done
done
