// Network byte order reads and writes at a byte pointer: the one copy the
// pipeline, ctrack, harness-gen and the NIC model share (no alignment
// needed, no ntohs on a cast pointer).
#pragma once

#include <cstdint>

namespace net {

inline uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t get32(const uint8_t* p) { return static_cast<uint32_t>(get16(p)) << 16 | get16(p + 2); }
inline void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}

}  // namespace net
