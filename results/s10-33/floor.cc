// A floor for the cached pipeline bar: the least work an established TCP
// segment of dataplane-bench's `pipeline` case needs, written by hand for
// this one case, with the same tables and the same staging as the daemon.
//
// Per packet, as the daemon does it for a flow-cache hit (and nothing the
// daemon does for other cases: no rule set, no stages, no other protocols,
// no NAT, no tunnels, no IPv6, no events, no offload):
//   the mbuf header's fields; Ethernet, IPv4 and TCP parsed and checked;
//   the canonical key and its CRC32-C hash; the index bucket (64 bytes, 10
//   16-bit signatures, as ctrack's) and its connection line (64 bytes, as
//   ctrack's Conn), both prefetched a burst ahead; the key compare; the
//   established TCP checks and window update (ctrack's tcp::established,
//   copied); the timeout, the counters' low bits; the flow-cache entry
//   (8 bytes a connection, as the daemon's) and its path; the path's and
//   rule's counters; the verdict.
// Same sizes as the bench: 100,000 connections in a table of capacity
// 200,000, 262,144 distinct frames of 118 bytes copied (untimed) into a ring
// of 2,048 mbuf-sized buffers before each timed chunk; bursts of 32.
//
//   g++ -O2 -march=native -std=c++20 floor.cc -o floor && ./floor [CONNS]
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "floor_core.h"

namespace {
using namespace floorpath;

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<uint8_t> frame(uint32_t c, bool reply) {
  std::vector<uint8_t> f(14 + 20 + 20 + 64, 0);
  uint8_t* d = f.data();
  d[12] = 0x08;
  uint8_t* ip = d + 14;
  ip[0] = 0x45;
  ip[2] = 0;
  ip[3] = 20 + 20 + 64;
  ip[8] = 64;
  ip[9] = 6;
  const uint8_t cli[4] = {10, static_cast<uint8_t>(1 + (c >> 16)), static_cast<uint8_t>(c >> 8), static_cast<uint8_t>(c)};
  const uint8_t srv[4] = {192, 168, 0, 1};
  memcpy(ip + 12, reply ? srv : cli, 4);
  memcpy(ip + 16, reply ? cli : srv, 4);
  uint8_t* th = ip + 20;
  const uint16_t cp = static_cast<uint16_t>(1024 + c % 50000), sp = 80;
  const uint16_t a = reply ? sp : cp, b = reply ? cp : sp;
  th[0] = static_cast<uint8_t>(a >> 8);
  th[1] = static_cast<uint8_t>(a);
  th[2] = static_cast<uint8_t>(b >> 8);
  th[3] = static_cast<uint8_t>(b);
  const uint32_t seq = reply ? 901 : 101, ack = reply ? 101 : 901;
  for (int k = 0; k < 4; k++) {
    th[4 + k] = static_cast<uint8_t>(seq >> (24 - 8 * k));
    th[8 + k] = static_cast<uint8_t>(ack >> (24 - 8 * k));
  }
  th[12] = 5 << 4;
  th[13] = kAck | kPsh;
  th[14] = 0xFF;
  th[15] = 0xFF;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t conns = argc > 1 ? static_cast<uint32_t>(atoi(argv[1])) : 100000;
  const uint64_t packets = 4000000;
  Floor fl;
  fl.init(2 * conns);
  for (uint32_t c = 0; c < conns; c++) {
    auto f = frame(c, false);
    Parsed p;
    parse(f.data(), static_cast<uint32_t>(f.size()), 0, p);
    if (!p.ok || !fl.add_conn(p, c, 101 + 64, 901 + 64)) {
      fprintf(stderr, "floor: connection %u: %s\n", c, p.ok ? "table full" : "its frame does not parse");
      return 1;
    }
  }
  std::vector<std::vector<uint8_t>> frames(kPool);
  std::vector<uint16_t> ports(kPool);
  uint64_t x = 5;
  for (uint32_t i = 0; i < kPool; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    frames[i] = frame(static_cast<uint32_t>(x % conns), i & 1);
    ports[i] = static_cast<uint16_t>(i & 1);
  }
  std::vector<Mbuf*> ring(kRing);
  for (auto& m : ring) {
    m = static_cast<Mbuf*>(aligned_alloc(64, 128 + 2176));
    memset(m, 0, 128 + 2176);
    m->buf_addr = reinterpret_cast<uint8_t*>(m) + 128;
  }
  std::vector<double> reps;
  uint64_t next = 0;
  Verdict v[kBurst];
  for (int rep = 0; rep < 10; rep++) {
    double secs = 0;
    for (uint64_t done = 0; done < packets; done += kRing) {
      for (uint32_t i = 0; i < kRing; i++) {
        const auto& f = frames[(next + i) % kPool];
        Mbuf* m = ring[i];
        m->data_off = 128;
        m->data_len = static_cast<uint16_t>(f.size());
        m->pkt_len = static_cast<uint32_t>(f.size());
        m->port = ports[(next + i) % kPool];
        memcpy(m->buf_addr + 128, f.data(), f.size());
      }
      next += kRing;
      const double t0 = cpu_now();
      for (uint32_t off = 0; off < kRing; off += kBurst) fl.run(ring.data() + off, kBurst, v);
      secs += cpu_now() - t0;
    }
    if (rep) reps.push_back(secs);  // (the first warms)
  }
  std::sort(reps.begin(), reps.end());
  const double med = reps[reps.size() / 2];
  printf("{\"bench\": \"floor\", \"conns\": %u, \"mpps\": %.2f, \"ns_per_pkt\": %.2f, \"mpps_min\": %.2f, \"mpps_max\": %.2f, "
         "\"slow\": %llu, \"drops\": %llu}\n",
         conns, packets / med / 1e6, med * 1e9 / packets, packets / reps.back() / 1e6, packets / reps.front() / 1e6,
         static_cast<unsigned long long>(fl.slow), static_cast<unsigned long long>(fl.drops));
  return fl.slow || fl.drops ? 1 : 0;
}
