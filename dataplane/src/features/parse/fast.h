// The parse of the frame an established connection sends most: untagged
// Ethernet, IPv4 without options and not a fragment, TCP without options.
// It writes exactly what ctrack::parse_packet writes for such a frame (the
// differential test in tests/pipeline_test.cc, ParseFast.*, compares the
// two over mutated frames); any other frame is left to parse_packet.
// Inlined into the rx stage: parse_packet is an out-of-line call through a
// VLAN loop, a family test, an extension-header loop and a protocol switch
// (~136 instructions a packet), this ~40.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstring>

#include "ctrack/parse.h"
#include "net/bytes.h"

namespace dp {

// True: *out is parse_packet(d, len, 0, out)'s, which returned kNone.
// False: not such a frame; *out is unspecified (call parse_packet).
__attribute__((always_inline)) inline bool parse_tcp4_plain(const uint8_t* d, uint32_t len, ctrack::Parsed* out) {
  if (len < 14 + 20 + 20) return false;
  const uint8_t* ip = d + 14;
  const uint8_t* l4 = ip + 20;
  // Ethertype IPv4, version 4 with IHL 5, protocol TCP, no MF and no
  // offset (DF alone is fine), TCP data offset 5: four compares.
  if (net::get16(d + 12) != 0x0800 || ip[0] != 0x45 || ip[9] != IPPROTO_TCP || (net::get16(ip + 6) & 0x3FFF) ||
      (l4[12] >> 4) != 5)
    return false;
  const uint32_t tot = net::get16(ip + 2);
  if (tot < 40 || tot > len - 14) return false;  // (parse_packet: kIpLen, or kTruncL4 under 40)
  static_assert(sizeof(ctrack::Parsed) == 128);
  memset(static_cast<void*>(out), 0, 64);
  memset(reinterpret_cast<char*>(out) + 64, 0, 64);
  ctrack::Parsed& r = *out;
  ctrack::Packet& p = r.ct;
  memcpy(p.key.src, ip + 12, 4);
  memcpy(p.key.dst, ip + 16, 4);
  p.key.sport = net::get16(l4);
  p.key.dport = net::get16(l4 + 2);
  p.key.proto = IPPROTO_TCP;
  p.key.family = 4;
  p.seq = net::get32(l4 + 4);
  p.ack = net::get32(l4 + 8);
  p.win = net::get16(l4 + 14);
  p.payload_len = static_cast<uint16_t>(tot - 40);
  p.l3_len = static_cast<uint16_t>(tot);
  p.tcp_flags = l4[13];
  p.l2_len = 14;
  r.ethertype = 0x0800;
  r.l3_off = 14;
  r.l4_off = 34;
  r.kind = ctrack::L3Kind::kIp;
  r.ttl = ip[8];
  return true;
}

}  // namespace dp
