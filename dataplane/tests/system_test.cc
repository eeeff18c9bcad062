// System tests: the real daemon on net_af_packet ports in a namespace
// testbed, with real traffic (dut.h has the fixture). Faults and bad input
// are in fault_test.cc.
#include <sys/stat.h>
#include <sys/un.h>

#include <tuple>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <cstring>
#include <functional>
#include <set>
#include <nlohmann/json.hpp>

#include "dut.h"

namespace dptest {
namespace {

TEST_F(Dut, PingAndArpCross) {
  auto r = run_capture({"ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.2"}, client, 20s);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 0) << r->output;
  EXPECT_NE(r->output.find("3 received"), std::string::npos) << r->output;
}

TEST_F(Dut, TcpFromClientWorksBothWays) {
  int ls = listen_in(server, "10.0.0.2", 7001), cs = sock_in(client, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7001);
  ASSERT_TRUE(connect_within(cs, sa, 5s));
  int as = accept(ls, nullptr, nullptr);
  ASSERT_GE(as, 0);
  stream(cs, as, 300000);
  const char reply[] = "server says hi";
  ASSERT_EQ(send(as, reply, sizeof reply, 0), static_cast<ssize_t>(sizeof reply));
  std::string in;
  ASSERT_TRUE(recv_within(cs, 5s, &in));
  EXPECT_EQ(in, std::string(reply, sizeof reply));
  close(as);
  close(cs);
  close(ls);
}

// The flow cache serves what a lab sends: Linux's TCP (timestamps on every
// segment, the kernel's default) through the firewall. Every established
// segment is a cache hit; the rest (handshakes, teardowns, ARP) is a
// handful of packets. (With the lane taking only option-less frames, a
// connection's segments all took the tables.)
TEST_F(Dut, LinuxTcpSegmentsAreServedByTheFlowCache) {
  auto ts = run_capture({"sysctl", "-n", "net.ipv4.tcp_timestamps"}, client, 10s);
  ASSERT_TRUE(ts.ok()) << ts.message();
  printf("[ flowcache ] client's net.ipv4.tcp_timestamps = %s", ts->output.c_str());
  ASSERT_EQ(ts->output.substr(0, 1), "1") << "the segments would carry no timestamps";
  SpawnOptions o;
  o.ns = server;
  o.stdout_path = "/dev/null";
  o.stderr_path = "=stdout";
  auto srv = Process::spawn({"iperf3", "-s", "-1", "-p", "5307"}, o);
  ASSERT_TRUE(srv.ok()) << srv.message();
  std::this_thread::sleep_for(300ms);
  const long long rx0 = workers_sum("rx_packets"), hits0 = workers_sum("cache_hits");
  ASSERT_GE(rx0, 0);
  ASSERT_GE(hits0, 0);
  auto r = run_capture({"iperf3", "-c", "10.0.0.2", "-p", "5307", "-t", "2", "-J"}, client, 40s);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->output.find("\"error\""), std::string::npos) << r->output.substr(0, 2000);
  srv->wait(5s);
  const long long rx = workers_sum("rx_packets") - rx0, hits = workers_sum("cache_hits") - hits0;
  printf("[ flowcache ] iperf3 2 s through the firewall: %lld packets, %lld flow cache hits (%.4f)\n", rx, hits,
         rx > 0 ? static_cast<double>(hits) / static_cast<double>(rx) : 0.0);
  ASSERT_GT(rx, 1000) << "iperf3's packets did not reach the daemon";
  EXPECT_GE(static_cast<double>(hits), 0.95 * static_cast<double>(rx)) << ctl("stats");
}

