// What every tunnel module shares (features/<tunnel>/<tunnel>.h): the
// result of a decap, the outer Ethernet / IPv4 / UDP checks of a frame to
// one of this host's VTEPs, the UDP source port of encapsulated flows, and
// the outer IPv4/UDP template an encap starts from. Per packet: no
// strings, allocation or virtual calls.
//
// A tunnel module is a struct of static members (see features/vxlan/vxlan.h):
//   kKind (TunnelKind), kDisplay ("VXLAN": for narration), kUdpPort (its
//   default), kDecapCounter/kEncapCounter (Tunnel), kArgs (the rule
//   syntax's arguments, for messages), kOptionKeys (config keys of its own,
//   null-terminated), kRuleEncapRefuse / kConnEncapRefuse / kConnDecapRefuse
//   (the offload's answers: null = the NIC may) and kHwsDecapRefuse (why
//   not under hardware steering, where DV may);
//   decap(d, len, cfg) -> Decap (per packet),
//   parse_encap_arg(arg, Action*, err) -> bool (false: not its argument, or
//   with *err a bad one), encap_template(cfg, remote, action, hdr) ->
//   length, parse_option(text, out) -> error or "" (an item of the list
//   its kOptionKey names in its config section).
// features/tunnels.h lists them (for_each_tunnel) in DP_TUNNELS' order.
#pragma once

#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dataplane/overlay.h"
#include "dataplane/pipeline.h"
#include "net/headers.h"

