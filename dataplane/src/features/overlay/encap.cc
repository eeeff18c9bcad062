// The outer headers of encap(<tunnel>,...): the template the tunnel module
// built (Pipeline::build, compile.cc) with the lengths, checksum and source
// port (features/overlay/outer.h, inline where packets are).
#include "features/overlay/outer.h"
#include "features/overlay/tunnel.h"
#include "net/headers.h"

namespace dp {

void Pipeline::write_encap(uint8_t* h, uint16_t idx, uint32_t inner_len, uint16_t sport) const {
  write_outer(h, encap(idx), inner_len, sport);
}

uint16_t Pipeline::encap_header(uint16_t idx, const ctrack::Key& arrival, uint8_t out[kOuterMax]) const {
  const Encap& e = encaps_[idx - 1u];
  memcpy(out, e.hdr, e.len);
  net::put16(out + net::kEthLen + net::kIpv4Len, encap_sport(arrival));
  return e.len;
}

}  // namespace dp
