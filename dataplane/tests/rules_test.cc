// Rule grammar and config loading: what parses, and the errors for what doesn't.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <netinet/in.h>

#include "dataplane/config.h"
#include "features/conntrack/config.h"
#include "offload/config.h"

namespace dp {
namespace {

PortNames two_ports() { return PortNames{{"inside", "outside"}}; }

TEST(Match, ParsesEveryField) {
  auto m = parse_match(
      "in_port=outside, eth_type=ipv4, vlan=7, ip_src=10.0.0.0/8, ip_dst=192.168.1.1, ip_proto=tcp, "
      "tp_src=1000-2000, tp_dst=80, tcp_flags=+syn-ack, ct_state=+trk+new-est, ct_zone=9",
      two_ports());
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->in_port, 1);
  EXPECT_EQ(m->eth_type, kEthIpv4);
  EXPECT_EQ(m->vlan, 7);
  EXPECT_EQ(m->src_len, 8);
  EXPECT_EQ(m->dst_len, 32);
  EXPECT_EQ(m->proto, IPPROTO_TCP);
  EXPECT_EQ(m->tp_src_lo, 1000);
  EXPECT_EQ(m->tp_src_hi, 2000);
  EXPECT_EQ(m->tp_dst_lo, 80);
  EXPECT_EQ(m->tp_dst_hi, 80);
  EXPECT_EQ(m->tcp_flags, ctrack::kSyn);
  EXPECT_EQ(m->tcp_flags_mask, ctrack::kSyn | ctrack::kAck);
  EXPECT_EQ(m->ct_state, ctrack::kCtTrk | ctrack::kCtNew);
  EXPECT_EQ(m->ct_state_mask, ctrack::kCtTrk | ctrack::kCtNew | ctrack::kCtEst);
  EXPECT_TRUE(m->applies_v4());
  EXPECT_FALSE(m->applies_v6());
  EXPECT_FALSE(m->applies_other());
  auto any = parse_match("", two_ports());
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->applies_v4() && any->applies_v6() && any->applies_other());
  auto v6 = parse_match("ipv6_dst=fd00::/64", two_ports());
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->applies_v6());
  EXPECT_FALSE(v6->applies_v4());
}

TEST(Match, RejectsBadInputWithReasons) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"in_port=nowhere", "no port named 'nowhere'"},
      {"ip_srcc=1.2.3.4", "unknown match field 'ip_srcc'"},
      {"ip_src=10.0.0.1/8", "host bits set"},
      {"ip_src=10.0.0.0/33", "prefix length"},
      {"ip_src=fd00::1", "not an IPv4 address"},
      {"tp_dst=80", "need ip_proto"},
      {"ip_proto=udp,tp_dst=90-80", "N <= M"},
      {"ip_proto=udp,tp_dst=70000", "0..65535"},
      {"ct_state=+trk+bogus", "unknown flag 'bogus'"},
      {"ct_state=trk", "needs + or -"},
      {"tcp_flags=+syn", "needs ip_proto=tcp"},
      {"vlan=5000", "0..4095"},
      {"eth_type=arp,ip_proto=tcp", "non-IP eth_type"},
      {"ip_src=10.0.0.0/8,ipv6_dst=fd00::/8", "mixes IPv4 and IPv6"},
      {"vlan=1,vlan=2", "given twice"},
      {"ip_proto", "expected FIELD=VALUE"},
  };
  for (const auto& c : cases) {
    auto m = parse_match(c.text, two_ports());
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_NE(m.message().find(c.want), std::string::npos) << c.text << " -> " << m.message();
  }
}

