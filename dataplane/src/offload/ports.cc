#include <rte_ethdev.h>

#include <dirent.h>

#include <cstring>
#include <fstream>

#include "dataplane/nic_model.h"
#include "dataplane/offload.h"

namespace dp {

Status start_ports(OffloadProvider& off, const std::vector<uint16_t>& ports, rte_mempool* pool) {
  if (Status s = off.prepare(ports); !s) return s;
  for (uint16_t p : ports) {
    rte_eth_conf conf{};
    std::string where = "port " + std::to_string(p) + ": ";
    if (int rc = rte_eth_dev_configure(p, 1, 1, &conf); rc != 0) return Status::error(where + "configure: " + strerror(-rc));
    if (int rc = rte_eth_rx_queue_setup(p, 0, 128, SOCKET_ID_ANY, nullptr, pool); rc != 0)
      return Status::error(where + "rx queue: " + strerror(-rc));
    if (int rc = rte_eth_tx_queue_setup(p, 0, 128, SOCKET_ID_ANY, nullptr); rc != 0)
      return Status::error(where + "tx queue: " + strerror(-rc));
    if (Status s = off.configure_port(p); !s) return Status::error(where + s.message());
  }
  const FlowApi& api = off.api();
  for (size_t i : off.start_order(ports.size())) {
    const uint16_t p = ports[i];
    if (int rc = api.dev_start(api.self, p); rc != 0) {
      std::string why = off.model() ? off.model()->last_error() : std::string(strerror(-rc));
      return Status::error("port " + std::to_string(p) + ": start: " + why);
    }
  }
  return {};
}

void stop_ports(OffloadProvider& off, const std::vector<uint16_t>& ports) {
  const FlowApi& api = off.api();
  const std::vector<size_t> order = off.start_order(ports.size());
  for (size_t k = order.size(); k-- > 0;) api.dev_stop(api.self, ports[order[k]]);
  off.on_ports_stopped();
}

std::string pci_firmware(const std::string& devargs, const std::string& root) {
  const std::string addr = devargs.substr(0, devargs.find(','));
  if (addr.empty() || addr.find('/') != std::string::npos || addr.find("..") != std::string::npos) return "";
  const std::string dir = root + "/bus/pci/devices/" + addr + "/infiniband";
  DIR* d = opendir(dir.c_str());
  if (!d) return "";
  std::string fw;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/fw_ver");
    if (std::getline(in, fw) && !fw.empty()) break;
  }
  closedir(d);
  return fw;
}

std::string hws_did_not_start_before() {
  const char* v = getenv(kHwsDidNotStartEnv);
  return v ? v : "";
}

std::string engine_devargs(const std::string& devargs, const std::string& engine, const std::string& fw,
                           std::string* why) {
  if (devargs.find("dv_flow_en=") != std::string::npos) {
    *why = "dv_flow_en as its devargs set it";
    return devargs;
  }
  const std::string before = hws_did_not_start_before();
  const bool hws = engine == "hws" || (engine == "auto" && firmware_has_hws(fw) && before.empty());
  if (engine == "hws") *why = "offload.engine: hws";
  else if (engine == "auto" && !before.empty())
    *why = "auto: hardware steering did not start on the last probe (" + before + "): DV software steering";
  else if (engine == "sws") *why = "offload.engine: sws";
  else if (fw.empty()) *why = "auto: no mlx5 firmware version found for it: the driver's default (dv_flow_en=1)";
  else *why = "auto: firmware " + fw + (hws ? " has" : " has no") + " hardware steering (xx.35.1012 or newer)";
  if (engine == "auto" && !hws && before.empty()) return devargs;  // the driver's default: DV software steering
  return devargs + (hws ? ",dv_flow_en=2" : ",dv_flow_en=1");
}

}  // namespace dp
