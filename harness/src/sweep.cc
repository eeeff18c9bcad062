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

// ------------------------------------------------------------------ config

Status load_sweep_config(const std::string& path, SweepConfig* c) {
  auto loaded = sdn::load_yaml_file(path);
  if (!loaded) return loaded.status();
  YAML::Node n = *loaded;
  auto err = [&](const YAML::Node& at, const std::string& key, const std::string& msg) {
    return Status::error(path + ":" + std::to_string(at.Mark().line + 1) + ": key '" + key + "': " + msg);
  };
  if (!n.IsMap()) return Status::error(path + ":1: expected a mapping");
  // One scalar as a number (sdn/number.h: decimal, finite, in range).
  auto number = [&](const YAML::Node& x, const std::string& key, bool integer, double lo, double hi,
                    double* out) -> Status {
    if (!x.IsScalar()) return err(x, key, "expected a number");
    if (Status s = sdn::parse_number(x.Scalar(), integer, lo, hi, out); !s) return err(x, key, s.message());
    return {};
  };
  static const std::set<std::string> known = {"instances", "sizes", "protos", "duts", "duration_s", "repeat",
                                              "warmup_s", "sockperf", "background_conns", "mtu", "dataplane_config",
                                              "out_dir", "interleave", "omit_s", "rfc2544"};
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (!known.count(k)) return err(it->first, k, "unknown key");
  }
  auto ints = [&](const char* key, std::vector<int>* out, int lo, int hi) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    if (!v.IsSequence() || v.size() == 0) return err(v, key, "expected a non-empty list of numbers");
    out->clear();
    for (const auto& x : v) {
      double d;
      if (Status s = number(x, key, true, lo, hi, &d); !s) return s;
      out->push_back(static_cast<int>(d));
    }
    return {};
  };
  auto strs = [&](const char* key, std::vector<std::string>* out, const std::set<std::string>& allowed) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    if (!v.IsSequence() || v.size() == 0) return err(v, key, "expected a non-empty list");
    out->clear();
    for (const auto& x : v) {
      std::string s = x.Scalar();
      if (!allowed.count(s)) return err(x, key, "unknown value '" + s + "'");
      out->push_back(s);
    }
    return {};
  };
  auto one = [&](const char* key, int* out, int lo, int hi) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    double d;
    if (Status s = number(v, key, true, lo, hi, &d); !s) return s;
    *out = static_cast<int>(d);
    return {};
  };
  const std::set<std::string> protos(kProtoNames.begin(), kProtoNames.end());
  const std::set<std::string> duts(kDutNames.begin(), kDutNames.end());
  if (Status s = ints("instances", &c->instances, kInstancesLimit.lo, kInstancesLimit.hi); !s) return s;
  if (Status s = ints("sizes", &c->sizes, kSizesLimit.lo, kSizesLimit.hi); !s) return s;
  if (Status s = strs("protos", &c->protos, protos); !s) return s;
  if (Status s = strs("duts", &c->duts, duts); !s) return s;
  if (Status s = one("duration_s", &c->duration_s, kDurationLimit.lo, kDurationLimit.hi); !s) return s;
  if (Status s = one("repeat", &c->repeat, kRepeatLimit.lo, kRepeatLimit.hi); !s) return s;
  if (Status s = one("warmup_s", &c->warmup_s, kWarmupLimit.lo, kWarmupLimit.hi); !s) return s;
  if (Status s = one("omit_s", &c->omit_s, kOmitLimit.lo, kOmitLimit.hi); !s) return s;
  if (Status s = one("background_conns", &c->background_conns, kBackgroundLimit.lo, kBackgroundLimit.hi); !s) return s;
  if (Status s = one("mtu", &c->mtu, kMtuLimit.lo, kMtuLimit.hi); !s) return s;
  for (auto [key, out] : {std::pair<const char*, bool*>{"sockperf", &c->sockperf}, {"interleave", &c->interleave}}) {
    if (YAML::Node v = n[key]) {
      std::string s = v.Scalar();
      if (s != "true" && s != "false") return err(v, key, "expected true or false");
      *out = s == "true";
    }
  }
  if (YAML::Node v = n["dataplane_config"]) c->dataplane_config = v.Scalar();
  if (YAML::Node v = n["out_dir"]) c->out_dir = v.Scalar();
  if (YAML::Node r = n["rfc2544"]) {
    if (!r.IsMap()) return err(r, "rfc2544", "expected a mapping (frame_sizes, conns, duts, trial_s, ...)");
    static const std::set<std::string> rknown = {"frame_sizes", "conns", "duts", "trial_s", "loss", "churn_s",
                                                 "churn_conns", "repeat", "proto"};
    for (auto it = r.begin(); it != r.end(); ++it)
      if (std::string k = it->first.as<std::string>(); !rknown.count(k)) return err(it->first, "rfc2544." + k, "unknown key");
    Rfc2544Config& rc = c->rfc;
    for (auto [key, out, lo, hi] : {std::tuple<const char*, std::vector<int>*, int, int>{"frame_sizes", &rc.frames, 64, 1518},
                                    {"conns", &rc.conns, 1, 10000000}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      if (!v.IsSequence() || v.size() == 0) return err(v, std::string("rfc2544.") + key, "expected a non-empty list of numbers");
      out->clear();
      for (const auto& x : v) {
        double d;
        if (Status s = number(x, std::string("rfc2544.") + key, true, lo, hi, &d); !s) return s;
        out->push_back(static_cast<int>(d));
      }
    }
    if (YAML::Node v = r["duts"]) {
      if (!v.IsSequence() || v.size() == 0) return err(v, "rfc2544.duts", "expected a non-empty list");
      rc.duts.clear();
      for (const auto& x : v) {
        if (!duts.count(x.Scalar())) return err(x, "rfc2544.duts", "unknown value '" + x.Scalar() + "'");
        rc.duts.push_back(x.Scalar());
      }
    }
    for (auto [key, out, lo, hi] : {std::tuple<const char*, double*, double, double>{"trial_s", &rc.trial_s, 0.1, 600},
                                    {"loss", &rc.loss, 0, 1}, {"churn_s", &rc.churn_s, 0, 600}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      if (Status s = number(v, std::string("rfc2544.") + key, false, lo, hi, out); !s) return s;
    }
    for (auto [key, out, lo, hi] : {std::tuple<const char*, int*, int, int>{"churn_conns", &rc.churn_conns, 1, 10000000},
                                    {"repeat", &rc.repeat, 1, 100}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      double d;
      if (Status s = number(v, std::string("rfc2544.") + key, true, lo, hi, &d); !s) return s;
      *out = static_cast<int>(d);
    }
    if (YAML::Node v = r["proto"]) {
      if (v.Scalar() != "tcp" && v.Scalar() != "udp") return err(v, "rfc2544.proto", "want tcp or udp");
      rc.proto = v.Scalar();
    }
    c->rfc2544 = true;
  }
  return {};
}

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
  auto bb = build(cfg.mtu, false);
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
  v.dut.profiles = {"dataplane", "kernel-ct", "testpmd-io", "ovs-dpdk", "ovs-dpdk-offload", "ovs-kernel-tc"};
  v.dut.dataplane_config = r.ssh_dir + "/dataplane.yaml";
  v.dut.dataplane_program = cfg.build_dir + "/dataplane/dataplane";
  v.dut.dataplane_ctl = cfg.build_dir + "/dataplane/dataplane-ctl";
  return b;
}

Result<std::unique_ptr<Bed>> Bed::build(int mtu, bool ssh) {
  auto b = std::make_unique<Bed>();
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
                    b->tb->add_address(b->client, "c0", std::string(kClientIp) + "/24"),
                    b->tb->add_address(b->server, "s0", std::string(kServerIp) + "/24"),
                    b->tb->disable_tx_checksum(b->client, "c0"), b->tb->disable_tx_checksum(b->server, "s0"),
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
  if (ssh)
    if (Status st = add_ssh(*b); !st) return st;
  return b;
}

// ------------------------------------------------------------------ client ports

Result<std::vector<int>> pick_client_ports(const std::string& text, int n, int* cursor) {
  std::istringstream in(text);
  long lo = 0, hi = 0;
  if (!(in >> lo >> hi) || lo < 1 || hi > 65535 || lo > hi)
    return Status::error("cannot read the client host's ip_local_port_range from: " + text.substr(0, 80));
  std::set<int> used;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    // ss -Htuan: Netid State Recv-Q Send-Q Local-Address:Port Peer-Address:Port
    std::istringstream l(line);
    std::string f[5];
    for (auto& x : f) l >> x;
    const size_t c = f[4].rfind(':');
    if (c == std::string::npos) continue;
    const std::string port = f[4].substr(c + 1);
    if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos) used.insert(atoi(port.c_str()));
  }
  auto usable = [&](int p) { return (p < lo || p > hi) && !used.count(p); };
  std::vector<int> v;
  const int span = 65536 - kClientPortLo;
  int p = std::clamp(*cursor, kClientPortLo, 65535);
  for (int tried = 0; tried < span && static_cast<int>(v.size()) < n; tried++) {
    if (usable(p)) v.push_back(p);
    p = p == 65535 ? kClientPortLo : p + 1;
  }
  if (static_cast<int>(v.size()) < n)
    return Status::error("only " + std::to_string(v.size()) + " free ports outside the ephemeral range " +
                         std::to_string(lo) + "-" + std::to_string(hi) + " from " + std::to_string(kClientPortLo));
  *cursor = p;
  return v;
}

