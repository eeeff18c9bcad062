// The DUT profiles, each once, on any DutHost and any port attachment. All
// forward between port 0 (client side) and port 1 (server side) with the
// same stateful firewall, so rows compare fairly.
#include <unistd.h>

#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "harness/dut.h"
#include "ovs.h"
#include "sdn/yaml_load.h"
#include "testbed/telemetry.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using util::slurp;
using util::tail;

namespace {

// `ip -s -j link show dev IFC` on the host: the link's object (ifindex,
// stats64, ...), with `key` checked present.
Result<nlohmann::json> link_json(DutHost& h, const std::string& ifc, const char* key) {
  std::string out;
  if (Status s = h.run({"ip", "-s", "-j", "link", "show", "dev", ifc}, &out, 20s); !s)
    return Status::error("ip -s -j link: " + s.message());
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].is_object() || !j[0].contains(key))
    return Status::error("ip -s -j link show dev " + ifc + ": no " + key);
  return j[0];
}

// Its stats64 object.
Result<nlohmann::json> link_stats(DutHost& h, const std::string& ifc) {
  auto j = link_json(h, ifc, "stats64");
  if (!j) return j.status();
  if (!(*j)["stats64"].is_object()) return Status::error("ip -s -j link show dev " + ifc + ": no statistics");
  return (*j)["stats64"];
}

// What every profile shares: its site, its main program, and how it is
// found gone.
class Profile : public Dut {
 public:
  Profile(const DutProfile& p, const DutSite& site) : p_(p), name_(p.name), site_(site), host_(*site.host) {}
  ~Profile() override { Profile::stop(); }
  std::string name() const override { return name_; }
  Status alive() override {
    if (main_.pid() > 0 && !main_.running())
      return Status::error(name_ + " on " + host_.describe() + " is gone (it exited" +
                           (host_.local() ? "" : ", or its SSH session ended") + "): " + tail(slurp(log_), 200));
    if (!host_.local())
      if (Status s = host_.run({"true"}, nullptr, 15s); !s)
        return Status::error(host_.describe() + " does not answer over SSH: " + s.message());
    return {};
  }
  void stop() override {
    main_ = Job();
    host_.undo();
  }
  Result<std::map<std::string, LinkCount>> link_counts() override {
    if (interfaces().empty())
      return Status::error("n/a: its ports are memif or PCI devices, whose frames the kernel does not count");
    std::map<std::string, LinkCount> m;
    for (const auto& ifc : interfaces()) {
      auto st = link_stats(host_, ifc);
      if (!st) return st.status();
      auto num = [&](const char* dir, const char* k) -> long long {
        const auto& d = (*st)[dir];
        return d.is_object() && d.contains(k) && d[k].is_number_integer() ? d[k].get<long long>() : -1;
      };
      LinkCount c{num("rx", "bytes"), num("rx", "packets"), num("tx", "bytes"), num("tx", "packets")};
      if (c.rx_bytes < 0 || c.rx_packets < 0 || c.tx_bytes < 0 || c.tx_packets < 0)
        return Status::error("ip -s -j link show dev " + ifc + ": no byte or packet counts");
      m[ifc] = c;
    }
    return m;
  }

