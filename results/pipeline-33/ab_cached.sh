#!/bin/sh
# ab_cached.sh BASE NEW PAIRS [args]: alternating --only cached runs; prints ratio per pair
base=$1 new=$2 n=$3; shift 3
i=1
while [ $i -le $n ]; do
  if [ $((i%2)) -eq 1 ]; then a=$base; b=$new; else a=$new; b=$base; fi
  ra=$(nice -n -15 $a --json --only cached --cpu-time --packets 4000000 "$@" 2>/dev/null | head -1)
  rb=$(nice -n -15 $b --json --only cached --cpu-time --packets 4000000 "$@" 2>/dev/null | head -1)
  if [ $a = $base ]; then rbase=$ra; rnew=$rb; else rbase=$rb; rnew=$ra; fi
  python3 -c "
import json,sys
b=json.loads(sys.argv[1]); n=json.loads(sys.argv[2])
print('pair %s base %.2f new %.2f ratio %.3f  new/parse %.3f base/parse %.3f' % (sys.argv[3], b['mpps'], n['mpps'], n['mpps']/b['mpps'], n['mpps']/n['parse_only_mpps'], b['mpps']/b['parse_only_mpps']))" "$rbase" "$rnew" $i
  i=$((i+1))
done
