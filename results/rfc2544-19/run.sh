#!/usr/bin/env bash
# Issue 19's RFC 2544 bar: 3 rounds at 100,000 connections, 64 B, the DUT's
# own drops per trial. Run from the repository root after ./scripts/bench
# (or any release build): results/rfc2544-19/run.sh [OUT]
set -euo pipefail
out=${1:-results/rfc2544-19/run}
build/release/harness/harness run --mode rfc2544 --frame-sizes 64 --conns 100000 \
  --dut dataplane,testpmd-io,ovs-dpdk --trial 2 --churn 0 --repeat 3 --out "$out"