TEST(Actions, ParseAndCheck) {
  auto a = parse_actions("ct(commit,zone=5,table=2)", two_ports());
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_EQ(a->size(), 1u);
  EXPECT_TRUE((*a)[0].commit);
  EXPECT_EQ((*a)[0].zone, 5);
  EXPECT_EQ((*a)[0].table, 2);
  a = parse_actions("count, set_mark:7, ct(commit), output:outside", two_ports());
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_EQ(a->size(), 4u);
  EXPECT_EQ((*a)[3].port, 1);

  Rule r;
  r.table = 1;
  r.actions = *a;
  EXPECT_TRUE(check_rule(r).ok());
  r.actions = *parse_actions("output:inside, count", two_ports());
  EXPECT_NE(check_rule(r).message().find("never run"), std::string::npos);
  r.actions = *parse_actions("count", two_ports());
  EXPECT_NE(check_rule(r).message().find("last action must be"), std::string::npos);
  r.actions = *parse_actions("goto_table:1", two_ports());
  EXPECT_NE(check_rule(r).message().find("only go forward"), std::string::npos);
  r.actions = *parse_actions("ct(commit),ct(table=3)", two_ports());
  EXPECT_NE(check_rule(r).message().find("at most one ct"), std::string::npos);

  EXPECT_NE(parse_actions("output:mars", two_ports()).message().find("no port named"), std::string::npos);
  EXPECT_NE(parse_actions("ct(zone=99999)", two_ports()).message().find("zone must be"), std::string::npos);
  EXPECT_NE(parse_actions("ct(snat)", two_ports()).message().find("unknown ct argument"), std::string::npos);
}

TEST(Actions, NatRangesAsOvsWritesThem) {
  auto a = parse_actions("ct(commit,nat(src=203.0.113.1-203.0.113.4:1024-2047),table=1)", two_ports());
  ASSERT_TRUE(a.ok()) << a.message();
  const ctrack::NatRange& n = (*a)[0].nat;
  EXPECT_EQ(n.kind, ctrack::NatKind::kSrc);
  EXPECT_EQ(n.family, 4);
  EXPECT_EQ(n.addr_min[3], 1);
  EXPECT_EQ(n.addr_max[3], 4);
  EXPECT_EQ(n.port_min, 1024);
  EXPECT_EQ(n.port_max, 2047);
  EXPECT_EQ(nat_str(n), "src=203.0.113.1-203.0.113.4:1024-2047");
  auto d = parse_actions("ct(commit,nat(dst=10.1.0.20:8080)),output:inside", two_ports());
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(nat_str((*d)[0].nat), "dst=10.1.0.20:8080");
  auto v6 = parse_actions("ct(commit,nat(src=[2001:db8::1]-[2001:db8::ff]:5000))", two_ports());
  ASSERT_TRUE(v6.ok()) << v6.message();
  EXPECT_EQ(nat_str((*v6)[0].nat), "src=[2001:db8::1]-[2001:db8::ff]:5000");
  EXPECT_TRUE(parse_actions("ct(nat,table=1)", two_ports()).ok());
  struct Bad {
    const char* text;
    const char* want;
  } bad[] = {
      {"ct(commit,nat(src=1.2.3.5-1.2.3.4))", "ends before it starts"},
      {"ct(commit,nat(src=1.2.3.4-[2001:db8::1]))", "of one family"},
      {"ct(commit,nat(src=[2001:db8::1]-[2001:db9::1]))", "only in its last 32 bits"},
      {"ct(commit,nat(src=1.2.3.4:2000-1000))", "within 1..65535"},
      {"ct(commit,nat(src=1.2.3.4:0))", "within 1..65535"},
      {"ct(commit,nat(via=1.2.3.4))", "expected src="},
      {"ct(commit,nat(src=mars))", "expected an address"},
  };
  for (const Bad& b : bad)
    EXPECT_NE(parse_actions(b.text, two_ports()).message().find(b.want), std::string::npos)
        << b.text << ": " << parse_actions(b.text, two_ports()).message();
  Rule r;
  r.actions = *parse_actions("ct(nat(src=1.2.3.4)),output:inside", two_ports());
  EXPECT_NE(check_rule(r).message().find("choose a translation at commit"), std::string::npos);
  EXPECT_NE(parse_actions("flood", two_ports()).message().find("unknown action"), std::string::npos);
  EXPECT_NE(parse_actions("", two_ports()).message().find("no actions"), std::string::npos);
}

