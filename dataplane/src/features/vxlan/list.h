// VXLAN (RFC 7348, vxlan.h): drop reasons and counters,
// X(enumerator, name, what it counts).
#pragma once

#define DP_VXLAN_DROPS(X)                                                                                   \
  X(kVxlanHeader, vxlan_header,                                                                              \
    "to this VTEP's VXLAN port, but without the I flag, a fragment, a bad outer IPv4 checksum, or lengths "  \
    "that disagree")                                                                                         \
  X(kVxlanVni, vxlan_unknown_vni, "a VNI overlay.vxlan.vnis does not list")                                  \
  X(kVxlanTrunc, vxlan_truncated, "the UDP, VXLAN or inner Ethernet header cut short")                        \
  X(kVxlanRemote, vxlan_unknown_remote,                                                                      \
    "from a source that is not in overlay.vxlan.remotes (unless any_remote: true)")                          \
  X(kVxlanMac, vxlan_wrong_mac, "to this VTEP's address but another host's MAC")

#define DP_VXLAN_COUNTERS(X)                                                          \
  X(kVxlanDecap, vxlan_decap, "Frames decapsulated from this VTEP's VXLAN port.")     \
  X(kVxlanEncap, vxlan_encap, "Packets encapsulated in VXLAN and sent.")
