// Large per-packet tables: anonymous memory with transparent hugepages
// asked for (MADV_HUGEPAGE: Debian's default THP mode is madvise, so plain
// malloc'd arrays stay on 4 KB pages and a random lookup into megabytes of
// them misses the TLB), every page touched at once so that the packet path
// never faults. Used for conntrack's tables and the flow cache's entries.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <utility>

namespace sdn {

// `bytes` rounded up to whole 2 MB pages, zeroed; null if mmap failed.
// *mapped: the length to munmap.
inline void* alloc_huge(size_t bytes, size_t* mapped) {
  const size_t huge = size_t{2} << 20;
  const size_t len = (bytes + huge - 1) / huge * huge;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, len, MADV_HUGEPAGE);
  memset(p, 0, len);
  *mapped = len;
  return p;
}

// An array of n trivially copyable T (zero bytes are each one's initial
// value) in alloc_huge's memory; empty until reset().
template <typename T>
class HugeArray {
 public:
  HugeArray() = default;
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  ~HugeArray() { release(); }
  // False if the memory could not be had (the array stays empty).
  bool reset(size_t n) {
    release();
    if (n == 0) return true;
    p_ = static_cast<T*>(alloc_huge(n * sizeof(T), &len_));
    if (!p_) return false;
    n_ = n;
    return true;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  void release() {
    if (p_) munmap(p_, len_);
    p_ = nullptr;
    n_ = len_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0, len_ = 0;
};

}  // namespace sdn
