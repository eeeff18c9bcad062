// ctrack-bench: a program that prints numbers, not a timed test.
//
//   ctrack-bench [--json] [--quick] [--cpu-time] [--only NAME] [--conns N] [--packets N] [--ovstest PATH]
//
// Benches (one core, bursts of 32):
//   established     lookup + TCP window update, random access, 1K/100K/1M/4M live connections
//   new             1M full three-way handshakes into an empty 2M-entry table (conns_per_s)
//   teardown        FIN, FIN-ACK, ACK on established connections
//   mixed           90% established traffic, 10% handshakes + teardowns, 100K live
//   scaling         2 worker threads: a shard each vs. one shared (locked) tracker
//   nat             1M connections through source NAT: handshakes (new-nat), then
//                   established packets both ways (established-nat); bytes per
//                   connection with NAT's side table
//   ovs-equivalent  OVS's `test-conntrack benchmark 1 10000000 32 1`: 32 UDP
//                   connections, batches of 32, from packet bytes (parse included:
//                   ctrack::parse, the plain-IPv4 lane and else parse_packet)
// With --ovstest PATH (OVS's tests/ovstest), the OVS run is made in the same
// process run and its figure printed next to ours with the ratio.
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ctrack/parse.h"
#include "ctrack/tracker.h"
#include "sdn/clock.h"
#include "testbed/process.h"

using namespace ctrack;
using Clock = std::chrono::steady_clock;

namespace {

bool g_json = false;
bool g_quick = false;
bool g_cpu_time = false;
uint64_t g_packets = 0;  // --packets: packets per repetition (ovs-equivalent, established)
constexpr uint32_t kBurst = 32;

Key conn_key(uint32_t i, uint8_t proto = IPPROTO_TCP) {
  Key k{};
  k.family = 4;
  k.proto = proto;
  k.src[0] = 10;
  k.src[1] = static_cast<uint8_t>(i >> 24);
  k.src[2] = static_cast<uint8_t>(i >> 16);
  k.src[3] = static_cast<uint8_t>(i >> 8);
  k.dst[0] = 192;
  k.dst[1] = 168;
  k.dst[2] = 1;
  k.dst[3] = 1;
  k.sport = static_cast<uint16_t>(1024 + (i & 0xff) * 200);
  k.dport = 80;
  return k;
}

Packet tcp_pkt(const Key& k, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t len = 0) {
  Packet p;
  p.key = k;
  p.tcp_flags = flags;
  p.seq = seq;
  p.ack = ack;
  p.win = 65535;
  p.payload_len = len;
  p.l3_len = static_cast<uint16_t>(40 + len);
  return p;
}

constexpr uint32_t CISN = 1000, SISN = 900000;

struct Runner {
  std::unique_ptr<Tracker> t;
  uint64_t now = 1'000'000'000'000ull;
  std::vector<CtResult> out = std::vector<CtResult>(kBurst);

