// The namespace testbed a sweep runs on (Bed): namespaces, veths, the
// management network and sshd for the SSH transport.
#include "harness/sweep.h"
#include "sdn/number.h"
#include "sdn/yaml_load.h"

#include <arpa/inet.h>
#include <signal.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "harness/preconditions.h"
#include "harness/tools.h"
#include "util.h"

#include <nlohmann/json.hpp>

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using testbed::Process;
using harness::Job;
using testbed::SpawnOptions;

// ------------------------------------------------------------------ testbed

namespace {
constexpr const char* kMgmtClient = "192.168.250.2";  // the client namespace's sshd
constexpr const char* kMgmtServer = "192.168.250.6";  // the server namespace's sshd
}  // namespace

Bed::~Bed() {
  sshd.clear();
  if (!ssh_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(ssh_dir, ec);
  }
}

std::vector<SshHost> Bed::ssh_hosts() const {
  std::vector<SshHost> v;
  for (auto [name, addr] : {std::pair<const char*, const char*>{"client", kMgmtClient}, {"server", kMgmtServer}}) {
    SshHost h;
    h.name = name;
    h.destination = addr;
    h.key = ssh_dir + "/id_ed25519";
    h.known_hosts = ssh_dir + "/known_hosts";
    h.connect_timeout_s = 5;
    v.push_back(h);
  }
  return v;
}

namespace {

// sshd in `ns` on addr:22 with the bed's host key, accepting the bed's key
// for root; waits until it accepts connections.
Status start_sshd(Bed& b, testbed::Netns* ns, const std::string& addr, const std::string& tag) {
  std::string cfg = b.ssh_dir + "/sshd-" + tag + ".conf";
  std::ofstream(cfg) << "ListenAddress " << addr << "\nPort 22\nHostKey " << b.ssh_dir
                     << "/host_ed25519\nPidFile none\nAuthorizedKeysFile " << b.ssh_dir
                     << "/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxStartups 100:30:200\n"
                        "MaxSessions 200\n"
                        // The "hosts" are namespaces of this machine and share root's home: bash started by sshd
                        // sources ~/.bashrc, which on a developer's machine may start a Python version manager
                        // (0.7 s per remote command seen). A testbed host's root has an empty home.
                        "SetEnv HOME=" << b.ssh_dir << "/home\n";
  std::filesystem::create_directories(b.ssh_dir + "/home");
  testbed::SpawnOptions o;
  o.ns = ns;
  o.stdout_path = b.ssh_dir + "/sshd-" + tag + ".log";
  o.stderr_path = "=stdout";
  auto p = testbed::Process::spawn({"/usr/sbin/sshd", "-D", "-e", "-f", cfg}, o);
  if (!p) return Status::error("sshd: " + p.message());
  b.sshd.push_back(std::move(p.value()));
  for (int i = 0; i < 100; i++) {
    bool up = false;
    testbed::run_in(b.mgmt, [&] {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(22);
      inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
      up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(fd);
    });
    if (up) return {};
    if (!b.sshd.back().running()) break;
    std::this_thread::sleep_for(50ms);
  }
  std::ifstream in(o.stdout_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Status::error("sshd on " + addr + " did not come up: " + ss.str().substr(0, 400));
}

Status make_ssh_keys(Bed& b);

Status add_ssh(Bed& b) {
  auto m = b.tb->add_netns("mgmt");
  if (!m) return Status::error("testbed: cannot create the management namespace");
  b.mgmt = *m;
  for (Status st : {b.tb->add_veth({b.mgmt, "mc"}, {b.client, "m0"}), b.tb->add_veth({b.mgmt, "ms"}, {b.server, "m0"}),
                    b.tb->add_address(b.mgmt, "mc", "192.168.250.1/30"),
                    b.tb->add_address(b.client, "m0", std::string(kMgmtClient) + "/30"),
                    b.tb->add_address(b.mgmt, "ms", "192.168.250.5/30"),
                    b.tb->add_address(b.server, "m0", std::string(kMgmtServer) + "/30")})
    if (!st) return Status::error("testbed: " + st.message());
  if (Status s = make_ssh_keys(b); !s) return s;
  if (Status s = start_sshd(b, b.client, kMgmtClient, "client"); !s) return s;
  return start_sshd(b, b.server, kMgmtServer, "server");
}

// A directory for the bed's host key, login key and sshd configs (named by
// this harness's pid, so that a run that was killed can be told apart).
Status make_ssh_keys(Bed& b) {
  std::error_code ec;
  // Key directories of runs that were killed (named by their harness's pid).
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    std::string n = e.path().filename();
    if (n.rfind("harness-sshbed-", 0) != 0) continue;
    pid_t owner = static_cast<pid_t>(atoi(n.c_str() + 15));
    if (owner <= 0 || (owner != getpid() && kill(owner, 0) != 0)) std::filesystem::remove_all(e.path(), ec);
  }
  std::string tmpl = "/tmp/harness-sshbed-" + std::to_string(getpid()) + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) return Status::error(std::string("mkdtemp: ") + strerror(errno));
  b.ssh_dir = tmpl;
  std::filesystem::create_directories("/run/sshd", ec);  // sshd's privilege separation directory
  for (const char* k : {"host_ed25519", "id_ed25519"}) {
    auto r = testbed::run_capture({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "harness-testbed", "-f",
                                   b.ssh_dir + "/" + k});
    if (!r || r->status != 0) return Status::error(std::string("ssh-keygen: ") + (r ? r->output : r.message()));
  }
  std::filesystem::copy_file(b.ssh_dir + "/id_ed25519.pub", b.ssh_dir + "/authorized_keys", ec);
  if (ec) return Status::error("authorized_keys: " + ec.message());
  return {};
}

}  // namespace

