// The overlay and NAT checked from outside: the shipped
// configs/dataplane/overlay-nat.yaml on the real daemon, with the Linux
// kernel's own VXLAN device as the remote hypervisor's VTEP. What the kernel
// decapsulates and answers is what a real VTEP would.
//
//   [client ns: the VM] c0 10.0.0.1 --- d0 [dut: dataplane] d1 --- s0 192.0.2.2 [server ns]
//                                                               vx100 (VNI 100) 198.51.100.20
//
// The VM reaches 198.51.100.20 through the tunnel; the server sees it as the
// floating address 203.0.113.7.
#include "dut.h"
#include "testbed/geneve_vtep.h"

namespace dptest {
namespace {

constexpr const char* kC0Mac = "02:00:00:00:0c:00";
constexpr const char* kS0Mac = "02:00:00:00:02:02";  // the remote VTEP's next hop in overlay-nat.yaml
constexpr const char* kVxMac = "02:00:00:00:0a:0a";
constexpr const char* kVtepMac = "02:00:00:00:01:01";  // overlay.vxlan.mac

// What the VXLAN and the Geneve fixtures share.
class TunnelDut : public Dut {
 protected:
  // The value of `name=` in `stats`. A counter that is not there (renamed,
  // gone) is a failure here, never a zero: -1 with the failure recorded.
  static long long stat(const std::string& st, const std::string& name) {
    const size_t at = st.find(" " + name + "=");
    if (at == std::string::npos) {
      ADD_FAILURE() << "no counter '" << name << "=' in stats:\n" << st;
      return -1;
    }
    return atoll(st.c_str() + at + name.size() + 2);
  }
  static void ip(Netns* ns, std::vector<std::string> args) {
    args.insert(args.begin(), "ip");
    auto r = run_capture(args, ns, 10s);
    ASSERT_TRUE(r.ok() && r->status == 0) << (r.ok() ? r->output : r.message());
  }
  // A TCP connection from the VM to the server behind the tunnel on `port`:
  // the server sees the floating address; `both_ways` bytes each way (200 KB
  // from the VM only when 0), then a reply.
  static void tcp_through_the_tunnel(uint16_t port, size_t both_ways) {
    int ls = listen_in(server, "198.51.100.20", port), cs = sock_in(client, SOCK_STREAM);
    ASSERT_GE(ls, 0);
    ASSERT_TRUE(connect_within(cs, addr("198.51.100.20", port), 5s)) << ctl("stats") << read_file(log_path);
    sockaddr_in peer{};
    socklen_t pl = sizeof peer;
    int as = accept(ls, reinterpret_cast<sockaddr*>(&peer), &pl);
    ASSERT_GE(as, 0);
    char who[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &peer.sin_addr, who, sizeof who);
    EXPECT_STREQ(who, "203.0.113.7") << "the server sees the floating address";
    // Data both ways, more than one segment's worth (checksums the kernel checks).
    stream(cs, as, both_ways ? both_ways : 200000);
    if (both_ways) stream(as, cs, both_ways);
    const char reply[] = "from behind the tunnel";
    ASSERT_EQ(send(as, reply, sizeof reply, 0), static_cast<ssize_t>(sizeof reply));
    std::string in;
    ASSERT_TRUE(recv_within(cs, 5s, &in));
    EXPECT_EQ(in, std::string(reply, sizeof reply));
    close(as);
    close(cs);
    close(ls);
  }
};

class Overlay : public TunnelDut {
 protected:
  static void SetUpTestSuite() {
    config_name = "overlay-nat.yaml";
    Dut::SetUpTestSuite();
    if (::testing::Test::HasFatalFailure()) return;
    ip(client, {"link", "set", "dev", "c0", "address", kC0Mac});
    ip(client, {"link", "set", "dev", "c0", "mtu", "1450"});  // the VM's: the underlay's 1500 less VXLAN's 50
    ip(server, {"link", "set", "dev", "s0", "address", kS0Mac});
    ASSERT_TRUE(tb->add_address(server, "s0", "192.0.2.2/24").ok());
    ASSERT_TRUE(tb->add_neighbor(server, "s0", "192.0.2.1", kVtepMac).ok());
    // The remote hypervisor's VTEP: the kernel's VXLAN device.
    ip(server, {"link", "add", "vx100", "address", kVxMac, "type", "vxlan", "id", "100", "local", "192.0.2.2", "remote",
                "192.0.2.1", "dstport", "4789", "dev", "s0"});
    ip(server, {"link", "set", "dev", "vx100", "up"});
    ASSERT_TRUE(tb->disable_tx_checksum(server, "vx100").ok());
    ASSERT_TRUE(tb->add_address(server, "vx100", "198.51.100.20/24").ok());
    ASSERT_TRUE(tb->add_route(server, "203.0.113.0/24", "", "vx100").ok());
    ASSERT_TRUE(tb->add_neighbor(server, "vx100", "203.0.113.7", kC0Mac).ok());
    // The VM's way to the overlay network: on-link, the server's MAC known.
    ASSERT_TRUE(tb->add_route(client, "198.51.100.0/24", "", "c0").ok());
    ASSERT_TRUE(tb->add_neighbor(client, "c0", "198.51.100.20", kVxMac).ok());
  }
};

TEST_F(Overlay, TcpThroughTheTunnelIsSourceNatedAndAnswered) {
  tcp_through_the_tunnel(7100, 0);
  if (HasFatalFailure()) return;
  const std::string st = ctl("stats");
  EXPECT_GT(stat(st, "vxlan_encap"), 0) << st;
  EXPECT_GT(stat(st, "vxlan_decap"), 0) << st;
  EXPECT_GT(stat(st, "nat_packets"), 0) << st;
  const std::string list = ctl("ct list");
  EXPECT_NE(list.find("snat reply=tcp 198.51.100.20:7100 -> 203.0.113.7:"), std::string::npos) << list;
}

// `trace` shows the tunnel, the translation a new connection would get and,
// for a live one, the tuple each side leaves with.
TEST_F(Overlay, TraceShowsTheTunnelAndTheTranslation) {
  std::string t = ctl("trace in_port=inside,tcp,10.0.0.1:41000>198.51.100.20:7200,flags=S");
  EXPECT_NE(t.find("a new connection is translated from nat(src=203.0.113.7)"), std::string::npos) << t;
  EXPECT_NE(t.find("encap(vxlan): VNI 100 to the VTEP 192.0.2.2"), std::string::npos) << t;
  EXPECT_NE(t.find("result: output to outside"), std::string::npos) << t;
  int ls = listen_in(server, "198.51.100.20", 7200), cs = sock_in(client, SOCK_STREAM);
  ASSERT_GE(ls, 0);
  ASSERT_TRUE(connect_within(cs, addr("198.51.100.20", 7200), 5s));
  sockaddr_in me{};
  socklen_t ml = sizeof me;
  getsockname(cs, reinterpret_cast<sockaddr*>(&me), &ml);
  const std::string port = std::to_string(ntohs(me.sin_port));
  // The reply as the remote VTEP sends it, in VNI 100, to the floating address.
  t = ctl("trace in_port=outside,tun_id=100,tcp,198.51.100.20:7200>203.0.113.7:" + port + ",flags=A");
  EXPECT_NE(t.find("tunnel: VXLAN VNI 100, decapsulated"), std::string::npos) << t;
  EXPECT_NE(t.find("translated (snat)"), std::string::npos) << t;
  EXPECT_NE(t.find("it leaves as tcp 198.51.100.20:7200 -> 10.0.0.1:" + port), std::string::npos) << t;
  EXPECT_NE(t.find("result: output to inside"), std::string::npos) << t;
  // Not in the tunnel (tun_id 0): table 0 drops it.
  t = ctl("trace in_port=outside,tcp,198.51.100.20:7200>203.0.113.7:" + port + ",flags=A");
  EXPECT_NE(t.find("dropped by rule"), std::string::npos) << t;
  // A VNI this host does not terminate.
  t = ctl("trace in_port=outside,tun_id=300,tcp,198.51.100.20:7200>203.0.113.7:" + port + ",flags=A");
  EXPECT_NE(t.find("vxlan_unknown_vni"), std::string::npos) << t;
  close(cs);
  close(ls);
}

TEST_F(Overlay, PingThroughTheTunnel) {
  auto r = run_capture({"ping", "-c", "3", "-i", "0.2", "-W", "2", "198.51.100.20"}, client, 20s);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 0) << r->output << ctl("stats");
  EXPECT_NE(r->output.find("3 received"), std::string::npos) << r->output;
}

TEST_F(Overlay, BadTunnelFramesAreCountedNotForwarded) {
  // From the server's side of the wire: VXLAN to this VTEP with an unknown
  // VNI, and one without the I flag.
  int fd = -1;
  run_in(server, [&] { fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); });
  ASSERT_GE(fd, 0);
  auto to = addr("192.0.2.1", 4789);
  uint8_t frame[8 + 14 + 20] = {0x08, 0, 0, 0, 0, 0x01, 0x2c, 0};  // VNI 300
  frame[8 + 12] = 0x08;
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(sendto(fd, frame, sizeof frame, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), (ssize_t)sizeof frame);
  frame[0] = 0;  // I clear
  frame[6] = 100;
  frame[5] = 0;
  ASSERT_EQ(sendto(fd, frame, sizeof frame, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), (ssize_t)sizeof frame);
  close(fd);
  std::string s;
  for (int i = 0; i < 50; i++) {
    s = ctl("stats");
    if (s.find("vxlan_unknown_vni=3") != std::string::npos && s.find("vxlan_header=1") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(s.find("vxlan_unknown_vni=3"), std::string::npos) << s;
  EXPECT_NE(s.find("vxlan_header=1"), std::string::npos) << s;
}

// The same through Geneve (RFC 8926, UDP 6081): configs/dataplane/
// overlay-nat-geneve.yaml, the remote VTEP the kernel's geneve device where
// the kernel has one, else testbed/tools/geneve-vtep.py (scapy's Geneve
// layer on a TAP device, sending an 8-byte non-critical option the
// dataplane must skip; the VM's MTU leaves room for it). The test says
// which one it used.
class OverlayGeneve : public TunnelDut {
 protected:
  static inline testbed::GeneveVtep vtep;
  // What the userspace VTEP puts on every frame (a subclass may send none).
  static inline std::vector<std::string> vtep_options = {"0102:01:0a0b0c0d"};
  static void SetUpTestSuite() {
    config_name = "overlay-nat-geneve.yaml";
    Dut::SetUpTestSuite();
    if (::testing::Test::HasFatalFailure()) return;
    ip(client, {"link", "set", "dev", "c0", "address", kC0Mac});
    ip(server, {"link", "set", "dev", "s0", "address", kS0Mac});
    ASSERT_TRUE(tb->add_address(server, "s0", "192.0.2.2/24").ok());
    ASSERT_TRUE(tb->add_neighbor(server, "s0", "192.0.2.1", kVtepMac).ok());
    testbed::GeneveVtepSpec s;
    s.ns = server;
    s.kernel_argv = {"ip",  "link", "add", "gnv100", "address", kVxMac,    "type",
                     "geneve", "id", "100", "remote", "192.0.2.1", "dstport", "6081"};
    s.dev = "gnv100";
    s.mac = kVxMac;
    s.vni = 100;
    s.remote = "192.0.2.1";
    s.options = vtep_options;
    s.script = testbed::geneve_vtep_script(g_srcdir);
    s.log_path = "/tmp/" + prefix + "-geneve-vtep.log";
    s.force_userspace = getenv("GENEVE_VTEP_USERSPACE") != nullptr;
    auto v = testbed::make_geneve_vtep(s);
    ASSERT_TRUE(v.ok()) << v.message();
    vtep = std::move(v.value());
    printf("[ geneve ] the remote VTEP: %s%s\n", vtep.describe().c_str(),
           vtep.userspace ? (" (" + vtep.why + ")").c_str() : "");
    // The underlay's 1500 less Geneve's 50, and the userspace VTEP's option's 8.
    const std::string mtu = vtep.userspace && !vtep_options.empty() ? "1442" : "1450";
    ip(client, {"link", "set", "dev", "c0", "mtu", mtu});
    ip(server, {"link", "set", "dev", "gnv100", "mtu", mtu, "up"});
    ASSERT_TRUE(tb->disable_tx_checksum(server, "gnv100").ok());
    ASSERT_TRUE(tb->add_address(server, "gnv100", "198.51.100.20/24").ok());
    ASSERT_TRUE(tb->add_route(server, "203.0.113.0/24", "", "gnv100").ok());
    ASSERT_TRUE(tb->add_neighbor(server, "gnv100", "203.0.113.7", kC0Mac).ok());
    ASSERT_TRUE(tb->add_route(client, "198.51.100.0/24", "", "c0").ok());
    ASSERT_TRUE(tb->add_neighbor(client, "c0", "198.51.100.20", kVxMac).ok());
  }
  static void TearDownTestSuite() {
    if (vtep.userspace) {
      vtep.process.signal(SIGTERM);
      vtep.process.wait(5s);
      printf("[ geneve ] %s", read_file("/tmp/" + prefix + "-geneve-vtep.log").c_str());
    }
    vtep = testbed::GeneveVtep();
    Dut::TearDownTestSuite();
  }
  // No packet dropped for a Geneve reason.
  static void expect_no_geneve_drops(const std::string& st) {
    for (const char* why : {"geneve_header", "geneve_unknown_vni", "geneve_truncated", "geneve_unknown_remote",
                            "geneve_wrong_mac", "geneve_version", "geneve_control", "geneve_critical_option"})
      EXPECT_EQ(stat(st, why), 0) << why << "\n" << st;
  }
};

TEST_F(OverlayGeneve, TcpThroughTheTunnelIsSourceNatedAndAnswered) {
  const std::string st0 = ctl("stats");
  tcp_through_the_tunnel(7100, 200000);
  if (HasFatalFailure()) return;
  const std::string st = ctl("stats");
  // 200 KB each way in segments of at most 1402 bytes: over 140 frames.
  EXPECT_GT(stat(st, "geneve_encap") - stat(st0, "geneve_encap"), 140) << st;
  EXPECT_GT(stat(st, "geneve_decap") - stat(st0, "geneve_decap"), 140) << st;
  EXPECT_GT(stat(st, "nat_packets"), 0) << st;
  EXPECT_EQ(stat(st, "vxlan_decap"), 0) << st;
  expect_no_geneve_drops(st);
  const std::string list = ctl("ct list");
  EXPECT_NE(list.find("snat reply=tcp 198.51.100.20:7100 -> 203.0.113.7:"), std::string::npos) << list;
}

TEST_F(OverlayGeneve, PingThroughTheTunnel) {
  const std::string st0 = ctl("stats");
  auto r = run_capture({"ping", "-c", "3", "-i", "0.2", "-W", "2", "198.51.100.20"}, client, 20s);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 0) << r->output << ctl("stats");
  EXPECT_NE(r->output.find("3 received"), std::string::npos) << r->output;
  const std::string st = ctl("stats");
  EXPECT_GE(stat(st, "geneve_encap") - stat(st0, "geneve_encap"), 3) << st;
  EXPECT_GE(stat(st, "geneve_decap") - stat(st0, "geneve_decap"), 3) << st;
  expect_no_geneve_drops(st);
}

// Geneve in the emulated NIC where 22.11 allows it: a card on DV software
// steering (cx6dx-legacy-fw22.31). The remote VTEP (the kernel's geneve
// device, or the userspace one told to send no option) sends frames
// without options, so the NIC decapsulates the replies, translates and
// encapsulates (Geneve) both ways after each handshake.
class OverlayGeneveOffload : public OverlayGeneve {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  nic: cx6dx-legacy-fw22.31\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    vtep_options.clear();
    OverlayGeneve::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    OverlayGeneve::TearDownTestSuite();
    vtep_options = {"0102:01:0a0b0c0d"};
  }
};

