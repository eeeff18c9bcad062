#!/bin/sh
# Issue 33, session 20: what the overlay's own work costs, by taking it out.
#   sh results/s20-33/ablate.sh BENCH_A BENCH_B CONNS ROUNDS > OUT.txt
#   python3 results/s20-33/sum.py OUT.txt
# Each round runs `--only cached` (the firewall) and `--only overlay`
# (overlay+NAT) of BENCH_A, then of BENCH_B, and prints "NAME-MODE ns/pkt"
# lines (NAME: the binary's file name). sum.py gives each binary's
# firewall / overlay+NAT ratio per round, as median [range].
# The ablated binary (ablate.patch: -DABL_A no NAT checksum updates,
# -DABL_B no outer IPv4 checksum check, -DABL_C no encap MTU check,
# -DABL_D no outer header write; each makes the output wrong):
#   git apply results/s20-33/ablate.patch
#   meson setup build/abl -Dbuildtype=release -Dmarch=native -Dcpp_args="-DABL_A -DABL_B -DABL_C -DABL_D"
#   ninja -C build/abl dataplane/dataplane-bench && cp build/abl/dataplane/dataplane-bench /tmp/abl-ABCD
#   git apply -R results/s20-33/ablate.patch
# and the same tree built without -D...: /tmp/abl-none.
set -eu
a=$1 b=$2 conns=$3 rounds=$4
r=1
while [ "$r" -le "$rounds" ]; do
  for bin in "$a" "$b"; do
    for mode in cached overlay; do
      ns=$("$bin" --json --cpu-time --only $mode --conns "$conns" --packets 4000000 |
           grep -E '"bench": "(pipeline|overlay_nat)"' | sed 's/.*"ns_per_pkt": \([0-9.]*\).*/\1/')
      if [ -z "$ns" ]; then echo "ablate.sh: no ns_per_pkt from $bin --only $mode" >&2; exit 1; fi
      echo "$(basename "$bin")-$mode $ns"
    done
  done
  r=$((r + 1))
done
