// IPv4 fragments (fragments.h: the worker's fragment table; the worker
// fragments datagrams longer than the egress MTU): drop reasons and
// counters, X(enumerator, name, what it counts).
#pragma once

#define DP_FRAGMENTS_DROPS(X)                                                                               \
  X(kFragOverlap, frag_overlap, "a second first fragment of a datagram, or a TCP fragment at offset 8 (RFC 1858)") \
  X(kFragTooMany, frag_too_many,                                                                             \
    "more later fragments of one datagram before its first than the fragment table holds (FragTable::kHeld)") \
  X(kFragTimeout, frag_timeout,                                                                              \
    "held fragments whose first never came in time (or whose entry a full table took back)")                 \
  X(kFragNoMbuf, frag_no_mbuf,                                                                               \
    "an IPv4 datagram longer than the egress MTU (without DF) found no buffers to be fragmented into")

#define DP_FRAGMENTS_COUNTERS(X) \
  X(kFragsOut, ip_fragments_out, "IPv4 fragments made of datagrams longer than the egress MTU.")
