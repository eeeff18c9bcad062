// Packet parser: Ethernet bytes -> ctrack::Packet plus the L2/L3 facts the
// dataplane's classifier needs. Never reads past `len`; every malformed packet
// gets a drop reason, so it can be counted and dropped.
//
// Covers Ethernet, 802.1Q/802.1ad (two tags), IPv4 (options, fragments),
// IPv6 (extension-header chain: hop-by-hop, routing, fragment, destination
// options, AH), TCP (options: window scale, SACK-permitted, SACK), UDP,
// ICMP and ICMPv6 (echo by id; errors carry the embedded tuple).
#pragma once

#include <cstdint>

#include "ctrack/packet.h"

namespace ctrack {

enum class L3Kind : uint8_t {
  kIp,     // IPv4/IPv6 with a parsed L4 (or a non-first fragment)
  kArp,    // ARP: passes through, not tracked
  kNd,     // IPv6 neighbour discovery / MLD: passes through, not tracked
  kOther,  // any other ethertype
};

enum class Drop : uint8_t {
  kNone = 0,
  kTruncEth,      // shorter than an Ethernet header
  kTruncVlan,     // VLAN tag cut short
  kVlanDepth,     // more than two VLAN tags
  kTruncIp,       // IP header cut short
  kIpVersion,     // version field does not match the ethertype
  kIpIhl,         // IPv4 IHL < 5 or past the packet
  kIpLen,         // IP total/payload length shorter than the header or longer than the frame
  kIp6Ext,        // IPv6 extension header chain cut short or too long
  kTruncL4,       // L4 header cut short
  kTcpOff,        // TCP data offset < 5 or past the packet
  kUdpLen,        // UDP length field out of range
  kIcmpInner,     // ICMP error whose embedded header is cut short
  kCount,
};
const char* drop_name(Drop d);

// parse_packet clears it in place (memset): every default is zero but kind's.
struct Parsed {
  Packet ct;
  uint16_t vlan = 0;       // outer VLAN id, 0 when untagged
  uint16_t ethertype = 0;  // after VLAN tags
  uint16_t l3_off = 0;
  uint16_t l4_off = 0;
  L3Kind kind = L3Kind::kOther;
  uint8_t icmp_code = 0;
  uint8_t ttl = 0;
  // IP fragments. A first fragment (offset 0, more to come) is parsed with
  // its L4 header (a UDP length may run past it, to the datagram's end); a
  // later one has none (ct.meta has kMetaFragment and no ports).
  uint8_t frag = kFragNone;
  bool frag_more = false;   // MF / M: more fragments follow
  uint16_t frag_start = 0;  // from the IP header: where the fragmentable part starts
  uint32_t frag_id = 0;     // IPv4: the 16-bit identification; IPv6: the fragment header's 32 bits
  uint32_t frag_off = 0;    // this fragment's offset in the fragmentable part, bytes
  uint32_t frag_len = 0;    // and its length there
  static constexpr uint8_t kFragNone = 0, kFragFirst = 1, kFragLater = 2;
};

// Parses one frame. Returns Drop::kNone when the packet may go on.
Drop parse_packet(const uint8_t* data, uint32_t len, uint16_t zone, Parsed* out);

}  // namespace ctrack
