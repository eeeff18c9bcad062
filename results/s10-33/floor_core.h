// The floor's tables and its per-packet code (floor.cc; also put into
// dataplane-bench's harness for the comparison in README.md).
#pragma once
#include <immintrin.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace floorpath {

constexpr uint32_t kBurst = 32, kRing = 2048, kPool = 262144, kSlots = 10;
constexpr uint32_t kEmpty = 0xFFFFFFFFu;

struct alignas(64) Bucket {
  uint16_t sig[kSlots];
  uint16_t second, pad;
  uint32_t idx[kSlots];
};
struct alignas(64) Conn {
  uint64_t k0, k1;  // canonical key: src4 | dst4 << 32; sport | dport << 16 | zone << 32 | proto << 48 | family << 56
  uint32_t expires;
  uint8_t state, flags, last_index, td_scales;
  uint32_t td_end[2], td_maxend[2], td_maxwin[2], last_end;
  uint16_t last_win;
  uint8_t td_flags[2], in_port[2], pk_lo[2];
  uint16_t by_lo[2];
};
static_assert(sizeof(Conn) == 64);
struct CacheEntry {
  uint32_t gen;
  uint16_t path[2];
};
struct Path {
  uint16_t in_port;
  int16_t out_port;
  uint8_t state;
  uint16_t rule;
  uint64_t packets, bytes;
};
struct Counter {
  uint64_t packets, bytes;
};
// The first line of an rte_mbuf, as far as the worker reads it.
struct alignas(64) Mbuf {
  uint8_t* buf_addr;
  uint64_t iova;
  uint16_t data_off, refcnt, nb_segs, port;
  uint64_t ol_flags;
  uint32_t packet_type, pkt_len;
  uint16_t data_len, vlan_tci;
  uint8_t rest[128 - 44];
};
struct Verdict {
  int16_t out_port;
  uint8_t ct_state, why;
};
enum : uint8_t { kAlive = 1, kOrigCanon = 2, kSeenReply = 4, kAssured = 8, kOffloaded = 0x10 };
enum : uint8_t { kFin = 1, kSyn = 2, kRst = 4, kPsh = 8, kAck = 16 };
enum : uint8_t { kEstablished = 3, kDataUnacked = 0x10, kLiberal = 0x08 };

inline bool before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool after(uint32_t a, uint32_t b) { return static_cast<int32_t>(b - a) < 0; }
inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t be32(const uint8_t* p) { uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v); }

#ifndef BIG_STATE
struct Parsed {
  uint64_t k0, k1;  // canonical key words
  uint32_t hash, seq, ack, payload, l3len;
  uint16_t win;
  uint8_t flags, canon, port, ok;
};
#else  // (the daemon's per-packet state is 384 bytes: the same fields spread over six lines)
struct alignas(64) Parsed {
  uint64_t k0, k1;
  uint32_t hash;
  uint8_t pad0[64 - 20];
  uint32_t seq, ack;
  uint8_t pad1[64 - 8];
  uint32_t payload, l3len;
  uint8_t pad2[64 - 8];
  uint16_t win;
  uint8_t flags, canon;
  uint8_t pad3[64 - 4];
  uint8_t port, ok;
  uint8_t pad4[64 - 2];
  uint64_t more[8];
};
static_assert(sizeof(Parsed) == 384);
#endif

struct Table {
  uint32_t nb, cap;
  Bucket* b;
  Conn* c;
  CacheEntry* cache;
  uint32_t b1(uint32_t h) const { return static_cast<uint32_t>((static_cast<uint64_t>(h) * nb) >> 32); }
  uint32_t alt(uint32_t b, uint16_t s) const {
    uint32_t H = static_cast<uint32_t>((static_cast<uint64_t>(s * 0x9E3779B1u) * nb) >> 32);
    return H >= b ? H - b : H + nb - b;
  }
};

void* huge(size_t n) {
  n = (n + (2u << 20) - 1) & ~static_cast<size_t>((2u << 20) - 1);
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  madvise(p, n, MADV_HUGEPAGE);
  memset(p, 0, n);
  return p;
}

inline uint32_t match_mask(const Bucket& b, uint16_t s) {
  const __m128i k = _mm_set1_epi16(static_cast<short>(s));
  const __m128i lo = _mm_cmpeq_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(b.sig)), k);
  const __m128i hi = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.sig + 2)), k);
  uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
  return (m & 0xFFu) | ((m >> 6) & 0x300u);
}