namespace dp {

// A tunnel's decap of a frame received on its underlay port: off 0 and why
// kCount when it is not that tunnel to this VTEP (it goes on as it is), the
// outer headers' length when it is, or a drop reason. The inner frame ends
// where the outer datagram does (`end`), not at the frame's (padding, or a
// lie in the lengths).
struct Decap {
  uint16_t off = 0;     // the inner frame's start
  uint16_t l3 = 0;      // the outer IPv4 header's start (after any VLAN tag)
  uint32_t end = 0;     // the inner frame's end: the outer IP length's
  uint32_t vni = 0;
  DropWhy why = DropWhy::kCount;  // kCount: not dropped
};

// A tunnel's drop reasons for what every UDP tunnel checks.
struct DecapWhy {
  DropWhy header, trunc, remote, mac;
};

// Six bytes (a MAC address) equal: two loads a side (a memcmp of 6 bytes
// is a libc call, ~30 instructions a packet).
inline bool same_mac(const uint8_t* a, const uint8_t* b) {
  uint32_t a4, b4;
  uint16_t a2, b2;
  memcpy(&a4, a, 4);
  memcpy(&b4, b, 4);
  memcpy(&a2, a + 4, 2);
  memcpy(&b2, b + 4, 2);
  return ((a4 ^ b4) | static_cast<uint32_t>(a2 ^ b2)) == 0;
}

// udp_tunnel_outer's checks from the IP protocol on, of a frame whose
// IPv4 header of ihl bytes starts at off, with at least off + ihl + 4
// bytes (a UDP header's ports). Inline twice: with the constants of the
// common frame (no VLAN tag, no IP options) and with the general ones.
[[gnu::always_inline]] inline Decap udp_tunnel_outer_at(const uint8_t* d, uint32_t len, uint32_t off, uint32_t ihl,
                                                        const TunnelConfig& c, const DecapWhy& w, uint32_t hdr_min,
                                                        const uint8_t** hdr, bool* not_ours) {
  Decap r;
  const uint8_t* ip = d + off;
  if (ip[9] != IPPROTO_UDP || memcmp(ip + 16, c.local, 4) != 0) return r;
  const uint8_t* udp = ip + ihl;
  if (net::get16(udp + 2) != c.udp_port) return r;
  // To this VTEP's address and port: from here on it is decapsulated or dropped.
  *not_ours = false;
  if (!same_mac(d, c.mac)) {
    r.why = w.mac;  // to another host's MAC (a flooded or misdirected frame)
    return r;
  }
  r.why = w.header;
  if (!net::ipv4_checksum_ok(ip, ihl)) return r;  // the outer IPv4 checksum
  if (net::get16(ip + 6) & 0x3FFF) return r;      // a fragment: this VTEP does not reassemble
  if (!c.any_remote && !c.remote(ip + 12)) {
    r.why = w.remote;
    return r;
  }
  if (len < off + ihl + 8 + hdr_min) {
    r.why = w.trunc;
    return r;
  }
  const uint32_t iplen = net::get16(ip + 2), ulen = net::get16(udp + 4);
  if (iplen < ihl + 8 + hdr_min || ulen != iplen - ihl) return r;
  if (off + iplen > len) {
    r.why = w.trunc;
    return r;
  }
  r.why = DropWhy::kCount;
  r.l3 = static_cast<uint16_t>(off);
  r.end = off + iplen;
  *hdr = udp + 8;
  return r;
}

// udp_tunnel_outer of every frame its inline path does not take (a VLAN
// tag, IP options, a short frame, another ethertype or IP version): out of
// line.
[[gnu::noinline]] inline Decap udp_tunnel_outer_other(const uint8_t* d, uint32_t len, const TunnelConfig& c,
                                                      const DecapWhy& w, uint32_t hdr_min, const uint8_t** hdr,
                                                      bool* not_ours) {
  uint32_t off = 14;
  if (len < off) return Decap{};
  uint16_t et = net::get16(d + 12);
  if (et == 0x8100) {
    if (len < 18) return Decap{};
    et = net::get16(d + 16);
    off = 18;
  }
  if (et != 0x0800 || len < off + 20) return Decap{};
  const uint8_t* ip = d + off;
  if ((ip[0] >> 4) != 4) return Decap{};
  const uint32_t ihl = (ip[0] & 0x0F) * 4u;
  if (ihl < 20 || len < off + ihl + 4) return Decap{};
  return udp_tunnel_outer_at(d, len, off, ihl, c, w, hdr_min, hdr, not_ours);
}

// The common outer frame's fixed fields against c.outer (prepare_outer_match):
// this VTEP's MAC, IPv4 without options, not a fragment, UDP to this VTEP's
// address and port (from the one remote, when it is one). Three 16-byte
// compares under a mask.
inline bool outer_matches(const uint8_t* d, const OuterMatch& m) {
  using V = uint8_t __attribute__((vector_size(16)));
  static_assert(kOuterMatchLen == 48);
  V x = {}, acc = {};
  for (uint32_t k = 0; k < kOuterMatchLen; k += 16) {
    V h, mk;
    memcpy(&x, d + k, 16);
    memcpy(&h, m.hdr + k, 16);
    memcpy(&mk, m.mask + k, 16);
    acc |= (x ^ h) & mk;
  }
  uint64_t a, b;
  memcpy(&a, &acc, 8);
  memcpy(&b, reinterpret_cast<const uint8_t*>(&acc) + 8, 8);
  return (a | b) == 0;
}

// The outer headers of a frame to this VTEP's `udp_port`: Ethernet (one
// VLAN tag at most), IPv4 to `local`, UDP. Only from a configured remote
// VTEP (unless any_remote), to this VTEP's MAC, with a good outer IPv4
// checksum, not a fragment, with UDP and IP lengths that agree and at least
// `hdr_min` bytes of the tunnel's header. On success r.why is kCount,
// r.l3 and r.end are set and *hdr is the tunnel header (r.off stays 0: the
// module sets it); `not_ours` says the frame is not this tunnel's at all.
// The common frame (no VLAN tag, IPv4 without options) inline, with its
// constants (~15 instructions a decapsulated packet fewer, results/s14-33);
// first its fixed fields in one masked compare (outer_matches) and the
// rest of what udp_tunnel_outer_at checks: a frame that passes is what
// udp_tunnel_outer_at decapsulates, and any other takes the checks one by
// one (which say why it is dropped, or that it is not this tunnel's).
[[gnu::always_inline]] inline Decap udp_tunnel_outer(const uint8_t* d, uint32_t len, const TunnelConfig& c,
                                                     const DecapWhy& w, uint32_t hdr_min, const uint8_t** hdr,
                                                     bool* not_ours) {
  *not_ours = true;
  if (c.outer.on && len >= kOuterMatchLen && len >= 14 + 20 + 8 + hdr_min && outer_matches(d, c.outer)) [[likely]] {
    const uint8_t* ip = d + 14;
    const uint32_t iplen = net::get16(ip + 2), ulen = net::get16(ip + 20 + 4);
    if (net::ipv4_checksum_ok(ip, 20) && (c.outer.remote || c.any_remote || c.remote(ip + 12)) &&
        iplen >= 20 + 8 + hdr_min && ulen == iplen - 20 && 14 + iplen <= len) [[likely]] {
      *not_ours = false;
      Decap r;
      r.why = DropWhy::kCount;
      r.l3 = 14;
      r.end = 14 + iplen;
      *hdr = ip + 20 + 8;
      return r;
    }
  }
  if (len >= 14 + 20 + 4 && net::get16(d + 12) == 0x0800 && d[14] == 0x45) [[likely]]
    return udp_tunnel_outer_at(d, len, 14, 20, c, w, hdr_min, hdr, not_ours);
  return udp_tunnel_outer_other(d, len, c, w, hdr_min, hdr, not_ours);
}

// The inner frame after `hdr_len` bytes of tunnel header at `hdr`: it must
// hold an Ethernet header within the outer datagram.
inline void decap_inner(Decap& r, const uint8_t* d, const uint8_t* hdr, uint32_t hdr_len, DropWhy trunc) {
  const uint32_t off = static_cast<uint32_t>(hdr - d) + hdr_len;
  if (off + 14 > r.end) {
    r.why = trunc;
    return;
  }
  r.off = static_cast<uint16_t>(off);
}

// The UDP source port of an encapsulated flow: its inner tuple's hash in
// the dynamic range (RFC 7348 section 5, RFC 8926 section 3.3: entropy for
// ECMP).
// encap_sport_of_hash: from that hash (ctrack::hash_canonical of the tuple
// in zone 0: what a conntrack lookup in zone 0 computed already).
inline uint16_t encap_sport_of_hash(uint32_t h) { return static_cast<uint16_t>(49152 + h % 16384); }
inline uint16_t encap_sport(const ctrack::Key& k) {
  ctrack::Key c;
  ctrack::canonicalize(k, &c);
  c.zone = 0;
  return encap_sport_of_hash(ctrack::hash_key(c));
}
// What turns the hash of a canonical tuple in zone `zone` (a conntrack
// lookup's, Found::hash) into the same tuple's hash in zone 0, by XOR:
// hash_key is CRC32C over the key's words, affine over GF(2), so changing
// the zone field changes every key's hash by one constant. The pipeline
// keeps its cache zone's (Pipeline::sport_fix_); a hit's source port is
// then encap_sport_of_hash(hash ^ fix), what encap_sport gives its tuple.
// Only where ctrack::detail::kHashAffine (a build without a CRC32C instruction
// hashes otherwise, and the flow cache hashes the tuple again there).
inline uint32_t zone0_hash_fix(uint16_t zone) {
  ctrack::Key a{}, z{};
  a.zone = zone;
  return ctrack::hash_key(a) ^ ctrack::hash_key(z);
}

// c.outer, from the rest of c (control path: when a pipeline is built).
// The fields udp_tunnel_outer_at checks for equality, at their offsets in
// the common frame: destination MAC (this VTEP's), ethertype IPv4, version
// 4 and a 20-byte header, the fragment offset and MF (zero; DF and the
// reserved bit as they come), protocol UDP, destination address (local),
// destination port (udp_port); the source address when one remote is
// configured and not any_remote.
inline void prepare_outer_match(TunnelConfig& c) {
  OuterMatch& m = c.outer;
  m = OuterMatch{};
  if (!c.on) return;
  auto want = [&](uint32_t off, const uint8_t* v, const uint8_t* mask, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
      m.hdr[off + k] = v[k] & mask[k];
      m.mask[off + k] = mask[k];
    }
  };
  static constexpr uint8_t ff[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  const uint8_t ether[2] = {0x08, 0x00}, vihl[1] = {0x45}, frag[2] = {0, 0}, frag_mask[2] = {0x3F, 0xFF};
  const uint8_t udp[1] = {IPPROTO_UDP};
  uint8_t port[2];
  net::put16(port, c.udp_port);
  want(0, c.mac, ff, 6);
  want(12, ether, ff, 2);
  want(14, vihl, ff, 1);
  want(14 + 6, frag, frag_mask, 2);
  want(14 + 9, udp, ff, 1);
  want(14 + 16, c.local, ff, 4);
  want(14 + 20 + 2, port, ff, 2);
  if (!c.any_remote && c.remotes.size() == 1) {
    want(14 + 12, c.remotes[0].ip, ff, 4);
    m.remote = true;
  }
  m.on = true;
}

// The outer Ethernet, IPv4 and UDP headers of an encap toward `r`, all but
// the per-packet fields (IPv4 total length and checksum, UDP length and
// source port: zero); the tunnel's header goes at the returned offset.
inline uint32_t put_udp_outer_template(uint8_t* hdr, const TunnelConfig& c, const TunnelRemote& r) {
  uint8_t* ip = hdr + net::put_eth(hdr, r.mac, c.mac, net::kEthIpv4);
  net::put_ipv4(ip, {c.local, r.ip, IPPROTO_UDP, 0, c.ttl, c.df});
  net::put16(ip + 10, 0);  // (the checksum: per packet)
  net::put_udp(ip + net::kIpv4Len, 0, c.udp_port, 0);
  return net::kEthLen + net::kIpv4Len + net::kUdpLen;
}

}  // namespace dp
