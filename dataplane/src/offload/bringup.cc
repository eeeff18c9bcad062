// What an mlx5 port needs before the offload can come up, read from the
// host (devlink, sysfs, tc, ovs-vsctl) before EAL probes it: each fact a
// line, each missing one with the command that fixes it. See offload.h.
#include <dirent.h>

#include <nlohmann/json.hpp>

#include "dataplane/offload.h"
#include "dataplane/nic_model.h"

namespace dp {

namespace {

// The value of key=VALUE in a devargs string ("" if absent).
std::string devarg(const std::string& devargs, const std::string& key) {
  size_t at = 0;
  while ((at = devargs.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || devargs[at - 1] == ',') {
      size_t v = at + key.size() + 1;
      return devargs.substr(v, devargs.find(',', v) - v);
    }
    at++;
  }
  return "";
}

nlohmann::json parse(const std::string& s) { return nlohmann::json::parse(s, nullptr, false); }

}  // namespace

std::vector<BringupFact> bringup_facts(const std::string& devargs, const std::string& sysfs_root, const RunArgv& run) {
  std::vector<BringupFact> v;
  const std::string addr = devargs.substr(0, devargs.find(','));
  const std::string dev = "pci/" + addr;
  const bool hws = devarg(devargs, "dv_flow_en") == "2";
  // E-Switch mode (devlink dev eswitch show).
  std::string out;
  bool switchdev = false, mode_known = false;
  if (run({"devlink", "-j", "dev", "eswitch", "show", dev}, &out) == 0) {
    nlohmann::json j = parse(out);
    if (j.is_object() && j.contains("dev") && j["dev"].is_object() && j["dev"].contains(dev) &&
        j["dev"][dev].is_object() && j["dev"][dev].contains("mode") && j["dev"][dev]["mode"].is_string()) {
      const std::string mode = j["dev"][dev]["mode"].get<std::string>();
      mode_known = true;
      switchdev = mode == "switchdev";
      v.push_back({"e-switch mode " + mode +
                       (switchdev ? ": the ports' transfer proxy and representors (domain transfer)"
                                  : ": each port its own NIC Rx domain (for the e-switch: devlink dev eswitch set " +
                                        dev + " mode switchdev)"),
                   true});
    }
  }
  if (!mode_known)
    v.push_back({"e-switch mode unknown (devlink -j dev eswitch show " + dev + " gave nothing readable; is iproute2's "
                 "devlink installed and the function bound to mlx5_core?)",
                 false});
  // esw_port_metadata: HWS on an E-Switch refuses to probe without it
  // (linux/mlx5_os.c:1630-1636).
  if (switchdev) {
    bool meta = false, known = false;
    if (run({"devlink", "-j", "dev", "param", "show", dev, "name", "esw_port_metadata"}, &out) == 0) {
      nlohmann::json j = parse(out);
      if (j.is_object() && j.contains("param") && j["param"].is_object() && j["param"].contains(dev) &&
          j["param"][dev].is_array())
        for (const auto& p : j["param"][dev])
          if (p.is_object() && p.contains("name") && p["name"] == "esw_port_metadata" && p.contains("values") &&
              p["values"].is_array())
            for (const auto& x : p["values"])
              if (x.is_object() && x.contains("value") && x["value"].is_boolean()) {
                known = true;
                meta = x["value"].get<bool>();
              }
    }
    const std::string fix = "devlink dev param set " + dev + " name esw_port_metadata value true cmode runtime";
    if (!known)
      v.push_back({"esw_port_metadata unknown (devlink gave nothing readable); HWS on an e-switch needs it: " + fix,
                   false});
    else
      v.push_back({std::string("esw_port_metadata ") + (meta ? "true" : "false") +
                       (meta ? "" : (hws ? ": HWS on an e-switch refuses to probe without it (mlx5_os.c:1630-1636): "
                                         : ": HWS would need it: ") +
                                        fix + " (before the e-switch goes to switchdev)"),
                   meta || !hws});
    // dv_xmeta_en: 0 or 4 with HWS on an E-Switch (mlx5_os.c:1657-1664).
    const std::string xm = devarg(devargs, "dv_xmeta_en");
    if (hws && !xm.empty() && xm != "0" && xm != "4")
      v.push_back({"devargs dv_xmeta_en=" + xm + ": HWS on an e-switch takes only 0 or 4 (mlx5_os.c:1657-1664): "
                   "drop it from the devargs",
                   false});
  }
  // Kernel datapaths that compete in the FDB: TC rules on the function's
  // netdevs (a BlueField image's OVS bridges put theirs there).
  const std::string net = sysfs_root + "/bus/pci/devices/" + addr + "/net";
  std::vector<std::string> ifs;
  if (DIR* d = opendir(net.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ifs.push_back(e->d_name);
    closedir(d);
  }
  for (const auto& ifn : ifs) {
    if (run({"tc", "-j", "filter", "show", "dev", ifn, "ingress"}, &out) != 0) continue;
    nlohmann::json j = parse(out);
    if (j.is_array() && !j.empty())
      v.push_back({"netdev " + ifn + " has " + std::to_string(j.size()) +
                       " TC ingress filter entries: the kernel offloads them into the same FDB (tc filter del dev " +
                       ifn + " ingress)",
                   false});
  }
  if (run({"ovs-vsctl", "--timeout=2", "list-br"}, &out) == 0 && !out.empty()) {
    std::string brs;
    for (char c : out) brs += c == '\n' ? ' ' : c;
    while (!brs.empty() && brs.back() == ' ') brs.pop_back();
    v.push_back({"kernel Open vSwitch bridges: " + brs +
                     " (a BlueField image's defaults on p0/pf0hpf; their rules compete in the FDB: ovs-vsctl del-br "
                     "BRIDGE, or systemctl disable --now openvswitch-switch)",
                 false});
  }
  v.push_back({std::string("start order: ") +
                   (switchdev ? "the transfer proxy first, then its representors, whatever the config order"
                              : mode_known ? "config order (no e-switch)"
                                           : "the transfer proxy first if there is an e-switch (rte_flow_pick_transfer_proxy "
                                             "decides), else config order"),
               true});
  v.push_back({"conntrack register (meter colour, mlx5_flow.c:1268-1274): not readable from outside; the conntrack "
               "probe at start finds out (strategy flows, with the driver's reason, where it is missing)",
               true});
  return v;
}

}  // namespace dp
