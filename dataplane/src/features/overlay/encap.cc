// The outer headers of encap(<tunnel>,...), per packet: the template the
// tunnel module built (Pipeline::build, compile.cc) with the lengths,
// checksum and source port. Every tunnel is UDP over IPv4: one writer.
#include "features/overlay/tunnel.h"
#include "net/headers.h"

namespace dp {

void Pipeline::write_encap(uint8_t* h, uint16_t idx, uint32_t inner_len, uint16_t sport) const {
  const Encap& e = encaps_[idx - 1u];
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

uint16_t Pipeline::encap_header(uint16_t idx, const ctrack::Key& arrival, uint8_t out[kOuterMax]) const {
  const Encap& e = encaps_[idx - 1u];
  memcpy(out, e.hdr, e.len);
  net::put16(out + net::kEthLen + net::kIpv4Len, encap_sport(arrival));
  return e.len;
}

}  // namespace dp