Result<std::unique_ptr<Bed>> Bed::build_lab(const SweepConfig& cfg, Inventory* inv) {
  auto bb = build(cfg.mtu, false, scenario_of(ScenarioKind::kFirewall));
  if (!bb) return bb.status();
  std::unique_ptr<Bed> b = std::move(bb.value());
  Bed& r = *b;
  // Management links from this namespace, and the bed's keys.
  struct Mgmt {
    testbed::Netns* ns;
    const char* root_if;
    const char* root_ip;
    const char* ip;
    const char* name;
  };
  const Mgmt mg[] = {{r.client, "mc", "192.168.251.1/30", "192.168.251.2", "client"},
                     {r.server, "ms", "192.168.251.5/30", "192.168.251.6", "server"},
                     {r.dut, "md", "192.168.251.9/30", "192.168.251.10", "dut"}};
  for (const Mgmt& m : mg)
    for (Status st : {r.tb->add_veth({nullptr, m.root_if}, {m.ns, "m0"}), r.tb->add_address(nullptr, m.root_if, m.root_ip),
                      r.tb->add_address(m.ns, "m0", std::string(m.ip) + "/30")})
      if (!st) return Status::error("testbed: " + st.message());
  if (Status s = make_ssh_keys(r); !s) return s;
  for (const Mgmt& m : mg)
    if (Status s = start_sshd(r, m.ns, m.ip, m.name); !s) return s;
  // The DUT namespace as a router (kernel-ct): addresses, routes and proxy
  // ARP, with forwarding off so that only the DUT running forwards.
  Status st;
  testbed::run_in(r.dut, [&] {
    auto put = [&](const std::string& path, const char* v) {
      std::ofstream f("/proc/sys/" + path);
      f << v;
      if (!f) st = Status::error("cannot set " + path);
    };
    put("net/ipv4/ip_forward", "0");
    for (const char* i : {"d0", "d1", "all", "default"}) put(std::string("net/ipv4/conf/") + i + "/rp_filter", "0");
    put("net/ipv4/conf/d0/proxy_arp", "1");
    put("net/ipv4/conf/d1/proxy_arp", "1");
  });
  if (!st) return st;
  for (Status s2 : {r.tb->add_address(r.dut, "d0", "192.0.2.1/32"), r.tb->add_address(r.dut, "d1", "192.0.2.2/32"),
                    r.tb->add_route(r.dut, std::string(kClientIp) + "/32", "", "d0"),
                    r.tb->add_route(r.dut, std::string(kServerIp) + "/32", "", "d1")})
    if (!s2) return Status::error("testbed: " + s2.message());
  // The dataplane's config for the DUT namespace's ports.
  auto loaded = sdn::load_yaml_file(cfg.dataplane_config);
  if (!loaded) return loaded.status();
  YAML::Node n = *loaded;
  if (!n["ports"] || !n["ports"].IsSequence() || n["ports"].size() != 2)
    return Status::error(cfg.dataplane_config + ": the testbed needs exactly two ports (client side, server side)");
  for (size_t i = 0; i < 2; i++) {
    n["ports"][i]["devargs"] = "net_af_packet" + std::to_string(i) + ",iface=" + (i == 0 ? "d0" : "d1");
    n["ports"][i]["mtu"] = cfg.mtu;
  }
  n["eal"]["file_prefix"] = "harness-lab-" + r.tb->run_id();
  YAML::Emitter e;
  e << n;
  std::ofstream(r.ssh_dir + "/dataplane.yaml") << e.c_str() << "\n";

  Inventory& v = *inv;
  v = Inventory{};
  v.mtu = cfg.mtu;
  v.harness_conns = cfg.build_dir + "/harness/harness-conns";
  auto host = [&](const Mgmt& m) {
    SshHost h;
    h.name = m.name;
    h.destination = m.ip;
    h.key = r.ssh_dir + "/id_ed25519";
    h.known_hosts = r.ssh_dir + "/known_hosts";
    h.connect_timeout_s = 5;
    return h;
  };
  v.client.ssh = host(mg[0]);
  v.client.interface = "c0";
  v.client.address = kClientIp;
  v.server.ssh = host(mg[1]);
  v.server.interface = "s0";
  v.server.address = kServerIp;
  v.dut.ssh = host(mg[2]);
  v.dut.interfaces = {"d0", "d1"};
  v.dut.profiles = dut_names();
  v.dut.dataplane_config = r.ssh_dir + "/dataplane.yaml";
  v.dut.dataplane_program = cfg.build_dir + "/dataplane/dataplane";
  v.dut.dataplane_ctl = cfg.build_dir + "/dataplane/dataplane-ctl";
  return b;
}

