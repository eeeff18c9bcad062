// The system tests' fixture: the real daemon on net_af_packet ports in a
// namespace testbed, with real traffic from the kernel stacks on either side.
//
//   [client ns] c0 10.0.0.1 --- d0 [dut ns: dataplane] d1 --- s0 10.0.0.2 [server ns]
//
// The daemon runs the stateful firewall (configs/dataplane/firewall.yaml with
// the interfaces swapped in): client -> server opens, server -> client only
// answers. A derived fixture edits that config before the daemon starts.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "ctrack/frame.h"
#include "ctrack/packet.h"
#include "testbed/process.h"
#include "testbed/telemetry.h"
#include "testbed/testbed.h"

namespace dptest {

using namespace testbed;
using namespace std::chrono_literals;

inline std::string g_bindir;  // where dataplane and dataplane-ctl live
inline std::string g_srcdir;  // the source tree (configs/)

inline std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string replace_all(std::string s, const std::string& a, const std::string& b) {
  for (size_t p = s.find(a); p != std::string::npos; p = s.find(a, p + b.size())) s.replace(p, a.size(), b);
  return s;
}

class Dut : public ::testing::Test {
 protected:
  static inline std::unique_ptr<Testbed> tb;
  static inline Netns *client, *dut, *server;
  static inline Process daemon;
  static inline std::string prefix, log_path, cfg_path;
  static inline std::string offload = "provider: none";  // the config's offload block (one line)
  static inline std::string config_name = "firewall.yaml";  // under configs/dataplane/
  // Text replacements a derived fixture makes in the config, in order.
  static inline std::vector<std::pair<std::string, std::string>> edits;
  // NAME=VALUE entries the daemon's environment gets (a derived fixture's).
  static inline std::vector<std::string> daemon_env;

  static void SetUpTestSuite() {
    auto t = Testbed::create();
    ASSERT_TRUE(t.ok()) << t.message();
    tb = std::move(t.value());
    client = *tb->add_netns("client");
    dut = *tb->add_netns("dut");
    server = *tb->add_netns("server");
    ASSERT_TRUE(tb->add_veth({client, "c0"}, {dut, "d0"}).ok());
    ASSERT_TRUE(tb->add_veth({dut, "d1"}, {server, "s0"}).ok());
    ASSERT_TRUE(tb->add_address(client, "c0", "10.0.0.1/24").ok());
    ASSERT_TRUE(tb->add_address(server, "s0", "10.0.0.2/24").ok());
    ASSERT_TRUE(tb->disable_tx_checksum(client, "c0").ok());
    ASSERT_TRUE(tb->disable_tx_checksum(server, "s0").ok());

    prefix = "dpsys" + std::to_string(getpid());
    cfg_path = "/tmp/" + prefix + ".yaml";
    // A log per fixture, kept: a daemon that died shows its last words.
    log_path = "/tmp/" + prefix + "-" + ::testing::UnitTest::GetInstance()->current_test_suite()->name() + ".log";
    std::string cfg = read_file(g_srcdir + "/configs/dataplane/" + config_name);
    ASSERT_FALSE(cfg.empty()) << "configs/dataplane/" << config_name << " not found under " << g_srcdir;
    cfg = replace_all(cfg, "iface=veth-inside", "iface=d0");
    cfg = replace_all(cfg, "iface=veth-outside", "iface=d1");
    cfg = replace_all(cfg, "provider: none", offload);
    for (const auto& [a, b] : edits) {
      ASSERT_NE(cfg.find(a), std::string::npos) << "config edit: '" << a << "' not in " << config_name;
      cfg = replace_all(cfg, a, b);
    }
    std::ofstream(cfg_path) << cfg;
    start_daemon();
  }

