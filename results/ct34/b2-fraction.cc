// How many of 1M random keys the index keeps in their second bucket (ct34).
// g++ -O2 -std=c++20 -march=native -I ctrack/src -I ctrack/include -I common/include \
//   results/ct34/b2-fraction.cc build/relg/ctrack/libctrack.a -o b2 && ./b2
// Printed at 7e51e69: "b1 848934 b2 151066 (15.1% in b2)".
#include "table.h"
#include <cstdio>
#include <random>
using namespace ctrack::detail;
int main(int argc, char** argv) {
  uint32_t n = 1000000;
  Table t; t.init(n, false);
  std::mt19937 rng(1);
  std::vector<uint32_t> hs(n);
  for (uint32_t i = 0; i < n; i++) { hs[i] = rng(); if (!t.insert(hs[i], i)) { printf("full at %u\n", i); return 1; } }
  uint32_t in1 = 0, in2 = 0;
  for (uint32_t i = 0; i < n; i++) {
    const Bucket& B = t.buckets()[t.b1(hs[i])];
    bool f = false;
    for (int s = 0; s < kSlots; s++) if (B.idx[s] == i) f = true;
    f ? in1++ : in2++;
  }
  printf("b1 %u b2 %u (%.1f%% in b2)\n", in1, in2, 100.0 * in2 / n);
}