TEST_F(Dut, ConnectionFromServerSideIsBlocked) {
  long long before = json_number(stats(), "rule_drop");
  int ls = listen_in(client, "10.0.0.1", 7002), cs = sock_in(server, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  auto ca = addr("10.0.0.1", 7002);
  EXPECT_FALSE(connect_within(cs, ca, 2s));
  EXPECT_GT(json_number(stats(), "rule_drop"), before);
  close(cs);
  close(ls);
}

TEST_F(Dut, UdpReplyPassesOnlyAfterRequest) {
  int c = sock_in(client, SOCK_DGRAM), s = sock_in(server, SOCK_DGRAM);
  auto ca = addr("10.0.0.1", 7003), sa = addr("10.0.0.2", 7004);
  ASSERT_EQ(bind(c, reinterpret_cast<sockaddr*>(&ca), sizeof ca), 0);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  std::string got;
  sendto(s, "early", 5, 0, reinterpret_cast<sockaddr*>(&ca), sizeof ca);
  EXPECT_FALSE(recv_within(c, 1s, &got)) << "unsolicited UDP reached the client";
  sendto(c, "request", 7, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ASSERT_TRUE(recv_within(s, 3s, &got));
  EXPECT_EQ(got, "request");
  sendto(s, "reply", 5, 0, reinterpret_cast<sockaddr*>(&ca), sizeof ca);
  ASSERT_TRUE(recv_within(c, 3s, &got));
  EXPECT_EQ(got, "reply");
  close(c);
  close(s);
}

TEST_F(Dut, RuleAddedAtRuntimeWhileAFlowKeepsFlowing) {
  int ls = listen_in(server, "10.0.0.2", 7005), cs = sock_in(client, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7005);
  ASSERT_TRUE(connect_within(cs, sa, 5s));
  int as = accept(ls, nullptr, nullptr);
  ASSERT_GE(as, 0);
  std::atomic<bool> stop{false};
  std::atomic<size_t> received{0};
  std::thread sender([&] {
    std::string chunk(16384, 'x');
    while (!stop) {
      if (send(cs, chunk.data(), chunk.size(), MSG_DONTWAIT) < 0) std::this_thread::sleep_for(1ms);
    }
  });
  std::thread receiver([&] {
    char buf[65536];
    while (!stop) {
      pollfd p{as, POLLIN, 0};
      if (poll(&p, 1, 100) == 1) {
        ssize_t n = recv(as, buf, sizeof buf, 0);
        if (n > 0) received += static_cast<size_t>(n);
      }
    }
  });
  std::this_thread::sleep_for(500ms);
  std::string out = ctl("rule add {table: 1, priority: 300, match: \"ip_proto=tcp,tp_dst=7006\", actions: drop}");
  EXPECT_EQ(out.rfind("ok id=", 0), 0u) << out;
  size_t at_change = received;
  std::this_thread::sleep_for(1s);
  size_t after = received;
  stop = true;
  sender.join();
  receiver.join();
  EXPECT_GT(after, at_change + 100000) << "the established flow stalled after the rule change";

  // The new rule is live: a new connection to 7006 is dropped, others still open.
  int l2 = listen_in(server, "10.0.0.2", 7006), c2 = sock_in(client, SOCK_STREAM);
  ASSERT_GE(l2, 0);
  auto sa2 = addr("10.0.0.2", 7006);
  EXPECT_FALSE(connect_within(c2, sa2, 2s));
  int c3 = sock_in(client, SOCK_STREAM);
  EXPECT_TRUE(connect_within(c3, sa, 5s));
  std::string id = out.substr(6, out.find_first_of("\n ", 6) - 6);
  EXPECT_EQ(ctl("rule del " + id).rfind("ok", 0), 0u);
  for (int fd : {as, cs, ls, l2, c2, c3}) close(fd);
}

TEST_F(Dut, ControlRejectsBadInputAndStaysUp) {
  EXPECT_EQ(ctl("ct flush zebra"), "error: usage: ct flush [ZONE] (ZONE 0..65535): ZONE: 'zebra' is not a number\n");
  EXPECT_EQ(ctl("ct flush 70000"), "error: usage: ct flush [ZONE] (ZONE 0..65535): ZONE: '70000' is out of range 0..65535\n");
  EXPECT_EQ(ctl("rule add {table: 1, priority: 1, actions: flood}").rfind("error:", 0), 0u);
  EXPECT_EQ(ctl("launch missiles").rfind("error: unknown command", 0), 0u);
  EXPECT_TRUE(daemon.running());
  EXPECT_EQ(ctl("stats").rfind("ok", 0), 0u);
}

// dataplane-ctl log-level: the daemon's types listed with their levels; a
// level set at run time changes what the daemon prints; a bad level is
// refused with the valid ones and changes nothing.
TEST_F(Dut, LogLevelAtRunTimeChangesWhatTheDaemonPrints) {
  const auto level_of = [](const std::string& type) {
    const std::string list = ctl("log-level");
    const size_t at = list.find("\n" + type + " ");
    if (at == std::string::npos) return "not listed:\n" + list;
    const size_t b = list.find_first_not_of(' ', at + 1 + type.size());
    return list.substr(b, list.find('\n', b) - b);
  };
  EXPECT_EQ(ctl("log-level").rfind("ok: ", 0), 0u) << ctl("log-level");
  for (const char* t : {"dataplane.control", "dataplane.offload", "dataplane.pipeline", "dataplane.ports",
                        "dataplane.worker", "dataplane.systemd", "lib.eal"})
    EXPECT_NE(level_of(t).rfind("not listed", 0), 0u) << t << " " << level_of(t);
  EXPECT_EQ(level_of("dataplane.control"), "info");
  const auto reloads = [] {
    const std::string log = read_file(log_path);
    size_t n = 0;
    for (size_t p = log.find("dataplane: reloaded "); p != std::string::npos; p = log.find("dataplane: reloaded ", p + 1))
      n++;
    return n;
  };
  const size_t before = reloads();
  EXPECT_EQ(ctl("log-level dataplane.control warning"), "ok: warning: dataplane.control\n");
  EXPECT_EQ(ctl("reload"), "ok\n");
  EXPECT_EQ(reloads(), before) << "an info line printed at level warning:\n" << read_file(log_path);
  EXPECT_EQ(ctl("log-level dataplane.c* info"), "ok: info: dataplane.control\n");
  EXPECT_EQ(ctl("reload"), "ok\n");
  EXPECT_EQ(reloads(), before + 1) << read_file(log_path);
  EXPECT_EQ(ctl("log-level dataplane.control loud").rfind(
                "error: log-level: level 'loud': use emerg, alert, crit, err, warning, notice, info or debug", 0),
            0u) << ctl("log-level dataplane.control loud");
  EXPECT_EQ(ctl("log-level nosuch.* debug").rfind("error: log-level: log type 'nosuch.*' matches none", 0), 0u);
  EXPECT_EQ(ctl("log-level dataplane.control").rfind("error: usage: log-level [TYPE LEVEL]", 0), 0u);
  EXPECT_EQ(level_of("dataplane.control"), "info");
  // --json: {"ok": true, "types": [{"type", "level"}]}
  auto j = nlohmann::json::parse(ctl("--json log-level"), nullptr, false);
  ASSERT_TRUE(j.is_object() && j["types"].is_array()) << ctl("--json log-level");
  size_t found = 0;
  for (const auto& t : j["types"]) found += t["type"] == "dataplane.control" && t["level"] == "info";
  EXPECT_EQ(found, 1u) << j.dump();
  j = nlohmann::json::parse(ctl("--json log-level dataplane.control loud"), nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << j.dump();
  EXPECT_TRUE(daemon.running());
}

TEST_F(Dut, CraftedInvalidTcpIsDroppedAndCounted) {
  // A live connection, so that the out-of-window segment has a tuple to hit.
  int ls = listen_in(server, "10.0.0.2", 7007), cs = sock_in(client, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7007);
  ASSERT_TRUE(connect_within(cs, sa, 5s));
  sockaddr_in local{};
  socklen_t ll = sizeof local;
  getsockname(cs, reinterpret_cast<sockaddr*>(&local), &ll);

  std::string before = stats();
  int raw = raw_client();
  ASSERT_GE(raw, 0);
  ctrack::FrameSpec f;
  f.src = "10.0.0.1";
  f.dst = "10.0.0.2";
  f.proto = IPPROTO_TCP;
  f.sport = ntohs(local.sin_port);
  f.dport = 7007;
  f.tcp_flags = ctrack::kAck;
  f.seq = 0x12345678;  // nowhere near the real window
  f.ack = 0x9abcdef0;
  auto oow = ctrack::build_frame(f);
  ctrack::FrameSpec g = f;
  g.sport = 7999;
  g.tcp_flags = ctrack::kSyn | ctrack::kFin;  // no stack sends this
  auto synfin = ctrack::build_frame(g);
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ(send(raw, oow.data(), oow.size(), 0), static_cast<ssize_t>(oow.size()));
    ASSERT_EQ(send(raw, synfin.data(), synfin.size(), 0), static_cast<ssize_t>(synfin.size()));
  }
  std::this_thread::sleep_for(300ms);
  std::string after = stats();
  long long win_before = json_number(before, "invalid_tcp_seq_over") + json_number(before, "invalid_tcp_seq_under") +
                         json_number(before, "invalid_tcp_ack_over") + json_number(before, "invalid_tcp_ack_under");
  long long win_after = json_number(after, "invalid_tcp_seq_over") + json_number(after, "invalid_tcp_seq_under") +
                        json_number(after, "invalid_tcp_ack_over") + json_number(after, "invalid_tcp_ack_under");
  EXPECT_EQ(win_after - win_before, 5) << after;
  EXPECT_EQ(json_number(after, "invalid_tcp_flags") - json_number(before, "invalid_tcp_flags"), 5) << after;
  // The connection itself is unharmed.
  EXPECT_EQ(send(cs, "still here", 10, 0), 10);
  int as = accept(ls, nullptr, nullptr);
  std::string got;
  EXPECT_TRUE(recv_within(as, 3s, &got));
  EXPECT_EQ(got, "still here");
  for (int fd : {raw, as, cs, ls}) close(fd);
}

TEST_F(Dut, MalformedFloodLeavesDaemonUpWithExactCounters) {
  std::string before = stats();
  int raw = raw_client();
  ctrack::FrameSpec f;
  f.proto = IPPROTO_UDP;
  auto good = ctrack::build_frame(f);
  auto badihl = good;
  badihl[14] = 0x44;  // IHL 4
  auto badlen = good;
  badlen[16] = 0x7f;  // total length past the frame
  auto badoff = ctrack::build_frame(ctrack::FrameSpec{});
  badoff[14 + 20 + 12] = 0x30;  // TCP data offset 3
  const int kEach = 3000;
  for (int i = 0; i < kEach; i++) {
    send(raw, badihl.data(), badihl.size(), 0);
    send(raw, badlen.data(), badlen.size(), 0);
    send(raw, badoff.data(), badoff.size(), 0);
    if (i % 32 == 31) std::this_thread::sleep_for(1ms);  // stay under the af_packet ring size
  }
  std::string after;
  for (int i = 0; i < 50; i++) {
    std::this_thread::sleep_for(100ms);
    after = stats();
    if (json_number(after, "parse_tcp_off") - json_number(before, "parse_tcp_off") >= kEach) break;
  }
  EXPECT_TRUE(daemon.running());
  for (const char* reason : {"parse_ip_ihl", "parse_ip_len", "parse_tcp_off"})
    EXPECT_EQ(json_number(after, reason) - json_number(before, reason), kEach) << reason << "\n" << after;
  auto r = run_capture({"ping", "-c", "1", "-W", "2", "10.0.0.2"}, client, 10s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 0) << r->output;
  close(raw);
}

TEST_F(Dut, TelemetryAnswersWithStatsRulesAndConnections) {
  std::string s = stats();
  EXPECT_NE(s.find("\"/dataplane/stats\""), std::string::npos) << s;
  EXPECT_GE(json_number(s, "active"), 1) << s;
  EXPECT_GT(json_number(s, "w0_rx_packets"), 0) << s;
  EXPECT_GE(json_number(s, "inside_rx_packets"), 1) << s;
  auto rules = telemetry_query(prefix, "/dataplane/rules");
  ASSERT_TRUE(rules.ok());
  EXPECT_NE(rules->find("ct(table=1)"), std::string::npos) << *rules;
  auto ct = telemetry_query(prefix, "/dataplane/ct/list,proto=tcp,limit=5");
  ASSERT_TRUE(ct.ok());
  EXPECT_NE(ct->find("10.0.0.1"), std::string::npos) << *ct;
  // The stock client works too.
  std::string in = "/tmp/" + prefix + ".telemetry-in";
  std::ofstream(in) << "/dataplane/stats\n";
  SpawnOptions o;
  o.stdin_path = in;
  o.stdout_path = "/tmp/" + prefix + ".telemetry-out";
  o.stderr_path = "=stdout";
  auto p = Process::spawn({"dpdk-telemetry.py", "-f", prefix}, o);
  ASSERT_TRUE(p.ok()) << p.message();
  auto rc = p->wait(20s);
  ASSERT_TRUE(rc.ok());
  std::string out = read_file(o.stdout_path);
  EXPECT_NE(out.find("rule_hits"), std::string::npos) << out;
  unlink(in.c_str());
  unlink(o.stdout_path.c_str());
}

// dataplane-ctl --json: every reply is JSON, one object per line; stats
// carries the same counters as the text (one snapshot feeds both), rules
// and ct list their fields, errors {"error": ...} with exit status 1.
TEST_F(Dut, CtlJsonRepliesParseAndMatchTheText) {
  auto ctl_json = [](const std::string& cmd, int* status) {
    std::vector<std::string> argv = {g_bindir + "/dataplane-ctl", "--prefix", prefix, "--json"};
    std::istringstream in(cmd);
    for (std::string w; in >> w;) argv.push_back(w);
    auto r = run_capture(argv);
    *status = r.ok() ? r->status : -1;
    std::vector<nlohmann::json> lines;
    std::istringstream out(r.ok() ? r->output : "");
    for (std::string l; std::getline(out, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << cmd << ": not JSON: " << l;
      lines.push_back(j);
    }
    return lines;
  };
  // A connection, so that ct list has an entry and the counters move.
  int ls = listen_in(server, "10.0.0.2", 7201);
  int cs = sock_in(client, SOCK_STREAM);
  ASSERT_TRUE(connect_within(cs, addr("10.0.0.2", 7201), 3s));
  int rc;
  auto st = ctl_json("stats", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(st.size(), 1u);
  const auto& j = st[0];
  for (const char* k : {"workers", "ports", "drops", "rules", "ct", "offload"}) EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_TRUE(j["workers"].is_array() && !j["workers"].empty());
  EXPECT_GT(j["workers"][0].value("rx_packets", 0ull), 0u);
  EXPECT_GE(j["ct"].value("active", 0ull), 1u);
  EXPECT_GT(j["ports"]["inside"].value("rx_packets", 0ull), 0u);
  EXPECT_TRUE(j["drops"].contains("rule_drop") && j["drops"].contains("parse_trunc_eth")) << j["drops"].dump();
  EXPECT_EQ(j["offload"].value("provider", ""), "none");
  // The text's counters are the same values (read a moment apart: the
  // ones that do not move without traffic must be equal).
  const std::string text = ctl("stats");
  EXPECT_NE(text.find(" active=" + std::to_string(j["ct"]["active"].get<uint64_t>())), std::string::npos) << text;
  EXPECT_NE(text.find(" new=" + std::to_string(j["ct"]["new"].get<uint64_t>())), std::string::npos) << text;
  EXPECT_NE(text.find(" inside_link_up=" + std::to_string(j["ports"]["inside"]["link_up"].get<uint64_t>())),
            std::string::npos) << text;
  auto rules = ctl_json("rules", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(rules.size(), 1u);
  ASSERT_FALSE(rules[0]["rules"].empty());
  for (const char* k : {"id", "table", "priority", "match", "actions", "packets", "bytes"})
    EXPECT_TRUE(rules[0]["rules"][0].contains(k)) << k;
  auto ct = ctl_json("ct list", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_GE(ct.size(), 2u);
  EXPECT_EQ(ct.back().value("total", 0ull), ct.size() - 1);
  bool ours = false;
  for (size_t i = 0; i + 1 < ct.size(); i++) ours |= ct[i].value("tuple", "").find("10.0.0.1") != std::string::npos;
  EXPECT_TRUE(ours);
  EXPECT_TRUE(ct[0].contains("state") && ct[0].contains("zone") && ct[0].contains("timeout_s"));
  auto bad = ctl_json("rule del 999999", &rc);
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].contains("error")) << bad[0].dump();
  auto unknown = ctl_json("frobnicate", &rc);
  EXPECT_EQ(rc, 1);
  ASSERT_FALSE(unknown.empty());
  EXPECT_NE(unknown[0].value("error", "").find("unknown command"), std::string::npos);
  auto tr = ctl_json("trace in_port=inside,tcp,10.0.0.1:1234>10.0.0.2:80,flags=S", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_EQ(tr[0].value("packet", ""), "in_port=inside,tcp,10.0.0.1:1234>10.0.0.2:80,flags=S");
  ASSERT_TRUE(tr[0]["steps"].is_array() && !tr[0]["steps"].empty()) << tr[0].dump();
  auto trbad = ctl_json("trace in_port=nowhere,tcp,1.2.3.4:1>5.6.7.8:2", &rc);
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(trbad.size(), 1u);
  EXPECT_TRUE(trbad[0].contains("error")) << trbad[0].dump();
  // trace --live: a header object, then one per packet the workers handled.
  std::atomic<bool> sending{true};
  std::thread udp([&] {
    int u = sock_in(client, SOCK_DGRAM);
    auto ua = addr("10.0.0.2", 7203);
    while (sending) {
      sendto(u, "y", 1, 0, reinterpret_cast<sockaddr*>(&ua), sizeof ua);
      std::this_thread::sleep_for(20ms);
    }
    close(u);
  });
  auto live = ctl_json("trace --live 3 5", &rc);
  sending = false;
  udp.join();
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(live.size(), 4u) << (live.empty() ? "" : live[0].dump());
  EXPECT_EQ(live[0].value("packets", 0), 3);
  EXPECT_FALSE(live[0].value("timed_out", true));
  for (size_t i = 1; i < live.size(); i++) {
    EXPECT_EQ(live[i].value("n", 0u), i);
    // (the server's ICMP port-unreachable replies come in on outside)
    const std::string in = live[i].value("in_port", "");
    EXPECT_TRUE(in == "inside" || in == "outside") << live[i].dump();
    EXPECT_NE(live[i].value("frame", "").find("10.0.0."), std::string::npos) << live[i].dump();
    EXPECT_TRUE(live[i].contains("stage") && (live[i].contains("output") || live[i].contains("drop"))) << live[i].dump();
  }
  close(cs);
  close(ls);
}

TEST(Config, ErrorsExitWith2AndNameFileLineKeyWithoutTouchingPorts) {
  std::string bad = "/tmp/dpsys-bad-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(bad) << "ports:\n  - {name: a, devargs: \"net_af_packet0,iface=nonexistent0\"}\n"
                        "conntrack:\n  capacty: 5\ntables:\n  0:\n    - {priority: 1, match: \"\", actions: drop}\n";
  std::string prefix = "dpsysbad" + std::to_string(getpid());
  auto r = run_capture({g_bindir + "/dataplane", "--config", bad, "--file-prefix", prefix});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 2) << r->output;
  EXPECT_NE(r->output.find(bad + ":4: key 'conntrack.capacty': unknown key"), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find("EAL"), std::string::npos) << "EAL started: " << r->output;
  EXPECT_NE(access(("/var/run/dpdk/" + prefix).c_str(), F_OK), 0);
  auto c = run_capture({g_bindir + "/dataplane", "--config", bad, "--check"});
  EXPECT_EQ(c->status, 2);
  auto good = run_capture(
      {g_bindir + "/dataplane", "--config", g_srcdir + "/configs/dataplane/firewall.yaml", "--check", "--no-host-checks"});
  EXPECT_EQ(good->status, 0) << good->output;
  unlink(bad.c_str());
}

// ------------------------------------------------------------------ offload
//
// The same firewall with the emulated NIC in front of the pipeline: two
// connections fit its table (age 2 s), so the full-table fallback shows too.
class Offload : public Dut {
 public:  // (the test bodies the two strategies share use these)
  using Dut::ctl;
  using Dut::off;
  using Dut::wait_off;
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Dut::SetUpTestSuite();
  }
  static double iperf_share(int secs, long long* nic_out = nullptr, long long* sw_out = nullptr);
};

// One iperf3 TCP run of `secs` seconds through the daemon; the share of the
// packets the daemon saw meanwhile that the NIC stage forwarded.
double Offload::iperf_share(int secs, long long* nic_out, long long* sw_out) {
  SpawnOptions o;
  o.ns = server;
  o.stdout_path = "/dev/null";
  o.stderr_path = "=stdout";
  auto srv = Process::spawn({"iperf3", "-s", "-1", "-p", "5301"}, o);
  EXPECT_TRUE(srv.ok()) << srv.message();
  if (!srv.ok()) return 0;
  std::this_thread::sleep_for(300ms);
  // The NIC's share: in the e-switch what it forwarded itself (software
  // never sees those); in NIC Rx what it classified, tracked and marked with
  // the output port (software sends those on without a lookup).
  const bool fdb = off("domain_transfer") == 1;
  auto nic_now = [&] { return fdb ? off("nic_forwarded") : workers_sum("hw_marked"); };
  auto sw_now = [&] { return fdb ? sw_rx() : sw_rx() - workers_sum("hw_marked"); };
  long long nic0 = nic_now(), sw0 = sw_now();
  auto r = run_capture({"iperf3", "-c", "10.0.0.2", "-p", "5301", "-t", std::to_string(secs), "-J"}, client,
                       std::chrono::seconds(secs + 30));
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return 0;
  EXPECT_EQ(r->output.find("\"error\""), std::string::npos) << r->output.substr(0, 2000);
  srv->wait(5s);
  long long nic = nic_now() - nic0, sw = sw_now() - sw0;
  if (nic_out) *nic_out = nic;
  if (sw_out) *sw_out = sw;
  return static_cast<double>(nic) / static_cast<double>(nic + sw);
}

// The same with conntrack objects (aso): a NIC whose firmware takes them in
// the e-switch (the model's cx6dx-switchdev-ct-fdb). The plain fixture's
// NIC (cx6dx-switchdev, as 22.11 ships) tracks by exact rules (flows).
class OffloadAso : public Offload {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  nic: cx6dx-switchdev-ct-fdb\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Dut::SetUpTestSuite();
  }
};

void iperf_tcp_flow_is_handled_by_the_nic() {
  using O = Offload;
  long long removed0 = O::off("removed"), nic = 0, sw = 0;
  printf("[ offload ] conntrack %s\n", O::off("conntrack_aso") == 1 ? "aso (CONNTRACK objects)" : "flows (exact rules)");
  double share = O::iperf_share(10, &nic, &sw);
  // Everything the daemon saw in those 10 s: both iperf3 connections, their
  // handshakes and teardowns, ARP.
  printf("[ offload ] NIC stage %lld packets, software %lld: %.4f in the NIC\n", nic, sw, share);
  EXPECT_GE(share, 0.99);
  EXPECT_GE(O::off("offloads"), 2);
  // Both connections closed (FIN or RST): the NIC handed those to software,
  // which removed the offload.
  EXPECT_EQ(O::wait_off("installed", 0), 0);
  EXPECT_GE(O::off("closing"), 1);
  EXPECT_GE(O::off("removed") - removed0, 2);
  EXPECT_EQ(O::off("nic_rules_in_use"), O::off("shared_rules"));  // no connection rule left
  EXPECT_EQ(O::off("nic_ct_in_use"), 0);
}

TEST_F(Offload, IperfTcpFlowIsHandledByTheNic) {
  EXPECT_EQ(off("conntrack_aso"), 0);
  iperf_tcp_flow_is_handled_by_the_nic();
}
TEST_F(OffloadAso, IperfTcpFlowIsHandledByTheNic) {
  EXPECT_EQ(off("conntrack_aso"), 1);
  iperf_tcp_flow_is_handled_by_the_nic();
}

// Many short runs: every connection goes to the NIC however the timing of
// its first packets falls (a connection used to stay in software whole when
// packets forwarded before its rules took effect outran the NIC's window).
// OFFLOAD_SHARE_RUNS sets how many (default 50).
void short_iperf_runs_are_each_handled_by_the_nic() {
  using O = Offload;
  auto iperf_share = [](int secs, long long* n, long long* w) { return O::iperf_share(secs, n, w); };
  auto ctl = [](const std::string& c) { return O::ctl(c); };
  auto wait_off = [](const std::string& k, long long v) { return O::wait_off(k, v); };
  auto off = [](const std::string& k) { return O::off(k); };
  int runs = getenv("OFFLOAD_SHARE_RUNS") ? atoi(getenv("OFFLOAD_SHARE_RUNS")) : 50;
  int below = 0;
  std::string all;
  for (int i = 0; i < runs; i++) {
    long long nic = 0, sw = 0;
    double share = iperf_share(2, &nic, &sw);
    char b[96];
    snprintf(b, sizeof b, "%s%.4f", i ? " " : "", share);
    all += b;
    below += share < 0.99;
    if (share < 0.99) {
      std::string st = ctl("stats") + ctl("ct list");
      std::replace(st.begin(), st.end(), '\n', '|');
      printf("[ offload ] run %d: NIC %lld, software %lld; %s\n", i + 1, nic, sw, st.c_str());
    }
    // Both connections gone, in software and in the NIC, before the next
    // run (the table holds two).
    ASSERT_EQ(wait_off("installed", 0), 0);
    ASSERT_EQ(wait_off("jobs_in_use", 0), 0);
  }
  printf("[ offload ] %d runs of 2 s, share of packets in the NIC stage: %s\n", runs, all.c_str());
  EXPECT_EQ(below, 0) << below << " of " << runs << " runs below 0.99";
  printf("[ offload ] resyncs %lld, NIC conntrack invalid %lld, aged %lld\n", off("resyncs"), off("nic_ct_invalid"),
         off("aged"));
}
TEST_F(Offload, ShortIperfRunsAreEachHandledByTheNic) { short_iperf_runs_are_each_handled_by_the_nic(); }
TEST_F(OffloadAso, ShortIperfRunsAreEachHandledByTheNic) { short_iperf_runs_are_each_handled_by_the_nic(); }

// DV software steering (issue 29): cards whose firmware predates HWS, in
// legacy mode (NIC Rx, marks) and a BlueField-2 in switchdev (the FDB).
class OffloadSws : public Offload {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  nic: cx6dx-legacy-fw22.31\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Dut::SetUpTestSuite();
  }
};
class OffloadSwsFdb : public Offload {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  nic: bf2-switchdev-fw24.32\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Dut::SetUpTestSuite();
  }
};
TEST_F(OffloadSws, IperfTcpFlowIsHandledByTheNic) {
  EXPECT_EQ(off("engine_sws"), 1);
  iperf_tcp_flow_is_handled_by_the_nic();
}
TEST_F(OffloadSws, ShortIperfRunsAreEachHandledByTheNic) { short_iperf_runs_are_each_handled_by_the_nic(); }
TEST_F(OffloadSwsFdb, IperfTcpFlowIsHandledByTheNic) {
  EXPECT_EQ(off("engine_sws"), 1);
  EXPECT_EQ(off("domain_transfer"), 1);
  iperf_tcp_flow_is_handled_by_the_nic();
}
TEST_F(OffloadSwsFdb, ShortIperfRunsAreEachHandledByTheNic) { short_iperf_runs_are_each_handled_by_the_nic(); }

// A firmware whose version has HWS but whose capabilities do not start it:
// auto probes the port with dv_flow_en=2, rte_flow_configure fails, and the
// daemon starts itself again (execve: the same process) with DV software
// steering, which then carries the connections.
class OffloadHwsOff : public Offload {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  nic: cx6dx-legacy-hws-off\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Dut::SetUpTestSuite();
  }
};
TEST_F(OffloadHwsOff, DaemonStartsAgainWithSoftwareSteering) {
  const std::string log = read_file(log_path);
  EXPECT_NE(log.find("dataplane: hardware steering did not start (port 0: hws-firmware"), std::string::npos) << log;
  EXPECT_NE(log.find("starting again with DV software steering (dv_flow_en=1)"), std::string::npos) << log;
  EXPECT_EQ(off("engine_sws"), 1);
  EXPECT_NE(ctl("stats").find("started again with dv_flow_en=1"), std::string::npos) << ctl("stats");
  iperf_tcp_flow_is_handled_by_the_nic();
}