// Ethernet, IPv4 (no options, not a fragment, lengths consistent), TCP:
// the canonical key, its hash, the segment's fields. ok = 0: not this case.
inline void parse(const uint8_t* d, uint32_t len, uint16_t port, Parsed& p) {
  p.ok = 0;
  if (len < 54 || be16(d + 12) != 0x0800) return;
  const uint8_t* ip = d + 14;
  const uint32_t tot = be16(ip + 2);
  if (ip[0] != 0x45 || tot > len - 14 || tot < 40 || (be16(ip + 6) & 0x3FFF) || ip[9] != 6) return;
  const uint8_t* th = ip + 20;
  const uint32_t doff = (th[12] >> 4) * 4u;
  if (doff < 20 || doff > tot - 20) return;
  uint32_t s, t;
  memcpy(&s, ip + 12, 4);
  memcpy(&t, ip + 16, 4);
  uint16_t sp, dpt;
  memcpy(&sp, th, 2);
  memcpy(&dpt, th + 2, 2);
  const bool canon = s < t || (s == t && sp <= dpt);
  const uint32_t a = canon ? s : t, b = canon ? t : s;
  const uint16_t pa = canon ? sp : dpt, pb = canon ? dpt : sp;
  p.k0 = a | static_cast<uint64_t>(b) << 32;
  p.k1 = pa | static_cast<uint64_t>(pb) << 16 | uint64_t{6} << 48 | uint64_t{4} << 56;
  uint32_t h = static_cast<uint32_t>(_mm_crc32_u64(_mm_crc32_u64(0x12345678, p.k0), p.k1));
  h ^= h >> 16;  // (CRC is linear: the bench's addresses fill some buckets without a mix)
  h *= 0x85EBCA6Bu;
  p.hash = h ^ (h >> 13);
  p.canon = canon;
  p.seq = be32(th + 4);
  p.ack = be32(th + 8);
  p.win = be16(th + 14);
  p.flags = th[13];
  p.payload = tot - 20 - doff;
  p.l3len = tot;
  p.port = static_cast<uint8_t>(port);
  p.ok = 1;
#ifdef BIG_STATE
  memset(p.more, 0, sizeof p.more);
#endif
}

struct Floor {
  Table t;
  Path paths[16];
  Counter rules[1009];
  uint32_t gen = 1, now = 1000;
  uint64_t slow = 0, drops = 0, slow_miss = 0, slow_tcp = 0, slow_cache = 0;

  void init(uint32_t capacity) {
    t.cap = capacity;
    t.nb = (t.cap + 8) / 9;  // (ctrack's: 90 % load at capacity)
    t.b = static_cast<Bucket*>(huge(size_t{t.nb} * sizeof(Bucket)));
    t.c = static_cast<Conn*>(huge(size_t{t.cap} * sizeof(Conn)));
    t.cache = static_cast<CacheEntry*>(huge(size_t{t.cap} * sizeof(CacheEntry)));
    for (uint32_t i = 0; i < t.nb; i++)
      for (uint32_t j = 0; j < kSlots; j++) t.b[i].idx[j] = kEmpty;
    for (int k = 0; k < 16; k++)
      paths[k] = {static_cast<uint16_t>(k & 1), static_cast<int16_t>(!(k & 1)), 0, static_cast<uint16_t>(1000 + k), 0, 0};
  }
  // Connection idx of the original direction's packet p: established,
  // assured, both windows open (each side's data ends at end0 / end1); the
  // flow cache holds each direction's path (original: slot 0, reply: slot 1).
  bool add_conn(const Parsed& p, uint32_t idx, uint32_t end0, uint32_t end1) {
    const uint16_t s = static_cast<uint16_t>(p.hash);
    uint32_t b = t.b1(p.hash);
    int slot = -1;
    for (int pass = 0; pass < 2 && slot < 0; pass++) {
      for (uint32_t j = 0; j < kSlots; j++)
        if (t.b[b].idx[j] == kEmpty) {
          slot = static_cast<int>(j);
          break;
        }
      if (slot < 0) b = t.alt(b, s);
    }
    if (slot < 0) {  // both full: move one of b's entries to its other bucket (ctrack's make_room, one level)
      for (uint32_t j = 0; j < kSlots && slot < 0; j++) {
        const uint32_t o = t.alt(b, t.b[b].sig[j]);
        for (uint32_t q = 0; q < kSlots; q++)
          if (t.b[o].idx[q] == kEmpty) {
            t.b[o].sig[q] = t.b[b].sig[j];
            t.b[o].idx[q] = t.b[b].idx[j];
            slot = static_cast<int>(j);
            break;
          }
      }
      if (slot < 0) return false;
    }
    t.b[b].sig[slot] = s;
    t.b[b].idx[slot] = idx;
    Conn& x = t.c[idx];
    x.k0 = p.k0;
    x.k1 = p.k1;
    x.flags = kAlive | kSeenReply | kAssured | (p.canon ? kOrigCanon : 0);
    x.state = kEstablished;
    x.expires = now + 432000000;
    x.td_end[0] = end0;
    x.td_end[1] = end1;
    x.td_maxend[0] = end0 + 65535;
    x.td_maxend[1] = end1 + 65535;
    x.td_maxwin[0] = x.td_maxwin[1] = 65535;
    t.cache[idx] = {gen, {0, 1}};
    return true;
  }