// ------------------------------------------------------------------ background connections

namespace {

constexpr int kBackgroundPort = 30000;  // the first of the background connections' server ports

// The last complete JSON line a generator wrote, or a discarded value.
nlohmann::json last_json_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.back() == '}') last = line;
  return nlohmann::json::parse(last, nullptr, false);
}

}  // namespace

Result<std::unique_ptr<BackgroundConns>> BackgroundConns::open(Transport& tr, const std::string& program, int count,
                                                              int first_port, const std::string& raw_prefix,
                                                              const std::atomic<bool>& stop) {
  auto bc = std::unique_ptr<BackgroundConns>(new BackgroundConns());
  const std::string ports =
      std::to_string(first_port) + "-" + std::to_string(first_port + ports_for(count) - 1);
  const std::string srv_out = raw_prefix + ".server.jsonl", cli_out = raw_prefix + ".client.jsonl";
  SpawnOptions o;
  o.stdout_path = srv_out;
  o.stderr_path = "=stdout";
  auto s = tr.spawn(Side::kServer, {program, "serve", "--address", tr.server_address(), "--ports", ports, "--count", std::to_string(count)}, o);
  if (!s) return Status::error("background conns: server side: " + s.message());
  bc->server_ = std::move(s.value());
  for (int i = 0; i < 100; i++) {
    auto j = last_json_line(srv_out);
    if (!j.is_discarded() && (j.value("phase", "") == "ready" || j.value("phase", "") == "serving")) break;
    if (!bc->server_.running() || (!j.is_discarded() && j.value("phase", "") == "failed"))
      return Status::error("background conns: server side: " + (j.is_discarded() ? "exited; see " + srv_out
                                                                                  : j.value("error", "failed")));
    if (i == 99) return Status::error("background conns: server side not listening after 10 s; see " + srv_out);
    std::this_thread::sleep_for(100ms);
  }
  // --timeout: a set-up rate under 500/s is a DUT that cannot take them.
  const int timeout_s = 30 + count / 500;
  o.stdout_path = cli_out;
  auto c = tr.spawn(Side::kClient,
                    {program, "connect", "--to", tr.server_address(), "--ports", ports, "--count",
                     std::to_string(count), "--timeout", std::to_string(timeout_s)},
                    o);
  if (!c) return Status::error("background conns: client side: " + c.message());
  bc->client_ = std::move(c.value());
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 15);;) {
    auto j = last_json_line(cli_out);
    std::string phase = j.is_discarded() ? "" : j.value("phase", "");
    if (phase == "done") {
      Setup& st = bc->setup_;
      st.established = j.value("established", 0LL);
      st.failed = j.value("failed", 0LL);
      st.secs = j.value("secs", 0.0);
      st.per_s = j.value("per_s", 0.0);
      const nlohmann::json errs = j.value("errors", nlohmann::json::object());
      for (auto& [k, v] : errs.items())
        st.errors += (st.errors.empty() ? "" : " ") + k + "=" + std::to_string(v.get<long long>());
      if (st.errors.empty()) st.errors = "none";
      return bc;
    }
    if (phase == "failed")
      return Status::error("background conns: " + j.value("error", std::string("failed")) + " (" +
                           std::to_string(j.value("established", 0LL)) + " of " + std::to_string(count) +
                           " established, " + std::to_string(j.value("failed", 0LL)) + " connects failed)");
    if (!bc->client_.running())
      return Status::error("background conns: client side exited without a result; see " + cli_out);
    if (stop) return Status::error("background conns: interrupted");
    if (std::chrono::steady_clock::now() > deadline)
      return Status::error("background conns: no result from the client side after " +
                           std::to_string(timeout_s + 15) + " s; see " + cli_out);
    std::this_thread::sleep_for(200ms);
  }
}

