#!/usr/bin/env bash
# perf record (cpu-clock; this VM has no hardware counters) of the three
# benches the issue's bars are on; the top symbols of each into TAG-*.txt.
# Usage: results/final-33/profile.sh BUILD_DIR TAG     (a -Ddebug=true release build)
set -euo pipefail
b=$1 tag=$2 here=$(dirname "$0") data=${TMPDIR:-/tmp}/prof-$$.data
top() { perf report -i "$data" --no-children --sort symbol --stdio 2>/dev/null |
        awk '/^ +[0-9.]+%/ && n++ < 25 { $NF=""; sub(/ +-? *$/, ""); print substr($0, 1, 110) }'; }
run() { local name=$1; shift
        perf record -q -o "$data" -- nice -n -15 "$@" > "$here/$tag-$name.json"
        { echo "# perf record -- $*"; echo "# $(cat "$here/$tag-$name.json" | tr '\n' ' ' | cut -c1-300)"; top; } > "$here/$tag-$name.txt"; }
run cached  "$b/dataplane/dataplane-bench" --json --only cached --packets 4000000 --cpu-time
run overlay "$b/dataplane/dataplane-bench" --json --only overlay --packets 2000000 --cpu-time
run ctrack  "$b/ctrack/bench/ctrack-bench" --json --only established --conns 1000000
rm -f "$data" "$here/$tag"-*.json
