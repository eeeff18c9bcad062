// Item 10 of issue 28 on net_memif ports, where no kernel reassembles:
// the daemon (memif server on both ports) runs the stock firewall, then the
// same with source NAT; this process is the peer on both sides (memif
// clients, a DPDK process of its own) and sends 3,000-byte UDP datagrams in
// fragments, in one burst and out of order, IPv4 and IPv6, both ways. What
// comes out the other side is put together and checked as a receiver would:
// every IPv4 header checksum, every byte, the UDP checksum over the whole
// datagram, the (translated) source.
//
//   dataplane-memif-test BUILD_DIR SOURCE_DIR
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "ctrack/frame.h"
#include "fragment_check.h"
#include "testbed/process.h"
#include "testbed/testbed.h"

namespace {

using namespace std::chrono_literals;
using ctrack::build_frame;
using ctrack::FrameSpec;
using ctrack::fragment_frame;
using Frames = std::vector<std::vector<uint8_t>>;

std::string g_bindir, g_srcdir;
const std::string g_prefix = "dpmemif" + std::to_string(getpid());
rte_mempool* g_pool = nullptr;
bool g_eal = false;

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string replace(std::string s, const std::string& a, const std::string& b) {
  size_t p = s.find(a);
  EXPECT_NE(p, std::string::npos) << "config edit: '" << a << "' not found";
  if (p != std::string::npos) s.replace(p, a.size(), b);
  return s;
}
std::string sock(int i) { return "/tmp/" + g_prefix + "-" + std::to_string(i) + ".sock"; }

// This process's EAL: a memif client on each of the daemon's sockets
// (ports 0: inside, 1: outside), once; a client connects when its port
// starts, so for each new daemon the ports start again.
bool start_eal() {
  if (g_eal) {
    for (uint16_t p = 0; p < 2; p++) {
      rte_eth_dev_stop(p);
      if (rte_eth_dev_start(p) != 0) return false;
    }
    return true;
  }
  std::vector<std::string> args = {"memif-peer", "--no-huge", "-m", "256", "--no-pci", "--no-telemetry", "-l", "0",
                                   "--log-level", "*:error", "--file-prefix", g_prefix + "-peer"};
  for (int i = 0; i < 2; i++)
    args.push_back("--vdev=net_memif" + std::to_string(i) + ",role=client,id=0,socket-abstract=no,socket=" + sock(i));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  // EAL pins this thread to lcore 0; the daemons it starts later must not
  // inherit that.
  cpu_set_t all;
  sched_getaffinity(0, sizeof all, &all);
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) return false;
  sched_setaffinity(0, sizeof all, &all);
  g_pool = rte_pktmbuf_pool_create("peer", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  if (!g_pool) return false;
  for (uint16_t p = 0; p < 2; p++) {
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(p, 1, 1, &conf) != 0 || rte_eth_rx_queue_setup(p, 0, 1024, 0, nullptr, g_pool) != 0 ||
        rte_eth_tx_queue_setup(p, 0, 1024, 0, nullptr) != 0 || rte_eth_dev_start(p) != 0)
      return false;
  }
  g_eal = true;
  return true;
}

bool links_up(std::chrono::milliseconds t) {
  for (auto end = std::chrono::steady_clock::now() + t; std::chrono::steady_clock::now() < end;) {
    rte_eth_link a{}, b{};
    rte_eth_link_get_nowait(0, &a);
    rte_eth_link_get_nowait(1, &b);
    if (a.link_status && b.link_status) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

void drain(uint16_t port) {
  rte_mbuf* m[32];
  for (uint16_t n; (n = rte_eth_rx_burst(port, 0, m, 32)) > 0;) rte_pktmbuf_free_bulk(m, n);
}

// Sends `frames` out of `port` in one burst.
void send_burst(uint16_t port, const Frames& frames) {
  std::vector<rte_mbuf*> m;
  for (const auto& f : frames) {
    rte_mbuf* b = rte_pktmbuf_alloc(g_pool);
    ASSERT_NE(b, nullptr);
    memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(f.size())), f.data(), f.size());
    m.push_back(b);
  }
  uint16_t sent = 0;
  for (int tries = 0; sent < m.size() && tries < 1000; tries++)
    sent = static_cast<uint16_t>(sent + rte_eth_tx_burst(port, 0, m.data() + sent, static_cast<uint16_t>(m.size() - sent)));
  ASSERT_EQ(sent, m.size()) << "the memif ring took only " << sent;
}

