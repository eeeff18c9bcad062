#!/bin/sh
# abq.sh BASE NEW PAIRS [args]: quick alternating --only $ONLY A/B; Mpps per run and paired ratios
base=$1 new=$2 n=$3; shift 3
i=1
while [ $i -le $n ]; do
  if [ $((i%2)) -eq 1 ]; then o="$base $new"; else o="$new $base"; fi
  for b in $o; do
    v=$(nice -n -15 $b --json --only ${ONLY:-cached} --cpu-time --packets ${PK:-4000000} "$@" 2>/dev/null | python3 "$(dirname "$0")/mpps.py")
    if [ $b = $base ]; then bv=$v; else nv=$v; fi
  done
  echo "pair $i base $bv new $nv ratio $(python3 -c "print(round($nv/$bv,4))")"
  i=$((i+1))
done