 protected:
  // The file prefix of a DPDK program of this run, noted for undo.
  Result<std::string> dpdk_prefix(const char* program) {
    std::string p = site_.prefix_tag + program + "-" + std::to_string(getpid());
    SDN_TRY(host_.note_dpdk_prefix(p));
    return p;
  }
  // Waits for `needle` in the program's output.
  Status await_log(const std::string& needle, std::chrono::seconds within) {
    for (auto deadline = std::chrono::steady_clock::now() + within;;) {
      if (slurp(log_).find(needle) != std::string::npos) return {};
      if (!main_.running())
        return Status::error(name_ + " exited during start on " + host_.describe() + ": " + tail(slurp(log_)));
      if (std::chrono::steady_clock::now() > deadline)
        return Status::error(name_ + " is not ready after " + std::to_string(within.count()) + " s on " +
                             host_.describe() + ": " + tail(slurp(log_)));
      std::this_thread::sleep_for(100ms);
    }
  }
  Status spawn_main(const std::vector<std::string>& argv, const std::string& log_name) {
    log_ = site_.dir + "/" + log_name;
    auto j = host_.spawn(argv, log_, true);
    if (!j) return j.status();
    main_ = std::move(j.value());
    return {};
  }
  Result<CpuTime> forwarding_cpu() override {
    if (!host_.local()) return Status::error("its threads are not read on " + host_.describe());
    const pid_t pid = cpu_pid();
    if (pid <= 0) return Status::error(name_ + " has no process");
    auto t = util::pinned_threads_cpu(pid, site_.fwd_lcore);
    if (!t) return t.status();
    return CpuTime{t->run_ns, t->wait_ns};
  }
  // The process whose threads forward (the one the profile started).
  virtual pid_t cpu_pid() const { return main_.pid(); }
  bool any_port(Attach a) const { return site_.ports[0].attach == a || site_.ports[1].attach == a; }
  std::string host_suffix() const { return host_.local() ? "" : " on " + host_.describe(); }
  std::string first_line_on_host(const std::vector<std::string>& argv) const {
    std::string out;
    if (!host_.run(argv, &out, 20s)) return "unknown";
    return out.substr(0, out.find('\n'));
  }
  // The receive-ring drops of its af_packet ports (p0_rx_ring_drops,
  // p1_rx_ring_drops), read off the sockets of process `pid` and added up
  // since it started (each read resets the kernel's count). Only where the
  // harness runs: drops_blind_spot() names it elsewhere.
  Status add_ring_drops(pid_t pid, std::map<std::string, long long>* m) {
    if (!any_port(Attach::kAfPacket) || !host_.local()) return {};
    if (pid <= 0) return Status::error("af_packet ring drops: " + name_ + " has no process");
    auto d = util::af_packet_ring_drops(pid);
    if (!d) return Status::error("af_packet ring drops: " + d.message());
    for (size_t i = 0; i < 2; i++) {
      const DutPort& p = site_.ports[i];
      if (p.attach != Attach::kAfPacket) continue;
      if (ifindex_[i] <= 0) {
        auto j = link_json(host_, p.name, "ifindex");
        if (!j) return j.status();
        if (!(*j)["ifindex"].is_number_integer()) return Status::error("ip -j link show dev " + p.name + ": no ifindex");
        ifindex_[i] = (*j)["ifindex"].get<int>();
      }
      auto it = d->find(ifindex_[i]);
      if (it == d->end())
        return Status::error("af_packet ring drops: " + name_ + " has no packet socket on " + p.name);
      ring_drops_[i] += it->second;
      (*m)["p" + std::to_string(i) + "_rx_ring_drops"] = ring_drops_[i];
    }
    return {};
  }
  std::string ring_blind_spot(const char* whose) const {
    return any_port(Attach::kAfPacket) && !host_.local()
               ? std::string("af_packet ring drops are not in ") + whose +
                     " (the kernel counts them per socket; the harness reads them only on its own machine)"
               : "";
  }
  // Its kernel interfaces (af_packet ports), for counters read from the kernel.
  std::vector<std::string> interfaces() const {
    std::vector<std::string> v;
    for (const auto& p : site_.ports)
      if (p.attach == Attach::kAfPacket) v.push_back(p.name);
    return v;
  }

  const DutProfile& p_;
  std::string name_;
  DutSite site_;
  DutHost& host_;
  Job main_;
  std::string log_;
  int ifindex_[2] = {0, 0};
  long long ring_drops_[2] = {0, 0};
};

