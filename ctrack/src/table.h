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
#include <cstring>

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
// found under the canonical form of its reply tuple (NatHot::rkey), not its
// key. Connection indices stay below 2^31 (Tracker::create checks).
inline constexpr uint32_t kNatTag = 0x80000000u;

struct alignas(64) Bucket {
  uint16_t sig[kSlots];
  uint16_t second;  // bit j: slot j's entry lives in its second bucket (insert's bookkeeping)
  uint16_t pad;
  uint32_t idx[kSlots];
};
static_assert(sizeof(Bucket) == 64);

// One tracked connection: 120 bytes, in two arrays. Conn, one aligned cache
// line, is all that the established path reads and writes (key compare,
// state, windows, timestamps, counters' low bits); ConnCold (56 bytes)
// holds the rest: the IPv6 address bytes beyond the first four, the
// creation time, an ignored SYN's flags and the counters' high bits. An
// IPv4 lookup, and an established packet's update, touch one line of entry
// (a 120-byte entry in one array spans 2.75 lines on average).
// Direction-indexed arrays use 0 for the original direction (the first
// packet's), 1 for the reply.

// The first 16 bytes of a canonical Key: each address's first four bytes
// (all of an IPv4 address) and Key's last 8 (ports, zone, proto, family).
// `family` has kWide set when the addresses' other bytes are not all zero
// (then they are in ConnCold and compared too); Conn's, kConnNat while the
// connection is translated (below).
struct ConnKey {
  uint8_t src4[4];
  uint8_t dst4[4];
  uint16_t sport;
  uint16_t dport;
  uint16_t zone;
  uint8_t proto;
  uint8_t family;  // Key::family | kWide
};
static_assert(sizeof(ConnKey) == 16);
inline constexpr uint8_t kWide = 0x80;

struct alignas(64) Conn {
  ConnKey key;         // canonical orientation (immutable while alive)
  uint32_t expires;    // ms on the tracker clock
  uint8_t state;       // TcpState / UdpState / 0
  uint8_t flags;       // ConnFlag
  uint8_t last_index;  // TCP: bits 0-2 flag index, bit 3 direction, bits 4-7 wscale of an ignored SYN
  uint8_t td_scales;   // TCP: window scale, direction 0 in bits 0-3, direction 1 in bits 4-7 (td_scale())
  uint32_t td_end[2];
  uint32_t td_maxend[2];
  uint32_t td_maxwin[2];
  uint32_t last_end;
  uint16_t last_win;
  uint8_t td_flags[2];
  uint8_t in_port[2];  // Packet::in_port last seen per direction
  uint8_t pk_lo[2];    // packets per direction, low 8 bits (ConnCold::pk_hi: the rest)
  uint16_t by_lo[2];   // bytes per direction, low 16 bits (ConnCold::by_hi: the rest)
};
static_assert(sizeof(Conn) == 64, "the established path reads one cache line");

struct ConnCold {
  uint8_t src_hi[12];  // canonical key's address bytes 4-15 (zero for IPv4)
  uint8_t dst_hi[12];
  uint32_t created;    // ms
  uint8_t last_flags;  // TCP: TcpDirFlag bits of an ignored SYN
  uint8_t pk_hi[2][7];  // packets >> 8, little-endian
  uint8_t by_hi[2][6];  // bytes >> 16, little-endian
  uint8_t pad;
};
static_assert(sizeof(Conn) + sizeof(ConnCold) == 120, "bytes per connection is part of the bar");

inline uint8_t td_scale(const Conn& c, int d) { return static_cast<uint8_t>((c.td_scales >> (4 * d)) & 15); }
inline void set_td_scale(Conn& c, int d, uint8_t v) {
  c.td_scales = static_cast<uint8_t>((c.td_scales & (0xF0 >> (4 * d))) | (v & 15) << (4 * d));
}

// Whether a key's addresses have bytes beyond the first four (IPv6, in practice).
inline bool key_wide(const Key& k) {
  uint32_t a, b;
  memcpy(&a, k.src + 4, 4);
  memcpy(&b, k.dst + 4, 4);
  return (a | b | load64(k.src + 8) | load64(k.dst + 8)) != 0;
}

