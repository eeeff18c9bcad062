#!/bin/sh
# ab.sh BASE NEW OUTDIR PAIRS [extra args]: --only cached --cpu-time, alternating
# order within each pair; prints new/base of ns_per_pkt per pair.
set -eu
base=$1 new=$2 out=$3 n=$4; shift 4
mkdir -p "$out"
i=1
while [ "$i" -le "$n" ]; do
  if [ $((i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for side in $order; do
    if [ "$side" = base ]; then bin=$base; else bin=$new; fi
    nice -n -15 "$bin" --json --only cached --cpu-time --packets 2000000 "$@" > "$out/$side$i.json"
  done
  i=$((i + 1))
done
python3 - "$out" "$n" <<'PY'
import json,sys,statistics
d,n=sys.argv[1],int(sys.argv[2])
r=[];rb=[];rn=[]
for i in range(1,n+1):
    b=json.load(open(f"{d}/base{i}.json")); w=json.load(open(f"{d}/new{i}.json"))
    r.append(b["ns_per_pkt"]/w["ns_per_pkt"]); rb.append(b["mpps"]/b["parse_only_mpps"]); rn.append(w["mpps"]/w["parse_only_mpps"])
print("speedup (base ns / new ns) per pair:", " ".join("%.3f"%x for x in r), "median %.3f"%statistics.median(r))
print("pipeline/parse-only base:", " ".join("%.3f"%x for x in rb), "median %.3f"%statistics.median(rb))
print("pipeline/parse-only new: ", " ".join("%.3f"%x for x in rn), "median %.3f"%statistics.median(rn))
PY