// The dataplane daemon. Read through dataplane-ctl, here or on the lab host.
class DataplaneDut final : public Profile {
 public:
  using Profile::Profile;
  std::string version() const override {
    const std::string rev = site_.source_dir.empty()
                                ? site_.dataplane
                                : util::first_line({"git", "-C", site_.source_dir, "rev-parse", "--short", "HEAD"});
    return "dataplane " + rev + host_suffix();
  }
  Status start() override {
    std::string config = site_.dataplane_config;
    if (site_.config_as_is) SDN_TRY(check_on_host());
    else SDN_TRY(write_config(&config));
    auto prefix = dpdk_prefix("dp");
    if (!prefix) return prefix.status();
    prefix_ = *prefix;
    std::vector<std::string> argv = {site_.dataplane, "--config", config, "--file-prefix", prefix_};
    if (!util::huge_ok()) argv.push_back("--no-huge");
    SDN_TRY(spawn_main(argv, "dataplane.log"));
    return await_log("dataplane: running", 60s);
  }
  void stop() override {
    Profile::stop();
    prefix_.clear();
  }
  long long ct_entries() override { return stat("active"); }
  long long offloaded() override { return stat("offloaded"); }
  Result<std::string> make_room(long long) override { return room_; }
  Result<std::map<std::string, long long>> drops() override {
    auto c = counters();
    if (!c) return c.status();
    return util::dataplane_drops(c->reasons, c->ports);
  }
  // tx_full and transmit errors are the generator's; every other reason,
  // and the ports' receive misses and errors, the dataplane's own.
  Result<DropSplit> drop_split() override {
    auto c = counters();
    if (!c) return c.status();
    DropSplit d;
    for (const auto& [k, v] : c->reasons) (k == "tx_full" ? d.gen : d.own) += v;
    for (const auto& [k, v] : c->ports) {
      if (k.ends_with("_tx_errors")) d.gen += v;
      else if (k.ends_with("_rx_missed") || k.ends_with("_rx_errors")) d.own += v;
    }
    return d;
  }

 private:
  // A lab host's own config, checked there before it starts.
  Status check_on_host() {
    std::string out;
    if (Status s = host_.run({site_.dataplane, "--check", "--config", site_.dataplane_config}, &out, 60s); !s)
      return Status::error("dataplane --check on " + host_.describe() + ": " + s.message());
    room_ = "conntrack.capacity as configured on " + host_.describe() + " (checked per row)";
    if (site_.hw_check.empty()) return {};
    if (Status s = host_.run({site_.dataplane, "--hw-check", site_.hw_check}, &out, 120s); !s)
      return Status::error("dataplane --hw-check " + site_.hw_check + " on " + host_.describe() + ": " + s.message());
    return host_.write_file(site_.dir + "/hw-check.txt", out);
  }
  // The config with the site's ports (its first port faces the client),
  // lcores and tracker room, written to the host.
  Status write_config(std::string* path) {
    auto loaded = sdn::load_yaml_file(site_.dataplane_config);
    if (!loaded) return loaded.status();
    YAML::Node n = *loaded;
    YAML::Node ports = n["ports"];
    if (!ports || !ports.IsSequence() || ports.size() != 2)
      return Status::error(site_.dataplane_config + ": the harness needs exactly two ports (client side, server side)");
    for (size_t i = 0; i < 2; i++) {
      ports[i]["devargs"] = port_devargs(site_.ports[i], static_cast<int>(i), site_.mtu);
      if (site_.ports[i].attach != Attach::kMemif) ports[i]["mtu"] = site_.mtu;
    }
    if (site_.place_dataplane) {
      n["workers"]["main_lcore"] = site_.main_lcore;
      YAML::Node lc;
      lc.push_back(site_.fwd_lcore);
      n["workers"]["lcores"] = lc;
    }
    // The tracker is preallocated at start: the room goes in now.
    const bool set = static_cast<bool>(n["conntrack"]["capacity"]);
    const long long have = set ? n["conntrack"]["capacity"].as<long long>() : 0;
    room_ = "conntrack.capacity " + (set ? std::to_string(have) : std::string("default"));
    if (site_.tracker_room > 0 && (have < site_.tracker_room || site_.tracker_room_exact)) {
      n["conntrack"]["capacity"] = site_.tracker_room;
      room_ = "conntrack.capacity " + std::to_string(have) + " -> " + std::to_string(site_.tracker_room) +
              " (config rewritten)";
    }
    YAML::Emitter out;
    out << n;
    *path = host_.work_dir() + "/dataplane.yaml";
    return host_.write_file(*path, std::string(out.c_str()) + "\n");
  }
  Status ctl(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {site_.dataplane_ctl, "--prefix", prefix_});
    return host_.run(args, out, 30s);
  }
  // `dataplane-ctl --json stats` (README: dataplane-ctl --json).
  Result<nlohmann::json> stats() {
    std::string out;
    if (prefix_.empty()) return Status::error("the dataplane is not started");
    SDN_TRY(ctl({"--json", "stats"}, &out));
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("ct") || !j.contains("ports"))
      return Status::error(sdn::ErrorKind::kInvalid, "dataplane-ctl --json stats: not the stats object (a dataplane "
                                                     "older than the harness?): " + tail(out, 200));
    return j;
  }
  struct Counters {
    std::map<std::string, long long> reasons, ports;  // drops by reason; PORT_counter and host counters
  };
  Result<Counters> counters() {
    auto j = stats();
    if (!j) return j.status();
    Counters c;
    for (const auto& [k, v] : (*j)["drops"].items())
      if (v.is_number()) c.reasons[k] = v.get<long long>();
    for (const auto& [port, m] : (*j)["ports"].items())
      for (const auto& [k, v] : m.items())
        if (v.is_number()) c.ports[port + "_" + k] = v.get<long long>();
    if (j->contains("host"))
      for (const auto& [k, v] : (*j)["host"].items())
        if (v.is_number()) c.ports[k] = v.get<long long>();
    return c;
  }
  long long stat(const char* key) {
    auto j = stats();
    if (!j || !(*j)["ct"].contains(key) || !(*j)["ct"][key].is_number()) return -1;
    return (*j)["ct"][key].get<long long>();
  }
  std::string prefix_, room_;
};