// Packet counters: Conn keeps the low bits, ConnCold the high ones; a carry
// touches the cold line (every 256 packets at most).
inline uint64_t get_count(uint8_t lo_bytes, uint64_t lo, const uint8_t* hi) {
  uint64_t h = 0;
  memcpy(&h, hi, 8 - lo_bytes);
  return h << (8 * lo_bytes) | lo;
}
inline uint64_t conn_packets(const Conn& c, const ConnCold& x, int d) { return get_count(1, c.pk_lo[d], x.pk_hi[d]); }
inline uint64_t conn_bytes(const Conn& c, const ConnCold& x, int d) { return get_count(2, c.by_lo[d], x.by_hi[d]); }
inline void set_counts(Conn& c, ConnCold& x, int d, uint64_t packets, uint64_t bytes) {
  c.pk_lo[d] = static_cast<uint8_t>(packets);
  c.by_lo[d] = static_cast<uint16_t>(bytes);
  packets >>= 8;
  bytes >>= 16;
  memcpy(x.pk_hi[d], &packets, 7);
  memcpy(x.by_hi[d], &bytes, 6);
}
[[gnu::noinline]] inline void count_carry(Conn& c, ConnCold& x, int d, uint16_t len) {
  set_counts(c, x, d, conn_packets(c, x, d) + 1, conn_bytes(c, x, d) + len);
}
// One packet of len bytes in direction d.
[[gnu::always_inline]] inline void count(Conn& c, ConnCold& x, int d, uint16_t len) {
  const uint32_t b = uint32_t{c.by_lo[d]} + len;
  if (c.pk_lo[d] != 0xFF && b <= 0xFFFF) [[likely]] {
    c.pk_lo[d]++;
    c.by_lo[d] = static_cast<uint16_t>(b);
  } else {
    count_carry(c, x, d, len);
  }
}

// A canonical key's ConnKey and its other address bytes (a connection's
// key: Conn and ConnCold; a translated one's reply tuple: NatHot and NatCold).
inline void store_key(ConnKey& ck, uint8_t* src_hi, uint8_t* dst_hi, const Key& k) {
  memcpy(ck.src4, k.src, 4);
  memcpy(ck.dst4, k.dst, 4);
  ck.sport = k.sport;
  ck.dport = k.dport;
  ck.zone = k.zone;
  ck.proto = k.proto;
  ck.family = static_cast<uint8_t>(k.family | (key_wide(k) ? kWide : 0));
  memcpy(src_hi, k.src + 4, 12);
  memcpy(dst_hi, k.dst + 4, 12);
}
inline void store_key(Conn& c, ConnCold& x, const Key& k) { store_key(c.key, x.src_hi, x.dst_hi, k); }

// ConnKey::family's bits beyond the address family and kWide (NatHot's:
// the translation's kind and orientation).
inline constexpr uint8_t kFamilyMask = 0x0F;
// The cold part is read only for a wide key (an IPv4 one's other bytes are
// zero): a translated reply's tuple is rebuilt from the hot line alone.
inline Key load_key(const ConnKey& ck, const uint8_t* src_hi, const uint8_t* dst_hi) {
  Key k{};
  memcpy(k.src, ck.src4, 4);
  memcpy(k.dst, ck.dst4, 4);
  if (ck.family & kWide) {
    memcpy(k.src + 4, src_hi, 12);
    memcpy(k.dst + 4, dst_hi, 12);
  }
  k.sport = ck.sport;
  k.dport = ck.dport;
  k.zone = ck.zone;
  k.proto = ck.proto;
  k.family = static_cast<uint8_t>(ck.family & kFamilyMask);
  return k;
}
inline Key load_key(const Conn& c, const ConnCold& x) { return load_key(c.key, x.src_hi, x.dst_hi); }

