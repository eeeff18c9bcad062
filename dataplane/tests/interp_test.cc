// The rules' interpreters agree: for random rule sets and random packets,
// what Datapath::run did (verdict, rules hit in order, ct state), what
// Pipeline::explain narrates for the same packet, and what
// Pipeline::trace_established decides about offloading an established
// packet's path.
//
// The narration's ct() answers come from a second tracker that is fed
// exactly the ct() calls the narration makes (a shadow of the executor's):
// where the two walks agree, both trackers see the same calls and stay
// identical, so any disagreement in the walks shows up.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ctrack/frame.h"
#include "ctrack/parse.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"
#include "dataplane/rules.h"

namespace dp {
namespace {

constexpr int kTables = 4;
const char* const kPorts[] = {"p0", "p1", "wire"};

struct Gen {
  std::mt19937& rng;
  // Per rule set: the NAT range every ct(commit) in a zone carries (the
  // narration's peek is told zone and commit, not the range).
  std::map<int, std::string> zone_nat;
  bool one_zone = false;  // every ct() in zone 0 (the flow cache runs only then)

  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
  bool chance(int pct) { return pick(100) < pct; }

  std::string v4(bool dst) { return dst ? "10.0." + std::to_string(pick(2)) + ".0" : "10.1.0." + std::to_string(pick(8)); }
  std::string match(int t) {
    std::vector<std::string> f;
    if (chance(30)) f.push_back(std::string("in_port=") + kPorts[pick(2)]);
    if (chance(10)) f.push_back("vlan=5");
    if (chance(5)) f.push_back(chance(50) ? "tun_id=100" : "tun_id=0");
    const int fam = pick(10);  // 0-5: IPv4 fields, 6-7: IPv6, 8: eth_type only, 9: nothing of L3
    if (fam < 6) {
      if (chance(20)) f.push_back("eth_type=ipv4");
      if (chance(35)) f.push_back("ip_dst=" + v4(true) + "/" + (chance(50) ? "24" : "25"));
      if (chance(25)) f.push_back(chance(50) ? "ip_src=" + v4(false) + "/32" : "ip_src=10.1.0." + std::to_string(4 * pick(2)) + "/30");
    } else if (fam < 8) {
      if (chance(50)) f.push_back("ipv6_src=2001:db8:1::/" + std::string(chance(50) ? "48" : "126"));
      if (chance(50)) f.push_back("ipv6_dst=2001:db8::" + std::to_string(2 * pick(4)) + "/127");
      if (f.empty() || chance(30)) f.push_back("eth_type=ipv6");
    } else if (fam == 8) {
      const char* et[] = {"eth_type=arp", "eth_type=ipv4", "eth_type=ipv6", "eth_type=nd"};
      f.push_back(et[pick(4)]);
    }
    const bool l3ok = fam < 8;
    if (l3ok && chance(50)) {
      const int p = pick(10);
      const bool v6 = fam >= 6;
      f.push_back(p < 5 ? "ip_proto=tcp" : p < 8 ? "ip_proto=udp" : v6 ? "ip_proto=icmpv6" : "ip_proto=icmp");
      if (p < 8 && chance(40)) {
        const int lo = 1000 + pick(8);
        f.push_back("tp_dst=" + std::to_string(lo) + (chance(50) ? "" : "-" + std::to_string(lo + pick(6))));
      }
      if (p < 8 && chance(15)) f.push_back("tp_src=" + std::to_string(30000 + pick(4)) + "-40000");
      if (p < 5 && chance(one_zone ? 3 : 12)) {
        const char* fl[] = {"+syn", "+syn-ack", "+fin", "+ack", "-ack", "+rst"};
        f.push_back(std::string("tcp_flags=") + fl[pick(6)]);
      }
    }
    if (t > 0 && l3ok && chance(one_zone ? 80 : 60)) {
      const char* st[] = {"+trk+new", "+trk+est", "+trk+est+rpl", "+trk+est-rpl", "+trk+inv", "-new", "+rpl", "-trk"};
      f.push_back(std::string("ct_state=") + st[pick(8)]);
    }
    if (t > 0 && l3ok && chance(15)) f.push_back("ct_zone=" + std::to_string(pick(3)));
    std::string m;
    for (const auto& x : f) m += (m.empty() ? "" : ",") + x;
    return m;
  }
  std::string out() {
    std::string pre;
    if (chance(15)) pre = "set_mark:" + std::to_string(1 + pick(9)) + ",";
    if (chance(10)) pre += "count,";
    if (chance(8)) pre += "encap(vxlan,vni=" + std::string(chance(50) ? "100" : "200") + ",remote=192.0.2.2),";
    return pre + "output:" + kPorts[pick(3)];
  }
  std::string ct(int t) {
    const int zone = one_zone ? 0 : pick(3);
    const bool commit = chance(50);
    std::string a = "ct(" + std::string(commit ? "commit," : "") + (zone ? "zone=" + std::to_string(zone) + "," : "");
    if (commit && zone_nat.count(zone)) a += "nat(" + zone_nat[zone] + "),";
    if (t + 1 < kTables && chance(70)) return a + "table=" + std::to_string(t + 1 + pick(kTables - 1 - t)) + ")";
    if (a == "ct(") a += "zone=0,";
    a.back() = ')';
    return a + "," + (chance(85) ? out() : "drop");
  }
  std::string actions(int t) {
    std::string pre = chance(8) ? "set_mark:" + std::to_string(20 + pick(5)) + "," : "";
    const int k = pick(10);
    if (k < 4) return pre + ct(t);
    if (k < 6 && t + 1 < kTables) return pre + "goto_table:" + std::to_string(t + 1 + pick(kTables - 1 - t));
    if (k < 8) return pre + out();
    return pre + (chance(50) ? "drop" : "count,drop");
  }
  std::string rule_set(int per_table) {
    zone_nat.clear();
    one_zone = chance(40);
    if (one_zone && chance(70)) zone_nat[0] = "src=203.0.113.1-203.0.113.4:1024-65535";
    if (chance(50)) zone_nat[1] = "src=203.0.113.1-203.0.113.4:1024-65535";
    if (chance(30)) zone_nat[2] = chance(50) ? "dst=198.51.100.1-198.51.100.2" : "src=[2001:db8:ff::1]-[2001:db8:ff::2]";
    std::string y = "ports:\n";
    for (const char* p : kPorts) y += std::string("  - {name: ") + p + ", devargs: \"net_null_" + p + "\"}\n";
    y += "overlay:\n  vxlan:\n    local: 192.0.2.1\n    port: wire\n    mac: \"02:00:00:00:01:01\"\n"
         "    vnis: [100, 200]\n    remotes:\n      - {ip: 192.0.2.2, mac: \"02:00:00:00:02:02\"}\n";
    y += "tables:\n";
    for (int t = 0; t < kTables; t++) {
      y += "  " + std::to_string(t) + ":\n";
      const int n = 1 + pick(per_table);
      for (int i = 0; i < n; i++)
        y += "    - {priority: " + std::to_string(1 + pick(50)) + ", match: \"" + match(t) + "\", actions: \"" +
             actions(t) + "\"" + (chance(5) ? ", offload: false" : "") + "}\n";
      // A floor now and then, so that more traffic reaches later tables
      // (else: no_match).
      if (chance(60)) y += "    - {priority: 0, match: \"\", actions: \"" + (t + 1 < kTables && chance(60) ? ct(t) : out()) + "\"}\n";
    }
    return y;
  }
};

// A flow's next packet, either way.
struct Flow {
  ctrack::FrameSpec f;
  bool arp = false;
};

std::vector<uint8_t> arp_frame(const Flow& fl) {
  std::vector<uint8_t> b = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06,
                            0, 1, 0x08, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 1, 0, 1,
                            0, 0, 0, 0, 0, 0, 10, 0, 0, 2};
  if (fl.f.vlan >= 0) b.insert(b.begin() + 12, {0x81, 0x00, 0x00, static_cast<uint8_t>(fl.f.vlan)});
  b.resize(std::max<size_t>(b.size(), 60));
  return b;
}

Flow make_flow(Gen& g) {
  Flow fl;
  const int fam = g.pick(20);
  if (fam == 0) {
    fl.arp = true;
    fl.f.vlan = g.chance(20) ? 5 : -1;
    return fl;
  }
  const bool v6 = fam < 5;
  fl.f.src = v6 ? "2001:db8:1::" + std::to_string(g.pick(6)) : "10.1.0." + std::to_string(g.pick(8));
  fl.f.dst = v6 ? "2001:db8::" + std::to_string(g.pick(8)) : "10.0." + std::to_string(g.pick(2)) + "." + std::to_string(g.pick(256));
  const int p = g.pick(20);
  const int icmp = v6 ? int{IPPROTO_ICMPV6} : int{IPPROTO_ICMP};
  fl.f.proto = static_cast<uint8_t>(p < 10 ? IPPROTO_TCP : p < 17 ? IPPROTO_UDP : icmp);
  fl.f.sport = static_cast<uint16_t>(30000 + g.pick(6));
  fl.f.dport = static_cast<uint16_t>(1000 + g.pick(10));
  fl.f.icmp_id = static_cast<uint16_t>(1 + g.pick(100));
  fl.f.vlan = g.chance(10) ? 5 : -1;
  return fl;
}

std::vector<uint8_t> next_packet(Gen& g, Flow& fl, uint16_t* port) {
  const int dir = g.pick(2);
  *port = static_cast<uint16_t>(g.chance(90) ? dir : 2);
  if (fl.arp) return arp_frame(fl);
  ctrack::FrameSpec s = fl.f;
  if (dir) {
    std::swap(s.src, s.dst);
    std::swap(s.sport, s.dport);
  }
  if (s.proto == IPPROTO_TCP) {
    const uint8_t fl6[] = {ctrack::kSyn, ctrack::kSyn | ctrack::kAck, ctrack::kAck, ctrack::kAck | ctrack::kPsh,
                           ctrack::kAck, ctrack::kFin | ctrack::kAck, ctrack::kRst};
    s.tcp_flags = fl6[g.pick(7)];
    s.seq = static_cast<uint32_t>(1000 + g.pick(3) * 100);
    s.ack = static_cast<uint32_t>(5000 + g.pick(3) * 100);
  } else if (s.proto == IPPROTO_ICMP || s.proto == IPPROTO_ICMPV6) {
    s.icmp_type = static_cast<uint8_t>(s.proto == IPPROTO_ICMP ? (dir ? 0 : 8) : (dir ? 129 : 128));
  }
  s.payload = static_cast<size_t>(g.pick(40));
  return ctrack::build_frame(s);
}

// What the narration says, parsed.
struct Narration {
  std::vector<uint32_t> rules;
  std::string ct_state = "-trk";  // the last ct()'s
  bool encap = false;
  std::string result;
};

Narration parse_narration(const std::vector<std::string>& lines) {
  Narration n;
  for (const std::string& l : lines) {
    size_t at;
    if (l.rfind("table ", 0) == 0 && (at = l.find(": rule ")) != std::string::npos) {
      n.rules.push_back(static_cast<uint32_t>(std::stoul(l.substr(at + 7))));
    } else if (l.rfind("  ct(", 0) == 0) {
      const size_t from = l.find("): ") + 3;
      const size_t to = l.find(':', from);
      n.ct_state = l.substr(from, to == std::string::npos ? std::string::npos : to - from);
    } else if (l.rfind("  encap(vxlan)", 0) == 0) {
      n.encap = true;
    }
    if (l.rfind("result: ", 0) == 0 || l.find("dropped (no_match)") != std::string::npos) n.result = l;
  }
  return n;
}

std::string dump(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  | " + l + "\n";
  return s;
}

ctrack::Config tracker_config() {
  ctrack::Config cc;
  cc.capacity = 4096;
  cc.sweep_per_call = 0;
  cc.nat = true;
  return cc;
}

struct Counts {
  uint64_t pairs = 0, output = 0, rule_drop = 0, no_match = 0, nat_family = 0, cached = 0, ct_est = 0;
  uint64_t offload_checked = 0, offload_refused = 0, rule_sets = 0, encap = 0, natted = 0, other_kind = 0;
};

// The reference for trace_established, from what execution did: the rules
// it hit, and what those rules are. The first thing on the path a NIC may
// not do alone, or null. *nct: the ct() actions run.
// `last_table`: the table a no_match drop happened at (-1: none).
const char* refuse_from_path(const std::vector<const Rule*>& path, uint32_t flag_tables, bool tcp, int last_table,
                             int* nct) {
  *nct = 0;
  for (const Rule* r : path) {
    if (tcp && ((flag_tables >> r->table) & 1)) return "tcp_flags";
    if (!r->offload) return "offload: false";
    for (const Action& a : r->actions) {
      if (a.type == ActType::kCt && ++*nct > 1) return "ct twice";
      if (a.type == ActType::kDrop) return "drops";
      if (a.type == ActType::kOutput && *nct == 0) return "no ct";
    }
  }
  if (tcp && last_table >= 0 && ((flag_tables >> last_table) & 1)) return "tcp_flags";
  return nullptr;
}

TEST(Interpreters, ExecutionNarrationAndOffloadDecisionAgree) {
  constexpr int kRuleSets = 400, kPerSet = 250;
  std::mt19937 rng(30);
  Gen g{rng, {}};
  Counts c;
  uint64_t now = 1'000'000'000'000ull;
  std::unique_ptr<ctrack::Tracker> exec_ct, shadow;
  WorkerStats st;
  std::unique_ptr<Datapath> dp;
  std::vector<Flow> flows;
  for (int set = 0; set < kRuleSets; set++) {
    const std::string yaml = g.rule_set(4);
    auto cfg = parse_config(yaml, "random.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.message() << "\n" << yaml;
    auto built = Pipeline::build(cfg->rules, 1, &cfg->overlay);
    ASSERT_TRUE(built.ok()) << built.message() << "\n" << yaml;
    std::unique_ptr<Pipeline> pl = std::move(built.value());
    c.rule_sets++;
    // Trackers, datapath and traffic live across 10 rule sets (swapped
    // under established connections, as a reload does).
    if (set % 10 == 0) {
      exec_ct = std::move(ctrack::Tracker::create(tracker_config()).value());
      shadow = std::move(ctrack::Tracker::create(tracker_config()).value());
      dp = std::make_unique<Datapath>(0, exec_ct.get(), &st);
      flows.clear();
      for (int i = 0; i < 12; i++) flows.push_back(make_flow(g));
    }
    const PortNames names = cfg->port_names();
    std::map<uint32_t, const Rule*> by_id;
    uint32_t flag_tables = 0;
    for (const Rule& r : pl->rules()) {
      by_id[r.id] = &r;
      if (r.match.has(kMTcpFlags)) flag_tables |= 1u << r.table;
    }
    std::map<int, ctrack::NatRange> nat_of;  // zone -> its ct(commit)s' range
    for (const Rule& r : pl->rules())
      for (const Action& a : r.actions)
        if (a.type == ActType::kCt && a.nat.kind != ctrack::NatKind::kNone) nat_of[a.zone] = a.nat;
    for (int k = 0; k < kPerSet; k++, now += 1'000'000) {
      uint16_t port;
      std::vector<uint8_t> frame = next_packet(g, flows[static_cast<size_t>(g.pick(12))], &port);
      const std::vector<uint8_t> sent = frame;
      ctrack::Parsed pp;
      ASSERT_EQ(ctrack::parse_packet(sent.data(), static_cast<uint32_t>(sent.size()), 0, &pp), ctrack::Drop::kNone);
      pp.ct.in_port = static_cast<uint8_t>(port);
      // The narration first (its peeks run the shadow tracker as the
      // executor will run its own).
      int last_zone = -1;
      bool natted = false;
      bool refused = false;
      auto peek = [&](const ctrack::Packet& p, uint16_t zone, bool commit, std::string* note,
                      ctrack::Key* nat_to) -> uint8_t {
        if (refused) return 0;
        ctrack::Packet q = p;
        q.key.zone = zone;
        if (last_zone == zone) q.meta |= ctrack::kMetaCounted;
        else q.meta &= static_cast<uint8_t>(~ctrack::kMetaCounted);
        const ctrack::Packet* qp = &q;
        ctrack::CtResult r;
        ctrack::Key to{};
        const ctrack::NatRange* nr = commit && nat_of.count(zone) ? &nat_of[zone] : nullptr;
        shadow->process(&qp, 1, now, commit, &r, nr, &to);
        if (r.conn != ctrack::kNoConn) last_zone = zone;
        if (r.nat && !natted) {
          *nat_to = to;
          natted = true;
        }
        *note = "shadow";
        // A new connection the tracker refused (its range is of the other
        // family): the executor drops the packet there; the peek cannot
        // tell the narration so (see below), and asks nothing more for it.
        if (r.reason == ctrack::Invalid::kNatFamily) refused = true;
        return r.state;
      };
      const std::vector<std::string> lines = pl->explain(pp, port, names, peek, 0);
      const Narration n = parse_narration(lines);
      PacketIn in{frame.data(), static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size()), port,
                  false, 0};
      Verdict v;
      PacketNote note;
      dp->run(*pl, &in, 1, now, &v, &note);
      c.pairs++;
      const std::string what = "rule set " + std::to_string(set) + " packet " + std::to_string(k) + " on port " +
                               kPorts[port] + ": verdict out " + std::to_string(v.out_port) + " ct " + ct_state_str(v.ct_state) +
                               " why " + std::to_string(note.why) + (note.cached ? " cached" : "") + "\n" + yaml +
                               "narration:\n" + dump(lines);
      // The two trackers were asked the same: they agree.
      {
        const ctrack::Stats x = exec_ct->stats(), y = shadow->stats();
        ASSERT_EQ(x.created, y.created) << what;
        ASSERT_EQ(x.active, y.active) << what;
        ASSERT_EQ(x.closed, y.closed) << what;
        for (int r = 0; r < static_cast<int>(ctrack::Invalid::kCount); r++)
          ASSERT_EQ(x.invalid[r], y.invalid[r]) << ctrack::invalid_name(static_cast<ctrack::Invalid>(r)) << ": " << what;
      }
      // A ct() the tracker refused (nat_family): the executor drops the packet
      // there; the narration's peek answers with a state alone, so explain
      // cannot say it (not compared beyond this).
      ASSERT_EQ(refused, note.why == 1 + static_cast<int>(DropWhy::kNatFamily)) << what;
      if (refused) {
        c.nat_family++;
        continue;
      }
      // Rules hit, in order.
      std::vector<uint32_t> hit(note.rule_ids, note.rule_ids + note.nrules);
      ASSERT_EQ(hit, n.rules) << what;
      c.cached += note.cached;
      // The outcome.
      const uint8_t why = note.why;
      if (v.out_port >= 0) {
        c.output++;
        ASSERT_EQ(why, 0) << what;
        ASSERT_EQ(n.result, "result: output to " + std::string(kPorts[v.out_port]) +
                                (v.mark ? ", mark " + std::to_string(v.mark) : ""))
            << what;
        ASSERT_EQ(n.encap, v.encap > 0) << what;
        c.encap += v.encap > 0;
      } else if (why == 1 + static_cast<int>(DropWhy::kRule)) {
        c.rule_drop++;
        ASSERT_FALSE(hit.empty()) << what;
        ASSERT_EQ(n.result, "result: dropped by rule " + std::to_string(hit.back()) + " (rule_drop)") << what;
      } else if (why == 1 + static_cast<int>(DropWhy::kNoMatch)) {
        c.no_match++;
        ASSERT_NE(n.result.find("dropped (no_match)"), std::string::npos) << what;
        ASSERT_EQ(n.result.rfind("table ", 0), 0u) << what;
      } else {
        FAIL() << "an outcome the test does not expect (why " << int{why} << "): " << what;
      }
      ASSERT_EQ(ct_state_str(v.ct_state), n.ct_state) << what;
      if (pp.kind != ctrack::L3Kind::kIp) c.other_kind++;
      // The offload decision, for an established packet whose path ran one
      // ct() (with two, the first one's state is not the last's, which is
      // all the verdict tells) and no VLAN (a connection's flow matches none).
      const uint8_t est = ctrack::kCtTrk | ctrack::kCtEst;
      if (pp.kind != ctrack::L3Kind::kIp || pp.vlan != 0 || (v.ct_state & ~ctrack::kCtRpl) != est) continue;
      c.ct_est++;
      std::vector<const Rule*> path;
      for (uint32_t id : hit) path.push_back(by_id.at(id));
      // Where a no_match drop happened: the table the last rule sent it to.
      int last_table = -1;
      if (note.why == 1 + static_cast<int>(DropWhy::kNoMatch)) {
        last_table = 0;
        if (!path.empty())
          for (const Action& a : path.back()->actions)
            if ((a.type == ActType::kGotoTable || a.type == ActType::kCt) && a.table >= 0) last_table = a.table;
      }
      int total = 0, nct = 0;
      for (const Rule* r : path)
        for (const Action& a : r->actions) total += a.type == ActType::kCt;
      const char* want =
          refuse_from_path(path, flag_tables, pp.ct.key.proto == IPPROTO_TCP, last_table, &nct);
      // With two ct()s the trace's walk after the first depends on that
      // one's state, which the verdict does not tell (it has the last's),
      // unless the path is refused before any ct().
      if (total != 1 && !(want && nct == 0)) continue;
      int zone = -1;
      for (const Rule* r : path)
        for (const Action& a : r->actions)
          if (a.type == ActType::kCt && zone < 0) zone = a.zone;
      ctrack::Key wire = pp.ct.key;
      wire.zone = static_cast<uint16_t>(zone);
      ctrack::Parsed after;
      ASSERT_EQ(ctrack::parse_packet(frame.data(), static_cast<uint32_t>(frame.size()), 0, &after), ctrack::Drop::kNone);
      ctrack::Key after_ct = after.ct.key;
      after_ct.zone = wire.zone;
      const bool nat = memcmp(after_ct.src, wire.src, 16) != 0 || memcmp(after_ct.dst, wire.dst, 16) != 0 ||
                       after_ct.sport != wire.sport || after_ct.dport != wire.dport;
      c.natted += nat;
      const Pipeline::Trace tr =
          pl->trace_established(wire, port, (v.ct_state & ctrack::kCtRpl) != 0, 0, nat ? &after_ct : nullptr);
      c.offload_checked++;
      ASSERT_EQ(tr.refuse != nullptr, want != nullptr)
          << "offload: trace says " << (tr.refuse ? tr.refuse : "may") << ", the executed path: "
          << (want ? want : "may") << "\n" << what;
      if (want) {
        c.offload_refused++;
        continue;
      }
      ASSERT_EQ(tr.out_port, v.out_port) << what;
      ASSERT_EQ(tr.encap != 0, v.encap != 0) << what;
      ASSERT_TRUE(by_id.count(tr.ct_rule)) << what;
    }
  }
  printf("interpreter differential: %llu (rules, packet) pairs over %llu rule sets agree: %llu output (%llu encap), "
         "%llu rule_drop, %llu no_match, %llu nat_family (not narrated), %llu not IP, %llu from the flow cache; "
         "offload decision checked on %llu established packets (%llu refused, %llu translated)\n",
         static_cast<unsigned long long>(c.pairs), static_cast<unsigned long long>(c.rule_sets),
         static_cast<unsigned long long>(c.output), static_cast<unsigned long long>(c.encap),
         static_cast<unsigned long long>(c.rule_drop), static_cast<unsigned long long>(c.no_match),
         static_cast<unsigned long long>(c.nat_family), static_cast<unsigned long long>(c.other_kind),
         static_cast<unsigned long long>(c.cached), static_cast<unsigned long long>(c.offload_checked),
         static_cast<unsigned long long>(c.offload_refused), static_cast<unsigned long long>(c.natted));
  EXPECT_EQ(c.pairs, 100'000u);
  // The mix is broad enough to mean something.
  EXPECT_GT(c.output, 10'000u);
  EXPECT_GT(c.rule_drop, 5'000u);
  EXPECT_GT(c.no_match, 5'000u);
  EXPECT_GT(c.cached, 1'000u);
  EXPECT_GT(c.offload_checked, 2'000u);
  EXPECT_GT(c.offload_refused, 200u);
  EXPECT_GT(c.offload_checked - c.offload_refused, 500u);
}

}  // namespace
}  // namespace dp
