// Frame builder: Ethernet + IPv4/IPv6 + TCP/UDP/ICMP with correct checksums.
// For tests, benchmarks and traffic generators; not used per packet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctrack {

struct FrameSpec {
  uint8_t src_mac[6] = {0x02, 0, 0, 0, 0, 1};
  uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 2};
  int vlan = -1;          // >= 0: one 802.1Q tag
  std::string src = "10.0.0.1", dst = "10.0.0.2";  // IPv4 or IPv6 text
  uint8_t proto = 6;      // IPPROTO_*
  uint16_t sport = 1000, dport = 80;
  uint32_t seq = 0, ack = 0;
  uint8_t tcp_flags = 0x02;
  uint16_t win = 65535;
  std::vector<uint8_t> tcp_options;  // raw, padded to 4 bytes by the builder
  uint8_t icmp_type = 8, icmp_code = 0;
  uint16_t icmp_id = 1, icmp_seq = 1;
  std::vector<uint8_t> inner;  // ICMP error: the embedded packet (IP header onward)
  uint16_t ip_id = 1;
  bool df = true;              // IPv4: Don't Fragment
  uint8_t ttl = 64;
  size_t payload = 0;          // bytes of 0x5a after the L4 header
};

// Builds the frame; the IP header onward starts at offset 14 (18 with a VLAN tag).
std::vector<uint8_t> build_frame(const FrameSpec& s);

// `inner` in VXLAN (RFC 7348, the I flag, VNI `vni`) over UDP to 4789 from
// `outer`'s addresses, MACs and source port (its other fields ignored);
// UDP checksum 0.
std::vector<uint8_t> vxlan_frame(FrameSpec outer, uint32_t vni, const std::vector<uint8_t>& inner);

// A built frame's IP datagram in fragments of at most `mtu` bytes of IP
// each (RFC 791: MF and offset in 8-byte units, DF clear; RFC 8200: a
// Fragment header with identification `id6` after the fixed header, which
// must be the only one), each with the frame's Ethernet header and tag.
std::vector<std::vector<uint8_t>> fragment_frame(const std::vector<uint8_t>& frame, uint16_t mtu, uint32_t id6 = 1);

}  // namespace ctrack