  explicit Runner(uint32_t cap, bool nat = false) {
    Config c;
    c.capacity = cap;
    c.nat = nat;
    auto r = Tracker::create(c);
    if (!r) {
      fprintf(stderr, "ctrack-bench: %s\n", r.message().c_str());
      exit(1);
    }
    t = std::move(r.value());
  }
  // Runs packets through in bursts of 32. Returns invalid results seen.
  // With `nat`, commits translate from it and nat_out (one per packet) gets
  // each packet's translated tuple.
  uint64_t run(const std::vector<const Packet*>& pp, const NatRange* nat = nullptr, Key* nat_out = nullptr) {
    uint64_t bad = 0;
    Key scratch[kBurst];
    for (size_t i = 0; i < pp.size(); i += kBurst) {
      uint32_t n = static_cast<uint32_t>(std::min<size_t>(kBurst, pp.size() - i));
      t->process(pp.data() + i, n, now, true, out.data(), nat, nat_out ? nat_out + i : scratch);
      for (uint32_t j = 0; j < n; j++) bad += (out[j].state & kCtInv) != 0;
    }
    return bad;
  }
};

std::vector<const Packet*> ptrs(const std::vector<Packet>& v) {
  std::vector<const Packet*> p(v.size());
  for (size_t i = 0; i < v.size(); i++) p[i] = &v[i];
  return p;
}

// Handshake packets for conns [first, first+n), in bursts: 32 SYN, 32 SYN-ACK, 32 ACK.
std::vector<Packet> handshakes(uint32_t first, uint32_t n) {
  std::vector<Packet> v;
  v.reserve(static_cast<size_t>(n) * 3);
  for (uint32_t b = 0; b < n; b += kBurst) {
    uint32_t m = std::min(kBurst, n - b);
    for (uint32_t i = 0; i < m; i++) v.push_back(tcp_pkt(conn_key(first + b + i), kSyn, CISN, 0));
    for (uint32_t i = 0; i < m; i++)
      v.push_back(tcp_pkt(conn_key(first + b + i).reversed(), kSyn | kAck, SISN, CISN + 1));
    for (uint32_t i = 0; i < m; i++) v.push_back(tcp_pkt(conn_key(first + b + i), kAck, CISN + 1, SISN + 1));
  }
  return v;
}

std::vector<Packet> teardowns(uint32_t first, uint32_t n) {
  std::vector<Packet> v;
  v.reserve(static_cast<size_t>(n) * 3);
  for (uint32_t b = 0; b < n; b += kBurst) {
    uint32_t m = std::min(kBurst, n - b);
    for (uint32_t i = 0; i < m; i++) v.push_back(tcp_pkt(conn_key(first + b + i), kFin | kAck, CISN + 1, SISN + 1));
    for (uint32_t i = 0; i < m; i++)
      v.push_back(tcp_pkt(conn_key(first + b + i).reversed(), kFin | kAck, SISN + 1, CISN + 2));
    for (uint32_t i = 0; i < m; i++) v.push_back(tcp_pkt(conn_key(first + b + i), kAck, CISN + 2, SISN + 2));
  }
  return v;
}

// One result line. `secs` holds the repetitions; the figure is the median,
// with the fastest and slowest repetition alongside (this VM is noisy).
void emit(const char* bench, uint64_t conns, double pkts, std::vector<double> secs, double bytes_per_conn,
          bool with_conns_rate = false, const std::string& extra = "") {
  std::sort(secs.begin(), secs.end());
  double med = secs[secs.size() / 2];
  double mpps = pkts / med / 1e6, ns = med * 1e9 / pkts;
  double lo = pkts / secs.back() / 1e6, hi = pkts / secs.front() / 1e6;
  double handshakes = static_cast<double>(conns) / med;
  if (g_json) {
    printf("{\"bench\": \"%s\", \"conns\": %llu, \"mpps\": %.2f, \"ns_per_pkt\": %.2f, \"bytes_per_conn\": %.1f, "
           "\"mpps_min\": %.2f, \"mpps_max\": %.2f, \"reps\": %zu, \"hash\": \"%s\"",
           bench, static_cast<unsigned long long>(conns), mpps, ns, bytes_per_conn, lo, hi, secs.size(),
           detail::kHashImpl);
    if (with_conns_rate) printf(", \"conns_per_s\": %.0f", handshakes);
    printf("%s}\n", extra.c_str());
  } else {
    printf("%-16s conns=%-8llu %7.2f Mpps (%.2f..%.2f) %7.2f ns/pkt %6.1f B/conn", bench,
           static_cast<unsigned long long>(conns), mpps, lo, hi, ns, bytes_per_conn);
    if (with_conns_rate) printf("  %.2f M conns/s", handshakes / 1e6);
    printf("%s\n", extra.c_str());
  }
  fflush(stdout);
}

// Seconds on the timer the run measures with (sdn::bench_seconds): wall
// clock, or with --cpu-time this thread's CPU time (the OVS run's own figure
// stays wall clock).
double now_s() { return sdn::bench_seconds(g_cpu_time); }
double seconds_since(double t0) { return now_s() - t0; }

constexpr int kReps = 5;

template <typename F>
std::vector<double> repeat(int reps, F f) {
  std::vector<double> v;
  for (int i = 0; i < reps; i++) v.push_back(f());
  return v;
}

// Packets are made in chunks that fit the cache and only their processing is
// timed: in the dataplane the parser's output is in cache when the tracker
// runs, and a 200 MB array streamed from DRAM would measure the array.
constexpr uint32_t kGenChunk = 16384;  // connections per chunk (48K packets, 3 MB)

template <typename Gen>
double timed_chunks(Runner& r, uint32_t n, Gen gen, uint64_t* bad) {
  double secs = 0;
  for (uint32_t first = 0; first < n; first += kGenChunk) {
    auto pk = gen(first, std::min(kGenChunk, n - first));
    auto pp = ptrs(pk);
    double t0 = now_s();
    *bad += r.run(pp);
    secs += seconds_since(t0);
  }
  return secs;
}

void bench_established(uint32_t n) {
  Runner r(n);
  uint64_t bad = 0;
  timed_chunks(r, n, handshakes, &bad);
  if (bad) fprintf(stderr, "established: %llu invalid during setup\n", (unsigned long long)bad);
  // Random established packets (both directions) over all n connections, made
  // in cache-sized chunks outside the timed part (see timed_chunks).
  std::mt19937 rng(1);
  auto random_acks = [&](uint32_t, uint32_t m) {
    std::vector<Packet> pk(3 * m);
    for (size_t i = 0; i < pk.size(); i++) {
      uint32_t c = rng() % n;
      pk[i] = (i & 1) ? tcp_pkt(conn_key(c).reversed(), kAck, SISN + 1, CISN + 1, 0)
                      : tcp_pkt(conn_key(c), kAck | kPsh, CISN + 1, SISN + 1, 0);
    }
    return pk;
  };
  uint32_t total = g_packets ? static_cast<uint32_t>(g_packets) : g_quick ? 4'000'000 : 20'000'000;  // per repetition
  timed_chunks(r, total / 30, random_acks, &bad);     // warm-up
  auto secs = repeat(kReps, [&] { return timed_chunks(r, total / 3, random_acks, &bad); });
  if (bad) fprintf(stderr, "established: %llu invalid results\n", (unsigned long long)bad);
  emit("established", r.t->stats().active, static_cast<double>(total / 3 * 3), secs,
       static_cast<double>(r.t->bytes_per_conn()));
}

// The same connections through source NAT (4096 addresses, ports
// 1024-65535): the SYN's commit chooses the translation; the server's
// packets come to the translated tuple. Timed: the handshakes (new), then
// established packets both ways. Bytes per connection with NAT's side table.
void bench_nat(uint32_t n) {
  NatRange snat;
  snat.kind = NatKind::kSrc;
  const uint8_t lo[4] = {203, 0, 112, 0}, hi[4] = {203, 0, 127, 255};
  memcpy(snat.addr_min, lo, 4);
  memcpy(snat.addr_max, hi, 4);
  snat.port_min = 1024;
  snat.port_max = 65535;
  Runner r(2 * n, true);
  std::vector<Key> xlat(n);
  uint64_t bad = 0;
  double secs = 0;
  for (uint32_t first = 0; first < n; first += kGenChunk) {
    const uint32_t m = std::min(kGenChunk, n - first);
    std::vector<Packet> syn(m), synack(m), ack(m);
    for (uint32_t i = 0; i < m; i++) syn[i] = tcp_pkt(conn_key(first + i), kSyn, CISN, 0);
    double t0 = now_s();
    bad += r.run(ptrs(syn), &snat, xlat.data() + first);
    secs += seconds_since(t0);
    for (uint32_t i = 0; i < m; i++) {
      synack[i] = tcp_pkt(xlat[first + i].reversed(), kSyn | kAck, SISN, CISN + 1);
      ack[i] = tcp_pkt(conn_key(first + i), kAck, CISN + 1, SISN + 1);
    }
    t0 = now_s();
    bad += r.run(ptrs(synack)) + r.run(ptrs(ack));
    secs += seconds_since(t0);
  }
  if (bad || r.t->stats().active != n)
    fprintf(stderr, "nat: %llu invalid, %llu active\n", (unsigned long long)bad, (unsigned long long)r.t->stats().active);
  emit("new-nat", n, 3.0 * n, {secs}, static_cast<double>(r.t->bytes_per_conn()), true);
  std::mt19937 rng(1);
  auto random_acks = [&](uint32_t, uint32_t m) {
    std::vector<Packet> pk(3 * m);
    for (size_t i = 0; i < pk.size(); i++) {
      uint32_t c = rng() % n;
      pk[i] = (i & 1) ? tcp_pkt(xlat[c].reversed(), kAck, SISN + 1, CISN + 1, 0)
                      : tcp_pkt(conn_key(c), kAck | kPsh, CISN + 1, SISN + 1, 0);
    }
    return pk;
  };
  uint32_t total = g_quick ? 4'000'000 : 20'000'000;
  timed_chunks(r, total / 30, random_acks, &bad);
  auto esecs = repeat(kReps, [&] { return timed_chunks(r, total / 3, random_acks, &bad); });
  if (bad) fprintf(stderr, "established-nat: %llu invalid results\n", (unsigned long long)bad);
  emit("established-nat", r.t->stats().active, static_cast<double>(total / 3 * 3), esecs,
       static_cast<double>(r.t->bytes_per_conn()));
}

void bench_new(uint32_t n) {
  // The table is sized for twice the connections made: the rate at a normal
  // operating load, not at the last free slot.
  size_t bpc = 0;
  auto secs = repeat(kReps, [&] {
    Runner r(2 * n);
    uint64_t bad = 0;
    double s = timed_chunks(r, n, handshakes, &bad);
    if (bad || r.t->stats().active != n)
      fprintf(stderr, "new: %llu invalid, %llu active\n", (unsigned long long)bad,
              (unsigned long long)r.t->stats().active);
    bpc = r.t->bytes_per_conn();
    return s;
  });
  emit("new", n, 3.0 * n, secs, static_cast<double>(bpc), true);
}

void bench_teardown(uint32_t n) {
  size_t bpc = 0;
  auto secs = repeat(kReps, [&] {
    Runner r(2 * n);
    uint64_t bad = 0;
    timed_chunks(r, n, handshakes, &bad);
    double s = timed_chunks(r, n, teardowns, &bad);
    if (bad) fprintf(stderr, "teardown: %llu invalid\n", (unsigned long long)bad);
    bpc = r.t->bytes_per_conn();
    return s;
  });
  emit("teardown", n, 3.0 * n, secs, static_cast<double>(bpc), true);
}

// 100K live connections; each round of 384 packets: 288 established packets
// at random plus 16 new connections (handshakes) and 16 old ones closed
// (FIN, FIN-ACK, ACK), in protocol order.
void bench_mixed() {
  const uint32_t live = 100000, cap = 400000;  // room for TIME_WAIT entries
  Runner r(cap);
  uint64_t bad = 0;
  timed_chunks(r, live, handshakes, &bad);
  std::mt19937 rng(7);
  const uint32_t rounds = g_quick ? 2000 : 10000;
  uint32_t next_new = live, oldest = 0;
  auto make_rounds = [&](uint32_t, uint32_t m) {
    std::vector<Packet> pk;
    pk.reserve(static_cast<size_t>(m) * 384);
    for (uint32_t k = 0; k < m; k++) {
      for (uint32_t i = 0; i < 288; i++)
        pk.push_back(tcp_pkt(conn_key(oldest + 16 + rng() % (live - 16)), kAck, CISN + 1, SISN + 1));
      auto h = handshakes(next_new, 16);
      auto t = teardowns(oldest, 16);
      pk.insert(pk.end(), h.begin(), h.end());
      pk.insert(pk.end(), t.begin(), t.end());
      next_new += 16;
      oldest += 16;
    }
    return pk;
  };
  r.now += 1'000'000;
  double secs = 0;
  for (uint32_t k = 0; k < rounds; k += 128) {
    auto pk = make_rounds(k, std::min(128u, rounds - k));
    auto pp = ptrs(pk);
    double t0 = now_s();
    bad += r.run(pp);
    secs += seconds_since(t0);
  }
  if (bad) fprintf(stderr, "mixed: %llu invalid\n", (unsigned long long)bad);
  emit("mixed", live, static_cast<double>(rounds) * 384, {secs}, static_cast<double>(r.t->bytes_per_conn()));
}

// OVS tests/test-conntrack.c payload: Ethernet + IPv4 + UDP 1 -> 2.
const char kOvsPayload[] =
    "50540000000a50540000000908004500001c0000000000"
    "11a4cd0a0101010a0101020001000200080000";

double run_ovs(const std::string& ovstest, uint64_t pkts) {
  auto r = testbed::run_capture({ovstest, "test-conntrack", "benchmark", "1", std::to_string(pkts), "32", "1"},
                                nullptr, std::chrono::minutes(5));
  if (!r || r->status != 0) return -1;
  double ms = -1;
  size_t at = r->output.find("conntrack:");
  if (at != std::string::npos) ms = strtod(r->output.c_str() + at + 10, nullptr);
  return ms;
}

void bench_ovs_equivalent(std::string ovstest) {
  std::vector<uint8_t> frame;
  for (size_t i = 0; i + 1 < sizeof kOvsPayload - 1; i += 2) {
    unsigned v;
    sscanf(kOvsPayload + i, "%2x", &v);
    frame.push_back(static_cast<uint8_t>(v));
  }
  // 32 packets, udp_dst = 2 + i (change_connection = 1).
  std::vector<std::vector<uint8_t>> frames(kBurst, frame);
  for (uint32_t i = 0; i < kBurst; i++) {
    uint16_t d = static_cast<uint16_t>(2 + i);
    frames[i][14 + 20 + 2] = static_cast<uint8_t>(d >> 8);
    frames[i][14 + 20 + 3] = static_cast<uint8_t>(d);
  }
  const uint64_t total = g_packets ? (g_packets + kBurst - 1) / kBurst * kBurst : 10'000'000;
  Runner r(1024);
  std::vector<Parsed> parsed(kBurst);
  std::vector<const Packet*> pp(kBurst);
  std::vector<CtResult> out(kBurst);
  uint64_t drops = 0;
  // The timed loop works on locals: as a lambda that GCC leaves out of
  // line, captured references are reloaded for every packet (that alone
  // cost this case ~5 % when parse.h's lane grew, results/s12-33).
  auto one_run = [&] {
    const std::vector<uint8_t>* const fr = frames.data();
    Parsed* const ps = parsed.data();
    const Packet** const pps = pp.data();
    CtResult* const res = out.data();
    Tracker* const t = r.t.get();
    const uint64_t now = r.now;
    uint64_t bad = 0;
    double t0 = now_s();
    for (uint64_t k = 0; k < total; k += kBurst) {
      for (uint32_t i = 0; i < kBurst; i++) {
        bad += parse(fr[i].data(), static_cast<uint32_t>(fr[i].size()), 0, &ps[i]) != Drop::kNone;
        pps[i] = &ps[i].ct;
      }
      t->process(pps, kBurst, now, true, res);
    }
    double s = seconds_since(t0);
    drops += bad;
    return s;
  };
  one_run();
  // Interleaved with OVS's run (when given), so both see the same machine.
  std::vector<double> secs, ratios;
  double ovs_ms_sum = 0;
  for (int rep = 0; rep < kReps; rep++) {
    secs.push_back(one_run());
    if (!ovstest.empty()) {
      double ms = run_ovs(ovstest, total);
      if (ms <= 0) {
        fprintf(stderr, "ovs-equivalent: could not run %s\n", ovstest.c_str());
        ovstest.clear();
        continue;
      }
      ovs_ms_sum += ms;
      ratios.push_back((ms / 1000.0) / secs.back());
    }
  }
  if (drops) fprintf(stderr, "ovs-equivalent: %llu parse drops\n", (unsigned long long)drops);
  std::string extra;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    char b[200];
    double ovs_mpps = total / (ovs_ms_sum / ratios.size() / 1000.0) / 1e6;
    snprintf(b, sizeof b,
             g_json ? ", \"ovs_mpps\": %.2f, \"ratio_vs_ovs\": %.2f, \"ratio_min\": %.2f, \"ratio_max\": %.2f"
                    : "  OVS %.2f Mpps, ratio %.2fx (%.2f..%.2f)",
             ovs_mpps, ratios[ratios.size() / 2], ratios.front(), ratios.back());
    extra = b;
  }
  emit("ovs-equivalent", 32, static_cast<double>(total), secs, static_cast<double>(r.t->bytes_per_conn()), false, extra);
}