Status BackgroundConns::alive() {
  if (!server_.running()) return Status::error("the background connections' server side exited");
  if (!client_.running()) return Status::error("the background connections' client side exited");
  return {};
}

// ------------------------------------------------------------------ sweep

using util::fmt;
using util::now_iso;

namespace {

std::string cmd_line(const std::vector<std::string>& argv) { return util::first_line(argv, "unavailable"); }

void put_latency(Row& r, const SockperfResult& l) {
  r["latency_p50_us"] = fmt(l.p50_us);
  r["latency_p90_us"] = fmt(l.p90_us);
  r["latency_p99_us"] = fmt(l.p99_us);
  r["latency_p999_us"] = fmt(l.p999_us);
  r["latency_max_us"] = fmt(l.max_us);
  r["latency_dropped"] = l.dropped >= 0 ? std::to_string(l.dropped) : std::string("not reported by sockperf");
}

struct Progress {
  int done = 0, total = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  bool tty = isatty(2);
  void step(const std::string& what) {
    done++;
    if (!tty) return;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double eta = done ? el / done * (total - done) : 0;
    fprintf(stderr, "\r\033[K[%d/%d] %s  ETA %dm%02ds", done, total, what.c_str(), static_cast<int>(eta) / 60,
            static_cast<int>(eta) % 60);
    fflush(stderr);
  }
  void end() {
    if (tty) fprintf(stderr, "\n");
  }
};

struct RunOut {
  std::vector<IperfResult> inst;
  SockperfResult lat;
  bool have_lat = false;
  bool server_busy = false;  // an iperf3 server was still busy with its last test
  std::string error;         // aggregated
};

constexpr int kLoadedMps = 1000;  // sockperf messages per second under load

RunOut run_traffic(Transport& tr, const std::string& proto, int n, int size, int duration, int omit,
                   const std::string& raw_prefix, bool with_sockperf) {
  RunOut out;
  // Fixed client ports (one flow per instance, the same 5-tuple shape every
  // run), free on the client host now: see pick_client_ports.
  static int cursor = kClientPortLo;
  std::vector<int> cports;
  if (n > 0) {
    auto seen = tr.capture(Side::kClient, {"sh", "-c", "cat /proc/sys/net/ipv4/ip_local_port_range; ss -Htuan"});
    auto picked = seen ? pick_client_ports(*seen, n, &cursor) : Result<std::vector<int>>(seen.status());
    if (!picked) {
      out.error = "client ports: " + picked.message();
      return out;
    }
    cports = *picked;
  }
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    out.error = "pipe failed";
    return out;
  }
  std::vector<Job> procs;
  std::vector<std::string> files;
  int mss = std::max(88, std::min(size, tr.mtu() - 52));
  const std::string server = tr.server_address();
  for (int i = 0; i < n; i++) {
    std::vector<std::string> argv = {"iperf3", "-c", server, "-p", std::to_string(5201 + i), "--cport",
                                     std::to_string(cports[static_cast<size_t>(i)]), "-t", std::to_string(duration), "-J", "-l",
                                     std::to_string(size)};
    if (omit > 0) argv.insert(argv.end(), {"-O", std::to_string(omit)});
    if (!tr.client_address().empty()) argv.insert(argv.end(), {"-B", tr.client_address()});
    if (proto == "udp") argv.insert(argv.end(), {"-u", "-b", "0"});
    else argv.insert(argv.end(), {"-M", std::to_string(mss)});
    SpawnOptions o;
    o.barrier_fd = pfd[0];
    o.stdout_path = raw_prefix + "-iperf3-" + std::to_string(i) + ".json";
    o.stderr_path = raw_prefix + "-iperf3-" + std::to_string(i) + ".err";
    auto p = tr.spawn(Side::kClient, argv, o);
    if (!p) {
      out.error = "instance " + std::to_string(i) + ": " + p.message();
      break;
    }
    procs.push_back(std::move(p.value()));
    files.push_back(o.stdout_path);
  }
  std::string lat_file = raw_prefix + "-sockperf.txt";
  Job sp;
  if (with_sockperf && out.error.empty()) {
    SpawnOptions o;
    o.barrier_fd = pfd[0];
    o.stdout_path = lat_file;
    o.stderr_path = "=stdout";
    // One datagram per message: sizes past the MTU would be IP fragments,
    // which the DPDK DUTs here do not reassemble.
    // Idle: ping-pong, one message in flight. Under load: under-load mode at
    // a fixed light rate, every message answered, so that a datagram the
    // load crowds out counts as dropped instead of stalling ping-pong (which
    // waits for that reply for the rest of the run), starting when iperf3
    // starts counting.
    std::vector<std::string> argv = {"sockperf", n > 0 ? "under-load" : "ping-pong", "-i", server, "-p", "11111", "-t",
                                     std::to_string(duration), "-m", std::to_string(std::min(size, tr.mtu() - 28))};
    if (n > 0) argv.insert(argv.end(), {"--mps", std::to_string(kLoadedMps), "--reply-every", "1"});
    if (n > 0 && omit > 0) argv.insert(argv.end(), {"--pre-warmup-wait", std::to_string(omit)});
    if (!tr.client_address().empty()) argv.insert(argv.end(), {"--client_ip", tr.client_address()});
    auto p = tr.spawn(Side::kClient, argv, o);
    if (p) sp = std::move(p.value());
    out.have_lat = p.ok();
  }
  // Release everyone at once (remote ones once they wait at the barrier).
  if (out.error.empty())
    if (Status s = tr.ready(std::chrono::seconds(30)); !s) out.error = s.message();
  std::string go(procs.size() + (out.have_lat ? 1 : 0), 'g');
  if (!go.empty() && write(pfd[1], go.data(), go.size()) < 0) out.error = "barrier write failed";
  close(pfd[0]);
  close(pfd[1]);
  auto timeout = std::chrono::seconds(duration + omit + 20);
  for (size_t i = 0; i < procs.size(); i++) {
    auto rc = procs[i].wait(timeout);
    std::ifstream in(files[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    IperfResult r = parse_iperf3(ss.str());
    if (!rc) r = IperfResult{false, "timed out after " + std::to_string(timeout.count()) + " s"};
    else if (*rc == 255 && !procs[i].host().empty()) r = IperfResult{false, procs[i].explain(*rc)};
    else if (r.ok && *rc != 0) r = IperfResult{false, procs[i].explain(*rc)};
    if (!r.ok) out.error += (out.error.empty() ? "" : "; ") + ("instance " + std::to_string(i) + ": " + r.error);
    out.server_busy |= r.server_busy;
    out.inst.push_back(r);
  }
  if (out.have_lat) {
    auto rc = sp.wait(timeout);
    std::ifstream in(lat_file);
    std::stringstream ss;
    ss << in.rdbuf();
    out.lat = !rc                                    ? SockperfResult{false, "sockperf timed out"}
              : *rc == 255 && !sp.host().empty() ? SockperfResult{false, "sockperf: " + sp.explain(*rc)}
                                                 : parse_sockperf(ss.str());
  }
  return out;
}


// What one sweep shares across its DUTs and cells.
struct SweepRun {
  SweepRun(const SweepConfig& c, const std::atomic<bool>& s) : cfg(c), stop(s) {}
  const SweepConfig& cfg;
  const std::atomic<bool>& stop;
  std::string out, raw, csv;
  std::string run_id;  // names this run's processes on remote hosts (SSH transport)
  std::string git;
  std::set<std::string> done;  // "cell|repeat" already in the CSV (resume)
  std::map<std::string, std::vector<Row>> cell_reps;  // repetitions so far per cell, across rounds
  CsvWriter w;
  Progress prog;
  int errors = 0;
  int max_inst = 0;
  bool endpoints_described = false;

  bool measured(const Row& base, const std::string& rep) const { return done.count(cell_key(base) + "|" + rep) > 0; }
};

// The run directory (made absolute: it is handed to programs that change
// directory), its raw/ folder, and the rows a resumed run already has.
Status prepare_run_dir(SweepRun& run) {
  const SweepConfig& cfg = run.cfg;
  std::string out = !cfg.resume_dir.empty() ? cfg.resume_dir : cfg.out_dir;
  if (out.empty()) {
    time_t t = time(nullptr);
    char b[32];
    strftime(b, sizeof b, "%Y%m%d-%H%M%S", gmtime(&t));
    out = cfg.source_dir + "/results/runs/" + b;
  }
  {
    std::error_code ec;
    out = std::filesystem::absolute(out, ec).lexically_normal().string();
  }
  run.out = out;
  run.raw = out + "/raw";
  {
    std::error_code ec;
    std::filesystem::create_directories(run.raw, ec);
    if (ec) return Status::error("cannot make " + run.raw + ": " + ec.message());
  }
  run.run_id = "r" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr));
  run.csv = out + "/results.csv";
  if (!cfg.resume_dir.empty() && access(run.csv.c_str(), F_OK) == 0) {
    auto rows = read_csv(run.csv);
    if (!rows) return rows.status();
    for (auto& r : rows.value()) {
      run.done.insert(cell_key(r) + "|" + r["repeat"]);
      if (r["repeat"] != "summary") run.cell_reps[cell_key(r)].push_back(r);
    }
    fprintf(stderr, "harness: resuming %s: %zu rows already measured\n", out.c_str(), rows->size());
  }
  return {};
}

