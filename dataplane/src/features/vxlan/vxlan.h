// VXLAN (RFC 7348): the tunnel module (features/overlay/tunnel.h says what
// a module declares). Decap of frames to this VTEP's UDP port on its
// underlay port; encap(vxlan,vni=N,remote=IP)'s outer headers; the
// offload's answers (the NIC matches VXLAN and decapsulates: features/vxlan/nic.h).
#pragma once

#include <string>
#include <string_view>

#include "features/overlay/tunnel.h"
#include "sdn/status.h"

namespace dp {

struct Vxlan {
  static constexpr TunnelKind kKind = TunnelKind::kVxlan;
  static constexpr const char* kDisplay = "VXLAN";
  static constexpr uint16_t kUdpPort = net::kVxlanPort;
  static constexpr Tunnel kDecapCounter = Tunnel::kVxlanDecap, kEncapCounter = Tunnel::kVxlanEncap;
  static constexpr const char* kArgs = "vxlan vni=N remote=IP";
  static constexpr const char* kOptionKey = nullptr;  // no config keys of its own
  // The offload: a table-0 rule's flow may not encap (before any
  // connection, no UDP source port); a connection's may; the NIC matches
  // VXLAN and decapsulates it (features/vxlan/nic.h).
  static constexpr const char* kRuleEncapRefuse = "encap(vxlan): VXLAN encap runs in software";
  static constexpr const char* kConnEncapRefuse = nullptr;
  static constexpr const char* kConnDecapRefuse = nullptr;
  static constexpr const char* kHwsDecapRefuse = nullptr;

  // Per packet. The I flag and a configured VNI; the inner Ethernet header
  // within the outer datagram.
  [[gnu::always_inline]] static Decap decap(const uint8_t* d, uint32_t len, const TunnelConfig& c) {
    static constexpr DecapWhy w{DropWhy::kVxlanHeader, DropWhy::kVxlanTrunc, DropWhy::kVxlanRemote,
                                DropWhy::kVxlanMac};
    const uint8_t* vx = nullptr;
    bool not_ours = false;
    Decap r = udp_tunnel_outer(d, len, c, w, net::kVxlanLen, &vx, &not_ours);
    if (not_ours || r.why != DropWhy::kCount) return r;
    if (!net::vxlan_has_vni(vx)) {  // I clear: no VNI
      r.why = DropWhy::kVxlanHeader;
      return r;
    }
    r.vni = net::vxlan_vni(vx);
    if (!c.has_vni(r.vni)) {
      r.why = DropWhy::kVxlanVni;
      return r;
    }
    decap_inner(r, d, vx, net::kVxlanLen, DropWhy::kVxlanTrunc);
    return r;
  }

  // Control path: no arguments but vni and remote.
  static bool parse_encap_arg(std::string_view, Action*, std::string*) { return false; }
  static uint32_t encap_template(const TunnelConfig& c, const TunnelRemote& r, const Action& a, uint8_t* hdr) {
    const uint32_t n = put_udp_outer_template(hdr, c, r);
    return n + net::put_vxlan(hdr + n, a.vni);
  }
  static std::string parse_option(const std::string&, uint32_t*) { return "no options"; }
};

}  // namespace dp