  // Starts the daemon on cfg_path and waits for it to run.
  static void start_daemon() {
    SpawnOptions o;
    o.ns = dut;
    o.stdout_path = log_path;
    o.stderr_path = "=stdout";
    o.env = daemon_env;
    auto p = Process::spawn({g_bindir + "/dataplane", "--config", cfg_path, "--file-prefix", prefix, "--no-huge"}, o);
    ASSERT_TRUE(p.ok()) << p.message();
    daemon = std::move(p.value());
    for (int i = 0; i < 300; i++) {
      if (read_file(log_path).find("dataplane: running") != std::string::npos) break;
      ASSERT_TRUE(daemon.running()) << "dataplane exited:\n" << read_file(log_path);
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_NE(read_file(log_path).find("dataplane: running"), std::string::npos) << read_file(log_path);
  }

  // SIGTERM and the checks of a clean stop; returns the log.
  static std::string stop_daemon() {
    EXPECT_TRUE(daemon.running()) << "the daemon died before its stop:\n" << read_file(log_path);
    daemon.signal(SIGTERM);
    auto rc = daemon.wait(20s);
    std::string log = read_file(log_path);
    EXPECT_TRUE(rc.ok() && *rc == 0) << "dataplane did not stop cleanly:\n" << log;
    EXPECT_NE(log.find("mbufs in use: 0 of"), std::string::npos) << "leaked mbufs:\n" << log;
    EXPECT_EQ(log.find("offload flush:"), std::string::npos) << "hardware rules left behind:\n" << log;
    daemon = Process();
    return log;
  }

  static void TearDownTestSuite() {
    if (daemon.pid() > 0) stop_daemon();
    tb.reset();
    unlink(cfg_path.c_str());
    offload = "provider: none";
    config_name = "firewall.yaml";
    edits.clear();
    daemon_env.clear();
  }

  // `dataplane-ctl --json stats`, parsed; a failure (and null) when the
  // reply is not JSON.
  static nlohmann::json stats_json() {
    const std::string s = ctl("--json stats");
    nlohmann::json j = nlohmann::json::parse(s, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ADD_FAILURE() << "dataplane-ctl --json stats is not a JSON object: " << s.substr(0, 500);
      return nullptr;
    }
    return j;
  }
  // A counter of the `offload` object of --json stats. A key that is not
  // there fails the test (a renamed counter must not read as 0 or -1).
  // `absent_is_zero`: only for the provider's failed_<reason> counters,
  // which appear with their first failure.
  static long long off(const std::string& key, bool absent_is_zero = false) {
    nlohmann::json j = stats_json();
    if (j.is_null()) return -1;
    const auto& o = j["offload"];
    if (absent_is_zero && key.rfind("failed_", 0) == 0 && o.is_object() && !o.contains(key)) return 0;
    if (!o.is_object() || !o.contains(key) || !o[key].is_number()) {
      ADD_FAILURE() << "--json stats has no offload counter '" << key << "': " << o.dump().substr(0, 800);
      return -1;
    }
    return o[key].get<long long>();
  }
  // The packets the software pipeline judged: every worker's rx_packets
  // (a worker without the counter fails the test).
  static long long sw_rx() { return workers_sum("rx_packets"); }
  // A worker counter summed over the workers (absent: a test failure).
  static long long workers_sum(const std::string& key) {
    nlohmann::json j = stats_json();
    if (j.is_null()) return -1;
    if (!j["workers"].is_array() || j["workers"].empty()) {
      ADD_FAILURE() << "--json stats has no workers: " << j.dump().substr(0, 800);
      return -1;
    }
    long long sum = 0;
    for (const auto& w : j["workers"]) {
      if (!w.contains(key) || !w[key].is_number()) {
        ADD_FAILURE() << "--json stats: a worker without " << key << ": " << w.dump().substr(0, 800);
        return -1;
      }
      sum += w[key].get<long long>();
    }
    return sum;
  }
  // Waits until off(key) == v; returns the last value.
  static long long wait_off(const std::string& key, long long v, std::chrono::milliseconds t = 5s) {
    long long x = off(key);
    for (auto end = std::chrono::steady_clock::now() + t; x != v && std::chrono::steady_clock::now() < end;) {
      std::this_thread::sleep_for(50ms);
      x = off(key);
    }
    return x;
  }
  // Sends `bytes` on `from` (a thread) and reads them all on `to`; false
  // (with a failure) when they stall for 5 s.
  static void stream(int from, int to, size_t bytes) {
    std::string big(bytes, 'v');
    std::thread t([&] {
      size_t sent = 0;
      while (sent < big.size()) {
        ssize_t n = send(from, big.data() + sent, big.size() - sent, 0);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    });
    size_t got = 0;
    char buf[65536];
    while (got < big.size()) {
      pollfd p{to, POLLIN, 0};
      if (poll(&p, 1, 5000) != 1) break;
      ssize_t n = recv(to, buf, sizeof buf, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    t.join();
    EXPECT_EQ(got, big.size()) << "stalled\n" << ctl("stats");
  }

  static std::string ctl(const std::string& cmd) {
    std::vector<std::string> argv = {g_bindir + "/dataplane-ctl", "--prefix", prefix};
    std::istringstream in(cmd);
    for (std::string w; in >> w;) argv.push_back(w);
    auto r = run_capture(argv);
    return r.ok() ? r->output : "error: " + r.message();
  }
  static std::string stats() {
    auto r = telemetry_query(prefix, "/dataplane/stats");
    return r.ok() ? r.value() : "";
  }

  // A socket created inside a namespace stays there.
  static int sock_in(Netns* ns, int type, int proto = 0) {
    int fd = -1;
    run_in(ns, [&] { fd = socket(AF_INET, type | SOCK_CLOEXEC, proto); });
    return fd;
  }
  static sockaddr_in addr(const char* ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
  }
  // A TCP listener inside `ns` on ip:port, or -1.
  static int listen_in(Netns* ns, const char* ip, uint16_t port) {
    int fd = sock_in(ns, SOCK_STREAM);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    auto a = addr(ip, port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // Non-blocking connect with a deadline. True if connected.
  static bool connect_within(int fd, const sockaddr_in& a, std::chrono::milliseconds t) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return true;
    if (errno != EINPROGRESS) return false;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, static_cast<int>(t.count())) != 1) return false;
    int err = 0;
    socklen_t l = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
    fcntl(fd, F_SETFL, 0);
    return err == 0;
  }
  static bool recv_within(int fd, std::chrono::milliseconds t, std::string* out) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(t.count())) != 1) return false;
    char buf[2048];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    out->assign(buf, static_cast<size_t>(n));
    return true;
  }
  // Raw frames out of the client's c0 (as if from a broken or hostile host).
  static int raw_client() {
    int fd = -1;
    run_in(client, [&] { fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)); });
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_protocol = htons(ETH_P_ALL);
    run_in(client, [&] { ll.sll_ifindex = static_cast<int>(if_nametoindex("c0")); });
    bind(fd, reinterpret_cast<sockaddr*>(&ll), sizeof ll);
    return fd;
  }
};

}  // namespace dptest