// dpdk-testpmd forwarding between the ports: io (the sweep's baseline), or
// rxonly (the RFC 2544 generator's own ceiling).
class TestpmdDut final : public Profile {
 public:
  TestpmdDut(const DutProfile& p, const DutSite& site, std::string mode) : Profile(p, site), mode_(std::move(mode)) {}
  std::string version() const override {
    return "dpdk-testpmd " + mode_ + " " + first_line_on_host({"pkg-config", "--modversion", "libdpdk"}) + host_suffix();
  }
  std::string no_tracker() const override { return "n/a: io forwarding tracks no connections"; }
  std::string drops_blind_spot() const override { return ring_blind_spot("testpmd's ethdev stats"); }
  Status start() override {
    auto prefix = dpdk_prefix("tp");
    if (!prefix) return prefix.status();
    prefix_ = *prefix;
    std::vector<std::string> argv = {"dpdk-testpmd", "-l",
                                     std::to_string(std::min(site_.main_lcore, site_.fwd_lcore)) + "," +
                                         std::to_string(std::max(site_.main_lcore, site_.fwd_lcore)),
                                     "--main-lcore", std::to_string(site_.main_lcore), "--file-prefix", prefix_};
    if (!any_port(Attach::kPci)) argv.push_back("--no-pci");
    for (int i = 0; i < 2; i++) {
      const DutPort& p = site_.ports[static_cast<size_t>(i)];
      argv.insert(argv.end(), {p.attach == Attach::kPci ? "-a" : "--vdev", port_devargs(p, i, site_.mtu)});
    }
    if (!util::huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
    argv.insert(argv.end(), {"--", "--forward-mode=" + mode_, "--auto-start", "--stats-period", "10", "--nb-cores=1"});
    if (site_.mtu > 1500) argv.insert(argv.end(), {"--mbuf-size=10240", "--max-pkt-len=9018", "--total-num-mbufs=16384"});
    SDN_TRY(spawn_main(argv, "testpmd-" + mode_ + ".log"));
    return await_log("packet forwarding - ports=", 60s);
  }
  Result<std::map<std::string, long long>> drops() override {
    std::map<std::string, long long> m;
    for (int port : {0, 1}) {
      auto st = ethdev_stats(port);
      if (!st) return st.status();
      for (const char* k : {"imissed", "ierrors", "oerrors", "rx_nombuf"})
        if (st->contains(k)) m["p" + std::to_string(port) + "_" + k] = (*st)[k].get<long long>();
    }
    SDN_TRY(add_ring_drops(main_.pid(), &m));
    return m;
  }
  // memif counts no transmit errors; io forwarding drops only what its
  // transmit refused, so that is what it received and did not send.
  Result<DropSplit> drop_split() override {
    DropSplit d;
    long long in = 0, out = 0;
    for (int port : {0, 1}) {
      auto st = ethdev_stats(port);
      if (!st) return st.status();
      in += st->value("ipackets", 0ll);
      out += st->value("opackets", 0ll);
      d.own += st->value("imissed", 0ll) + st->value("ierrors", 0ll) + st->value("rx_nombuf", 0ll);
      d.gen += st->value("oerrors", 0ll);
    }
    d.gen += std::max(0ll, in - out);
    std::map<std::string, long long> ring;
    SDN_TRY(add_ring_drops(main_.pid(), &ring));
    for (const auto& [k, v] : ring) d.own += v;
    return d;
  }

 private:
  // Over DPDK telemetry, whose socket is only reachable on this machine.
  Result<nlohmann::json> ethdev_stats(int port) {
    if (!host_.local()) return Status::error("testpmd's counters are not read on " + host_.describe());
    auto r = testbed::telemetry_query(prefix_, "/ethdev/stats," + std::to_string(port));
    if (!r) return r.status();
    auto j = nlohmann::json::parse(*r, nullptr, false);
    if (j.is_discarded() || !j.contains("/ethdev/stats")) return Status::error("telemetry: no /ethdev/stats reply");
    return j["/ethdev/stats"];
  }
  std::string mode_, prefix_;
};

// The kernel's netfilter counts of the DUT's namespace, and the drop
// counters of its interfaces.
long long kernel_ct_count(DutHost& h) {
  auto n = h.read_sysctl("net.netfilter.nf_conntrack_count", false);
  return n ? *n : -1;
}

// nf_conntrack_max is one value for the whole kernel (read-only inside a
// namespace): raised on the host when short, put back by the host's undo
// (after a kill -9, by the next run or `testbed down`: the value before is
// noted on the host first).
Result<std::string> kernel_make_room(DutHost& h, long long conns) {
  const char* key = "net.netfilter.nf_conntrack_max";
  auto have = h.read_sysctl(key, true);
  if (!have) return have.status();
  const long long want = conns + kRoomHeadroom;
  if (*have >= want) return "nf_conntrack_max " + std::to_string(*have);
  SDN_TRY(h.set_sysctl(key, want, true));
  return "nf_conntrack_max " + std::to_string(*have) + " -> " + std::to_string(want) + " (host-wide, put back at the end)";
}

Result<std::map<std::string, long long>> link_drops(DutHost& h, const std::vector<std::string>& ifaces) {
  std::map<std::string, long long> m;
  for (const auto& ifc : ifaces) {
    auto st = link_stats(h, ifc);
    if (!st) return st.status();
    for (const char* dir : {"rx", "tx"})
      for (const char* k : {"dropped", "errors", "missed"})
        if ((*st).contains(dir) && (*st)[dir].contains(k)) m[ifc + "_" + dir + "_" + k] = (*st)[dir][k].get<long long>();
  }
  return m;
}

// Linux as a router (proxy ARP on the testbed, so the endpoints keep their
// /24) with an nftables stateful firewall: the same policy as the
// dataplane's.
class KernelCtDut final : public Profile {
 public:
  using Profile::Profile;
  std::string version() const override {
    return "linux " + first_line_on_host({"uname", "-r"}) + ", " + first_line_on_host({"nft", "--version"}) +
           host_suffix();
  }
  long long ct_entries() override { return kernel_ct_count(host_); }
  Result<std::string> make_room(long long conns) override { return kernel_make_room(host_, conns); }
  Result<std::map<std::string, long long>> drops() override { return link_drops(host_, interfaces()); }
  Status start() override {
    if (interfaces().size() != 2) return Status::error("kernel-ct needs two kernel interfaces (the kernel has no DPDK port)");
    const std::string& in0 = site_.ports[0].name;
    const std::string& in1 = site_.ports[1].name;
    if (const Overlay* o = site_.scenario->overlay()) return start_overlay(*o, in0, in1);
    if (!site_.router_client_ip.empty()) SDN_TRY(make_router(in0, in1));
    const std::vector<std::vector<std::string>> cmds = {
        {"nft", "add", "table", "inet", "harness"},
        {"nft", "add", "chain", "inet", "harness", "forward", "{ type filter hook forward priority 0; policy drop; }"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "established,related", "accept"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "invalid", "drop"},
        // nft joins its arguments and parses them: the (validated) name goes
        // in as a quoted string, never as syntax.
        {"nft", "add", "rule", "inet", "harness", "forward", "iifname", "\"" + in0 + "\"", "ct", "state", "new", "accept"}};
    // What to put back, noted before changing it.
    SDN_TRY(host_.note_nft_table("inet harness"));
    SDN_TRY(host_.set_sysctl("net.ipv4.ip_forward", 1, false));
    for (const auto& c : cmds)
      if (Status s = host_.run(c, nullptr, 20s); !s) return Status::error("kernel-ct on " + host_.describe() + ": " + s.message());
    return {};
  }

