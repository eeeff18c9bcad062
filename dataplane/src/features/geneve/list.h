// Geneve (RFC 8926, geneve.h): drop reasons and counters,
// X(enumerator, name, what it counts).
#pragma once

#define DP_GENEVE_DROPS(X)                                                                                   \
  X(kGeneveHeader, geneve_header,                                                                             \
    "to this VTEP's Geneve port, but a fragment, a bad outer IPv4 checksum, lengths that disagree, a "        \
    "malformed option or a protocol other than Ethernet (0x6558)")                                            \
  X(kGeneveVni, geneve_unknown_vni, "a VNI overlay.geneve.vnis does not list")                                \
  X(kGeneveTrunc, geneve_truncated, "the UDP, Geneve header, its options or the inner Ethernet header cut short") \
  X(kGeneveRemote, geneve_unknown_remote,                                                                     \
    "from a source that is not in overlay.geneve.remotes (unless any_remote: true)")                          \
  X(kGeneveMac, geneve_wrong_mac, "to this VTEP's address but another host's MAC")                            \
  X(kGeneveVersion, geneve_version, "a Geneve version other than 0 (RFC 8926 section 3.4: dropped)")          \
  X(kGeneveControl, geneve_control,                                                                           \
    "the O bit: a control message, whose payload a tunnel endpoint must not forward (RFC 8926 section 3.4)")  \
  X(kGeneveCritical, geneve_critical_option,                                                                  \
    "an option with the critical bit that overlay.geneve.accept_options does not list (RFC 8926 section 3.5)")

#define DP_GENEVE_COUNTERS(X)                                                          \
  X(kGeneveDecap, geneve_decap, "Frames decapsulated from this VTEP's Geneve port.")   \
  X(kGeneveEncap, geneve_encap, "Packets encapsulated in Geneve and sent.")
