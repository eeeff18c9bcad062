// Connection keys: IPv4/IPv6 5-tuple plus a 16-bit zone, 40 bytes, no padding.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

// The hash is CRC32-C in hardware: SSE4.2 on x86-64 (-march=x86-64-v2 and
// up), the CRC32 extension on aarch64 (-march=armv8-a+crc: every BlueField
// core has it; the cross build's -Dmarch=portable asks for it). A target
// with neither is refused rather than given the slower multiply hash
// silently: -DCTRACK_SCALAR_HASH asks for that one knowingly.
#if defined(__SSE4_2__)
#include <nmmintrin.h>
#elif defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#elif !defined(CTRACK_SCALAR_HASH)
#error "ctrack: no CRC32-C instructions for this -march (x86-64: SSE4.2, e.g. -march=x86-64-v2; aarch64: +crc, e.g. -march=armv8-a+crc); -DCTRACK_SCALAR_HASH builds the portable hash instead"
#endif

namespace ctrack {

struct Key {
  uint8_t src[16];  // IPv4 addresses use the first 4 bytes; the rest must be zero (Tracker::process)
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
inline void store64(void* p, uint64_t v) { memcpy(p, &v, 8); }

// A Key as five words, written in its orientation or reversed (`rev`), in
// whole words: one built field by field and copied on is read back in
// words, and waits on the narrow stores (store forwarding fails). The
// tail word is sport | dport << 16 | zone << 32 | proto << 48 | family << 56.
inline void put_key_words(uint64_t s0, uint64_t s1, uint64_t d0, uint64_t d1, uint64_t tail, bool rev, Key* out) {
  if (rev) {
    std::swap(s0, d0);
    std::swap(s1, d1);
    const uint32_t q = static_cast<uint32_t>(tail);
    tail = (tail & 0xFFFFFFFF00000000ull) | ((q >> 16) | (q << 16));
  }
  auto* o = reinterpret_cast<uint8_t*>(out);
  store64(o, s0);
  store64(o + 8, s1);
  store64(o + 16, d0);
  store64(o + 24, d1);
  store64(o + 32, tail);
}

// Which hash this build uses (ctrack-bench prints it).
inline constexpr const char* kHashImpl =
#if defined(__SSE4_2__)
    "crc32c-sse4.2";
#elif defined(__ARM_FEATURE_CRC32)
    "crc32c-armv8";
#else
    "scalar";
#endif

// Whether hash_key is affine over GF(2), as CRC32C is: changing one field
// then changes every key's hash by one constant of the change (the
// dataplane's zone0_hash_fix relies on it; the scalar mix is not).
inline constexpr bool kHashAffine =
#if defined(__SSE4_2__) || defined(__ARM_FEATURE_CRC32)
    true;
#else
    false;
#endif

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
// crc64 in a chain: the accumulator stays 64 bits wide, so no zero-extension
// between steps (CRC32 reads its accumulator's low 32 bits and zero-extends
// its result). The same values as crc64.
inline uint64_t crc64_acc(uint64_t crc, uint64_t v) {
#if defined(__SSE4_2__)
  return _mm_crc32_u64(crc, v);
#else
  return crc64(static_cast<uint32_t>(crc), v);
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
  uint64_t h = 0x9747b28cu;
  h = detail::crc64_acc(h, load64(p));
  h = detail::crc64_acc(h, load64(p + 8));
  h = detail::crc64_acc(h, load64(p + 16));
  h = detail::crc64_acc(h, load64(p + 24));
  h = detail::crc64_acc(h, load64(p + 32));
  return static_cast<uint32_t>(h);
}

namespace detail {
// hash_canonical, also giving the canonical form's first four bytes of each
// address (src | dst << 32) and its tail word (ctrack's entry compare).
inline uint32_t hash_canonical_words(const Key& k, bool* canon, uint64_t* addr4, uint64_t* tail);
}  // namespace detail

// hash_key(canonical form of k) without building it; *canon is set when k
// already is canonical. The per-packet path uses this.
inline uint32_t hash_canonical(const Key& k, bool* canon) {
  uint64_t a, t;
  return detail::hash_canonical_words(k, canon, &a, &t);
}

inline uint32_t detail::hash_canonical_words(const Key& k, bool* canon, uint64_t* addr4, uint64_t* tail) {
  static_assert(std::endian::native == std::endian::little);
  using detail::load64;
  uint64_t s0 = load64(k.src), s1 = load64(k.src + 8), d0 = load64(k.dst), d1 = load64(k.dst + 8);
  uint64_t ports_tail = load64(&k.sport);  // sport | dport << 16 | zone << 32 | proto << 48 | family << 56
  uint64_t bs0 = __builtin_bswap64(s0), bd0 = __builtin_bswap64(d0);
  bool swap;
  if (bs0 != bd0) {
    swap = bs0 > bd0;
  } else {
    uint64_t bs1 = __builtin_bswap64(s1), bd1 = __builtin_bswap64(d1);
    swap = bs1 != bd1 ? bs1 > bd1 : k.sport > k.dport;
  }
  *canon = !swap;
  if (swap) {
    std::swap(s0, d0);
    std::swap(s1, d1);
    uint32_t p = static_cast<uint32_t>(ports_tail);
    ports_tail = (ports_tail & 0xFFFFFFFF00000000ull) | ((p >> 16) | (p << 16));
  }
  *addr4 = (s0 & 0xFFFFFFFFu) | d0 << 32;
  *tail = ports_tail;
  uint64_t h = 0x9747b28cu;
  h = detail::crc64_acc(h, s0);
  h = detail::crc64_acc(h, s1);
  h = detail::crc64_acc(h, d0);
  h = detail::crc64_acc(h, d1);
  h = detail::crc64_acc(h, ports_tail);
  return static_cast<uint32_t>(h);
}

// a == b.reversed(), without building it.
inline bool keys_equal_reversed(const Key& a, const Key& b) {
  using detail::load64;
  uint64_t pa = load64(&a.sport), pb = load64(&b.sport);
  uint32_t qb = static_cast<uint32_t>(pb);
  pb = (pb & 0xFFFFFFFF00000000ull) | ((qb >> 16) | (qb << 16));
  return ((load64(a.src) ^ load64(b.dst)) | (load64(a.src + 8) ^ load64(b.dst + 8)) | (load64(a.dst) ^ load64(b.src)) |
          (load64(a.dst + 8) ^ load64(b.src + 8)) | (pa ^ pb)) == 0;
}

inline bool keys_equal(const Key& a, const Key& b) {
  using detail::load64;
  const auto* x = reinterpret_cast<const uint8_t*>(&a);
  const auto* y = reinterpret_cast<const uint8_t*>(&b);
  return ((load64(x) ^ load64(y)) | (load64(x + 8) ^ load64(y + 8)) | (load64(x + 16) ^ load64(y + 16)) |
          (load64(x + 24) ^ load64(y + 24)) | (load64(x + 32) ^ load64(y + 32))) == 0;
}

}  // namespace ctrack
