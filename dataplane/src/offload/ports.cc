#include <rte_ethdev.h>

#include <cstring>

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
  for (uint16_t p : ports) {
    if (int rc = api.dev_start(api.self, p); rc != 0) {
      std::string why = off.nic() ? off.nic()->last_error() : std::string(strerror(-rc));
      return Status::error("port " + std::to_string(p) + ": start: " + why);
    }
  }
  return {};
}

void stop_ports(OffloadProvider& off, const std::vector<uint16_t>& ports) {
  const FlowApi& api = off.api();
  for (size_t i = ports.size(); i-- > 0;) api.dev_stop(api.self, ports[i]);
}

}  // namespace dp