 private:
  // overlay-nat: Linux as the VM's hypervisor: the VM's next hop on in0, a
  // VXLAN or Geneve device (VNI 100) to the remote VTEP over in1, nftables
  // source NAT to the floating address on it, the same stateful forward
  // chain. The device goes with the DUT namespace.
  Status start_overlay(const Overlay& o, const std::string& in0, const std::string& in1) {
    const std::string dev(o.device);
    SDN_TRY(host_.note_nft_table("inet harness"));
    SDN_TRY(host_.note_nft_table("ip harness_nat"));
    SDN_TRY(host_.set_sysctl("net.ipv4.ip_forward", 1, false));
    for (const std::string& i : {in0, std::string("all"), std::string("default")})
      SDN_TRY(host_.set_sysctl("net.ipv4.conf." + i + ".rp_filter", 0, false));
    const std::vector<std::vector<std::string>> cmds = {
        {"ip", "link", "set", "dev", in0, "address", "02:00:00:00:0a:0a"},  // Bed::kNextHopMac
        {"ip", "link", "set", "dev", in1, "address", "02:00:00:00:01:01"},  // Bed::kVtepMac
        {"ip", "addr", "add", "10.0.0.254/24", "dev", in0},
        {"ip", "addr", "add", "192.0.2.1/24", "dev", in1},
        {"ip", "neigh", "replace", "192.0.2.2", "lladdr", "02:00:00:00:02:02", "dev", in1, "nud", "permanent"},
        vtep_link_argv(o, "02:00:00:00:0c:00", "192.0.2.1", "192.0.2.2", in1),
        {"ip", "link", "set", "dev", dev, "mtu", std::to_string(site_.mtu - o.overhead), "up"},
        {"ip", "route", "add", "198.51.100.0/24", "dev", dev},
        {"ip", "neigh", "replace", "198.51.100.20", "lladdr", "02:00:00:00:0a:0a", "dev", dev, "nud", "permanent"},
        {"ip", "neigh", "replace", "10.0.0.1", "lladdr", "02:00:00:00:0c:00", "dev", in0, "nud", "permanent"},
        {"nft", "add", "table", "ip", "harness_nat"},
        {"nft", "add", "chain", "ip", "harness_nat", "post", "{ type nat hook postrouting priority 100; }"},
        {"nft", "add", "rule", "ip", "harness_nat", "post", "oifname", "\"" + dev + "\"", "snat", "to", "203.0.113.7"},
        {"nft", "add", "table", "inet", "harness"},
        {"nft", "add", "chain", "inet", "harness", "forward", "{ type filter hook forward priority 0; policy drop; }"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "established,related", "accept"},
        {"nft", "add", "rule", "inet", "harness", "forward", "ct", "state", "invalid", "drop"},
        {"nft", "add", "rule", "inet", "harness", "forward", "iifname", "\"" + in0 + "\"", "ct", "state", "new", "accept"}};
    for (const auto& c : cmds)
      if (Status s = host_.run(c, nullptr, 20s); !s)
        return Status::error("kernel-ct overlay-nat on " + host_.describe() + ": " + s.message());
    return {};
  }