// The canonical key (ck, src_hi, dst_hi), or its reversal, written in whole
// words (put_key_words): what load_key gives, for the per-packet NAT tuple.
[[gnu::always_inline]] inline void put_key(const ConnKey& ck, const uint8_t* src_hi, const uint8_t* dst_hi, bool rev,
                                           Key* out) {
  uint32_t a4, b4;
  memcpy(&a4, ck.src4, 4);
  memcpy(&b4, ck.dst4, 4);
  uint64_t s0 = a4, s1 = 0, d0 = b4, d1 = 0;
  const uint64_t tail = load64(&ck.sport) & ~(uint64_t{static_cast<uint8_t>(~kFamilyMask)} << 56);
  if (ck.family & kWide) {
    uint32_t a, b;
    memcpy(&a, src_hi, 4);
    memcpy(&b, dst_hi, 4);
    s0 |= uint64_t{a} << 32;
    d0 |= uint64_t{b} << 32;
    s1 = load64(src_hi + 4);
    d1 = load64(dst_hi + 4);
  }
  put_key_words(s0, s1, d0, d1, tail, rev, out);
}
inline void put_conn_key(const Conn& c, const ConnCold& x, bool rev, Key* out) {
  put_key(c.key, x.src_hi, x.dst_hi, rev, out);
}

// Is the stored canonical key (ck, src_hi, dst_hi) key k, seen in its
// canonical orientation (canon) or reversed? Two 64-bit compares for IPv4;
// the other address bytes only for a wide key. `ignore`: bits of ck's
// second word that are not the key's (NatHot's).
[[gnu::always_inline]] inline bool key_matches(const ConnKey& ck, const uint8_t* src_hi, const uint8_t* dst_hi,
                                               const Key& k, bool canon, uint64_t ignore = 0) {
  const uint8_t* a = canon ? k.src : k.dst;
  const uint8_t* b = canon ? k.dst : k.src;
  uint32_t a4, b4;
  memcpy(&a4, a, 4);
  memcpy(&b4, b, 4);
  uint64_t tail = load64(&k.sport);  // sport | dport << 16 | zone << 32 | proto << 48 | family << 56
  if (!canon) {
    uint32_t q = static_cast<uint32_t>(tail);
    tail = (tail & 0xFFFFFFFF00000000ull) | ((q >> 16) | (q << 16));
  }
  // (An IPv4 key's other address bytes are zero: key.h.)
  const bool wide = k.family != 4 && key_wide(k);
  tail |= static_cast<uint64_t>(wide ? kWide : 0) << 56;
  const uint64_t lo = uint64_t{a4} | uint64_t{b4} << 32;
  if (((load64(&ck) ^ lo) | ((load64(&ck.sport) ^ tail) & ~ignore)) != 0) return false;
  return !wide || (memcmp(src_hi, a + 4, 12) == 0 && memcmp(dst_hi, b + 4, 12) == 0);
}
// Is the entry (c, x) the connection of key k (seen as key_matches says)?
// (Its family's kConnNat is not the key's: kNatBitsWord, defined below.)
[[gnu::always_inline]] inline bool conn_matches(const Conn& c, const ConnCold& x, const Key& k, bool canon);

