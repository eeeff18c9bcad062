// DUT profiles. All four forward between d0 and d1 in the DUT namespace,
// with the same endpoints on either side, so rows compare fairly.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/preconditions.h"
#include "sdn/yaml_load.h"
#include "harness/sweep.h"
#include "ovs.h"
#include "util.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include "testbed/telemetry.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using testbed::Process;
using testbed::run_capture;
using testbed::SpawnOptions;

using util::first_line;
using util::huge_ok;
using util::slurp;
using util::wait_for_log;

namespace {

// af_packet devargs for an interface, with frames large enough for the MTU.
std::string afp(int idx, const char* iface, int mtu) {
  std::string d = "net_af_packet" + std::to_string(idx) + ",iface=" + iface;
  if (mtu > 1500) d += ",framesz=16384,blocksz=16384,framecnt=256";
  return d;
}

// Waits until a ping crosses the DUT (ARP included).
Status ping_across(Bed& bed, std::chrono::seconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = run_capture({"ping", "-c", "1", "-W", "1", Bed::kServerIp}, bed.client, 5s);
    if (r && r->status == 0) return {};
    last = r ? r->output : r.message();
  }
  return Status::error("health check: no ping across the DUT: " + last.substr(0, 200));
}

class DataplaneDut final : public Dut {
 public:
  DataplaneDut(const SweepConfig& c, std::string dir) : cfg_(c), dir_(std::move(dir)) {}
  std::string name() const override { return "dataplane"; }
  std::string version() const override { return "dataplane " + first_line({"git", "-C", cfg_.source_dir, "rev-parse", "--short", "HEAD"}); }
  Status start(Bed& bed) override {
    // The config's two ports become the testbed's interfaces (its first
    // port faces the client).
    auto loaded = sdn::load_yaml_file(cfg_.dataplane_config);
    if (!loaded) return loaded.status();
    YAML::Node n = *loaded;
    YAML::Node ports = n["ports"];
    if (!ports || !ports.IsSequence() || ports.size() != 2)
      return Status::error(cfg_.dataplane_config + ": the harness needs exactly two ports (client side, server side)");
    for (size_t i = 0; i < 2; i++) {
      ports[i]["devargs"] = afp(static_cast<int>(i), i == 0 ? "d0" : "d1", bed.mtu);
      ports[i]["mtu"] = bed.mtu;
    }
    // The tracker is preallocated at start: room for the background
    // connections (each worker's shard could get all of them) goes in now.
    room_ = "conntrack.capacity " + (n["conntrack"]["capacity"] ? n["conntrack"]["capacity"].as<std::string>() : "default");
    if (cfg_.background_conns > 0) {
      long long want = cfg_.background_conns + kRoomHeadroom;
      long long have = n["conntrack"]["capacity"] ? n["conntrack"]["capacity"].as<long long>() : 0;
      if (have < want) {
        n["conntrack"]["capacity"] = want;
        room_ = "conntrack.capacity " + std::to_string(have) + " -> " + std::to_string(want) + " (config rewritten)";
      }
    }
    std::string cfgp = dir_ + "/dataplane.yaml";
    YAML::Emitter out;
    out << n;
    std::ofstream(cfgp) << out.c_str() << "\n";
    prefix_ = "harness-dp-" + std::to_string(getpid());
    log_ = dir_ + "/dataplane.log";
    SpawnOptions o;
    o.ns = bed.dut;
    o.stdout_path = log_;
    o.stderr_path = "=stdout";
    std::vector<std::string> argv = {cfg_.build_dir + "/dataplane/dataplane", "--config", cfgp, "--file-prefix", prefix_};
    if (!huge_ok()) argv.push_back("--no-huge");
    auto p = Process::spawn(argv, o);
    if (!p) return p.status();
    proc_ = std::move(p.value());
    if (Status s = wait_for_log(proc_, log_, "dataplane: running", 30s); !s) return s;
    return ping_across(bed, 10s);
  }
  void stop() override {
    if (proc_.pid() > 0) {
      proc_.signal(SIGTERM);
      proc_.wait(10s);
      proc_.stop();
      testbed::Testbed::remove_dpdk_prefix(prefix_);
    }
  }
  long long ct_entries() override {
    auto r = testbed::telemetry_query(prefix_, "/dataplane/stats");
    return r ? testbed::json_number(*r, "active") : -1;
  }
  Status alive() override {
    if (proc_.pid() > 0 && !proc_.running()) return Status::error("the dataplane exited: " + util::tail(slurp(log_)));
    return {};
  }
  Result<std::string> make_room(long long) override { return room_; }
  long long offloaded() override {
    auto r = testbed::telemetry_query(prefix_, "/dataplane/stats");
    return r ? testbed::json_number(*r, "offloaded") : -1;
  }
  Result<std::map<std::string, long long>> drops() override {
    auto r = testbed::telemetry_query(prefix_, "/dataplane/stats");
    if (!r) return r.status();
    auto j = nlohmann::json::parse(*r, nullptr, false);
    if (j.is_discarded() || !j.contains("/dataplane/stats")) return Status::error("telemetry: not the stats reply");
    const auto& st = j["/dataplane/stats"];
    std::map<std::string, long long> reasons, ports;
    for (const char* part : {"drops", "ports"})
      if (st.contains(part))
        for (auto& [k, v] : st[part].items())
          if (v.is_number()) (part[0] == 'd' ? reasons : ports)[k] = v.get<long long>();
    return util::dataplane_drops(reasons, ports);
  }