// machine.txt: the harness host (and the lab, when there is one), once per
// run directory.
void write_machine_txt(const SweepRun& run) {
  const SweepConfig& cfg = run.cfg;
  if (access((run.out + "/machine.txt").c_str(), F_OK) == 0) return;
  std::ofstream m(run.out + "/machine.txt");
  std::string cpu = "unknown";
  std::ifstream ci("/proc/cpuinfo");
  for (std::string l; std::getline(ci, l);)
    if (l.rfind("model name", 0) == 0) {
      cpu = l.substr(l.find(':') + 2);
      break;
    }
  m << "harness host (this machine; on the namespace testbed also the client, server and DUT hosts):\n";
  m << "cpu: " << cpu << "\ncores: " << std::thread::hardware_concurrency() << "\nkernel: " << cmd_line({"uname", "-r"})
    << "\ndpdk: " << cmd_line({"pkg-config", "--modversion", "libdpdk"}) << "\novs: " << cmd_line({"ovs-vswitchd", "--version"})
    << "\niperf3: " << cmd_line({"iperf3", "--version"}) << "\nsockperf: " << cmd_line({"sockperf", "--version"})
    << "\ngit: " << run.git << "\nmtu: " << cfg.mtu << "\nhugepages: " << (getenv("DPDK_HUGE") && std::string(getenv("DPDK_HUGE")) == "0" ? "no" : "yes")
    << "\n";
  if (cfg.inventory)
    m << "lab: " << cfg.inventory->path << " (client " << cfg.inventory->client.ssh.destination << ", server "
      << cfg.inventory->server.ssh.destination << ", dut " << cfg.inventory->dut.ssh.destination << "), link "
      << (cfg.inventory->link_gbps > 0 ? fmt(cfg.inventory->link_gbps, 0) + " Gbit/s" : std::string("not given"))
      << "\n";
  if (cfg.inventory && cfg.inventory->link_gbps > 0)
    m << "line_rate_gbps: " << fmt(cfg.inventory->link_gbps, 3) << "\n";
}

