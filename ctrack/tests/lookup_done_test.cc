// Tracker::lookup_done (the dataplane's flow-cache lane): the packets it
// does and, after it, process_found() for the ones it leaves, in burst
// order, give what process() gives the same bursts, packet by packet.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "ct_test_util.h"

namespace ctrack::test {
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kAck = 0x10;

struct Flow {
  Key key;
  uint32_t next[2];  // each direction's next SEQ
};

// Random bursts over 48 connections (TCP and UDP), some of whose packets
// are what the lane does and some not: a direction without a tag, a
// context that does not match, a bit of `may` clear, a FIN, an RST, a
// segment out of the window, an unknown tuple, a connection twice or more
// in one burst. Both trackers see the same bursts at the same times.
void run_differential(uint32_t event_ring, uint32_t seed) {
  Config cfg = Harness::small_config();
  cfg.event_ring = event_ring;
  cfg.sweep_per_call = 0;  // (the lane adds calls; what expires stays the same)
  Harness a(cfg), b(cfg);
  std::mt19937 rng(seed);
  std::vector<Flow> flows;
  for (uint32_t i = 0; i < 48; i++) {
    const bool is_tcp = i % 4 != 3;
    Flow f{make_key("10.2.0.1", static_cast<uint16_t>(20000 + i), "10.2.1.1", is_tcp ? 443 : 53,
                    is_tcp ? IPPROTO_TCP : IPPROTO_UDP),
           {1000u * i, 5000000u + 1000u * i}};
    if (is_tcp) {
      for (Harness* h : {&a, &b}) {
        h->run(tcp(f.key, kSyn, f.next[0] - 1, 0));
        h->run(tcp(f.key.reversed(), kSyn | kAck, f.next[1] - 1, f.next[0]));
        h->run(tcp(f.key, kAck, f.next[0], f.next[1]));
      }
    } else {
      for (Harness* h : {&a, &b}) {
        h->run(udp(f.key));
        h->run(udp(f.key.reversed()));
      }
    }
    flows.push_back(f);
  }
  // Tags by handle: a generation, a value per direction (or none); ctx per value.
  std::vector<Tracker::Tag> tags(a.tracker->capacity());
  const uint64_t ctx[4] = {11, 11, 11, 44};  // (tag 3's context is another)
  for (auto& t : tags) {
    t.gen = rng() % 8 ? 5 : 4;
    for (auto& d : t.dir) d = rng() % 5 ? static_cast<uint16_t>(rng() % 4) : Tracker::Tag::kNoTag;
  }
  const Tracker::Tags tv{tags.data(), 5, ctx};
  uint32_t done_total = 0, left_total = 0;
  std::map<uint32_t, uint32_t> a2b;  // a's handle -> b's
  for (int burst = 0; burst < 400; burst++) {
    a.advance_s(0.001);
    b.advance_s(0.001);
    const uint32_t n = 1 + rng() % 32;
    Packet pk[32];
    const Packet* pp[32];
    uint64_t pctx[32];
    for (uint32_t i = 0; i < n; i++) {
      // Mostly the first 8 connections (often repeated in a burst), which
      // never close; the others also get FINs and RSTs.
      const bool hot = rng() % 12 != 0;
      Flow& f = flows[hot ? rng() % 8 : 8 + rng() % (flows.size() - 8)];
      const int d = static_cast<int>(rng() % 2);
      const Key k = d ? f.key.reversed() : f.key;
      const uint32_t what = rng() % 100;
      if (what < 2) {  // a tuple no connection has
        Key u = k;
        u.sport = static_cast<uint16_t>(1 + rng() % 1000);
        pk[i] = udp(u);
      } else if (f.key.proto == IPPROTO_UDP) {
        pk[i] = udp(k, static_cast<uint16_t>(rng() % 1000));
      } else {
        const uint16_t len = static_cast<uint16_t>(rng() % 1400);
        uint8_t flags = kAck;
        uint32_t seq = f.next[d];
        if (what < 20 && !hot) flags = what < 10 ? kFin | kAck : kRst | kAck;
        else if (what < 5) seq += 0x40000000u;  // out of the window
        pk[i] = tcp(k, flags, seq, f.next[1 - d], 65535, len);
        if (seq == f.next[d]) f.next[d] += len + ((flags & kFin) ? 1 : 0);
      }
      pp[i] = &pk[i];
      pctx[i] = rng() % 10 ? 11 : rng() % 2 ? 44 : 99;
    }
    const uint32_t may = static_cast<uint32_t>(rng()) | static_cast<uint32_t>(rng());
    Tracker::Found found[32];
    CtResult ra[32], rb[32];
    const uint32_t done = a.tracker->lookup_done(pp, n, a.now_ns, may, tv, pctx, found, ra, nullptr);
    ASSERT_EQ(done & ~may, 0u);
    const Packet* lp[32];
    const Tracker::Found* lf[32];
    uint32_t li[32], m = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (done >> i & 1) continue;
      lp[m] = pp[i];
      lf[m] = &found[i];
      li[m++] = i;
    }
    CtResult rl[32];
    a.tracker->process_found(lp, lf, m, a.now_ns, true, rl);
    for (uint32_t j = 0; j < m; j++) ra[li[j]] = rl[j];
    b.tracker->process(pp, n, b.now_ns, true, rb);
    done_total += static_cast<uint32_t>(__builtin_popcount(done));
    left_total += m;
    // What each announced (a connection's events in its packets' order).
    auto events = [](Harness& h) {
      Event e[64];
      std::vector<std::string> v;
      for (uint32_t k = h.tracker->poll_events(e, 64), j = 0; j < k; j++)
        v.push_back(std::to_string(static_cast<int>(e[j].type)) + " " + std::to_string(e[j].orig.sport) + " " +
                    std::to_string(e[j].l4_state) + " " + std::to_string(e[j].last_end));
      std::stable_sort(v.begin(), v.end(), [](const std::string& x, const std::string& y) {
        return x.substr(x.find(' ')) < y.substr(y.find(' '));  // (by connection, keeping each one's order)
      });
      return v;
    };
    ASSERT_EQ(events(a), events(b)) << "burst " << burst;
    for (uint32_t i = 0; i < n; i++) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " ring " << event_ring << " burst " << burst << " packet "
                                      << i << (done >> i & 1 ? " (done)" : " (left)"));
      // (Handles: the same connections, though a new one's may differ, as
      // process() reserves entries for a burst's misses ahead.)
      ASSERT_EQ(ra[i].conn == kNoConn, rb[i].conn == kNoConn);
      if (ra[i].conn != kNoConn) {
        auto [it, fresh] = a2b.try_emplace(ra[i].conn, rb[i].conn);
        if (!fresh && (ra[i].state & kCtNew) && ra[i].changed) it->second = rb[i].conn;  // made again
        ASSERT_EQ(it->second, rb[i].conn);
      }
      ASSERT_EQ(+ra[i].state, +rb[i].state);
      ASSERT_EQ(+ra[i].changed, +rb[i].changed);
      ASSERT_EQ(static_cast<int>(ra[i].reason), static_cast<int>(rb[i].reason));
      ASSERT_EQ(+ra[i].dir, +rb[i].dir);
      ASSERT_EQ(+ra[i].nat, +rb[i].nat);
    }
  }
  // Both kinds were exercised.
  EXPECT_GT(done_total, 500u) << "seed " << seed << " ring " << event_ring;
  EXPECT_GT(left_total, 500u) << "seed " << seed << " ring " << event_ring;
  const Stats sa = a.tracker->stats(), sb = b.tracker->stats();
  EXPECT_EQ(sa.lookups, sb.lookups);
  EXPECT_EQ(sa.hits, sb.hits);
  EXPECT_EQ(sa.created, sb.created);
  for (int r = 0; r < static_cast<int>(Invalid::kCount); r++) EXPECT_EQ(sa.invalid[r], sb.invalid[r]) << r;
  // The connections as the control plane lists them.
  auto list = [](Harness& h) {
    std::vector<std::string> v;
    h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) {
      char s[256];
      snprintf(s, sizeof s, "%u %u %s %lld %llu %llu %llu %llu", ci.orig.sport, ci.orig.dport, ci.state.c_str(),
               static_cast<long long>(ci.timeout_ms), static_cast<unsigned long long>(ci.packets[0]),
               static_cast<unsigned long long>(ci.packets[1]), static_cast<unsigned long long>(ci.bytes[0]),
               static_cast<unsigned long long>(ci.bytes[1]));
      std::string t = s;
      for (const TcpDirState& d : ci.tcp) t += " " + std::to_string(d.end) + "/" + std::to_string(d.maxend) + "/" +
                                            std::to_string(d.maxwin) + "/" + std::to_string(d.flags);
      v.push_back(t);
    });
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(list(a), list(b));
}

TEST(LookupDone, DoneAndLeftPacketsGiveWhatProcessGives) {
  for (uint32_t seed : {1u, 2u, 3u})
    for (uint32_t ring : {0u, 256u}) run_differential(ring, seed);
}

}  // namespace
}  // namespace ctrack::test