const char* kGood = R"Y(# a comment
eal: {file_prefix: t1, no_huge: true}
ports:
  - {name: inside, devargs: "net_af_packet0,iface=a"}
  - {name: outside, devargs: "net_af_packet1,iface=b", mtu: 9000}
workers: {lcores: [1], burst: 32}
conntrack:
  capacity: 1000
  full_policy: pass
  timeouts: {udp_unreplied: 10, tcp_established: 3600}
  zones: {default_limit: 100, limits: {5: 7}}
tables:
  0:
    - {priority: 10, match: "eth_type=arp", actions: "drop"}
    - {id: 42, priority: 5, match: "", actions: "ct(table=1)"}
  1:
    - {priority: 1, match: "ct_state=+trk+est", actions: "output:outside"}
)Y";

TEST(Config, LoadsAGoodFile) {
  auto c = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->ports.size(), 2u);
  EXPECT_EQ(c->ports[1].mtu, 9000);
  EXPECT_EQ(c->ct.capacity, 1000u);
  EXPECT_EQ(c->ct.full_policy, ctrack::FullPolicy::kPassUntracked);
  EXPECT_EQ(c->ct.timeouts.udp[ctrack::kUdpUnreplied], 10u);
  EXPECT_EQ(c->ct.default_zone_limit, 100u);
  ASSERT_EQ(c->ct.zone_limits.size(), 1u);
  EXPECT_EQ(c->ct.zone_limits[0].first, 5);
  ASSERT_EQ(c->rules.size(), 3u);
  EXPECT_EQ(c->rules[1].id, 42u);
  EXPECT_EQ(c->rules[0].id, 1u);
  EXPECT_EQ(c->rules[2].table, 1);
  EXPECT_EQ(c->control_socket, "/run/dataplane/t1.sock");
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}

TEST(Config, NatRoomFollowsTheRules) {
  EXPECT_FALSE(parse_config(kGood, "good.yaml")->ct.nat);
  auto c = parse_config(replace(kGood, "\"output:outside\"}", "\"ct(commit,nat(src=192.0.2.1)),output:outside\"}"),
                        "nat.yaml");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_TRUE(c->ct.nat);
  // Same pool in two rules: one pool.
  auto same = parse_config(replace(kGood, "\"output:outside\"}",
                                   "\"ct(commit,nat(src=192.0.2.1)),output:outside\"}\n"
                                   "    - {priority: 2, match: \"\", actions: \"ct(commit,nat(src=192.0.2.1)),output:inside\"}"),
                           "nat.yaml");
  EXPECT_TRUE(same.ok()) << same.message();
  auto asked = parse_config(replace(kGood, "capacity: 1000", "capacity: 1000\n  nat: true"), "nat.yaml");
  ASSERT_TRUE(asked.ok()) << asked.message();
  EXPECT_TRUE(asked->ct.nat);
}

