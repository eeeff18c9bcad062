// harness-gen --overlay (harness --scenario overlay-nat in the RFC 2544
// mode): the server side is a remote hypervisor's VTEP. What it sends is
// VXLAN (RFC 7348), or with --tunnel geneve Geneve (RFC 8926, no options),
// toward the DUT's VTEP, to the client's translated address; what it takes
// must be that tunnel from the DUT's VTEP whose inner source is the
// floating address, else it is counted by reason and not taken. The
// translated port of each connection is learnt from its SYN, whose ISN
// names the connection (isn_client). Both tunnels' bytes are net/'s
// (headers.h, geneve.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "frame.h"
#include "net/geneve.h"
#include "net/headers.h"

namespace gen {

// The outer headers before the inner frame: VXLAN's, and Geneve's without
// options (what this side sends; what it takes may carry options).
inline constexpr int kOverlayHeaders = net::kVxlanOuterV4;
static_assert(net::kGeneveOuterV4 == net::kVxlanOuterV4);
inline constexpr uint32_t kLocalVtep = 0xC0000201u;   // 192.0.2.1: the DUT's (configs/dataplane/overlay-nat.yaml)
inline constexpr uint32_t kRemoteVtep = 0xC0000202u;  // 192.0.2.2: this generator's server side
inline constexpr uint32_t kFloatingIp = 0xCB007107u;  // 203.0.113.7
inline constexpr uint32_t kVni = 100;
inline constexpr uint8_t kVtepMac[6] = {0x02, 0, 0, 0, 0x01, 0x01};    // the DUT's underlay MAC
inline constexpr uint8_t kRemoteMac[6] = {0x02, 0, 0, 0, 0x02, 0x02};  // this side's, as the DUT's config names it

// Connection i's client ISN: distinct per connection below 2^26 of them.
inline constexpr uint32_t kIsnClient = 0x10000000u, kIsnServer = 0x20000000u, kIsnStride = 64;
inline uint32_t isn_client(uint32_t conn) { return kIsnClient + conn * kIsnStride; }

struct Overlay {
  // kNotTunnel: not the tunnel's UDP port, or for Geneve a header
  // parse_geneve() refuses, another protocol than Ethernet, or a critical
  // option (none is known here: RFC 8926 3.5.1 drops it).
  enum Why { kNotTunnel, kWrongVtep, kWrongVni, kUntranslated, kUnknownPort, kWhyCount };
  static constexpr const char* kWhyName[2][kWhyCount] = {
      {"not_vxlan", "wrong_vtep", "wrong_vni", "untranslated", "unknown_port"},
      {"not_geneve", "wrong_vtep", "wrong_vni", "untranslated", "unknown_port"}};
  bool geneve = false;  // --tunnel geneve
  uint64_t bad[kWhyCount] = {};
  uint64_t learnt = 0;
  std::vector<uint16_t> nat_port;  // per connection: its translated source port
  std::vector<uint32_t> by_port;   // (server port - 80) << 16 | translated port -> connection + 1

  void init(uint32_t conns, bool use_geneve = false) {
    geneve = use_geneve;
    nat_port.assign(conns, 0);
    by_port.assign(static_cast<size_t>((conns - 1) / kPortsPerIp + 1) << 16, 0);
  }

  const char* why_name(int w) const { return kWhyName[geneve][w]; }
  uint16_t udp_port() const { return geneve ? net::kGenevePort : net::kVxlanPort; }

  // The outer headers for an inner frame of inner_len bytes, at out (the
  // inner frame follows at out + kOverlayHeaders). UDP checksum 0 (RFC 7348
  // 5, RFC 8926 4.1.1).
  void encap(uint8_t* out, uint16_t inner_len, uint16_t sport) const {
    uint8_t src[4], dst[4];
    put32(src, kRemoteVtep);
    put32(dst, kLocalVtep);
    if (geneve) net::put_geneve_outer_v4(out, {kVtepMac, kRemoteMac, src, dst, kVni, sport}, inner_len);
    else net::put_vxlan_outer_v4(out, {kVtepMac, kRemoteMac, src, dst, kVni, sport}, inner_len);
  }

  // Connection `conn`'s tuple as the server sees it.
  Tuple translated(uint32_t conn) const {
    Tuple t = tuple_of(conn);
    t.cip = kFloatingIp;
    t.cport = nat_port[conn];
    return t;
  }

  // The tunnel header at f + 42 of a frame of len bytes: where the inner
  // frame starts and the VNI, or false.
  bool tunnel_header(const uint8_t* f, uint32_t len, uint32_t* inner, uint32_t* vni) const {
    const uint32_t at = kOverlayHeaders - 8;
    if (!geneve) {
      if (!net::vxlan_has_vni(f + at)) return false;
      *inner = kOverlayHeaders;
      *vni = net::vxlan_vni(f + at);
      return true;
    }
    net::GeneveHeader h;
    if (net::parse_geneve(f + at, len - at, &h) != net::GeneveError::kNone || h.proto != net::kEthTeb ||
        h.has_critical || at + h.len + 54 > len)
      return false;
    *inner = at + h.len;
    *vni = h.vni;
    return true;
  }

  // A frame the server side received: checked as the tunnel from the DUT's
  // VTEP with VNI 100 whose inner source is the floating address; the inner
  // frame's client address and port put back to the connection's own (a
  // SYN teaches the connection's translated port) so that parse() reads it.
  // Returns the inner frame's offset, or -1 (counted in bad[]).
  int decap(uint8_t* f, uint32_t len, uint32_t bound) {
    uint32_t inner = 0, vni = 0;
    if (len < kOverlayHeaders + 54 || get16(f + 12) != 0x0800 || f[14] != 0x45 || f[14 + 9] != 17 ||
        get16(f + 36) != udp_port() || !tunnel_header(f, len, &inner, &vni))
      return bad[kNotTunnel]++, -1;
    if (get32(f + 26) != kLocalVtep || get32(f + 30) != kRemoteVtep) return bad[kWrongVtep]++, -1;
    if (vni != kVni) return bad[kWrongVni]++, -1;
    uint8_t* in = f + inner;
    uint8_t* ip = in + 14;
    if (get16(in + 12) != 0x0800 || (ip[0] >> 4) != 4 || ip[9] != 6 || get32(ip + 12) != kFloatingIp)
      return bad[kUntranslated]++, -1;
    uint8_t* tcp = ip + (ip[0] & 0xF) * 4;
    const uint16_t port = get16(tcp), sport = get16(tcp + 2);
    if (sport < kServerPort || static_cast<size_t>(sport - kServerPort + 1) << 16 > by_port.size())
      return bad[kUnknownPort]++, -1;
    uint32_t& slot = by_port[static_cast<size_t>(sport - kServerPort) << 16 | port];
    const uint32_t isn_off = get32(tcp + 4) - kIsnClient;
    if ((tcp[13] & (kSyn | kAck)) == kSyn && isn_off % kIsnStride == 0 && isn_off / kIsnStride < bound) {
      const uint32_t c = isn_off / kIsnStride;
      if (nat_port[c] != port || slot != c + 1) learnt++;
      nat_port[c] = port;
      slot = c + 1;
    }
    if (slot == 0) return bad[kUnknownPort]++, -1;
    const Tuple t = tuple_of(slot - 1);
    put32(ip + 12, t.cip);
    put16(tcp, t.cport);
    return static_cast<int>(inner);
  }
};

}  // namespace gen
