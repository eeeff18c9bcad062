// New connections through ctrack alone, as dataplane-bench's `--only new`
// (cached pipeline) drives it: per burst of 32 SYNs, lookup() (the flow
// cache), process_found() without commit (the first ct()), process() with
// commit (ct(commit)). REPS fills of 131,072 SYNs into a table sized
// 132,096, flushed between fills. For callgrind (a few seconds a fill).
//   g++ -O2 -g -std=c++20 -march=x86-64-v3 -I ctrack/include -I common/include \
//     results/mr36/newconns.cc build/cg/ctrack/libctrack.a -lpthread -o /tmp/newconns
//   valgrind --tool=callgrind --cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 /tmp/newconns 3
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ctrack/tracker.h"

using namespace ctrack;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 3;
  const uint32_t kSyns = 131072, kBurst = 32;
  Config cfg;
  cfg.capacity = kSyns + 1024;
  auto t = std::move(Tracker::create(cfg).value());
  std::vector<Packet> pk(kSyns);
  for (uint32_t i = 0; i < kSyns; i++) {
    const uint32_t c = 200000 + i;
    Packet& p = pk[i];
    p.key.family = 4;
    p.key.proto = 6;
    p.key.src[0] = 172;
    p.key.src[1] = 16;
    p.key.src[2] = static_cast<uint8_t>(c >> 16);
    p.key.src[3] = static_cast<uint8_t>(c >> 8);
    p.key.dst[0] = 10;
    p.key.dst[1] = 0;
    p.key.dst[2] = 0;
    p.key.dst[3] = static_cast<uint8_t>(c);
    p.key.sport = static_cast<uint16_t>(1024 + (c % 50000));
    p.key.dport = 443;
    p.tcp_flags = kSyn;
    p.seq = 100;
    p.win = 65535;
    p.l3_len = 60;
  }
  uint64_t created = 0;
  for (int r = 0; r < reps; r++) {
    t->flush();
    for (uint32_t b = 0; b < kSyns; b += kBurst) {
      const Packet* pp[kBurst];
      Tracker::Found f[kBurst];
      const Tracker::Found* fp[kBurst];
      CtResult res[kBurst];
      for (uint32_t i = 0; i < kBurst; i++) pp[i] = &pk[b + i], fp[i] = &f[i];
      t->lookup(pp, kBurst, f);
      t->process_found(pp, fp, kBurst, 1'000'000'000ull, false, res);
      t->process(pp, kBurst, 1'000'000'000ull, true, res);
      for (uint32_t i = 0; i < kBurst; i++) created += (res[i].state & kCtNew) != 0;
    }
  }
  printf("created %llu of %llu\n", (unsigned long long)created, (unsigned long long)reps * kSyns);
  return created == static_cast<uint64_t>(reps) * kSyns ? 0 : 1;
}
