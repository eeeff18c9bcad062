// The hardware-offload seam. Providers run on the control path only: they
// get the rule set and the tracker's events, and publish an HwMarkTable that
// the workers' first stage consults. Never called per packet.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"

namespace dp {

// What the daemon lets a provider touch.
struct OffloadHost {
  std::vector<uint16_t> port_ids;  // DPDK port id of each configured port
  std::vector<ctrack::Tracker*> shards;
  std::atomic<const HwMarkTable*>* marks = nullptr;  // publish here (RCU: the host frees old tables)
};

struct OffloadStats {
  std::vector<std::pair<std::string, uint64_t>> counters;  // name, value
};

class OffloadProvider {
 public:
  virtual ~OffloadProvider() = default;
  virtual const char* name() const = 0;
  // Between rte_eth_dev_configure and rte_eth_dev_start of each port.
  virtual Status configure_port(uint16_t /*port_id*/) { return {}; }
  // After all ports started.
  virtual Status start(OffloadHost& /*host*/) { return {}; }
  // A new rule set is live in software.
  virtual void on_rules(const std::vector<Rule>& /*rules*/) {}
  // Tracker events from one worker's shard.
  virtual void on_ct_events(unsigned /*worker*/, const ctrack::Event* /*ev*/, uint32_t /*n*/) {}
  // Completions, aging, counter queries. Called from the control loop.
  virtual void poll(uint64_t /*now_ns*/) {}
  // Removes every hardware rule; called on shutdown.
  virtual Status flush() { return {}; }
  virtual OffloadStats stats() const { return {}; }
  // The hardware rules as testpmd `flow` commands (for reproducing by hand).
  virtual std::string testpmd_commands() const { return ""; }
};

// `none`, or the provider the config names. Errors name the problem.
Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg);

}  // namespace dp
