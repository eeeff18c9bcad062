// Packet parser: Ethernet bytes -> ctrack::Packet plus the L2/L3 facts the
// dataplane's classifier needs. Never reads past `len`; every malformed packet
// gets a drop reason, so it can be counted and dropped.
//
// Covers Ethernet, 802.1Q/802.1ad (two tags), IPv4 (options, fragments),
// IPv6 (extension-header chain: hop-by-hop, routing, fragment, destination
// options, AH), TCP (options: window scale, SACK-permitted, SACK), UDP,
// ICMP and ICMPv6 (echo by id; errors carry the embedded tuple).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstring>

#include "ctrack/packet.h"
#include "net/bytes.h"

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

// The lane: the frame most packets are, untagged Ethernet, IPv4 without
// options and not a fragment (DF alone is fine), TCP without options or
// with Linux's on an established segment (NOP, NOP, timestamps: nothing
// parse_packet reads), or UDP with a length that fits. True: *out is
// exactly what parse_packet(data, len, zone, out) writes, and parse_packet
// would return kNone (the tests' ParseLane.* compare the two byte for byte
// over mutated frames). False: not such a frame, *out unspecified: call
// parse_packet. Inlined where it is used: parse_packet is an out-of-line
// call through a VLAN loop, a family test, an extension-header loop and a
// protocol switch (~120 instructions a packet), this ~40. The dataplane's
// rx stage calls it first (features/parse/stage.h); parse() below is the
// two in one.
__attribute__((always_inline)) inline bool parse_ip4_plain(const uint8_t* d, uint32_t len, uint16_t zone,
                                                           Parsed* out) {
  if (len < 14 + 20 + 8) return false;
  const uint8_t* ip = d + 14;
  const uint8_t* l4 = ip + 20;
  const uint8_t proto = ip[9];
  // Ethertype IPv4, version 4 with IHL 5, no MF and no offset.
  if (net::get16(d + 12) != 0x0800 || ip[0] != 0x45 || (net::get16(ip + 6) & 0x3FFF)) return false;
  const uint32_t tot = net::get16(ip + 2);
  if (tot > len - 14) return false;  // (parse_packet: kIpLen)
  uint16_t payload;
  if (proto == IPPROTO_TCP) {
    // A data offset of 5 (no options) inside the datagram (parse_packet:
    // kTruncL4 under 40, kTcpOff); or of 8 with exactly NOP, NOP and a
    // timestamps option, the layout Linux's tcp_options_write gives every
    // segment of a connection with timestamps and no SACK blocks
    // (tcp_options() reads nothing of it: no meta bits).
    // (tot first: with tot <= len - 14, it keeps every read inside len.)
    // No options is the straight path: one untaken branch, and the
    // payload from the data offset either way (a branch per case cost
    // ctrack-bench's OVS case ~5 %, results/s12-33).
    if (tot < 40) return false;
    const uint32_t doff = l4[12] >> 4;
    if (__builtin_expect(doff != 5, 0) && (doff != 8 || tot < 52 || net::get32(l4 + 20) != 0x0101080Au))
      return false;
    payload = static_cast<uint16_t>(tot - 20 - doff * 4);
  } else if (proto == IPPROTO_UDP) {
    // A UDP length from 8 to the datagram's end (parse_packet: kTruncL4
    // under 28, kUdpLen).
    const uint32_t ul = net::get16(l4 + 4);
    if (tot < 28 || ul < 8 || ul > tot - 20) return false;
    payload = static_cast<uint16_t>(ul - 8);
  } else {
    return false;
  }
  // Cleared in 32-byte stores (a 128-byte memset is eight 16-byte ones
  // under GCC's tuning for Zen; two per store where there is no 32-byte
  // register, as on AArch64).
  static_assert(sizeof(Parsed) == 128 && alignof(Parsed) >= 32);
  typedef uint8_t Clear32 __attribute__((vector_size(32), aligned(32), may_alias));
  for (int i = 0; i < 4; i++) reinterpret_cast<Clear32*>(out)[i] = Clear32{};
  Parsed& r = *out;
  Packet& p = r.ct;
  memcpy(p.key.src, ip + 12, 4);
  memcpy(p.key.dst, ip + 16, 4);
  p.key.sport = net::get16(l4);
  p.key.dport = net::get16(l4 + 2);
  p.key.zone = zone;
  p.key.proto = proto;
  p.key.family = 4;
  if (proto == IPPROTO_TCP) {
    p.seq = net::get32(l4 + 4);
    p.ack = net::get32(l4 + 8);
    p.win = net::get16(l4 + 14);
    p.tcp_flags = l4[13];
  }
  p.payload_len = payload;
  p.l3_len = static_cast<uint16_t>(tot);
  p.l2_len = 14;
  r.ethertype = 0x0800;
  r.l3_off = 14;
  r.l4_off = 34;
  r.kind = L3Kind::kIp;
  r.ttl = ip[8];
  return true;
}

// parse_packet with the lane first: for a front end that parses whole
// frames (the benches, a test's packets).
__attribute__((always_inline)) inline Drop parse(const uint8_t* d, uint32_t len, uint16_t zone, Parsed* out) {
  return parse_ip4_plain(d, len, zone, out) ? Drop::kNone : parse_packet(d, len, zone, out);
}

}  // namespace ctrack