  // Every signature match in both buckets, keys compared (Table::find).
  uint32_t find(const Parsed& p) const {
    const uint16_t s = static_cast<uint16_t>(p.hash);
    uint32_t b = t.b1(p.hash);
    for (int pass = 0; pass < 2; pass++, b = t.alt(b, s))
      for (uint32_t m = match_mask(t.b[b], s); m; m &= m - 1) {
        const uint32_t e = t.b[b].idx[__builtin_ctz(m)];
        if (e != kEmpty && (t.c[e].flags & kAlive) && !((t.c[e].k0 ^ p.k0) | (t.c[e].k1 ^ p.k1))) return e;
      }
    return kEmpty;
  }

  // tcp::established, as ctrack has it, without its SACK block (the unacked timeout kept).
  bool established(Conn& c, int s, const Parsed& p) {
    const int r = !s;
    const uint32_t seq = p.seq, ack = p.ack, sack = p.ack, end = p.seq + p.payload;
    const uint32_t maxackwin = c.td_maxwin[s] > 66000 ? c.td_maxwin[s] : 66000;
    if (!before(seq, c.td_maxend[s] + 1) || !after(end, c.td_end[s] - c.td_maxwin[r] - 1) ||
        !before(sack, c.td_end[r] + 1) || !after(sack, c.td_end[r] - maxackwin - 1))
      return false;
    const uint32_t win = static_cast<uint32_t>(p.win) << ((c.td_scales >> (4 * s)) & 15);
    const uint32_t swin = win + (sack - ack);
    if (c.td_maxwin[s] < swin) c.td_maxwin[s] = swin;
    if (after(end, c.td_end[s])) {
      c.td_end[s] = end;
      c.td_flags[s] |= kDataUnacked;
    }
    if (after(end, c.td_maxend[s])) c.td_maxwin[r] += end - c.td_maxend[s];
    if (after(sack + win, c.td_maxend[r] - 1)) c.td_maxend[r] = sack + win + (win == 0);
    if (ack == c.td_end[r]) c.td_flags[r] &= static_cast<uint8_t>(~kDataUnacked);
    c.last_index = static_cast<uint8_t>(3 | (s << 3));
    c.last_end = end;
    c.last_win = p.win;
    uint32_t to = 432000000;
    if (((c.td_flags[0] | c.td_flags[1]) & kDataUnacked) && to > 300000) to = 300000;
    c.expires = now + to;
    return true;
  }