  Status make_router(const std::string& in0, const std::string& in1) {
    for (const std::string& i : {in0, in1, std::string("all"), std::string("default")})
      SDN_TRY(host_.set_sysctl("net.ipv4.conf." + i + ".rp_filter", 0, false));
    for (const std::string& i : {in0, in1}) SDN_TRY(host_.set_sysctl("net.ipv4.conf." + i + ".proxy_arp", 1, false));
    const std::vector<std::vector<std::string>> cmds = {
        {"ip", "addr", "add", "192.0.2.1/32", "dev", in0},
        {"ip", "addr", "add", "192.0.2.2/32", "dev", in1},
        {"ip", "route", "add", site_.router_client_ip + "/32", "dev", in0},
        {"ip", "route", "add", site_.router_server_ip + "/32", "dev", in1}};
    for (const auto& c : cmds) SDN_TRY(host_.run(c, nullptr, 10s));
    return {};
  }
};

// Open vSwitch with the same ct() firewall:
// - ovs-dpdk: a netdev bridge with the two ports as type=dpdk;
// - ovs-dpdk-offload: the same with other_config:hw-offload=true (rte_flow
//   into the NIC);
// - ovs-kernel-tc: the kernel datapath with the two interfaces (switchdev
//   representors), hw-offload=true and tc-policy=none: flows and ct() in
//   TC flower, offloaded by the NIC where it can. Its conntrack is the
//   kernel's (nf_conntrack_count, nf_conntrack_max).
// The offloaded ones count dpctl/dump-flows type=offloaded per row.
class OvsDut final : public Profile {
 public:
  using Profile::Profile;
  std::string version() const override {
    const std::string ovs = first_line_on_host({"ovs-vswitchd", "--version"});
    return (kernel() ? "linux " + first_line_on_host({"uname", "-r"}) + ", " + ovs : ovs) + host_suffix();
  }
  // OVS gives a port one tx queue per PMD thread plus one (its PMD sends on
  // queue 1): a generator on memif ports polls two.
  int gen_rx_queues() const override { return any_port(Attach::kMemif) ? 2 : 1; }
  pid_t cpu_pid() const override { return ovs_.pid(); }  // its PMD thread's
  Status start() override {
    OvsSpec spec;
    spec.host = &host_;
    spec.log_dir = site_.dir;
    spec.dpdk = !kernel();
    spec.hw_offload = p_.needs_connectx;
    spec.lcore_mask = mask(site_.main_lcore);
    spec.pmd_mask = mask(site_.fwd_lcore);
    spec.pci = any_port(Attach::kPci);
    for (size_t i = 0; i < 2; i++)
      spec.ports[i] = kernel() ? site_.ports[i].name : port_devargs(site_.ports[i], static_cast<int>(i), site_.mtu);
    spec.mtu = any_port(Attach::kMemif) ? 0 : site_.mtu;
    spec.overlay = site_.scenario->overlay();
    if (spec.dpdk) {
      auto prefix = dpdk_prefix("ovs");
      if (!prefix) return prefix.status();
      spec.file_prefix = *prefix;
    }
    SDN_TRY(ovs_.start(spec));
    log_ = ovs_.log();
    if (site_.tracker_room > 0 && !kernel())
      return ovs_.appctl({"dpctl/ct-set-maxconns", std::to_string(site_.tracker_room)});
    return {};
  }
  void stop() override {
    ovs_.stop();
    Profile::stop();
  }
  Status alive() override {
    if (!log_.empty() && !ovs_.running())
      return Status::error(name_ + " on " + host_.describe() + " is gone: ovs-vswitchd exited: " + tail(slurp(log_), 200));
    return Profile::alive();
  }
  long long ct_entries() override {
    if (kernel()) return kernel_ct_count(host_);
    std::string out;
    if (!ovs_.appctl({"dpctl/ct-get-nconns"}, &out)) return -1;
    char* end;
    long long n = strtoll(out.c_str(), &end, 10);
    return end == out.c_str() ? -1 : n;
  }
  Result<std::string> make_room(long long conns) override {
    if (kernel()) return kernel_make_room(host_, conns);
    std::string out;
    SDN_TRY(ovs_.appctl({"dpctl/ct-get-maxconns"}, &out));
    long long have = atoll(out.c_str()), want = conns + kRoomHeadroom;
    if (have >= want) return "dpctl/ct-get-maxconns " + std::to_string(have);
    SDN_TRY(ovs_.appctl({"dpctl/ct-set-maxconns", std::to_string(want)}));
    return "dpctl/ct-set-maxconns " + std::to_string(have) + " -> " + std::to_string(want);
  }
  long long offloaded() override {
    std::string out;
    if (!p_.offload_counted || !ovs_.running() || !ovs_.appctl({"dpctl/dump-flows", "type=offloaded"}, &out)) return -1;
    long long n = 0;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  }
  std::string drops_blind_spot() const override { return kernel() ? "" : ring_blind_spot("OVS's port statistics"); }
  // dpctl/show's "lost" (upcalls dropped) and each port's statistics.
  Result<std::map<std::string, long long>> drops() override {
    std::map<std::string, long long> m;
    std::string out;
    if (Status s = ovs_.appctl({"dpctl/show"}, &out); !s) return Status::error("dpctl/show: " + s.message());
    if (size_t p = out.find("lost:"); p != std::string::npos) m["dp_lost"] = atoll(out.c_str() + p + 5);
    for (const std::string& port : ports()) {
      if (Status s = ovs_.vsctl({"get", "Interface", port, "statistics"}, &out); !s)
        return Status::error("statistics of " + port + ": " + s.message());
      util::ovs_port_drops(port, out, &m);
    }
    if (!kernel()) SDN_TRY(add_ring_drops(ovs_.pid(), &m));
    return m;
  }
  // Per port: transmit failures (into the generator's rings) are the
  // generator's; every other drop, error or miss, and upcalls lost, OVS's.
  Result<DropSplit> drop_split() override {
    auto all = drops();
    if (!all) return all.status();
    auto& m = *all;
    DropSplit d;
    d.own += m["dp_lost"];
    for (const std::string& port : ports()) {
      const std::string P = port + "_";
      const long long fail = m.count(P + "ovs_tx_failure_drops") ? m[P + "ovs_tx_failure_drops"] : m[P + "tx_dropped"];
      d.gen += fail;
      for (const auto& [k, v] : m)
        if (k.rfind(P, 0) == 0 && k.rfind(P + "ovs_", 0) != 0) d.own += v;
      d.own -= fail;  // tx_dropped counts the failures too
    }
    return d;
  }

