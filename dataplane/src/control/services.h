// The services the daemon composes besides ports and rules: conntrack
// queries, traces, stats and telemetry. Each owns its state and reads the
// running daemon's through Running (workers, shards, offload, config),
// which the daemon owns and fills while it starts.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "port_service.h"
#include "rule_service.h"
#include "stats_snapshot.h"
#include "dataplane/config.h"
#include "dataplane/offload.h"
#include "dataplane/steer.h"

struct rte_tel_data;
struct rte_rcu_qsbr;

namespace dp {

struct WorkerSlot;  // daemon_internal.h
struct TraceRecord;

struct Running {
  const Config& cfg;
  std::vector<std::unique_ptr<WorkerSlot>>& workers;
  std::vector<std::unique_ptr<ctrack::Tracker>>& shards;
  std::unique_ptr<OffloadProvider>& offload;
  const bool& launched;  // the workers were launched
  const bool& shut;      // and stopped again (shutdown)
  rte_rcu_qsbr* const& qsbr;
  const std::unique_ptr<Steering>& steer;  // with several workers: who owns a connection
};

// ct list / flush and the telemetry listing (ct_service.cc).
class CtService {
 public:
  explicit CtService(Running r) : run_(r) {}
  Status register_commands(CommandTable& t);
  void telemetry(const char* params, rte_tel_data* d);

 private:
  ControlServer::Reply list(int zone, Format f);
  Running run_;
};

// A described packet through the tables (nothing changes), and live
// traces of what the workers do, one at a time (trace_service.cc).
class TraceService {
 public:
  TraceService(Running r, RuleService& rules) : run_(r), rules_(rules) {}
  Status register_commands(CommandTable& t);

 private:
  std::string trace(const std::string& packet_desc, Format f);
  ControlServer::Reply live_trace(uint32_t n, uint32_t seconds, Format f);
  std::string live_trace_json(const std::vector<const TraceRecord*>& recs, uint32_t n, uint32_t seconds);
  void end_live_trace();
  Running run_;
  RuleService& rules_;
  bool live_ = false;  // a live trace is running (one at a time)
};

// `stats`, /dataplane/stats and /metrics from one snapshot of the counter
// lists (stats_service.cc).
class StatsService {
 public:
  StatsService(Running r, RuleService& rules, PortService& ports) : run_(r), rules_(rules), ports_(ports) {}
  Status register_commands(CommandTable& t);
  // control_thread: DPDK may be called here; otherwise the loop is asked.
  StatsSnapshot snapshot(bool control_thread);
  void telemetry(rte_tel_data* d);
  // The control loop, each turn: what other threads asked of DPDK.
  void serve_dpdk_reads();
  // The control loop: the provider's counters, for other threads to read.
  void offload_snapshot(OffloadStats s) {
    std::lock_guard<std::mutex> lk(off_mu_);
    off_snap_ = std::move(s);
  }

 private:
  // What a snapshot needs DPDK calls for, made on the control thread only:
  // other threads ask the loop (serve_dpdk_reads) and wait a turn.
  struct DpdkReads {
    std::vector<std::pair<std::string, uint64_t>> ports;  // PortService::counters()
    std::vector<StatsSnapshot::Mempool> mempools;
  };
  DpdkReads dpdk_reads();            // control thread
  DpdkReads dpdk_reads_from_loop();  // any other thread
  Running run_;
  RuleService& rules_;
  PortService& ports_;
  std::mutex reads_mu_;
  std::condition_variable reads_cv_;
  std::atomic<bool> reads_wanted_{false};
  uint64_t reads_gen_ = 0;
  DpdkReads reads_;
  std::mutex off_mu_;  // off_snap_: the control loop writes, telemetry reads
  OffloadStats off_snap_;
};

}  // namespace dp
