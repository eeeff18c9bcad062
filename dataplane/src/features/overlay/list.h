// What every tunnel's encap shares (overlay/tunnel.h): drop reasons, X(enumerator, name, what it counts).
#pragma once

#define DP_OVERLAY_DROPS(X)                                                              \
  X(kEncapMtu, encap_mtu, "longer than the egress port's MTU once encapsulated")         \
  X(kEncapHeadroom, encap_headroom, "no room before the frame for the outer headers")
