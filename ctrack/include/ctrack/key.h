// Connection keys: IPv4/IPv6 5-tuple plus a 16-bit zone, 40 bytes, no padding.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#elif defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#endif

namespace ctrack {

struct Key {
  uint8_t src[16];  // IPv4 addresses use the first 4 bytes; the rest is zero
  uint8_t dst[16];
  uint16_t sport;   // host byte order. ICMP echo: id in sport (request) or dport (reply)
  uint16_t dport;
  uint16_t zone;
  uint8_t proto;    // IPPROTO_*
  uint8_t family;   // 4 or 6

  bool operator==(const Key& o) const { return memcmp(this, &o, sizeof *this) == 0; }
  Key reversed() const {
    Key r = *this;
    memcpy(r.src, dst, 16);
    memcpy(r.dst, src, 16);
    r.sport = dport;
    r.dport = sport;
    return r;
  }
  std::string str() const;  // "tcp 10.0.0.1:1234 -> 10.0.0.2:80 zone 0"
};
static_assert(sizeof(Key) == 40, "Key must stay 40 bytes");
static_assert(std::has_unique_object_representations_v<Key>, "Key must have no padding");
static_assert(std::is_trivially_copyable_v<Key>);

namespace detail {

inline uint64_t load64(const void* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

inline uint32_t crc64(uint32_t crc, uint64_t v) {
#if defined(__SSE4_2__)
  return static_cast<uint32_t>(_mm_crc32_u64(crc, v));
#elif defined(__ARM_FEATURE_CRC32)
  return __crc32cd(crc, v);
#else
  uint64_t x = (v ^ crc) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(x >> 32) ^ static_cast<uint32_t>(x);
#endif
}

}  // namespace detail

// The canonical orientation puts the smaller (address, port) endpoint first,
// so a packet and its reply have the same canonical key. Returns true if `k`
// was already canonical (copied as is), false if it was swapped.
inline bool canonicalize(const Key& k, Key* out) {
  using detail::load64;
  uint64_t s0 = __builtin_bswap64(load64(k.src)), d0 = __builtin_bswap64(load64(k.dst));
  bool swap;
  if (s0 != d0) {
    swap = s0 > d0;
  } else {
    uint64_t s1 = __builtin_bswap64(load64(k.src + 8)), d1 = __builtin_bswap64(load64(k.dst + 8));
    swap = s1 != d1 ? s1 > d1 : k.sport > k.dport;
  }
  if (!swap) {
    *out = k;
    return true;
  }
  *out = k.reversed();
  return false;
}

// 32-bit CRC32-C of a canonical key.
inline uint32_t hash_key(const Key& k) {
  using detail::load64;
  const auto* p = reinterpret_cast<const uint8_t*>(&k);
  uint32_t h = 0x9747b28cu;
  h = detail::crc64(h, load64(p));
  h = detail::crc64(h, load64(p + 8));
  h = detail::crc64(h, load64(p + 16));
  h = detail::crc64(h, load64(p + 24));
  h = detail::crc64(h, load64(p + 32));
  return h;
}

inline bool keys_equal(const Key& a, const Key& b) {
  using detail::load64;
  const auto* x = reinterpret_cast<const uint8_t*>(&a);
  const auto* y = reinterpret_cast<const uint8_t*>(&b);
  return ((load64(x) ^ load64(y)) | (load64(x + 8) ^ load64(y + 8)) | (load64(x + 16) ^ load64(y + 16)) |
          (load64(x + 24) ^ load64(y + 24)) | (load64(x + 32) ^ load64(y + 32))) == 0;
}

}  // namespace ctrack