  template <class M>
  [[gnu::noinline]] void run(M* const* mb, uint32_t n, Verdict* v) {
    Parsed p[kBurst];
    uint32_t b1[kBurst], cand[kBurst];
    for (uint32_t i = 0; i < n; i++) {
      const M& m = *mb[i];
      parse(static_cast<uint8_t*>(m.buf_addr) + m.data_off, m.data_len, m.port, p[i]);
#ifndef LATE_BUCKET
      b1[i] = t.b1(p[i].hash);
      _mm_prefetch(reinterpret_cast<const char*>(&t.b[b1[i]]), _MM_HINT_T0);
#endif
    }
#ifdef LATE_BUCKET  // (the daemon's order: the whole burst parsed, then the buckets asked for)
    for (uint32_t i = 0; i < n; i++) {
      b1[i] = t.b1(p[i].hash);
      _mm_prefetch(reinterpret_cast<const char*>(&t.b[b1[i]]), _MM_HINT_T0);
    }
#endif
    for (uint32_t i = 0; i < n; i++) {
      cand[i] = kEmpty;
      if (!p[i].ok) continue;
      const uint16_t s = static_cast<uint16_t>(p[i].hash);
      const Bucket& B = t.b[b1[i]];
      for (uint32_t m = match_mask(B, s); m; m &= m - 1) {
        cand[i] = B.idx[__builtin_ctz(m)];
        break;
      }
      if (cand[i] == kEmpty) {  // (its second bucket, not prefetched: rare at this load)
        const Bucket& B2 = t.b[t.alt(b1[i], s)];
        for (uint32_t m = match_mask(B2, s); m; m &= m - 1) {
          cand[i] = B2.idx[__builtin_ctz(m)];
          break;
        }
      }
      if (cand[i] != kEmpty) _mm_prefetch(reinterpret_cast<const char*>(&t.c[cand[i]]), _MM_HINT_T0);
    }
    for (uint32_t i = 0; i < n; i++) {
      if (cand[i] == kEmpty) continue;
      const Conn& c = t.c[cand[i]];
      if (!(c.flags & kAlive) || ((c.k0 ^ p[i].k0) | (c.k1 ^ p[i].k1))) cand[i] = find(p[i]);  // (rare: ctrack's full probe)
#ifndef LATE_CACHE
      if (cand[i] != kEmpty) _mm_prefetch(reinterpret_cast<const char*>(&t.cache[cand[i]]), _MM_HINT_T0);
#endif
    }
#ifdef LATE_CACHE  // (the daemon's order: after the lookup, all entries asked for, then read before the update)
    for (uint32_t i = 0; i < n; i++)
      if (cand[i] != kEmpty) _mm_prefetch(reinterpret_cast<const char*>(&t.cache[cand[i]]), _MM_HINT_T0);
    uint16_t early[kBurst];
    for (uint32_t i = 0; i < n; i++)
      if (cand[i] != kEmpty) {
        const CacheEntry& e = t.cache[cand[i]];
        early[i] = e.gen == gen ? e.path[0] : 0xFFFF;
      }
#endif
    uint16_t used[kBurst];
    uint32_t nused = 0;
    for (uint32_t i = 0; i < n; i++) {
      v[i] = {-1, 0, 0};
      if (cand[i] == kEmpty) {
        slow++;
        slow_miss++;
        continue;
      }
      Conn& c = t.c[cand[i]];
      const uint8_t f = c.flags;
      const int dir = p[i].canon == ((f & kOrigCanon) != 0) ? 0 : 1;
      uint64_t mw;
      memcpy(&mw, c.td_maxwin, 8);
      uint16_t tf;
      memcpy(&tf, c.td_flags, 2);
      if ((f & (kOffloaded | kSeenReply | kAssured)) != (kSeenReply | kAssured) ||
          static_cast<int32_t>(c.expires - now) <= 0 || c.state != kEstablished ||
          (p[i].flags & (kSyn | kFin | kRst | kAck)) != kAck || (tf & (kLiberal * 0x0101)) ||
          !((static_cast<uint32_t>(mw) != 0) & ((mw >> 32) != 0)) || !established(c, dir, p[i])) {
        slow++;
        slow_tcp++;
        continue;
      }
      c.in_port[dir] = p[i].port;
      const uint32_t by = uint32_t{c.by_lo[dir]} + p[i].l3len;
      if (c.pk_lo[dir] != 0xFF && by <= 0xFFFF) [[likely]] {
        c.pk_lo[dir]++;
        c.by_lo[dir] = static_cast<uint16_t>(by);
      } else {
        c.pk_lo[dir] = 0;
        c.by_lo[dir] = 0;
      }
      const CacheEntry& e = t.cache[cand[i]];
      const uint16_t slot = e.path[dir];
#ifdef LATE_CACHE
      if (early[i] == 0xFFFF) {
        slow++;
        continue;
      }
#endif
      if (e.gen != gen || slot == 0xFFFF || paths[slot].in_port != p[i].port) {
        slow++;
        slow_cache++;
        continue;
      }
      Path& ph = paths[slot];
      if (ph.packets == 0) used[nused++] = slot;
      ph.packets++;
      ph.bytes += mb[i]->pkt_len;
      v[i].ct_state = static_cast<uint8_t>(0x20 | 0x02 | (dir ? 0x04 : 0));
      v[i].out_port = ph.out_port;
    }
    for (uint32_t u = 0; u < nused; u++) {
      Path& ph = paths[used[u]];
      rules[ph.rule].packets += ph.packets;
      rules[ph.rule].bytes += ph.bytes;
      ph.packets = ph.bytes = 0;
    }
    for (uint32_t i = 0; i < n; i++) drops += v[i].out_port < 0;
  }
};

}  // namespace floorpath
