// What the tracker needs to know about one packet, filled in by the parser
// (ctrack/parse.h) or by any other front end.
#pragma once

#include <cstdint>

#include "ctrack/key.h"

namespace ctrack {

// TCP header flag bits, as on the wire.
enum TcpFlag : uint8_t {
  kFin = 0x01,
  kSyn = 0x02,
  kRst = 0x04,
  kPsh = 0x08,
  kAck = 0x10,
  kUrg = 0x20,
  kEce = 0x40,
  kCwr = 0x80,
};

// Packet::meta bits.
enum PacketMeta : uint8_t {
  kMetaFragment = 0x01,   // a later IP fragment: no L4 header. Its ports are its first fragment's, which
                          // the front end remembers (dataplane: the fragment table); it follows that
                          // connection (counted, TCP state untouched) and never starts one
  kMetaIcmpError = 0x02,  // ICMP error; key is the embedded packet's tuple
  kMetaWscale = 0x04,     // TCP window-scale option present (wscale valid)
  kMetaSackPerm = 0x08,   // TCP SACK-permitted option present
  kMetaSack = 0x10,       // TCP SACK blocks present (sack = highest right edge)
  kMetaIcmpEcho = 0x20,   // ICMP/ICMPv6 echo request or reply
  kMetaCounted = 0x40,    // an earlier ct() of the same packet counted it: do not count it again
  kMetaNoOffload = 0x80,  // a connection it starts stays in software (the front end decapsulated it)
};

struct alignas(64) Packet {
  Key key;               // as seen on the wire (src -> dst)
  uint32_t seq = 0;      // TCP fields in host order
  uint32_t ack = 0;
  uint32_t sack = 0;
  uint16_t win = 0;
  uint16_t payload_len = 0;  // L4 payload bytes
  uint16_t l3_len = 0;       // bytes accounted (IP datagram length)
  uint8_t tcp_flags = 0;
  uint8_t wscale = 0;
  uint8_t meta = 0;
  uint8_t icmp_type = 0;
  uint8_t in_port = 0;   // front end's ingress port; kept per direction for the offload provider
  uint8_t l2_len = 0;    // Ethernet header with its VLAN tags: what a NIC's byte counter adds to l3_len
};
static_assert(sizeof(Packet) == 64, "one cache line per parsed packet");

}  // namespace ctrack
