// DUT profiles on a lab's DUT host, driven over SSH (`harness run --lab
// FILE`): preconditions first (recorded, and named in the rows when one
// fails), then the profile started, health-checked from the client host, and
// read (tracker entries, drops) through the same session.
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/lab.h"
#include "harness/preconditions.h"
#include "harness/sweep.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using util::slurp;

namespace {

using util::pairs_on_line;

class LabDut final : public Dut {
 public:
  LabDut(std::string profile, const Inventory& inv, SshSession& ssh, std::string dir, std::string machine_txt)
      : profile_(std::move(profile)), inv_(inv), ssh_(ssh), dir_(std::move(dir)), machine_txt_(std::move(machine_txt)) {}
  std::string name() const override { return profile_; }
  std::string version() const override {
    // (the daemon has no --version: the program the inventory names)
    if (profile_ == "dataplane") return "dataplane " + inv_.dut.dataplane_program + " on " + inv_.dut.ssh.destination;
    std::string out;
    if (ssh_.run("dut", {"uname", "-r"}, &out, 20s)) return profile_ + " on linux " + util::tail(out);
    return profile_ + " (kernel version unavailable on the DUT host)";
  }
  std::string no_tracker() const override {
    if (profile_ == "testpmd-io") return "n/a: io forwarding tracks no connections";
    return started_ ? "" : "n/a: not started";
  }

  Status start(Bed&) override {
    HostRunner run = [&](const std::vector<std::string>& argv) -> Result<std::string> {
      std::string out;
      if (Status s = ssh_.run("dut", argv, &out, 30s); !s) return s;
      return out;
    };
    facts_ = gather_host_facts(run, inv_.dut.interfaces);
    std::ofstream(machine_txt_, std::ios::app) << "dut host " << inv_.dut.ssh.destination << " for " << profile_
                                               << ":\n" << facts_.describe();
    bool listed = false;
    for (const auto& p : inv_.dut.profiles) listed = listed || p == profile_;
    if (!listed) return Status::error("the inventory's DUT host does not list profile " + profile_);
    std::map<std::string, std::string> ovs = {{"hw-offload", "true"}, {"tc-policy", "none"}};
    auto miss = missing_for(profile_, facts_, ovs);
    if (!miss.empty()) {
      std::string m;
      for (auto& x : miss) m += (m.empty() ? "" : "; ") + x;
      return Status::error("preconditions not met on the DUT host: " + m);
    }
    if (profile_ == "dataplane") return start_dataplane();
    if (profile_ == "kernel-ct") return start_kernel_ct();
    if (profile_ == "testpmd-io") return start_testpmd();
    if (is_ovs()) return start_ovs();
    return Status::error("profile " + profile_ + " is not driven on a lab DUT host yet (its preconditions hold)");
  }
  void stop() override {
    // The programs stop (TERM first: the dataplane gives its ports back),
    // then what this run recorded on the DUT host is undone: DPDK files,
    // sysctls as they were, the nft table. (Once: the destructor calls
    // stop() again, maybe after the session is gone.)
    daemon_ = Job();
    ovsdb_ = Job();
    if (recorded_) ssh_.undo("dut");
    recorded_ = false;
    prefix_.clear();
    started_ = false;
  }
  ~LabDut() override { stop(); }
  Status alive() override {
    if (!started_) return {};
    const std::string host = "the DUT host " + inv_.dut.ssh.destination;
    if (daemon_.pid() > 0 && !daemon_.running())
      return Status::error(profile_ + " on " + host + " is gone (it exited, or its SSH session ended): " +
                           util::tail(slurp(log_), 200));
    if (Status s = ssh_.run("dut", {"true"}, nullptr, 15s); !s)
      return Status::error(host + " does not answer over SSH: " + s.message());
    return {};
  }

