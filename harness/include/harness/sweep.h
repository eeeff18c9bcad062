// The sweep: for each DUT, a fresh namespace testbed, the DUT started on it,
// then iperf3 (N instances behind a barrier) with sockperf under load for
// every proto x instances x size, and idle sockperf ping-pong per size.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/dut.h"
#include "harness/lab.h"
#include "harness/rfc2544.h"
#include "harness/results.h"
#include "harness/scenario.h"
#include "harness/ssh.h"
#include "sdn/status.h"
#include "testbed/geneve_vtep.h"
#include "testbed/process.h"
#include "testbed/testbed.h"

namespace harness {

struct SweepConfig {
  std::vector<int> instances{4, 16, 32};
  std::vector<int> sizes{64, 512, 1024, 1460, 4096, 8192};
  std::vector<Proto> protos{Proto::kTcp};
  std::vector<std::string> duts =
      dut_names_of({DutKind::kDataplane, DutKind::kOvsDpdk, DutKind::kKernelCt, DutKind::kTestpmdIo});
  int duration_s = 2;
  int repeat = 3;
  // Repetitions in rounds (each round runs every DUT once, on a fresh
  // testbed) rather than all repetitions of one DUT before the next.
  bool interleave = true;
  int warmup_s = 1;
  // Seconds at the start of each iperf3 run left out of its figures (iperf3
  // --omit: TCP slow start), and waited out by sockperf under load.
  int omit_s = 1;
  bool sockperf = true;
  int background_conns = 0;
  // Link MTU of the testbed. 1500 by default: DPDK 22.11's net_af_packet caps
  // frames at 1518 bytes, so jumbo frames need real NICs (--mtu 9000 there).
  // With MTU 1500, TCP sizes above the MSS are iperf3's write size.
  int mtu = 1500;
  std::string dataplane_config = "configs/dataplane/firewall.yaml";
  // The firewall (client and server on one subnet through a stateful
  // firewall) or overlay-nat (the server behind a tunnel the DUT
  // terminates, VXLAN or Geneve by `tunnel`, the client source-NATed to a
  // floating address; README: harness, Scenarios).
  ScenarioKind scenario = ScenarioKind::kFirewall;
  Tunnel tunnel = Tunnel::kVxlan;
  const Scenario& run_scenario() const { return scenario_of(scenario, tunnel); }
  // How the endpoints hand TCP to the DUT. Wire (default): as from a real
  // wire, MTU-size frames (the endpoints' veths without TX checksum offload,
  // so without TSO: the kernel segments before the veth); what a DUT does
  // with them (GRO on a kernel DUT) is its own. "host": the endpoints keep
  // TSO/GSO, so the kernel DUT gets 64 KB packets through veth with no
  // per-frame cost, a comparison no real wire allows (kernel DUTs only).
  Segmentation segmentation = Segmentation::kWire;
  std::string out_dir;      // default results/runs/<timestamp>
  std::string resume_dir;
  // Where the traffic tools run: "" the namespace testbed's namespaces;
  // "testbed-ssh" the same namespaces reached over SSH (sshd in each, a key
  // made for the run): the SSH transport end to end on one machine.
  std::string lab;
  // --lab FILE: the inventory it names (lab.empty() or "testbed-ssh": none).
  std::shared_ptr<const Inventory> inventory;
  bool ci = false;
  // The YAML's `rfc2544:` section: after the sweep, `run --mode rfc2544`
  // with these settings into the same run directory (one report for both).
  // --no-rfc2544 skips it; --lab skips it (memif needs one host).
  bool rfc2544 = false;
  Rfc2544Config rfc;
  std::string source_dir;   // repository root
  std::string build_dir;    // where dataplane/dataplane is
};

// The limits a sweep's settings must keep, the same for the YAML and the
// command line.
struct Limit {
  int lo, hi;
};
inline constexpr Limit kInstancesLimit{1, 128}, kSizesLimit{16, 65000}, kDurationLimit{1, 3600},
    kRepeatLimit{1, 100}, kWarmupLimit{0, 600}, kOmitLimit{0, 60}, kBackgroundLimit{0, 2000000}, kMtuLimit{576, 9000};

// Loads configs/harness/*.yaml over the defaults. Errors name file, line, key.
sdn::Status load_sweep_config(const std::string& path, SweepConfig* c);

// The namespace testbed every DUT gets: client -- [dut] -- server.
// With `ssh`: a management namespace linked to the client and the server
// namespaces, where Debian's sshd runs (a host key and a login key made for
// this bed); the ssh client runs in the management namespace.
struct Bed {
  std::unique_ptr<testbed::Testbed> tb;
  testbed::Netns *client = nullptr, *dut = nullptr, *server = nullptr;
  testbed::Netns* mgmt = nullptr;
  int mtu = 1500;
  std::string ssh_dir;  // keys, sshd configs, known_hosts
  std::vector<testbed::Process> sshd;
  // overlay-nat --tunnel geneve: the server's VTEP (the kernel's device, or
  // the userspace one where the kernel has no Geneve: its process here).
  testbed::GeneveVtep vtep;
  std::string source_dir;  // the source tree (testbed/tools/geneve-vtep.py)
  std::string log_dir;     // where the userspace VTEP's log goes
  static sdn::Result<std::unique_ptr<Bed>> build(int mtu, bool ssh = false,
                                                 const Scenario& scenario = scenario_of(ScenarioKind::kFirewall),
                                                 Segmentation segmentation = Segmentation::kWire,
                                                 const std::string& source_dir = "", const std::string& log_dir = "");
  // The testbed as a lab (`harness testbed up --inventory FILE`): sshd in the
  // client, server and DUT namespaces, reached from this namespace over
  // management links (192.168.251.0/24), the DUT namespace set up as a
  // router for kernel-ct (forwarding off until that profile turns it on),
  // and a dataplane config for its ports. *inv describes it.
  static sdn::Result<std::unique_ptr<Bed>> build_lab(const SweepConfig& cfg, Inventory* inv);
  std::vector<SshHost> ssh_hosts() const;  // client and server, over the management links
  ~Bed();
  static constexpr const char* kClientIp = "10.0.0.1";
  static constexpr const char* kServerIp = "10.0.0.2";
  // overlay-nat: the server's address in the overlay (on its VTEP), the
  // floating address the DUT translates the client to, and the tunnel's ends.
  static constexpr const char* kOverlayServerIp = "198.51.100.20";
  static constexpr const char* kFloatingIp = "203.0.113.7";
  static constexpr const char* kLocalVtep = "192.0.2.1", *kRemoteVtep = "192.0.2.2";
  static constexpr const char* kClientMac = "02:00:00:00:0c:00", *kServerMac = "02:00:00:00:02:02",
                               *kNextHopMac = "02:00:00:00:0a:0a", *kVtepMac = "02:00:00:00:01:01";
  const Scenario* scenario = &scenario_of(ScenarioKind::kFirewall);
  std::string server_ip = kServerIp;  // where the client's tools go
};

// Where the traffic tools run: the sweep only asks a Transport to start
// programs on the client or the server side and where the server is. The
// namespace testbed is one transport; an SSH backend driving real client and
// server hosts would be another, without touching the sweep.
enum class Side { kClient, kServer };

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string server_address() const = 0;
  // The client host's test address, which its tools bind to (-B): a lab
  // host's management address routes elsewhere. Empty: the only one there is.
  virtual std::string client_address() const { return ""; }
  virtual int mtu() const = 0;
  virtual sdn::Result<Job> spawn(Side side, const std::vector<std::string>& argv, testbed::SpawnOptions opts) = 0;
  // Returns once every job spawned behind a barrier (opts.barrier_fd) waits
  // at it, so that one release starts them together.
  virtual sdn::Status ready(std::chrono::milliseconds /*timeout*/) { return {}; }
  // Runs a short command on that side's host and returns its stdout.
  virtual sdn::Result<std::string> capture(Side side, const std::vector<std::string>& argv) = 0;
};