TEST(Config, ErrorsNameFileLineAndKey) {
  struct Case {
    std::string text;
    std::string want;
  } cases[] = {
      {replace(kGood, "capacity: 1000", "capacity: lots"), "bad.yaml:8: key 'conntrack.capacity': 'lots' is not a number"},
      {replace(kGood, "capacity: 1000", "capacty: 1000"), "bad.yaml:8: key 'conntrack.capacty': unknown key"},
      {replace(kGood, "full_policy: pass", "full_policy: maybe"), "bad.yaml:9: key 'conntrack.full_policy'"},
      {replace(kGood, "mtu: 9000", "mtu: 20000"), "bad.yaml:5: key 'ports[1].mtu': '20000' is out of range"},
      {replace(kGood, "\"ct_state=+trk+est\"", "\"ct_state=+trk+sideways\""),
       "bad.yaml:17: key 'tables.1[0].match': 'ct_state=+trk+sideways': unknown flag"},
      {replace(kGood, "\"output:outside\"", "\"output:mars\""), "bad.yaml:17: key 'tables.1[0].actions'"},
      {replace(kGood, "name: outside,", "name: inside,"), "bad.yaml:5: key 'ports[1].name': duplicate port name"},
      {replace(kGood, "lcores: [1]", "lcores: [0]"), "key 'workers.lcores': lcore 0 is the main"},
      {replace(kGood, "{priority: 10,", "{id: 42, priority: 10,"), "bad.yaml:15: key 'tables.0[1].id': duplicate rule id 42"},
      {replace(kGood, "tables:", "tablez:"), "bad.yaml:12: key 'tablez': unknown key"},
      {replace(kGood, "workers: {", "workers: {{"), "bad.yaml:6: YAML syntax"},
      {replace(kGood, "\"ct(table=1)\"", "\"goto_table:0\""), "tables only go forward"},
      // Repeated keys: yaml-cpp would keep the first silently.
      {replace(kGood, "capacity: 1000", "capacity: 1000\n  capacity: 5"),
       "bad.yaml:9: key 'conntrack.capacity': duplicate key (first at line 8)"},
      {replace(kGood, "  1:\n", "  0:\n    - {priority: 1, match: \"\", actions: drop}\n  1:\n"),
       "bad.yaml:16: key 'tables.0': duplicate key (first at line 13)"},
      // Jumps into tables that have no rules.
      {replace(kGood, "\"ct(table=1)\"", "\"ct(table=7)\""),
       "bad.yaml:15: key 'tables.0.actions': rule 42 goes to table 7, which has no rules"},
      {replace(kGood, "\"ct(table=1)\"", "\"goto_table:9\""), "goes to table 9, which has no rules"},
      {replace(kGood, "iface=b", "iface=a"), "bad.yaml:5: key 'ports[1].devargs': port 'inside' is already on interface a"},
      {replace(kGood, "net_af_packet1,iface=b", "net_af_packet0,iface=c"), "another port already uses the DPDK port 'net_af_packet0'"},
      {replace(kGood, "tables:", "control: {socket: 5}\ntables:"), "bad.yaml:12: key 'control.socket': '5' is not an absolute path"},
      {replace(kGood, "tables:", "control: {socket: /run/" + std::string(110, 'x') + "}\ntables:"),
       "key 'control.socket': '/run/xxx"},
      {replace(kGood, "file_prefix: t1", "file_prefix: ../x"), "bad.yaml:2: key 'eal.file_prefix': '../x': use letters"},
      // NAT: pools of one kind are the same or apart; translation needs commit and the tracker's room.
      {replace(kGood, "\"output:outside\"}", "\"ct(commit,nat(src=192.0.2.1-192.0.2.9)),output:outside\"}\n"
                                              "    - {priority: 2, match: \"ip_proto=udp\", actions: "
                                              "\"ct(commit,nat(src=192.0.2.9:4000-5000)),output:outside\"}"),
       "bad.yaml:18: key 'tables.1.actions': rule 3's nat(src=192.0.2.9:4000-5000) overlaps rule 2's "
       "nat(src=192.0.2.1-192.0.2.9)"},
      {replace(kGood, "\"output:outside\"}", "\"ct(nat(dst=192.0.2.1)),output:outside\"}"),
       "bad.yaml:17: key 'tables.1[0].actions': nat(src=...) and nat(dst=...) choose a translation at commit"},
      {replace(replace(kGood, "\"output:outside\"}", "\"ct(commit,nat(dst=192.0.2.1)),output:outside\"}"),
               "capacity: 1000", "capacity: 1000\n  nat: false"),
       "bad.yaml:9: key 'conntrack.nat': is false, but rules translate"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.text, "bad.yaml");
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.message().find(c.want), std::string::npos) << "got: " << r.message() << "\nwant: " << c.want;
  }
  auto missing = load_config("/nonexistent/dataplane.yaml");
  auto dir = load_config("/tmp");
  EXPECT_NE(dir.message().find("/tmp: is a directory"), std::string::npos) << dir.message();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent/dataplane.yaml: cannot open"), std::string::npos);
}

