#!/bin/sh
# cg.sh NAME BINARY [conns]: callgrind at --packets 2048 and 20480 (9 reps each:
# 165,888 measured packets between them); per-packet instructions of the
# whole program and of the functions named below, inclusive.
name=$1 bin=$2 conns=${3:-8192}
cd "$(dirname "$0")"
for P in 2048 20480; do
  valgrind --tool=callgrind --callgrind-out-file=$name.$P.out "$bin" --only cached --packets $P --conns $conns --simd-bits 256 > $name.$P.log 2>&1 &
done
wait
for P in 2048 20480; do
  callgrind_annotate --inclusive=yes --threshold=100 $name.$P.out 2>/dev/null > $name.$P.txt
done
python3 - "$name" <<'PY'
import re,sys
name=sys.argv[1]
def load(P):
    d={}
    for line in open(f"{name}.{P}.txt"):
        m=re.match(r"\s*([\d,]+)\s+\(.*?\)\s+(\S.*)$", line) or re.match(r"\s*([\d,]+)\s+(\S.*)$", line)
        if m:
            d[m.group(2).strip()]=int(m.group(1).replace(',',''))
    return d
a=load(2048); b=load(20480)
pk=(20480-2048)*9
keys=[k for k in b if any(s in k for s in ("PROGRAM TOTALS","Datapath::run","flow_cache","ingress","parse_packet","Tracker::lookup","process_found","tables(","egress","rx_parse","record_path","lambda","stage3","fast_hit","sweep","acquire","run_mbufs"))]
for k in sorted(keys,key=lambda k:-(b[k]-a.get(k,0))):
    print("%8.1f  %s" % ((b[k]-a.get(k,0))/pk, k[:150]))
PY