 private:
  SweepConfig cfg_;
  std::string dir_, prefix_, log_, room_;
  Process proc_;
};

class TestpmdDut final : public Dut {
 public:
  explicit TestpmdDut(std::string dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "testpmd-io"; }
  std::string version() const override { return "dpdk-testpmd " + first_line({"pkg-config", "--modversion", "libdpdk"}); }
  std::string no_tracker() const override { return "n/a: io forwarding tracks no connections"; }
  std::string drops_blind_spot() const override {
    return "af_packet ring drops are not in testpmd's ethdev stats (the kernel counts them per socket)";
  }
  Result<std::map<std::string, long long>> drops() override {
    std::map<std::string, long long> m;
    for (int port : {0, 1}) {
      auto r = testbed::telemetry_query(prefix_, "/ethdev/stats," + std::to_string(port));
      if (!r) return r.status();
      auto j = nlohmann::json::parse(*r, nullptr, false);
      if (j.is_discarded() || !j.contains("/ethdev/stats")) return Status::error("telemetry: no /ethdev/stats reply");
      for (const char* k : {"imissed", "ierrors", "oerrors", "rx_nombuf"})
        if (j["/ethdev/stats"].contains(k)) m["p" + std::to_string(port) + "_" + k] = j["/ethdev/stats"][k].get<long long>();
    }
    return m;
  }
  Status start(Bed& bed) override {
    prefix_ = "harness-tp-" + std::to_string(getpid());
    const std::string& prefix = prefix_;
    log_ = dir_ + "/testpmd.log";
    std::vector<std::string> argv = {"dpdk-testpmd", "-l", "0,1", "--no-pci", "--file-prefix", prefix,
                                     "--vdev", afp(0, "d0", bed.mtu), "--vdev", afp(1, "d1", bed.mtu)};
    if (!huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
    argv.insert(argv.end(), {"--", "--forward-mode=io", "--auto-start", "--stats-period", "10", "--nb-cores=1"});
    if (bed.mtu > 1500) argv.insert(argv.end(), {"--mbuf-size=10240", "--max-pkt-len=9018", "--total-num-mbufs=16384"});
    SpawnOptions o;
    o.ns = bed.dut;
    o.stdout_path = log_;
    o.stderr_path = "=stdout";
    auto p = Process::spawn(argv, o);
    if (!p) return p.status();
    proc_ = std::move(p.value());
    if (Status s = wait_for_log(proc_, log_, "packet forwarding - ports=", 30s); !s) return s;
    return ping_across(bed, 10s);
  }
  void stop() override {
    if (proc_.pid() > 0) {
      proc_.signal(SIGINT);
      proc_.wait(10s);
      proc_.stop();
      testbed::Testbed::remove_dpdk_prefix(prefix_);
    }
  }

 private:
  std::string dir_, log_, prefix_;
  Process proc_;
};

// Linux as a router with proxy ARP (so the endpoints keep their /24) and an
// nftables stateful firewall: the same policy as the dataplane's.
class KernelCtDut final : public Dut {
 public:
  explicit KernelCtDut(std::string dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "kernel-ct"; }
  std::string version() const override {
    return "linux " + first_line({"uname", "-r"}) + ", " + first_line({"nft", "--version"});
  }
  long long ct_entries() override {
    long long n = -1;
    if (bed_)
      testbed::run_in(bed_->dut, [&] {
        std::ifstream f("/proc/sys/net/netfilter/nf_conntrack_count");
        if (!(f >> n)) n = -1;
      });
    return n;
  }
  // nf_conntrack_max is one value for the whole kernel (read-only inside a
  // namespace): raised on the host when it is short, and put back at stop().
  Result<std::string> make_room(long long conns) override {
    const char* path = "/proc/sys/net/netfilter/nf_conntrack_max";
    long long have = -1;
    std::ifstream(path) >> have;
    if (have < 0) return Status::error(std::string("cannot read ") + path);
    long long want = conns + kRoomHeadroom;
    if (have >= want) return "nf_conntrack_max " + std::to_string(have);
    std::ofstream f(path);
    f << want;
    f.close();
    if (!f) return Status::error(std::string("cannot raise ") + path + " to " + std::to_string(want));
    restore_max_ = have;
    return "nf_conntrack_max " + std::to_string(have) + " -> " + std::to_string(want) + " (host-wide, restored at the end)";
  }
  Result<std::map<std::string, long long>> drops() override {
    if (!bed_) return Status::error("not started");
    auto r = run_capture({"ip", "-s", "-j", "link", "show"}, bed_->dut, 10s);
    if (!r || r->status != 0) return Status::error("ip -s -j link: " + (r ? r->output : r.message()));
    auto j = nlohmann::json::parse(r->output, nullptr, false);
    if (!j.is_array()) return Status::error("ip -s -j link: not a JSON array");
    std::map<std::string, long long> m;
    for (auto& l : j) {
      std::string ifn = l.value("ifname", "");
      if ((ifn != "d0" && ifn != "d1") || !l.contains("stats64")) continue;
      for (const char* dir : {"rx", "tx"})
        for (const char* k : {"dropped", "errors", "missed"})
          if (l["stats64"].contains(dir) && l["stats64"][dir].contains(k))
            m[ifn + "_" + dir + "_" + k] = l["stats64"][dir][k].get<long long>();
    }
    return m;
  }
  Status start(Bed& bed) override {
    bed_ = &bed;
    auto& tb = *bed.tb;
    Status st;
    auto sysctl = [&](const std::string& path, const char* v) {
      testbed::run_in(bed.dut, [&] {
        std::ofstream f("/proc/sys/" + path);
        f << v;
        if (!f) st = Status::error("cannot set " + path);
      });
    };
    sysctl("net/ipv4/ip_forward", "1");
    for (const char* i : {"d0", "d1", "all", "default"}) sysctl(std::string("net/ipv4/conf/") + i + "/rp_filter", "0");
    sysctl("net/ipv4/conf/d0/proxy_arp", "1");
    sysctl("net/ipv4/conf/d1/proxy_arp", "1");
    if (!st) return st;
    if (Status s = tb.add_address(bed.dut, "d0", "192.0.2.1/32"); !s) return s;
    if (Status s = tb.add_address(bed.dut, "d1", "192.0.2.2/32"); !s) return s;
    if (Status s = tb.add_route(bed.dut, std::string(Bed::kClientIp) + "/32", "", "d0"); !s) return s;
    if (Status s = tb.add_route(bed.dut, std::string(Bed::kServerIp) + "/32", "", "d1"); !s) return s;
    std::string rules = dir_ + "/kernel-ct.nft";
    std::ofstream(rules) << "table inet harness {\n"
                            " chain forward {\n"
                            "  type filter hook forward priority 0; policy drop;\n"
                            "  ct state established,related accept\n"
                            "  ct state invalid drop\n"
                            "  iifname \"d0\" ct state new accept\n"
                            " }\n"
                            "}\n";
    auto r = run_capture({"nft", "-f", rules}, bed.dut, 10s);
    if (!r) return r.status();
    if (r->status != 0) return Status::error("nft: " + r->output);
    return ping_across(bed, 10s);
  }
  void stop() override {  // the namespace goes with the testbed
    bed_ = nullptr;
    if (restore_max_ >= 0) std::ofstream("/proc/sys/net/netfilter/nf_conntrack_max") << restore_max_;
    restore_max_ = -1;
  }
  ~KernelCtDut() override { stop(); }