// Issue 28 item 19d: a pool no host answers from (unspecified, loopback,
// multicast, broadcast) is refused, for src= and dst=, a whole range that
// reaches into one too; so is a second nat in one ct(). The edges stay.
TEST(Actions, NatPoolsNoHostAnswersFromAndTwoNatsAreRefused) {
  struct Bad {
    const char* pool;
    const char* want;
  } bad[] = {
      {"0.0.0.0", "0.0.0.0/8 (this network)"},
      {"0.1.2.3", "0.0.0.0/8 (this network)"},
      {"255.255.255.255", "255.255.255.255 (broadcast)"},
      {"224.0.0.1", "224.0.0.0/4 (multicast)"},
      {"239.255.255.255:1000", "224.0.0.0/4 (multicast)"},
      {"223.255.255.250-224.0.0.3", "224.0.0.0/4 (multicast)"},
      {"127.0.0.1", "127.0.0.0/8 (loopback)"},
      {"126.255.255.255-127.0.0.0", "127.0.0.0/8 (loopback)"},
      {"[::]", ":: (unspecified)"},
      {"[::]-[::5]", ":: (unspecified)"},
      {"[::1]", "::1 (loopback)"},
      {"[ff02::1]", "ff00::/8 (multicast)"},
      {"[ff00::]-[ff00::9]:80", "ff00::/8 (multicast)"},
  };
  for (const Bad& b : bad)
    for (const char* kind : {"src=", "dst="}) {
      const std::string text = std::string("ct(commit,nat(") + kind + b.pool + "))";
      auto r = parse_actions(text, two_ports());
      EXPECT_FALSE(r.ok()) << text << " was accepted";
      if (r.ok()) continue;
      EXPECT_NE(r.message().find(std::string("'nat(") + kind + b.pool + ")'"), std::string::npos) << text << ": " << r.message();
      EXPECT_NE(r.message().find(b.want), std::string::npos) << text << ": " << r.message();
      EXPECT_NE(r.message().find("not an address to translate to"), std::string::npos) << text << ": " << r.message();
    }
  for (const char* good : {"1.0.0.0", "126.255.255.255", "128.0.0.0", "223.255.255.255", "240.0.0.1",
                           "255.255.255.254", "[::2]", "[::2]-[::9]", "[fe80::1]", "[2001:db8::1]"}) {
    auto r = parse_actions(std::string("ct(commit,nat(src=") + good + "))", two_ports());
    EXPECT_TRUE(r.ok()) << good << ": " << r.message();
  }
  for (const char* two : {"ct(commit,nat(src=192.0.2.1),nat(src=192.0.2.2))",
                          "ct(commit,nat(src=192.0.2.1),nat(dst=10.0.0.1))", "ct(nat,nat,table=1)",
                          "ct(commit,nat,nat(src=192.0.2.1))"}) {
    auto r = parse_actions(two, two_ports());
    EXPECT_FALSE(r.ok()) << two << " was accepted";
    if (r.ok()) continue;
    EXPECT_NE(r.message().find("one nat per ct()"), std::string::npos) << two << ": " << r.message();
  }
  // In a file: file:line: key, as every rule error.
  const std::string body = R"Y(eal: {file_prefix: t1, no_huge: true}
ports:
  - {name: inside, devargs: "net_af_packet0,iface=a"}
  - {name: outside, devargs: "net_af_packet1,iface=b"}
workers: {lcores: [1]}
tables:
  0:
    - {priority: 1, match: "in_port=inside", actions: "ct(commit,nat(src=POOL)),output:outside"}
)Y";
  auto mc = parse_config(replace(body, "POOL", "224.0.0.1"), "nat.yaml");
  ASSERT_FALSE(mc.ok());
  EXPECT_NE(mc.message().find("nat.yaml:8: key 'tables.0[0].actions': 'nat(src=224.0.0.1)': '224.0.0.1': in "
                              "224.0.0.0/4 (multicast): not an address to translate to"),
            std::string::npos)
      << mc.message();
  auto twice = parse_config(replace(body, "POOL)", "192.0.2.1),nat(src=192.0.2.2)"), "nat.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("nat.yaml:8: key 'tables.0[0].actions': "), std::string::npos) << twice.message();
  EXPECT_NE(twice.message().find("one nat per ct()"), std::string::npos) << twice.message();
  EXPECT_TRUE(parse_config(replace(body, "POOL", "192.0.2.1"), "nat.yaml").ok());
}

