// The tunnels' words in a trace (Pipeline::explain, pipeline/compile.cc's
// walk): the decapsulation a packet arrived through, an encap(...) step.
#pragma once

#include <arpa/inet.h>

#include <string>

#include "dataplane/overlay.h"
#include "dataplane/rules.h"
#include "features/tunnels.h"

namespace dp::narrate {

// The first line of a trace of a decapsulated packet (VNI tun_id): the
// first tunnel that terminates the VNI names it; else the first
// configured (else registered) one, which would drop it.
inline std::string decap(const OverlayConfig& ov, uint32_t tun_id) {
  std::string name, display;
  bool known = false, on = false;
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    const TunnelConfig& c = ov[T::kKind];
    const bool has = c.on && c.has_vni(tun_id);
    if (known || (on && !has) || (!name.empty() && !c.on && !has)) return;
    name = tunnel_kind_name(T::kKind);
    display = T::kDisplay;
    known = has;
    on = c.on;
  });
  return "tunnel: " + display + " VNI " + std::to_string(tun_id) + ", decapsulated" +
         (known ? "" : " (this VNI is not in overlay." + name + ".vnis: it would be dropped as " + name +
                           "_unknown_vni before the tables)");
}

// "  encap(vxlan): VNI N to the VTEP IP"
inline std::string encap(const Action& a) {
  char vtep[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, a.remote, vtep, sizeof vtep);
  return std::string("  encap(") + tunnel_kind_name(static_cast<TunnelKind>(a.tunnel)) + "): VNI " +
         std::to_string(a.vni) + " to the VTEP " + vtep;
}

}  // namespace dp::narrate
