// The established-flow cache: a differential test against the pipeline
// without it (random rules, random traffic, same verdicts, counters and
// conntrack state), and the cases it must get right by construction.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <random>
#include <string>
#include <vector>

#include "ctrack/frame.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"

namespace dp {
namespace {

using ctrack::FrameSpec;

// One pipeline, tracker and datapath; `cache` says whether the flow cache
// runs. With NAT the cache's entries are in the tracker's lines
// (Datapath::tracker_config, as the daemon makes its trackers), or with
// `own_entries` in an array of the datapath's.
struct Side {
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<Pipeline> pl;
  WorkerStats st;
  std::unique_ptr<Datapath> dp;
  Side(const std::vector<Rule>& rules, bool cache, bool nat = false, bool own_entries = false) {
    ctrack::Config cc;
    cc.capacity = 4096;
    cc.nat = nat;
    cc.sweep_per_call = 0;  // as the daemon sets it (its workers expire by time)
    ct = std::move(ctrack::Tracker::create(own_entries ? cc : Datapath::tracker_config(cc)).value());
    auto p = Pipeline::build(rules, 1);
    EXPECT_TRUE(p.ok()) << p.message();
    pl = std::move(p.value());
    dp = std::make_unique<Datapath>(0, ct.get(), &st);
    dp->set_flow_cache(cache);
  }
  void swap(const std::vector<Rule>& rules) { pl = std::move(Pipeline::build(rules, 1).value()); }
};

// A random rule set over three tables, in firewall.yaml's shape (ct first,
// then decisions on ct_state), with everything the cache must respect:
// tcp_flags rules, offload: false, set_mark, goto_table, second ct(),
// drops and outputs on two ports. `nat`: commits translate the source,
// to one of three ranges, sometimes in table 0's first ct() (then a
// connection's two directions may take ct() actions of different groups).
std::string random_rules(std::mt19937& rng, int per_table, bool two_zones, bool nat = false) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto chance = [&](int pct) { return pick(100) < pct; };
  const char* ports[] = {"inside", "outside"};
  auto match = [&](int table) {
    if (table == 2 && chance(2))
      return std::string("ip_proto=tcp,") + (chance(50) ? "ct_state=+trk+est," : "") +
             (chance(50) ? "tcp_flags=+fin" : "tcp_flags=+syn-ack");
    std::vector<std::string> f;
    if (chance(40)) f.push_back(std::string("in_port=") + ports[pick(2)]);
    bool l4 = chance(50);
    if (l4) f.push_back(chance(60) ? "ip_proto=tcp" : "ip_proto=udp");
    if (chance(30)) f.push_back("ip_dst=10.0." + std::to_string(pick(2)) + ".0/" + (chance(50) ? "24" : "25"));
    if (chance(25)) f.push_back("ip_src=10.1.0." + std::to_string(pick(8)));
    if (l4 && chance(50)) {
      int lo = 1000 + pick(20);
      f.push_back("tp_dst=" + std::to_string(lo) + "-" + std::to_string(lo + pick(10)));
    }
    if ((table == 1 && chance(95)) || (table == 2 && chance(50))) {
      const char* st[] = {"+trk+new", "+trk+est", "+trk+est+rpl", "+trk+est-rpl", "+trk+inv", "+trk+rel", "-new"};
      f.push_back(std::string("ct_state=") + st[pick(7)]);
    }
    // Narrow: a rule that matches everything at a random priority would
    // decide for the whole table.
    if (f.empty() || (f.size() == 1 && f[0].rfind("in_port", 0) == 0) || (f.size() == 1 && f[0].rfind("ct_state", 0) == 0))
      f.push_back("ip_src=10.1.0." + std::to_string(pick(8)));
    std::string m;
    for (const auto& x : f) m += (m.empty() ? "" : ",") + x;
    return m;
  };
  auto out = [&] { return std::string("output:") + ports[pick(2)]; };
  // "commit", or with one of three source NAT ranges.
  auto commit = [&] {
    if (!nat || chance(30)) return std::string("commit");
    const char* r[] = {"203.0.113.1", "203.0.113.2-203.0.113.3:20000-20999", "198.51.100.7:1024-1100"};
    return std::string("commit,nat(src=") + r[pick(3)] + ")";
  };
  // ct(commit) goes with +new, as in real rule sets (a second ct() in a
  // path keeps it out of the cache, correctly but uselessly).
  auto actions = [&](int table, bool is_new) -> std::string {
    std::string zone = two_zones && chance(30) ? "zone=1," : "";
    switch (table) {
      case 0: {
        int k = pick(10);
        if (nat && k == 5) return "ct(" + commit() + ",table=1)";
        if (k < 6) return "ct(" + zone + "table=1)";
        if (k == 6) return "set_mark:" + std::to_string(1 + pick(5)) + ",ct(" + zone + "table=1)";
        if (k == 7) return "goto_table:1";
        if (k == 8) return "drop";
        return out();
      }
      case 1: {
        int k = pick(10);
        if (k < 3) return is_new ? "ct(" + commit() + "," + zone + "table=2)" : "goto_table:2";
        if (k < 5) return is_new ? "ct(" + commit() + ")," + out() : out();
        if (k < 7) return "count," + out();
        if (k == 7) return "goto_table:2";
        return "drop";
      }
      default: {
        int k = pick(10);
        if (k < 5) return out();
        if (k < 7) return "set_mark:" + std::to_string(10 + pick(5)) + "," + out();
        if (k < 9) return "drop";
        return is_new ? "ct(" + commit() + ")," + out() : out();
      }
    }
  };
  std::string y = "ports:\n  - {name: inside, devargs: \"net_null0\"}\n  - {name: outside, devargs: \"net_null1\"}\n"
                  "tables:\n";
  for (int t = 0; t < 3; t++) {
    y += "  " + std::to_string(t) + ":\n";
    for (int i = 0; i < per_table; i++) {
      std::string m = match(t);
      y += "    - {priority: " + std::to_string(1 + pick(200)) + ", match: \"" + m + "\", actions: \"" +
           actions(t, m.find("+new") != std::string::npos) + "\"" + (chance(5) ? ", offload: false" : "") + "}\n";
    }
    // A floor, so most traffic reaches conntrack and the later tables, and
    // new connections get committed.
    if (t == 1) y += "    - {priority: 1, match: \"ct_state=+trk+new\", actions: \"ct(" + commit() + ",table=2)\"}\n";
    y += std::string("    - {priority: 0, match: \"\", actions: \"") +
         (t == 0 ? "ct(table=1)" : t == 1 ? "goto_table:2" : "output:outside") + "\"}\n";
  }
  return y;
}

// A connection's next packet: handshakes, data both ways, now and then a
// FIN, an RST, a SYN out of place, a datagram; sequence numbers that mostly
// fit the window.
struct Flow {
  FrameSpec f;
  uint32_t seq[2] = {1000, 5000};
  int step = 0;
  bool udp;
  bool ending = false;
  int options = 0;  // TCP options: 0 none, 1 on every segment (Linux's timestamps), 2 a mix (see next_packet)
  // The connection's source as the server last saw it (its packets out,
  // translated or not): replies go there. gen: which connection of the flow.
  std::string seen;
  uint16_t seen_port = 0;
  int gen = 0;
};

std::vector<uint8_t> next_packet(std::mt19937& rng, Flow& fl, uint16_t* port) {
  // After a FIN or RST, mostly a new connection from another port (a few
  // packets of the old one still come: retransmissions, stragglers).
  if (fl.ending && rng() % 4 != 0) {
    fl.ending = false;
    fl.step = 0;
    fl.seen_port = 0;
    fl.gen++;
    fl.f.sport = static_cast<uint16_t>(30000 + rng() % 30000);
    fl.seq[0] = static_cast<uint32_t>(rng());
    fl.seq[1] = static_cast<uint32_t>(rng());
  }
  int dir = fl.step < 3 ? (fl.step == 1) : static_cast<int>(rng() % 2);
  FrameSpec s = fl.f;
  if (dir) {
    std::swap(s.src, s.dst);
    std::swap(s.sport, s.dport);
    if (fl.seen_port) {
      s.dst = fl.seen;
      s.dport = fl.seen_port;
    }
  }
  *port = static_cast<uint16_t>(dir);
  if (fl.udp) {
    s.proto = IPPROTO_UDP;
    s.payload = rng() % 64;
    fl.step++;
    return ctrack::build_frame(s);
  }
  s.proto = IPPROTO_TCP;
  // (What rx takes the whole way and the lane does not: the cache judges
  // both, a connection's segments of both kinds in order.)
  // Linux's timestamps the lane takes; four NOPs (a data offset of 6) it
  // does not: some connections mix the two kinds segment by segment.
  const std::vector<uint8_t> ts = {1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9}, nops = {1, 1, 1, 1};
  if (fl.options == 1) s.tcp_options = ts;
  else if (fl.options == 2) s.tcp_options = rng() % 2 ? ts : rng() % 2 ? nops : std::vector<uint8_t>{};
  uint8_t flags;
  if (fl.step == 0) flags = ctrack::kSyn;
  else if (fl.step == 1) flags = ctrack::kSyn | ctrack::kAck;
  else if (fl.step == 2) flags = ctrack::kAck;
  else {
    int k = static_cast<int>(rng() % 100);
    flags = k < 94 ? (ctrack::kAck | ctrack::kPsh) : k < 97 ? (ctrack::kFin | ctrack::kAck) : k < 99 ? ctrack::kRst : ctrack::kSyn;
  }
  if (flags & (ctrack::kRst | ctrack::kFin)) fl.ending = true;
  uint32_t len = (flags & ctrack::kPsh) ? 1 + rng() % 100 : 0;
  s.tcp_flags = flags;
  s.seq = fl.seq[dir];
  s.ack = fl.step == 0 ? 0 : fl.seq[!dir];
  s.payload = len;
  if (rng() % 100 == 0) s.seq += 1u << 30;  // far out of the window
  fl.seq[dir] += len + ((flags & (ctrack::kSyn | ctrack::kFin)) ? 1 : 0);
  fl.step++;
  return ctrack::build_frame(s);
}

std::vector<Flow> make_flows(std::mt19937& rng, int n, bool v6 = false) {
  std::vector<Flow> fl(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) {
    Flow& f = fl[static_cast<size_t>(i)];
    f.f.src = "10.1.0." + std::to_string(rng() % 8);
    f.f.dst = "10.0." + std::to_string(rng() % 2) + "." + std::to_string(rng() % 256);
    // IPv6 (rx parses it the long way; the rules' addresses are IPv4, their
    // ports and protocols apply; an IPv4 NAT range refuses it).
    if (v6 && rng() % 8 == 0) {
      f.f.src = "fd00:1::" + std::to_string(1 + rng() % 8);
      f.f.dst = "fd00:2::" + std::to_string(1 + rng() % 200);
    }
    f.f.sport = static_cast<uint16_t>(30000 + rng() % 3000);
    f.f.dport = static_cast<uint16_t>(1000 + rng() % 30);
    f.udp = rng() % 4 == 0;
    // Frames the flow cache's lane does not take (rx does): tagged; and
    // IPv4 without DF (a reassembled datagram may pass the ingress MTU).
    if (rng() % 8 == 0) f.f.vlan = 5;
    f.f.df = rng() % 4 != 0;
    f.options = static_cast<int>(rng() % 4) % 3;  // (half of them none)
  }
  return fl;
}

void expect_same(Side& a, Side& b, uint64_t now, const std::string& what) {
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++)
    EXPECT_EQ(a.st.drop[i], b.st.drop[i]) << what << ": drop " << drop_why_name(static_cast<DropWhy>(i));
  EXPECT_EQ(a.st.rx_packets, b.st.rx_packets) << what;
  ASSERT_EQ(a.pl->rules().size(), b.pl->rules().size());
  for (size_t r = 0; r < a.pl->rules().size(); r++) {
    EXPECT_EQ(a.pl->counters(r).packets, b.pl->counters(r).packets) << what << ": rule " << a.pl->rules()[r].id;
    EXPECT_EQ(a.pl->counters(r).bytes, b.pl->counters(r).bytes) << what << ": rule " << a.pl->rules()[r].id;
  }
  ctrack::Stats x = a.ct->stats(), y = b.ct->stats();
  EXPECT_EQ(x.created, y.created) << what;
  EXPECT_EQ(x.active, y.active) << what;
  EXPECT_EQ(x.closed, y.closed) << what;
  for (int i = 0; i < static_cast<int>(ctrack::Invalid::kCount); i++)
    EXPECT_EQ(x.invalid[i], y.invalid[i]) << what << ": invalid " << ctrack::invalid_name(static_cast<ctrack::Invalid>(i));
  std::vector<std::string> la, lb;
  auto line = [](const ctrack::ConnInfo& c) {
    return c.orig.str() + " " + c.state + " " + std::to_string(c.packets[0]) + "/" + std::to_string(c.packets[1]) +
           " " + std::to_string(c.bytes[0]) + "/" + std::to_string(c.bytes[1]) + " " + std::to_string(c.timeout_ms);
  };
  a.ct->for_each(now, [&](const ctrack::ConnInfo& c) { la.push_back(line(c)); });
  b.ct->for_each(now, [&](const ctrack::ConnInfo& c) { lb.push_back(line(c)); });
  std::sort(la.begin(), la.end());
  std::sort(lb.begin(), lb.end());
  EXPECT_EQ(la, lb) << what;
}

