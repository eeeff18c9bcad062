#include "ovs.h"

#include <thread>

#include "harness/sweep.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;

namespace {
constexpr const char* kVswitchdDpdk = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";
}

// Debian's DPDK build of ovs-vswitchd, else one on PATH built with DPDK;
// the kernel datapath takes the one on PATH.
Result<std::string> Ovs::vswitchd() {
  if (!spec_.dpdk) return std::string("ovs-vswitchd");
  if (spec_.host->run({"test", "-x", kVswitchdDpdk}, nullptr, 10s)) return std::string(kVswitchdDpdk);
  std::string v;
  if (spec_.host->run({"ovs-vswitchd", "--version"}, &v, 10s) && v.find("DPDK") != std::string::npos)
    return std::string("ovs-vswitchd");
  return Status::error(std::string(kVswitchdDpdk) + " missing on " + spec_.host->describe() +
                       " (Debian package openvswitch-switch-dpdk), and the ovs-vswitchd on PATH has no DPDK");
}

Status Ovs::start(const OvsSpec& spec) {
  spec_ = spec;
  DutHost& h = *spec_.host;
  run_ = h.work_dir() + "/ovs";
  const std::string db = run_ + "/conf.db", sock = run_ + "/db.sock";
  auto vswitchd_path = vswitchd();
  if (!vswitchd_path) return vswitchd_path.status();
  SDN_TRY(h.run({"sh", "-c", "mkdir -p \"$1\" && rm -f \"$1/conf.db\"", "sh", run_}, nullptr, 20s));
  SDN_TRY(cmd({"ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema"}));
  std::vector<std::string> env = {"env", "OVS_RUNDIR=" + run_, "OVS_DBDIR=" + run_, "OVS_LOGDIR=" + run_,
                                  "OVS_SYSCONFDIR=" + run_};
  std::vector<std::string> a = env;
  a.insert(a.end(), {"ovsdb-server", db, "--remote=punix:" + sock, "--unixctl=" + run_ + "/ovsdb.ctl"});
  auto d = h.spawn(a, spec_.log_dir + "/ovsdb-server.out", false);
  if (!d) return d.status();
  db_ = std::move(d.value());
  Status up = Status::error("the OVS database on " + h.describe() + " did not answer");
  for (int i = 0; i < 50 && !up; i++) {
    up = h.run({"test", "-S", sock}, nullptr, 10s);
    if (!up) std::this_thread::sleep_for(100ms);
  }
  if (!up) return up;
  std::vector<std::string> init = {"--no-wait", "init", "--", "set", "Open_vSwitch", "."};
  if (spec_.dpdk) {
    std::string extra = (spec_.pci ? "" : "--no-pci ") + std::string("--file-prefix ") + spec_.file_prefix;
    if (!util::huge_ok()) extra += " --no-huge -m 1024";
    SDN_TRY(h.note_dpdk_prefix(spec_.file_prefix));
    init.insert(init.end(), {"other_config:dpdk-init=true", "other_config:dpdk-extra=" + extra});
    if (!spec_.lcore_mask.empty()) init.push_back("other_config:dpdk-lcore-mask=" + spec_.lcore_mask);
    if (!spec_.pmd_mask.empty()) init.push_back("other_config:pmd-cpu-mask=" + spec_.pmd_mask);
  }
  if (spec_.hw_offload) init.push_back("other_config:hw-offload=true");
  if (spec_.hw_offload && !spec_.dpdk) init.push_back("other_config:tc-policy=none");
  if (Status s = vsctl(init); !s) return Status::error("ovs-vsctl init: " + s.message());
  a = env;
  a.insert(a.end(), {*vswitchd_path, "unix:" + sock, "--unixctl=" + run_ + "/vswitchd.ctl",
                     "--log-file=" + run_ + "/ovs-vswitchd.log"});
  log_ = spec_.log_dir + "/ovs-vswitchd.out";
  auto v = h.spawn(a, log_, true);
  if (!v) return v.status();
  vs_ = std::move(v.value());
  return spec_.overlay ? overlay_bridges() : firewall_bridge();
}

std::vector<std::string> Ovs::dpdk_port(const std::string& bridge, int i) const {
  const std::string p = "p" + std::to_string(i);
  std::vector<std::string> a = {"--", "add-port", bridge, p, "--", "set", "Interface", p, "type=dpdk",
                                "options:dpdk-devargs=" + spec_.ports[i], "ofport_request=" + std::to_string(i + 1)};
  if (spec_.mtu > 0) a.push_back("mtu_request=" + std::to_string(spec_.mtu));
  return a;
}

