// NAT (ct(commit,nat(...)), rewritten in place by features/nat/rewrite.h): drop
// reasons and counters, X(enumerator, name, what it counts).
#pragma once

#define DP_NAT_DROPS(X)                                                                                 \
  X(kNatExhausted, nat_exhausted, "ct(commit,nat(...)) found no free tuple in its range")               \
  X(kNatFamily, nat_family,                                                                              \
    "ct(commit,nat(...)) with a range of the other address family (an IPv6 packet, an IPv4 pool, or the " \
    "reverse)")

#define DP_NAT_COUNTERS(X) X(kNat, nat_packets, "Packets whose addresses or ports NAT rewrote.")
