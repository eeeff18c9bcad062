// Per packet: VXLAN (RFC 7348) decapsulation of frames on the underlay port
// and the UDP source port of encapsulated flows. The outer headers an
// encap() puts on are written by Pipeline::write_encap (vxlan.cc).
#pragma once

#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dataplane/overlay.h"
#include "dataplane/pipeline.h"
#include "nat_rewrite.h"
#include "net/headers.h"

namespace dp {


// VXLAN decap (RFC 7348) of a frame received on the underlay port: 0 when
// it is not VXLAN to this VTEP (it goes through the tables as it is), the
// outer headers' length when it is, or a drop reason. Only from a
// configured remote VTEP (unless any_remote), to this VTEP's MAC, with a
// good outer IPv4 checksum; the inner frame ends where the outer datagram
// does (`end`), not at the frame's (padding, or a lie in the lengths).
struct Decap {
  uint16_t off = 0;     // the inner frame's start
  uint16_t l3 = 0;      // the outer IPv4 header's start (after any VLAN tag)
  uint32_t end = 0;     // the inner frame's end: the outer IP length's
  uint32_t vni = 0;
  DropWhy why = DropWhy::kCount;  // kCount: not dropped
};
inline Decap vxlan_decap(const uint8_t* d, uint32_t len, const OverlayConfig& ov) {
  Decap r;
  uint32_t off = 14;
  if (len < off) return r;
  uint16_t et = net::get16(d + 12);
  if (et == 0x8100) {
    if (len < 18) return r;
    et = net::get16(d + 16);
    off = 18;
  }
  if (et != 0x0800 || len < off + 20) return r;
  const uint8_t* ip = d + off;
  if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_UDP || memcmp(ip + 16, ov.local, 4) != 0) return r;
  const uint32_t ihl = (ip[0] & 0x0F) * 4u, iplen = net::get16(ip + 2);
  if (ihl < 20 || len < off + ihl + 4) return r;
  const uint8_t* udp = ip + ihl;
  if (net::get16(udp + 2) != ov.udp_port) return r;
  // VXLAN to this VTEP's address: from here on it is decapsulated or dropped.
  if (memcmp(d, ov.mac, 6) != 0) {
    r.why = DropWhy::kVxlanMac;  // to another host's MAC (a flooded or misdirected frame)
    return r;
  }
  r.why = DropWhy::kVxlanHeader;
  if (!net::ipv4_checksum_ok(ip, ihl)) return r;  // the outer IPv4 checksum
  if (net::get16(ip + 6) & 0x3FFF) return r;  // a fragment: this VTEP does not reassemble
  if (!ov.any_remote && !ov.remote(ip + 12)) {
    r.why = DropWhy::kVxlanRemote;
    return r;
  }
  if (len < off + ihl + 16) {
    r.why = DropWhy::kVxlanTrunc;
    return r;
  }
  const uint32_t ulen = net::get16(udp + 4);
  if (iplen < ihl + 16 || ulen != iplen - ihl) return r;
  if (off + iplen > len) {
    r.why = DropWhy::kVxlanTrunc;
    return r;
  }
  const uint8_t* vx = udp + 8;
  if (!net::vxlan_has_vni(vx)) return r;  // I clear: no VNI
  r.vni = net::vxlan_vni(vx);
  if (!std::binary_search(ov.vnis.begin(), ov.vnis.end(), r.vni)) {
    r.why = DropWhy::kVxlanVni;
    return r;
  }
  if (iplen < ihl + 16 + 14) {
    r.why = DropWhy::kVxlanTrunc;
    return r;
  }
  r.why = DropWhy::kCount;
  r.off = static_cast<uint16_t>(off + ihl + 16);
  r.l3 = static_cast<uint16_t>(off);
  r.end = off + iplen;
  return r;
}

// The UDP source port of an encapsulated flow: its inner tuple's hash in
// the dynamic range (RFC 7348 section 5: entropy for ECMP).
inline uint16_t encap_sport(const ctrack::Key& k) {
  ctrack::Key c;
  ctrack::canonicalize(k, &c);
  c.zone = 0;
  return static_cast<uint16_t>(49152 + ctrack::hash_key(c) % 16384);
}

}  // namespace dp