Result<std::unique_ptr<Bed>> Bed::build(int mtu, bool ssh, const Scenario& scenario, Segmentation segmentation,
                                        const std::string& source_dir, const std::string& log_dir) {
  auto b = std::make_unique<Bed>();
  b->source_dir = source_dir;
  b->log_dir = log_dir;
  auto t = testbed::Testbed::create();
  if (!t) return t.status();
  b->tb = std::move(t.value());
  b->mtu = mtu;
  auto c = b->tb->add_netns("client");
  auto d = b->tb->add_netns("dut");
  auto s = b->tb->add_netns("server");
  if (!c || !d || !s) return Status::error("testbed: cannot create namespaces");
  b->client = *c;
  b->dut = *d;
  b->server = *s;
  for (Status st : {b->tb->add_veth({b->client, "c0"}, {b->dut, "d0"}, mtu),
                    b->tb->add_veth({b->dut, "d1"}, {b->server, "s0"}, mtu),
                    b->tb->add_address(b->client, "c0", std::string(kClientIp) + "/24")})
    if (!st) return Status::error("testbed: " + st.message());
  // Wire segmentation: without TX checksum offload a veth has no TSO, so
  // the endpoints' kernels cut TCP into MTU-size frames before the veth, as
  // a real NIC's wire carries them (and af_packet ports get whole, checksummed
  // frames). Host segmentation keeps the veths' defaults: GSO packets of up
  // to 64 KB cross into the DUT namespace whole.
  if (segmentation == Segmentation::kWire)
    for (Status st : {b->tb->disable_tx_checksum(b->client, "c0"), b->tb->disable_tx_checksum(b->server, "s0"),
                      b->tb->disable_tx_checksum(b->dut, "d0"), b->tb->disable_tx_checksum(b->dut, "d1")})
      if (!st) return Status::error("testbed: " + st.message());
  // iperf3 instances reuse fixed client ports (--cport) run after run, so
  // the endpoints keep no TIME_WAIT state (testbed namespaces only).
  // And keep ephemeral ports (iperf3's control connections) out of the
  // --cport range 40000.., or a control socket can take an instance's port.
  for (testbed::Netns* ns : {b->client, b->server}) {
    Status ws;
    testbed::run_in(ns, [&] {
      std::ofstream f("/proc/sys/net/ipv4/tcp_max_tw_buckets");
      f << "0";  // no TIME_WAIT: a 1-second rerun may reuse its 4-tuples at once
      std::ofstream r("/proc/sys/net/ipv4/ip_local_port_range");
      r << "50000 60999";
      if (!f || !r) ws = Status::error("cannot set net.ipv4.tcp_max_tw_buckets / ip_local_port_range");
    });
    if (!ws) return ws;
  }
  // The server side as the scenario has it (overlay-nat: the server
  // reaches the client only through the tunnel).
  b->scenario = &scenario;
  if (Status st = scenario.build_bed(*b); !st) return st;
  if (ssh)
    if (Status st = add_ssh(*b); !st) return st;
  return b;
}

}  // namespace harness