// Client ports for `n` iperf3 instances (--cport), from what the client host
// prints for `cat /proc/sys/net/ipv4/ip_local_port_range; ss -Htuan`: outside
// its ephemeral range (the kernel's own choices never take them; on a lab
// host that is the default 32768-60999), and held by no socket in any state
// (a connection of an earlier cell can sit in FIN_WAIT_2 for tcp_fin_timeout,
// and iperf3 binds without SO_REUSEADDR: "Address already in use"). From
// *cursor on, which moves past them, so consecutive cells use other ports.
sdn::Result<std::vector<int>> pick_client_ports(const std::string& range_and_sockets, int n, int* cursor);
inline constexpr int kClientPortLo = 20000;  // below: services' ports

class NetnsTransport final : public Transport {
 public:
  explicit NetnsTransport(Bed& bed) : bed_(bed) {}
  std::string server_address() const override { return bed_.server_ip; }
  int mtu() const override { return bed_.mtu; }
  sdn::Result<Job> spawn(Side side, const std::vector<std::string>& argv, testbed::SpawnOptions opts) override {
    opts.ns = side == Side::kClient ? bed_.client : bed_.server;
    auto p = testbed::Process::spawn(argv, opts);
    if (!p) return p.status();
    return Job(std::move(p.value()));
  }
  sdn::Result<std::string> capture(Side side, const std::vector<std::string>& argv) override {
    auto r = testbed::run_capture(argv, side == Side::kClient ? bed_.client : bed_.server, std::chrono::seconds(20));
    if (!r) return r.status();
    if (r->status != 0) return sdn::Status::error(argv[0] + " exit " + std::to_string(r->status) + ": " + r->output);
    return r->output;
  }

