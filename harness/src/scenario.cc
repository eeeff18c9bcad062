// The scenarios (scenario.h): the firewall, and overlay-nat over VXLAN or
// Geneve. Everything a run does differently for a scenario is here.
#include "harness/scenario.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/sweep.h"
#include "testbed/geneve_vtep.h"
#include "testbed/process.h"
#include "testbed/testbed.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;

namespace {

constexpr Overlay kOverlays[] = {
    {Tunnel::kVxlan, "vxlan", "vx100", "VXLAN", 4789, 100, 50, true, "CONFIG_VXLAN",
     "configs/dataplane/overlay-nat.yaml"},
    {Tunnel::kGeneve, "geneve", "gnv100", "Geneve", 6081, 100, 50, false, "CONFIG_GENEVE",
     "configs/dataplane/overlay-nat-geneve.yaml"},
};
static_assert(std::size(kOverlays) == static_cast<size_t>(Tunnel::kCount));

// Client and server on one subnet through the DUT's stateful firewall.
class Firewall final : public Scenario {
 public:
  ScenarioKind kind() const override { return ScenarioKind::kFirewall; }
  Status build_bed(Bed& b) const override {
    if (Status st = b.tb->add_address(b.server, "s0", std::string(Bed::kServerIp) + "/24"); !st)
      return Status::error("testbed: " + st.message());
    return {};
  }
  std::string dataplane_config_for(const std::string& given, const std::string&) const override { return given; }
  std::string_view no_check() const override { return "n/a: no overlay in the firewall scenario"; }
};

// The server behind a tunnel the DUT terminates, the client source-NATed
// to the floating address (README: harness, Scenarios).
class OverlayNat final : public Scenario {
 public:
  explicit OverlayNat(const Overlay& o) : o_(o) {}
  ScenarioKind kind() const override { return ScenarioKind::kOverlayNat; }
  const Overlay* overlay() const override { return &o_; }
  Status build_bed(Bed& b) const override;
  std::string dataplane_config_for(const std::string& given, const std::string& source_dir) const override {
    if (!given.ends_with(kDefaultDataplaneConfig)) return given;
    return source_dir + "/" + std::string(o_.dataplane_config);
  }
  std::string refuse_rfc2544(Proto proto) const override {
    return proto == Proto::kUdp ? "the generator learns each translation from a TCP SYN; not with --proto udp" : "";
  }
  std::string refuse_lab() const override {
    return "built on the namespace testbed only (its server VTEP and routes are made there); a lab's hosts are set "
           "up as they are";
  }
  std::string dir_suffix() const override { return "-" + std::string(name()) + note_tag(); }
  bool server_json() const override { return true; }
  std::vector<std::string> gen_args() const override { return {"--overlay", "--tunnel", std::string(o_.link_type)}; }
  std::string_view no_check() const override { return "n/a: not measured"; }
  std::string_view base_check() const override { return "n/a: checked in this DUT's throughput rows"; }
  Result<Counts> before_run(Transport& tr) const override { return vtep_packets(tr); }
  void check_run(Transport& tr, const Result<Counts>& before, const std::vector<std::string>& server_logs,
                 Row& r) const override;
  void summarize(const std::vector<Row>& reps, Row& base) const override;
  void check_gen(const nlohmann::json& g, int conns, Row& r) const override;

