// Insert policies simulated on main's table.cc (table_exp.cc: counters, and
// g_mode 0 no make_room, 1 main's, 2 free slot in P only, 3 the same for the
// first candidate only, 4 only when b2 is full too, 5 first candidate only;
// BIAS=k: the walk picks an away-from-home entry k times in 4).
// cp ctrack/src/table.h /tmp/s/ && cp results/mr36/sim/*.cc /tmp/s/ && cd /tmp/s &&
// g++ -O2 -std=c++20 -march=x86-64-v3 -I . -I $TREE/ctrack/include -I $TREE/common/include sim.cc table_exp.cc -o sim
// ./sim MODE CAP N REPS     e.g. BIAS=3 ./sim 4 132096 131072 4
#include "table.h"
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
namespace ctrack::detail { extern int g_mode, g_bias; extern uint64_t g_reads2, g_nosecond, g_reads_mr, g_reads_walk, g_calls_mr, g_ok_mr, g_walks, g_b1full, g_ins; }
using namespace ctrack::detail;
static double frac2(Table& t, const std::vector<uint32_t>& hs, uint32_t n) {
  uint32_t in2 = 0;
  for (uint32_t i = 0; i < n; i++) {
    const Bucket& B = t.buckets()[t.b1(hs[i])];
    bool f = false;
    for (int s = 0; s < kSlots; s++) if (B.idx[s] == i) f = true;
    in2 += !f;
  }
  return 100.0 * in2 / n;
}
int main(int argc, char** argv) {
  g_mode = atoi(argv[1]); if (getenv("BIAS")) g_bias = atoi(getenv("BIAS"));
  uint32_t cap = atoi(argv[2]), n = atoi(argv[3]);
  int reps = argc > 4 ? atoi(argv[4]) : 1;
  double f = 0;
  for (int r = 0; r < reps; r++) {
    Table t; t.init(cap, false);
    std::mt19937 rng(1 + r);
    std::vector<uint32_t> hs(n);
    for (uint32_t i = 0; i < n; i++) { hs[i] = rng(); if (!t.insert(hs[i], i)) { printf("full at %u\n", i); return 1; } }
    f += frac2(t, hs, n);
  }
  double N = double(g_ins);
  printf("bias %d mode %d cap %u n %u: b2 %.2f%%  per insert: b1full %.4f mr_calls %.4f mr_ok %.4f mr_reads %.4f walks %.4f walk_reads %.4f\n",
         g_bias, g_mode, cap, n, f / reps, g_b1full / N, g_calls_mr / N, g_ok_mr / N, g_reads_mr / N, g_walks / N, g_reads_walk / N);
  printf("   second-level reads %.4f, calls with no second-bucket entry %.4f; TOTAL random reads %.4f\n", g_reads2 / N, g_nosecond / N, (g_reads_mr + g_reads_walk) / N);
}
