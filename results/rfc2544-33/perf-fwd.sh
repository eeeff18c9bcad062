#!/usr/bin/env bash
# perf-fwd.sh OUTDIR RUNDIR SECONDS: while an RFC 2544 run (harness run
# --mode rfc2544 --out RUNDIR) is going, records the forwarding thread
# (rte-worker-0) of each DUT for SECONDS once its generator has started its
# first trial (the full-rate one): OUTDIR/perf-COMM-PID.data.
set -u
out=$1 run=$2 secs=${3:-1.5}
mkdir -p "$out"
declare -A done
while :; do
  for p in $(pgrep -x dataplane; pgrep -x dpdk-testpmd); do
    [[ -n ${done[$p]:-} ]] && continue
    # its generator's log names trial 1 once the full-rate trial starts
    case $(cat /proc/$p/comm 2>/dev/null) in dataplane) d=dataplane ;; *) d=testpmd-io ;; esac
    log=$(ls -t "$run"/raw/$d-r*/*/gen.err 2>/dev/null | head -1)
    # (a log older than this DUT is an earlier round's)
    if [[ -n $log && $log -nt /proc/$p ]] && grep -qs "trial 1 ready" "$log"; then
      tid=$(grep -l rte-worker /proc/$p/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5)
      [[ -z $tid ]] && continue
      comm=$(cat /proc/$p/comm)
      sleep 0.3
      perf record -q -t "$tid" -o "$out/perf-$comm-$p.data" -- sleep "$secs" >/dev/null 2>&1
      done[$p]=1
    fi
  done
  sleep 0.05
done