TEST_F(Offload, RstRemovesTheOffload) {
  int ls = listen_in(server, "10.0.0.2", 7101), cs = sock_in(client, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7101);
  long long removed = off("removed");
  ASSERT_TRUE(connect_within(cs, sa, 5s));
  int as = accept(ls, nullptr, nullptr);
  ASSERT_GE(as, 0);
  ASSERT_EQ(send(cs, "x", 1, 0), 1);
  std::string got;
  ASSERT_TRUE(recv_within(as, 5s, &got));
  EXPECT_EQ(wait_off("installed", 1), 1);
  EXPECT_NE(ctl("ct list").find(" offloaded "), std::string::npos) << ctl("ct list");
  linger lg{1, 0};  // close with RST
  setsockopt(cs, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(cs);
  EXPECT_EQ(wait_off("installed", 0), 0);
  EXPECT_EQ(off("removed"), removed + 1);
  close(as);
  close(ls);
}

TEST_F(Offload, UdpAgesOutAndItsCountersFoldBackIntoCt) {
  int c = sock_in(client, SOCK_DGRAM), s = sock_in(server, SOCK_DGRAM);
  auto ca = addr("10.0.0.1", 7103), sa = addr("10.0.0.2", 7104);
  ASSERT_EQ(bind(c, reinterpret_cast<sockaddr*>(&ca), sizeof ca), 0);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  long long aged = off("aged");
  std::string got;
  sendto(c, "q", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ASSERT_TRUE(recv_within(s, 3s, &got));
  sendto(s, "a", 1, 0, reinterpret_cast<sockaddr*>(&ca), sizeof ca);
  ASSERT_TRUE(recv_within(c, 3s, &got));
  ASSERT_EQ(wait_off("installed", 1), 1);
  long long nic0 = off("nic_forwarded");
  for (int i = 0; i < 40; i++) {
    sendto(c, "q", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ASSERT_TRUE(recv_within(s, 3s, &got));
    sendto(s, "a", 1, 0, reinterpret_cast<sockaddr*>(&ca), sizeof ca);
    ASSERT_TRUE(recv_within(c, 3s, &got));
  }
  EXPECT_GE(off("nic_forwarded") - nic0, 80);
  // Idle past age_s (2 s): the NIC ages it out, ctrack keeps it.
  EXPECT_EQ(wait_off("aged", aged + 1, 6s), aged + 1);
  EXPECT_EQ(off("installed"), 0);
  std::string list = ctl("ct list");
  size_t at = list.find("udp 10.0.0.1:7103");
  ASSERT_NE(at, std::string::npos) << list;
  std::string line = list.substr(at, list.find('\n', at) - at);
  EXPECT_EQ(line.find("offloaded"), std::string::npos) << line;
  EXPECT_NE(line.find("pkts=41/41"), std::string::npos) << line;  // 1 + 40 each way, 40 folded from the NIC
  close(c);
  close(s);
}

TEST_F(Offload, FullTableFallsBackToSoftwareWithTheReasonCounted) {
  // Two connections fill the four-entry table; the third stays in software
  // and still works.
  int ls = listen_in(server, "10.0.0.2", 7105);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7105);
  long long full = off("failed_table_or_queue_full", true);  // none yet: absent
  std::vector<int> fds;
  for (int i = 0; i < 3; i++) {
    int cs = sock_in(client, SOCK_STREAM);
    ASSERT_TRUE(connect_within(cs, sa, 5s));
    int as = accept(ls, nullptr, nullptr);
    ASSERT_GE(as, 0);
    ASSERT_EQ(send(cs, "hi", 2, 0), 2);
    std::string got;
    ASSERT_TRUE(recv_within(as, 5s, &got));
    fds.push_back(cs);
    fds.push_back(as);
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(wait_off("failed_table_or_queue_full", full + 1), full + 1);
  EXPECT_EQ(off("installed"), 2);
  ASSERT_EQ(send(fds[4], "still", 5, 0), 5);
  std::string got;
  ASSERT_TRUE(recv_within(fds[5], 5s, &got));
  EXPECT_EQ(got, "still");
  for (int fd : fds) close(fd);
  close(ls);
  EXPECT_EQ(wait_off("installed", 0), 0);
}

TEST_F(Offload, ChurnLeavesNothingInTheNic) {
  int ls = listen_in(server, "10.0.0.2", 7106);
  ASSERT_GE(ls, 0);
  auto sa = addr("10.0.0.2", 7106);
  long long offloads = off("offloads");
  for (int i = 0; i < 100; i++) {
    int cs = sock_in(client, SOCK_STREAM);
    ASSERT_TRUE(connect_within(cs, sa, 5s)) << i;
    int as = accept(ls, nullptr, nullptr);
    ASSERT_GE(as, 0);
    ASSERT_EQ(send(cs, "ping", 4, 0), 4);
    std::string got;
    ASSERT_TRUE(recv_within(as, 5s, &got));
    close(cs);
    close(as);
  }
  close(ls);
  EXPECT_GT(off("offloads"), offloads);
  EXPECT_EQ(wait_off("installed", 0), 0);
  EXPECT_EQ(wait_off("jobs_in_use", 0), 0);
  EXPECT_EQ(off("in_flight"), 0);
  EXPECT_EQ(off("nic_rules_in_use"), off("shared_rules"));  // no connection rule left
  EXPECT_EQ(off("nic_ct_in_use"), 0);
  EXPECT_NE(ctl("offload testpmd").find("flow queue"), std::string::npos);
}

// systemd's Type=notify, checked without systemd: the daemon started with
// NOTIFY_SOCKET at this test's datagram socket and a 200 ms watchdog, as
// the unit (packaging/systemd/dataplane@.service.in) starts it.
class Notify : public Dut {
 public:
  static inline int sock = -1;
  static inline std::string path;
  static void SetUpTestSuite() {
    path = "/tmp/dpsys-notify-" + std::to_string(getpid()) + ".sock";
    unlink(path.c_str());
    sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
    daemon_env = {"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=200000"};
    if (!watchdog_pid.empty()) daemon_env.push_back("WATCHDOG_PID=" + watchdog_pid);
    Dut::SetUpTestSuite();
  }
  static inline std::string watchdog_pid;  // WATCHDOG_PID for the daemon; empty: none
  static void TearDownTestSuite() {
    Dut::TearDownTestSuite();
    close(sock);
    unlink(path.c_str());
  }
  // The next datagram within `t`, or "".
  static std::string next(std::chrono::milliseconds t) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(t.count())) != 1) return "";
    char buf[4096];
    ssize_t n = recv(sock, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  // Messages until one holds `want` (returned), skipping watchdog pings.
  static std::string until(const std::string& want, std::chrono::milliseconds t) {
    for (auto end = std::chrono::steady_clock::now() + t; std::chrono::steady_clock::now() < end;) {
      std::string m = next(100ms);
      if (m.find(want) != std::string::npos) return m;
    }
    return "";
  }
};

TEST_F(Notify, ReadyWhenForwardingWatchdogPingsReloadAndStopping) {
  // READY=1 (with its status) once the ports and workers run: a datagram
  // sent the moment it arrives crosses the daemon.
  std::string ready = until("READY=1", 5s);
  ASSERT_FALSE(ready.empty()) << "no READY=1 on NOTIFY_SOCKET";
  EXPECT_NE(ready.find("STATUS=forwarding: 2 ports, 1 workers"), std::string::npos) << ready;
  EXPECT_NE(ready.find("MAINPID=" + std::to_string(daemon.pid())), std::string::npos) << ready;
  int c = sock_in(client, SOCK_DGRAM), sv = sock_in(server, SOCK_DGRAM);
  auto ca = addr("10.0.0.1", 7101), sa = addr("10.0.0.2", 7102);
  ASSERT_EQ(bind(c, reinterpret_cast<sockaddr*>(&ca), sizeof ca), 0);
  ASSERT_EQ(bind(sv, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  sendto(c, "first", 5, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  std::string got;
  EXPECT_TRUE(recv_within(sv, 3s, &got)) << "READY=1 was sent before the daemon forwarded";
  EXPECT_EQ(got, "first");
  close(c);
  close(sv);
  // WATCHDOG=1 at half the interval (every 100 ms) while the control loop
  // and the worker run.
  int pings = 0;
  for (auto end = std::chrono::steady_clock::now() + 1s; std::chrono::steady_clock::now() < end;)
    pings += next(200ms) == "WATCHDOG=1\n";
  EXPECT_GE(pings, 3);
  EXPECT_LE(pings, 15);
  // A reload through the control socket (the unit's ExecReload): RELOADING=1, then READY=1.
  EXPECT_NE(ctl("reload").find("ok"), std::string::npos);
  EXPECT_FALSE(until("RELOADING=1", 3s).empty());
  EXPECT_NE(until("READY=1", 3s).find("STATUS=forwarding; reloaded"), std::string::npos);
  // STOPPING=1 on SIGTERM.
  stop_daemon();
  EXPECT_FALSE(until("STOPPING=1", 3s).empty()) << "no STOPPING=1 on SIGTERM";
}

// WATCHDOG_PID naming another process (as systemd sets it for a service's
// main pid when the daemon is a child): the watchdog is not this
// process's, so no pings; READY=1 all the same.
class NotifyOtherPid : public Notify {
 public:
  static void SetUpTestSuite() {
    watchdog_pid = "1";
    Notify::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    Notify::TearDownTestSuite();
    watchdog_pid.clear();
  }
};

TEST_F(NotifyOtherPid, WatchdogOfAnotherPidIsNotPinged) {
  ASSERT_FALSE(until("READY=1", 5s).empty()) << "no READY=1 on NOTIFY_SOCKET";
  int pings = 0;
  for (auto end = std::chrono::steady_clock::now() + 1s; std::chrono::steady_clock::now() < end;)
    pings += next(200ms) == "WATCHDOG=1\n";
  EXPECT_EQ(pings, 0);
}

// Prometheus: /metrics on a unix socket (metrics.listen in the config),
// scraped under traffic, checked by promtool and against dataplane-ctl
// --json stats read at the same moment.
// Under systemd: JOURNAL_STREAM names the daemon's stderr (here the log
// file, stdout joined to it), so every line it writes, DPDK's too, carries
// the journal's "<N>" priority; before the one stream EAL's lines went to
// stdout bare (and to syslog a second time).
class Journal : public Dut {
 public:
  static void SetUpTestSuite() {
    // Dut's log path, made first so that its device and inode are known
    // (the spawn truncates it: the same inode).
    const std::string log = "/tmp/dpsys" + std::to_string(getpid()) + "-" +
                            ::testing::UnitTest::GetInstance()->current_test_suite()->name() + ".log";
    std::ofstream{log};
    struct stat st{};
    ASSERT_EQ(stat(log.c_str(), &st), 0) << log;
    daemon_env = {"JOURNAL_STREAM=" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)};
    Dut::SetUpTestSuite();
    ASSERT_EQ(log_path, log);
  }
};

TEST_F(Journal, EveryLineCarriesItsPriority) {
  EXPECT_EQ(ctl("log-level dataplane.control debug"), "ok: debug: dataplane.control\n");
  const std::string log = read_file(log_path);
  std::istringstream in(log);
  int lines = 0;
  for (std::string l; std::getline(in, l); lines++)
    EXPECT_TRUE(l.size() > 3 && l[0] == '<' && l[1] >= '0' && l[1] <= '7' && l[2] == '>') << "'" << l << "' in\n" << log;
  EXPECT_GE(lines, 5) << log;
  EXPECT_NE(log.find("<6>EAL: "), std::string::npos) << log;
  EXPECT_NE(log.find("<6>dataplane: running: "), std::string::npos) << log;
  EXPECT_NE(log.find("<5>dataplane: log level debug: dataplane.control"), std::string::npos) << log;
}

class Metrics : public Dut {
 public:
  static inline std::string path;
  static void SetUpTestSuite() {
    // In a directory of its own: the daemon refuses one others may write (/tmp).
    const std::string dir = "/tmp/dpsys-metrics-" + std::to_string(getpid());
    mkdir(dir.c_str(), 0700);
    path = dir + "/metrics.sock";
    edits = {{"\ntables:", "\nmetrics:\n  listen: unix:" + path + "\ntables:"}};
    Dut::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    Dut::TearDownTestSuite();
    rmdir(path.substr(0, path.rfind('/')).c_str());
  }
  // One HTTP exchange on the unix socket; the whole reply.
  static std::string http(const std::string& request) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);
      return "connect: " + std::string(strerror(errno));
    }
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
    close(fd);
    return out;
  }
  // The value of the sample `name{labels}` (labels as written), or -1.
  static double sample(const std::string& body, const std::string& name) {
    std::istringstream in(body);
    for (std::string l; std::getline(in, l);)
      if (l.rfind(name + " ", 0) == 0) return std::stod(l.substr(name.size() + 1));
    return -1;
  }
};

// The metric names a PromQL expression reads: string literals, label
// matchers {...}, ranges [...], grouping lists by/without/on/ignoring(...)
// and $variables taken out; of the identifiers left, those not followed by
// '(' (functions) and not operators.
std::set<std::string> promql_metrics(std::string e) {
  auto cut = [&](char open, char close) {
    for (size_t a; (a = e.find(open)) != std::string::npos;) {
      size_t b = e.find(close, a + 1);
      e.erase(a, b == std::string::npos ? std::string::npos : b - a + 1);
    }
  };
  cut('"', '"');
  cut('{', '}');
  cut('[', ']');
  for (const char* kw : {"by", "without", "on", "ignoring", "group_left", "group_right"})
    for (size_t a = 0; (a = e.find(kw, a)) != std::string::npos;) {
      const size_t end = a + strlen(kw);
      const bool word = (a == 0 || !(isalnum(static_cast<unsigned char>(e[a - 1])) || e[a - 1] == '_')) &&
                        (end >= e.size() || !(isalnum(static_cast<unsigned char>(e[end])) || e[end] == '_'));
      size_t p = e.find_first_not_of(' ', end);
      if (!word || p == std::string::npos || e[p] != '(') {
        a = end;
        continue;
      }
      e.erase(a, e.find(')', p) - a + 1);
    }
  static const std::set<std::string> ops = {"and", "or", "unless", "bool", "offset", "inf", "nan"};
  std::set<std::string> out;
  for (size_t i = 0; i < e.size();) {
    const char ch = e[i];
    if (!(isalpha(static_cast<unsigned char>(ch)) || ch == '_' || ch == ':') ||
        (i > 0 && (isdigit(static_cast<unsigned char>(e[i - 1])) || e[i - 1] == '.' || e[i - 1] == '$'))) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < e.size() && (isalnum(static_cast<unsigned char>(e[j])) || e[j] == '_' || e[j] == ':')) j++;
    const std::string w = e.substr(i, j - i);
    const size_t next = e.find_first_not_of(' ', j);
    if (!(next != std::string::npos && e[next] == '(') && !ops.count(w)) out.insert(w);
    i = j;
  }
  return out;
}

