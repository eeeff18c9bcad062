// What a DUT host is, recorded before any traffic, and what each DUT profile
// needs of it. The facts come from commands run on the DUT host (in the
// testbed's DUT namespace, or over SSH); the parsers and the checks are pure
// functions, tested on outputs captured from real hosts.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace harness {

struct NicFacts {
  std::string iface;
  std::string driver, driver_version, firmware, bus;  // ethtool -i
  std::string model;                                   // devlink dev info: fw.psid / board.id, else "n/a: ..."
  std::string eswitch_mode;                            // devlink dev eswitch show: legacy, switchdev, or "n/a: ..."
  int mtu = -1;
  std::map<std::string, std::string> features;  // ethtool -k: name -> "on", "off", "on [fixed]", ...
  bool feature_on(const std::string& f) const {
    auto it = features.find(f);
    return it != features.end() && it->second.rfind("on", 0) == 0;
  }
};

struct HostFacts {
  std::string kernel;    // uname -r
  int cores = -1;        // nproc
  std::string governor;  // cpufreq scaling governor of cpu0, or "n/a: ..."
  std::vector<NicFacts> nics;
  std::map<std::string, bool> modules;  // kernel module -> loaded or loadable
  // One line per fact, for the run's machine info.
  std::string describe() const;
};

// Parsers of the commands' outputs.
void parse_ethtool_i(const std::string& out, NicFacts* n);
std::map<std::string, std::string> parse_ethtool_k(const std::string& out);
// `devlink -j dev eswitch show DEV`: the mode, or "n/a: why".
std::string parse_eswitch_json(const std::string& out);
// `devlink -j dev info DEV`: the board's part number (fw.psid or board.id)
// and the running firmware, or "n/a: why".
std::string parse_devlink_info_json(const std::string& out);
// ethtool's bus-info names a PCI device ("0000:08:00.0").
bool is_pci_bus(const std::string& bus);
// "6.1.0-18-amd64" -> {6, 1}; {-1, -1} when it is not a version.
std::pair<int, int> kernel_version(const std::string& release);

// Runs argv on the DUT host; its output, or why it could not run.
using HostRunner = std::function<sdn::Result<std::string>(const std::vector<std::string>& argv)>;
// Collects the facts for these data-plane interfaces. A fact a command
// cannot give is a named reason, never left out.
HostFacts gather_host_facts(const HostRunner& run, const std::vector<std::string>& ifaces);

// The hardware DUT profiles' preconditions: what is missing, one item each
// (empty when the profile can run). `ovs` holds OVS's other_config as set for
// the profile (hw-offload, tc-policy).
std::vector<std::string> missing_for(const std::string& profile, const HostFacts& f,
                                     const std::map<std::string, std::string>& ovs = {});

}  // namespace harness
