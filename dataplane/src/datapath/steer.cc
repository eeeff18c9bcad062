#include "dataplane/steer.h"

#include <algorithm>

namespace dp {

namespace {
constexpr uint32_t kMaxInput = 36;  // IPv6: 16 + 16 + 2 + 2
}

Steering::Steering(const uint8_t* key, uint32_t key_len, unsigned workers)
    : workers_(workers), table_(kMaxInput * 256, 0) {
  // The 32-bit window of the key that starts at bit i (MSB first); bits past
  // the key's end are zero.
  auto bit = [&](uint32_t i) -> uint32_t { return i / 8 < key_len ? (key[i / 8] >> (7 - i % 8)) & 1 : 0; };
  auto window = [&](uint32_t i) {
    uint32_t w = 0;
    for (uint32_t b = 0; b < 32; b++) w = w << 1 | bit(i + b);
    return w;
  };
  for (uint32_t pos = 0; pos < kMaxInput; pos++)
    for (uint32_t v = 0; v < 256; v++) {
      uint32_t h = 0;
      for (uint32_t b = 0; b < 8; b++)
        if (v & (0x80u >> b)) h ^= window(pos * 8 + b);
      table_[pos * 256 + v] = h;
    }
}

uint32_t Steering::hash(const ctrack::Key& k) const {
  const uint32_t alen = k.family == 6 ? 16 : 4;
  const uint32_t* t = table_.data();
  uint32_t h = 0, pos = 0;
  for (uint32_t i = 0; i < alen; i++, pos++) h ^= t[pos * 256 + k.src[i]];
  for (uint32_t i = 0; i < alen; i++, pos++) h ^= t[pos * 256 + k.dst[i]];
  const uint8_t ports[4] = {static_cast<uint8_t>(k.sport >> 8), static_cast<uint8_t>(k.sport),
                            static_cast<uint8_t>(k.dport >> 8), static_cast<uint8_t>(k.dport)};
  for (uint32_t i = 0; i < 4; i++, pos++) h ^= t[pos * 256 + ports[i]];
  return h;
}

}  // namespace dp