// One DUT brought up for a round: the bed (or the lab's SSH session), the
// transport, the DUT, its iperf3 and sockperf servers and background
// connections. Whatever it started is stopped when it goes, on every path.
// error() says why no cell can run ("" when ready).
class DutSession {
 public:
  DutSession(SweepRun& run, const std::string& name, int round);
  ~DutSession();
  DutSession(const DutSession&) = delete;
  DutSession& operator=(const DutSession&) = delete;

  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }
  Transport& transport() { return *tr_; }
  Dut& dut() { return *dut_; }

  // After a run: fresh servers for the instances that failed.
  void renew_servers(const RunOut& o, int n);
  // A row's columns every cell of this DUT has.
  Row base_row(const std::string& kind, const std::string& proto, int inst, int size) const;
  // The DUT's own view of a run: its tracker's entries, and what its drop
  // counters added (a number, or why there is none).
  void dut_view(Row& r, const Result<std::map<std::string, long long>>& before);

 private:
  void open_lab();
  void open_testbed();
  void describe_endpoints();
  Status start_server(int i);
  void start_sockperf();
  std::string open_background();

  SweepRun& run_;
  const SweepConfig& cfg_;
  std::string name_, dir_, version_ = "unknown", error_;
  std::unique_ptr<SshSession> ssh_;
  std::unique_ptr<Transport> tr_;
  std::unique_ptr<Bed> bed_;
  std::unique_ptr<Dut> dut_;
  std::vector<Job> servers_;  // iperf3 instance i's server
  Job sockperf_;
  std::unique_ptr<BackgroundConns> bg_;
};

DutSession::DutSession(SweepRun& run, const std::string& name, int round)
    : run_(run), cfg_(run.cfg), name_(name), dir_(run.raw + "/" + name) {
  std::error_code mk;
  std::filesystem::create_directories(dir_, mk);
  if (cfg_.inventory) open_lab();
  else open_testbed();
  if (dut_) version_ = dut_->version();
  if (bed_ && bed_->dut) {
    // The DUT host as it is, before any traffic: in the machine info.
    std::ofstream(run_.out + "/machine.txt", std::ios::app)
        << "dut host of " << name_ << " (round " << round << "):\n"
        << gather_host_facts(util::netns_runner(bed_->dut), {"d0", "d1"}).describe();
  }
  if (error_.empty())
    if (Status s = dut_->start(*bed_); !s) error_ = "start: " + s.message();
  if (!cfg_.inventory && bed_ && cfg_.lab == "testbed-ssh") {
    ssh_ = std::make_unique<SshSession>(bed_->ssh_hosts(), run_.run_id, bed_->mgmt);
    std::string report;
    if (Status s = ssh_->open(&report); !s) error_ = "ssh: " + s.message();
    if (!report.empty()) fprintf(stderr, "harness: %s", report.c_str());
    tr_ = std::make_unique<SshTransport>(*ssh_, Bed::kServerIp, cfg_.mtu);
  } else if (!cfg_.inventory && bed_) {
    tr_ = std::make_unique<NetnsTransport>(*bed_);
  }
  servers_.resize(static_cast<size_t>(run_.max_inst));
  if (!error_.empty()) return;
  for (int i = 0; i < run_.max_inst && error_.empty(); i++)
    if (Status st = start_server(i); !st) error_ = st.message();
  if (cfg_.sockperf && error_.empty()) start_sockperf();
  std::this_thread::sleep_for(300ms);
  if (cfg_.background_conns > 0 && error_.empty()) error_ = open_background();
}

// A lab: every host over SSH, nothing built here (the Bed stays empty).
void DutSession::open_lab() {
  const Inventory& inv = *cfg_.inventory;
  bed_ = std::make_unique<Bed>();
  bed_->mtu = inv.mtu;
  ssh_ = std::make_unique<SshSession>(inv.ssh_hosts(), run_.run_id, nullptr);
  std::string report;
  if (Status s = ssh_->open(&report); !s) error_ = "ssh: " + s.message();
  if (!report.empty()) fprintf(stderr, "harness: %s", report.c_str());
  tr_ = std::make_unique<SshTransport>(*ssh_, inv.server.address, inv.mtu, &inv);
  if (error_.empty() && !run_.endpoints_described) describe_endpoints();
  if (error_.empty()) {
    auto d = make_lab_dut(name_, inv, *ssh_, dir_, run_.out + "/machine.txt");
    if (!d) error_ = d.message();
    else dut_ = std::move(d.value());
  }
}

// The client and server hosts, once per run, as the DUT host is.
void DutSession::describe_endpoints() {
  const Inventory& inv = *cfg_.inventory;
  run_.endpoints_described = true;
  std::ofstream m(run_.out + "/machine.txt", std::ios::app);
  for (const LabHost* h : {&inv.client, &inv.server}) {
    HostRunner runner = [&](const std::vector<std::string>& argv) -> Result<std::string> {
      std::string o;
      if (Status s = ssh_->run(h->ssh.name, argv, &o, 30s); !s) return s;
      return o;
    };
    m << h->ssh.name << " host " << h->ssh.destination << " (" << h->interface << " " << h->address << "):\n"
      << gather_host_facts(runner, {h->interface}).describe();
  }
}

