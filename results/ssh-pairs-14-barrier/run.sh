#!/bin/bash
# Rounds of netns, ssh, netns runs of the same small sweep (the SSH bar's sweep).
cd /work/main
for i in 1 2 3 4; do
  for how in netnsA ssh netnsB; do
    extra=""; [[ $how == ssh ]] && extra="--lab testbed-ssh"
    build/release/harness/harness run $extra --instances 4,16 --sizes 1024 --duration 5 --repeat 1 --warmup 1 \
      --dut dataplane,testpmd-io --out /tmp/pairs2/$i-$how > /tmp/pairs2/$i-$how.log 2>&1
  done
done
echo done > /tmp/pairs2/done
