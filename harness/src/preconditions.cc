#include "harness/preconditions.h"
#include "harness/profiles.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace harness {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = s.find_first_not_of(" \t");
  return i == std::string::npos ? "" : s.substr(i);
}

std::string first_line(const std::string& s) { return trim(s.substr(0, s.find('\n'))); }

// A command's failure as a reason: its first line, or the runner's error.
std::string why(const sdn::Result<std::string>& r, const std::string& what) {
  std::string m = r.ok() ? first_line(*r) : first_line(r.message());
  return "n/a: " + what + ": " + (m.empty() ? "failed" : m);
}

}  // namespace

void parse_ethtool_i(const std::string& out, NicFacts* n) {
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    size_t c = l.find(':');
    if (c == std::string::npos) continue;
    std::string k = trim(l.substr(0, c)), v = trim(l.substr(c + 1));
    if (k == "driver") n->driver = v;
    else if (k == "version") n->driver_version = v;
    else if (k == "firmware-version") n->firmware = v;
    else if (k == "bus-info") n->bus = v;
  }
}

std::map<std::string, std::string> parse_ethtool_k(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("Features for ", 0) == 0) continue;
    size_t c = l.find(':');
    if (c == std::string::npos) continue;
    std::string k = trim(l.substr(0, c)), v = trim(l.substr(c + 1));
    if (!k.empty() && (v.rfind("on", 0) == 0 || v.rfind("off", 0) == 0)) m[k] = v;
  }
  return m;
}

std::string parse_eswitch_json(const std::string& out) {
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("dev") || !j["dev"].is_object() || j["dev"].empty())
    return "n/a: devlink gave no eswitch";
  const auto& d = j["dev"].begin().value();
  return d.is_object() && d.contains("mode") ? d["mode"].get<std::string>() : "n/a: devlink gave no eswitch mode";
}

std::string parse_devlink_info_json(const std::string& out) {
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("info") || !j["info"].is_object() || j["info"].empty())
    return "n/a: devlink gave no device info";
  const auto& d = j["info"].begin().value();
  auto ver = [&](const char* group, const char* key) -> std::string {
    if (d.contains("versions") && d["versions"].contains(group) && d["versions"][group].contains(key))
      return d["versions"][group][key].get<std::string>();
    return "";
  };
  std::string part = ver("fixed", "fw.psid");
  if (part.empty()) part = ver("fixed", "board.id");
  std::string fw = ver("running", "fw.version");
  if (fw.empty()) fw = ver("running", "fw");
  std::string s = d.value("driver", "");
  if (!part.empty()) s += (s.empty() ? "" : " ") + part;
  if (!fw.empty()) s += (s.empty() ? "" : " ") + std::string("fw ") + fw;
  return s.empty() ? "n/a: devlink gave no part number or firmware" : s;
}

bool is_pci_bus(const std::string& bus) {
  return bus.size() > 5 && bus.find(':') != std::string::npos && bus.find('.') != std::string::npos;
}

std::pair<int, int> kernel_version(const std::string& release) {
  int a = -1, b = -1;
  char dot = 0;
  std::istringstream in(release);
  if (!(in >> a >> dot >> b) || dot != '.' || a < 0 || b < 0) return {-1, -1};
  return {a, b};
}