void DutSession::open_testbed() {
  auto b = Bed::build(cfg_.mtu, cfg_.lab == "testbed-ssh");
  if (!b) error_ = b.message();
  else bed_ = std::move(b.value());
  if (error_.empty()) {
    auto d = make_dut(name_, cfg_, dir_);
    if (!d) error_ = d.message();
    else dut_ = std::move(d.value());
  }
}

// Stops in order: the load first, then the DUT (a lab DUT stops itself
// through the session), then the transport, the session and the bed.
DutSession::~DutSession() {
  bg_.reset();
  servers_.clear();
  sockperf_ = Job();
  if (dut_) dut_->stop();
  dut_.reset();
  tr_.reset();
  ssh_.reset();
  bed_.reset();
}

// iperf3 3.12 servers wait forever for a client that went away mid-test
// (and so would every later test on that port): a server whose instance
// failed is replaced before the next run. --rcv-timeout ends a test whose
// data stopped.
Status DutSession::start_server(int i) {
  servers_[static_cast<size_t>(i)] = Job();
  SpawnOptions o;
  o.stdout_path = "/dev/null";
  o.stderr_path = "/dev/null";
  auto p = tr_->spawn(Side::kServer,
                      {"iperf3", "-s", "-p", std::to_string(5201 + i), "--rcv-timeout",
                       std::to_string((cfg_.duration_s + 10) * 1000), "-B", tr_->server_address()},
                      o);
  if (!p) return Status::error("iperf3 server: " + p.message());
  servers_[static_cast<size_t>(i)] = std::move(p.value());
  return {};
}

void DutSession::start_sockperf() {
  sockperf_ = Job();
  SpawnOptions o;
  o.stdout_path = "/dev/null";
  o.stderr_path = "/dev/null";
  auto p = tr_->spawn(Side::kServer, {"sockperf", "server", "-i", tr_->server_address(), "-p", "11111"}, o);
  if (p) sockperf_ = std::move(p.value());
}

void DutSession::renew_servers(const RunOut& o, int n) {
  bool any = false;
  for (int i = 0; i < n; i++) {
    bool ok = static_cast<size_t>(i) < o.inst.size() && o.inst[static_cast<size_t>(i)].ok;
    if (ok && servers_[static_cast<size_t>(i)].running()) continue;
    if (Status st = start_server(i); !st) error_ = st.message();
    any = true;
  }
  if (o.have_lat && !o.lat.ok && cfg_.sockperf) {
    start_sockperf();
    any = true;
  }
  if (any) std::this_thread::sleep_for(300ms);
}

// --background-conns: room in the tracker, the connections set up through
// the transport, then the tracker's count checked. Returns why not, or "".
std::string DutSession::open_background() {
  Dut& dut = *dut_;
  const int k = cfg_.background_conns;
  auto room = dut.make_room(k);
  if (!room) return "background conns: making room in the tracker: " + room.message();
  auto bc = BackgroundConns::open(*tr_, cfg_.inventory ? cfg_.inventory->harness_conns : cfg_.build_dir + "/harness/harness-conns",
                                  k, kBackgroundPort, dir_ + "/background", run_.stop);
  if (!bc) return bc.message();
  bg_ = std::move(bc.value());
  const auto& su = bg_->setup();
  long long ce = dut.ct_entries();
  std::string held = ce >= 0 ? std::to_string(ce) : dut.no_tracker().empty() ? "unreadable" : dut.no_tracker();
  char line[512];
  snprintf(line, sizeof line,
           "%s: %lld background connections in %.1f s (%.0f/s), %lld connects failed (%s); tracker: %s; limit: %s\n",
           dut.name().c_str(), su.established, su.secs, su.per_s, su.failed, su.errors.c_str(), held.c_str(),
           room->c_str());
  fprintf(stderr, "harness: %s", line);
  std::ofstream(run_.out + "/machine.txt", std::ios::app) << "background " << line;
  if (ce >= 0 && ce < k)
    return "the tracker holds " + std::to_string(ce) + " entries after " + std::to_string(su.established) +
           " background connections were established: it cannot hold " + std::to_string(k);
  if (ce < 0 && dut.no_tracker().empty()) return "background conns: the DUT's tracker count cannot be read";
  return "";
}

Row DutSession::base_row(const std::string& kind, const std::string& proto, int inst, int size) const {
  Row r;
  r["timestamp"] = now_iso();
  r["git_rev"] = run_.git;
  r["dut"] = name_;
  r["dut_version"] = version_;
  r["kind"] = kind;
  r["proto"] = proto;
  r["instances"] = std::to_string(inst);
  r["size_bytes"] = std::to_string(size);
  r["background_conns"] = std::to_string(bg_ ? bg_->setup().established : 0);
  r["background_setup_per_s"] = bg_ ? fmt(bg_->setup().per_s, 0) : std::string("n/a: none asked for");
  return r;
}

