// Per packet: the outer headers of encap(<tunnel>,...) from the template
// the tunnel module built, with the lengths, the IPv4 header checksum and
// the UDP source port. Every tunnel is UDP over IPv4: one writer, inline
// (apply_tunnel, overlay/mbuf.h: no call per encapsulated packet).
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/pipeline.h"
#include "net/bytes.h"
#include "net/checksum.h"
#include "net/headers.h"

namespace dp {

inline void write_outer(uint8_t* h, const Pipeline::Encap& e, uint32_t inner_len, uint16_t sport) {
  if (e.len >= 32 && e.len <= 64) {  // (VXLAN's 50, Geneve's without options): two fixed copies, no call
    memcpy(h, e.hdr, 32);
    memcpy(h + e.len - 32, e.hdr + e.len - 32, 32);
  } else {
    memcpy(h, e.hdr, e.len);
  }
  uint8_t* ip = h + net::kEthLen;
  const uint32_t total = inner_len + (e.len - net::kEthLen);
  net::put16(ip + 2, static_cast<uint16_t>(total));
  net::put16(ip + 10, net::finish(e.ip_sum + total));
  uint8_t* udp = ip + net::kIpv4Len;
  net::put16(udp, sport);
  net::put16(udp + 4, static_cast<uint16_t>(total - net::kIpv4Len));
}

}  // namespace dp
