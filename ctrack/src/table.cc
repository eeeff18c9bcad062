#include "table.h"

#include "sdn/huge.h"

#include <sys/mman.h>

#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ctrack::detail {

Table::~Table() {
  if (b_) munmap(b_, bmap_);
  if (c_) munmap(c_, cmap_);
  if (x_) munmap(x_, xmap_);
  if (n_) munmap(n_.base, nmap_);
}

bool Table::init(uint32_t capacity, bool nat, uint32_t nat_caller_bytes) {
  // 90% load at full capacity; a translated connection takes two slots, so
  // with NAT the index has room for every entry to be one.
  nb_ = (capacity * (nat ? 2 : 1) + 8) / 9;
  if (nb_ < 2) nb_ = 2;
  b_ = static_cast<Bucket*>(sdn::alloc_huge(static_cast<size_t>(nb_) * sizeof(Bucket), &bmap_));
  c_ = static_cast<Conn*>(sdn::alloc_huge(static_cast<size_t>(capacity) * sizeof(Conn), &cmap_));
  x_ = static_cast<ConnCold*>(sdn::alloc_huge(static_cast<size_t>(capacity) * sizeof(ConnCold), &xmap_));
  if (!b_ || !c_ || !x_) return false;
  if (nat) {
    const uint32_t shift = nat_stride_shift(nat_caller_bytes);
    const size_t hot = static_cast<size_t>(capacity) << shift;
    nmap_bytes_ = hot + static_cast<size_t>(capacity) * sizeof(NatCold);
    // One mapping (each is rounded up to 2 MB): the NatHots (with the
    // caller's bytes), then the NatColds.
    auto* m = static_cast<uint8_t*>(sdn::alloc_huge(nmap_bytes_, &nmap_));
    if (!m) return false;
    n_ = NatLines{m, shift};
    nx_ = reinterpret_cast<NatCold*>(m + hot);
  }
  for (uint32_t i = 0; i < nb_; i++)
    for (int s = 0; s < kSlots; s++) b_[i].idx[s] = kEmpty;
  return true;
}

uint32_t Table::find(const Key& k, uint32_t h) const {
  uint16_t s = sig(h);
  uint32_t b = b1(h);
  for (int pass = 0; pass < 2; pass++) {
    const Bucket& bk = b_[b];
    for (uint32_t m = match_mask(bk, s); m; m &= m - 1) {
      uint32_t idx = bk.idx[__builtin_ctz(m)];
      if (idx != kEmpty && slot_is(idx, k)) return idx;
    }
    b = alt(b, s);
  }
  return kEmpty;
}

namespace {

// The first free slot of bk, or -1: its ten index words compared with
// kEmpty at once (the scan it replaces took a branch per occupied slot).
[[gnu::always_inline]] inline int empty_slot(const Bucket& bk) {
#if defined(__AVX2__)
  const __m256i e = _mm256_set1_epi32(-1);
  const __m256i a = _mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk.idx)), e);  // 0-7
  const __m128i b = _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bk.idx + 6)),
                                    _mm256_castsi256_si128(e));  // slots 6-9
  const uint32_t m = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(a))) |
                     static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(b))) << 6;
  return m ? __builtin_ctz(m) : -1;
#else
  for (int i = 0; i < kSlots; i++)
    if (bk.idx[i] == kEmpty) return i;
  return -1;
#endif
}
void put(Bucket& bk, int i, uint16_t s, uint32_t idx, bool second) {
  bk.sig[i] = s;
  bk.idx[i] = idx;
  bk.second = static_cast<uint16_t>((bk.second & ~(1u << i)) | static_cast<unsigned>(second) << i);
}

}  // namespace

[[gnu::always_inline]] inline bool Table::place(uint32_t b, uint16_t s, uint32_t idx, bool second) {
  Bucket& bk = b_[b];
  const int i = empty_slot(bk);
  if (i < 0) return false;
  put(bk, i, s, idx, second);
  return true;
}

