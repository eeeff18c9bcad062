// The memory floor of the cached path on this host: the random cache lines an
// established packet must touch (its index bucket, its connection line, its
// flow-cache entry), asked for in the pipeline's order over bursts of 32
// (prefetch all of one kind, then read them), with no other work.
// cc -O2 -march=native mlp.c -o mlp && ./mlp CONNS LEVELS
//   LEVELS 1: connection line only; 2: bucket then connection; 3: bucket,
//   connection, then an 8-byte flow-cache entry indexed by the connection.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { kBurst = 32 };
struct Bucket { uint32_t idx[16]; };
struct Conn { uint64_t key; uint32_t expires; uint32_t pk; uint8_t pad[48]; };

static void* huge(size_t n) {
  n = (n + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!getenv("NOHUGE")) madvise(p, n, MADV_HUGEPAGE);
  memset(p, 0, n);
  return p;
}
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char** argv) {
  uint32_t n = argc > 1 ? atoi(argv[1]) : 100000, levels = argc > 2 ? atoi(argv[2]) : 3;
  uint32_t nb = n / 9 + 1, npk = 4000000;
  struct Bucket* b = huge((size_t)nb * sizeof *b);
  struct Conn* c = huge((size_t)n * sizeof *c);
  uint64_t* fc = huge((size_t)n * 8);
  uint32_t* pk = huge((size_t)npk * 4);  // each packet's bucket (levels >= 2) or connection
  for (uint32_t i = 0; i < n; i++) { c[i].key = i; b[i % nb].idx[i / nb % 16] = i; }
  for (uint32_t i = 0; i < npk; i++) {
    uint32_t conn = next() % n;
    pk[i] = levels >= 2 ? (conn % nb) | (conn / nb % 16) << 24 : conn;
  }
  uint64_t sum = 0;
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (uint32_t base = 0; base + kBurst <= npk; base += kBurst) {
      uint32_t ci[kBurst];
      if (levels >= 2) {
        for (int k = 0; k < kBurst; k++) __builtin_prefetch(&b[pk[base + k] & 0xFFFFFF]);
        for (int k = 0; k < kBurst; k++) {
          uint32_t v = pk[base + k];
          ci[k] = b[v & 0xFFFFFF].idx[v >> 24];
          __builtin_prefetch(&c[ci[k]]);
        }
      } else {
        for (int k = 0; k < kBurst; k++) { ci[k] = pk[base + k]; __builtin_prefetch(&c[ci[k]]); }
      }
      for (int k = 0; k < kBurst; k++) {
        struct Conn* x = &c[ci[k]];
        sum += x->key;
        x->pk++;
        x->expires = base;
        if (levels >= 3) __builtin_prefetch(&fc[ci[k]]);
      }
      if (levels >= 3)
        for (int k = 0; k < kBurst; k++) sum += fc[ci[k]]++;
    }
    double t = (now() - t0) / npk * 1e9;
    if (t < best) best = t;
  }
  printf("conns %u levels %u: %.2f ns a packet (best of 5) [%llu]\n", n, levels, best, (unsigned long long)(sum & 1));
  return 0;
}