// Multi-core model check: two worker threads, each with its own shard (what
// the dataplane does with symmetric RSS) vs. both sharing one tracker (lock).
void bench_scaling() {
  const uint32_t n = 100000;
  const uint64_t per_thread = g_quick ? 4'000'000 : 20'000'000;
  for (int mode = 0; mode < 3; mode++) {
    // 0: one thread, one shard; 1: two threads, a shard each; 2: two threads, one shared tracker
    int threads = mode == 0 ? 1 : 2;
    std::vector<std::unique_ptr<Runner>> shards;
    for (int i = 0; i < (mode == 1 ? 2 : 1); i++) {
      shards.push_back(std::make_unique<Runner>(n));
      auto hs = handshakes(0, n);
      shards.back()->run(ptrs(hs));
    }
    std::vector<std::vector<Packet>> pools(threads, std::vector<Packet>(1u << 16));
    for (int i = 0; i < threads; i++) {
      std::mt19937 rng(static_cast<uint32_t>(11 + i));
      for (auto& p : pools[i]) p = tcp_pkt(conn_key(rng() % n), kAck, CISN + 1, SISN + 1);
    }
    auto t0 = Clock::now();
    std::vector<std::thread> th;
    for (int i = 0; i < threads; i++) {
      Tracker* t = shards[mode == 1 ? i : 0]->t.get();
      th.emplace_back([&, t, i] {
        auto pp = ptrs(pools[i]);
        std::vector<CtResult> out(kBurst);
        for (uint64_t done = 0; done < per_thread; done += pp.size())
          for (size_t k = 0; k < pp.size(); k += kBurst) t->process(pp.data() + k, kBurst, 1'000'000'000'000ull, true, out.data());
      });
    }
    for (auto& t : th) t.join();
    std::vector<double> secs{std::chrono::duration<double>(Clock::now() - t0).count()};
    const char* name = mode == 0 ? "scaling-1core" : mode == 1 ? "scaling-2shards" : "scaling-2shared";
    emit(name, n, static_cast<double>(per_thread * threads), secs, static_cast<double>(shards[0]->t->bytes_per_conn()));
  }
}