// Random rules, random traffic: with and without the cache, every packet
// gets the same verdict, and every counter and connection ends the same.
// A rule swap halfway changes paths under established connections. (With
// the cache, rx and the cache run as one pass, the lane: this compares it
// with rx and the tables, over frames it takes and frames it leaves to rx.)
TEST(FlowCache, SameVerdictsAndCountersAsTheFullPipeline) {
  uint64_t total_hits = 0, total_packets = 0, nat_translated = 0;
  int seeds_with_hits = 0, single_zone_seeds = 0, nat_in_lines = 0;
  for (unsigned seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    bool two_zones = seed % 4 == 0;
    const bool nat = !two_zones && seed % 2 == 1;  // source NAT in the commits (random_rules)
    auto cfg = parse_config(random_rules(rng, 35, two_zones, nat), "random.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.message();
    ASSERT_GE(cfg->rules.size(), 100u);
    auto cfg2 = parse_config(random_rules(rng, 35, two_zones, nat), "random2.yaml");
    ASSERT_TRUE(cfg2.ok()) << cfg2.message();
    const bool own_entries = seed % 4 == 3;  // (NAT seeds: half each way)
    Side cached(cfg->rules, true, nat, own_entries), plain(cfg->rules, false, nat);
    // Some seeds with MTUs that longer segments pass (port 0's kernel
    // reassembles: without DF they pass it too, and leave in fragments),
    // some with a second worker owning half the connections (handoffs).
    uint8_t rss_key[kRssKeyLen];
    for (uint8_t& k : rss_key) k = static_cast<uint8_t>(rng());
    Steering steer(rss_key, kRssKeyLen, 2);
    for (Side* side : {&cached, &plain}) {
      if (seed % 3 == 1) {
        side->dp->set_mtu(0, 120);
        side->dp->set_mtu(1, 110);
        side->dp->set_reassembled_in(0);
      }
      if (seed % 5 == 2) side->dp->set_steering(&steer, 0);
    }
    auto flows = make_flows(rng, 60, seed % 3 == 0);  // (some seeds with IPv6 flows)
    uint64_t now = 1'000'000'000'000ull;
    const int kPackets = 12000;
    std::vector<std::vector<uint8_t>> frames, frames_b;  // each side its own copy: NAT rewrites them
    std::vector<PacketIn> in, in_b;
    for (int sent = 0; sent < kPackets;) {
      if (sent == kPackets / 2) {
        cached.swap(cfg2->rules);
        plain.swap(cfg2->rules);
      }
      uint32_t burst = 1 + rng() % kMaxBurst;
      frames.clear();
      in.clear();
      in_b.clear();
      std::vector<uint16_t> ports;
      std::vector<std::pair<size_t, int>> of;  // each packet's flow and its connection (Flow::gen)
      for (uint32_t k = 0; k < burst; k++) {
        uint16_t port;
        const size_t fi = rng() % flows.size();
        frames.push_back(next_packet(rng, flows[fi], &port));
        ports.push_back(port);
        of.push_back({fi, flows[fi].gen});
      }
      frames_b = frames;
      for (uint32_t k = 0; k < burst; k++) {
        in.push_back(PacketIn{frames[k].data(), static_cast<uint32_t>(frames[k].size()),
                              static_cast<uint32_t>(frames[k].size()), ports[k], false, 0});
        in_b.push_back(in.back());
        in_b.back().data = frames_b[k].data();
      }
      Verdict va[kMaxBurst], vb[kMaxBurst];
      cached.dp->run(*cached.pl, in.data(), burst, now, va);
      plain.dp->run(*plain.pl, in_b.data(), burst, now, vb);
      for (uint32_t k = 0; k < burst; k++) {
        ASSERT_EQ(va[k].out_port, vb[k].out_port) << "seed " << seed << " packet " << sent + k;
        if (va[k].out_port >= 0) {
          ASSERT_EQ(va[k].strip, vb[k].strip) << "seed " << seed << " packet " << sent + k;
          ASSERT_EQ(frames[k], frames_b[k]) << "seed " << seed << " packet " << sent + k << ": the bytes out";
          // What the server last saw of the connection is where it replies.
          Flow& fl = flows[of[k].first];
          if (ports[k] == 0 && fl.gen == of[k].second) {
            const uint32_t l3 = 14 + (frames[k][12] == 0x81 && frames[k][13] == 0x00 ? 4 : 0);
            const bool six = (frames[k][l3] >> 4) == 6;
            char a[INET6_ADDRSTRLEN];
            inet_ntop(six ? AF_INET6 : AF_INET, frames[k].data() + l3 + (six ? 8 : 12), a, sizeof a);
            fl.seen = a;
            const uint32_t l4 = l3 + (six ? 40 : 20);
            fl.seen_port = static_cast<uint16_t>(frames[k][l4] << 8 | frames[k][l4 + 1]);
          }
        }
        ASSERT_EQ(va[k].ct_state, vb[k].ct_state) << "seed " << seed << " packet " << sent + k;
        ASSERT_EQ(va[k].mark, vb[k].mark) << "seed " << seed << " packet " << sent + k;
        ASSERT_EQ(va[k].handoff, vb[k].handoff) << "seed " << seed << " packet " << sent + k;
        ASSERT_EQ(va[k].frag_mtu, vb[k].frag_mtu) << "seed " << seed << " packet " << sent + k;
      }
      sent += static_cast<int>(burst);
      now += 100'000;  // 0.1 ms a burst: nothing times out
    }
    expect_same(cached, plain, now, "seed " + std::to_string(seed));
    EXPECT_EQ(cached.st.handoff_out, plain.st.handoff_out) << "seed " << seed;
    EXPECT_EQ(plain.st.cache_hits, 0u);
    const int kNat = static_cast<int>(Tunnel::kNat);
    EXPECT_EQ(cached.st.tunnel[kNat], plain.st.tunnel[kNat]) << "seed " << seed << ": packets translated";
    if (nat) nat_translated += cached.st.tunnel[kNat];
    if (nat && !own_entries) {  // the entries are in the tracker's lines
      const ctrack::Tracker::CallerLines cl = cached.ct->nat_caller_lines();
      ASSERT_NE(cl.base, nullptr);
      uint32_t tagged = 0;
      for (uint32_t c = 0; c < cached.ct->capacity(); c++) {
        ctrack::Tracker::Tag t;
        memcpy(&t, cl.base + size_t{c} * cl.stride, sizeof t);
        tagged += t.gen != 0;  // (zero bytes: no generation; remember_path writes one)
      }
      // (A rule set whose paths the cache does not keep writes none; a hit
      // needs a tag. How many varies: seed 9 keeps 3 under qemu-aarch64.)
      if (cached.st.cache_hits) {
        EXPECT_GT(tagged, 0u) << "seed " << seed;
        nat_in_lines++;
      }
    }
    if (!two_zones) seeds_with_hits += cached.st.cache_hits > 0;
    if (!two_zones) single_zone_seeds++;
    total_hits += cached.st.cache_hits;
    total_packets += cached.st.rx_packets;
  }
  printf("[ flowcache ] 20 random rule sets (>= 100 rules each), %llu packets: %llu served by the cache; "
         "%d of %d single-zone rule sets used it; %llu packets translated (NAT rule sets)\n",
         (unsigned long long)total_packets, (unsigned long long)total_hits, seeds_with_hits, single_zone_seeds,
         (unsigned long long)nat_translated);
  // The cache must have been exercised for the comparison to mean anything.
  EXPECT_GT(total_hits, total_packets / 20);
  EXPECT_GT(seeds_with_hits, single_zone_seeds / 2);
  EXPECT_GT(nat_translated, total_packets / 40) << "the NAT seeds translated";
  EXPECT_GE(nat_in_lines, 2) << "NAT seeds served by the cache from the tracker's lines";
}

const char* kFirewall = R"Y(
ports:
  - {name: inside, devargs: "net_null0"}
  - {name: outside, devargs: "net_null1"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 0, match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new", actions: "ct(commit),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 0, match: "", actions: "drop"}
)Y";