 private:
  bool kernel() const { return p_.kind == DutKind::kOvsKernelTc; }
  std::vector<std::string> ports() const {
    return kernel() ? std::vector<std::string>{site_.ports[0].name, site_.ports[1].name}
                    : std::vector<std::string>{"p0", "p1"};
  }
  static std::string mask(int lcore) {
    char b[32];
    snprintf(b, sizeof b, "0x%llx", 1ull << lcore);
    return b;
  }
  Ovs ovs_;
};

}  // namespace

Result<std::unique_ptr<Dut>> make_dut(const std::string& name, const DutSite& site) {
  const DutProfile* p = find_dut(name);
  if (!p) {
    std::string known;
    for (const std::string& n : dut_names()) known += (known.empty() ? "" : ", ") + n;
    return Status::error("unknown DUT '" + name + "' (known: " + known + ")");
  }
  if (!site.host) return Status::error("no host for DUT " + name);
  const ScenarioKind sc = site.scenario->kind();
  if (!(p->scenarios & bit(sc)))
    return Status::error("the " + std::string(harness::name(sc)) + " scenario is not built for " + name + " (" +
                         dut_list([&](const DutProfile& q) { return (q.scenarios & bit(sc)) != 0; }) + " have it)");
  if (const Overlay* o = site.scenario->overlay(); o && !(p->tunnels & bit(o->tunnel)))
    return Status::error("the " + std::string(harness::name(sc)) + " scenario's " + std::string(harness::name(o->tunnel)) +
                         " tunnel is not built for " + name + " (" +
                         dut_list([&](const DutProfile& q) { return (q.tunnels & bit(o->tunnel)) != 0; }) + " have it)");
  if (!(p->segmentations & bit(site.segmentation)))
    return Status::error("--segmentation host: the endpoints' TSO/GSO packets of up to 64 KB cross the veths whole, and " +
                         name + "'s af_packet ports take frames of at most MTU + 18 bytes (the kernel DUTs " +
                         dut_list([](const DutProfile& q) { return (q.segmentations & bit(Segmentation::kHost)) != 0; }) +
                         " run in host mode; the others in wire mode, the default)");
  for (const DutPort& port : site.ports)
    if (!(p->attaches & bit(port.attach)))
      return Status::error(p->kind == DutKind::kKernelCt
                               ? std::string("the kernel has no DPDK port to attach to memif or a PCI device")
                               : name + " cannot attach a port by " + std::string(harness::name(port.attach)));
  switch (p->kind) {
    case DutKind::kDataplane: return std::unique_ptr<Dut>(new DataplaneDut(*p, site));
    case DutKind::kTestpmdIo: return std::unique_ptr<Dut>(new TestpmdDut(*p, site, "io"));
    case DutKind::kTestpmdRxonly: return std::unique_ptr<Dut>(new TestpmdDut(*p, site, "rxonly"));
    case DutKind::kKernelCt: return std::unique_ptr<Dut>(new KernelCtDut(*p, site));
    case DutKind::kOvsDpdk:
    case DutKind::kOvsDpdkOffload:
    case DutKind::kOvsKernelTc: return std::unique_ptr<Dut>(new OvsDut(*p, site));
  }
  return Status::error("unknown DUT '" + name + "'");
}

}  // namespace harness
