// Load at which a table's insert first fails (random keys, no deletes),
// and the share in their second bucket at 90% load, for 3 seeds.
// g++ -O2 -std=c++20 -march=x86-64-v3 -I ctrack/src -I ctrack/include -I common/include \
//   results/mr36/fill-limit.cc build/cg/ctrack/libctrack.a -o /tmp/fill-limit && /tmp/fill-limit
#include <cstdio>
#include <random>
#include <vector>

#include "table.h"
using namespace ctrack::detail;
int main() {
  const uint32_t cap = 1000000;
  for (uint32_t seed = 1; seed <= 3; seed++) {
    Table t;
    t.init(cap, false);
    const double slots = double(t.nbuckets()) * kSlots;
    std::mt19937 rng(seed);
    std::vector<uint32_t> hs;
    uint32_t i = 0, in2 = 0;
    for (;; i++) {
      if (i == cap) {
        for (uint32_t j = 0; j < cap; j++) {
          const Bucket& B = t.buckets()[t.b1(hs[j])];
          bool f = false;
          for (int s = 0; s < kSlots; s++) f |= B.idx[s] == j;
          in2 += !f;
        }
      }
      hs.push_back(rng());
      if (!t.insert(hs[i], i)) break;
    }
    printf("seed %u: %.1f%% in b2 at %.1f%% load; first failed insert at %.2f%% load\n", seed, 100.0 * in2 / cap,
           100.0 * cap / slots, 100.0 * i / slots);
  }
}
