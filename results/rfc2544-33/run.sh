#!/usr/bin/env bash
# run.sh BUILD_DIR OUT [harness args...]: one RFC 2544 run (issue 33's cell:
# memif, 64 B, 100,000 connections, dataplane and testpmd-io) under the
# system lock, in a session of its own whose autogroup is niced to -15.
# (This kernel groups each session's tasks, sched_autogroup_enabled=1: a
# plain `nice -n -15` only ranks them inside their own session, and the
# other engineers' sessions kept the DUT's forwarding thread off its CPU
# 81 % of a trial even so.) Load before and after goes to OUT.load.
set -euo pipefail
build=$1 out=$2
shift 2
uptime > "$out.load"
setsid bash -c 'echo -15 > /proc/$$/autogroup; exec "$@"' run \
  flock /work/helpers/system.lock "$build/harness/harness" run --mode rfc2544 --frame-sizes 64 --conns 100000 \
  --dut dataplane,testpmd-io --churn 0 --out "$out" "$@"
uptime >> "$out.load"