// Aliases: yaml-cpp shares the aliased node, so a cycle loops any walk
// until the stack runs out and nested aliases explode (issue 19, item 1).
std::string alias_bomb() {
  std::string t = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; i++) {
    t += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; k++) t += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    t += "]\n";
  }
  return t;
}

TEST(Config, AliasCyclesAndAliasBombsAreRefusedWithTheLine) {
  auto cyc = parse_config(replace(kGood, "tables:", "x: &a [*a]\ntables:"), "bad.yaml");
  ASSERT_FALSE(cyc.ok());
  EXPECT_NE(cyc.message().find("bad.yaml:12: YAML an alias inside the node it refers to"), std::string::npos)
      << cyc.message();
  auto map_cyc = parse_config(replace(kGood, "tables:", "x: &m {y: *m}\ntables:"), "bad.yaml");
  ASSERT_FALSE(map_cyc.ok());
  EXPECT_NE(map_cyc.message().find("a cycle"), std::string::npos) << map_cyc.message();
  const auto t0 = std::chrono::steady_clock::now();
  auto bomb = parse_config(replace(kGood, "tables:", alias_bomb() + "tables:"), "bad.yaml");
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.message().find("aliases expand to more than"), std::string::npos) << bomb.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto rule = parse_rule_yaml("{table: 1, priority: 3, actions: drop, x: &a [*a]}", two_ports());
  ASSERT_FALSE(rule.ok());
  EXPECT_NE(rule.message().find("a cycle"), std::string::npos) << rule.message();
  // A plain alias stays usable (and a repeated key inside it is still found).
  auto ok = parse_config(replace(kGood, "timeouts: {udp_unreplied: 10, tcp_established: 3600}",
                                 "timeouts: &t {udp_unreplied: 10, tcp_established: 3600}"),
                         "good.yaml");
  EXPECT_TRUE(ok.ok()) << ok.message();
  auto two_docs = parse_config(kGood + std::string("---\neal: {file_prefix: t2}\n"), "bad.yaml");
  ASSERT_FALSE(two_docs.ok());
  EXPECT_NE(two_docs.message().find("more than one YAML document"), std::string::npos) << two_docs.message();
}

TEST(Config, NumbersAreDecimalOrHexAndKeysAreTheFilesOwn) {
  auto octal = parse_config(replace(kGood, "mtu: 9000", "mtu: 01000"), "bad.yaml");
  ASSERT_FALSE(octal.ok()) << "01000 read as " << (octal.ok() ? octal->ports[1].mtu : 0);
  EXPECT_NE(octal.message().find("bad.yaml:5: key 'ports[1].mtu': '01000': a leading zero"), std::string::npos)
      << octal.message();
  auto hex = parse_config(replace(kGood, "capacity: 1000", "capacity: 0x400"), "good.yaml");
  ASSERT_TRUE(hex.ok()) << hex.message();
  EXPECT_EQ(hex->ct.capacity, 1024u);
  auto zero = parse_config(replace(kGood, "default_limit: 100", "default_limit: 0"), "good.yaml");
  EXPECT_TRUE(zero.ok()) << zero.message();
  auto cpus = parse_config(replace(kGood, "lcores: [1],", "lcores: [1], cpus: [x],"), "bad.yaml");
  ASSERT_FALSE(cpus.ok());
  EXPECT_NE(cpus.message().find("key 'workers.cpus[0]': 'x' is not a number"), std::string::npos) << cpus.message();
  auto zl = parse_config(replace(kGood, "limits: {5: 7}", "limits: {5: lots}"), "bad.yaml");
  ASSERT_FALSE(zl.ok());
  EXPECT_NE(zl.message().find("key 'conntrack.zones.limits.5': 'lots' is not a number"), std::string::npos)
      << zl.message();
  auto tb = parse_config(replace(kGood, "  1:\n", "  one:\n"), "bad.yaml");
  ASSERT_FALSE(tb.ok());
  EXPECT_NE(tb.message().find("key 'tables.one': 'one' is not a number"), std::string::npos) << tb.message();
}

