// The outer headers of encap(vxlan,...), per packet: the template the
// pipeline built (compile.cc) with the lengths, checksum and source port.
#include "nat_rewrite.h"
#include "vxlan.h"

namespace dp {

void Pipeline::write_encap(uint8_t* h, uint16_t idx, uint32_t inner_len, uint16_t sport) const {
  const Encap& e = encaps_[idx - 1u];
  memcpy(h, e.hdr, kVxlanOverhead);
  uint8_t* ip = h + 14;
  const uint32_t total = inner_len + (kVxlanOverhead - 14);
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  const uint16_t csum = static_cast<uint16_t>(~nat::fold(e.ip_sum + total));
  ip[10] = static_cast<uint8_t>(csum >> 8);
  ip[11] = static_cast<uint8_t>(csum);
  uint8_t* udp = ip + 20;
  udp[0] = static_cast<uint8_t>(sport >> 8);
  udp[1] = static_cast<uint8_t>(sport);
  const uint32_t ulen = total - 20;
  udp[4] = static_cast<uint8_t>(ulen >> 8);
  udp[5] = static_cast<uint8_t>(ulen);
}

void Pipeline::encap_header(uint16_t idx, const ctrack::Key& arrival, uint8_t out[kVxlanOverhead]) const {
  memcpy(out, encaps_[idx - 1u].hdr, kVxlanOverhead);
  const uint16_t sport = encap_sport(arrival);
  out[34] = static_cast<uint8_t>(sport >> 8);
  out[35] = static_cast<uint8_t>(sport);
}

}  // namespace dp