  long long ct_entries() override {
    std::string out;
    if (profile_ == "testpmd-io") return -1;
    if (is_ovs() && !kernel_ovs()) {
      if (!appctl({"dpctl/ct-get-nconns"}, &out)) return -1;
      return atoll(out.c_str());
    }
    if (profile_ == "dataplane") {
      if (!ssh_.run("dut", {inv_.dut.dataplane_ctl, "--prefix", prefix_, "stats"}, &out, 20s)) return -1;
      auto ct = pairs_on_line(out, "ct");
      return ct.count("active") ? ct["active"] : -1;
    }
    if (!ssh_.run("dut", {"cat", "/proc/sys/net/netfilter/nf_conntrack_count"}, &out, 20s)) return -1;
    return atoll(out.c_str());
  }
  long long offloaded() override {
    // The dataplane's offloaded connections; OVS's datapath flows in the NIC
    // (ovs-dpdk-offload, ovs-kernel-tc): one per line.
    std::string out;
    if (profile_ == "dataplane" && started_) {  // connections in the NIC (offload.provider rte_flow)
      if (!ssh_.run("dut", {inv_.dut.dataplane_ctl, "--prefix", prefix_, "stats"}, &out, 20s)) return -1;
      auto ct = pairs_on_line(out, "ct");
      return ct.count("offloaded") ? ct["offloaded"] : -1;
    }
    if ((profile_ != "ovs-dpdk-offload" && !kernel_ovs()) || !started_) return -1;
    if (!appctl({"dpctl/dump-flows", "type=offloaded"}, &out)) return -1;
    long long n = 0;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  }
  Result<std::string> make_room(long long conns) override {
    if (profile_ == "dataplane") return std::string("conntrack.capacity as configured on the DUT host (checked per row)");
    std::string out;
    if (is_ovs() && !kernel_ovs()) {
      if (Status s = appctl({"dpctl/ct-get-maxconns"}, &out); !s) return s;
      long long have = atoll(out.c_str()), want = conns + kRoomHeadroom;
      if (have >= want) return "dpctl/ct-get-maxconns " + std::to_string(have);
      if (Status s = appctl({"dpctl/ct-set-maxconns", std::to_string(want)}); !s) return s;
      return "dpctl/ct-set-maxconns " + std::to_string(have) + " -> " + std::to_string(want);
    }
    if (Status s = ssh_.run("dut", {"cat", "/proc/sys/net/netfilter/nf_conntrack_max"}, &out, 20s); !s) return s;
    long long have = atoll(out.c_str()), want = conns + kRoomHeadroom;
    if (have >= want) return "nf_conntrack_max " + std::to_string(have);
    if (Status s = record("undo-sysctl", "net.netfilter.nf_conntrack_max " + std::to_string(have)); !s) return s;
    if (Status s = ssh_.run("dut", {"sysctl", "-q", "-w", "net.netfilter.nf_conntrack_max=" + std::to_string(want)},
                            nullptr, 20s);
        !s)
      return s;
    return "nf_conntrack_max " + std::to_string(have) + " -> " + std::to_string(want) + " (put back at the end)";
  }
  Result<std::map<std::string, long long>> drops() override {
    std::string out;
    if (profile_ == "testpmd-io") return Status::error("testpmd's counters are not read on a lab DUT host");
    if (is_ovs()) {
      std::map<std::string, long long> m;
      if (Status s = appctl({"dpctl/show"}, &out); !s) return s;
      if (size_t p = out.find("lost:"); p != std::string::npos) m["dp_lost"] = atoll(out.c_str() + p + 5);
      const std::vector<std::string> ports =
          kernel_ovs() ? inv_.dut.interfaces : std::vector<std::string>{"p0", "p1"};
      for (const std::string& port : ports) {
        if (Status s = vsctl({"get", "Interface", port, "statistics"}, &out); !s) return s;
        util::ovs_port_drops(port, out, &m);
      }
      return m;
    }
    if (profile_ == "dataplane") {
      if (Status s = ssh_.run("dut", {inv_.dut.dataplane_ctl, "--prefix", prefix_, "stats"}, &out, 20s); !s) return s;
      if (out.find("\nports:") == std::string::npos)
        return Status::error("dataplane-ctl stats on the DUT host has no ports line (a dataplane older than the harness?)");
      return util::dataplane_drops(pairs_on_line(out, "drops"), pairs_on_line(out, "ports"));
    }
    std::map<std::string, long long> m;
    for (const auto& ifc : inv_.dut.interfaces) {
      if (Status s = ssh_.run("dut", {"ip", "-s", "-j", "link", "show", "dev", ifc}, &out, 20s); !s) return s;
      auto j = nlohmann::json::parse(out, nullptr, false);
      if (!j.is_array() || j.empty() || !j[0].contains("stats64")) return Status::error("ip -s -j link: no statistics");
      for (const char* dir : {"rx", "tx"})
        for (const char* k : {"dropped", "errors", "missed"})
          if (j[0]["stats64"].contains(dir) && j[0]["stats64"][dir].contains(k))
            m[ifc + "_" + dir + "_" + k] = j[0]["stats64"][dir][k].get<long long>();
    }
    return m;
  }

