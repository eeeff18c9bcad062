// Header builders and readers for the outer headers every part writes:
// Ethernet, IPv4, UDP and VXLAN (RFC 7348). Each writes at a pointer and
// returns its length; nothing allocates. What harness-gen, ctrack's frame
// builder, the pipeline's encap template and the NIC model build with
// these is compared with scapy's layers (common/tests/net_test.cc).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstring>

#include "net/bytes.h"
#include "net/checksum.h"

namespace net {

inline constexpr uint16_t kEthIpv4 = 0x0800, kEthIpv6 = 0x86DD, kEthVlan = 0x8100;
inline constexpr uint32_t kEthLen = 14, kIpv4Len = 20, kIpv6Len = 40, kUdpLen = 8;
inline constexpr uint16_t kVxlanPort = 4789;  // IANA
inline constexpr uint32_t kVxlanLen = 8;
// Ethernet + IPv4 + UDP + VXLAN before the inner frame.
inline constexpr uint32_t kVxlanOuterV4 = kEthLen + kIpv4Len + kUdpLen + kVxlanLen;
inline constexpr uint8_t kVxlanFlagI = 0x08;  // the VNI is valid
// Geneve (RFC 8926): an 8-byte base header, then options in 4-byte units.
inline constexpr uint16_t kGenevePort = 6081;  // IANA
inline constexpr uint32_t kGeneveLen = 8;
inline constexpr uint32_t kGeneveOptsMax = 63 * 4;  // Opt Len is 6 bits of 4-byte words
inline constexpr uint16_t kGeneveEth = 0x6558;      // Transparent Ethernet Bridging: an Ethernet frame
inline constexpr uint8_t kGeneveFlagO = 0x80, kGeneveFlagC = 0x40;  // the second byte: control, critical
inline constexpr uint8_t kGeneveOptCritical = 0x80;  // an option type's critical bit

inline uint32_t put_eth(uint8_t* p, const uint8_t dst[6], const uint8_t src[6], uint16_t type) {
  memcpy(p, dst, 6);
  memcpy(p + 6, src, 6);
  put16(p + 12, type);
  return kEthLen;
}

// An IPv4 header without options, id 0 unless given, its checksum written
// (addresses in network order, as in a packet).
struct Ipv4 {
  const uint8_t* src;
  const uint8_t* dst;
  uint8_t proto;
  uint16_t total_len;
  uint8_t ttl = 64;
  bool df = true;
  uint16_t id = 0;
};
inline uint32_t put_ipv4(uint8_t* ip, const Ipv4& h) {
  memset(ip, 0, kIpv4Len);
  ip[0] = 0x45;
  put16(ip + 2, h.total_len);
  put16(ip + 4, h.id);
  put16(ip + 6, h.df ? 0x4000 : 0);
  ip[8] = h.ttl;
  ip[9] = h.proto;
  memcpy(ip + 12, h.src, 4);
  memcpy(ip + 16, h.dst, 4);
  ipv4_set_checksum(ip, kIpv4Len);
  return kIpv4Len;
}

// An IPv6 header: traffic class and flow label 0.
inline uint32_t put_ipv6(uint8_t* ip, const uint8_t src[16], const uint8_t dst[16], uint8_t next, uint16_t payload_len,
                         uint8_t hop_limit = 64) {
  put32(ip, 0x60000000u);
  put16(ip + 4, payload_len);
  ip[6] = next;
  ip[7] = hop_limit;
  memcpy(ip + 8, src, 16);
  memcpy(ip + 24, dst, 16);
  return kIpv6Len;
}

// A TCP header without options, checksum and urgent pointer 0.
inline constexpr uint32_t kTcpLen = 20;
struct Tcp {
  uint16_t sport, dport;
  uint32_t seq, ack;
  uint8_t flags;
  uint16_t win;
  uint8_t options_len = 0;  // bytes of options that follow (a multiple of 4)
};
inline uint32_t put_tcp(uint8_t* tcp, const Tcp& h) {
  put16(tcp, h.sport);
  put16(tcp + 2, h.dport);
  put32(tcp + 4, h.seq);
  put32(tcp + 8, h.ack);
  tcp[12] = static_cast<uint8_t>((kTcpLen + h.options_len) / 4 << 4);
  tcp[13] = h.flags;
  put16(tcp + 14, h.win);
  put32(tcp + 16, 0);
  return kTcpLen;
}

// A UDP header, checksum 0 (none: what VXLAN's outer header sends, RFC 7348
// section 5; l4_checksum fills it where one is wanted).
inline uint32_t put_udp(uint8_t* udp, uint16_t sport, uint16_t dport, uint16_t len) {
  put16(udp, sport);
  put16(udp + 2, dport);
  put16(udp + 4, len);
  put16(udp + 6, 0);
  return kUdpLen;
}

// VXLAN: flags I, the VNI, reserved bytes zero.
inline uint32_t put_vxlan(uint8_t* vx, uint32_t vni) {
  memset(vx, 0, kVxlanLen);
  vx[0] = kVxlanFlagI;
  put32(vx + 4, vni << 8);
  return kVxlanLen;
}
inline uint32_t vxlan_vni(const uint8_t* vx) { return get32(vx + 4) >> 8; }
inline bool vxlan_has_vni(const uint8_t* vx) { return vx[0] & kVxlanFlagI; }

// Geneve's base header: version 0, Opt Len from opts_len (bytes of
// options, which the caller writes after it, put_geneve_opt), O clear, C as
// given (an option has its critical bit), protocol type, VNI.
inline uint32_t put_geneve(uint8_t* g, uint32_t vni, uint32_t opts_len, bool critical, uint16_t proto = kGeneveEth) {
  g[0] = static_cast<uint8_t>((opts_len / 4) & 0x3F);
  g[1] = critical ? kGeneveFlagC : 0;
  put16(g + 2, proto);
  put32(g + 4, vni << 8);
  return kGeneveLen;
}
inline uint32_t geneve_version(const uint8_t* g) { return g[0] >> 6; }
inline uint32_t geneve_opts_len(const uint8_t* g) { return (g[0] & 0x3Fu) * 4u; }
inline uint16_t geneve_proto(const uint8_t* g) { return get16(g + 2); }
inline uint32_t geneve_vni(const uint8_t* g) { return get32(g + 4) >> 8; }
// One option: class, type, then `len` bytes of data (a multiple of 4, at
// most 124: Length is 5 bits of 4-byte words).
inline uint32_t put_geneve_opt(uint8_t* o, uint16_t cls, uint8_t type, const uint8_t* data, uint32_t len) {
  put16(o, cls);
  o[2] = type;
  o[3] = static_cast<uint8_t>((len / 4) & 0x1F);
  memcpy(o + 4, data, len);
  return 4 + len;
}
inline uint16_t geneve_opt_class(const uint8_t* o) { return get16(o); }
inline uint8_t geneve_opt_type(const uint8_t* o) { return o[2]; }
inline uint32_t geneve_opt_len(const uint8_t* o) { return 4u + (o[3] & 0x1Fu) * 4u; }  // with its header

// The outer headers of a VXLAN frame over IPv4 for an inner frame of
// inner_len bytes, at out (kVxlanOuterV4 bytes; the inner frame follows).
struct VxlanOuter {
  const uint8_t* dmac;
  const uint8_t* smac;
  const uint8_t* src;  // the sending VTEP, network order
  const uint8_t* dst;
  uint32_t vni;
  uint16_t sport;
  uint16_t dport = kVxlanPort;
  uint8_t ttl = 64;
  bool df = true;
};
inline uint32_t put_vxlan_outer_v4(uint8_t* out, const VxlanOuter& o, uint32_t inner_len) {
  const uint32_t udp_len = kUdpLen + kVxlanLen + inner_len;
  uint8_t* p = out + put_eth(out, o.dmac, o.smac, kEthIpv4);
  p += put_ipv4(p, {o.src, o.dst, IPPROTO_UDP, static_cast<uint16_t>(kIpv4Len + udp_len), o.ttl, o.df});
  p += put_udp(p, o.sport, o.dport, static_cast<uint16_t>(udp_len));
  put_vxlan(p, o.vni);
  return kVxlanOuterV4;
}

}  // namespace net
