#!/usr/bin/env bash
# Issue 33's RFC 2544 bar: memif, 64 B, 100,000 connections, 5 rounds,
# dataplane against testpmd-io (each round runs both, minutes apart).
# Run from the repository root with a release build in build/rel:
#   results/final-30-33/rfc2544.sh [OUT]
set -euo pipefail
out=${1:-results/final-30-33/rfc2544}
build/rel/harness/harness run --mode rfc2544 --frame-sizes 64 --conns 100000 \
  --dut dataplane,testpmd-io --trial 2 --churn 0 --repeat 5 --out "$out"
