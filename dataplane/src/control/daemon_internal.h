// Internal to the daemon's files: the worker record and helpers the
// services share. The daemon (daemon.h) composes the services, each a
// class that owns its state and registers its own commands (commands.h):
// ports (port_service.h), rules (rule_service.h), conntrack queries,
// traces, stats and telemetry (services.h).
#pragma once

#include <string>

#include "daemon.h"
#include "dataplane/live_trace.h"
#include "dataplane/log.h"
#include "dataplane/worker.h"

namespace dp {

struct WorkerSlot {
  unsigned id = 0;
  unsigned lcore = 0;
  WorkerStats stats;
  std::unique_ptr<Datapath> dp;
  WorkerEnv env;
  LiveTrace trace;
};

inline void log(const std::string& s) { log_info(LogType::kControl, s); }
inline void warn(const std::string& s) { log_warning(LogType::kControl, s); }
// The rule set's stage list, "rx,flow_cache,...".
std::string stages_of(const Pipeline& p);
void log_pipeline(const Pipeline& p);

inline std::string dpdk_port_name(const PortConfig& p) {
  if (!p.dpdk_name.empty()) return p.dpdk_name;
  return p.devargs.substr(0, p.devargs.find(','));
}

inline bool is_vdev(const PortConfig& p) { return p.devargs.rfind("net_", 0) == 0; }

}  // namespace dp