void usage() {
  printf(
      "usage: ctrack-bench [--json] [--quick] [--cpu-time] [--only NAME] [--conns N] [--packets N] [--ovstest PATH]\n"
      "  --json          one JSON object per line\n"
      "  --quick         smaller sizes (a smoke run, not for the record)\n"
      "  --cpu-time      time with the thread's CPU clock, not the wall clock (a loaded machine;\n"
      "                  not scaling, and OVS's figure stays its own wall clock)\n"
      "  --only NAME     established | new | teardown | mixed | ovs-equivalent | scaling | nat\n"
      "  --conns N       established, nat: only this many live connections\n"
      "  --packets N     ovs-equivalent, established: packets per repetition (instruction counts:\n"
      "                  the difference of two runs under callgrind, divided by the packets')\n"
      "  --ovstest PATH  OVS tests/ovstest: run its conntrack benchmark in the same run\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string only, ovstest;
  uint32_t conns = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json") g_json = true;
    else if (a == "--quick") g_quick = true;
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--ovstest" && i + 1 < argc) ovstest = argv[++i];
    else if (a == "--packets" && i + 1 < argc) g_packets = strtoull(argv[++i], nullptr, 10);
    else if (a == "--conns" && i + 1 < argc) conns = static_cast<uint32_t>(strtoul(argv[++i], nullptr, 10));
    else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      fprintf(stderr, "ctrack-bench: unknown argument '%s'\n", a.c_str());
      usage();
      return 2;
    }
  }
  auto want = [&](const char* n) { return only.empty() || only == n; };
  if (want("ovs-equivalent")) bench_ovs_equivalent(ovstest);
  if (want("established")) {
    std::vector<uint32_t> sizes = g_quick ? std::vector<uint32_t>{1000, 100000}
                                          : std::vector<uint32_t>{1000, 100000, 1000000, 4000000};
    if (conns) sizes = {conns};
    for (uint32_t n : sizes) bench_established(n);
  }
  if (want("new")) bench_new(g_quick ? 100000 : 1000000);
  if (want("teardown")) bench_teardown(g_quick ? 100000 : 1000000);
  if (want("mixed")) bench_mixed();
  if (want("scaling")) bench_scaling();
  if (want("nat")) bench_nat(conns ? conns : g_quick ? 100000 : 1000000);
  return 0;
}
