// System tests of the namespace testbed: real namespaces, real veths, real
// sockets. Exit 77 (skip) without CAP_NET_ADMIN.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "testbed/process.h"
#include "sdn/number.h"
#include "testbed/testbed.h"

using namespace testbed;
using namespace std::chrono_literals;

namespace {

std::string g_self;

int socket_in(const Netns* ns, int type) {
  int fd = -1;
  EXPECT_TRUE(run_in(ns, [&] { fd = socket(AF_INET, type | SOCK_CLOEXEC, 0); }).ok());
  return fd;
}

sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

struct Pair {
  std::unique_ptr<Testbed> tb;
  Netns* a = nullptr;
  Netns* b = nullptr;
};

Pair make_pair_tb() {
  Pair p;
  auto tb = Testbed::create();
  EXPECT_TRUE(tb.ok()) << tb.message();
  if (!tb) return p;
  p.tb = std::move(tb.value());
  auto a = p.tb->add_netns("a");
  auto b = p.tb->add_netns("b");
  EXPECT_TRUE(a.ok() && b.ok());
  p.a = *a;
  p.b = *b;
  Status s = p.tb->add_veth({p.a, "va"}, {p.b, "vb"}, 9000);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(p.tb->add_address(p.a, "va", "10.99.0.1/24").ok());
  EXPECT_TRUE(p.tb->add_address(p.b, "vb", "10.99.0.2/24").ok());
  return p;
}

bool has_link_with_name(const std::vector<LinkInfo>& ls, const std::string& name) {
  return std::any_of(ls.begin(), ls.end(), [&](const LinkInfo& l) { return l.name == name; });
}

}  // namespace

TEST(Testbed, UdpDatagramCrossesVethPair) {
  Pair p = make_pair_tb();
  ASSERT_TRUE(p.tb);
  int rx = socket_in(p.b, SOCK_DGRAM), tx = socket_in(p.a, SOCK_DGRAM);
  ASSERT_GE(rx, 0);
  ASSERT_GE(tx, 0);
  auto ra = addr("10.99.0.2", 5001);
  ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&ra), sizeof ra), 0) << strerror(errno);
  timeval tv{5, 0};
  setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const char msg[] = "hello across the veth";
  ASSERT_EQ(sendto(tx, msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&ra), sizeof ra),
            static_cast<ssize_t>(sizeof msg));
  char buf[64] = {};
  sockaddr_in from{};
  socklen_t fl = sizeof from;
  ASSERT_EQ(recvfrom(rx, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl),
            static_cast<ssize_t>(sizeof msg));
  EXPECT_STREQ(buf, msg);
  char fromip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &from.sin_addr, fromip, sizeof fromip);
  EXPECT_STREQ(fromip, "10.99.0.1");
  close(rx);
  close(tx);
}

