// Tunnels: this host's tunnel endpoint (VTEP) per tunnel type, the VNIs it
// terminates and the remote VTEPs it encapsulates toward, as configured
// (`overlay.<tunnel>` in the config; README: Overlay). The tunnel types are
// the modules DP_TUNNELS registers (features/registry.h): VXLAN (RFC 7348),
// ... Each has the same config shape (TunnelConfig); a module may take a
// few keys of its own (TunnelConfig::options).
//
// Decap: a frame received on a tunnel's underlay port, IPv4 to its local
// address, UDP to its udp_port, with a valid tunnel header and a
// configured VNI, loses its outer headers; the inner frame goes through the
// tables with its VNI as the match field tun_id. Encap: the action
// encap(<tunnel>,vni=N,remote=IP[,...]) puts the outer headers on (the
// remote's next-hop MAC from `remotes`, the UDP source port from the inner
// flow's hash, TTL and DF as configured); their length is the encap's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "features/registry.h"
#include "net/headers.h"

namespace dp {

// The tunnel types, in DP_TUNNELS' order.
enum class TunnelKind : uint8_t {
#define DP_TK(X, S, n, d, c) k##S,
  DP_TUNNELS(DP_TK, _)
#undef DP_TK
  kCount
};
inline constexpr size_t kTunnelKinds = static_cast<size_t>(TunnelKind::kCount);
const char* tunnel_kind_name(TunnelKind k);  // "vxlan", ...

inline constexpr uint32_t kVxlanMaxVni = 0xFFFFFF;  // VXLAN's and Geneve's VNIs are 24 bits
// VXLAN's outer headers: Ethernet (14) + IPv4 (20) + UDP (8) + VXLAN (8).
inline constexpr uint32_t kVxlanOverhead = net::kVxlanOuterV4;
// The longest outer headers an encap may put on (a tunnel whose header has
// options takes up to this); the mbuf headroom (128) bounds it.
inline constexpr uint32_t kOuterMax = 128;

// Where a config item was written: carried for messages, not compared (a
// reload that only moves lines changes nothing).
struct ConfigLine {
  int line = 0;
  friend bool operator==(const ConfigLine&, const ConfigLine&) { return true; }
};

struct TunnelRemote : ConfigLine {
  uint8_t ip[4] = {};
  uint8_t mac[6] = {};  // the next hop toward it on the underlay (no ARP: configured)
  bool operator==(const TunnelRemote&) const = default;
};
using VxlanRemote = TunnelRemote;

// What the common outer frame of a decap (no VLAN tag, IPv4 without
// options) must hold in its first kOuterMatchLen bytes, as one masked
// compare (features/overlay/tunnel.h: udp_tunnel_outer): derived from the
// rest of its TunnelConfig when a pipeline is built (prepare_outer_match),
// never configured, so never compared. off: not prepared (every frame takes
// the checks one by one).
inline constexpr uint32_t kOuterMatchLen = 48;
struct OuterMatch {
  alignas(16) uint8_t hdr[kOuterMatchLen] = {};
  alignas(16) uint8_t mask[kOuterMatchLen] = {};
  bool on = false;
  bool remote = false;  // the one remote's address is in it (not any_remote)
  friend bool operator==(const OuterMatch&, const OuterMatch&) { return true; }
};

// One tunnel type's endpoint. Every field needs a restart to change
// (rule_service.cc: reload refuses an overlay that differs).
struct TunnelConfig : ConfigLine {
  bool on = false;        // configured
  uint8_t local[4] = {};  // this VTEP's underlay IPv4 address
  uint8_t mac[6] = {};    // its MAC: the source of encapsulated frames
  uint16_t port = 0;      // the underlay port (index into ports): decapsulation only there
  uint16_t udp_port = 0;  // the module's default unless configured
  uint8_t ttl = 64;
  bool df = true;
  std::vector<uint32_t> vnis;  // sorted
  std::vector<TunnelRemote> remotes;
  bool any_remote = false;  // decapsulate from any source, not only `remotes`
  std::vector<uint32_t> options;  // the module's own list (Geneve: the options it accepts), sorted
  OuterMatch outer;               // derived (prepare_outer_match), per packet

  // Per packet (a decap): inline, a word compare per remote.
  bool has_vni(uint32_t v) const {
    if (vnis.size() == 1) return vnis[0] == v;
    return std::binary_search(vnis.begin(), vnis.end(), v);
  }
  const TunnelRemote* remote(const uint8_t ip[4]) const {
    for (const TunnelRemote& r : remotes)
      if (memcmp(r.ip, ip, 4) == 0) return &r;
    return nullptr;
  }
  bool operator==(const TunnelConfig&) const = default;
};

struct OverlayConfig {
  TunnelConfig tunnel[kTunnelKinds];
  const TunnelConfig& operator[](TunnelKind k) const { return tunnel[static_cast<size_t>(k)]; }
  TunnelConfig& operator[](TunnelKind k) { return tunnel[static_cast<size_t>(k)]; }
  bool operator==(const OverlayConfig&) const = default;
};

}  // namespace dp