struct Conn {
  Side& s;
  uint64_t now = 1'000'000'000'000ull;
  uint32_t cseq = 100, sseq = 900;
  std::vector<uint8_t> options;  // on every segment (Linux's: NOP, NOP, timestamps)
  int vlan = -1;
  Verdict send(bool from_inside, uint8_t flags, uint32_t len = 10) {
    FrameSpec f;
    f.tcp_options = options;
    f.vlan = vlan;
    f.proto = IPPROTO_TCP;
    f.src = from_inside ? "10.0.0.1" : "10.0.0.2";
    f.dst = from_inside ? "10.0.0.2" : "10.0.0.1";
    f.sport = from_inside ? 40000 : 80;
    f.dport = from_inside ? 80 : 40000;
    f.tcp_flags = flags;
    f.seq = from_inside ? cseq : sseq;
    f.ack = from_inside ? sseq : cseq;
    f.payload = (flags & ctrack::kSyn) ? 0 : len;
    (from_inside ? cseq : sseq) += f.payload + ((flags & ctrack::kSyn) ? 1 : 0);
    auto fr = ctrack::build_frame(f);
    PacketIn in{fr.data(), static_cast<uint32_t>(fr.size()), static_cast<uint32_t>(fr.size()),
                static_cast<uint16_t>(from_inside ? 0 : 1), false, 0};
    Verdict v;
    s.dp->run(*s.pl, &in, 1, now, &v);
    now += 1'000'000;
    return v;
  }
};