// A translated connection's second tuple, the canonical form of its reply
// tuple (the key its second index slot is found under), kept apart from
// Conn (so that a tracker without NAT stays at 120 bytes per connection)
// and allocated for every entry only when the tracker is created with
// Config::nat. Split as Conn and ConnCold are: NatHot, 16 bytes and four
// to a line, is all a packet reads (the 42-byte record it replaces
// straddled two lines for most entries); NatCold holds an IPv6 tuple's
// other address bytes. NatHot's rkey.family: the tuple's family and kWide,
// the NatKind in bits 4-5, kNatRcanon; 0 for an entry not translated.
inline constexpr uint8_t kNatKindShift = 4;
inline constexpr uint8_t kNatRcanon = 0x40;  // the reply tuple, as replies travel, is rkey's orientation
// The bits of rkey's second word (load64(&rkey.sport)) that are not the key's.
inline constexpr uint64_t kNatBitsWord = uint64_t{0x70} << 56;
struct NatHot {
  ConnKey rkey;
};
static_assert(sizeof(NatHot) == 16 && alignof(NatHot) <= 16);
struct NatCold {
  uint8_t src_hi[12];  // rkey's address bytes 4-15 (zero for IPv4)
  uint8_t dst_hi[12];
};
static_assert(sizeof(NatHot) + sizeof(NatCold) == 40, "bytes per translated connection is part of the bar");
// Where each connection's NatHot is: an array (stride 16), or each at the
// start of 32 or 64 bytes whose rest is the caller's
// (Config::nat_caller_bytes).
struct NatLines {
  uint8_t* base = nullptr;
  uint32_t shift = 4;  // log2 of the stride
  NatHot& operator[](uint32_t i) const { return *reinterpret_cast<NatHot*>(base + (size_t{i} << shift)); }
  explicit operator bool() const { return base != nullptr; }
};
inline uint32_t nat_stride_shift(uint32_t caller_bytes) { return caller_bytes == 0 ? 4 : caller_bytes <= 16 ? 5 : 6; }
inline bool nat_translated(const NatHot& n) { return n.rkey.family != 0; }
// The same said by the entry's own line: Conn::key.family carries
// kConnNat while the connection is translated (set with its NatHot, cleared
// when it is freed), so that a packet of its original tuple, which the
// lookup matches on Conn alone, need not read its NatHot (a line a packet
// fewer: a done packet takes its rewrite from the caller's tag). Not part
// of the key: compares mask kNatBitsWord, load_key and put_key kFamilyMask.
inline constexpr uint8_t kConnNat = 0x10;
inline bool conn_translated(const Conn& c) { return (c.key.family & kConnNat) != 0; }
[[gnu::always_inline]] inline bool conn_matches(const Conn& c, const ConnCold& x, const Key& k, bool canon) {
  return key_matches(c.key, x.src_hi, x.dst_hi, k, canon, kNatBitsWord);
}
inline uint8_t nat_kind(const NatHot& n) { return static_cast<uint8_t>((n.rkey.family >> kNatKindShift) & 3); }
inline bool nat_rcanon(const NatHot& n) { return (n.rkey.family & kNatRcanon) != 0; }

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
  bool init(uint32_t capacity, bool nat, uint32_t nat_caller_bytes = 0);  // false on allocation failure

  uint32_t nbuckets() const { return nb_; }
  Bucket* buckets() const { return b_; }
  Conn* conns() const { return c_; }
  ConnCold* cold() const { return x_; }
  NatLines nat() const { return n_; }
  NatCold* nat_cold() const { return nx_; }
  // The canonical key of connection idx.
  Key conn_key(uint32_t idx) const { return load_key(c_[idx], x_[idx]); }
  // The canonical reply tuple of translated connection idx.
  Key nat_key(uint32_t idx) const { return load_key(n_[idx].rkey, nx_[idx].src_hi, nx_[idx].dst_hi); }
  // The key an index slot is found under.
  Key slot_key(uint32_t e) const { return (e & kNatTag) ? nat_key(e & ~kNatTag) : conn_key(e); }
  // Is index slot e found under canonical key k?
  bool slot_is(uint32_t e, const Key& k) const {
    if (!(e & kNatTag)) return conn_matches(c_[e], x_[e], k, true);
    const uint32_t i = e & ~kNatTag;
    return key_matches(n_[i].rkey, nx_[i].src_hi, nx_[i].dst_hi, k, true, kNatBitsWord);
  }

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

  // The index and the NAT side table (the connection arrays are the caller's to count).
  size_t bytes() const { return static_cast<size_t>(nb_) * sizeof(Bucket) + nmap_bytes_; }

 private:
  bool place(uint32_t b, uint16_t s, uint32_t idx, bool second);
  bool make_room(uint32_t b, uint16_t s, uint32_t idx);
  Bucket* b_ = nullptr;
  Conn* c_ = nullptr;
  ConnCold* x_ = nullptr;
  NatLines n_;
  NatCold* nx_ = nullptr;
  uint32_t nb_ = 0;
  size_t bmap_ = 0, cmap_ = 0, xmap_ = 0, nmap_ = 0, nmap_bytes_ = 0;
  uint32_t rng_ = 0x2545F491u;
};

}  // namespace ctrack::detail