 private:
  std::string dir_;
  Bed* bed_ = nullptr;
  long long restore_max_ = -1;
};

// Open vSwitch with DPDK (the dpdk build of ovs-vswitchd), netdev bridge,
// the two af_packet ports as type=dpdk, and the stateful firewall in ct().
class OvsDpdkDut final : public Dut {
 public:
  explicit OvsDpdkDut(std::string dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "ovs-dpdk"; }
  std::string version() const override { return first_line({"ovs-vswitchd", "--version"}); }
  Status start(Bed& bed) override {
    bed_ = &bed;
    run_ = dir_ + "/ovs";
    OvsSpec spec;
    spec.run_dir = run_;
    spec.ns = bed.dut;
    spec.file_prefix = "harness-ovs-" + std::to_string(getpid());
    spec.lcore_mask = "0x1";
    spec.pmd_mask = "0x2";
    spec.dev0 = afp(0, "d0", bed.mtu);
    spec.dev1 = afp(1, "d1", bed.mtu);
    spec.mtu = bed.mtu;
    SDN_TRY(ovs_.start(spec));
    return ping_across(bed, 20s);
  }
  void stop() override {
    ovs_.stop();
    bed_ = nullptr;
  }
  long long ct_entries() override {
    if (!bed_) return -1;
    auto r = run_capture({"ovs-appctl", "-t", run_ + "/vswitchd.ctl", "dpctl/ct-get-nconns"}, bed_->dut, 10s);
    if (!r || r->status != 0) return -1;
    char* end;
    long long n = strtoll(r->output.c_str(), &end, 10);
    return end == r->output.c_str() ? -1 : n;
  }
  Result<std::string> make_room(long long conns) override {
    if (!bed_) return Status::error("not started");
    auto r = run_capture({"ovs-appctl", "-t", run_ + "/vswitchd.ctl", "dpctl/ct-get-maxconns"}, bed_->dut, 10s);
    if (!r || r->status != 0) return Status::error("dpctl/ct-get-maxconns: " + (r ? r->output : r.message()));
    long long have = atoll(r->output.c_str()), want = conns + kRoomHeadroom;
    if (have >= want) return "dpctl/ct-get-maxconns " + std::to_string(have);
    if (Status s = cmd({"ovs-appctl", "-t", run_ + "/vswitchd.ctl", "dpctl/ct-set-maxconns", std::to_string(want)},
                       bed_->dut);
        !s)
      return s;
    return "dpctl/ct-set-maxconns " + std::to_string(have) + " -> " + std::to_string(want);
  }
  std::string drops_blind_spot() const override {
    return "af_packet ring drops are not in OVS's port statistics (the kernel counts them per socket)";
  }
  // dpctl/show's "lost" (upcalls dropped) and each port's statistics.
  Result<std::map<std::string, long long>> drops() override {
    if (!bed_) return Status::error("not started");
    std::map<std::string, long long> m;
    auto r = run_capture({"ovs-appctl", "-t", run_ + "/vswitchd.ctl", "dpctl/show"}, bed_->dut, 10s);
    if (!r || r->status != 0) return Status::error("dpctl/show: " + (r ? r->output : r.message()));
    if (size_t p = r->output.find("lost:"); p != std::string::npos) m["dp_lost"] = atoll(r->output.c_str() + p + 5);
    for (const char* port : {"p0", "p1"}) {
      auto s = run_capture({"ovs-vsctl", "--db=unix:" + run_ + "/db.sock", "get", "Interface", port, "statistics"},
                           bed_->dut, 10s);
      if (!s || s->status != 0) return Status::error(std::string("statistics of ") + port);
      util::ovs_port_drops(port, s->output, &m);
    }
    return m;
  }

