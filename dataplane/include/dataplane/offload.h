// The hardware-offload seam. Providers run on the control path only: they
// get the rule set and the tracker's events and program the NIC; never
// called per packet. (The emulated provider's NIC model is the exception by
// design: it is the NIC, and runs in the workers' rx path.)
//
// Providers: `none`; `emulated` (EmuNic, a software model of the NIC, for
// machines without one); `rte_flow` (mlx5, DPDK 22.11 template/async API).
// `auto` probes the ports and takes rte_flow when they can do it, else none.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"

namespace dp {

class EmuNic;

// What the daemon lets a provider touch.
struct OffloadHost {
  std::vector<uint16_t> port_ids;  // DPDK port id of each configured port
  std::vector<ctrack::Tracker*> shards;  // one per worker = rx queue
  std::atomic<const HwMarkTable*>* marks = nullptr;  // publish here (the host frees old tables)
};

struct OffloadStats {
  std::vector<std::pair<std::string, uint64_t>> counters;  // name, value
  uint64_t get(const std::string& name) const {
    for (const auto& [k, v] : counters)
      if (k == name) return v;
    return 0;
  }
};

class OffloadProvider {
 public:
  virtual ~OffloadProvider() = default;
  virtual const char* name() const = 0;
  // Between rte_eth_dev_configure and rte_eth_dev_start of each port.
  virtual Status configure_port(uint16_t /*port_id*/) { return {}; }
  // After all ports started.
  virtual Status start(OffloadHost& /*host*/) { return {}; }
  // A new pipeline is live in software (it stays alive until the next call).
  virtual void on_pipeline(const Pipeline& /*pl*/) {}
  // Tracker events from one worker's shard.
  virtual void on_ct_events(unsigned /*worker*/, const ctrack::Event* /*ev*/, uint32_t /*n*/, uint64_t /*now_ns*/) {}
  // Completions, aging, counter folding. Called from the control loop.
  virtual void poll(uint64_t /*now_ns*/) {}
  // Removes every hardware rule; called on shutdown after the workers stop.
  virtual Status flush() { return {}; }
  virtual OffloadStats stats() const { return {}; }
  // The hardware rules as testpmd commands (for reproducing by hand).
  virtual std::string testpmd_commands() const { return ""; }
  // The emulated NIC the workers run as their first stage, if any.
  virtual EmuNic* nic() { return nullptr; }
};

// `none`, or the provider the config names. `workers` = rx queues per port.
Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg, unsigned workers);

// What a port's rte_flow can do, from rte_flow_info_get and rte_flow_validate
// (needs a started EAL and a configured port). Empty `missing` = everything
// the rte_flow provider needs.
struct HwCaps {
  bool info_ok = false;
  uint32_t max_nb_counters = 0, max_nb_aging_objects = 0, max_nb_conn_tracks = 0, max_nb_queues = 0;
  bool transfer_proxy = false;
  std::vector<std::string> missing;
  std::string str() const;
};
HwCaps probe_rte_flow(uint16_t port_id);

}  // namespace dp
