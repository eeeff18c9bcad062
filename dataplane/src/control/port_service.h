// The ports service: the config's DPDK ports (found by name), the mbuf
// pool they receive into, their set-up, start in the offload's order and
// stop in the reverse, and their counters (ethdev, af_packet ring drops,
// the kernel's reassembly failures). It owns this state; the daemon calls
// it while starting and stopping, the stats service reads its counters.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/config.h"
#include "dataplane/flow_api.h"
#include "dataplane/offload.h"
#include "sdn/status.h"

struct rte_mempool;

namespace dp {

using sdn::Status;

class PortService {
 public:
  // `ports`: the running config's (its port list never changes while the
  // daemon runs: a reload that changes it is refused).
  explicit PortService(const std::vector<PortConfig>& ports) : cfg_(ports) {}
  // The DPDK ports of the config, by name; the pool every rx queue takes.
  Status open(const WorkerConfig& w);
  // Queues (one rx and tx per worker), MTU, RSS, then the offload's
  // rte_flow_configure for it.
  Status setup(size_t i, uint16_t queues, OffloadProvider& offload);
  Status start(size_t i, const FlowApi& api);
  // What start() got to, in the reverse order (representors before the
  // transfer proxy, mlx5_trigger.c:1391-1420); promiscuous mode as it was
  // found; every port closed.
  void stop(const FlowApi& api);

  const std::vector<uint16_t>& ids() const { return ids_; }
  const uint16_t* index() const { return index_.data(); }  // DPDK port id -> config index
  rte_mempool* pool() const { return pool_; }
  size_t size() const { return ids_.size(); }

  // Each port's counters as NAME_rx_packets, NAME_rx_missed, ... (and the
  // af_packet ring drops, the kernel's reassembly failures): the control
  // thread only (DPDK calls).
  std::vector<std::pair<std::string, uint64_t>> counters();
  // Reads the af_packet rings' drops and the netns' ReasmFails (the
  // control loop, once a second).
  void sample_drops();

 private:
  const std::vector<PortConfig>& cfg_;
  rte_mempool* pool_ = nullptr;
  std::vector<uint16_t> ids_;
  std::vector<uint16_t> index_;     // DPDK port id -> index in the config's ports
  std::vector<size_t> started_;     // config indexes of the started ports, in start order
  std::vector<bool> promisc_on_;    // we turned it on: turn it off on stop
  std::vector<int> ifindex_;        // af_packet ports' interfaces (0 otherwise)
  std::mutex mu_;                   // what sample_drops() writes and counters() reads
  std::vector<uint64_t> ring_drops_;     // af_packet PACKET_STATISTICS tp_drops, summed
  std::vector<uint64_t> ring_rollover_;  // af_packet PACKET_ROLLOVER_STATS tp_all (rolled to another queue)
  uint64_t reasm_fails_ = 0;             // the netns' IP ReasmFails (af_packet ports only)
};

}  // namespace dp