 private:
  Result<Counts> vtep_packets(Transport& tr) const;
  std::string vtep_note(Transport& tr) const;
  // What the rows' evidence adds for a tunnel other than the default.
  bool default_tunnel() const { return o_.tunnel == Tunnel::kVxlan; }
  std::string note() const { return default_tunnel() ? "" : "; tunnel " + std::string(o_.link_type); }
  std::string note_tag() const { return default_tunnel() ? "" : "-" + std::string(o_.link_type); }
  const Overlay& o_;
};

// The server is a remote hypervisor whose VTEP is the kernel's tunnel device
// (Geneve on a kernel without it: the userspace VTEP, testbed/geneve_vtep.h)
// (VNI 100) with the server's address in the overlay; the client is a VM
// whose MTU leaves the tunnel's 50 bytes, reaching the overlay on-link.
// MACs are fixed so that the DUTs' configs can name them: the client's next
// hop toward the overlay (kNextHopMac) is the server's VTEP device for a bump
// in the wire and the DUT's d0 for a router. The device goes with the server
// namespace (Ctrl-C, or `testbed down` after a kill -9).
Status OverlayNat::build_bed(Bed& b) const {
  auto ip = [this](testbed::Netns* ns, std::vector<std::string> args) -> Status {
    args.insert(args.begin(), "ip");
    auto r = testbed::run_capture(args, ns, 10s);
    if (!r) return r.status();
    if (r->status != 0 && r->output.find("Unknown device type") != std::string::npos)
      return Status::error("this kernel has no " + std::string(o_.link_type) + " device (" +
                           std::string(o_.kernel_config) + " is not set, or its module is not loaded: modprobe " +
                           std::string(o_.link_type) + "), so the server's VTEP cannot be made: ip " + args[1] + ": " +
                           r->output.substr(0, 200));
    if (r->status != 0) return Status::error("ip " + args[1] + ": " + r->output.substr(0, 200));
    return {};
  };
  const std::string vx_mtu = std::to_string(b.mtu - o_.overhead), dev(o_.device);
  std::vector<std::string> link = vtep_link_argv(o_, Bed::kNextHopMac, Bed::kRemoteVtep, Bed::kLocalVtep, "s0");
  // Geneve on a kernel without it: the userspace VTEP (testbed/geneve_vtep.h)
  // as the same device, tracked by the bed (killed with the harness).
  auto make_vtep = [&]() -> Status {
    if (o_.tunnel != Tunnel::kGeneve) {
      std::vector<std::string> args(link.begin() + 1, link.end());  // less "ip"
      return ip(b.server, args);
    }
    testbed::GeneveVtepSpec s;
    s.ns = b.server;
    s.kernel_argv = link;
    s.dev = dev;
    s.mac = Bed::kNextHopMac;
    s.vni = o_.vni;
    s.remote = Bed::kLocalVtep;
    s.port = o_.udp_port;
    s.script = testbed::geneve_vtep_script(b.source_dir);
    if (b.log_dir.empty()) return Status::error("the Geneve VTEP: the bed has no log directory");
    s.log_path = b.log_dir + "/geneve-vtep.log";
    auto v = testbed::make_geneve_vtep(s);
    if (!v) return v.status();
    b.vtep = std::move(v.value());
    if (b.vtep.userspace)
      fprintf(stderr, "harness: the server's Geneve VTEP: %s (%s)\n", b.vtep.describe().c_str(), b.vtep.why.c_str());
    return {};
  };
  for (Status st : {ip(b.client, {"link", "set", "dev", "c0", "address", Bed::kClientMac, "mtu", vx_mtu}),
                    ip(b.server, {"link", "set", "dev", "s0", "address", Bed::kServerMac}),
                    b.tb->add_address(b.server, "s0", std::string(Bed::kRemoteVtep) + "/24"),
                    b.tb->add_neighbor(b.server, "s0", Bed::kLocalVtep, Bed::kVtepMac), make_vtep(),
                    ip(b.server, {"link", "set", "dev", dev, "mtu", vx_mtu, "up"}),
                    b.tb->disable_tx_checksum(b.server, dev),
                    b.tb->add_address(b.server, dev, std::string(Bed::kOverlayServerIp) + "/24"),
                    b.tb->add_route(b.server, "203.0.113.0/24", "", dev),
                    b.tb->add_neighbor(b.server, dev, Bed::kFloatingIp, Bed::kClientMac),
                    b.tb->add_route(b.client, "198.51.100.0/24", "", "c0"),
                    b.tb->add_neighbor(b.client, "c0", Bed::kOverlayServerIp, Bed::kNextHopMac)})
    if (!st) return Status::error("overlay-nat testbed: " + st.message());
  b.server_ip = Bed::kOverlayServerIp;
  return {};
}

// The server's VTEP device's packet counters, received and sent.
Result<Scenario::Counts> OverlayNat::vtep_packets(Transport& tr) const {
  const std::string dev(o_.device);
  auto out = tr.capture(Side::kServer, {"ip", "-s", "-j", "link", "show", "dev", dev});
  if (!out) return out.status();
  auto j = nlohmann::json::parse(*out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].contains("stats64"))
    return Status::error("ip -s -j link show " + dev + ": no statistics");
  return Counts{j[0]["stats64"]["rx"]["packets"].get<long long>(), j[0]["stats64"]["tx"]["packets"].get<long long>()};
}

// What a row adds when the server's VTEP is the userspace one (a TAP
// device where the kernel's would be: the kernel has no Geneve).
std::string OverlayNat::vtep_note(Transport& tr) const {
  if (o_.tunnel != Tunnel::kGeneve) return "";
  auto out = tr.capture(Side::kServer, {"ip", "-d", "-j", "link", "show", "dev", std::string(o_.device)});
  if (!out) return "";
  auto j = nlohmann::json::parse(*out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].contains("linkinfo")) return "";
  if (j[0]["linkinfo"].value("info_kind", "") != "tun") return "";
  return "; remote VTEP: userspace (scapy), the kernel has no Geneve";
}