TEST_F(OverlayGeneveOffload, IperfRunsAreHandledByTheNicUnderDv) {
  EXPECT_EQ(off("engine_sws"), 1) << ctl("stats");
  EXPECT_EQ(off("rules_jump_ct"), 2) << "both table-0 ct() rules, Geneve's included, are in the NIC\n" << ctl("stats");
  const long long rewritten0 = off("nic_rewritten");
  for (int i = 0; i < 5; i++) {
    SpawnOptions o;
    o.ns = server;
    o.stdout_path = "/dev/null";
    o.stderr_path = "=stdout";
    auto srv = Process::spawn({"iperf3", "-s", "-1", "-B", "198.51.100.20", "-p", "5303"}, o);
    ASSERT_TRUE(srv.ok()) << srv.message();
    std::this_thread::sleep_for(300ms);
    // NIC Rx (no E-Switch): the NIC decapsulates, translates and
    // encapsulates, and marks the port software sends the frame on.
    const long long rw0 = off("nic_rewritten"), rx0 = off("nic_rx");
    auto r = run_capture({"iperf3", "-c", "198.51.100.20", "-p", "5303", "-t", "2", "-J"}, client, 40s);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->output.find("\"error\""), std::string::npos) << r->output.substr(0, 2000);
    srv->wait(5s);
    const long long rw = off("nic_rewritten") - rw0, rx = off("nic_rx") - rx0;
    printf("[ geneve offload ] run %d: rewritten by the NIC %lld of %lld\n", i + 1, rw, rx);
    EXPECT_GT(static_cast<double>(rw) / static_cast<double>(rx), 0.9) << ctl("stats");
    ASSERT_EQ(wait_off("installed", 0), 0);
  }
  EXPECT_GT(off("nic_rewritten") - rewritten0, 1000) << ctl("stats");
  const std::string st = ctl("stats");
  EXPECT_EQ(stat(st, "vxlan_decap"), 0) << st;
  expect_no_geneve_drops(st);
}