// IP frames that arrive on `port` within 2 s, until `want` (other frames,
// ARP or ND, are skipped).
Frames receive(uint16_t port, size_t want) {
  Frames got;
  for (auto end = std::chrono::steady_clock::now() + 2s; got.size() < want && std::chrono::steady_clock::now() < end;) {
    rte_mbuf* m[32];
    uint16_t n = rte_eth_rx_burst(port, 0, m, 32);
    for (uint16_t i = 0; i < n; i++) {
      const auto* d = rte_pktmbuf_mtod(m[i], const uint8_t*);
      std::vector<uint8_t> f(d, d + m[i]->pkt_len);
      const bool v4 = f.size() > 34 && f[12] == 0x08 && f[13] == 0x00;
      const bool v6 = f.size() > 54 && f[12] == 0x86 && f[13] == 0xDD && f[20] != 58;  // not ICMPv6 (ND, MLD)
      if (rte_pktmbuf_is_contiguous(m[i]) && (v4 || v6))
        got.push_back(std::move(f));
      rte_pktmbuf_free(m[i]);
    }
    if (!n) std::this_thread::sleep_for(1ms);
  }
  return got;
}

FrameSpec udp(const std::string& src, const std::string& dst, uint16_t sport, uint16_t dport, uint16_t id) {
  FrameSpec s;
  s.proto = IPPROTO_UDP;
  s.src = src;
  s.dst = dst;
  s.sport = sport;
  s.dport = dport;
  s.payload = 3000;
  s.df = false;
  s.ip_id = id;
  return s;
}

class Memif : public ::testing::Test {
 protected:
  static inline testbed::Process daemon;
  static inline std::string cfg_path, log_path;
  static inline bool nat = false;