void DutSession::dut_view(Row& r, const Result<std::map<std::string, long long>>& before) {
  if (Status a = dut_->alive(); !a) {
    if (r["status"] == "ok") run_.errors++;
    r["status"] = "error";
    r["error"] = a.message() + (r["error"].empty() ? "" : "; " + r["error"]);
    error_ = "the DUT was lost in an earlier cell: " + a.message();
  }
  long long ce = dut_->ct_entries(), off = dut_->offloaded();
  // The background connections must still be there: generators alive,
  // the tracker still holding them.
  if (bg_ && r["status"] == "ok") {
    Status a = bg_->alive();
    if (!a || (ce >= 0 && ce < cfg_.background_conns)) {
      r["status"] = "error";
      r["error"] = !a ? a.message()
                      : "the tracker holds " + std::to_string(ce) + " entries, fewer than the " +
                            std::to_string(cfg_.background_conns) + " background connections";
      run_.errors++;
    }
  }
  r["ct_entries"] = ce >= 0 ? std::to_string(ce)
                            : !dut_->no_tracker().empty() ? dut_->no_tracker()
                                                          : std::string("unavailable: the DUT did not report it");
  r["offloaded_entries"] = off >= 0 ? std::to_string(off) : std::string("n/a: no offload counters");
  auto after = dut_->drops();
  if (!before || !after) {
    r["dut_drops"] = "unavailable: " + (before ? after.message() : before.message());
    return;
  }
  long long total = 0;
  std::string detail;
  for (auto& [k, v] : *after) {
    auto was = before->find(k);
    long long d = v - (was == before->end() ? 0 : was->second);
    if (d == 0) continue;
    if (k.rfind("policy:", 0) != 0) total += d;
    detail += (detail.empty() ? "" : " ") + k + "=" + std::to_string(d);
  }
  r["dut_drops"] = std::to_string(total);
  r["dut_drops_detail"] = detail.empty() ? "none" : detail;
  if (!dut_->drops_blind_spot().empty()) r["dut_drops_detail"] += "; not seen: " + dut_->drops_blind_spot();
}

// The summary row of a cell: medians and spreads over its repetitions, the
// DUT's view over them (drops summed; the tracker's and the NIC's largest
// counts, or the reason there is none).
void finish_cell(SweepRun& run, Row base, std::vector<Row> reps) {
  std::vector<double> tp, p50, p99;
  std::string first_err;
  for (auto& r : reps) {
    if (r["status"] == "ok") {
      if (!r["throughput_gbps"].empty()) tp.push_back(to_num(r["throughput_gbps"]));
      if (!r["latency_p50_us"].empty()) p50.push_back(to_num(r["latency_p50_us"]));
      if (!r["latency_p99_us"].empty()) p99.push_back(to_num(r["latency_p99_us"]));
    } else if (first_err.empty()) {
      first_err = r["error"];
    }
  }
  base["repeat"] = "summary";
  auto put = [&](const std::string& col, const std::vector<double>& v) {
    if (v.empty()) return;
    Spread s = spread(v);
    base[col] = fmt(s.median);
    base[col + "_min"] = fmt(s.min);
    base[col + "_max"] = fmt(s.max);
  };
  put("throughput_gbps", tp);
  put("latency_p50_us", p50);
  put("latency_p99_us", p99);
  long long drops = 0, ct = -1, off = -1;
  std::string drops_why, ct_why, off_why;
  for (auto& r : reps) {
    double d = to_num(r["dut_drops"], -1), c = to_num(r["ct_entries"], -1), o = to_num(r["offloaded_entries"], -1);
    if (d >= 0) drops += static_cast<long long>(d);
    else if (drops_why.empty()) drops_why = r["dut_drops"].empty() ? "not measured" : r["dut_drops"];
    if (c >= 0) ct = std::max(ct, static_cast<long long>(c));
    else if (ct_why.empty()) ct_why = r["ct_entries"].empty() ? "not measured" : r["ct_entries"];
    if (o >= 0) off = std::max(off, static_cast<long long>(o));
    else if (off_why.empty()) off_why = r["offloaded_entries"].empty() ? "not measured" : r["offloaded_entries"];
  }
  base["dut_drops"] = drops_why.empty() ? std::to_string(drops) : drops_why;
  base["ct_entries"] = ct >= 0 ? std::to_string(ct) : ct_why;
  base["offloaded_entries"] = off >= 0 ? std::to_string(off) : off_why;
  bool any_ok = !tp.empty() || !p50.empty();
  base["status"] = any_ok ? "ok" : "error";
  if (!any_ok) base["error"] = first_err.empty() ? "no repetition succeeded" : first_err;
  run.w.write(base);
}

// One repetition of a throughput cell (iperf3 instances, sockperf under
// load when asked for) into row r.
void throughput_rep(SweepRun& run, DutSession& s, const std::string& proto, int inst, int size, int rep,
                    const std::string& what, Row& r) {
  const SweepConfig& cfg = run.cfg;
  std::string rp = s.dir() + "/" + proto + "-x" + std::to_string(inst) + "-" + std::to_string(size) + "-r" +
                   std::to_string(rep);
  auto drops_before = s.dut().drops();
  RunOut o = run_traffic(s.transport(), proto, inst, size, cfg.duration_s, cfg.omit_s, rp, cfg.sockperf);
  s.renew_servers(o, inst);
  if (o.server_busy && !run.stop) {
    // An iperf3 3.12 server can still be closing its last test when the
    // next client connects (seen once in 48 cells right after a warm-up):
    // not the DUT's failure. The cell once more.
    fprintf(stderr, "harness: %s: an iperf3 server was still busy with its last test; once more\n", what.c_str());
    std::this_thread::sleep_for(1s);
    drops_before = s.dut().drops();
    o = run_traffic(s.transport(), proto, inst, size, cfg.duration_s, cfg.omit_s, rp, cfg.sockperf);
    s.renew_servers(o, inst);
  }
  double sum = 0, mn = 1e18, mx = 0, cpu = 0, rtt = 0, loss = 0;
  long long retr = 0;
  for (auto& x : o.inst) {
    sum += x.gbps;
    mn = std::min(mn, x.gbps);
    mx = std::max(mx, x.gbps);
    retr += x.retransmits;
    cpu += x.cpu_host;
    rtt += x.rtt_us;
    loss += x.lost_percent;
  }
  if (o.error.empty() && !o.inst.empty()) {
    double k = static_cast<double>(o.inst.size());
    r["throughput_gbps"] = fmt(sum);
    r["throughput_min_instance_gbps"] = fmt(mn);
    r["throughput_max_instance_gbps"] = fmt(mx);
    r["retransmits"] = std::to_string(retr);
    r["cpu_host_pct"] = fmt(cpu / k, 1);
    if (proto == "tcp") r["rtt_us"] = fmt(rtt / k, 1);
    else r["lost_percent"] = fmt(loss / k, 3);
    r["status"] = "ok";
  } else {
    r["status"] = "error";
    r["error"] = o.error.empty() ? "no iperf3 instance ran" : o.error;
    run.errors++;
  }
  // The latency columns are numbers or the error says why not.
  if (o.have_lat && o.lat.ok) {
    put_latency(r, o.lat);
  } else if (o.have_lat && r["status"] == "ok") {
    r["error"] = "latency under load: " + o.lat.error;
  }
  s.dut_view(r, drops_before);
}

