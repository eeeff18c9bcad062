// One's-complement carries without net::fold()'s loop, for the per-packet
// checksum updates of NAT and the outer header of encap: x + rotr(x, half)
// has the end-around-carry sum of x's two halves in its upper half (the
// carry out of the lower halves' sum lands there too), exact for any x.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace dp::net_fold {

// net::fold(s): s's 16-bit halves added with the end-around carry.
inline uint16_t fold16(uint32_t s) { return static_cast<uint16_t>((s + std::rotr(s, 16)) >> 16); }
// The same for a 64-bit sum of 16-bit words: to 32 bits, then 16.
inline uint16_t fold16(uint64_t s) { return fold16(static_cast<uint32_t>((s + std::rotr(s, 32)) >> 32)); }

// net::adjust32(csum, d): the checksum at `csum` after changes whose
// delta32() sum is d.
inline void adjust32(uint8_t* csum, uint64_t d) {
  uint16_t hc;
  memcpy(&hc, csum, 2);
  hc = static_cast<uint16_t>(~fold16(static_cast<uint16_t>(~hc) + d));
  memcpy(csum, &hc, 2);
}

}  // namespace dp::net_fold