TEST(Config, OnlyRegularFilesAreRead) {
  auto dev = load_config("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.message().find("/dev/zero: not a regular file"), std::string::npos) << dev.message();
  std::string fifo = "/tmp/dp-config-fifo-" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = load_config(fifo);  // would block forever if opened
  unlink(fifo.c_str());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.message().find("not a regular file"), std::string::npos) << f.message();
}

// A reload asks each section what changed: moved lines change nothing;
// each field that needs a restart is refused in that section's words;
// conntrack's timeouts apply.
TEST(ConfigReload, EachSectionRefusesWhatNeedsARestart) {
  auto base = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(base.ok()) << base.message();
  struct Case {
    std::string from, to, why;  // why: "" = nothing refused
    bool timeouts = false;
  } cases[] = {
      {"ports:\n", "# moved\n\nports:\n", ""},
      {"workers: {lcores: [1], burst: 32}", "workers:\n  lcores:\n    - 1\n  burst: 32", ""},
      {"mtu: 9000}", "mtu: 1500}", "ports: 'outside' mtu '9000' -> '1500' (ports need a restart)"},
      {"net_af_packet0,iface=a\"}", "net_af_packet0,iface=c\"}",
       "ports: 'inside' devargs 'net_af_packet0,iface=a' -> 'net_af_packet0,iface=c' (ports need a restart)"},
      {"name: inside", "name: lan",
       "ports: 'lan' added (ports need a restart); ports: 'inside' removed (ports need a restart)"},
      {"burst: 32", "burst: 16", "workers: changed (needs a restart)"},
      {"lcores: [1]", "lcores: [1], cpus: [0]", "workers: changed (needs a restart)"},
      {"capacity: 1000", "capacity: 2000",
       "conntrack: only timeouts change on reload (capacity, policy and zones need a restart)"},
      {"limits: {5: 7}", "limits: {5: 8}",
       "conntrack: only timeouts change on reload (capacity, policy and zones need a restart)"},
      {"capacity: 1000", "capacity: 1000\n  nat: true",
       "conntrack.nat: the rules now translate, and the tracker was started without room for NAT "
       "(set conntrack.nat: true; needs a restart)"},
      {"udp_unreplied: 10", "udp_unreplied: 11", "", true},
      {"tables:", "offload: {provider: emulated}\ntables:",
       "offload: changed (its queues, tables and templates are sized at start; needs a restart)"},
  };
  for (const auto& c : cases) {
    auto next = parse_config(replace(kGood, c.from, c.to), "good.yaml");
    ASSERT_TRUE(next.ok()) << c.to << ": " << next.message();
    std::vector<std::string> refused;
    std::vector<int> map;
    ports_reload(base->ports, next->ports, &map, &refused);
    workers_reload(base->workers, next->workers, &refused);
    const bool timeouts = conntrack_reload(base->ct, &next->ct, &refused);
    offload_reload(base->offload, next->offload, &refused);
    std::string got;
    for (const auto& r : refused) got += (got.empty() ? "" : "; ") + r;
    EXPECT_EQ(got, c.why) << c.to;
    EXPECT_EQ(timeouts, c.timeouts) << c.to;
    EXPECT_FALSE(next->ct.nat) << "a reload keeps the running nat";
    if (c.why.empty()) {
      EXPECT_EQ(map, (std::vector<int>{0, 1})) << c.to;
    }
  }
}

