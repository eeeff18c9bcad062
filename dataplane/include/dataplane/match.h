// What a rule matches and does, as the per-packet stages read it. The
// control path parses rules (rules.h) and lowers them into these.
#pragma once

#include <cstdint>

#include "ctrack/tracker.h"

namespace dp {

inline constexpr uint16_t kEthArp = 0x0806, kEthIpv4 = 0x0800, kEthIpv6 = 0x86DD;
inline constexpr uint16_t kEthNd = 0xFFFE;  // pseudo ethertype: IPv6 ND/MLD
inline constexpr int kMaxTables = 16;
// The most bytes of options an encap() action carries for its tunnel's header.
inline constexpr uint32_t kTunnelOptMax = 32;

enum MatchBit : uint32_t {
  kMInPort = 1u << 0,
  kMEthType = 1u << 1,
  kMVlan = 1u << 2,
  kMSrc = 1u << 3,
  kMDst = 1u << 4,
  kMProto = 1u << 5,
  kMTpSrc = 1u << 6,
  kMTpDst = 1u << 7,
  kMTcpFlags = 1u << 8,
  kMCtState = 1u << 9,
  kMCtZone = 1u << 10,
  kMTunId = 1u << 11,
};

struct Match {
  uint32_t fields = 0;
  uint16_t in_port = 0;
  uint16_t eth_type = 0;
  uint16_t vlan = 0;
  uint8_t family = 0;  // 4 or 6 when ip_src/ip_dst/ipv6_* is given
  uint8_t src[16] = {}, dst[16] = {};
  uint8_t src_len = 0, dst_len = 0;
  uint8_t proto = 0;
  uint16_t tp_src_lo = 0, tp_src_hi = 0xFFFF, tp_dst_lo = 0, tp_dst_hi = 0xFFFF;
  uint8_t tcp_flags = 0, tcp_flags_mask = 0;
  uint8_t ct_state = 0, ct_state_mask = 0;
  uint16_t ct_zone = 0;
  uint32_t tun_id = 0;  // the VNI a packet was decapsulated with; 0: it came in no tunnel

  bool has(MatchBit b) const { return (fields & b) != 0; }
  // Which classifier lists this rule belongs to.
  bool applies_v4() const;
  bool applies_v6() const;
  bool applies_other() const;  // ARP, ND and non-IP ethertypes
};

enum class ActType : uint8_t { kCt, kOutput, kDrop, kCount, kSetMark, kGotoTable, kEncap };

struct Action {
  ActType type = ActType::kDrop;
  bool commit = false;   // ct
  uint16_t zone = 0;     // ct
  int16_t table = -1;    // ct(table=T) or goto_table:T
  uint16_t port = 0;     // output
  uint32_t mark = 0;     // set_mark
  ctrack::NatRange nat;  // ct(commit,nat(src=...|dst=...)): kind kNone when none
  // ct: the same number for every ct() of the pipeline with this zone,
  // commit and NAT range, set by Pipeline::build (the conntrack stage and
  // the flow cache group packets by it: one compare, not a 38-byte memcmp).
  uint32_t ct_group = 0;
  uint32_t vni = 0;      // encap(<tunnel>,vni=N,remote=IP[,...])
  uint8_t remote[4] = {};
  uint16_t encap = 0;    // its outer header in the pipeline's list, set by Pipeline::build
  uint8_t tunnel = 0;    // encap: the tunnel (TunnelKind, overlay.h)
  uint8_t opt_len = 0;   // encap: bytes of the tunnel module's options (Geneve's), in opts
  uint8_t opts[kTunnelOptMax] = {};
};

}  // namespace dp