TEST(Testbed, TcpConnectionAcrossVethPairWithTxChecksumOff) {
  Pair p = make_pair_tb();
  ASSERT_TRUE(p.tb);
  ASSERT_TRUE(p.tb->disable_tx_checksum(p.a, "va").ok());
  ASSERT_TRUE(p.tb->disable_tx_checksum(p.b, "vb").ok());

  // The offload really is off (read back with ETHTOOL_GTXCSUM inside the netns).
  uint32_t txcsum = 1;
  ASSERT_TRUE(run_in(p.a, [&] {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ethtool_value ev{ETHTOOL_GTXCSUM, 1};
    ifreq ifr{};
    strcpy(ifr.ifr_name, "va");
    ifr.ifr_data = reinterpret_cast<char*>(&ev);
    if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) txcsum = ev.data;
    close(fd);
  }).ok());
  EXPECT_EQ(txcsum, 0u);

  int ls = socket_in(p.b, SOCK_STREAM), cs = socket_in(p.a, SOCK_STREAM);
  auto sa = addr("10.99.0.2", 5002);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
  ASSERT_EQ(listen(ls, 1), 0);
  std::string got;
  std::thread server([&] {
    int c = accept(ls, nullptr, nullptr);
    if (c < 0) return;
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    const char ack[] = "ok";
    write(c, ack, 2);
    close(c);
  });
  timeval tv{5, 0};
  setsockopt(cs, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ASSERT_EQ(connect(cs, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
  std::string payload(200000, 'x');  // spans many 9000-byte segments
  size_t off = 0;
  while (off < payload.size()) {
    ssize_t n = write(cs, payload.data() + off, payload.size() - off);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
  shutdown(cs, SHUT_WR);
  char ack[3] = {};
  EXPECT_EQ(read(cs, ack, 2), 2);
  server.join();
  EXPECT_EQ(got.size(), payload.size());
  EXPECT_STREQ(ack, "ok");
  close(cs);
  close(ls);
}

TEST(Testbed, ProcessRunsInsideNamespace) {
  Pair p = make_pair_tb();
  ASSERT_TRUE(p.tb);
  auto r = run_capture({"cat", "/proc/net/dev"}, p.a);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 0);
  EXPECT_NE(r->output.find("va:"), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find("vb:"), std::string::npos);
  // /sys is remounted for the namespace, like `ip netns exec`.
  auto s = run_capture({"ls", "/sys/class/net"}, p.b);
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->output.find("vb"), std::string::npos) << s->output;

  auto bad = Process::spawn({"/nonexistent/program"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("No such file"), std::string::npos) << bad.message();
  // A program that outlives its time is a timeout, whoever wraps the error.
  auto slow = run_capture({"sleep", "5"}, nullptr, std::chrono::milliseconds(100));
  ASSERT_FALSE(slow.ok());
  EXPECT_TRUE(slow.status().is(sdn::ErrorKind::kTimeout)) << slow.message();
  EXPECT_EQ(slow.message().rfind("sleep: ", 0), 0u) << slow.message();
}

// Callers branch on an error's kind, which survives added context; errno
// values map to the kinds callers act on.
TEST(Status, KindsSurviveContextAndComeFromErrno) {
  EXPECT_TRUE(sdn::Status().ok());
  EXPECT_EQ(sdn::Status().kind(), sdn::ErrorKind::kNone);
  sdn::Status s = sdn::Status::error("plain");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.is(sdn::ErrorKind::kFailed));
  sdn::Status nf = sdn::Status::error(sdn::kind_of_errno(ENODEV), "gone").context("delete link x: ");
  EXPECT_TRUE(nf.is(sdn::ErrorKind::kNotFound));
  EXPECT_EQ(nf.message(), "delete link x: gone");
  EXPECT_TRUE(sdn::Status::error(sdn::ErrorKind::kNone, "x").is(sdn::ErrorKind::kFailed)) << "an error is never ok";
  EXPECT_EQ(sdn::kind_of_errno(EADDRINUSE), sdn::ErrorKind::kBusy);
  EXPECT_EQ(sdn::kind_of_errno(ETIMEDOUT), sdn::ErrorKind::kTimeout);
  EXPECT_EQ(sdn::kind_of_errno(EPERM), sdn::ErrorKind::kFailed);
  double v;
  EXPECT_TRUE(sdn::parse_number("nan", false, 0, 1, &v).is(sdn::ErrorKind::kInvalid));
}

TEST(Testbed, TeardownLeavesNothing) {
  std::string run_id, root_name;
  std::vector<std::string> ns_names;
  {
    auto tb = Testbed::create();
    ASSERT_TRUE(tb.ok()) << tb.message();
    Testbed& t = *tb.value();
    run_id = t.run_id();
    auto n = t.add_netns("x");
    ASSERT_TRUE(n.ok());
    ns_names.push_back((*n)->full_name());
    ASSERT_TRUE(t.add_veth({nullptr, "r0"}, {*n, "x0"}).ok());
    root_name = t.root_ifname("r0");
    auto here = list_links_here();
    ASSERT_TRUE(here.ok());
    EXPECT_TRUE(has_link_with_name(*here, root_name));
    auto nsl = list_netns();
    EXPECT_NE(std::find(nsl.begin(), nsl.end(), ns_names[0]), nsl.end());
  }
  auto here = list_links_here();
  ASSERT_TRUE(here.ok());
  EXPECT_FALSE(has_link_with_name(*here, root_name));
  for (const auto& l : *here) EXPECT_NE(l.alias, "testbed:" + run_id) << l.name;
  auto nsl = list_netns();
  EXPECT_EQ(std::find(nsl.begin(), nsl.end(), ns_names[0]), nsl.end());
  EXPECT_NE(access((std::string(kRunDir) + "/" + run_id + ".lock").c_str(), F_OK), 0);
}

TEST(Testbed, TeardownOnException) {
  std::string full;
  try {
    auto tb = Testbed::create();
    ASSERT_TRUE(tb.ok());
    auto n = tb.value()->add_netns("boom");
    ASSERT_TRUE(n.ok());
    full = (*n)->full_name();
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  auto nsl = list_netns();
  EXPECT_EQ(std::find(nsl.begin(), nsl.end(), full), nsl.end());
}

TEST(Testbed, StaleTestbedOfKilledProcessIsSwept) {
  std::string info = "/tmp/testbed-holder-" + std::to_string(getpid()) + ".info";
  unlink(info.c_str());
  auto holder = Process::spawn({g_self, "--hold-testbed", info});
  ASSERT_TRUE(holder.ok()) << holder.message();
  std::string ns_full, root_if;
  for (int i = 0; i < 500 && ns_full.empty(); i++) {
    std::ifstream in(info);
    in >> ns_full >> root_if;
    if (ns_full.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(ns_full.empty()) << "holder never reported its testbed";
  holder->signal(SIGKILL);
  holder->wait(5s);

  auto before = list_netns();
  ASSERT_NE(std::find(before.begin(), before.end(), ns_full), before.end()) << "killed run left nothing to sweep";
  auto here = list_links_here();
  ASSERT_TRUE(has_link_with_name(*here, root_if));

  auto swept = Testbed::sweep_stale();
  ASSERT_TRUE(swept.ok()) << swept.message();
  EXPECT_GE(*swept, 1);  // the root-side veth goes with its peer
  auto after = list_netns();
  EXPECT_EQ(std::find(after.begin(), after.end(), ns_full), after.end());
  here = list_links_here();
  EXPECT_FALSE(has_link_with_name(*here, root_if));
  unlink(info.c_str());
}

TEST(Testbed, SweepLeavesLiveRunsAlone) {
  Pair p = make_pair_tb();
  ASSERT_TRUE(p.tb);
  auto swept = Testbed::sweep_stale();
  ASSERT_TRUE(swept.ok());
  auto nsl = list_netns();
  EXPECT_NE(std::find(nsl.begin(), nsl.end(), p.a->full_name()), nsl.end());
}

// A DPDK process killed with -9 leaves its hugepage files and runtime
// directory behind; `testbed down` (sweep_stale) removes those of dead
// harness runs, and never a file a live process still maps.
TEST(Testbed, DeadRunsDpdkHugepageFilesAreSwept) {
  std::string hp;
  {
    std::ifstream m("/proc/mounts");
    std::string dev, dir, type, rest;
    while (m >> dev >> dir >> type && std::getline(m, rest))
      if (type == "hugetlbfs" && hp.empty()) hp = dir;
  }
  std::ifstream nr("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  long free_pages = 0;
  nr >> free_pages;
  if (hp.empty() || free_pages < 32) GTEST_SKIP() << "needs a hugetlbfs mount and 32 free 2 MiB hugepages";
  if (system("command -v dpdk-testpmd >/dev/null") != 0) GTEST_SKIP() << "needs dpdk-testpmd";
  auto gone = Process::spawn({"true"});
  ASSERT_TRUE(gone.ok());
  pid_t dead = gone->pid();
  gone->wait(5s);
  std::string prefix = "harness-tp-" + std::to_string(dead);  // as the harness names a run's testpmd
  SpawnOptions o;
  o.stdout_path = "/dev/null";
  o.stderr_path = "=stdout";
  auto tp = Process::spawn({"dpdk-testpmd", "-l", "0,1", "--no-pci", "--vdev", "net_null0", "--file-prefix", prefix,
                            "-m", "32", "--", "--stats-period", "60"},
                           o);
  ASSERT_TRUE(tp.ok()) << tp.message();
  auto files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(hp))
      if (e.path().filename().string().rfind(prefix + "map_", 0) == 0) n++;
    return n;
  };
  for (int i = 0; i < 200 && files() == 0; i++) std::this_thread::sleep_for(50ms);
  ASSERT_GT(files(), 0) << "testpmd made no hugepage files";
  // While it runs the files are its: the sweep keeps them.
  auto live = Testbed::sweep_dpdk_leftovers({"harness-"});
  ASSERT_TRUE(live.ok()) << live.message();
  EXPECT_GT(files(), 0) << "swept the hugepages of a live process";
  EXPECT_TRUE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "swept the runtime dir of a live process";
  tp->signal(SIGKILL);
  tp->wait(10s);
  int left = files();
  ASSERT_GT(left, 0) << "kill -9 left nothing to sweep";
  EXPECT_TRUE(std::filesystem::exists("/var/run/dpdk/" + prefix));
  auto swept = Testbed::sweep_stale();
  ASSERT_TRUE(swept.ok()) << swept.message();
  EXPECT_GE(*swept, left + 1);
  EXPECT_EQ(files(), 0);
  EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix));
}

TEST(Testbed, BadInputGetsClearErrors) {
  auto tb = Testbed::create();
  ASSERT_TRUE(tb.ok());
  Testbed& t = *tb.value();
  auto n = t.add_netns("bad");
  ASSERT_TRUE(n.ok());

  Status s = t.add_veth({*n, "this-name-is-far-too-long"}, {*n, "ok0"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this-name-is-far-too-long"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at most 15"), std::string::npos) << s.message();

  s = t.add_veth({nullptr, "fifteencharsxyz"}, {*n, "ok0"});  // 15: too long once prefixed, whatever the prefix
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("run prefix"), std::string::npos) << s.message();

  ASSERT_TRUE(t.add_veth({*n, "p0"}, {*n, "p1"}).ok());
  s = t.add_address(*n, "p0", "10.1.2.3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no prefix length"), std::string::npos) << s.message();
  s = t.add_address(*n, "p0", "10.1.2.3/33");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds 32"), std::string::npos) << s.message();
  s = t.add_address(*n, "p0", "10.1.2.300/24");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not an IPv4 or IPv6"), std::string::npos) << s.message();
  s = t.add_address(*n, "nosuch0", "10.1.2.3/24");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no interface named 'nosuch0'"), std::string::npos) << s.message();
  EXPECT_TRUE(s.is(sdn::ErrorKind::kNotFound)) << static_cast<int>(s.kind());
  s = t.add_veth({*n, "m0"}, {*n, "m1"}, 20);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MTU"), std::string::npos);
  s = t.add_veth({*n, "p0"}, {*n, "p9"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("File exists"), std::string::npos) << s.message();
  EXPECT_FALSE(t.add_netns("bad").ok());
  EXPECT_FALSE(t.add_netns("a/b").ok());
  EXPECT_TRUE(t.add_address(*n, "p0", "fd00::1/64").ok());
}