 private:
  Bed& bed_;
};

// The client and the server are hosts "client" and "server" of an SSH
// session; raw output comes back over ssh's stdout and stderr.
// With an inventory, each tool runs under `taskset -c` on the CPUs it lists
// for that host.
class SshTransport final : public Transport {
 public:
  SshTransport(SshSession& s, std::string server_address, int mtu, const Inventory* inv = nullptr)
      : s_(s), server_(std::move(server_address)), mtu_(mtu), inv_(inv) {}
  std::string server_address() const override { return server_; }
  std::string client_address() const override { return inv_ ? inv_->client.address : ""; }
  int mtu() const override { return mtu_; }
  sdn::Result<Job> spawn(Side side, const std::vector<std::string>& argv, testbed::SpawnOptions opts) override {
    std::vector<std::string> a = argv;
    if (inv_ && !argv.empty()) {
      const auto& cpus = side == Side::kClient ? inv_->client.cpus : inv_->server.cpus;
      std::string tool = argv[0].substr(argv[0].rfind('/') + 1);
      if (auto it = cpus.find(tool); it != cpus.end()) a.insert(a.begin(), {"taskset", "-c", it->second});
    }
    return s_.spawn(side == Side::kClient ? "client" : "server", a, std::move(opts));
  }
  sdn::Status ready(std::chrono::milliseconds timeout) override { return s_.wait_ready(timeout); }
  sdn::Result<std::string> capture(Side side, const std::vector<std::string>& argv) override {
    std::string out;
    if (sdn::Status s = s_.run(side == Side::kClient ? "client" : "server", argv, &out, std::chrono::seconds(20)); !s)
      return s;
    return out;
  }

 private:
  SshSession& s_;
  std::string server_;
  int mtu_;
  const Inventory* inv_;
};

struct SweepOutcome {
  int error_rows = 0;
  std::string dir;  // the run directory
};

// Runs the sweep, appending rows to DIR/results.csv. `stop` is polled
// between steps (SIGINT).
sdn::Result<SweepOutcome> run_sweep(const SweepConfig& cfg, const std::atomic<bool>& stop);

// --background-conns: harness-conns on the server side (listening) and the
// client side (connecting), started through the transport like the traffic
// tools, holding `count` idle TCP connections through the DUT until it is
// destroyed.
class BackgroundConns {
 public:
  struct Setup {
    long long established = 0, failed = 0;
    double secs = 0, per_s = 0;
    std::string errors;  // connect errors by reason, "none" when there were none
  };
  // Blocks until all are established (or fails naming how many were).
  // `program`: harness-conns's path on the hosts; raw output goes to
  // raw_prefix.{server,client}.jsonl.
  static sdn::Result<std::unique_ptr<BackgroundConns>> open(Transport& tr, const std::string& program, int count,
                                                            int first_port, const std::string& raw_prefix,
                                                            const std::atomic<bool>& stop);
  const Setup& setup() const { return setup_; }
  // The generators still run (their connections are held).
  sdn::Status alive();
  // Server ports used for `count` connections: each takes at most
  // kPerPort (a testbed namespace's local port range is 11,000 wide).
  static constexpr int kPerPort = 8000;
  static int ports_for(int count) { return (count + kPerPort - 1) / kPerPort; }

 private:
  Job server_, client_;
  Setup setup_;
};

}  // namespace harness