HostFacts gather_host_facts(const HostRunner& run, const std::vector<std::string>& ifaces) {
  HostFacts f;
  auto r = run({"uname", "-r"});
  f.kernel = r.ok() ? first_line(*r) : why(r, "uname -r");
  r = run({"nproc"});
  f.cores = r.ok() ? atoi(r->c_str()) : -1;
  r = run({"cat", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"});
  f.governor = r.ok() ? first_line(*r) : "n/a: no cpufreq on this host";
  for (const char* m : {"openvswitch", "act_ct", "cls_flower"}) f.modules[m] = run({"modprobe", "-n", "-q", m}).ok();
  for (const auto& ifc : ifaces) {
    NicFacts n;
    n.iface = ifc;
    r = run({"ethtool", "-i", ifc});
    if (r.ok()) parse_ethtool_i(*r, &n);
    else n.driver = why(r, "ethtool -i");
    r = run({"ethtool", "-k", ifc});
    if (r.ok()) n.features = parse_ethtool_k(*r);
    r = run({"ip", "-j", "link", "show", "dev", ifc});
    if (r.ok()) {
      auto j = nlohmann::json::parse(*r, nullptr, false);
      if (j.is_array() && !j.empty() && j[0].contains("mtu")) n.mtu = j[0]["mtu"].get<int>();
    }
    if (is_pci_bus(n.bus)) {
      r = run({"devlink", "-j", "dev", "eswitch", "show", "pci/" + n.bus});
      n.eswitch_mode = r.ok() ? parse_eswitch_json(*r) : why(r, "devlink dev eswitch show");
      r = run({"devlink", "-j", "dev", "info", "pci/" + n.bus});
      n.model = r.ok() ? parse_devlink_info_json(*r) : why(r, "devlink dev info");
    } else {
      n.eswitch_mode = "n/a: not a PCI device (bus-info '" + n.bus + "')";
      n.model = "n/a: not a PCI device";
    }
    f.nics.push_back(n);
  }
  return f;
}

std::string HostFacts::describe() const {
  std::ostringstream o;
  o << "kernel: " << kernel << "\ncores: " << cores << "\ncpu governor: " << governor << "\nmodules:";
  for (auto& [m, ok] : modules) o << " " << m << "=" << (ok ? "available" : "missing");
  o << "\n";
  for (const auto& n : nics) {
    o << n.iface << ": driver " << n.driver << " " << n.driver_version << ", firmware "
      << (n.firmware.empty() ? "n/a" : n.firmware) << ", bus " << (n.bus.empty() ? "n/a" : n.bus) << ", model "
      << n.model << ", eswitch " << n.eswitch_mode << ", mtu " << n.mtu << ", offloads:";
    for (const char* k : {"rx-checksumming", "tx-checksumming", "tcp-segmentation-offload",
                          "generic-receive-offload", "large-receive-offload", "hw-tc-offload"}) {
      auto it = n.features.find(k);
      o << " " << k << "=" << (it == n.features.end() ? "n/a" : it->second);
    }
    o << "\n";
  }
  return o.str();
}

std::vector<std::string> missing_for(const std::string& profile, const HostFacts& f,
                                     const std::map<std::string, std::string>& ovs) {
  std::vector<std::string> miss;
  auto ovs_is = [&](const std::string& k) {
    auto it = ovs.find(k);
    return it == ovs.end() ? std::string() : it->second;
  };
  auto nic_checks = [&](bool tc) {
    if (f.nics.empty()) miss.push_back("no data-plane interface named for the DUT host");
    for (const auto& n : f.nics) {
      if (n.driver != "mlx5_core")
        miss.push_back(n.iface + ": driver " + (n.driver.empty() ? "unknown" : n.driver) +
                       ", not mlx5_core (a ConnectX port is needed for conntrack offload)");
      if (n.eswitch_mode != "switchdev")
        miss.push_back(n.iface + ": eswitch mode " + n.eswitch_mode +
                       ", not switchdev (devlink dev eswitch set pci/BUS mode switchdev)");
      if (tc && !n.feature_on("hw-tc-offload"))
        miss.push_back(n.iface + ": hw-tc-offload is not on (ethtool -K " + n.iface + " hw-tc-offload on)");
    }
  };
  const DutProfile* p = find_dut(profile);
  const DutKind kind = p ? p->kind : DutKind::kDataplane;
  if (kind == DutKind::kOvsDpdkOffload) {
    nic_checks(false);
    if (ovs_is("hw-offload") != "true") miss.push_back("OVS other_config:hw-offload is not true");
  } else if (kind == DutKind::kOvsKernelTc) {
    auto [maj, min] = kernel_version(f.kernel);
    if (maj < 0) miss.push_back("kernel version unknown (" + f.kernel + ")");
    else if (maj < 5 || (maj == 5 && min < 6))
      miss.push_back("kernel " + f.kernel + " is older than 5.6 (conntrack offload through TC needs 5.6)");
    for (const char* m : {"openvswitch", "act_ct", "cls_flower"}) {
      auto it = f.modules.find(m);
      if (it == f.modules.end() || !it->second) miss.push_back(std::string("kernel module ") + m + " is not available");
    }
    nic_checks(true);
    if (ovs_is("hw-offload") != "true") miss.push_back("OVS other_config:hw-offload is not true");
    std::string tp = ovs_is("tc-policy");
    if (tp != "none" && tp != "skip_sw" && tp != "skip_hw")
      miss.push_back("OVS other_config:tc-policy is not set (none, skip_sw or skip_hw)");
  }
  return miss;
}

}  // namespace harness