// Issue 22: the same with the emulated NIC: every connection of short
// iperf3 runs (the VM to the server behind the tunnel) runs in the NIC,
// decapsulated, translated and encapsulated there, after its handshake.
// OVERLAY_SHARE_RUNS sets how many runs (default 50).
class OverlayOffload : public Overlay {
 protected:
  static void SetUpTestSuite() {
    offload = "provider: emulated\n  table_size: 4\n  age_s: 2\n  latency_us: 50";
    Overlay::SetUpTestSuite();
  }
};

TEST_F(OverlayOffload, ShortIperfRunsAreEachHandledByTheNic) {
  EXPECT_EQ(off("rules_jump_ct"), 2) << "both table-0 ct() rules, the tunnel's included, are in the NIC\n" << ctl("stats");
  const int runs = getenv("OVERLAY_SHARE_RUNS") ? atoi(getenv("OVERLAY_SHARE_RUNS")) : 50;
  int below = 0;
  std::string all;
  const long long rewritten0 = off("nic_rewritten");
  for (int i = 0; i < runs; i++) {
    SpawnOptions o;
    o.ns = server;
    o.stdout_path = "/dev/null";
    o.stderr_path = "=stdout";
    auto srv = Process::spawn({"iperf3", "-s", "-1", "-B", "198.51.100.20", "-p", "5302"}, o);
    ASSERT_TRUE(srv.ok()) << srv.message();
    std::this_thread::sleep_for(300ms);
    const long long nic0 = off("nic_forwarded"), sw0 = sw_rx();
    auto r = run_capture({"iperf3", "-c", "198.51.100.20", "-p", "5302", "-t", "2", "-J"}, client, 40s);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->output.find("\"error\""), std::string::npos) << r->output.substr(0, 2000);
    srv->wait(5s);
    const long long nic = off("nic_forwarded") - nic0, sw = sw_rx() - sw0;
    const double share = static_cast<double>(nic) / static_cast<double>(nic + sw);
    char b[32];
    snprintf(b, sizeof b, "%s%.4f", i ? " " : "", share);
    all += b;
    if (share < 0.99) {
      below++;
      std::string st = ctl("stats");
      std::replace(st.begin(), st.end(), '\n', '|');
      printf("[ overlay offload ] run %d: NIC %lld, software %lld; %s\n", i + 1, nic, sw, st.c_str());
    }
    ASSERT_EQ(wait_off("installed", 0), 0);
    ASSERT_EQ(wait_off("jobs_in_use", 0), 0);
  }
  printf("[ overlay offload ] %d runs of 2 s through VXLAN and NAT, share of packets in the NIC stage: %s\n", runs,
         all.c_str());
  printf("[ overlay offload ] NIC rewrites (decap, NAT, encap) %lld\n", off("nic_rewritten") - rewritten0);
  EXPECT_EQ(below, 0) << below << " of " << runs << " runs below 0.99";
  EXPECT_GT(off("nic_rewritten") - rewritten0, 1000 * runs);
}

}  // namespace
}  // namespace dptest
