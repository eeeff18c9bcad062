// Internal: the connection array and its cuckoo hash index.
//
// One index entry per connection, under the canonical key (see key.h), so a
// connection is found from either direction with one probe sequence. Buckets
// are one cache line with 10 slots (16-bit signature + 32-bit connection
// index); each key has two candidate buckets, b1 from the hash and
// b2 = alt(b1, sig), an involution that works for any bucket count, so the
// table is sized to the capacity (90% load) instead of a power of two.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctrack/key.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace ctrack::detail {

inline constexpr int kSlots = 10;
inline constexpr uint32_t kEmpty = 0xFFFFFFFFu;
// An index slot naming a translated connection's reply side: the entry is
// found under the canonical form of its reply tuple (NatExt::rkey), not its
// key. Connection indices stay below 2^31 (Tracker::create checks).
inline constexpr uint32_t kNatTag = 0x80000000u;

struct alignas(64) Bucket {
  uint16_t sig[kSlots];
  uint16_t pad[2];
  uint32_t idx[kSlots];
};
static_assert(sizeof(Bucket) == 64);

// One tracked connection: 120 bytes. Direction-indexed arrays use 0 for the
// original direction (the first packet's), 1 for the reply.
struct Conn {
  Key key;             // canonical orientation (immutable while alive)
  uint32_t expires;    // ms on the tracker clock
  uint32_t created;    // ms; next free entry while on the free list
  uint8_t state;       // TcpState / UdpState / 0
  uint8_t flags;       // ConnFlag
  uint8_t last_index;  // TCP: bits 0-2 flag index, bit 3 direction, bits 4-7 wscale of an ignored SYN
  uint8_t last_flags;  // TCP: TcpDirFlag bits of an ignored SYN
  uint32_t td_end[2];
  uint32_t td_maxend[2];
  uint32_t td_maxwin[2];
  uint8_t td_scale[2];
  uint8_t td_flags[2];
  uint32_t last_end;
  uint16_t last_win;
  uint8_t in_port[2];  // Packet::in_port last seen per direction
  uint64_t packets[2];
  uint64_t bytes[2];
};
static_assert(sizeof(Conn) == 120, "bytes per connection is part of the bar");

// A translated connection's second tuple, kept apart from Conn (so that a
// tracker without NAT stays at 120 bytes per connection): allocated for
// every entry only when the tracker is created with Config::nat.
struct NatExt {
  Key rkey;            // canonical form of the reply tuple (its index key)
  uint8_t kind;        // 0: not translated; NatKind
  uint8_t rcanon;      // the reply tuple, as replies travel, is rkey's orientation
};

enum ConnFlag : uint8_t {
  kAlive = 0x01,
  kOrigCanon = 0x02,  // the original direction is the canonical orientation
  kSeenReply = 0x04,
  kAssured = 0x08,
  kOffloaded = 0x10,
  kNoOffload = 0x20,
  kEvented = 0x40,    // an kEstablished event went out: kDestroyed must follow
  kClosingSent = 0x80,
};

// Bit j set when slot j's signature equals s (empty slots may match too).
inline uint32_t match_mask(const Bucket& b, uint16_t s) {
#if defined(__SSE2__)
  const __m128i k = _mm_set1_epi16(static_cast<short>(s));
  const __m128i lo = _mm_cmpeq_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(b.sig)), k);      // slots 0-7
  const __m128i hi = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.sig + 2)), k);  // slots 2-9
  uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
  return (m & 0xFFu) | ((m >> 6) & 0x300u);
#elif defined(__ARM_NEON) && defined(__aarch64__)
  // Each equal lane keeps its own bit, and one horizontal add gathers them.
  static constexpr uint16_t kBits[8] = {1, 2, 4, 8, 16, 32, 64, 128};
  const uint16x8_t bits = vld1q_u16(kBits);
  const uint16x8_t k = vdupq_n_u16(s);
  const uint32_t lo = vaddvq_u16(vandq_u16(vceqq_u16(vld1q_u16(b.sig), k), bits));      // slots 0-7
  const uint32_t hi = vaddvq_u16(vandq_u16(vceqq_u16(vld1q_u16(b.sig + 2), k), bits));  // slots 2-9
  return lo | (hi >> 6) << 8;
#elif defined(__ARM_NEON)
  const uint16x8_t k = vdupq_n_u16(s);
  const uint8x8_t lo = vmovn_u16(vceqq_u16(vld1q_u16(b.sig), k));
  const uint8x8_t hi = vmovn_u16(vceqq_u16(vld1q_u16(b.sig + 2), k));
  uint64_t l = vget_lane_u64(vreinterpret_u64_u8(lo), 0), h = vget_lane_u64(vreinterpret_u64_u8(hi), 0);
  uint32_t m = 0;
  for (int j = 0; j < 8; j++) m |= static_cast<uint32_t>((l >> (8 * j)) & 1) << j;
  m |= static_cast<uint32_t>((h >> 48) & 1) << 8 | static_cast<uint32_t>((h >> 56) & 1) << 9;
  return m;
#else
  uint32_t m = 0;
  for (int j = 0; j < kSlots; j++) m |= static_cast<uint32_t>(b.sig[j] == s) << j;
  return m;
#endif
}

class Table {
 public:
  Table() = default;
  ~Table();
  bool init(uint32_t capacity, bool nat);  // false on allocation failure

  uint32_t nbuckets() const { return nb_; }
  Bucket* buckets() const { return b_; }
  Conn* conns() const { return c_; }
  NatExt* nat() const { return n_; }
  // The key an index slot is found under.
  const Key& slot_key(uint32_t e) const { return (e & kNatTag) ? n_[e & ~kNatTag].rkey : c_[e].key; }

  uint32_t b1(uint32_t h) const { return static_cast<uint32_t>((static_cast<uint64_t>(h) * nb_) >> 32); }
  static uint16_t sig(uint32_t h) { return static_cast<uint16_t>(h); }
  uint32_t alt(uint32_t b, uint16_t s) const {
    uint32_t H = static_cast<uint32_t>((static_cast<uint64_t>(s * 0x9E3779B1u) * nb_) >> 32);
    return H >= b ? H - b : H + nb_ - b;
  }

  // Finds the connection with canonical key k, or kEmpty.
  uint32_t find(const Key& k, uint32_t h) const;
  // Adds idx under hash h. False when no slot could be freed (table full).
  bool insert(uint32_t h, uint32_t idx);
  // Removes idx (whose key hashes to h). False if not found.
  bool erase(uint32_t h, uint32_t idx);

  // The index and the NAT side table (the connection array is the caller's to count).
  size_t bytes() const { return static_cast<size_t>(nb_) * sizeof(Bucket) + nmap_bytes_; }

 private:
  bool place(uint32_t b, uint16_t s, uint32_t idx);
  Bucket* b_ = nullptr;
  Conn* c_ = nullptr;
  NatExt* n_ = nullptr;
  uint32_t nb_ = 0;
  size_t bmap_ = 0, cmap_ = 0, nmap_ = 0, nmap_bytes_ = 0;
  uint32_t rng_ = 0x2545F491u;
};

}  // namespace ctrack::detail