// The evidence in a throughput row: the server's VTEP received
// (encapsulated by the DUT) and sent (for the DUT to decapsulate) packets in
// this run, and each iperf3 server saw its last test come from the floating
// address (the DUT translated). A row without all of it is an error.
void OverlayNat::check_run(Transport& tr, const Result<Counts>& before, const std::vector<std::string>& server_logs,
                           Row& r) const {
  auto after = vtep_packets(tr);
  const std::string note = this->note() + vtep_note(tr);
  std::string why;
  long long rx = 0, tx = 0;
  if (!before || !after) {
    why = "the server's VTEP counters: " + (before ? after.message() : before.message());
  } else {
    rx = after->first - before->first;
    tx = after->second - before->second;
    if (rx <= 0 || tx <= 0) why = "the server's VTEP saw rx +" + std::to_string(rx) + " tx +" + std::to_string(tx);
  }
  int seen = 0;
  for (size_t i = 0; i < server_logs.size() && why.empty(); i++) {
    std::ifstream in(server_logs[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string log = ss.str();
    const size_t at = log.rfind("\"remote_host\":");
    if (at == std::string::npos) continue;
    const size_t q1 = log.find('"', at + 14), q2 = q1 == std::string::npos ? q1 : log.find('"', q1 + 1);
    const std::string peer = q2 == std::string::npos ? "" : log.substr(q1 + 1, q2 - q1 - 1);
    if (peer != Bed::kFloatingIp)
      why = "iperf3 server " + std::to_string(i) + " saw its peer as " + peer + ", not " + Bed::kFloatingIp;
    else
      seen++;
  }
  if (why.empty() && seen == 0) why = "no iperf3 server named its peer";
  if (!why.empty()) {
    r[Col::overlay_check] = "error: " + why + note;
    if (r[Col::status] == "ok") {
      r[Col::status] = "error";
      r[Col::error] = "overlay-nat check: " + why + note;
    }
    return;
  }
  r[Col::overlay_check] = "ok: server VTEP rx +" + std::to_string(rx) + " tx +" + std::to_string(tx) + " packets; " +
                          std::to_string(seen) + " iperf3 servers saw " + Bed::kFloatingIp + note;
}

void OverlayNat::summarize(const std::vector<Row>& reps, Row& base) const {
  int checked = 0;
  std::string bad;
  for (auto& r : reps) {
    if (r[Col::overlay_check].rfind("ok:", 0) == 0) checked++;
    else if (bad.empty()) bad = r[Col::overlay_check];
  }
  base[Col::overlay_check] = (checked ? "ok in " : "error: ok in ") + std::to_string(checked) + " of " +
                             std::to_string(reps.size()) + " repetitions" + (bad.empty() ? "" : "; " + bad);
}

// The generator's server side saw every connection's translation (learnt
// from its SYN) and took no untranslated frame; what it refused, by reason,
// is in the cell either way.
void OverlayNat::check_gen(const nlohmann::json& g, int conns, Row& r) const {
  if (!g.contains("overlay") || !g["overlay"].is_object()) {
    r[Col::overlay_check] = "error: harness-gen reported no overlay counters";
    return;
  }
  const auto& o = g["overlay"];
  const long long learnt = o.value("learnt", 0ll), untranslated = o.value("untranslated", 0ll);
  std::string refused;
  for (const auto& [k, v] : o.items())
    if (k != "learnt") refused += (refused.empty() ? "" : ", ") + k + " " + std::to_string(v.get<long long>());
  const bool ok = learnt >= conns && untranslated == 0;
  r[Col::overlay_check] = std::string(ok ? "ok: " : "error: ") + std::to_string(learnt) + " translations to " +
                          Bed::kFloatingIp + " learnt in " + std::string(o_.label) + " VNI " + std::to_string(o_.vni) +
                          " for " + std::to_string(conns) + " connections; refused: " + refused;
}

const Firewall kFirewall;
const OverlayNat kOverlayNat[] = {OverlayNat(kOverlays[0]), OverlayNat(kOverlays[1])};

}  // namespace

void Scenario::check_gen(const nlohmann::json&, int, Row& r) const { r[Col::overlay_check] = no_check(); }

std::vector<std::string> vtep_link_argv(const Overlay& o, const std::string& mac, const std::string& local,
                                        const std::string& remote, const std::string& dev) {
  std::vector<std::string> a = {"ip",   "link", "add", std::string(o.device), "address", mac,
                                "type", std::string(o.link_type), "id", std::to_string(o.vni)};
  if (o.binds_underlay) a.insert(a.end(), {"local", local});
  a.insert(a.end(), {"remote", remote, "dstport", std::to_string(o.udp_port)});
  if (o.binds_underlay) a.insert(a.end(), {"dev", dev});
  return a;
}

const Overlay& overlay_of(Tunnel t) { return kOverlays[static_cast<size_t>(t)]; }

const Scenario& scenario_of(ScenarioKind kind, Tunnel tunnel) {
  if (kind == ScenarioKind::kFirewall) return kFirewall;
  return kOverlayNat[static_cast<size_t>(tunnel)];
}

}  // namespace harness
