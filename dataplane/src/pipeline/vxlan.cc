// The outer headers of encap(vxlan,...), per packet: the template the
// pipeline built (compile.cc) with the lengths, checksum and source port.
#include "nat_rewrite.h"
#include "net/headers.h"
#include "vxlan.h"

namespace dp {

void Pipeline::write_encap(uint8_t* h, uint16_t idx, uint32_t inner_len, uint16_t sport) const {
  const Encap& e = encaps_[idx - 1u];
  memcpy(h, e.hdr, kVxlanOverhead);
  uint8_t* ip = h + net::kEthLen;
  const uint32_t total = inner_len + (kVxlanOverhead - net::kEthLen);
  net::put16(ip + 2, static_cast<uint16_t>(total));
  net::put16(ip + 10, net::finish(e.ip_sum + total));
  uint8_t* udp = ip + net::kIpv4Len;
  net::put16(udp, sport);
  net::put16(udp + 4, static_cast<uint16_t>(total - net::kIpv4Len));
}

void Pipeline::encap_header(uint16_t idx, const ctrack::Key& arrival, uint8_t out[kVxlanOverhead]) const {
  memcpy(out, encaps_[idx - 1u].hdr, kVxlanOverhead);
  net::put16(out + net::kEthLen + net::kIpv4Len, encap_sport(arrival));
}

}  // namespace dp