 private:
  Status cmd(const std::vector<std::string>& argv, testbed::Netns*) { return ovs_.cmd(argv); }
  std::string dir_, run_;
  LocalOvs ovs_;
  Bed* bed_ = nullptr;
};

// The seed's hardware profiles (OVS-DPDK with rte_flow conntrack offload;
// kernel OVS with TC flower and conntrack offload). Both need a ConnectX in
// switchdev mode on the DUT host: their preconditions are checked on the DUT
// host before any traffic, and a failed one is the start error (so every row
// names what is missing, never a number).
class HardwareProfileDut final : public Dut {
 public:
  explicit HardwareProfileDut(std::string profile) : profile_(std::move(profile)) {}
  std::string name() const override { return profile_; }
  std::string version() const override {
    return profile_ == "ovs-kernel-tc" ? "linux " + first_line({"uname", "-r"}) + ", " + first_line({"ovs-vswitchd", "--version"})
                                       : first_line({"ovs-vswitchd", "--version"});
  }
  std::string no_tracker() const override { return "n/a: not started (preconditions)"; }
  Status start(Bed& bed) override {
    HostFacts f = gather_host_facts(util::netns_runner(bed.dut), {"d0", "d1"});
    // What the profile itself sets in OVS before its first flow.
    std::map<std::string, std::string> ovs = {{"hw-offload", "true"}, {"tc-policy", "none"}};
    auto miss = missing_for(profile_, f, ovs);
    if (!miss.empty()) {
      std::string m;
      for (auto& x : miss) m += (m.empty() ? "" : "; ") + x;
      return Status::error("preconditions not met on the DUT host: " + m);
    }
    return Status::error("preconditions met, but this profile runs only on a lab DUT host driven over SSH "
                         "(--lab FILE), which is not built yet");
  }
  void stop() override {}

 private:
  std::string profile_;
};

}  // namespace

Result<std::unique_ptr<Dut>> make_dut(const std::string& name, const SweepConfig& cfg, const std::string& run_dir) {
  if (name == "dataplane") return std::unique_ptr<Dut>(new DataplaneDut(cfg, run_dir));
  if (name == "testpmd-io") return std::unique_ptr<Dut>(new TestpmdDut(run_dir));
  if (name == "kernel-ct") return std::unique_ptr<Dut>(new KernelCtDut(run_dir));
  if (name == "ovs-dpdk") return std::unique_ptr<Dut>(new OvsDpdkDut(run_dir));
  if (name == "ovs-dpdk-offload" || name == "ovs-kernel-tc") return std::unique_ptr<Dut>(new HardwareProfileDut(name));
  return Status::error("unknown DUT '" + name +
                       "' (known: dataplane, ovs-dpdk, kernel-ct, testpmd-io, ovs-dpdk-offload, ovs-kernel-tc)");
}

}  // namespace harness