TEST(Config, RuleFromCliYaml) {
  auto r = parse_rule_yaml("{table: 1, priority: 300, match: \"ip_proto=tcp,tp_dst=22\", actions: drop}", two_ports());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->table, 1);
  EXPECT_EQ(r->priority, 300);
  EXPECT_FALSE(parse_rule_yaml("{table: 1, priority: 300, actions: flood}", two_ports()).ok());
  // One rule, and nothing after it.
  auto garbage = parse_rule_yaml("{table: 1, priority: 3, actions: drop} garbage", two_ports());
  EXPECT_FALSE(garbage.ok());
  auto two = parse_rule_yaml("{table: 1, priority: 3, actions: drop}, {table: 1, priority: 4, actions: drop}", two_ports());
  EXPECT_FALSE(two.ok());
  EXPECT_NE(two.message().find("one rule"), std::string::npos) << two.message();
  auto docs = parse_rule_yaml("{table: 1, priority: 3, actions: drop}\n---\n{table: 1, priority: 4, actions: drop}", two_ports());
  EXPECT_FALSE(docs.ok());
}

TEST(Config, CommandLinePrefixIsCheckedLikeTheFile) {
  auto c = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(c.ok());
  c->cli.file_prefix = "../x";
  EXPECT_NE(c->apply_cli().message().find("--file-prefix '../x'"), std::string::npos);
  c->cli.file_prefix = "p2";
  ASSERT_TRUE(c->apply_cli().ok());
  EXPECT_EQ(c->control_socket, "/run/dataplane/p2.sock");
  EXPECT_EQ(c->eal.file_prefix, "p2");
}

TEST(Config, HostCheckRefusesCpusAndMemoryThisHostLacks) {
  // check_host runs before EAL, which pins this test's thread to one CPU:
  // give it the whole machine back meanwhile.
  cpu_set_t pinned, all;
  ASSERT_EQ(sched_getaffinity(0, sizeof pinned, &pinned), 0);
  CPU_ZERO(&all);
  for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN); i++) CPU_SET(i, &all);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  struct Restore {
    cpu_set_t* s;
    ~Restore() { sched_setaffinity(0, sizeof *s, s); }
  } restore{&pinned};
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs (lcores: [1])";
  auto c = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(check_host(*c).ok()) << check_host(*c).message();
  auto far = parse_config(replace(kGood, "lcores: [1]", "lcores: [1000]"), "far.yaml");
  ASSERT_TRUE(far.ok());
  EXPECT_NE(check_host(*far).message().find("far.yaml:6: key 'workers.lcores[0]': lcore 1000 is not a CPU"),
            std::string::npos)
      << check_host(*far).message();
  auto huge = parse_config(replace(kGood, "capacity: 1000", "capacity: 1073741824"), "huge.yaml");
  ASSERT_TRUE(huge.ok());
  EXPECT_NE(check_host(*huge).message().find("huge.yaml:8: key 'conntrack.capacity': 1073741824 connections x 1 workers need"),
            std::string::npos)
      << check_host(*huge).message();
}

TEST(Rules, FingerprintRemapAndTableTargets) {
  auto c = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(c.ok());
  std::vector<Rule> r = c->rules;
  EXPECT_EQ(rule_fingerprint(r[2]), rule_fingerprint(c->rules[2]));
  EXPECT_NE(rule_fingerprint(r[0]), rule_fingerprint(r[1]));
  remap_ports(r, {1, 0});
  EXPECT_EQ(r[2].actions[0].port, 0);  // output:outside, with the ports swapped
  EXPECT_TRUE(check_rule_set(r).ok());
  r.pop_back();  // table 1 empty: rule 42's ct(table=1) goes nowhere
  size_t bad = 99;
  EXPECT_FALSE(check_rule_set(r, &bad).ok());
  EXPECT_EQ(bad, 1u);
}

}  // namespace
}  // namespace dp
