#!/bin/bash
# perf record the dataplane DUT during the RFC 2544 full-rate trial
set -u
OUT=/tmp/rfc9b
rm -rf $OUT; mkdir -p $OUT
cd /work/main
setsid bash -c 'bash results/rfc2544-33/run.sh build/relg /tmp/rfc9b/out --trial 10 --repeat 1 --dut dataplane > /tmp/rfc9b/log 2>&1' &
for i in $(seq 1 600); do
  f=$(ls $OUT/out/raw/dataplane-r1/100000-64/gen.err 2>/dev/null)
  if [ -n "$f" ] && grep -q "trial 1 ready" $f; then break; fi
  sleep 0.2
done
sleep 1
P=$(pgrep -x dataplane | head -1)
echo "pid $P"; ls /proc/$P/task | while read t; do echo "$t $(cat /proc/$P/task/$t/comm)"; done
perf record -o $OUT/perf.data -F 4999 -p $P -- sleep 5 2>&1 | tail -1
wait
