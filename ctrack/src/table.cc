#include "table.h"

#include <sys/mman.h>

#include <cstring>

namespace ctrack::detail {

namespace {

// Anonymous memory, transparent hugepages requested, every page touched now
// so that the packet path never faults.
void* alloc_prefaulted(size_t bytes, size_t* mapped) {
  const size_t huge = 2u << 20;
  size_t len = (bytes + huge - 1) / huge * huge;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, len, MADV_HUGEPAGE);
  memset(p, 0, len);
  *mapped = len;
  return p;
}

}  // namespace

Table::~Table() {
  if (b_) munmap(b_, bmap_);
  if (c_) munmap(c_, cmap_);
  if (x_) munmap(x_, xmap_);
  if (n_) munmap(n_, nmap_);
}

bool Table::init(uint32_t capacity, bool nat) {
  // 90% load at full capacity; a translated connection takes two slots, so
  // with NAT the index has room for every entry to be one.
  nb_ = (capacity * (nat ? 2 : 1) + 8) / 9;
  if (nb_ < 2) nb_ = 2;
  b_ = static_cast<Bucket*>(alloc_prefaulted(static_cast<size_t>(nb_) * sizeof(Bucket), &bmap_));
  c_ = static_cast<Conn*>(alloc_prefaulted(static_cast<size_t>(capacity) * sizeof(Conn), &cmap_));
  x_ = static_cast<ConnCold*>(alloc_prefaulted(static_cast<size_t>(capacity) * sizeof(ConnCold), &xmap_));
  if (!b_ || !c_ || !x_) return false;
  if (nat) {
    nmap_bytes_ = static_cast<size_t>(capacity) * sizeof(NatExt);
    n_ = static_cast<NatExt*>(alloc_prefaulted(nmap_bytes_, &nmap_));
    if (!n_) return false;
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

bool Table::place(uint32_t b, uint16_t s, uint32_t idx) {
  Bucket& bk = b_[b];
  for (int i = 0; i < kSlots; i++) {
    if (bk.idx[i] == kEmpty) {
      bk.sig[i] = s;
      bk.idx[i] = idx;
      return true;
    }
  }
  return false;
}

bool Table::insert(uint32_t h, uint32_t idx) {
  uint16_t s = sig(h);
  uint32_t b = b1(h);
  if (place(b, s, idx)) return true;
  uint32_t b2 = alt(b, s);
  if (place(b2, s, idx)) return true;

  // Random-walk cuckoo displacement, recorded so that a failed walk is undone
  // and the table is left exactly as it was.
  constexpr int kMaxKicks = 256;
  struct Step {
    uint32_t bucket;
    uint8_t slot;
  };
  Step path[kMaxKicks];
  uint16_t cs = s;
  uint32_t cidx = idx;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 17;
  rng_ ^= rng_ << 5;
  uint32_t cb = (rng_ & 1) ? b : b2;
  for (int k = 0; k < kMaxKicks; k++) {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    uint8_t slot = static_cast<uint8_t>(rng_ % kSlots);
    Bucket& bk = b_[cb];
    path[k] = {cb, slot};
    uint16_t vs = bk.sig[slot];
    uint32_t vidx = bk.idx[slot];
    bk.sig[slot] = cs;
    bk.idx[slot] = cidx;
    cs = vs;
    cidx = vidx;
    uint32_t nb = alt(cb, cs);
    if (place(nb, cs, cidx)) return true;
    cb = nb;
  }
  // Undo: walk back, putting each carried entry into the slot it came from.
  for (int k = kMaxKicks - 1; k >= 0; k--) {
    Bucket& bk = b_[path[k].bucket];
    uint16_t ts = bk.sig[path[k].slot];
    uint32_t tidx = bk.idx[path[k].slot];
    bk.sig[path[k].slot] = cs;
    bk.idx[path[k].slot] = cidx;
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
        return true;
      }
    }
    b = alt(b, s);
  }
  return false;
}

}  // namespace ctrack::detail