// Every metric the dashboard's PromQL (panel targets' expr, templating's
// label_values(METRIC...)) reads that `scrape` has no sample of; `names`
// gets every name it found.
std::vector<std::string> dashboard_unresolved(const std::string& dashboard_path, const std::string& scrape,
                                              std::set<std::string>* names) {
  const nlohmann::json d = nlohmann::json::parse(read_file(dashboard_path));  // throws on bad JSON
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == "expr" && v.is_string()) {
          for (const auto& n : promql_metrics(v.get<std::string>())) names->insert(n);
        } else if (k == "query" && v.is_string() && v.get<std::string>().rfind("label_values(", 0) == 0) {
          const std::string q = v.get<std::string>().substr(13);
          names->insert(q.substr(0, q.find_first_of("{,)")));
        } else {
          walk(v);
        }
      }
    } else if (j.is_array()) {
      for (const auto& x : j) walk(x);
    }
  };
  walk(d);
  std::vector<std::string> missing;
  for (const auto& n : *names)
    if (scrape.find("\n" + n + "{") == std::string::npos && scrape.find("\n" + n + " ") == std::string::npos)
      missing.push_back(n);
  return missing;
}

// Each HELP line that is not a sentence of its own (a capital letter
// first, a full stop last, four words or more, not its metric's name).
std::vector<std::string> help_not_sentences(const std::string& scrape) {
  std::vector<std::string> bad;
  std::istringstream in(scrape);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("# HELP ", 0) != 0) continue;
    const size_t sp = l.find(' ', 7);
    const std::string name = l.substr(7, sp - 7), text = sp == std::string::npos ? "" : l.substr(sp + 1);
    std::string key = name.rfind("dataplane_", 0) == 0 ? name.substr(10) : name;
    if (key.ends_with("_total")) key.resize(key.size() - 6);
    const long words = std::count(text.begin(), text.end(), ' ') + 1;
    if (text.empty() || !isupper(static_cast<unsigned char>(text[0])) || text.back() != '.' || words < 4 ||
        text.find(key) != std::string::npos || text.find(name) != std::string::npos)
      bad.push_back(l);
  }
  return bad;
}

