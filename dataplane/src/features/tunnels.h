// The tunnel modules, as the pipeline, the config and the offload reach
// them: for_each_tunnel calls a generic lambda with each module's struct
// (a compile-time list: no virtual call, nothing per packet but inlined
// code), in DP_TUNNELS' order. A new tunnel: its folder, its line in
// DP_TUNNELS (registry.h) and its #include here; its NIC hook
// (features/<name>/nic.h) is included in features/tunnels_nic.h.
#pragma once

#include <cstring>
#include <string_view>

#include "features/registry.h"
#include "features/geneve/geneve.h"
#include "features/vxlan/vxlan.h"

namespace dp {

template <typename F>
[[gnu::always_inline]] inline void for_each_tunnel(F&& f) {
#define DP_EACH(X, S, n, d, c) f(S{});
  DP_TUNNELS(DP_EACH, _)
#undef DP_EACH
}

// The tunnels that decapsulate on a port: bit k for TunnelKind k.
inline uint8_t decap_mask(const OverlayConfig& ov, uint16_t port) {
  uint8_t m = 0;
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    if (ov[T::kKind].on && ov[T::kKind].port == port) m |= static_cast<uint8_t>(1u << static_cast<int>(T::kKind));
  });
  return m;
}

// Per packet: the decap of the tunnels in `mask` (the port's), in order;
// the first that claims the frame (decapsulates or drops it) decides.
// *counter: its decap counter.
[[gnu::always_inline]] inline Decap tunnel_decap(uint8_t mask, const uint8_t* d, uint32_t len, const OverlayConfig& ov, uint8_t* counter) {
  Decap r;
  bool claimed = false;
  for_each_tunnel([&](auto t) __attribute__((always_inline)) {
    using T = decltype(t);
    if (claimed || !(mask & (1u << static_cast<int>(T::kKind)))) return;
    r = T::decap(d, len, ov[T::kKind]);
    if (r.off || r.why != DropWhy::kCount) {
      claimed = true;
      *counter = static_cast<uint8_t>(T::kDecapCounter);
    }
  });
  return r;
}

// The tunnel named `name` ("vxlan", ...), or kCount.
inline TunnelKind tunnel_by_name(std::string_view name) {
  TunnelKind k = TunnelKind::kCount;
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    if (name == tunnel_kind_name(T::kKind)) k = T::kKind;
  });
  return k;
}

// Calls f(T{}) for the module of kind k.
template <typename F>
inline void with_tunnel(TunnelKind k, F&& f) {
  for_each_tunnel([&](auto t) {
    if (decltype(t)::kKind == k) f(t);
  });
}

}  // namespace dp
