// VXLAN (RFC 7348): this host's tunnel endpoint (VTEP), the VNIs it
// terminates and the remote VTEPs it encapsulates toward, as configured
// (`overlay.vxlan` in the config; README: Overlay).
//
// Decap: a frame received on the underlay port, IPv4 to the local address,
// UDP to udp_port, with the VXLAN I flag and a configured VNI, loses its
// outer headers; the inner frame goes through the tables with its VNI as
// the match field tun_id. Encap: the action encap(vxlan,vni=N,remote=IP)
// puts the outer headers on (the remote's next-hop MAC from `remotes`, the
// UDP source port from the inner flow's hash, TTL and DF as configured).
#pragma once

#include <cstdint>
#include <vector>

#include "net/headers.h"

namespace dp {

inline constexpr uint32_t kVxlanMaxVni = 0xFFFFFF;
// Outer Ethernet (14) + IPv4 (20) + UDP (8) + VXLAN (8).
inline constexpr uint32_t kVxlanOverhead = net::kVxlanOuterV4;

struct VxlanRemote {
  uint8_t ip[4] = {};
  uint8_t mac[6] = {};  // the next hop toward it on the underlay (no ARP: configured)
  int line = 0;
};

struct OverlayConfig {
  bool vxlan = false;
  uint8_t local[4] = {};  // this VTEP's underlay IPv4 address
  uint8_t mac[6] = {};    // its MAC: the source of encapsulated frames
  uint16_t port = 0;      // the underlay port (index into ports): decapsulation only there
  uint16_t udp_port = net::kVxlanPort;
  uint8_t ttl = 64;
  bool df = true;
  std::vector<uint32_t> vnis;  // sorted
  std::vector<VxlanRemote> remotes;
  bool any_remote = false;  // decapsulate from any source, not only `remotes`
  int line = 0;

  bool has_vni(uint32_t v) const;
  const VxlanRemote* remote(const uint8_t ip[4]) const;
  bool operator==(const OverlayConfig& o) const;
};

}  // namespace dp