TEST(Prefix, Parses) {
  auto p = Prefix::parse("192.168.7.1/24");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->str(), "192.168.7.1/24");
  auto q = Prefix::parse("fd00::5/120");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->family, AF_INET6);
  EXPECT_EQ(q->len, 120);
  EXPECT_FALSE(Prefix::parse("fd00::5/129").ok());
  EXPECT_FALSE(Prefix::parse("1.2.3.4/").ok());
  EXPECT_FALSE(Prefix::parse("1.2.3.4/-1").ok());
}

// Helper mode for the stale-sweep test: build a testbed, report it, wait to be killed.
static int hold_testbed(const char* info) {
  auto tb = Testbed::create();
  if (!tb) return 1;
  auto n = tb.value()->add_netns("held");
  if (!n) return 1;
  if (!tb.value()->add_veth({nullptr, "h0"}, {*n, "h1"})) return 1;
  {
    std::ofstream o(std::string(info) + ".tmp");
    o << (*n)->full_name() << " " << tb.value()->root_ifname("h0") << "\n";
  }
  rename((std::string(info) + ".tmp").c_str(), info);
  for (;;) pause();
}

int main(int argc, char** argv) {
  g_self = "/proc/self/exe";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) g_self.assign(buf, static_cast<size_t>(n));
  if (argc == 3 && std::string(argv[1]) == "--hold-testbed") return hold_testbed(argv[2]);
  if (!have_privileges()) {
    fprintf(stderr, "SKIP: testbed tests need CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root)\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
