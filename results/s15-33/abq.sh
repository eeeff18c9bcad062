#!/bin/sh
# abq.sh BASE NEW PAIRS [args]: a quick alternating A/B of one part
# (--only $ONLY: cached, overlay or floor; default cached); Mpps per run and
# the paired ratio. The bench's warnings stay on stderr; a run that prints
# no line of the expected bench stops the script (mpps.py).
set -eu
base=$1 new=$2 n=$3; shift 3
only=${ONLY:-cached}
here=$(dirname "$0")
i=1
while [ "$i" -le "$n" ]; do
  if [ $((i % 2)) -eq 1 ]; then o="$base $new"; else o="$new $base"; fi
  for b in $o; do
    v=$(nice -n -15 "$b" --json --only "$only" --cpu-time --packets "${PK:-4000000}" "$@" | python3 "$here/mpps.py" "$only")
    if [ "$b" = "$base" ]; then bv=$v; else nv=$v; fi
  done
  echo "pair $i base $bv new $nv ratio $(python3 -c "print(round($nv/$bv,4))")"
  i=$((i + 1))
done