// Throughput cells (with sockperf under load), repetitions rep_lo..rep_hi.
Status throughput_cells(SweepRun& run, DutSession& s, int rep_lo, int rep_hi) {
  const SweepConfig& cfg = run.cfg;
  for (const std::string& proto : cfg.protos) {
    for (int inst : cfg.instances) {
      if (s.error().empty() && cfg.warmup_s > 0 && !run.stop)
        s.renew_servers(run_traffic(s.transport(), proto, inst, 1460, cfg.warmup_s, 0, s.dir() + "/warmup", false), inst);
      for (int size : cfg.sizes) {
        Row base = s.base_row("throughput", proto, inst, size);
        std::vector<Row>& reps = run.cell_reps[cell_key(base)];
        for (int rep = rep_lo; rep <= rep_hi; rep++) {
          if (run.stop) break;
          std::string what = s.name() + " " + proto + " x" + std::to_string(inst) + " " + std::to_string(size) +
                             "B rep " + std::to_string(rep);
          if (run.measured(base, std::to_string(rep))) {
            run.prog.step(what + " (resumed)");
            continue;
          }
          Row r = base;
          r["timestamp"] = now_iso();
          r["repeat"] = std::to_string(rep);
          if (!s.error().empty()) {
            r["status"] = "error";
            r["error"] = s.error();
            run.errors++;
          } else {
            throughput_rep(run, s, proto, inst, size, rep, what, r);
          }
          SDN_TRY(run.w.write(r));
          reps.push_back(r);
          run.prog.step(what);
        }
        bool all_done = true;
        for (int rep = 1; rep <= cfg.repeat; rep++)
          if (!run.measured(base, std::to_string(rep)) && run.stop) all_done = false;
        if (rep_hi == cfg.repeat && all_done && !run.measured(base, "summary")) finish_cell(run, base, reps);
      }
    }
  }
  return {};
}

// Idle latency: sockperf ping-pong alone, per size.
Status latency_cells(SweepRun& run, DutSession& s, int rep_lo, int rep_hi) {
  const SweepConfig& cfg = run.cfg;
  for (int size : cfg.sizes) {
    Row base = s.base_row("latency", "udp", 0, size);
    std::vector<Row>& reps = run.cell_reps[cell_key(base)];
    for (int rep = rep_lo; rep <= rep_hi && !run.stop; rep++) {
      std::string what = s.name() + " latency " + std::to_string(size) + "B rep " + std::to_string(rep);
      if (run.measured(base, std::to_string(rep))) {
        run.prog.step(what + " (resumed)");
        continue;
      }
      Row r = base;
      r["repeat"] = std::to_string(rep);
      if (!s.error().empty()) {
        r["status"] = "error";
        r["error"] = s.error();
        run.errors++;
      } else {
        auto drops_before = s.dut().drops();
        RunOut o = run_traffic(s.transport(), "udp", 0, size, cfg.duration_s, 0,
                               s.dir() + "/latency-" + std::to_string(size) + "-r" + std::to_string(rep), true);
        s.renew_servers(o, 0);
        if (o.have_lat && o.lat.ok) {
          put_latency(r, o.lat);
          r["status"] = "ok";
        } else {
          r["status"] = "error";
          r["error"] = o.have_lat ? o.lat.error : "sockperf did not start";
          run.errors++;
        }
        s.dut_view(r, drops_before);
      }
      SDN_TRY(run.w.write(r));
      reps.push_back(r);
      run.prog.step(what);
    }
    if (rep_hi == cfg.repeat && !run.stop && !run.measured(base, "summary")) finish_cell(run, base, reps);
  }
  return {};
}

// One DUT on a fresh testbed (or lab session), repetitions rep_lo..rep_hi of
// every cell.
Status run_dut(SweepRun& run, const std::string& name, int rep_lo, int rep_hi) {
  DutSession s(run, name, rep_lo);
  SDN_TRY(throughput_cells(run, s, rep_lo, rep_hi));
  if (run.cfg.sockperf) SDN_TRY(latency_cells(run, s, rep_lo, rep_hi));
  return {};
}

}  // namespace

Result<SweepOutcome> run_sweep(const SweepConfig& cfg, const std::atomic<bool>& stop) {
  SweepRun run(cfg, stop);
  SDN_TRY(prepare_run_dir(run));
  run.git = cmd_line({"git", "-C", cfg.source_dir, "rev-parse", "--short", "HEAD"});
  write_machine_txt(run);
  SDN_TRY(run.w.open(run.csv));
  for (int i : cfg.instances) run.max_inst = std::max(run.max_inst, i);
  run.prog.total = static_cast<int>(cfg.duts.size() *
                                    (cfg.protos.size() * cfg.instances.size() * cfg.sizes.size() +
                                     (cfg.sockperf ? cfg.sizes.size() : 0)) *
                                    cfg.repeat);
  if (cfg.interleave) {
    // Round k runs every DUT once, so the DUTs of one cell are measured
    // minutes apart rather than a whole sweep apart (this host drifts).
    for (int round = 1; round <= cfg.repeat && !stop; round++)
      for (const std::string& name : cfg.duts) {
        if (stop) break;
        SDN_TRY(run_dut(run, name, round, round));
      }
  } else {
    for (const std::string& name : cfg.duts) {
      if (stop) break;
      SDN_TRY(run_dut(run, name, 1, cfg.repeat));
    }
  }
  run.prog.end();
  fprintf(stderr, "harness: results in %s\n", run.csv.c_str());
  return SweepOutcome{run.errors, run.out};
}

}  // namespace harness