  static void SetUpTestSuite() {
    std::string cfg = read_file(g_srcdir + "/configs/dataplane/firewall.yaml");
    ASSERT_FALSE(cfg.empty());
    cfg = replace(cfg, "net_af_packet0,iface=veth-inside,framesz=4096",
                  "net_memif0,role=server,id=0,socket-abstract=no,socket=" + sock(0));
    cfg = replace(cfg, "net_af_packet1,iface=veth-outside,framesz=4096",
                  "net_memif1,role=server,id=0,socket-abstract=no,socket=" + sock(1));
    if (nat)
      cfg = replace(cfg,
                    "{priority: 100, match: \"in_port=inside,ct_state=+trk+new\",  actions: \"ct(commit),output:outside\"}",
                    "{priority: 100, match: \"in_port=inside,ct_state=+trk+new,eth_type=ipv4\", "
                    "actions: \"ct(commit,nat(src=203.0.113.7)),output:outside\"}\n"
                    "    - {priority: 100, match: \"in_port=inside,ct_state=+trk+new,eth_type=ipv6\", "
                    "actions: \"ct(commit,nat(src=[2001:db8::7])),output:outside\"}");
    cfg_path = "/tmp/" + g_prefix + ".yaml";
    log_path = "/tmp/" + g_prefix + (nat ? "-nat" : "-fw") + ".log";
    std::ofstream(cfg_path) << cfg;
    testbed::SpawnOptions o;
    o.stdout_path = log_path;
    o.stderr_path = "=stdout";
    auto p = testbed::Process::spawn(
        {g_bindir + "/dataplane", "--config", cfg_path, "--file-prefix", g_prefix, "--no-huge"}, o);
    ASSERT_TRUE(p.ok()) << p.message();
    daemon = std::move(p.value());
    for (int i = 0; i < 300 && read_file(log_path).find("dataplane: running") == std::string::npos; i++) {
      ASSERT_TRUE(daemon.running()) << "dataplane exited:\n" << read_file(log_path);
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_NE(read_file(log_path).find("dataplane: running"), std::string::npos) << read_file(log_path);
    ASSERT_TRUE(start_eal()) << "the peer's EAL or memif ports";
    ASSERT_TRUE(links_up(10s)) << "memif links down\n" << read_file(log_path);
    drain(0);
    drain(1);
  }
  static void TearDownTestSuite() {
    if (daemon.pid() > 0) {
      daemon.signal(SIGTERM);
      auto rc = daemon.wait(20s);
      EXPECT_TRUE(rc.ok() && *rc == 0) << read_file(log_path);
      EXPECT_NE(read_file(log_path).find("mbufs in use: 0 of"), std::string::npos) << read_file(log_path);
    }
    daemon = testbed::Process();
    unlink(cfg_path.c_str());
  }

  // One datagram each way: the request's fragments in `order` (one burst),
  // the reply's in reverse; both checked at the far end.
  static void exchange(const std::string& client, const std::string& server, const std::string& want_src,
                       uint16_t cport, const std::vector<size_t>& order) {
    Frames req = fragment_frame(build_frame(udp(client, server, cport, 9000, 0x2222)), 1500, 0x2222);
    ASSERT_EQ(req.size(), 3u);
    Frames burst;
    for (size_t i : order) burst.push_back(req[i]);
    send_burst(0, burst);
    Frames out = receive(1, 3);
    ASSERT_EQ(out.size(), 3u) << client << " -> " << server << ": fragments through\n" << stats();
    auto l4 = fragcheck::reassemble(out);
    ASSERT_EQ(l4.size(), 3008u) << "the datagram, whole";
    EXPECT_EQ(fragcheck::udp_sum(out[0], l4), 0xFFFF) << "the UDP checksum over the datagram";
    for (const auto& f : out) EXPECT_EQ(fragcheck::src_of(f), want_src);
    const uint16_t nport = fragcheck::udp_sport(l4);
    if (want_src == client) {
      EXPECT_EQ(nport, cport);
    }
    Frames rep = fragment_frame(build_frame(udp(server, want_src, 9000, nport, 0x3333)), 1500, 0x3333);
    send_burst(1, Frames(rep.rbegin(), rep.rend()));
    Frames back = receive(0, 3);
    ASSERT_EQ(back.size(), 3u) << server << " -> " << client << ": the reply's fragments\n" << stats();
    auto rl4 = fragcheck::reassemble(back);
    ASSERT_EQ(rl4.size(), 3008u);
    EXPECT_EQ(fragcheck::udp_sum(back[0], rl4), 0xFFFF);
    EXPECT_EQ(fragcheck::udp_dport(rl4), cport);
    for (const auto& f : back) EXPECT_EQ(fragcheck::dst_of(f), client);
  }
  static std::string stats() {
    auto r = testbed::run_capture({g_bindir + "/dataplane-ctl", "--prefix", g_prefix, "stats"});
    return r.ok() ? r->output : r.message();
  }
};

class MemifFirewall : public Memif {
 protected:
  static void SetUpTestSuite() {
    nat = false;
    Memif::SetUpTestSuite();
  }
};
class MemifNat : public Memif {
 protected:
  static void SetUpTestSuite() {
    nat = true;
    Memif::SetUpTestSuite();
  }
};

TEST_F(MemifFirewall, Ipv4FragmentsCrossInOneBurstAndOutOfOrder) {
  exchange("10.0.0.1", "10.0.0.2", "10.0.0.1", 7000, {0, 1, 2});
  exchange("10.0.0.1", "10.0.0.2", "10.0.0.1", 7001, {2, 1, 0});
}
TEST_F(MemifFirewall, Ipv6FragmentsCrossInOneBurstAndOutOfOrder) {
  exchange("fd00::1", "fd00::2", "fd00::1", 7002, {0, 1, 2});
  exchange("fd00::1", "fd00::2", "fd00::1", 7003, {1, 2, 0});
}
TEST_F(MemifNat, Ipv4FragmentsCrossTheNatWithTheTranslatedSource) {
  exchange("10.0.0.1", "192.0.2.10", "203.0.113.7", 7100, {0, 1, 2});
  exchange("10.0.0.1", "192.0.2.10", "203.0.113.7", 7101, {2, 0, 1});
}
TEST_F(MemifNat, Ipv6FragmentsCrossTheNatWithTheTranslatedSource) {
  exchange("fd00::1", "2001:db8:1::10", "2001:db8::7", 7102, {0, 1, 2});
  exchange("fd00::1", "2001:db8:1::10", "2001:db8::7", 7103, {2, 1, 0});
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s BUILD_DIR SOURCE_DIR\n", argv[0]);
    return 2;
  }
  g_bindir = argv[1];
  g_srcdir = argv[2];
  if (geteuid() != 0) {
    fprintf(stderr, "SKIP: the memif test starts the daemon (run as root)\n");
    return 77;
  }
  int rc = RUN_ALL_TESTS();
  if (g_eal) {
    for (uint16_t p = 0; p < 2; p++) {
      rte_eth_dev_stop(p);
      rte_eth_dev_close(p);
    }
    rte_eal_cleanup();
  }
  return rc;
}