 private:
  // Waits for `needle` in the remote program's output (carried back by ssh).
  Status await_log(const std::string& needle, const std::string& what) {
    for (auto deadline = std::chrono::steady_clock::now() + 60s;;) {
      if (slurp(log_).find(needle) != std::string::npos) return {};
      if (!daemon_.running()) return Status::error(what + " exited during start: " + util::tail(slurp(log_)));
      if (std::chrono::steady_clock::now() > deadline)
        return Status::error(what + " is not ready after 60 s: " + util::tail(slurp(log_)));
      std::this_thread::sleep_for(200ms);
    }
  }
  Status health() {
    // The endpoints may hold the neighbour entries of the DUT run before
    // (a bump in the wire passes the hosts' own MACs; a router answers for
    // them): each DUT starts from empty neighbour tables.
    for (const LabHost* h : {&inv_.client, &inv_.server})
      if (Status s = ssh_.run(h->ssh.name, {"ip", "neigh", "flush", "dev", h->interface}, nullptr, 20s); !s)
        return Status::error("flushing the neighbour table: " + s.message());
    std::string last;
    for (int i = 0; i < 10; i++) {
      Status s = ssh_.run("client", {"ping", "-c", "1", "-W", "1", inv_.server.address}, &last, 10s);
      if (s) return {};
      std::this_thread::sleep_for(500ms);
    }
    return Status::error("health check: no ping from the client host to " + inv_.server.address + " across the DUT: " +
                         util::tail(last));
  }
  Status start_dataplane() {
    std::string out;
    if (Status s = ssh_.run("dut", {inv_.dut.dataplane_program, "--check", "--config", inv_.dut.dataplane_config}, &out, 60s);
        !s)
      return Status::error("dataplane --check on the DUT host: " + s.message());
    if (!inv_.dut.hw_check.empty()) {
      if (Status s = ssh_.run("dut", {inv_.dut.dataplane_program, "--hw-check", inv_.dut.hw_check}, &out, 120s); !s)
        return Status::error("dataplane --hw-check " + inv_.dut.hw_check + " on the DUT host: " + s.message());
      std::ofstream(dir_ + "/hw-check.txt") << out;
    }
    prefix_ = "harness-lab-dp-" + std::to_string(getpid());
    if (Status s = record("dpdk-prefixes", prefix_); !s) return s;
    log_ = dir_ + "/dataplane.log";
    testbed::SpawnOptions o;
    o.stdout_path = log_;
    o.stderr_path = "=stdout";
    auto j = ssh_.spawn("dut", {inv_.dut.dataplane_program, "--config", inv_.dut.dataplane_config, "--file-prefix", prefix_},
                        o, true);
    if (!j) return j.status();
    daemon_ = std::move(j.value());
    if (Status s = await_log("dataplane: running", "the dataplane"); !s) return s;
    started_ = true;
    return health();
  }
  // testpmd io forwarding between the DUT host's two ports: PCI ports by
  // their bus address, other interfaces through net_af_packet.
  Status start_testpmd() {
    prefix_ = "harness-lab-tp-" + std::to_string(getpid());
    if (Status s = record("dpdk-prefixes", prefix_); !s) return s;
    log_ = dir_ + "/testpmd.log";
    std::vector<std::string> argv = {"dpdk-testpmd", "-l", "0,1", "--file-prefix", prefix_};
    for (size_t i = 0; i < facts_.nics.size(); i++) {
      const NicFacts& n = facts_.nics[i];
      if (is_pci_bus(n.bus)) argv.insert(argv.end(), {"-a", n.bus});
      else argv.insert(argv.end(), {"--vdev", "net_af_packet" + std::to_string(i) + ",iface=" + n.iface});
    }
    if (!util::huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
    argv.insert(argv.end(), {"--", "--forward-mode=io", "--auto-start", "--stats-period", "10", "--nb-cores=1"});
    testbed::SpawnOptions o;
    o.stdout_path = log_;
    o.stderr_path = "=stdout";
    auto j = ssh_.spawn("dut", argv, o, true);
    if (!j) return j.status();
    daemon_ = std::move(j.value());
    if (Status s = await_log("packet forwarding - ports=", "testpmd"); !s) return s;
    started_ = true;
    return health();
  }
  bool is_ovs() const { return profile_ == "ovs-dpdk" || profile_ == "ovs-dpdk-offload" || kernel_ovs(); }
  bool kernel_ovs() const { return profile_ == "ovs-kernel-tc"; }
  // OVS commands against this run's own OVS on the DUT host.
  Status appctl(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), {"ovs-appctl", "-t", ovs_dir_ + "/vswitchd.ctl"});
    return ssh_.run("dut", args, out, 60s);
  }
  Status vsctl(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), {"ovs-vsctl", "--db=unix:" + ovs_dir_ + "/db.sock", "--timeout=60"});
    return ssh_.run("dut", args, out, 90s);
  }
  // A private Open vSwitch on the DUT host (its own database and run
  // directory under the run's directory), the same ct() firewall as
  // everywhere:
  // - ovs-dpdk: a netdev bridge whose two type=dpdk ports are the DUT host's
  //   ports (PCI by bus address, others through net_af_packet);
  // - ovs-dpdk-offload: the same with other_config:hw-offload=true (rte_flow
  //   into the NIC);
  // - ovs-kernel-tc: the kernel datapath with the two interfaces (switchdev
  //   representors), hw-offload=true and tc-policy=none: flows and ct() in
  //   TC flower, offloaded by the NIC where it can (the preconditions checked
  //   the kernel, the modules, switchdev and hw-tc-offload). Its conntrack is
  //   the kernel's (nf_conntrack_count, nf_conntrack_max).
  // The offloaded ones count dpctl/dump-flows type=offloaded per row.
  Status start_ovs() {
    const bool dpdk = !kernel_ovs(), offload = profile_ != "ovs-dpdk";
    ovs_dir_ = ssh_.run_dir() + "/ovs";
    prefix_ = "harness-lab-ovs-" + std::to_string(getpid());
    const std::vector<std::string> env = {"env", "OVS_RUNDIR=" + ovs_dir_, "OVS_DBDIR=" + ovs_dir_,
                                          "OVS_LOGDIR=" + ovs_dir_, "OVS_SYSCONFDIR=" + ovs_dir_};
    std::string out;
    const std::string db = ovs_dir_ + "/conf.db";
    if (Status s = ssh_.run("dut", {"sh", "-c", "mkdir -p \"$1\" && rm -f \"$1/conf.db\"", "sh", ovs_dir_}, nullptr, 20s); !s)
      return s;
    if (Status s = ssh_.run("dut", {"ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema"}, &out, 30s); !s)
      return Status::error("ovsdb-tool create on the DUT host: " + s.message());
    std::vector<std::string> a = env;
    a.insert(a.end(), {"ovsdb-server", db, "--remote=punix:" + ovs_dir_ + "/db.sock", "--unixctl=" + ovs_dir_ + "/ovsdb.ctl"});
    testbed::SpawnOptions o;
    o.stdout_path = dir_ + "/ovsdb-server.log";
    o.stderr_path = "=stdout";
    auto d = ssh_.spawn("dut", a, o, true);
    if (!d) return d.status();
    ovsdb_ = std::move(d.value());
    Status up = Status::error("the OVS database did not answer");
    for (int i = 0; i < 50 && !up; i++) {
      up = ssh_.run("dut", {"test", "-S", ovs_dir_ + "/db.sock"}, nullptr, 10s);
      if (!up) std::this_thread::sleep_for(200ms);
    }
    if (!up) return up;
    std::string extra = "--file-prefix " + prefix_;
    if (!util::huge_ok()) extra += " --no-huge -m 1024";
    std::vector<std::string> init = {"--no-wait", "init", "--", "set", "Open_vSwitch", "."};
    if (dpdk) {
      init.insert(init.end(), {"other_config:dpdk-init=true", "other_config:dpdk-extra=" + extra});
      if (Status s = record("dpdk-prefixes", prefix_); !s) return s;
    } else {
      prefix_.clear();  // no DPDK files to clean up
    }
    if (offload) init.push_back("other_config:hw-offload=true");
    if (!dpdk) init.push_back("other_config:tc-policy=none");
    if (Status s = vsctl(init); !s) return Status::error("ovs-vsctl init on the DUT host: " + s.message());
    // Debian's DPDK build of ovs-vswitchd, else the one on PATH.
    std::string vswitchd = "ovs-vswitchd";
    if (dpdk && ssh_.run("dut", {"test", "-x", "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"}, nullptr, 10s))
      vswitchd = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";
    a = env;
    a.insert(a.end(), {vswitchd, "unix:" + ovs_dir_ + "/db.sock", "--unixctl=" + ovs_dir_ + "/vswitchd.ctl",
                       "--log-file=" + ovs_dir_ + "/ovs-vswitchd.log"});
    log_ = dir_ + "/ovs-vswitchd.out";
    o.stdout_path = log_;
    auto v = ssh_.spawn("dut", a, o, true);
    if (!v) return v.status();
    daemon_ = std::move(v.value());
    started_ = true;
    std::vector<std::string> br = {"add-br", "br0", "--", "set", "bridge", "br0",
                                   dpdk ? "datapath_type=netdev" : "datapath_type=system"};
    for (size_t i = 0; i < 2 && !dpdk; i++)
      br.insert(br.end(), {"--", "add-port", "br0", inv_.dut.interfaces[i], "--", "set", "Interface",
                           inv_.dut.interfaces[i], "ofport_request=" + std::to_string(i + 1)});
    for (size_t i = 0; i < 2 && dpdk; i++) {
      const std::string port = "p" + std::to_string(i);
      const NicFacts* n = i < facts_.nics.size() ? &facts_.nics[i] : nullptr;
      const std::string devargs = n && is_pci_bus(n->bus)
                                      ? n->bus
                                      : "net_af_packet" + std::to_string(i) + ",iface=" + inv_.dut.interfaces[i];
      br.insert(br.end(), {"--", "add-port", "br0", port, "--", "set", "Interface", port, "type=dpdk",
                           "options:dpdk-devargs=" + devargs, "mtu_request=" + std::to_string(inv_.mtu),
                           "ofport_request=" + std::to_string(i + 1)});
    }
    if (Status s = vsctl(br); !s) return Status::error("OVS bridge on the DUT host: " + s.message() + "; " + util::tail(slurp(log_)));
    const std::string flows = ovs_dir_ + "/flows.txt";
    if (Status s = ssh_.run("dut", {"sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", util::ovs_firewall_flows(), flows},
                            nullptr, 20s);
        !s)
      return s;
    if (Status s = ssh_.run("dut", {"ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "unix:" + ovs_dir_ + "/br0.mgmt", flows},
                            &out, 30s);
        !s)
      return Status::error("ovs-ofctl replace-flows on the DUT host: " + s.message());
    return health();
  }
  Status start_kernel_ct() {
    const std::string& in0 = inv_.dut.interfaces[0];
    const std::vector<std::vector<std::string>> cmds = {
        {"nft", "add", "table", "inet", "harness"},
        {"nft", "add", "chain", "inet", "harness", "forward", "{ type filter hook forward priority 0; policy drop; }"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "established,related", "accept"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "invalid", "drop"},
        // nft joins its arguments and parses them: the (validated) name goes
        // in as a quoted string, never as syntax.
        {"nft", "add", "rule", "inet", "harness", "forward", "iifname", "\"" + in0 + "\"", "ct", "state", "new", "accept"},
        {"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"}};
    // What to put back, noted before changing it (a killed run's next run
    // puts it back too).
    std::string fwd;
    if (Status s = ssh_.run("dut", {"cat", "/proc/sys/net/ipv4/ip_forward"}, &fwd, 20s); !s) return s;
    if (Status s = record("undo-sysctl", "net.ipv4.ip_forward " + std::to_string(atoi(fwd.c_str()))); !s) return s;
    if (Status s = record("undo-nft", "inet harness"); !s) return s;
    started_ = true;
    for (const auto& c : cmds)
      if (Status s = ssh_.run("dut", c, nullptr, 20s); !s) return Status::error("kernel-ct on the DUT host: " + s.message());
    return health();
  }

  Status record(const std::string& file, const std::string& line) {
    recorded_ = true;
    return ssh_.record("dut", file, line);
  }

  std::string profile_;
  bool recorded_ = false;
  const Inventory& inv_;
  SshSession& ssh_;
  std::string dir_, machine_txt_, prefix_, log_, ovs_dir_;
  HostFacts facts_;
  Job daemon_, ovsdb_;
  bool started_ = false;
};

}  // namespace

Result<std::unique_ptr<Dut>> make_lab_dut(const std::string& name, const Inventory& inv, SshSession& ssh,
                                          const std::string& run_dir, const std::string& machine_txt) {
  return std::unique_ptr<Dut>(new LabDut(name, inv, ssh, run_dir, machine_txt));
}

}  // namespace harness
