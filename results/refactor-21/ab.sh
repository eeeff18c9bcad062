#!/usr/bin/env bash
# Issue 21's performance bar: the code before the refactor (BASE, a release
# build of the commit the issue started at) against this tree's release build,
# alternating binaries, ROUNDS rounds each of dataplane-bench --json and
# ctrack-bench --json. Usage: results/refactor-21/ab.sh BASE_BUILD_DIR [ROUNDS] > ab.jsonl
set -euo pipefail
base=$1 rounds=${2:-5}
new=$(cd "$(dirname "$0")/../.." && pwd)/build/release
for r in $(seq 1 "$rounds"); do
  for side in base new; do
    dir=$base; [[ $side == new ]] && dir=$new
    "$dir/dataplane/dataplane-bench" --json | sed "s/^{/{\"side\": \"$side\", \"round\": $r, /"
    "$dir/ctrack/bench/ctrack-bench" --json --only established --conns 1000000 | sed "s/^{/{\"side\": \"$side\", \"round\": $r, /"
    "$dir/ctrack/bench/ctrack-bench" --json --only new | sed "s/^{/{\"side\": \"$side\", \"round\": $r, /"
  done
done