// Both of the new key's buckets are full, b its first. Frees a slot in b
// for (s, idx) when one of its entries that lives there as its second
// bucket (S) can go back to its first (P): into a free slot, or into the
// slot of one of P's first-bucket entries (U) that moves to its own second
// bucket, which has one. Either way one entry fewer lives in its second
// bucket (a lookup of such a key reads two buckets), and no cuckoo walk.
// With the walk's preference below, 1M random keys at 90% load: 15.1% ->
// 10.6% in their second bucket (results/ct34/b2-fraction.cc).
bool Table::make_room(uint32_t b, uint16_t s, uint32_t idx) {
  Bucket& B = b_[b];
  for (uint32_t m = B.second; m; m &= m - 1) {
    const int j = __builtin_ctz(m);
    const uint16_t ss = B.sig[j];
    const uint32_t p = alt(b, ss);
    Bucket& P = b_[p];
    int k = empty_slot(P);
    if (k < 0) {
      for (k = 0; k < kSlots; k++) {
        if ((P.second >> k) & 1) continue;
        const uint32_t r = alt(p, P.sig[k]);
        if (r != p && place(r, P.sig[k], P.idx[k], true)) break;
      }
      if (k == kSlots) continue;
    }
    put(P, k, ss, B.idx[j], false);
    put(B, j, s, idx, false);
    return true;
  }
  return false;
}

bool Table::insert(uint32_t h, uint32_t idx) {
  uint16_t s = sig(h);
  uint32_t b = b1(h);
  if (place(b, s, idx, false)) return true;
  // Both buckets are in cache (the lookup before an insert read them);
  // make_room reads other buckets, so it runs only where a cuckoo walk,
  // which reads more, would follow.
  uint32_t b2 = alt(b, s);
  if (place(b2, s, idx, b2 != b) || make_room(b, s, idx)) return true;

  // Random-walk cuckoo displacement, recorded so that a failed walk is undone
  // and the table is left exactly as it was.
  constexpr int kMaxKicks = 256;
  struct Step {
    uint32_t bucket;
    uint8_t slot;
    bool was_second;  // the slot's entry before the kick
  };
  Step path[kMaxKicks];
  uint16_t cs = s;
  uint32_t cidx = idx;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 17;
  rng_ ^= rng_ << 5;
  uint32_t cb = (rng_ & 1) ? b : b2;
  bool csec = cb != b;
  for (int k = 0; k < kMaxKicks; k++) {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    uint8_t slot = static_cast<uint8_t>(rng_ % kSlots);
    Bucket& bk = b_[cb];
    // Three times in four, one of the entries away from their first bucket
    // (if any): the kick sends it home. Always, walks failed sooner (1M
    // random keys: first failure at 96.0-96.5% load; so: 96.6-97.1%; a
    // random slot: 98.5-98.6%; the index is never above 90%). results/mr36.
    if (bk.second && (rng_ >> 16) % 4 != 0) {
      uint32_t m = bk.second;
      for (uint32_t pick = (rng_ >> 8) % static_cast<uint32_t>(__builtin_popcount(m)); pick; pick--) m &= m - 1;
      slot = static_cast<uint8_t>(__builtin_ctz(m));
    }
    uint16_t vs = bk.sig[slot];
    uint32_t vidx = bk.idx[slot];
    bool vsec = (bk.second >> slot) & 1;
    path[k] = {cb, slot, vsec};
    put(bk, slot, cs, cidx, csec);
    cs = vs;
    cidx = vidx;
    uint32_t nb = alt(cb, cs);
    csec = !vsec && nb != cb;  // the carried entry's bucket after the move
    if (place(nb, cs, cidx, csec)) return true;
    cb = nb;
  }
  // Undo: walk back, putting each carried entry into the slot it came from.
  for (int k = kMaxKicks - 1; k >= 0; k--) {
    Bucket& bk = b_[path[k].bucket];
    uint16_t ts = bk.sig[path[k].slot];
    uint32_t tidx = bk.idx[path[k].slot];
    put(bk, path[k].slot, cs, cidx, path[k].was_second);
    cs = ts;
    cidx = tidx;
  }
  return false;
}

bool Table::erase(uint32_t h, uint32_t idx) {
  uint16_t s = sig(h);
  uint32_t b = b1(h);
  for (int pass = 0; pass < 2; pass++) {
    Bucket& bk = b_[b];
    for (int i = 0; i < kSlots; i++) {
      if (bk.idx[i] == idx) {
        bk.idx[i] = kEmpty;
        bk.second = static_cast<uint16_t>(bk.second & ~(1u << i));
        return true;
      }
    }
    b = alt(b, s);
  }
  return false;
}

}  // namespace ctrack::detail