// What a real lab sends is cached too, not only the plain frames ctrack's
// parse lane takes: Linux's TCP puts timestamps on every segment (a data
// offset of 8), and a trunk port tags its frames.
TEST(FlowCache, SegmentsWithOptionsAndTaggedFramesAreCached) {
  auto cfg = parse_config(kFirewall, "fw.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.message();
  for (int variant = 0; variant < 3; variant++) {
    SCOPED_TRACE(variant == 0 ? "timestamps" : variant == 1 ? "802.1Q" : "both");
    Side s(cfg->rules, true);
    Conn c{s};
    if (variant != 1) c.options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
    if (variant != 0) c.vlan = 7;
    ASSERT_EQ(c.send(true, ctrack::kSyn).out_port, 1);
    ASSERT_EQ(c.send(false, ctrack::kSyn | ctrack::kAck).out_port, 0);
    ASSERT_EQ(c.send(true, ctrack::kAck).out_port, 1);
    for (int i = 0; i < 5; i++) {
      ASSERT_EQ(c.send(true, ctrack::kAck | ctrack::kPsh).out_port, 1);
      ASSERT_EQ(c.send(false, ctrack::kAck | ctrack::kPsh).out_port, 0);
    }
    EXPECT_GE(s.st.cache_hits, 8u) << "established segments took the tables";
  }
}

// A packet the NIC classified (its table-0 rule in a mark) has its ct() in
// the tables; a later packet of the same connection in the burst that the
// cache would judge must not run ahead of it. Here the NIC-classified one
// carries data, and the reply after it acknowledges that data: ahead of
// it, the reply's ACK would be above the window (invalid, dropped).
TEST(FlowCache, AHitWaitsForAnEarlierNicClassifiedPacketOfItsConnection) {
  auto cfg = parse_config(kFirewall, "fw.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.message();
  HwMarkTable table;  // (no output marks: only table-0 rules)
  std::atomic<const HwMarkTable*> marks{&table};
  Side cached(cfg->rules, true), plain(cfg->rules, false);
  uint32_t ct_rule = UINT32_MAX;  // table 0's ct(table=1)
  for (const Rule& r : cfg->rules)
    if (r.table == 0 && r.priority == 50) ct_rule = r.id;
  ASSERT_NE(ct_rule, UINT32_MAX);
  for (Side* s : {&cached, &plain}) s->dp->set_hw_marks(&marks);
  uint64_t now = 1'000'000'000'000ull;
  uint32_t cseq = 100, sseq = 900;
  struct Seg {
    bool from_inside;
    uint8_t flags;
    bool nic;  // classified by the NIC: marked with table 0's ct rule
  };
  auto burst = [&](std::vector<Seg> segs, const std::string& what) {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<PacketIn> in;
    for (const Seg& g : segs) {
      FrameSpec f;
      f.proto = IPPROTO_TCP;
      f.src = g.from_inside ? "10.0.0.1" : "10.0.0.2";
      f.dst = g.from_inside ? "10.0.0.2" : "10.0.0.1";
      f.sport = g.from_inside ? 40000 : 80;
      f.dport = g.from_inside ? 80 : 40000;
      f.tcp_flags = g.flags;
      f.seq = g.from_inside ? cseq : sseq;
      f.ack = g.from_inside ? sseq : cseq;
      f.payload = (g.flags & (ctrack::kSyn | ctrack::kRst)) ? 0 : 10;
      (g.from_inside ? cseq : sseq) += f.payload + ((g.flags & ctrack::kSyn) ? 1 : 0);
      frames.push_back(ctrack::build_frame(f));
    }
    for (size_t k = 0; k < segs.size(); k++)
      in.push_back(PacketIn{frames[k].data(), static_cast<uint32_t>(frames[k].size()),
                            static_cast<uint32_t>(frames[k].size()), static_cast<uint16_t>(segs[k].from_inside ? 0 : 1),
                            segs[k].nic, segs[k].nic ? (HwMarkTable::kTag | HwMarkTable::kRule | ct_rule) : 0});
    Verdict va[kMaxBurst], vb[kMaxBurst];
    cached.dp->run(*cached.pl, in.data(), static_cast<uint32_t>(in.size()), now, va);
    plain.dp->run(*plain.pl, in.data(), static_cast<uint32_t>(in.size()), now, vb);
    now += 1'000'000;
    for (size_t k = 0; k < in.size(); k++) {
      EXPECT_EQ(va[k].out_port, vb[k].out_port) << what << ": packet " << k;
      EXPECT_EQ(va[k].ct_state, vb[k].ct_state) << what << ": packet " << k;
    }
  };
  burst({{true, ctrack::kSyn, false}}, "syn");
  burst({{false, ctrack::kSyn | ctrack::kAck, false}}, "syn-ack");
  burst({{true, ctrack::kAck, false}}, "ack");
  for (int i = 0; i < 3; i++)
    burst({{true, ctrack::kAck | ctrack::kPsh, false}, {false, ctrack::kAck | ctrack::kPsh, false}}, "data");
  ASSERT_GE(cached.st.cache_hits, 4u) << "the connection's paths were not cached";
  EXPECT_EQ(cached.st.hw_marked, 0u);
  burst({{true, ctrack::kAck | ctrack::kPsh, true}, {false, ctrack::kAck | ctrack::kPsh, false}},
        "data the NIC classified, then the reply acknowledging it");
  EXPECT_EQ(cached.st.hw_marked, 1u);
  EXPECT_EQ(plain.st.hw_marked, 1u);
  // The other order: the cache's packet first (done in the lookup's pass,
  // ahead of the NIC-classified one as in the burst), then the reply the
  // NIC classified, which acknowledges it.
  const uint64_t hits = cached.st.cache_hits;
  burst({{true, ctrack::kAck | ctrack::kPsh, false}, {false, ctrack::kAck | ctrack::kPsh, true}},
        "data, then the reply the NIC classified");
  EXPECT_EQ(cached.st.cache_hits, hits + 1);
  EXPECT_EQ(cached.st.hw_marked, 2u);
  expect_same(cached, plain, now, "after the bursts");
}

// A rule change takes effect on the next packet of an established
// connection the cache serves.
TEST(FlowCache, RuleChangeTakesEffectOnTheNextPacket) {
  auto cfg = parse_config(kFirewall, "fw.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.message();
  Side s(cfg->rules, true);
  Conn c{s};
  ASSERT_EQ(c.send(true, ctrack::kSyn).out_port, 1);
  ASSERT_EQ(c.send(false, ctrack::kSyn | ctrack::kAck).out_port, 0);
  ASSERT_EQ(c.send(true, ctrack::kAck).out_port, 1);
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ(c.send(true, ctrack::kAck | ctrack::kPsh).out_port, 1);
    ASSERT_EQ(c.send(false, ctrack::kAck | ctrack::kPsh).out_port, 0);
  }
  EXPECT_GE(s.st.cache_hits, 8u);
  auto drop = cfg->rules;
  auto r = parse_rule_yaml("{table: 1, priority: 300, match: \"ip_proto=tcp,tp_dst=80\", actions: drop}",
                           PortNames{{"inside", "outside"}});
  ASSERT_TRUE(r.ok());
  r->id = 99;
  drop.push_back(*r);
  s.swap(drop);
  uint64_t hits = s.st.cache_hits;
  EXPECT_EQ(c.send(true, ctrack::kAck | ctrack::kPsh).out_port, -1) << "the cached path outlived the rule change";
  EXPECT_EQ(c.send(false, ctrack::kAck | ctrack::kPsh).out_port, 0);  // the reply direction still passes
  EXPECT_EQ(s.st.cache_hits, hits);  // both took the tables under the new rules
  EXPECT_EQ(c.send(false, ctrack::kAck | ctrack::kPsh).out_port, 0);
  EXPECT_EQ(s.st.cache_hits, hits + 1);  // and are cached again
  EXPECT_EQ(s.pl->counters(s.pl->rules().size() - 1).packets, 1u);
}

// An entry reused for a new connection never inherits the old one's path:
// connection A (to port 80, allowed) is cached and flushed; B (to port 22,
// whose established packets the rules drop) takes A's entry.
TEST(FlowCache, AReusedEntryStartsWithoutAPath) {
  std::string y = kFirewall;
  y.replace(y.find("    - {priority: 100, match: \"in_port=inside,ct_state=+trk+est\""), 0,
            "    - {priority: 150, match: \"in_port=inside,ct_state=+trk+est,ip_proto=tcp,tp_dst=22\", actions: \"drop\"}\n");
  auto cfg = parse_config(y, "fw.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.message();
  Side s(cfg->rules, true);
  ctrack::Config cc;
  cc.capacity = 16;
  s.ct = std::move(ctrack::Tracker::create(cc).value());
  s.dp = std::make_unique<Datapath>(0, s.ct.get(), &s.st);
  auto handle = [&] {
    uint32_t h = ctrack::kNoConn;
    s.ct->for_each(0, [&](const ctrack::ConnInfo& c) { h = c.handle; });
    return h;
  };
  Conn a{s};
  a.send(true, ctrack::kSyn);
  a.send(false, ctrack::kSyn | ctrack::kAck);
  a.send(true, ctrack::kAck);
  ASSERT_EQ(a.send(true, ctrack::kAck | ctrack::kPsh).out_port, 1);
  uint64_t hits = s.st.cache_hits;
  ASSERT_EQ(a.send(true, ctrack::kAck | ctrack::kPsh).out_port, 1);
  ASSERT_EQ(s.st.cache_hits, hits + 1);
  uint32_t entry = handle();
  EXPECT_EQ(s.ct->flush(), 1u);

  Conn b{s};
  b.now = a.now;
  auto send22 = [&](bool inside, uint8_t flags) {
    FrameSpec f;
    f.proto = IPPROTO_TCP;
    f.src = inside ? "10.0.0.1" : "10.0.0.2";
    f.dst = inside ? "10.0.0.2" : "10.0.0.1";
    f.sport = inside ? 40000 : 22;
    f.dport = inside ? 22 : 40000;
    f.tcp_flags = flags;
    f.seq = inside ? b.cseq : b.sseq;
    f.ack = inside ? b.sseq : b.cseq;
    f.payload = (flags & ctrack::kSyn) ? 0 : 10;
    (inside ? b.cseq : b.sseq) += f.payload + ((flags & ctrack::kSyn) ? 1 : 0);
    auto fr = ctrack::build_frame(f);
    PacketIn in{fr.data(), static_cast<uint32_t>(fr.size()), static_cast<uint32_t>(fr.size()),
                static_cast<uint16_t>(inside ? 0 : 1), false, 0};
    Verdict v;
    s.dp->run(*s.pl, &in, 1, b.now, &v);
    b.now += 1'000'000;
    return v;
  };
  EXPECT_EQ(send22(true, ctrack::kSyn).out_port, 1);
  ASSERT_EQ(handle(), entry) << "B did not reuse A's entry; the test proves nothing";
  EXPECT_EQ(send22(false, ctrack::kSyn | ctrack::kAck).out_port, 0);
  EXPECT_EQ(send22(true, ctrack::kAck).out_port, -1) << "B took A's cached path";
  EXPECT_EQ(s.st.cache_hits, hits + 1) << "B's first established packet hit A's path";
  EXPECT_EQ(send22(true, ctrack::kAck | ctrack::kPsh).out_port, -1);  // B's own path now: drop
}

}  // namespace
}  // namespace dp

#include <rte_thash.h>

namespace dp {
namespace {

// The owner function is the NIC's RSS: the same Toeplitz hash as DPDK's
// reference rte_softrss over (src, dst, sport, dport), and symmetric with
// the daemon's key.
TEST(Steering, IsRssToeplitzAndSymmetric) {
  uint8_t key[52];
  for (int i = 0; i < 52; i++) key[i] = i % 2 ? 0x5a : 0x6d;
  uint8_t rnd[52];
  std::mt19937 rng(7);
  for (auto& b : rnd) b = static_cast<uint8_t>(rng());
  Steering sym(key, sizeof key, 4), any(rnd, sizeof rnd, 4);
  for (int n = 0; n < 2000; n++) {
    ctrack::Key k{};
    k.family = n % 2 ? 6 : 4;
    int alen = k.family == 6 ? 16 : 4;
    for (int i = 0; i < alen; i++) {
      k.src[i] = static_cast<uint8_t>(rng());
      k.dst[i] = static_cast<uint8_t>(rng());
    }
    k.sport = static_cast<uint16_t>(rng());
    k.dport = static_cast<uint16_t>(rng());
    // rte_softrss takes the tuple as host-order 32-bit words.
    uint8_t bytes[36];
    memcpy(bytes, k.src, static_cast<size_t>(alen));
    memcpy(bytes + alen, k.dst, static_cast<size_t>(alen));
    bytes[2 * alen] = static_cast<uint8_t>(k.sport >> 8);
    bytes[2 * alen + 1] = static_cast<uint8_t>(k.sport);
    bytes[2 * alen + 2] = static_cast<uint8_t>(k.dport >> 8);
    bytes[2 * alen + 3] = static_cast<uint8_t>(k.dport);
    uint32_t words[9];
    int nw = (2 * alen + 4) / 4;
    for (int w = 0; w < nw; w++)
      words[w] = static_cast<uint32_t>(bytes[4 * w]) << 24 | static_cast<uint32_t>(bytes[4 * w + 1]) << 16 |
                 static_cast<uint32_t>(bytes[4 * w + 2]) << 8 | bytes[4 * w + 3];
    ASSERT_EQ(any.hash(k), rte_softrss(words, static_cast<uint32_t>(nw), rnd)) << "tuple " << n;
    ASSERT_EQ(sym.hash(k), rte_softrss(words, static_cast<uint32_t>(nw), key)) << "tuple " << n;
    ASSERT_EQ(sym.owner(k), sym.owner(k.reversed())) << "tuple " << n << ": directions differ";
  }
}

}  // namespace
}  // namespace dp