Status Ovs::firewall_bridge() {
  DutHost& h = *spec_.host;
  std::vector<std::string> br = {"add-br", "br0", "--", "set", "bridge", "br0",
                                 spec_.dpdk ? "datapath_type=netdev" : "datapath_type=system"};
  for (size_t i = 0; i < 2; i++) {
    if (spec_.dpdk) {
      auto p = dpdk_port("br0", static_cast<int>(i));
      br.insert(br.end(), p.begin(), p.end());
      continue;
    }
    br.insert(br.end(), {"--", "add-port", "br0", spec_.ports[i], "--", "set", "Interface", spec_.ports[i],
                         "ofport_request=" + std::to_string(i + 1)});
  }
  if (Status s = vsctl(br); !s)
    return Status::error("OVS bridge on " + h.describe() + ": " + s.message() + "; " + util::tail(util::slurp(log_)));
  const std::string flows = run_ + "/flows.txt";
  SDN_TRY(h.write_file(flows, util::ovs_firewall_flows()));
  if (Status s = cmd({"ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "unix:" + run_ + "/br0.mgmt", flows}); !s)
    return Status::error("ovs-ofctl replace-flows: " + s.message());
  return {};
}

// OVS's native tunnelling: a packet output to the tunnel port gets its outer
// headers from the route to the remote VTEP (OVS learns it from the kernel
// routes of br-phy's address) and the neighbour set here, and leaves through
// br-phy; a VXLAN (Geneve) packet reaching br-phy's MAC and the local VTEP is
// popped into br-int's tunnel port (OpenFlow port 3, named as the kernel's
// VTEP device is).
Status Ovs::overlay_bridges() {
  if (!spec_.dpdk) return Status::error("the overlay-nat scenario is built for OVS's userspace datapath only");
  DutHost& h = *spec_.host;
  std::vector<std::string> br = {"add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                                 std::string("other-config:hwaddr=") + Bed::kVtepMac};
  auto p1 = dpdk_port("br-phy", 1);
  br.insert(br.end(), p1.begin(), p1.end());
  br.insert(br.end(), {"--", "add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev"});
  auto p0 = dpdk_port("br-int", 0);
  br.insert(br.end(), p0.begin(), p0.end());
  const Overlay& o = *spec_.overlay;
  const std::string port(o.device);
  br.insert(br.end(), {"--", "add-port", "br-int", port, "--", "set", "Interface", port,
                       "type=" + std::string(o.link_type), std::string("options:remote_ip=") + Bed::kRemoteVtep,
                       std::string("options:local_ip=") + Bed::kLocalVtep, "options:key=" + std::to_string(o.vni),
                       "options:dst_port=" + std::to_string(o.udp_port), "ofport_request=3"});
  if (Status s = vsctl(br); !s)
    return Status::error("OVS bridges on " + h.describe() + ": " + s.message() + "; " + util::tail(util::slurp(log_)));
  for (const auto& c : std::vector<std::vector<std::string>>{
           {"ip", "addr", "add", std::string(Bed::kLocalVtep) + "/24", "dev", "br-phy"},
           {"ip", "link", "set", "dev", "br-phy", "up"}})
    if (Status s = h.run(c, nullptr, 10s); !s) return Status::error("OVS's br-phy on " + h.describe() + ": " + s.message());
  std::string routes;
  for (int i = 0; i < 50; i++) {
    if (Status s = appctl({"ovs/route/show"}, &routes); !s) return s;
    if (routes.find("192.0.2.0/24 dev br-phy") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  if (routes.find("192.0.2.0/24 dev br-phy") == std::string::npos)
    return Status::error("OVS did not learn the underlay route on br-phy (ovs/route/show: " + util::tail(routes, 300) + ")");
  if (Status s = appctl({"tnl/neigh/set", "br-phy", Bed::kRemoteVtep, Bed::kServerMac}); !s)
    return Status::error("tnl/neigh/set: " + s.message());
  const std::string flows = run_ + "/flows.txt";
  SDN_TRY(h.write_file(flows, util::ovs_overlay_nat_flows()));
  if (Status s = cmd({"ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "unix:" + run_ + "/br-int.mgmt", flows}); !s)
    return Status::error("ovs-ofctl replace-flows: " + s.message());
  return {};
}

void Ovs::stop() {
  vs_ = Job();
  db_ = Job();
}

Status Ovs::cmd(std::vector<std::string> argv, std::string* out, std::chrono::milliseconds timeout) {
  argv.insert(argv.begin(), {"env", "OVS_RUNDIR=" + run_, "OVS_DBDIR=" + run_, "OVS_LOGDIR=" + run_});
  return spec_.host->run(argv, out, timeout);
}

Status Ovs::vsctl(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), {"ovs-vsctl", "--db=unix:" + run_ + "/db.sock", "--timeout=60"});
  return cmd(args, out, 90s);
}

Status Ovs::appctl(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), {"ovs-appctl", "-t", run_ + "/vswitchd.ctl"});
  return cmd(args, out);
}

}  // namespace harness