// promtool check metrics on `body`: its exit status and output.
std::pair<int, std::string> promtool_check(const std::string& body) {
  auto tool = run_capture({g_srcdir + "/scripts/promtool"}, nullptr, 120s);
  if (!tool.ok() || tool->status != 0) return {-1, tool.ok() ? tool->output : tool.message()};
  std::string promtool = tool->output.substr(tool->output.rfind('\n', tool->output.size() - 2) + 1);
  while (!promtool.empty() && promtool.back() == '\n') promtool.pop_back();
  const std::string scrape = "/tmp/dpsys-scrape-" + std::to_string(getpid()) + "-b.txt";
  std::ofstream(scrape) << body;
  SpawnOptions o;
  o.stdin_path = scrape;
  o.stdout_path = scrape + ".out";
  o.stderr_path = "=stdout";
  auto p = Process::spawn({promtool, "check", "metrics"}, o);
  if (!p.ok()) return {-1, p.message()};
  auto rc = p->wait(60s);
  std::pair<int, std::string> r{rc.ok() ? *rc : -1, read_file(scrape + ".out")};
  unlink(scrape.c_str());
  unlink((scrape + ".out").c_str());
  return r;
}

TEST_F(Metrics, ScrapeUnderTrafficPassesPromtoolAndMatchesJsonStats) {
  // Traffic through the daemon while scraping: iperf3 for 3 s, a TCP
  // connection held open and UDP datagrams.
  SpawnOptions io;
  io.ns = server;
  io.stdout_path = "/dev/null";
  io.stderr_path = "/dev/null";
  auto srv = Process::spawn({"iperf3", "-s", "-p", "7305", "-1"}, io);
  ASSERT_TRUE(srv.ok()) << srv.message();
  std::this_thread::sleep_for(300ms);
  io.ns = client;
  auto cli = Process::spawn({"iperf3", "-c", "10.0.0.2", "-p", "7305", "-t", "3"}, io);
  ASSERT_TRUE(cli.ok()) << cli.message();
  int ls = listen_in(server, "10.0.0.2", 7301);
  int cs = sock_in(client, SOCK_STREAM);
  ASSERT_TRUE(connect_within(cs, addr("10.0.0.2", 7301), 3s));
  int c = sock_in(client, SOCK_DGRAM);
  auto sa = addr("10.0.0.2", 7302);
  for (int i = 0; i < 200; i++) sendto(c, "x", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  std::this_thread::sleep_for(1500ms);
  const std::string reply = http("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const double moving = sample(reply, "dataplane_worker_rx_bytes_total{worker=\"0\",lcore=\"1\"}");
  EXPECT_TRUE(cli->running()) << "the scrape was not taken under iperf3 traffic";
  auto crc = cli->wait(20s);
  EXPECT_TRUE(crc.ok() && *crc == 0) << "iperf3 failed through the daemon";
  srv->wait(5s);
  EXPECT_GT(moving, 1e6) << "iperf3's bytes are in the scrape";
  ASSERT_EQ(reply.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << reply.substr(0, 300);
  EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
  // promtool (Debian's, via scripts/promtool) on the scrape.
  auto [rc, out] = promtool_check(body);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
  printf("promtool check metrics on a %zu-byte scrape under iperf3: exit %d, output: '%s'\n", body.size(), rc,
         out.c_str());
  if (const char* keep = getenv("METRICS_SCRAPE_OUT")) std::ofstream(keep) << body;  // for a look by hand
  // Every HELP a sentence (the counters' descriptions), none missing.
  const size_t helps = static_cast<size_t>(std::count(body.begin(), body.end(), '#')) / 2;
  EXPECT_GT(helps, 50u) << body.substr(0, 1000);
  for (const auto& l : help_not_sentences(body)) ADD_FAILURE() << "HELP is not a sentence: " << l;
  // Seconds, not TSC cycles: busy time under iperf3 is some of the time since start.
  EXPECT_EQ(body.find("_cycles"), std::string::npos) << "a metric still in TSC cycles";
  const std::string wl0 = "{worker=\"0\",lcore=\"1\"}";
  const double busy = sample(body, "dataplane_worker_busy_seconds_total" + wl0);
  EXPECT_GT(busy, 0.001) << "iperf3's packets took some worker time";
  EXPECT_LT(busy, 600) << "seconds, not cycles";
  EXPECT_GE(sample(body, "dataplane_worker_expire_seconds_total" + wl0), 0);
  // build_info, process, port and mempool metrics.
  EXPECT_NE(body.find("\ndataplane_build_info{version=\"0."), std::string::npos) << body.substr(0, 600);
  EXPECT_NE(body.find("\",dpdk=\"DPDK 22.11"), std::string::npos);
  EXPECT_EQ(body.find("revision=\"\""), std::string::npos) << "no git revision";
  EXPECT_GT(sample(body, "process_cpu_seconds_total"), 0);
  EXPECT_GT(sample(body, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(sample(body, "process_virtual_memory_bytes"), sample(body, "process_resident_memory_bytes"));
  EXPECT_GE(sample(body, "process_open_fds"), 5);
  EXPECT_GE(sample(body, "process_max_fds"), sample(body, "process_open_fds"));
  const double start = sample(body, "process_start_time_seconds");
  EXPECT_LT(std::fabs(start - static_cast<double>(time(nullptr))), 600) << "started minutes ago at most: " << start;
  EXPECT_GE(sample(body, "dataplane_port_rx_nombuf_total{port=\"inside\"}"), 0);
  EXPECT_GE(sample(body, "dataplane_port_rx_missed_total{port=\"inside\"}"), 0);
  const double in_use = sample(body, "dataplane_mempool_in_use{pool=\"dp_mbufs\"}");
  const double size = sample(body, "dataplane_mempool_size{pool=\"dp_mbufs\"}");
  EXPECT_GE(in_use, 0);
  EXPECT_EQ(size, 16383) << "workers.mbufs";
  EXPECT_LE(in_use + sample(body, "dataplane_mempool_available{pool=\"dp_mbufs\"}"), size);
  // The Grafana dashboard: every metric its PromQL reads is in this scrape;
  // a renamed one is reported.
  const std::string dash = g_srcdir + "/packaging/grafana/dataplane.json";
  std::set<std::string> names;
  const auto missing = dashboard_unresolved(dash, body, &names);
  EXPECT_GE(names.size(), 15u) << "the dashboard's metric names were not found";
  for (const auto& n : missing) ADD_FAILURE() << dash << " reads " << n << ", which the scrape does not have";
  EXPECT_TRUE(names.count("dataplane_drops_total") && names.count("dataplane_worker_busy_seconds_total") &&
              names.count("dataplane_ct_offloaded") && names.count("dataplane_mempool_in_use") &&
              names.count("dataplane_port_rx_nombuf_total"));
  std::set<std::string> again;
  const auto renamed = dashboard_unresolved(dash, replace_all(body, "dataplane_drops_total", "dataplane_dropped_total"), &again);
  EXPECT_EQ(renamed, std::vector<std::string>{"dataplane_drops_total"}) << "a renamed metric is not reported";
  // Ten counters against dataplane-ctl --json stats, traffic stopped: read
  // one right after the other, equal up to the packets in between.
  std::this_thread::sleep_for(300ms);
  const std::string b2 = http("GET /metrics HTTP/1.0\r\n\r\n");
  const std::string m = b2.substr(b2.find("\r\n\r\n") + 4);
  auto js = run_capture({g_bindir + "/dataplane-ctl", "--prefix", prefix, "--json", "stats"});
  ASSERT_TRUE(js.ok() && js->status == 0);
  auto j = nlohmann::json::parse(js->output);
  const auto& w = j["workers"][0];
  const std::string wl = "{worker=\"0\",lcore=\"" + std::to_string(w["lcore"].get<int>()) + "\"}";
  const std::vector<std::tuple<std::string, double, double>> pairs = {
      {"dataplane_worker_rx_packets_total" + wl, w["rx_packets"].get<double>(), 5},
      {"dataplane_worker_tx_packets_total" + wl, w["tx_packets"].get<double>(), 5},
      {"dataplane_worker_rx_bytes_total" + wl, w["rx_bytes"].get<double>(), 1000},
      {"dataplane_port_rx_packets_total{port=\"inside\"}", j["ports"]["inside"]["rx_packets"].get<double>(), 5},
      {"dataplane_port_tx_packets_total{port=\"outside\"}", j["ports"]["outside"]["tx_packets"].get<double>(), 5},
      {"dataplane_port_link_up{port=\"inside\"}", j["ports"]["inside"]["link_up"].get<double>(), 0},
      {"dataplane_ct_active", j["ct"]["active"].get<double>(), 0},
      {"dataplane_ct_new_total", j["ct"]["new"].get<double>(), 0},
      {"dataplane_ct_lookups_total", j["ct"]["lookups"].get<double>(), 10},
      {"dataplane_drops_total{reason=\"no_match\"}", j["drops"]["no_match"].get<double>(), 5},
  };
  for (const auto& [name, want, slack] : pairs) {
    const double got = sample(m, name);
    EXPECT_GE(got, 0) << name << " missing in:\n" << m.substr(0, 2000);
    EXPECT_LE(std::fabs(got - want), slack) << name << ": metrics " << got << ", json " << want;
  }
  EXPECT_GE(sample(m, "dataplane_ct_active"), 2) << "the TCP and UDP connections";
  EXPECT_NE(m.find("# TYPE dataplane_ct_active gauge"), std::string::npos);
  EXPECT_NE(m.find("# TYPE dataplane_drops_total counter"), std::string::npos);
  // Anything but GET /metrics: 404 or 405, the daemon unharmed.
  EXPECT_EQ(http("GET / HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(http("POST /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405", 0), 0u);
  EXPECT_EQ(http("garbage\n\n").rfind("HTTP/1.0 405", 0), 0u);
  EXPECT_TRUE(daemon.running());
  close(c);
  close(cs);
  close(ls);
}


// The same with the emulated offload provider: its counters' HELP too.
class OffloadMetrics : public Metrics {
 public:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Metrics::SetUpTestSuite();
  }
};

TEST_F(OffloadMetrics, EveryOffloadCounterHasASentenceAndPromtoolPasses) {
  SpawnOptions o;
  o.ns = server;
  o.stdout_path = "/dev/null";
  o.stderr_path = "=stdout";
  auto srv = Process::spawn({"iperf3", "-s", "-1", "-p", "5306"}, o);
  ASSERT_TRUE(srv.ok()) << srv.message();
  std::this_thread::sleep_for(300ms);
  auto r = run_capture({"iperf3", "-c", "10.0.0.2", "-p", "5306", "-t", "2"}, client, 30s);
  ASSERT_TRUE(r.ok() && r->status == 0) << (r.ok() ? r->output : r.message());
  srv->wait(5s);
  const std::string reply = http("GET /metrics HTTP/1.0\r\n\r\n");
  const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
  if (const char* keep = getenv("METRICS_SCRAPE_OUT")) std::ofstream(std::string(keep) + ".offload") << body;
  EXPECT_GE(sample(body, "dataplane_offload_installed{provider=\"emulated\"}"), 0) << body.substr(0, 3000);
  EXPECT_GT(sample(body, "dataplane_offload_nic_rx_total{provider=\"emulated\"}"), 0);
  EXPECT_GT(sample(body, "dataplane_offload_offloads_total{provider=\"emulated\"}"), 0);
  for (const auto& l : help_not_sentences(body)) ADD_FAILURE() << "HELP is not a sentence: " << l;
  auto [rc, out] = promtool_check(body);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << out;
}

// A metrics address that is malformed, or in use, is a config error with
// file:line:key, found by --check before EAL.
TEST(Config, MetricsListenErrorsNameFileLineKey) {
  const std::string f = "/tmp/dpsys-metrics-bad-" + std::to_string(getpid()) + ".yaml";
  auto check = [&](const std::string& listen) {
    std::string cfg = read_file(g_srcdir + "/configs/dataplane/firewall.yaml");
    cfg = replace_all(cfg, "\ntables:", "\nmetrics:\n  listen: \"" + listen + "\"\ntables:");
    std::ofstream(f) << cfg;
    auto r = run_capture({g_bindir + "/dataplane", "--config", f, "--check", "--no-host-checks"});
    auto h = run_capture({g_bindir + "/dataplane", "--config", f, "--check"});
    return std::make_pair(r.ok() ? r->output : r.message(), h.ok() ? h->output : h.message());
  };
  // listen: sits on the line after the one `tables:` had.
  const std::string base = read_file(g_srcdir + "/configs/dataplane/firewall.yaml");
  const std::string L = ":" + std::to_string(std::count(base.begin(), base.begin() + base.find("\ntables:") + 1, '\n') + 2);
  auto [syntax, _] = check("localhost:9469");
  EXPECT_NE(syntax.find(f + L + ": key 'metrics.listen': 'localhost:9469': 'localhost' is not an IPv4 or IPv6 address"),
            std::string::npos) << syntax;
  EXPECT_NE(check("127.0.0.1:70000").first.find("port '70000' is out of range 1..65535"), std::string::npos);
  EXPECT_NE(check("unix:relative.sock").first.find("unix: needs an absolute path"), std::string::npos);
  // In use: a listener holds the port; --check (with its host checks) says so.
  int busy = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(busy, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(busy, 1), 0);
  socklen_t len = sizeof a;
  getsockname(busy, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string held = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto [ok_syntax, in_use] = check(held);
  EXPECT_NE(ok_syntax.find(": ok:"), std::string::npos) << ok_syntax;
  EXPECT_NE(in_use.find(f + L + ": key 'metrics.listen': " + held + ": Address already in use"), std::string::npos)
      << in_use;
  close(busy);
  unlink(f.c_str());
}

// dataplane@NAME: its control socket DIR/dataplane-t1.sock (DIR standing
// for /run/dataplane through DATAPLANE_RUN_DIR), its metrics address held.
class Instances : public Dut {
 public:
  static inline std::string dir;
  static void SetUpTestSuite() {
    dir = "/tmp/dpsys-inst-" + std::to_string(getpid());
    mkdir(dir.c_str(), 0700);
    edits = {{"\ntables:", "\ncontrol:\n  socket: " + dir + "/dataplane-t1.sock\nmetrics:\n  listen: 127.0.0.1:9469\ntables:"}};
    Dut::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    Dut::TearDownTestSuite();
    std::filesystem::remove_all(dir);
  }
  // dataplane-ctl with NAME=VALUE entries in its environment.
  static RunOutput ctl_env(std::vector<std::string> env, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "DATAPLANE_RUN_DIR=" + dir};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(g_bindir + "/dataplane-ctl");
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_capture(argv);
    return r.ok() ? r.value() : RunOutput{-1, r.message()};
  }
};

TEST_F(Instances, CtlFindsAnInstanceByNameAndNamesThemWhenSeveralRun) {
  auto by_i = ctl_env({}, {"-i", "t1", "stats"});
  EXPECT_EQ(by_i.status, 0) << by_i.output;
  EXPECT_EQ(by_i.output.rfind("ok\n", 0), 0u) << by_i.output;
  auto by_env = ctl_env({"DATAPLANE_INSTANCE=t1"}, {"--json", "stats"});
  EXPECT_EQ(by_env.status, 0) << by_env.output;
  auto only_one = ctl_env({}, {"stats"});
  EXPECT_EQ(only_one.status, 0) << "the one running instance is taken: " << only_one.output;
  auto absent = ctl_env({}, {"-i", "nope", "stats"});
  EXPECT_EQ(absent.status, 1);
  EXPECT_NE(absent.output.find("no instance 'nope' runs (no " + dir + "/dataplane-nope.sock); running: -i t1"),
            std::string::npos) << absent.output;
  EXPECT_EQ(ctl_env({}, {"-i", "../t1", "stats"}).status, 2);
  // A second instance (its socket and lock): without -i, both are named.
  int fake = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s/dataplane-t2.sock", dir.c_str());
  ASSERT_EQ(bind(fake, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::ofstream(dir + "/dataplane-t2.sock.lock") << "1\n";
  auto several = ctl_env({}, {"stats"});
  EXPECT_EQ(several.status, 2);
  EXPECT_NE(several.output.find("2 dataplanes run; name one: -i t1, -i t2"), std::string::npos) << several.output;
  EXPECT_EQ(ctl_env({}, {"-i", "t1", "stats"}).status, 0);
  EXPECT_EQ(ctl_env({"DATAPLANE_INSTANCE=t1"}, {"stats"}).status, 0);
  close(fake);
  unlink(a.sun_path);
  unlink((dir + "/dataplane-t2.sock.lock").c_str());
}

// --check of the running instance's own config: its control socket and
// metrics address are the instance's, not in the way (said so); the same
// socket from another config file is an error.
TEST_F(Instances, CheckOfTheRunningInstancesOwnConfigSkipsWhatItHolds) {
  auto own = run_capture({g_bindir + "/dataplane", "--config", cfg_path, "--check"}, dut);
  ASSERT_TRUE(own.ok()) << own.message();
  EXPECT_EQ(own->status, 0) << own->output;
  const std::string pid = std::to_string(daemon.pid());
  EXPECT_NE(own->output.find(cfg_path + ": note: the running instance of this config (pid " + pid +
                             ") holds the control socket " + dir + "/dataplane-t1.sock: not checked as free"),
            std::string::npos) << own->output;
  EXPECT_NE(own->output.find("(pid " + pid + ") holds the metrics address 127.0.0.1:9469: not checked as free"),
            std::string::npos) << own->output;
  EXPECT_NE(own->output.find(cfg_path + ": ok:"), std::string::npos) << own->output;
  // The same file under another name is another config.
  const std::string other = cfg_path + ".other.yaml";
  std::ofstream(other) << read_file(cfg_path);
  auto second = run_capture({g_bindir + "/dataplane", "--config", other, "--check"}, dut);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status, 2) << second->output;
  EXPECT_NE(second->output.find(dir + "/dataplane-t1.sock is in use by another dataplane (pid " + pid + ", --config " +
                                cfg_path + ")"),
            std::string::npos) << second->output;
  unlink(other.c_str());
}

// What README says of a reload: the file's rules replace the run-time
// `rule add`s and bring back what `rule del` removed.
TEST_F(Instances, ReloadReplacesRuntimeRuleChangesWithTheFile) {
  auto rules = [] {
    auto r = ctl_env({}, {"-i", "t1", "--json", "rules"});
    std::set<uint32_t> ids;
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    if (!j.is_discarded())
      for (const auto& x : j["rules"]) ids.insert(x["id"].get<uint32_t>());
    return ids;
  };
  const std::set<uint32_t> file = rules();
  ASSERT_GE(file.size(), 2u);
  auto add = ctl_env({}, {"-i", "t1", "rule", "add", "{table: 1, priority: 7, match: \"ip_proto=tcp,tp_dst=2222\", actions: drop}"});
  ASSERT_EQ(add.status, 0) << add.output;
  const uint32_t added = static_cast<uint32_t>(std::stoul(add.output.substr(add.output.find("id=") + 3)));
  const uint32_t removed = *file.begin();
  ASSERT_EQ(ctl_env({}, {"-i", "t1", "rule", "del", std::to_string(removed)}).status, 0);
  std::set<uint32_t> changed = rules();
  EXPECT_TRUE(changed.count(added) && !changed.count(removed));
  auto reload = ctl_env({}, {"-i", "t1", "reload"});
  ASSERT_EQ(reload.status, 0) << reload.output;
  EXPECT_EQ(rules(), file) << "after a reload the rules are the file's";
}

// --check requires the ports' devices: a missing af_packet interface or PCI
// device is an error naming file:line:key; --no-host-checks leaves them be.
TEST(Config, MissingPortDevicesAreErrorsNamingFileLineKey) {
  const std::string f = "/tmp/dpsys-ports-" + std::to_string(getpid()) + ".yaml";
  auto check = [&](const std::string& devargs, bool host) {
    std::ofstream(f) << "ports:\n  - name: a\n    devargs: \"" << devargs
                     << "\"\ntables:\n  0:\n    - {priority: 1, match: \"\", actions: drop}\n";
    std::vector<std::string> argv = {g_bindir + "/dataplane", "--config", f, "--check"};
    if (!host) argv.push_back("--no-host-checks");
    auto r = run_capture(argv);
    return r.ok() ? r.value() : RunOutput{-1, r.message()};
  };
  auto iface = check("net_af_packet0,iface=dpsys-nonexist", true);
  EXPECT_EQ(iface.status, 2);
  EXPECT_NE(iface.output.find(f + ":3: key 'ports[0].devargs': interface 'dpsys-nonexist' does not exist"),
            std::string::npos) << iface.output;
  auto pci = check("ff:1f.7", true);
  EXPECT_EQ(pci.status, 2);
  EXPECT_NE(pci.output.find(f + ":3: key 'ports[0].devargs': PCI device 0000:ff:1f.7 does not exist"),
            std::string::npos) << pci.output;
  EXPECT_EQ(check("net_af_packet0,iface=lo", true).status, 0) << check("net_af_packet0,iface=lo", true).output;
  EXPECT_EQ(check("net_af_packet0,iface=dpsys-nonexist", false).status, 0);
  unlink(f.c_str());
}

}  // namespace
}  // namespace dptest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s BUILD_DIR SOURCE_DIR\n", argv[0]);
    return 2;
  }
  dptest::g_bindir = argv[1];
  dptest::g_srcdir = argv[2];
  if (!testbed::have_privileges()) {
    fprintf(stderr, "SKIP: dataplane system tests need CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root)\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
